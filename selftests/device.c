// SPDX-License-Identifier: GPL-2.0
/*
 * The rsoft device as stock libibverbs sees it: attributes, port, GID and
 * P_Key tables, protection domains, and the module staying pinned while a
 * process has the device open.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rsoft.h"
#include "kselftest_harness.h"

FIXTURE(dev) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(dev)
{
	self->ctx = rsoft_open(RSOFT_DEV);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s: %m", RSOFT_DEV);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(dev, device_attributes)
{
	struct ibv_device_attr a;
	char sysfs[64];
	FILE *f;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &a));
	EXPECT_STREQ(RSOFT_FW_VER, a.fw_ver);
	EXPECT_EQ(RSOFT_GUID_BASE | 1, be64toh(a.node_guid));
	EXPECT_EQ(a.node_guid, a.sys_image_guid);
	EXPECT_EQ(1, a.phys_port_cnt);
	EXPECT_EQ(RSOFT_MAX_MR_SIZE, a.max_mr_size);
	EXPECT_EQ(sysconf(_SC_PAGESIZE), a.page_size_cap);
	EXPECT_EQ(RSOFT_MAX_QP, a.max_qp);
	EXPECT_EQ(RSOFT_MAX_QP_WR, a.max_qp_wr);
	EXPECT_EQ(RSOFT_MAX_SGE, a.max_sge);
	EXPECT_EQ(RSOFT_MAX_SGE, a.max_sge_rd);
	EXPECT_EQ(RSOFT_MAX_CQ, a.max_cq);
	EXPECT_EQ(RSOFT_MAX_CQE, a.max_cqe);
	EXPECT_EQ(RSOFT_MAX_MR, a.max_mr);
	EXPECT_EQ(RSOFT_MAX_PD, a.max_pd);
	EXPECT_EQ(RSOFT_MAX_RD_ATOM, a.max_qp_rd_atom);
	EXPECT_EQ(RSOFT_MAX_RD_ATOM, a.max_qp_init_rd_atom);
	EXPECT_EQ(RSOFT_MAX_SRQ, a.max_srq);
	EXPECT_EQ(RSOFT_MAX_SRQ_WR, a.max_srq_wr);
	EXPECT_EQ(RSOFT_MAX_SGE, a.max_srq_sge);
	EXPECT_EQ(RSOFT_MAX_AH, a.max_ah);
	EXPECT_EQ(1, a.max_pkeys);

	/* sysfs tells the same story as the verbs. */
	f = fopen("/sys/class/infiniband/" RSOFT_DEV "/fw_ver", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(sysfs, sizeof(sysfs), f));
	fclose(f);
	EXPECT_STREQ(RSOFT_FW_VER "\n", sysfs);
}

TEST_F(dev, device_attributes_ex)
{
	struct ibv_device_attr_ex ex;

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &ex));
	EXPECT_EQ(RSOFT_MAX_CQE, ex.orig_attr.max_cqe);
	EXPECT_EQ(RSOFT_MAX_PD, ex.orig_attr.max_pd);
}

TEST_F(dev, port)
{
	struct ibv_port_attr p;

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &p));
	EXPECT_EQ(IBV_PORT_ACTIVE, p.state);
	EXPECT_EQ(5, p.phys_state);	/* LinkUp */
	EXPECT_EQ(1, p.lid);
	EXPECT_EQ(IBV_MTU_4096, p.active_mtu);
	EXPECT_EQ(IBV_MTU_4096, p.max_mtu);
	EXPECT_EQ(1, p.gid_tbl_len);
	EXPECT_EQ(1, p.pkey_tbl_len);
	EXPECT_EQ(RSOFT_MAX_MSG_SIZE, p.max_msg_sz);
	EXPECT_EQ(IBV_LINK_LAYER_INFINIBAND, p.link_layer);

	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &p));
}

TEST_F(dev, gid_table)
{
	struct ibv_device_attr a;
	union ibv_gid gid;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &a));
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &gid));
	EXPECT_EQ(htobe64(0xfe80000000000000ULL), gid.global.subnet_prefix);
	EXPECT_EQ(a.node_guid, gid.global.interface_id);
	EXPECT_NE(0, ibv_query_gid(self->ctx, 1, 1, &gid));
}

TEST_F(dev, pkey_table)
{
	__be16 pkey;

	ASSERT_EQ(0, ibv_query_pkey(self->ctx, 1, 0, &pkey));
	EXPECT_EQ(0xffff, be16toh(pkey));
	EXPECT_NE(0, ibv_query_pkey(self->ctx, 1, 1, &pkey));
}

TEST_F(dev, pd_alloc_free)
{
	struct ibv_pd *pd = ibv_alloc_pd(self->ctx);

	ASSERT_NE(NULL, pd);
	EXPECT_EQ(self->ctx, pd->context);
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
}

/* max_pd is a real limit: all of them can be had, one more cannot. */
TEST_F(dev, pd_limit)
{
	struct ibv_pd **pds = calloc(RSOFT_MAX_PD, sizeof(*pds));
	struct ibv_pd *extra;
	int i;

	ASSERT_NE(NULL, pds);
	for (i = 0; i < RSOFT_MAX_PD; i++) {
		pds[i] = ibv_alloc_pd(self->ctx);
		ASSERT_NE(NULL, pds[i]) TH_LOG("PD %d of %d: %m", i, RSOFT_MAX_PD);
	}
	errno = 0;
	extra = ibv_alloc_pd(self->ctx);
	EXPECT_EQ(NULL, extra);
	EXPECT_EQ(ENOMEM, errno);
	if (extra)
		ibv_dealloc_pd(extra);
	for (i = 0; i < RSOFT_MAX_PD; i++)
		EXPECT_EQ(0, ibv_dealloc_pd(pds[i]));
	free(pds);

	/* Freed PDs count no more. */
	extra = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, extra);
	EXPECT_EQ(0, ibv_dealloc_pd(extra));
}

/* Two processes (here: two contexts) use the device independently. */
TEST_F(dev, two_contexts)
{
	struct ibv_context *other = rsoft_open(RSOFT_DEV);
	struct ibv_pd *a, *b;

	ASSERT_NE(NULL, other);
	a = ibv_alloc_pd(self->ctx);
	b = ibv_alloc_pd(other);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	EXPECT_EQ(0, ibv_dealloc_pd(b));
	EXPECT_EQ(0, ibv_close_device(other));
	EXPECT_EQ(0, ibv_dealloc_pd(a));
}

TEST_HARNESS_MAIN
