// SPDX-License-Identifier: GPL-2.0
/*
 * A RoCE destination GID that no device holds: an RC request is tried
 * (retry_cnt + 1) times, a local ACK timeout apart, each timeout counted
 * (and once more, uncounted, an eighth of a timeout after the first),
 * then fails with RETRY_EXC_ERR; a UD datagram is dropped, even when a
 * local QP has the destination QPN. roce.sh runs it on a RoCE link (ROCE_DEV, default
 * rsoft_eth0).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "roce.h"
#include "kselftest_harness.h"

/* Nobody's link-local address (an EUI-64 of a MAC no netdev has). */
#define NOBODY "fe80::211:22ff:fe33:4455"
#define QKEY 0x11111111

FIXTURE(unreachable) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[4096];
	union ibv_gid nobody;
	int sgid;	/* a RoCE v1 link-local GID of port 1 */
};

FIXTURE_SETUP(unreachable)
{
	const char *dev = getenv("ROCE_DEV") ?: "rsoft_eth0";

	self->ctx = rsoft_open(dev);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", dev);
	self->sgid = roce_v1_link_local(self->ctx);
	ASSERT_LE(0, self->sgid) TH_LOG("%s has no RoCE v1 link-local GID", dev);
	ASSERT_EQ(1, inet_pton(AF_INET6, NOBODY, self->nobody.raw));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	self->mr = ibv_reg_mr(self->pd, self->buf, sizeof(self->buf),
			      IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->mr);
}

FIXTURE_TEARDOWN(unreachable)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

static int post(struct ibv_qp *qp, void *buf, uint32_t lkey, uint32_t len,
		struct ibv_ah *ah, uint32_t qpn)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = QKEY },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

TEST_F(unreachable, rc_retries_then_fails)
{
	/* 4.096 us << 14: 67 ms; three tries. */
	struct rc_path p = {
		.av = path_to(self->nobody, self->sgid), .mtu = IBV_MTU_1024,
		.dest_qpn = 0x123, .rnr_retry = 7, .timeout = 14, .retry_cnt = 2,
	};
	int timeout_ms = 67;
	double t0;
	struct ibv_qp *qp = small_qp(self->pd, self->cq, NULL, IBV_QPT_RC);
	long long timeouts = port_counter(self->ctx, "local_ack_timeouts");
	struct ibv_wc wc;

	ASSERT_NE(NULL, qp);
	ASSERT_LE(0, timeouts);
	ASSERT_EQ(0, rc_connect(qp, &p)) TH_LOG("connect: %m");
	t0 = mono_now();
	ASSERT_EQ(0, post(qp, self->buf, self->mr->lkey, 64, NULL, 0));
	ASSERT_EQ(1, poll_wait(self->cq, &wc, 60));
	EXPECT_LE(3 * timeout_ms, (int)(1000 * (mono_now() - t0)));
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(qp));
	EXPECT_EQ(3, port_counter(self->ctx, "local_ack_timeouts") - timeouts);
	ibv_destroy_qp(qp);
}

TEST_F(unreachable, ud_is_dropped)
{
	struct ibv_ah_attr av = path_to(self->nobody, self->sgid);
	struct ibv_qp *a = small_qp(self->pd, self->cq, NULL, IBV_QPT_UD);
	struct ibv_qp *b = small_qp(self->pd, self->cq, NULL, IBV_QPT_UD);
	struct ibv_ah *ah = ibv_create_ah(self->pd, &av);
	struct ibv_sge sge = { (uintptr_t)self->buf + 1024, 1024, self->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, ah) TH_LOG("create_ah: %m");
	ASSERT_EQ(0, ud_ready(a, QKEY));
	ASSERT_EQ(0, ud_ready(b, QKEY));
	ASSERT_EQ(0, ibv_post_recv(b, &rwr, &bad));
	/* b's QPN, another GID: the datagram is not b's. */
	ASSERT_EQ(0, post(a, self->buf, self->mr->lkey, 64, ah, b->qp_num));
	ASSERT_EQ(1, poll_wait(self->cq, &wc, 30));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	usleep(200 * 1000);
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	ibv_destroy_ah(ah);
	ibv_destroy_qp(b);
	ibv_destroy_qp(a);
}

TEST_HARNESS_MAIN
