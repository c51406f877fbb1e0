// SPDX-License-Identifier: GPL-2.0
/*
 * RC queue pairs and memory regions on rsoft0: the state machine, SEND and
 * SEND_WITH_IMM, signaling, receiver-not-ready, and the error completions
 * of bad keys, short receive buffers and peers in the wrong state.
 */
#include <errno.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/ib_user_verbs.h>

#include "loopback.h"
#include "kselftest_harness.h"

FIXTURE(qp) {
	struct loopback lb;
};

FIXTURE_SETUP(qp)
{
	ASSERT_EQ(0, loopback_init(&self->lb, 64, 64, 8192))
		TH_LOG("loopback setup failed: %m");
}

FIXTURE_TEARDOWN(qp)
{
	loopback_fini(&self->lb);
}

static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, 1, wc);
}

TEST_F(qp, send_moves_data)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	for (int i = 0; i < 100; i++)
		lb->buf[i] = i;
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 100));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 100));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(100, wc.byte_len);
	EXPECT_EQ(0, memcmp(lb->buf, lb->buf + 4096, 100));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* Several SGEs on both sides, split at different places. */
TEST_F(qp, scatter_gather)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge ssge[2] = {
		{ (uintptr_t)lb->buf, 3000, lb->mr->lkey },
		{ (uintptr_t)lb->buf + 3000, 1000, lb->mr->lkey },
	};
	struct ibv_sge rsge[2] = {
		{ (uintptr_t)lb->buf + 4096, 1500, lb->mr->lkey },
		{ (uintptr_t)lb->buf + 5596, 2596, lb->mr->lkey },
	};
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = ssge, .num_sge = 2,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = rsge, .num_sge = 2 },
			   *rbad;
	struct ibv_wc wc;

	for (int i = 0; i < 4000; i++)
		lb->buf[i] = i * 7;
	ASSERT_EQ(0, ibv_post_recv(lb->b, &rwr, &rbad));
	ASSERT_EQ(0, ibv_post_send(lb->a, &swr, &sbad));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(4000, wc.byte_len);
	EXPECT_EQ(0, memcmp(lb->buf, lb->buf + 4096, 4000));
}

TEST_F(qp, send_with_imm)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(0xdeadbeef) }, *bad;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 6, 4096, 64));
	ASSERT_EQ(0, ibv_post_send(lb->a, &wr, &bad));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(IBV_WC_WITH_IMM, wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(htonl(0xdeadbeef), wc.imm_data);
}

/* Unsignaled sends complete silently, unless the QP signals all. */
TEST_F(qp, unsignaled_and_sq_sig_all)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	struct ibv_qp_init_attr init = {
		.send_cq = lb->scq, .recv_cq = lb->rcq, .sq_sig_all = 1,
		.cap = { 4, 4, 1, 1 }, .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *all;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 64));
	ASSERT_EQ(0, ibv_post_send(lb->a, &wr, &bad));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(0, poll_one(lb->scq, &wc));

	/* A QP with sq_sig_all in place of a. */
	all = ibv_create_qp(lb->pd, &init);
	ASSERT_NE(NULL, all);
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(all, 1, lb->b->qp_num));
	ASSERT_EQ(0, rsoft_connect(lb->b, 1, all->qp_num));
	ASSERT_EQ(0, post_recv(lb, lb->b, 2, 4096, 64));
	ASSERT_EQ(0, ibv_post_send(all, &wr, &bad));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(9, wc.wr_id);
	EXPECT_EQ(0, ibv_destroy_qp(all));
}

TEST_F(qp, query_reports_attributes)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	ASSERT_EQ(0, ibv_query_qp(self->lb.a, &attr, IBV_QP_STATE | IBV_QP_CAP |
				  IBV_QP_DEST_QPN | IBV_QP_RNR_RETRY, &init));
	EXPECT_EQ(IBV_QPS_RTS, attr.qp_state);
	EXPECT_EQ(self->lb.b->qp_num, attr.dest_qp_num);
	EXPECT_EQ(7, attr.rnr_retry);
	EXPECT_EQ(14, attr.timeout);
	EXPECT_EQ(IBV_MTU_4096, attr.path_mtu);
	EXPECT_EQ(64, init.cap.max_send_wr);
	EXPECT_EQ(0, init.cap.max_inline_data);
}

/*
 * sq_psn and rq_psn read back where the requester and the responder have
 * got to, as rxe reports them: a request waiting for a receive has not
 * moved them yet; once taken, with the one after it, both moved by two.
 */
TEST_F(qp, query_reports_live_psns)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a, b;
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_query_qp(lb->a, &a, IBV_QP_SQ_PSN, &init));
	ASSERT_EQ(0, ibv_query_qp(lb->b, &b, IBV_QP_RQ_PSN, &init));
	ASSERT_EQ(a.sq_psn, b.rq_psn);
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	ASSERT_EQ(0, ibv_query_qp(lb->a, &a, IBV_QP_SQ_PSN, &init));
	EXPECT_EQ(b.rq_psn, a.sq_psn);			/* waiting */
	ASSERT_EQ(0, post_recv(lb, lb->b, 2, 4096, 64));
	ASSERT_EQ(0, post_recv(lb, lb->b, 3, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 8));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 10));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 10));
	EXPECT_EQ(4, wc.wr_id);
	ASSERT_EQ(0, ibv_query_qp(lb->a, &a, IBV_QP_SQ_PSN, &init));
	EXPECT_EQ((b.rq_psn + 2) & 0xffffff, a.sq_psn);
	ASSERT_EQ(0, ibv_query_qp(lb->b, &b, IBV_QP_RQ_PSN, &init));
	EXPECT_EQ(a.sq_psn, b.rq_psn);
}

/* ib_modify_qp_is_ok() decides: RESET -> RTS and RTR without AV fail. */
TEST_F(qp, invalid_transitions)
{
	struct ibv_qp_init_attr init = {
		.send_cq = self->lb.scq, .recv_cq = self->lb.rcq,
		.cap = { 4, 4, 1, 1 }, .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(self->lb.pd, &init);
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTS };

	ASSERT_NE(NULL, qp);
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, IBV_QP_STATE));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = 1;
	ASSERT_EQ(0, ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	attr.qp_state = IBV_QPS_RTR;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_INIT, qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Outstanding reads/atomics beyond max_qp_rd_atom are refused. */
TEST_F(qp, rd_atomic_limits)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp *qp = rsoft_rc_qp(lb, lb->scq, lb->rcq, 4);
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rts = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
		  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
		.dest_qp_num = lb->b->qp_num, .ah_attr = { .dlid = 1, .port_num = 1 },
		.max_dest_rd_atomic = RSOFT_MAX_RD_ATOM + 1,
	};
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, rtr));
	attr.max_dest_rd_atomic = RSOFT_MAX_RD_ATOM;
	ASSERT_EQ(0, ibv_modify_qp(qp, &attr, rtr));
	attr = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.max_rd_atomic = RSOFT_MAX_RD_ATOM + 1,
	};
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, rts));
	EXPECT_EQ(IBV_QPS_RTR, qp_state(qp));
	attr.max_rd_atomic = RSOFT_MAX_RD_ATOM;
	EXPECT_EQ(0, ibv_modify_qp(qp, &attr, rts));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Posting sends before RTS is refused with bad_wr set. */
TEST_F(qp, post_send_in_wrong_state)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad = NULL;

	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	EXPECT_EQ(EINVAL, ibv_post_send(lb->a, &wr, &bad));
	EXPECT_EQ(&wr, bad);
}

/*
 * A list refused as a whole names its first WR in bad_wr: receives in
 * RESET, sends in INIT. Nothing of it is posted.
 */
TEST_F(qp, bad_wr_names_head_of_refused_list)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp *qp = rsoft_rc_qp(lb, lb->scq, lb->rcq, 4);
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
	};
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_recv_wr rwr[2] = {
		{ .wr_id = 1, .next = &rwr[1], .sg_list = &sge, .num_sge = 1 },
		{ .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
	}, *rbad = NULL;
	struct ibv_send_wr swr[2] = {
		{ .wr_id = 3, .next = &swr[1], .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
		{ .wr_id = 4, .sg_list = &sge, .num_sge = 1,
		  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
	}, *sbad = NULL;
	struct ibv_wc wc;

	ASSERT_NE(NULL, qp);
	EXPECT_EQ(EINVAL, ibv_post_recv(qp, rwr, &rbad));
	EXPECT_EQ(&rwr[0], rbad);
	ASSERT_EQ(0, ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	EXPECT_EQ(EINVAL, ibv_post_send(qp, swr, &sbad));
	EXPECT_EQ(&swr[0], sbad);
	/* Nothing was queued: ERR has nothing to flush. */
	ASSERT_EQ(0, set_qp_state(qp, IBV_QPS_ERR));
	EXPECT_EQ(0, poll_one(lb->scq, &wc));
	EXPECT_EQ(0, poll_one(lb->rcq, &wc));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * A list whose third WR is refused (more SGEs than the QP has) names that
 * WR in bad_wr; the two before it are posted and complete.
 */
TEST_F(qp, bad_wr_names_third_of_list)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge sge[3] = {
		{ (uintptr_t)lb->buf, 8, lb->mr->lkey },
		{ (uintptr_t)lb->buf + 8, 8, lb->mr->lkey },
		{ (uintptr_t)lb->buf + 16, 8, lb->mr->lkey },
	};
	struct ibv_recv_wr rwr[3] = {
		{ .wr_id = 1, .next = &rwr[1], .sg_list = sge, .num_sge = 1 },
		{ .wr_id = 2, .next = &rwr[2], .sg_list = sge, .num_sge = 1 },
		{ .wr_id = 3, .sg_list = sge, .num_sge = 3 },
	}, *rbad = NULL;
	struct ibv_send_wr swr[3], *sbad = NULL;
	struct ibv_wc wc[4];

	EXPECT_EQ(EINVAL, ibv_post_recv(lb->b, rwr, &rbad));
	EXPECT_EQ(&rwr[2], rbad);
	for (int i = 0; i < 3; i++)
		swr[i] = (struct ibv_send_wr){
			.wr_id = 10 + i, .next = i < 2 ? &swr[i + 1] : NULL,
			.sg_list = sge, .num_sge = i < 2 ? 1 : 3,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		};
	EXPECT_EQ(EINVAL, ibv_post_send(lb->a, swr, &sbad));
	EXPECT_EQ(&swr[2], sbad);
	ASSERT_EQ(2, ibv_poll_cq(lb->scq, 4, wc));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(10 + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
	}
	ASSERT_EQ(2, ibv_poll_cq(lb->rcq, 4, wc));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(1 + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
	}
}

/* A QP is never granted less inline data than it asked for. */
TEST_F(qp, inline_data_not_granted_is_refused)
{
	struct ibv_qp_init_attr init = {
		.send_cq = self->lb.scq, .recv_cq = self->lb.rcq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = RSOFT_MAX_INLINE_DATA + 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(self->lb.pd, &init);

	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EINVAL, errno);
	if (qp) {
		TH_LOG("granted max_inline_data %u", init.cap.max_inline_data);
		ibv_destroy_qp(qp);
	}
}

/* Modify to ERR flushes outstanding receives as WR_FLUSH_ERR, in order. */
TEST_F(qp, error_state_flushes)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc[8];

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, post_recv(lb, lb->b, 40 + i, 4096, 64));
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_ERR));
	ASSERT_EQ(3, ibv_poll_cq(lb->rcq, 8, wc));
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(40 + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
		EXPECT_EQ(lb->b->qp_num, wc[i].qp_num);
	}
	/*
	 * The peer no longer answers: once a's retries run out (8 timeouts
	 * of 67 ms), its send fails and a goes to ERR.
	 */
	ASSERT_EQ(0, post_send(lb, lb->a, 50, 0, 8));
	ASSERT_EQ(1, poll_wait(lb->scq, wc, 30));
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc[0].status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
}

/* Connects a again, to b's QPN at @lid, with the retries given. */
static int reconnect_a(struct loopback *lb, uint16_t lid, uint8_t timeout,
		       uint8_t retry_cnt)
{
	return set_qp_state(lb->a, IBV_QPS_RESET) ||
	       rsoft_connect_retry(lb->a, lid, lb->b->qp_num, 7, 0, timeout,
				   retry_cnt);
}

/*
 * A request nobody answers (no port has LID 99) is sent, sent again once
 * at an eighth of its local ACK timeout (a probe, not counted) and after
 * each local ACK timeout but the last; after (retry_cnt + 1) of them it
 * fails with RETRY_EXC_ERR; what was queued behind it is flushed.
 */
TEST_F(qp, unanswered_request_times_out)
{
	struct loopback *lb = &self->lb;
	/* 4.096 us << 16: 268 ms; three tries. */
	int timeout_ms = 268;
	double t0;
	struct ibv_wc wc;

	ASSERT_EQ(0, reconnect_a(lb, 99, 16, 2));
	t0 = mono_now();
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 8));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 60));
	EXPECT_LE(3 * timeout_ms, (int)(1000 * (mono_now() - t0)));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 30));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
}

/*
 * A retry reaches a responder that became ready meanwhile: the send
 * completes as if it had been answered the first time.
 */
TEST_F(qp, retry_reaches_late_responder)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	/* Retries of a second each: time enough to connect b. */
	ASSERT_EQ(0, reconnect_a(lb, 1, 18, 7));
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_RESET));
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	usleep(100 * 1000);
	EXPECT_EQ(0, ibv_poll_cq(lb->scq, 1, &wc));
	ASSERT_EQ(0, rsoft_connect(lb->b, 1, lb->a->qp_num));
	ASSERT_EQ(0, post_recv(lb, lb->b, 2, 4096, 64));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 30));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_wait(lb->rcq, &wc, 30));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/*
 * A local ACK timeout of 0 is infinite: an unanswered request waits until
 * the QP is moved to ERR, which flushes it.
 */
TEST_F(qp, timeout_zero_waits_forever)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, reconnect_a(lb, 99, 0, 0));
	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	usleep(300 * 1000);
	EXPECT_EQ(0, ibv_poll_cq(lb->scq, 1, &wc));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(lb->a));
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_ERR));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 30));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
}

/* What ibv_query_qp says of @qp's sq_draining; -1 if it fails. */
static int sq_draining(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.sq_draining;
}

/*
 * SQD (IBA 10.3.1): a's send queue drains, which IBV_EVENT_SQ_DRAINED
 * says, and sends nothing new, while its receive side goes on: b's SEND
 * to a completes at both ends at once, not after a's return to RTS (b's
 * requester would retry it until then). Back in RTS, what a posted in
 * SQD is sent.
 */
TEST_F(qp, send_queue_drains_receive_side_runs)
{
	struct loopback *lb = &self->lb;
	struct ibv_async_event ev;
	struct ibv_wc wc[2];
	int got = 0;

	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_SQD));
	EXPECT_EQ(IBV_QPS_SQD, qp_state(lb->a));

	/* b -> a: a's receive and b's SEND both complete on rcq. */
	ASSERT_EQ(0, post_recv(lb, lb->a, 1, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->b, 2, 0, 64));
	while (got < 2 && poll_wait(lb->rcq, &wc[got], 2) == 1)
		got++;
	ASSERT_EQ(2, got) TH_LOG("a in SQD took no SEND");
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
	EXPECT_NE(wc[0].wr_id, wc[1].wr_id);

	ASSERT_EQ(0, wait_async(lb->ctx, &ev, 5000)) TH_LOG("no SQ drained event");
	EXPECT_EQ(IBV_EVENT_SQ_DRAINED, ev.event_type);
	EXPECT_EQ(lb->a, ev.element.qp);
	ibv_ack_async_event(&ev);
	EXPECT_EQ(-1, wait_async(lb->ctx, &ev, 200)) TH_LOG("drained twice");

	/* a -> b, posted in SQD: it waits for RTS. */
	ASSERT_EQ(0, post_recv(lb, lb->b, 3, 8192 - 64, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 64));
	usleep(200 * 1000);
	EXPECT_EQ(0, ibv_poll_cq(lb->scq, 1, wc));
	EXPECT_EQ(0, ibv_poll_cq(lb->rcq, 1, wc));
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RTS));
	ASSERT_EQ(1, poll_wait(lb->scq, wc, 5));
	EXPECT_EQ(4, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
	ASSERT_EQ(1, poll_wait(lb->rcq, wc, 5));
	EXPECT_EQ(3, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
}

/*
 * A SEND that left before SQD and waits for a receive (RNR, rnr_retry 7)
 * is in flight: the send queue has not drained until it completes, which
 * it does in SQD once b posts a receive; SQ_DRAINED comes once its
 * completion is on the CQ, once. ibv_query_qp says sq_draining until then,
 * and a move back to RTS is refused until then (IBA 10.3.1; rxe's EINVAL).
 */
TEST_F(qp, send_queue_drains_a_send_in_flight)
{
	struct loopback *lb = &self->lb;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	EXPECT_EQ(0, poll_one(lb->scq, &wc));
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_SQD));
	ASSERT_EQ(-1, wait_async(lb->ctx, &ev, 200))
		TH_LOG("drained with a SEND in flight");
	EXPECT_EQ(1, sq_draining(lb->a));
	EXPECT_EQ(EINVAL, set_qp_state(lb->a, IBV_QPS_RTS));
	EXPECT_EQ(IBV_QPS_SQD, qp_state(lb->a));
	ASSERT_EQ(0, post_recv(lb, lb->b, 2, 4096, 64));
	ASSERT_EQ(0, wait_async(lb->ctx, &ev, 5000)) TH_LOG("no SQ drained event");
	EXPECT_EQ(IBV_EVENT_SQ_DRAINED, ev.event_type);
	EXPECT_EQ(lb->a, ev.element.qp);
	ibv_ack_async_event(&ev);
	EXPECT_EQ(0, sq_draining(lb->a));
	EXPECT_EQ(IBV_QPS_SQD, qp_state(lb->a));
	EXPECT_EQ(0, set_qp_state(lb->a, IBV_QPS_RTS));
	ASSERT_EQ(1, poll_one(lb->scq, &wc)) TH_LOG("drained before the SEND completed");
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(-1, wait_async(lb->ctx, &ev, 200)) TH_LOG("drained twice");
}

/*
 * A receive buffer too small: receiver LOC_LEN_ERR, sender REM_INV_REQ_ERR,
 * both in ERR; the receive says why, so no affiliated event does.
 */
TEST_F(qp, receive_too_small)
{
	struct loopback *lb = &self->lb;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 10));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 11));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->b));
	EXPECT_EQ(-1, wait_async(lb->ctx, &ev, 200)) TH_LOG("event %d", ev.event_type);
}

/*
 * SEND_WITH_INV naming a user MR: only fast-registration MRs (which only
 * kernel consumers have) can be invalidated, so the receiver completes
 * REM_INV_REQ_ERR, the sender REM_OP_ERR, and the MR stays usable.
 */
TEST_F(qp, send_with_inv_of_user_mr_fails)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV, .send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = lb->mr->rkey,
	}, *bad;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 64));
	ASSERT_EQ(0, ibv_post_send(lb->a, &wr, &bad));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_REM_OP_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->b));
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(lb->a, 1, lb->b->qp_num));
	ASSERT_EQ(0, rsoft_connect(lb->b, 1, lb->a->qp_num));
	ASSERT_EQ(0, post_recv(lb, lb->b, 3, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 8));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* A receive into an MR without LOCAL_WRITE: receiver LOC_PROT_ERR. */
TEST_F(qp, receive_into_read_only_mr)
{
	struct loopback *lb = &self->lb;
	struct ibv_mr *ro = ibv_reg_mr(lb->pd, lb->buf + 4096, 4096, 0);
	struct ibv_sge sge = { (uintptr_t)lb->buf + 4096, 64, 0 };
	struct ibv_recv_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, ro);
	sge.lkey = ro->lkey;
	ASSERT_EQ(0, ibv_post_recv(lb->b, &wr, &bad));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 64));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_REM_OP_ERR, wc.status);
	EXPECT_EQ(0, ibv_dereg_mr(ro));
}

/* An SGE reaching past its MR is a protection error; nothing moves. */
TEST_F(qp, send_out_of_mr_bounds)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 4096));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 8000, 500));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(0, poll_one(lb->rcq, &wc));
}

/* rnr_retry 7 waits for the receive; a finite count gives up. */
TEST_F(qp, receiver_not_ready)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_send(lb, lb->a, 1, 0, 8));
	EXPECT_EQ(0, poll_one(lb->scq, &wc));		/* waiting */
	ASSERT_EQ(0, post_recv(lb, lb->b, 2, 4096, 64));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));		/* went through */
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));

	/*
	 * rnr_retry is set on RTR -> RTS only: reconnect a with 0, and b with
	 * it, so that a's first PSN is again the one b expects (to b, a
	 * request with the PSN it took already is a duplicate).
	 */
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect_rnr(lb->a, 1, lb->b->qp_num, 0));
	ASSERT_EQ(0, rsoft_connect_rnr(lb->b, 1, lb->a->qp_num, 0));
	ASSERT_EQ(0, post_send(lb, lb->a, 3, 0, 8));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
}

/*
 * rnr_retry 7 retries for ever, after each RNR timer, rereading the
 * sender's buffers as a requester does: a key deregistered while the
 * send waits for a receive fails it (no post comes to run it again).
 */
TEST_F(qp, rnr_wait_forever_still_sees_a_dead_key)
{
	struct loopback *lb = &self->lb;
	char *src = calloc(1, 64);
	struct ibv_mr *mr = ibv_reg_mr(lb->pd, src, 64, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)src, 64, mr ? mr->lkey : 0 };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, ibv_post_send(lb->a, &wr, &bad));
	EXPECT_EQ(0, poll_one(lb->scq, &wc));		/* waiting */
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 10));
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(lb->a));
	free(src);
}

/*
 * PSNs end to end: a request whose PSN b took already is a duplicate,
 * acknowledged and not executed again (b's receive stays posted); the
 * next one is executed.
 */
TEST_F(qp, duplicate_psn_acknowledged_not_executed)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 8));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	/* a starts again at PSN 0; b expects 1. */
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(lb->a, 1, lb->b->qp_num));
	ASSERT_EQ(0, post_recv(lb, lb->b, 3, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 8));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(4, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, poll_one(lb->rcq, &wc));
	/* PSN 1: executed, into the receive still posted. */
	ASSERT_EQ(0, post_send(lb, lb->a, 5, 0, 16));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(3, wc.wr_id);
	EXPECT_EQ(16, wc.byte_len);
}

/*
 * A request ahead of the PSN b expects meets a sequence error NAK; the
 * requester goes back to b's PSN, which it has no request for, and its
 * retries run out. Nothing reaches b.
 */
TEST_F(qp, psn_ahead_retries_then_fails)
{
	struct loopback *lb = &self->lb;
	struct rc_path p = {
		.av = { .dlid = 1, .port_num = 1 }, .mtu = IBV_MTU_4096,
		.dest_qpn = lb->b->qp_num, .access = IBV_ACCESS_LOCAL_WRITE,
		.rnr_retry = 7, .timeout = 10, .retry_cnt = 2, .sq_psn = 100,
	};
	struct ibv_wc wc;

	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, rc_connect(lb->a, &p));
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 8));
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 10));
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(0, poll_one(lb->rcq, &wc));
}

/* Unknown optional access bits are ignored; unsupported ones refused. */
TEST_F(qp, mr_access_flags)
{
	struct ibv_mr *mr;

	mr = ibv_reg_mr(self->lb.pd, self->lb.buf, 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_NE(self->lb.mr->lkey, mr->lkey);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	errno = 0;
	mr = ibv_reg_mr(self->lb.pd, self->lb.buf, 4096, IBV_ACCESS_MW_BIND);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* A deregistered key, even reused slot, no longer works. */
TEST_F(qp, stale_key)
{
	struct loopback *lb = &self->lb;
	struct ibv_mr *mr = ibv_reg_mr(lb->pd, lb->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *again;
	uint32_t stale;
	struct ibv_wc wc;

	ASSERT_NE(NULL, mr);
	stale = mr->lkey;
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	again = ibv_reg_mr(lb->pd, lb->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, again);
	EXPECT_NE(stale, again->lkey);
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 64));
	ASSERT_EQ(0, post_send_key(lb, lb->a, 2, 0, 8, stale));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(0, ibv_dereg_mr(again));
}

/*
 * The stock ABI-1 provider has no rereg_mr (ibv_rereg_mr fails before the
 * kernel): send the uverbs command on the context's command fd.
 */
static int rereg_mr(struct ibv_mr *mr, uint32_t flags, struct ibv_pd *pd,
		    void *addr, size_t len, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_REREG_MR,
			.in_words = sizeof(req) / 4,
			.out_words = sizeof(resp) / 4,
		},
		.cmd = {
			.response = (uintptr_t)&resp,
			.mr_handle = mr->handle,
			.flags = flags,
			.start = (uintptr_t)addr,
			.length = len,
			.hca_va = (uintptr_t)addr,
			.pd_handle = pd ? pd->handle : 0,
			.access_flags = access,
		},
	};

	if (write(mr->context->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	mr->lkey = resp.lkey;
	return 0;
}

/* rereg_mr moves a key to new memory: the new range works, the old is gone. */
TEST_F(qp, rereg_mr_translation)
{
	struct loopback *lb = &self->lb;
	struct ibv_mr *mr = ibv_reg_mr(lb->pd, lb->buf, 1024, IBV_ACCESS_LOCAL_WRITE);
	uint32_t key;
	struct ibv_wc wc;

	ASSERT_NE(NULL, mr);
	key = mr->lkey;
	ASSERT_EQ(0, rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			      lb->buf + 2048, 1024, 0));
	EXPECT_EQ(key, mr->lkey);
	memset(lb->buf + 2048, 0x5a, 8);
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 4096, 64));
	ASSERT_EQ(0, post_send_key(lb, lb->a, 2, 2048, 8, mr->lkey));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(0x5a, lb->buf[4096]);
	ASSERT_EQ(0, post_send_key(lb, lb->a, 3, 0, 8, mr->lkey));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* rereg_mr to another PD: this PD's QPs can no longer use the key. */
TEST_F(qp, rereg_mr_pd)
{
	struct loopback *lb = &self->lb;
	struct ibv_pd *pd2 = ibv_alloc_pd(lb->ctx);
	struct ibv_mr *mr = ibv_reg_mr(lb->pd, lb->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_wc wc;

	ASSERT_NE(NULL, pd2);
	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0));
	ASSERT_EQ(0, post_send_key(lb, lb->a, 1, 0, 8, mr->lkey));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* rereg_mr without LOCAL_WRITE: receives into it fail. */
TEST_F(qp, rereg_mr_access)
{
	struct loopback *lb = &self->lb;
	struct ibv_mr *mr = ibv_reg_mr(lb->pd, lb->buf + 4096, 4096,
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)lb->buf + 4096, 64, 0 };
	struct ibv_recv_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0));
	sge.lkey = mr->lkey;
	ASSERT_EQ(0, ibv_post_recv(lb->b, &wr, &bad));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 64));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* A UC QP on lb's CQs and PD, not yet connected. */
static struct ibv_qp *uc_qp(struct loopback *lb)
{
	struct ibv_qp_init_attr init = {
		.send_cq = lb->scq, .recv_cq = lb->rcq,
		.cap = { 4, 4, 1, 1 }, .qp_type = IBV_QPT_UC,
	};

	return ibv_create_qp(lb->pd, &init);
}

/* Two UC QPs connected to each other: 0, or why not. */
static int uc_pair(struct loopback *lb, struct ibv_qp **a, struct ibv_qp **b)
{
	*a = uc_qp(lb);
	*b = uc_qp(lb);
	if (!*a || !*b)
		return errno ? errno : ENOMEM;
	return rsoft_connect(*a, 1, (*b)->qp_num) ?:
	       rsoft_connect(*b, 1, (*a)->qp_num);
}

/* UC: what the responder cannot take is dropped; the sender never knows. */
TEST_F(qp, uc_drops_silently)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;

	ASSERT_EQ(0, uc_pair(lb, &a, &b));
	ASSERT_EQ(0, post_send(lb, a, 1, 0, 8));	/* no receive posted */
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, poll_one(lb->rcq, &wc));
	ASSERT_EQ(0, post_recv(lb, b, 2, 4096, 64));
	ASSERT_EQ(0, post_send(lb, a, 3, 0, 8));
	ASSERT_EQ(1, poll_one(lb->rcq, &wc));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(a));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(b));
	EXPECT_EQ(0, ibv_destroy_qp(a));
	EXPECT_EQ(0, ibv_destroy_qp(b));
}

/*
 * UC: a receive whose MR went after it was posted is not left at the front
 * for good, which had every later SEND dropped while b said RTS: it
 * completes LOC_PROT_ERR and b goes to ERR, as rxe has it. a's SEND
 * succeeds, as UC's always do.
 */
TEST_F(qp, uc_receive_with_bad_mr_fails)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr = ibv_reg_mr(lb->pd, lb->buf + 4096, 64, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)lb->buf + 4096, 64, mr ? mr->lkey : 0 };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, mr);
	ASSERT_EQ(0, uc_pair(lb, &a, &b));
	ASSERT_EQ(0, ibv_post_recv(b, &wr, &bad));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ(0, post_send(lb, a, 1, 0, 8));
	ASSERT_EQ(1, poll_one(lb->scq, &wc));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_one(lb->rcq, &wc)) TH_LOG("the receive stayed posted");
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(b));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(a));
	EXPECT_EQ(0, ibv_destroy_qp(a));
	EXPECT_EQ(0, ibv_destroy_qp(b));
}

/* SEND_WITH_INV, REG_MR and LOCAL_INV are RC's: a UC QP refuses it. */
TEST_F(qp, uc_refuses_send_with_inv)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp *a = uc_qp(lb);
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
		.invalidate_rkey = lb->mr->rkey,
	}, *bad = NULL;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, rsoft_connect(a, 1, lb->b->qp_num));
	EXPECT_EQ(EINVAL, ibv_post_send(a, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	EXPECT_EQ(0, ibv_destroy_qp(a));
}

/*
 * A's peer is destroyed and a new QP gets its number: a, not modified,
 * sends to the new QP, as a look-up by number finds it, and nothing a
 * kept of the old peer holds its CQ (whose destroy would wait for ever).
 */
TEST_F(qp, peer_replaced_by_qp_of_same_number)
{
	struct loopback *lb = &self->lb;
	struct ibv_cq *cq = ibv_create_cq(lb->ctx, 4, NULL, NULL, 0);
	struct rc_path path = {
		.av = { .dlid = 1, .port_num = 1 }, .mtu = IBV_MTU_4096,
		.access = IBV_ACCESS_LOCAL_WRITE, .rnr_retry = 7,
		.timeout = 14, .retry_cnt = 7,
	};
	struct ibv_qp *p, *q;
	struct ibv_wc wc;
	uint32_t qpn;

	ASSERT_NE(NULL, cq);
	p = rsoft_rc_qp(lb, cq, cq, 4);
	ASSERT_NE(NULL, p);
	qpn = p->qp_num;
	ASSERT_EQ(0, set_qp_state(lb->a, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(lb->a, 1, qpn));
	ASSERT_EQ(0, rsoft_connect(p, 1, lb->a->qp_num));
	ASSERT_EQ(0, post_recv(lb, p, 1, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 2, 0, 64));
	ASSERT_EQ(1, poll_wait(cq, &wc, 30));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 30));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(0, ibv_destroy_qp(p));
	ASSERT_EQ(0, ibv_destroy_cq(cq));
	q = rsoft_rc_qp(lb, lb->rcq, lb->rcq, 4);
	ASSERT_NE(NULL, q);
	if (q->qp_num != qpn) {
		ibv_destroy_qp(q);
		SKIP(return, "QPN %u not reused", qpn);
	}
	/* a sent one message: the next has PSN 1. */
	path.dest_qpn = lb->a->qp_num;
	path.rq_psn = 1;
	ASSERT_EQ(0, rc_connect(q, &path));
	ASSERT_EQ(0, post_recv(lb, q, 3, 4096, 64));
	ASSERT_EQ(0, post_send(lb, lb->a, 4, 0, 64));
	ASSERT_EQ(1, poll_wait(lb->rcq, &wc, 30));
	EXPECT_EQ(3, wc.wr_id);
	EXPECT_EQ(q->qp_num, wc.qp_num);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 30));
	EXPECT_EQ(4, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, ibv_destroy_qp(q));
}

/*
 * A responder destroyed while a long SEND is copied into it answers
 * nothing, as a host that vanished would not: the requester retries and
 * fails with RETRY_EXC_ERR, as it would against rxe or a NIC, not with a
 * protection error of its own memory.
 */
TEST_F(qp, peer_destroyed_mid_send_is_silent)
{
	struct loopback *lb = &self->lb;
	struct long_send ls = { 0 };
	struct ibv_wc wc;
	int mid;

	mid = long_send_start(lb, &ls, lb->b, NULL);
	ASSERT_LE(0, mid);
	ASSERT_EQ(0, ibv_destroy_qp(lb->b));
	lb->b = NULL;
	ASSERT_EQ(1, poll_wait(lb->scq, &wc, 10));
	EXPECT_EQ(1, wc.wr_id);
	if (!mid && wc.status == IBV_WC_SUCCESS)
		SKIP(goto out, "the copy ended before the destroy");
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status) TH_LOG("status %d", wc.status);
out:
	EXPECT_EQ(0, long_send_end(&ls));
}

TEST_HARNESS_MAIN
