// SPDX-License-Identifier: GPL-2.0
/*
 * QPs of two RoCE devices of one host (ROCE_DEV and ROCE_DEV2, default
 * rsoft_x0 and rsoft_x1; roce-cross.sh makes them): an RC sender with
 * rnr_retry 7 that finds the other device's SRQ empty waits, and the
 * SRQ's next post resumes it.
 */
#include <errno.h>
#include <stdlib.h>

#include "roce.h"
#include "kselftest_harness.h"

/* One device's side: a QP (b's takes its receives from an SRQ). */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	union ibv_gid gid;
	int sgid;
	char buf[4096];
};

static int side_open(struct side *s, const char *dev, int with_srq)
{
	struct ibv_srq_init_attr sattr = {
		.attr = { .max_wr = 4, .max_sge = 1 },
	};

	s->ctx = rsoft_open(dev);
	if (!s->ctx)
		return -1;
	s->sgid = roce_v1_link_local(s->ctx);
	if (s->sgid < 0 || ibv_query_gid(s->ctx, 1, s->sgid, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 8, NULL, NULL, 0) : NULL;
	if (!s->cq)
		return -1;
	if (with_srq) {
		s->srq = ibv_create_srq(s->pd, &sattr);
		if (!s->srq)
			return -1;
	}
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE);
	s->qp = s->mr ? small_qp(s->pd, s->cq, s->srq, IBV_QPT_RC) : NULL;
	return s->qp ? 0 : -1;
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
}

/* Connects @from's QP to @to's. */
static int side_connect(struct side *from, const struct side *to)
{
	struct rc_path p = {
		.av = path_to(to->gid, from->sgid), .mtu = IBV_MTU_1024,
		.dest_qpn = to->qp->qp_num, .rnr_retry = 7, .timeout = 14,
		.retry_cnt = 7,
	};

	return rc_connect(from->qp, &p);
}

FIXTURE(cross) {
	struct side a, b;
};

FIXTURE_SETUP(cross)
{
	const char *dev_a = getenv("ROCE_DEV") ?: "rsoft_x0";
	const char *dev_b = getenv("ROCE_DEV2") ?: "rsoft_x1";

	memset(&self->a, 0, sizeof(self->a));
	memset(&self->b, 0, sizeof(self->b));
	ASSERT_EQ(0, side_open(&self->a, dev_a, 0)) TH_LOG("%s: %m", dev_a);
	ASSERT_EQ(0, side_open(&self->b, dev_b, 1)) TH_LOG("%s: %m", dev_b);
	ASSERT_EQ(0, side_connect(&self->a, &self->b)) TH_LOG("a: %m");
	ASSERT_EQ(0, side_connect(&self->b, &self->a)) TH_LOG("b: %m");
}

FIXTURE_TEARDOWN(cross)
{
	side_close(&self->b);
	side_close(&self->a);
}

TEST_F(cross, srq_post_resumes_sender_of_other_device)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_sge ssge = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct ibv_send_wr swr = {
		.wr_id = 1, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *sbad;
	struct ibv_sge rsge = { (uintptr_t)b->buf, 64, b->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;

	memcpy(a->buf, "across", 7);
	ASSERT_EQ(0, ibv_post_send(a->qp, &swr, &sbad));
	usleep(100 * 1000);
	EXPECT_EQ(0, ibv_poll_cq(a->cq, 1, &wc));	/* waits for a receive */
	ASSERT_EQ(0, ibv_post_srq_recv(b->srq, &rwr, &rbad));
	ASSERT_EQ(1, poll_wait(a->cq, &wc, 10));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_wait(b->cq, &wc, 10));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(64, wc.byte_len);
	EXPECT_STREQ("across", b->buf);
}

TEST_HARNESS_MAIN
