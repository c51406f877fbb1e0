// SPDX-License-Identifier: GPL-2.0
/*
 * The completion queue contract of ibv_poll_cq(3), ibv_create_cq(3) and
 * ibv_req_notify_cq(3), one test per sentence, driven by real RC traffic
 * between two QPs of rsoft0.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define DEPTH 64

FIXTURE(cq) {
	struct loopback lb;
};

FIXTURE_SETUP(cq)
{
	ASSERT_EQ(0, loopback_init(&self->lb, DEPTH, DEPTH, 4096))
		TH_LOG("loopback setup failed: %m");
}

FIXTURE_TEARDOWN(cq)
{
	loopback_fini(&self->lb);
}

/* Sends @n messages a -> b with wr_ids first..first+n-1. */
static int send_n(struct loopback *lb, int first, int n)
{
	for (int i = 0; i < n; i++)
		if (post_recv(lb, lb->b, 1000 + first + i, 2048, 64) ||
		    post_send(lb, lb->a, first + i, 0, 64))
			return -1;
	return 0;
}

/* "may create a CQ with size greater than or equal to the requested size" */
TEST_F(cq, create_reports_capacity)
{
	int sizes[] = { 1, RSOFT_MAX_CQE / 2, RSOFT_MAX_CQE };

	for (int i = 0; i < 3; i++) {
		struct ibv_cq *cq = ibv_create_cq(self->lb.ctx, sizes[i], NULL, NULL, 0);

		ASSERT_NE(NULL, cq) TH_LOG("size %d: %m", sizes[i]);
		EXPECT_LE(sizes[i], cq->cqe);
		EXPECT_EQ(0, ibv_destroy_cq(cq));
	}
}

TEST_F(cq, create_rejects_bad_sizes)
{
	struct ibv_cq *cq;

	errno = 0;
	cq = ibv_create_cq(self->lb.ctx, RSOFT_MAX_CQE + 1, NULL, NULL, 0);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	cq = ibv_create_cq(self->lb.ctx, 0, NULL, NULL, 0);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	cq = ibv_create_cq(self->lb.ctx, 16, NULL, NULL, 1);	/* comp_vector */
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
}

/* The real capacity is usable: exactly cq->cqe completions fit. */
TEST_F(cq, capacity_is_usable)
{
	struct ibv_wc wc[DEPTH];

	ASSERT_EQ(DEPTH, self->lb.scq->cqe);
	ASSERT_EQ(0, send_n(&self->lb, 0, DEPTH));
	EXPECT_EQ(DEPTH, ibv_poll_cq(self->lb.scq, DEPTH, wc));
	for (int i = 0; i < DEPTH; i++)
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->lb.a));
}

/* "returns at most num_entries", "in order", "removed from the CQ" */
TEST_F(cq, poll_fewer_than_queued)
{
	struct ibv_wc wc[4];
	int next = 0, got;

	ASSERT_EQ(0, send_n(&self->lb, 0, 10));
	while ((got = ibv_poll_cq(self->lb.scq, 3, wc)) > 0) {
		EXPECT_LE(got, 3);
		for (int i = 0; i < got; i++) {
			EXPECT_EQ(next, wc[i].wr_id);
			EXPECT_EQ(IBV_WC_SEND, wc[i].opcode);
			EXPECT_EQ(self->lb.a->qp_num, wc[i].qp_num);
			next++;
		}
	}
	EXPECT_EQ(0, got);
	EXPECT_EQ(10, next);
}

/* More room than completions: all of them, then 0; none returned twice. */
TEST_F(cq, poll_more_than_queued)
{
	struct ibv_wc wc[32];

	ASSERT_EQ(0, send_n(&self->lb, 0, 5));
	ASSERT_EQ(5, ibv_poll_cq(self->lb.scq, 32, wc));
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(i, wc[i].wr_id);
	EXPECT_EQ(0, ibv_poll_cq(self->lb.scq, 32, wc));
	EXPECT_EQ(0, ibv_poll_cq(self->lb.scq, 0, wc));
}

/* Receives complete in posting order with the sender's data and QPN. */
TEST_F(cq, receive_completions)
{
	struct ibv_wc wc[8];

	ASSERT_EQ(0, send_n(&self->lb, 0, 4));
	ASSERT_EQ(4, ibv_poll_cq(self->lb.rcq, 8, wc));
	for (int i = 0; i < 4; i++) {
		EXPECT_EQ(1000 + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		EXPECT_EQ(IBV_WC_RECV, wc[i].opcode);
		EXPECT_EQ(64, wc[i].byte_len);
		EXPECT_EQ(self->lb.b->qp_num, wc[i].qp_num);
		EXPECT_EQ(self->lb.a->qp_num, wc[i].src_qp);
		EXPECT_EQ(0, wc[i].wc_flags);
	}
}

/*
 * "Not all wc attributes are always valid": an error completion carries
 * wr_id, status, qp_num and vendor_err; the QP is then in ERR and later
 * work requests complete flushed.
 */
TEST_F(cq, error_completion)
{
	struct ibv_wc wc[4];

	ASSERT_EQ(0, post_recv(&self->lb, self->lb.b, 1000, 2048, 64));
	ASSERT_EQ(0, post_send_key(&self->lb, self->lb.a, 77, 0, 64,
				   self->lb.mr->lkey ^ 0x5500));
	ASSERT_EQ(1, ibv_poll_cq(self->lb.scq, 4, wc));
	EXPECT_EQ(77, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc[0].status);
	EXPECT_EQ(self->lb.a->qp_num, wc[0].qp_num);
	EXPECT_EQ(0, wc[0].vendor_err);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(self->lb.a));

	ASSERT_EQ(0, post_send(&self->lb, self->lb.a, 78, 0, 64));
	ASSERT_EQ(1, ibv_poll_cq(self->lb.scq, 4, wc));
	EXPECT_EQ(78, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	/* The receiver saw nothing. */
	EXPECT_EQ(0, ibv_poll_cq(self->lb.rcq, 4, wc));
}

TEST_F(cq, resize_keeps_completions)
{
	struct ibv_wc wc[16];

	ASSERT_EQ(0, send_n(&self->lb, 0, 5));
	ASSERT_EQ(0, ibv_resize_cq(self->lb.scq, 200));
	EXPECT_LE(200, self->lb.scq->cqe);
	ASSERT_EQ(0, send_n(&self->lb, 5, 5));
	EXPECT_EQ(EINVAL, ibv_resize_cq(self->lb.scq, 9));
	ASSERT_EQ(0, ibv_resize_cq(self->lb.scq, 10));
	EXPECT_EQ(10, self->lb.scq->cqe);
	ASSERT_EQ(10, ibv_poll_cq(self->lb.scq, 16, wc));
	for (int i = 0; i < 10; i++)
		EXPECT_EQ(i, wc[i].wr_id);
	EXPECT_EQ(EINVAL, ibv_resize_cq(self->lb.scq, RSOFT_MAX_CQE + 1));
}

/* Destroying a QP takes its completions out of the CQs it used. */
TEST_F(cq, destroy_qp_purges_its_completions)
{
	struct ibv_wc wc[16];

	ASSERT_EQ(0, send_n(&self->lb, 0, 3));	/* 3 recv CQEs of b on rcq */
	/* b's own sends to a complete on rcq too. */
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, post_recv(&self->lb, self->lb.a, 500 + i, 2048, 64));
		ASSERT_EQ(0, post_send(&self->lb, self->lb.b, 600 + i, 0, 64));
	}
	ASSERT_EQ(0, ibv_destroy_qp(self->lb.a));
	self->lb.a = NULL;
	/* a's 2 receive completions lived on rcq; they are gone. */
	ASSERT_EQ(5, ibv_poll_cq(self->lb.rcq, 16, wc));
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(self->lb.b->qp_num, wc[i].qp_num);
	EXPECT_EQ(0, ibv_poll_cq(self->lb.scq, 16, wc));
}

/*
 * "In case of a CQ overrun, the async event IBV_EVENT_CQ_ERR will be
 * triggered, and the CQ cannot be used": capacity c, c + 1 completions.
 */
TEST_F(cq, overrun)
{
	struct ibv_async_event ev;
	struct ibv_wc wc[DEPTH + 1];
	int got, c = DEPTH;

	ASSERT_EQ(0, send_n(&self->lb, 0, c));
	ASSERT_EQ(0, post_recv(&self->lb, self->lb.b, 5000, 2048, 64));
	ASSERT_EQ(0, post_send(&self->lb, self->lb.a, c, 0, 64));

	ASSERT_EQ(0, wait_async(self->lb.ctx, &ev, 5000)) TH_LOG("no async event");
	EXPECT_EQ(IBV_EVENT_CQ_ERR, ev.event_type);
	EXPECT_EQ(self->lb.scq, ev.element.cq);
	ibv_ack_async_event(&ev);

	/* The c completions before the overrun, in order; then errors. */
	got = ibv_poll_cq(self->lb.scq, DEPTH + 1, wc);
	EXPECT_EQ(c, got);
	for (int i = 0; i < got; i++)
		EXPECT_EQ(i, wc[i].wr_id);
	EXPECT_GT(0, ibv_poll_cq(self->lb.scq, 1, wc));
	EXPECT_GT(0, ibv_poll_cq(self->lb.scq, 1, wc));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(self->lb.a));
	/* Only one CQ_ERR, however often it overruns again. */
	ASSERT_EQ(0, post_send(&self->lb, self->lb.a, c + 1, 0, 64));
	EXPECT_EQ(-1, wait_async(self->lb.ctx, &ev, 5000));
}

/* One event per arm, none lost, none extra. */
static int event_cycles(struct loopback *lb, int cycles)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(lb->ctx);
	struct ibv_cq *cq, *got_cq;
	struct ibv_wc wc;
	struct pollfd pfd;
	void *ctx;
	int ret = -1;

	if (!ch)
		return -1;
	cq = ibv_create_cq(lb->ctx, 4, NULL, ch, 0);
	if (!cq)
		goto out_ch;
	/* Give a a fresh send CQ with a channel: a new a. */
	ibv_destroy_qp(lb->a);
	lb->a = rsoft_rc_qp(lb, cq, lb->rcq, 4);
	if (!lb->a || rsoft_connect(lb->a, 1, lb->b->qp_num))
		goto out_cq;
	/* Reconnect b to the new a, through RESET. */
	if (set_qp_state(lb->b, IBV_QPS_RESET) ||
	    rsoft_connect(lb->b, 1, lb->a->qp_num))
		goto out_cq;
	while (ibv_poll_cq(lb->rcq, 1, &wc) > 0)
		;
	for (int i = 0; i < cycles; i++) {
		if (ibv_req_notify_cq(cq, 0) || send_n(lb, i, 1) ||
		    ibv_get_cq_event(ch, &got_cq, &ctx) || got_cq != cq)
			goto out_cq;
		ibv_ack_cq_events(cq, 1);
		if (ibv_poll_cq(cq, 1, &wc) != 1 || wc.wr_id != i ||
		    wc.status != IBV_WC_SUCCESS || ibv_poll_cq(lb->rcq, 1, &wc) != 1)
			goto out_cq;
	}
	/* No extra event is waiting. */
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	ret = poll(&pfd, 1, 0) == 0 ? 0 : -1;
out_cq:
	if (lb->a)
		ibv_destroy_qp(lb->a);
	lb->a = NULL;
	ibv_destroy_cq(cq);
out_ch:
	ibv_destroy_comp_channel(ch);
	return ret;
}

/*
 * Many WQEs completed in one step with both CQs armed: a QP whose sends
 * wait for an answer that never comes, with receives posted, moved to ERR.
 * Its flush retires them all in one step (16 at a time); each armed CQ
 * gets its one event, and destroying the QP and CQs then neither hangs nor
 * leaks (the kernel log check at the end of the run sees kmemleak).
 */
TEST_F(cq, many_completions_in_one_step_armed_then_destroyed)
{
	struct loopback *lb = &self->lb;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(lb->ctx);
	struct ibv_cq *scq, *rcq, *got_cq;
	struct ibv_qp *x;
	struct ibv_wc wc[16];
	int events = 0, flushed = 0;
	void *ctx;

	ASSERT_NE(NULL, ch);
	scq = ibv_create_cq(lb->ctx, 16, NULL, ch, 0);
	rcq = ibv_create_cq(lb->ctx, 16, NULL, ch, 0);
	ASSERT_NE(NULL, scq);
	ASSERT_NE(NULL, rcq);
	x = rsoft_rc_qp(lb, scq, rcq, 8);
	ASSERT_NE(NULL, x);
	/* Nobody answers QP 0xffff; 4 s until a retry. */
	ASSERT_EQ(0, rsoft_connect_retry(x, 1, 0xffff, 7, IBV_ACCESS_LOCAL_WRITE,
					 20, 7));
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(0, post_recv(lb, x, 100 + i, 64 * i, 64));
		ASSERT_EQ(0, post_send(lb, x, i, 0, 8));
	}
	ASSERT_EQ(0, ibv_req_notify_cq(scq, 0));
	ASSERT_EQ(0, ibv_req_notify_cq(rcq, 0));
	ASSERT_EQ(0, set_qp_state(x, IBV_QPS_ERR));
	for (; events < 2; events++) {
		ASSERT_EQ(0, ibv_get_cq_event(ch, &got_cq, &ctx));
		EXPECT_TRUE(got_cq == scq || got_cq == rcq);
		ibv_ack_cq_events(got_cq, 1);
	}
	for (int n; (n = ibv_poll_cq(scq, 16, wc)) > 0; flushed += n)
		for (int i = 0; i < n; i++)
			EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
	for (int n; (n = ibv_poll_cq(rcq, 16, wc)) > 0; flushed += n)
		for (int i = 0; i < n; i++)
			EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
	EXPECT_EQ(16, flushed);
	EXPECT_EQ(0, ibv_destroy_qp(x));
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

#define CYCLES 20000

TEST_F_TIMEOUT(cq, events_one_per_arm, 600)
{
	EXPECT_EQ(0, event_cycles(&self->lb, CYCLES));
}

static void *event_thread(void *arg)
{
	struct loopback lb;
	long ret = -1;

	if (!loopback_init(&lb, 4, 4, 4096))
		ret = event_cycles(&lb, CYCLES / 4);
	loopback_fini(&lb);
	return (void *)ret;
}

/* The same from four threads at once, each with its own QPs and CQs. */
TEST_F_TIMEOUT(cq, events_one_per_arm_threads, 600)
{
	pthread_t t[4];
	void *ret;

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, event_thread, NULL));
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &ret));
		EXPECT_EQ(0, (long)ret);
	}
}

TEST_HARNESS_MAIN
