// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA WRITE, WRITE_WITH_IMM, READ and the two atomics on RC QPs of
 * rsoft0, and the error completions of rkey, bounds, access and alignment
 * violations.
 */
#include <errno.h>
#include <arpa/inet.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define REMOTE_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

FIXTURE(rdma) {
	struct loopback lb;
	char *target;			/* b's memory, open to a */
	struct ibv_mr *tmr;
};

FIXTURE_SETUP(rdma)
{
	struct ibv_qp_attr attr = { .qp_access_flags = REMOTE_ALL };

	ASSERT_EQ(0, loopback_init(&self->lb, 64, 64, 8192));
	self->target = aligned_alloc(4096, 8192);
	ASSERT_NE(NULL, self->target);
	memset(self->target, 0, 8192);
	self->tmr = ibv_reg_mr(self->lb.pd, self->target, 8192, REMOTE_ALL);
	ASSERT_NE(NULL, self->tmr);
	ASSERT_EQ(0, ibv_modify_qp(self->lb.b, &attr, IBV_QP_ACCESS_FLAGS));
}

FIXTURE_TEARDOWN(rdma)
{
	if (self->tmr)
		ibv_dereg_mr(self->tmr);
	loopback_fini(&self->lb);
	free(self->target);
}

/* Posts one RDMA or atomic WR from a's buffer at @off, @len bytes. */
static int post_rdma(struct loopback *lb, enum ibv_wr_opcode op, size_t off,
		     uint32_t len, uint64_t raddr, uint32_t rkey,
		     uint64_t compare_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)lb->buf + off, len, lb->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = op, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(0x1234),
	}, *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = compare_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(lb->a, &wr, &bad);
}

static struct ibv_wc poll1(struct ibv_cq *cq)
{
	struct ibv_wc wc = { .status = -1 };

	if (ibv_poll_cq(cq, 1, &wc) != 1)
		wc.status = -1;
	return wc;
}

TEST_F(rdma, write)
{
	struct ibv_wc wc;
	struct ibv_wc none;

	for (int i = 0; i < 5000; i++)
		self->lb.buf[i] = i * 3;
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_WRITE, 0, 5000,
			       (uintptr_t)self->target + 100, self->tmr->rkey, 0, 0));
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
	EXPECT_EQ(0, memcmp(self->lb.buf, self->target + 100, 5000));
	/* No receive consumed, no receive completion. */
	EXPECT_EQ(0, ibv_poll_cq(self->lb.rcq, 1, &none));
}

TEST_F(rdma, write_with_imm)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(&self->lb, self->lb.b, 7, 4096, 16));
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 64,
			       (uintptr_t)self->target, self->tmr->rkey, 0, 0));
	wc = poll1(self->lb.rcq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, wc.opcode);
	EXPECT_EQ(IBV_WC_WITH_IMM, wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(htonl(0x1234), wc.imm_data);
	EXPECT_EQ(64, wc.byte_len);
	EXPECT_EQ(IBV_WC_SUCCESS, poll1(self->lb.scq).status);
}

TEST_F(rdma, read)
{
	struct ibv_wc wc;

	for (int i = 0; i < 6000; i++)
		self->target[i] = i * 5;
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_READ, 1000, 6000,
			       (uintptr_t)self->target, self->tmr->rkey, 0, 0));
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
	EXPECT_EQ(6000, wc.byte_len);
	EXPECT_EQ(0, memcmp(self->lb.buf + 1000, self->target, 6000));
}

TEST_F(rdma, atomics)
{
	uint64_t *word = (uint64_t *)(self->target + 64);
	uint64_t *result = (uint64_t *)self->lb.buf;
	struct ibv_wc wc;

	*word = 40;
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8,
			       (uintptr_t)word, self->tmr->rkey, 2, 0));
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_FETCH_ADD, wc.opcode);
	EXPECT_EQ(40, *result);
	EXPECT_EQ(42, *word);

	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8,
			       (uintptr_t)word, self->tmr->rkey, 42, 7));
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_COMP_SWAP, wc.opcode);
	EXPECT_EQ(42, *result);
	EXPECT_EQ(7, *word);
	/* A failed compare leaves the word and returns it. */
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8,
			       (uintptr_t)word, self->tmr->rkey, 42, 9));
	EXPECT_EQ(IBV_WC_SUCCESS, poll1(self->lb.scq).status);
	EXPECT_EQ(7, *result);
	EXPECT_EQ(7, *word);
}

/*
 * Each violation: REM_* error on the requester, which goes to ERR, and the
 * responder too (IBA's class C error, as rxe and hardware have it), which
 * says why in an affiliated event, as it takes no receive to say it in,
 * and flushes the receive posted after.
 */
static void expect_remote_error(struct __test_metadata *_metadata,
				struct loopback *lb, enum ibv_wc_status status)
{
	enum ibv_event_type why = status == IBV_WC_REM_ACCESS_ERR ?
				  IBV_EVENT_QP_ACCESS_ERR : IBV_EVENT_QP_REQ_ERR;
	struct ibv_wc wc = poll1(lb->scq);
	struct ibv_async_event ev;

	EXPECT_EQ(status, wc.status);
	EXPECT_EQ(lb->a->qp_num, wc.qp_num);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->b));
	ASSERT_EQ(0, wait_async(lb->ctx, &ev, 5000)) TH_LOG("no async event");
	EXPECT_EQ(why, ev.event_type);
	EXPECT_EQ(lb->b, ev.element.qp);
	ibv_ack_async_event(&ev);
	EXPECT_EQ(-1, wait_async(lb->ctx, &ev, 0)) TH_LOG("a second event");
	ASSERT_EQ(0, post_recv(lb, lb->b, 9, 0, 16));
	ASSERT_EQ(1, poll_wait(lb->rcq, &wc, 5)) TH_LOG("no flush");
	EXPECT_EQ(9, wc.wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
}

TEST_F(rdma, bad_rkey)
{
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_WRITE, 0, 64,
			       (uintptr_t)self->target, self->tmr->rkey + 0x100, 0, 0));
	expect_remote_error(_metadata, &self->lb, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(rdma, write_out_of_bounds)
{
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_WRITE, 0, 200,
			       (uintptr_t)self->target + 8100, self->tmr->rkey, 0, 0));
	expect_remote_error(_metadata, &self->lb, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(rdma, read_out_of_bounds)
{
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_READ, 0, 64,
			       (uintptr_t)self->target - 8, self->tmr->rkey, 0, 0));
	expect_remote_error(_metadata, &self->lb, IBV_WC_REM_ACCESS_ERR);
}

/* An MR registered without REMOTE_WRITE cannot be written remotely. */
TEST_F(rdma, mr_without_remote_write)
{
	struct ibv_mr *ro = ibv_reg_mr(self->lb.pd, self->target, 4096,
				       IBV_ACCESS_REMOTE_READ);

	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_WRITE, 0, 64,
			       (uintptr_t)self->target, ro->rkey, 0, 0));
	expect_remote_error(_metadata, &self->lb, IBV_WC_REM_ACCESS_ERR);
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

/* A QP that does not grant REMOTE_READ refuses reads into any MR. */
TEST_F(rdma, qp_without_remote_read)
{
	struct ibv_qp_attr attr = { .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	ASSERT_EQ(0, ibv_modify_qp(self->lb.b, &attr, IBV_QP_ACCESS_FLAGS));
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_RDMA_READ, 0, 64,
			       (uintptr_t)self->target, self->tmr->rkey, 0, 0));
	expect_remote_error(_metadata, &self->lb, IBV_WC_REM_ACCESS_ERR);
}

TEST_F(rdma, misaligned_atomic)
{
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8,
			       (uintptr_t)self->target + 4, self->tmr->rkey, 1, 0));
	expect_remote_error(_metadata, &self->lb, IBV_WC_REM_INV_REQ_ERR);
}

/*
 * Atomic alignment is that of the address, not of the offset into the MR:
 * an aligned word of an MR that starts 4 bytes past a word is usable.
 */
TEST_F(rdma, atomic_in_unaligned_mr)
{
	uint64_t *word = (uint64_t *)(self->target + 8);
	uint64_t *result = (uint64_t *)self->lb.buf;
	struct ibv_mr *mr = ibv_reg_mr(self->lb.pd, self->target + 4, 64,
				       REMOTE_ALL);
	struct ibv_wc wc;

	ASSERT_NE(NULL, mr);
	*word = 5;
	ASSERT_EQ(0, post_rdma(&self->lb, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8,
			       (uintptr_t)word, mr->rkey, 3, 0));
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(5, *result);
	EXPECT_EQ(8, *word);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->lb.a));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/*
 * An atomic's result scattered over two SGEs (3 + 5 bytes) fills both and
 * touches no byte outside them.
 */
TEST_F(rdma, atomic_result_scattered)
{
	uint64_t *word = (uint64_t *)(self->target + 64);
	uint64_t old = 0x0807060504030201ULL, got = 0;
	char *buf = self->lb.buf;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)buf + 100, 3, self->lb.mr->lkey },
		{ (uintptr_t)buf + 200, 5, self->lb.mr->lkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = sge, .num_sge = 2,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = {
			.remote_addr = (uintptr_t)word, .compare_add = 1,
			.rkey = self->tmr->rkey,
		},
	}, *bad;

	memset(buf, 0xaa, 512);
	*word = old;
	ASSERT_EQ(0, ibv_post_send(self->lb.a, &wr, &bad));
	EXPECT_EQ(IBV_WC_SUCCESS, poll1(self->lb.scq).status);
	EXPECT_EQ(old + 1, *word);
	memcpy(&got, buf + 100, 3);
	memcpy((char *)&got + 3, buf + 200, 5);
	EXPECT_EQ(old, got);
	for (int i = 0; i < 512; i++) {
		if ((i >= 100 && i < 103) || (i >= 200 && i < 205))
			continue;
		EXPECT_EQ((char)0xaa, buf[i]) TH_LOG("byte %d changed", i);
	}
}

/*
 * An atomic moves exactly 8 bytes: one with no local buffer fails with
 * LOC_LEN_ERR before it reaches the responder, even to a word whose MR
 * grants no atomics (a responder that skipped its key checks for a
 * zero-length request would add to it).
 */
TEST_F(rdma, zero_length_atomic_touches_nothing)
{
	uint64_t *word = (uint64_t *)(self->target + 64);
	struct ibv_mr *ro = ibv_reg_mr(self->lb.pd, self->target, 4096,
				       IBV_ACCESS_REMOTE_READ);
	struct ibv_sge sge = { (uintptr_t)self->lb.buf, 0, self->lb.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = (uintptr_t)word, .compare_add = 1 },
	}, *bad;
	struct ibv_port_attr port;
	struct ibv_wc wc;

	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, ibv_query_port(self->lb.ctx, 1, &port));
	*word = 40;
	/* No SGE, then one SGE of 0 bytes; MRs without and with the right. */
	for (int i = 0; i < 4; i++) {
		wr.sg_list = i & 1 ? &sge : NULL;
		wr.num_sge = i & 1;
		wr.wr.atomic.rkey = i & 2 ? self->tmr->rkey : ro->rkey;
		ASSERT_EQ(0, ibv_post_send(self->lb.a, &wr, &bad));
		wc = poll1(self->lb.scq);
		EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status) TH_LOG("case %d", i);
		EXPECT_EQ(40, *word) TH_LOG("case %d", i);
		EXPECT_EQ(IBV_QPS_ERR, qp_state(self->lb.a));
		ASSERT_EQ(0, set_qp_state(self->lb.a, IBV_QPS_RESET));
		ASSERT_EQ(0, rsoft_connect(self->lb.a, port.lid, self->lb.b->qp_num));
	}
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

/*
 * A responder given no resources for READs and atomics
 * (max_dest_rd_atomic 0) refuses them, as rxe and hardware do: a consumer
 * that forgot responder_resources learns it here, not on its first NIC.
 */
TEST_F(rdma, no_responder_resources)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	uint64_t *word = (uint64_t *)(self->target + 64);
	struct ibv_port_attr port;
	struct rc_path b = {
		.av = { .port_num = 1 }, .mtu = IBV_MTU_4096,
		.dest_qpn = self->lb.a->qp_num, .access = REMOTE_ALL,
		.no_rd_atomic = 1,
	};

	ASSERT_EQ(0, ibv_query_port(self->lb.ctx, 1, &port));
	b.av.dlid = port.lid;
	*word = 40;
	for (unsigned int i = 0; i < ARRAY_SIZE(ops); i++) {
		ASSERT_EQ(0, set_qp_state(self->lb.b, IBV_QPS_RESET));
		ASSERT_EQ(0, rc_connect(self->lb.b, &b));
		ASSERT_EQ(0, set_qp_state(self->lb.a, IBV_QPS_RESET));
		ASSERT_EQ(0, rsoft_connect(self->lb.a, port.lid, self->lb.b->qp_num));
		ASSERT_EQ(0, post_rdma(&self->lb, ops[i], 0, 8, (uintptr_t)word,
				       self->tmr->rkey, 1, 0));
		expect_remote_error(_metadata, &self->lb, IBV_WC_REM_INV_REQ_ERR);
		EXPECT_EQ(40, *word);
	}
}

TEST_HARNESS_MAIN
