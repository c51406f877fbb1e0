// SPDX-License-Identifier: GPL-2.0
/*
 * rsoft0's port counters (the core's hw stats, as `rdma statistic` and
 * sysfs show them) move by exactly what a known workload does.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "loopback.h"
#include "kselftest_harness.h"

enum { CQES, CQ_OVERRUNS, EVENTS, ERRORS, SENDS, RECEIVES, WRITES, READS,
	ATOMICS, BYTES, ACK_TIMEOUTS, NCOUNTERS };

static const char * const names[NCOUNTERS] = {
	"cqes", "cq_overruns", "completion_events", "error_completions",
	"sends", "receives", "rdma_writes", "rdma_reads", "atomics", "bytes",
	"local_ack_timeouts",
};

/* Reads every counter from sysfs; -1 on failure. */
static int read_counters(long long *v)
{
	char path[128];

	/* The core caches the values for 10 ms. */
	usleep(50000);
	for (int i = 0; i < NCOUNTERS; i++) {
		FILE *f;
		int ok;

		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
			 RSOFT_DEV, names[i]);
		f = fopen(path, "r");
		if (!f)
			return -1;
		ok = fscanf(f, "%lld", &v[i]) == 1;
		fclose(f);
		if (!ok)
			return -1;
	}
	return 0;
}

FIXTURE(counters) {
	struct loopback lb;
	struct ibv_mr *rmr;	/* lb.buf with remote rights */
	long long before[NCOUNTERS], after[NCOUNTERS];
};

FIXTURE_SETUP(counters)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp_attr attr = {
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};

	/* a's send CQ holds one completion: a second unpolled one overruns. */
	ASSERT_EQ(0, loopback_init(lb, 1, 16, 8192));
	self->rmr = ibv_reg_mr(lb->pd, lb->buf, lb->len, attr.qp_access_flags);
	ASSERT_NE(NULL, self->rmr);
	ASSERT_EQ(0, ibv_modify_qp(lb->b, &attr, IBV_QP_ACCESS_FLAGS));
	ASSERT_EQ(0, read_counters(self->before));
}

FIXTURE_TEARDOWN(counters)
{
	if (self->rmr)
		ibv_dereg_mr(self->rmr);
	loopback_fini(&self->lb);
}

static int rdma(struct loopback *lb, struct ibv_mr *rmr, enum ibv_wr_opcode op,
		uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)lb->buf, len, lb->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t remote = (uintptr_t)lb->buf + 4096;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = remote;
		wr.wr.atomic.rkey = rmr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = rmr->rkey;
	}
	return ibv_post_send(lb->a, &wr, &bad);
}

#define DELTA(i) (self->after[i] - self->before[i])

TEST_F(counters, operations_and_bytes)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_req_notify_cq(lb->rcq, 0));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, post_recv(lb, lb->b, i, 4096, 100));
		ASSERT_EQ(0, post_send(lb, lb->a, i, 0, 100));
		ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
		ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	}
	ASSERT_EQ(0, rdma(lb, self->rmr, IBV_WR_RDMA_WRITE, 64));
	ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
	ASSERT_EQ(0, rdma(lb, self->rmr, IBV_WR_RDMA_READ, 32));
	ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
	ASSERT_EQ(0, rdma(lb, self->rmr, IBV_WR_ATOMIC_FETCH_AND_ADD, 8));
	ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
	ASSERT_EQ(0, read_counters(self->after));
	EXPECT_EQ(3, DELTA(SENDS));
	EXPECT_EQ(3, DELTA(RECEIVES));
	EXPECT_EQ(1, DELTA(WRITES));
	EXPECT_EQ(1, DELTA(READS));
	EXPECT_EQ(1, DELTA(ATOMICS));
	EXPECT_EQ(300 + 64 + 32 + 8, DELTA(BYTES));
	EXPECT_EQ(9, DELTA(CQES));
	EXPECT_EQ(1, DELTA(EVENTS));
	EXPECT_EQ(0, DELTA(ERRORS));
	EXPECT_EQ(0, DELTA(CQ_OVERRUNS));
	EXPECT_EQ(0, DELTA(ACK_TIMEOUTS));
}

TEST_F(counters, errors_and_overruns)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	/* A bad lkey: one error completion, nothing executed. */
	ASSERT_EQ(0, post_send_key(lb, lb->a, 1, 0, 8, lb->mr->lkey + 1));
	ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
	ASSERT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	ASSERT_EQ(0, read_counters(self->after));
	EXPECT_EQ(1, DELTA(ERRORS));
	EXPECT_EQ(1, DELTA(CQES));
	EXPECT_EQ(0, DELTA(SENDS));
	EXPECT_EQ(0, DELTA(BYTES));
}

TEST_F(counters, overrun)
{
	struct loopback *lb = &self->lb;

	/* Two unpolled completions on a one-entry CQ: the second is lost. */
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, post_recv(lb, lb->b, i, 4096, 8));
		ASSERT_EQ(0, post_send(lb, lb->a, i, 0, 8));
	}
	ASSERT_EQ(0, read_counters(self->after));
	EXPECT_EQ(1, DELTA(CQ_OVERRUNS));
	EXPECT_EQ(3, DELTA(CQES));	/* one send, two receives */
	EXPECT_EQ(2, DELTA(SENDS));
}

/*
 * A request nobody answers (no port has LID 99) waits out its local ACK
 * timeout once per try: with retry_cnt 2, three tries, three timeouts,
 * then RETRY_EXC_ERR.
 */
TEST_F(counters, local_ack_timeouts)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	/* 4.096 us << 14: 67 ms a try. */
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect_retry(lb->a, 99, lb->b->qp_num, 7, 0, 14, 2));
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 30));
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
	ASSERT_EQ(0, read_counters(self->after));
	EXPECT_EQ(3, DELTA(ACK_TIMEOUTS));
	EXPECT_EQ(1, DELTA(ERRORS));
	EXPECT_EQ(0, DELTA(SENDS));
}

TEST_HARNESS_MAIN
