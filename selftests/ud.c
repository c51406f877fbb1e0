// SPDX-License-Identifier: GPL-2.0
/*
 * UD queue pairs and address handles on rsoft0: the 40-byte GRH space and
 * the GRH itself, Q_Keys, the MTU limit, and what is dropped silently.
 */
#include <errno.h>
#include <arpa/inet.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define QKEY		0x11111111
#define GRH_LEN		40
#define UD_MTU		4096

#define INLINE		64	/* what a may send inline */

/* A UD QP in RTS with Q_Key @qkey and @max_inline bytes of inline data. */
static struct ibv_qp *ud_qp(struct loopback *lb, struct ibv_cq *scq,
			    struct ibv_cq *rcq, uint32_t qkey,
			    uint32_t max_inline)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = max_inline },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp *qp = ibv_create_qp(lb->pd, &init);

	if (!qp || ud_ready(qp, qkey))
		return NULL;
	return qp;
}

FIXTURE(ud) {
	struct loopback lb;
	struct ibv_port_attr port;
	union ibv_gid gid;
	struct ibv_ah *ah;	/* to our LID, no GRH */
	struct ibv_ah *gah;	/* to our GID, with a GRH */
};

FIXTURE_SETUP(ud)
{
	struct loopback *lb = &self->lb;
	struct ibv_ah_attr attr = { .port_num = 1 };

	memset(lb, 0, sizeof(*lb));
	lb->ctx = rsoft_open(RSOFT_DEV);
	ASSERT_NE(NULL, lb->ctx);
	ASSERT_EQ(0, ibv_query_port(lb->ctx, 1, &self->port));
	ASSERT_EQ(0, ibv_query_gid(lb->ctx, 1, 0, &self->gid));
	lb->len = 16384;
	lb->buf = calloc(1, lb->len);
	lb->pd = ibv_alloc_pd(lb->ctx);
	ASSERT_NE(NULL, lb->pd);
	lb->mr = ibv_reg_mr(lb->pd, lb->buf, lb->len, IBV_ACCESS_LOCAL_WRITE);
	lb->scq = ibv_create_cq(lb->ctx, 32, NULL, NULL, 0);
	lb->rcq = ibv_create_cq(lb->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, lb->mr);
	ASSERT_NE(NULL, lb->scq);
	ASSERT_NE(NULL, lb->rcq);
	lb->a = ud_qp(lb, lb->scq, lb->rcq, QKEY, INLINE);
	lb->b = ud_qp(lb, lb->rcq, lb->rcq, QKEY, 0);
	ASSERT_NE(NULL, lb->a);
	ASSERT_NE(NULL, lb->b);
	attr.dlid = self->port.lid;
	self->ah = ibv_create_ah(lb->pd, &attr);
	ASSERT_NE(NULL, self->ah);
	attr.is_global = 1;
	attr.grh.dgid = self->gid;
	attr.grh.hop_limit = 64;
	attr.grh.traffic_class = 3;
	attr.grh.flow_label = 0x12345;
	self->gah = ibv_create_ah(lb->pd, &attr);
	ASSERT_NE(NULL, self->gah);
}

FIXTURE_TEARDOWN(ud)
{
	if (self->ah)
		ibv_destroy_ah(self->ah);
	if (self->gah)
		ibv_destroy_ah(self->gah);
	loopback_fini(&self->lb);
}

/* Sends @len bytes at @off from a to QP @qpn through @ah with @qkey. */
static int ud_send(struct loopback *lb, struct ibv_ah *ah, uint32_t qpn,
		   uint32_t qkey, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)lb->buf + off, .length = len,
		.lkey = lb->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = qpn, .remote_qkey = qkey },
	}, *bad;

	return ibv_post_send(lb->a, &wr, &bad);
}

/* Expects one successful send completion with @wr_id on a's send CQ. */
static int sent_ok(struct loopback *lb, uint64_t wr_id)
{
	struct ibv_wc wc;

	return ibv_poll_cq(lb->scq, 1, &wc) == 1 && wc.wr_id == wr_id &&
	       wc.status == IBV_WC_SUCCESS;
}

static void fill(char *p, int len, int seed)
{
	for (int i = 0; i < len; i++)
		p[i] = seed + i;
}

/* Without a GRH the payload lands after the untouched 40-byte space. */
TEST_F(ud, send_without_grh)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	fill(lb->buf, 64, 1);
	memset(lb->buf + 8192, 0xee, GRH_LEN);
	ASSERT_EQ(0, post_recv(lb, lb->b, 7, 8192, GRH_LEN + 64));
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY, 8, 0, 64));
	EXPECT_TRUE(sent_ok(lb, 8));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(GRH_LEN + 64, wc.byte_len);
	EXPECT_EQ(lb->a->qp_num, wc.src_qp);
	EXPECT_EQ(self->port.lid, wc.slid);
	EXPECT_EQ(0, wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(0, memcmp(lb->buf, lb->buf + 8192 + GRH_LEN, 64));
	EXPECT_EQ((char)0xee, lb->buf[8192]);
}

/* With a GRH: IBV_WC_GRH and a header naming both GIDs and the route. */
TEST_F(ud, send_with_grh)
{
	struct loopback *lb = &self->lb;
	unsigned char *grh = (unsigned char *)lb->buf + 8192;
	uint32_t vtf;
	uint16_t paylen;
	struct ibv_wc wc;

	fill(lb->buf, 100, 5);
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + 100));
	ASSERT_EQ(0, ud_send(lb, self->gah, lb->b->qp_num, QKEY, 2, 0, 100));
	EXPECT_TRUE(sent_ok(lb, 2));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_GRH, wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(GRH_LEN + 100, wc.byte_len);
	memcpy(&vtf, grh, 4);
	memcpy(&paylen, grh + 4, 2);
	EXPECT_EQ((6u << 28) | (3u << 20) | 0x12345, ntohl(vtf));
	EXPECT_EQ(100, ntohs(paylen));
	EXPECT_EQ(0x1b, grh[6]);
	EXPECT_EQ(64, grh[7]);
	EXPECT_EQ(0, memcmp(grh + 8, self->gid.raw, 16));
	EXPECT_EQ(0, memcmp(grh + 24, self->gid.raw, 16));
	EXPECT_EQ(0, memcmp(lb->buf, grh + GRH_LEN, 100));
}

/*
 * An inline datagram from an unregistered buffer (garbage lkey),
 * overwritten once posted, lands after the GRH intact.
 */
TEST_F(ud, inline_send_with_grh)
{
	struct loopback *lb = &self->lb;
	char src[INLINE], want[INLINE];
	struct ibv_sge sge = { (uintptr_t)src, INLINE, 0xdeadbeef };
	struct ibv_send_wr wr = {
		.wr_id = 4, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		.wr.ud = { .ah = self->gah, .remote_qpn = lb->b->qp_num,
			   .remote_qkey = QKEY },
	}, *bad;
	struct ibv_wc wc;

	fill(src, INLINE, 9);
	memcpy(want, src, INLINE);
	ASSERT_EQ(0, post_recv(lb, lb->b, 3, 8192, GRH_LEN + INLINE));
	ASSERT_EQ(0, ibv_post_send(lb->a, &wr, &bad));
	memset(src, 0, INLINE);
	EXPECT_TRUE(sent_ok(lb, 4));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_GRH, wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(GRH_LEN + INLINE, wc.byte_len);
	EXPECT_EQ(0, memcmp(want, lb->buf + 8192 + GRH_LEN, INLINE));
}

/* A wrong Q_Key is dropped without a word: the receive stays posted. */
TEST_F(ud, qkey_mismatch_is_dropped)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + 8));
	fill(lb->buf, 8, 1);
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY + 1, 2, 0, 8));
	EXPECT_TRUE(sent_ok(lb, 2));
	EXPECT_EQ(0, ibv_poll_cq(lb->rcq, 1, &wc));
	fill(lb->buf + 8, 8, 9);
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY, 3, 8, 8));
	EXPECT_TRUE(sent_ok(lb, 3));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, memcmp(lb->buf + 8, lb->buf + 8192 + GRH_LEN, 8));
}

/* A remote Q_Key with the high bit set means the sender QP's own Q_Key. */
TEST_F(ud, qkey_from_sending_qp)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + 8));
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, 0x80000000, 2, 0, 8));
	EXPECT_TRUE(sent_ok(lb, 2));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
}

/* Nothing waits for a receive: without one the message is lost. */
TEST_F(ud, no_receive_is_dropped)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY, 2, 0, 8));
	EXPECT_TRUE(sent_ok(lb, 2));
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + 8));
	EXPECT_EQ(0, ibv_poll_cq(lb->rcq, 1, &wc));
}

/* An unknown QPN or a foreign LID reaches nobody; the send still succeeds. */
TEST_F(ud, unknown_destination_is_dropped)
{
	struct loopback *lb = &self->lb;
	struct ibv_ah_attr attr = { .dlid = self->port.lid + 1, .port_num = 1 };
	struct ibv_ah *far = ibv_create_ah(lb->pd, &attr);
	struct ibv_wc wc;

	ASSERT_NE(NULL, far);
	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + 8));
	ASSERT_EQ(0, ud_send(lb, far, lb->b->qp_num, QKEY, 2, 0, 8));
	EXPECT_TRUE(sent_ok(lb, 2));
	ASSERT_EQ(0, ud_send(lb, self->ah, 0xfffff0, QKEY, 3, 0, 8));
	EXPECT_TRUE(sent_ok(lb, 3));
	EXPECT_EQ(0, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(0, ibv_destroy_ah(far));
}

/* A message larger than the MTU fails at the sender. */
TEST_F(ud, larger_than_mtu)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + UD_MTU + 1));
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY, 2, 0, UD_MTU + 1));
	ASSERT_EQ(1, ibv_poll_cq(lb->scq, 1, &wc));
	EXPECT_EQ(2, wc.wr_id);
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
	EXPECT_EQ(0, ibv_poll_cq(lb->rcq, 1, &wc));
}

/*
 * The GRH space counts: 40 + n bytes are needed; the sender never knows.
 * Any host may send a UD QP a datagram too long for its receive: that
 * receive fails, and the QP takes the next datagram.
 */
TEST_F(ud, receive_too_small)
{
	struct loopback *lb = &self->lb;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(lb, lb->b, 1, 8192, GRH_LEN + 63));
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY, 2, 0, 64));
	EXPECT_TRUE(sent_ok(lb, 2));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(lb->a));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(lb->b));
	ASSERT_EQ(0, post_recv(lb, lb->b, 3, 8192, GRH_LEN + 64));
	ASSERT_EQ(0, ud_send(lb, self->ah, lb->b->qp_num, QKEY, 4, 0, 64));
	EXPECT_TRUE(sent_ok(lb, 4));
	ASSERT_EQ(1, ibv_poll_cq(lb->rcq, 1, &wc));
	EXPECT_EQ(3, wc.wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(GRH_LEN + 64, wc.byte_len);
}

/* UD has no RDMA: the WR is refused at post time. */
TEST_F(ud, rdma_write_is_refused)
{
	struct loopback *lb = &self->lb;
	struct ibv_sge sge = { (uintptr_t)lb->buf, 8, lb->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { (uintptr_t)lb->buf + 8192, lb->mr->rkey },
	}, *bad = NULL;

	EXPECT_EQ(EINVAL, ibv_post_send(lb->a, &wr, &bad));
	EXPECT_EQ(&wr, bad);
}

/* Q_Key and state read back through query_qp. */
TEST_F(ud, query_reports_qkey)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	ASSERT_EQ(0, ibv_query_qp(self->lb.b, &attr, IBV_QP_QKEY | IBV_QP_STATE,
				  &init));
	EXPECT_EQ(QKEY, attr.qkey);
	EXPECT_EQ(IBV_QPS_RTS, attr.qp_state);
	EXPECT_EQ(IBV_QPT_UD, init.qp_type);
}

/* Address handles: a GID index past the table is refused. */
TEST_F(ud, ah_bad_gid_index)
{
	struct ibv_ah_attr attr = {
		.dlid = self->port.lid, .port_num = 1, .is_global = 1,
		.grh = { .dgid = self->gid, .sgid_index = 1 },
	};

	EXPECT_EQ(NULL, ibv_create_ah(self->lb.pd, &attr));
}

TEST_HARNESS_MAIN
