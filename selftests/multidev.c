// SPDX-License-Identifier: GPL-2.0
/*
 * Several rsoft devices (devices=N): each is its own fabric. A QP of
 * rsoft0 aimed at a QP of rsoft1 (its LID and QPN) finds nobody.
 */
#include <errno.h>

#include "loopback.h"
#include "kselftest_harness.h"

TEST(qps_talk_only_within_their_device)
{
	struct ibv_context *second = rsoft_open("rsoft1");
	struct loopback lb0, lb1;
	struct ibv_port_attr port1;
	struct ibv_wc wc;

	if (!second)
		SKIP(return, "needs rsoft.ko devices=2 or more");
	ibv_close_device(second);

	ASSERT_EQ(0, loopback_init(&lb0, 8, 8, 4096));
	ASSERT_EQ(0, loopback_init_dev(&lb1, "rsoft1", 8, 8, 4096));
	ASSERT_EQ(0, ibv_query_port(lb1.ctx, 1, &port1));
	EXPECT_EQ(2, port1.lid);

	/* Same QPN on both devices: each device numbers its own QPs. */
	EXPECT_EQ(lb0.a->qp_num, lb1.a->qp_num);

	/* rsoft0's a, reconnected to rsoft1's b: no answer. */
	ASSERT_EQ(0, set_qp_state(lb0.a, IBV_QPS_RESET));
	ASSERT_EQ(0, rsoft_connect(lb0.a, port1.lid, lb1.b->qp_num));
	ASSERT_EQ(0, post_recv(&lb1, lb1.b, 1, 2048, 64));
	ASSERT_EQ(0, post_send(&lb0, lb0.a, 2, 0, 64));
	ASSERT_EQ(1, poll_wait(lb0.scq, &wc, 30));
	EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status);
	EXPECT_EQ(0, ibv_poll_cq(lb1.rcq, 1, &wc));

	/* Within rsoft1 traffic flows. */
	ASSERT_EQ(0, post_send(&lb1, lb1.a, 3, 0, 64));
	ASSERT_EQ(1, ibv_poll_cq(lb1.rcq, 1, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	loopback_fini(&lb1);
	loopback_fini(&lb0);
}

TEST_HARNESS_MAIN
