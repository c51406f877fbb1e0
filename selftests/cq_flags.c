// SPDX-License-Identifier: GPL-2.0
/*
 * CQ creation flags. The stock ABI-1 provider has no ibv_create_cq_ex, so
 * these tests issue UVERBS_METHOD_CQ_CREATE themselves and wrap the new CQ
 * in a struct ibv_cq for the provider's ibv_cmd_* verbs, which need only
 * its context and handle.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define RDMA_DRIVER_QIB 16	/* enum rdma_driver_id; see rsoft.rst */

/* Creates a CQ of @cqe entries with @flags; returns 0 or an errno. */
static int raw_create_cq(struct ibv_context *ctx, uint32_t cqe, uint64_t flags,
			 struct ibv_cq *cq)
{
	uint32_t resp_cqe = 0;
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attrs[6];
	} cmd = {
		.hdr = {
			.length = sizeof(cmd),
			.object_id = UVERBS_OBJECT_CQ,
			.method_id = UVERBS_METHOD_CQ_CREATE,
			.num_attrs = 6,
			.driver_id = RDMA_DRIVER_QIB,
		},
		.attrs = {
			{ .attr_id = UVERBS_ATTR_CREATE_CQ_HANDLE,
			  .flags = UVERBS_ATTR_F_MANDATORY },
			{ .attr_id = UVERBS_ATTR_CREATE_CQ_CQE, .len = 4,
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = cqe },
			{ .attr_id = UVERBS_ATTR_CREATE_CQ_USER_HANDLE, .len = 8,
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = (uintptr_t)cq },
			{ .attr_id = UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, .len = 4,
			  .flags = UVERBS_ATTR_F_MANDATORY, .data = 0 },
			{ .attr_id = UVERBS_ATTR_CREATE_CQ_FLAGS, .len = 8,
			  .data = flags },
			{ .attr_id = UVERBS_ATTR_CREATE_CQ_RESP_CQE, .len = 4,
			  .flags = UVERBS_ATTR_F_MANDATORY,
			  .data = (uintptr_t)&resp_cqe },
		},
	};

	if (ioctl(ctx->cmd_fd, RDMA_VERBS_IOCTL, &cmd))
		return errno;
	memset(cq, 0, sizeof(*cq));
	cq->context = ctx;
	cq->handle = cmd.attrs[0].data;
	cq->cqe = resp_cqe;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
	return 0;
}

FIXTURE(flags) {
	struct loopback lb;
};

FIXTURE_SETUP(flags)
{
	ASSERT_EQ(0, loopback_init(&self->lb, 16, 16, 4096));
}

FIXTURE_TEARDOWN(flags)
{
	loopback_fini(&self->lb);
}

TEST_F(flags, timestamp_not_supported)
{
	struct ibv_cq cq;

	EXPECT_EQ(EOPNOTSUPP, raw_create_cq(self->lb.ctx, 8,
			IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION, &cq));
}

/*
 * IGNORE_OVERRUN: "This CQ will not pass to error state if overrun, CQE
 * always will be written to next entry": the newest 4 of 7 remain, no
 * CQ_ERR, the QP stays in RTS.
 */
TEST_F(flags, ignore_overrun_overwrites)
{
	struct loopback *lb = &self->lb;
	struct ibv_qp_init_attr init = {
		.recv_cq = lb->rcq, .cap = { 8, 8, 1, 1 }, .qp_type = IBV_QPT_RC,
	};
	struct pollfd pfd = { .fd = lb->ctx->async_fd, .events = POLLIN };
	struct ibv_wc wc[8];
	struct ibv_cq cq;
	struct ibv_qp *qp;

	ASSERT_EQ(0, raw_create_cq(lb->ctx, 4, IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN, &cq));
	EXPECT_EQ(4, cq.cqe);
	init.send_cq = &cq;
	qp = ibv_create_qp(lb->pd, &init);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, set_qp_state(lb->b, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(qp, 1, lb->b->qp_num));
	ASSERT_EQ(0, rsoft_connect(lb->b, 1, qp->qp_num));
	for (int i = 0; i < 7; i++) {
		ASSERT_EQ(0, post_recv(lb, lb->b, 100 + i, 2048, 64));
		ASSERT_EQ(0, post_send(lb, qp, i, 0, 64));
	}
	ASSERT_EQ(4, ibv_poll_cq(&cq, 8, wc));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(3 + i, wc[i].wr_id);
	EXPECT_EQ(0, ibv_poll_cq(&cq, 8, wc));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(qp));
	EXPECT_EQ(0, poll(&pfd, 1, 200));	/* no async event */
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_HARNESS_MAIN
