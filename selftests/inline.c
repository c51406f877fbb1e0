// SPDX-License-Identifier: GPL-2.0
/*
 * Inline data on RC QPs of rsoft0: the grant of max_inline_data, SEND and
 * RDMA WRITE with IBV_SEND_INLINE whose source buffers are unregistered,
 * named with a garbage lkey and overwritten as soon as the post returns,
 * and the WRs that must be refused.
 */
#include <errno.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define INLINE		256	/* what the QPs ask for */
#define GARBAGE_LKEY	0xdeadbeef

FIXTURE(inl) {
	struct loopback lb;
	struct ibv_qp *a, *b;	/* a -> b, both with INLINE bytes */
	char *target;		/* b's memory, open to a's writes */
	struct ibv_mr *tmr;
};

static struct ibv_qp *inline_qp(struct loopback *lb, struct ibv_cq *scq,
				struct ibv_cq *rcq, uint32_t max_inline)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq, .recv_cq = rcq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = max_inline },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(lb->pd, &init);
}

FIXTURE_SETUP(inl)
{
	struct loopback *lb = &self->lb;
	struct ibv_port_attr port;

	ASSERT_EQ(0, loopback_init(lb, 64, 64, 8192));
	ASSERT_EQ(0, ibv_query_port(lb->ctx, 1, &port));
	self->a = inline_qp(lb, lb->scq, lb->rcq, INLINE);
	self->b = inline_qp(lb, lb->rcq, lb->rcq, INLINE);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, rsoft_connect(self->a, port.lid, self->b->qp_num));
	ASSERT_EQ(0, rsoft_connect_access(self->b, port.lid, self->a->qp_num, 7,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE));
	self->target = calloc(1, 4096);
	ASSERT_NE(NULL, self->target);
	self->tmr = ibv_reg_mr(lb->pd, self->target, 4096,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, self->tmr);
}

FIXTURE_TEARDOWN(inl)
{
	if (self->tmr)
		ibv_dereg_mr(self->tmr);
	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	loopback_fini(&self->lb);
	free(self->target);
}

static struct ibv_wc poll1(struct ibv_cq *cq)
{
	struct ibv_wc wc = { .status = -1 };

	if (ibv_poll_cq(cq, 1, &wc) != 1)
		wc.status = -1;
	return wc;
}

/* Posts @wr on a as an inline WR of @n SGEs at @src; returns the errno. */
static int post_inline(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_sge *sge, int n, struct ibv_send_wr **bad)
{
	wr->sg_list = sge;
	wr->num_sge = n;
	wr->send_flags |= IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	return ibv_post_send(qp, wr, bad);
}

/* A QP gets the inline data it asks for, up to the device's limit. */
TEST_F(inl, grant)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;

	ASSERT_EQ(0, ibv_query_qp(self->a, &attr, IBV_QP_CAP, &init));
	EXPECT_LE(INLINE, init.cap.max_inline_data);
	qp = inline_qp(&self->lb, self->lb.scq, self->lb.rcq, RSOFT_MAX_INLINE_DATA);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, ibv_query_qp(qp, &attr, IBV_QP_CAP, &init));
	EXPECT_EQ(RSOFT_MAX_INLINE_DATA, init.cap.max_inline_data);
	ibv_destroy_qp(qp);
	qp = inline_qp(&self->lb, self->lb.scq, self->lb.rcq,
		       RSOFT_MAX_INLINE_DATA + 1);
	EXPECT_EQ(NULL, qp);
	EXPECT_EQ(EINVAL, errno);
	if (qp)
		ibv_destroy_qp(qp);
}

/*
 * An inline SEND of two pieces of a malloc()ed buffer: the data is taken
 * when posted, so overwriting the buffer at once changes nothing.
 */
TEST_F(inl, send_taken_at_post)
{
	struct loopback *lb = &self->lb;
	char src[INLINE], want[INLINE];
	struct ibv_sge sge[2] = {
		{ (uintptr_t)src, 100, GARBAGE_LKEY },
		{ (uintptr_t)src + 100, INLINE - 100, 0 },
	};
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_SEND }, *bad;
	struct ibv_wc wc;

	for (int i = 0; i < INLINE; i++)
		src[i] = want[i] = i * 7 + 3;
	ASSERT_EQ(0, post_recv(lb, self->b, 2, 0, 4096));
	ASSERT_EQ(0, post_inline(self->a, &wr, sge, 2, &bad));
	memset(src, 0, sizeof(src));
	wc = poll1(lb->scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);
	wc = poll1(lb->rcq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(INLINE, wc.byte_len);
	EXPECT_EQ(0, memcmp(lb->buf, want, INLINE));
}

/* An inline RDMA WRITE lands intact although its source was reused. */
TEST_F(inl, write_taken_at_post)
{
	char *src = malloc(INLINE);
	struct ibv_sge sge = { (uintptr_t)src, INLINE, GARBAGE_LKEY };
	struct ibv_send_wr wr = {
		.wr_id = 3, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { (uintptr_t)self->target + 64, self->tmr->rkey },
	}, *bad;
	struct ibv_wc wc;
	int wrong = 0;

	ASSERT_NE(NULL, src);
	memset(src, 0x5a, INLINE);
	ASSERT_EQ(0, post_inline(self->a, &wr, &sge, 1, &bad));
	memset(src, 0, INLINE);
	free(src);
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(3, wc.wr_id);
	EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);
	for (int i = 0; i < 4096; i++)
		wrong += (unsigned char)self->target[i] !=
			 (i >= 64 && i < 64 + INLINE ? 0x5a : 0);
	EXPECT_EQ(0, wrong);
}

/*
 * Refused, with bad_wr at the WR: more than the QP was granted, READ and
 * atomics (no data to send), an unreadable buffer; the WR before goes out.
 */
TEST_F(inl, refused)
{
	static char src[INLINE + 1];
	struct ibv_sge sge = { (uintptr_t)src, INLINE + 1, 0 };
	struct ibv_sge one = { (uintptr_t)src, 8, 0 };
	struct ibv_sge nowhere = { 4096, 8, 0 };
	struct ibv_send_wr first = {
		.wr_id = 4, .opcode = IBV_WR_RDMA_WRITE, .sg_list = &one,
		.num_sge = 1, .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)self->target, self->tmr->rkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = 5, .opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { (uintptr_t)self->target, self->tmr->rkey },
	}, *bad = NULL;
	struct ibv_wc wc;

	first.next = &wr;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	EXPECT_EQ(EINVAL, ibv_post_send(self->a, &first, &bad));
	EXPECT_EQ(&wr, bad);
	wc = poll1(self->lb.scq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(4, wc.wr_id);

	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = 0;
	EXPECT_EQ(EINVAL, post_inline(self->a, &wr, &one, 1, &bad));
	EXPECT_EQ(&wr, bad);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)self->target;
	wr.wr.atomic.rkey = self->tmr->rkey;
	EXPECT_EQ(EINVAL, post_inline(self->a, &wr, &one, 1, &bad));
	EXPECT_EQ(&wr, bad);

	wr.opcode = IBV_WR_SEND;
	EXPECT_EQ(EFAULT, post_inline(self->a, &wr, &nowhere, 1, &bad));
	EXPECT_EQ(&wr, bad);
	EXPECT_EQ(-1, poll1(self->lb.scq).status);
}

/* A QP asking for no inline data may send none. */
TEST_F(inl, none_granted)
{
	char src[8] = "inline";
	struct ibv_sge sge = { (uintptr_t)src, sizeof(src), 0 };
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad;

	EXPECT_EQ(EINVAL, post_inline(self->lb.a, &wr, &sge, 1, &bad));
	EXPECT_EQ(&wr, bad);
}

TEST_HARNESS_MAIN
