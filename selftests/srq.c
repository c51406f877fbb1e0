// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues on rsoft0: sizes, receives shared by two QPs in
 * posting order, the limit event, a sender waiting (RNR) on an empty SRQ,
 * what an errored QP does not take with it, and a UC message too long
 * for an SRQ receive.
 */
#include <errno.h>

#include "loopback.h"
#include "kselftest_harness.h"

/* a -> b (the loopback pair, b on the SRQ) and c -> d (d on the SRQ). */
FIXTURE(srq) {
	struct loopback lb;
	struct ibv_srq *srq;
	struct ibv_qp *c, *d;
};

static struct ibv_qp *srq_qp(struct loopback *lb, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = lb->rcq,
		.recv_cq = lb->rcq,
		.srq = srq,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(lb->pd, &init);
}

FIXTURE_SETUP(srq)
{
	struct loopback *lb = &self->lb;
	struct ibv_srq_init_attr attr = {
		.attr = { .max_wr = 8, .max_sge = 1 },
	};
	struct ibv_port_attr port;

	/* The loopback's b is replaced by one on the SRQ. */
	ASSERT_EQ(0, loopback_init(lb, 64, 64, 8192));
	ASSERT_EQ(0, ibv_query_port(lb->ctx, 1, &port));
	self->srq = ibv_create_srq(lb->pd, &attr);
	ASSERT_NE(NULL, self->srq);
	ASSERT_EQ(0, ibv_destroy_qp(lb->b));
	lb->b = srq_qp(lb, self->srq);
	self->d = srq_qp(lb, self->srq);
	self->c = rsoft_rc_qp(lb, lb->scq, lb->rcq, 16);
	ASSERT_NE(NULL, lb->b);
	ASSERT_NE(NULL, self->c);
	ASSERT_NE(NULL, self->d);
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(lb->a, port.lid, lb->b->qp_num));
	ASSERT_EQ(0, rsoft_connect(lb->b, port.lid, lb->a->qp_num));
	ASSERT_EQ(0, rsoft_connect(self->c, port.lid, self->d->qp_num));
	ASSERT_EQ(0, rsoft_connect(self->d, port.lid, self->c->qp_num));
}

FIXTURE_TEARDOWN(srq)
{
	if (self->c)
		ibv_destroy_qp(self->c);
	if (self->d)
		ibv_destroy_qp(self->d);
	if (self->lb.b) {
		ibv_destroy_qp(self->lb.b);
		self->lb.b = NULL;
	}
	if (self->srq)
		ibv_destroy_srq(self->srq);
	loopback_fini(&self->lb);
}

static int post_srq(struct loopback *lb, struct ibv_srq *srq, uint64_t wr_id,
		    size_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)lb->buf + off, .length = len,
		.lkey = lb->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* Waits up to 5 s for an async event; returns its type or -1. */
static int async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	if (wait_async(ctx, ev, 5000))
		return -1;
	ibv_ack_async_event(ev);
	return ev->event_type;
}

TEST_F(srq, query_reports_sizes)
{
	struct ibv_srq_attr attr;

	ASSERT_EQ(0, ibv_query_srq(self->srq, &attr));
	EXPECT_EQ(8, attr.max_wr);
	EXPECT_EQ(1, attr.max_sge);
	EXPECT_EQ(0, attr.srq_limit);
}

TEST_F(srq, create_rejects_bad_sizes)
{
	struct ibv_srq_init_attr attr = {
		.attr = { .max_wr = RSOFT_MAX_SRQ_WR + 1, .max_sge = 1 },
	};

	EXPECT_EQ(NULL, ibv_create_srq(self->lb.pd, &attr));
	attr.attr.max_wr = 1;
	attr.attr.max_sge = RSOFT_MAX_SGE + 1;
	EXPECT_EQ(NULL, ibv_create_srq(self->lb.pd, &attr));
}

/* Two QPs take receives from one SRQ, in the order they were posted. */
TEST_F(srq, receives_are_shared_in_order)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	for (int i = 0; i < 4; i++) {
		lb->buf[i * 16] = 'a' + i;
		ASSERT_EQ(0, post_srq(lb, self->srq, 10 + i, 4096 + i * 16, 16));
	}
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 16));
	ASSERT_EQ(0, post_send(lb, self->c, 2, 16, 16));
	ASSERT_EQ(0, post_send(lb, lb->a, 3, 32, 16));
	uint32_t expect_qp[3] = { lb->b->qp_num, self->d->qp_num, lb->b->qp_num };

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(10 + i, wc.wr_id);
		EXPECT_EQ(expect_qp[i], wc.qp_num);
		EXPECT_EQ('a' + i, lb->buf[4096 + i * 16]);
	}
}

TEST_F(srq, post_recv_on_srq_qp_is_refused)
{
	EXPECT_NE(0, post_recv(&self->lb, self->lb.b, 1, 4096, 16));
}

TEST_F(srq, destroy_in_use_is_refused)
{
	EXPECT_EQ(EBUSY, ibv_destroy_srq(self->srq));
}

/* Arming the limit: one event when fewer remain, then disarmed. */
TEST_F(srq, limit_event)
{
	struct loopback *lb = &self->lb;
	struct ibv_srq_attr attr = { .srq_limit = 3 };
	struct ibv_async_event ev;
	struct ibv_wc wc;

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, post_srq(lb, self->srq, i, 4096 + i * 16, 16));
	ASSERT_EQ(0, ibv_modify_srq(self->srq, &attr, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(self->srq, &attr));
	EXPECT_EQ(3, attr.srq_limit);
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 16));	/* 3 left */
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 16));	/* 2 left */
	ASSERT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED, async_event(lb->ctx, &ev));
	EXPECT_EQ(self->srq, ev.element.srq);
	ASSERT_EQ(0, ibv_query_srq(self->srq, &attr));
	EXPECT_EQ(0, attr.srq_limit);
	ASSERT_EQ(0, post_send(lb, lb->a, 3, 0, 16));	/* 1 left */
	EXPECT_EQ(-1, async_event(lb->ctx, &ev));
	EXPECT_EQ(3, ibv_poll_cq(lb->rcq, 1, &wc) + ibv_poll_cq(lb->rcq, 1, &wc) +
		  ibv_poll_cq(lb->rcq, 1, &wc));
}

TEST_F(srq, limit_above_size_is_refused)
{
	struct ibv_srq_attr attr = { .srq_limit = 9 };

	EXPECT_EQ(EINVAL, ibv_modify_srq(self->srq, &attr, IBV_SRQ_LIMIT));
}

/* A sender that found the SRQ empty (rnr_retry 7) resumes on the post. */
TEST_F(srq, sender_waits_for_srq_post)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_send(lb, self->c, 1, 0, 16));
	EXPECT_EQ(0, ibv_poll_cq(lb->scq, 1, &wc));
	ASSERT_EQ(0, post_srq(lb, self->srq, 7, 4096, 16));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(self->d->qp_num, wc.qp_num);
	ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/*
 * A QP in ERR flushes nothing of the SRQ (the other QP still receives) and
 * says so once with the Last WQE Reached event.
 */
TEST_F(srq, error_qp_leaves_srq_receives)
{
	struct loopback *lb = &self->lb;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_srq(lb, self->srq, 5, 4096, 16));
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_ERR));
	ASSERT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, async_event(lb->ctx, &ev));
	EXPECT_EQ(lb->b, ev.element.qp);
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_ERR));
	EXPECT_EQ(-1, async_event(lb->ctx, &ev));
	EXPECT_EQ(0, ibv_poll_cq(lb->rcq, 1, &wc));
	ASSERT_EQ(0, post_send(lb, self->c, 1, 0, 16));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(5, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(self->d->qp_num, wc.qp_num);
}

/*
 * Last WQE Reached comes after the QP's last receive is complete: a QP
 * moved to ERR while a long SEND is being copied into an SRQ receive
 * raises it only once that receive's completion is on the CQ, as
 * ib_drain_qp() expects of it.
 */
TEST_F(srq, last_wqe_reached_after_receive_in_flight)
{
	struct loopback *lb = &self->lb;
	struct long_send ls = { 0 };
	struct ibv_async_event ev;
	struct ibv_wc wc;
	int mid;

	/* Wait for the copy to start, then fail b while it goes on. */
	mid = long_send_start(lb, &ls, NULL, self->srq);
	ASSERT_LE(0, mid);
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_ERR));
	ASSERT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, async_event(lb->ctx, &ev));
	EXPECT_EQ(lb->b, ev.element.qp);
	/* The receive is complete already. */
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc)) TH_LOG("ERR set %s the copy",
							   mid ? "during" : "after");
	EXPECT_EQ(9, wc.wr_id);
	EXPECT_EQ(lb->b->qp_num, wc.qp_num);
	EXPECT_EQ((char)0xab, ls.dst[ls.len - 1]);
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 5));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(0, long_send_end(&ls));
}

/*
 * UC on an SRQ: a SEND too long for the receive it takes loses that
 * receive, which cannot go back to the SRQ: it completes REM_INV_REQ_ERR
 * and the QP goes on (IBA's class E, as rxe); the sender never knows.
 */
TEST_F(srq, uc_message_too_long_fails_its_receive_alone)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp_init_attr init = {
		.send_cq = lb->scq, .recv_cq = lb->rcq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
		.qp_type = IBV_QPT_UC,
	};
	struct ibv_qp *e = ibv_create_qp(lb->pd, &init), *f;
	struct ibv_wc wc;

	init.srq = self->srq;
	f = ibv_create_qp(lb->pd, &init);
	ASSERT_NE(NULL, e);
	ASSERT_NE(NULL, f);
	ASSERT_EQ(0, rsoft_connect(e, 1, f->qp_num));
	ASSERT_EQ(0, rsoft_connect(f, 1, e->qp_num));
	ASSERT_EQ(0, post_srq(lb, self->srq, 7, 4096, 16));
	ASSERT_EQ(0, post_send(lb, e, 1, 0, 64));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 5));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_wait(lb->rcq, &wc, 5)) TH_LOG("the receive stayed posted");
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
	EXPECT_EQ(f->qp_num, wc.qp_num);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(f));
	ASSERT_EQ(0, post_srq(lb, self->srq, 8, 4096, 64));
	ASSERT_EQ(0, post_send(lb, e, 2, 0, 64));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 5));
	ASSERT_EQ(1, poll_wait(lb->rcq, &wc, 5));
	EXPECT_EQ(8, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, ibv_destroy_qp(e));
	EXPECT_EQ(0, ibv_destroy_qp(f));
}

TEST_HARNESS_MAIN
