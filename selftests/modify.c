// SPDX-License-Identifier: GPL-2.0
/*
 * modify_qp against the device's limits (rust/transport/rules.rs), one test
 * per attribute, each run on an RC, a UC and a UD QP: the first value out of
 * range is refused with EINVAL and leaves the QP as it was (ibv_query_qp),
 * the last value in range is taken. A QP type that may not set the
 * attribute in that transition is refused both (the core's table).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "loopback.h"
#include "kselftest_harness.h"

#define RC (1 << IBV_QPT_RC)
#define UC (1 << IBV_QPT_UC)
#define UD (1 << IBV_QPT_UD)
#define UD_QKEY 0x11111111
#define RIGHTS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
/* Every attribute ibv_query_qp reports. */
#define ALL_ATTRS ((IBV_QP_DEST_QPN << 1) - 1)

struct subject {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint16_t lid;
};

FIXTURE(modify) {
	struct subject t;
};

FIXTURE_VARIANT(modify) {
	enum ibv_qp_type type;
};

FIXTURE_VARIANT_ADD(modify, rc) { .type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(modify, uc) { .type = IBV_QPT_UC };
FIXTURE_VARIANT_ADD(modify, ud) { .type = IBV_QPT_UD };

FIXTURE_SETUP(modify)
{
	struct ibv_qp_init_attr init = { .cap = { 4, 4, 1, 1 },
					 .qp_type = variant->type };
	struct ibv_port_attr port;

	self->t.ctx = rsoft_open(RSOFT_DEV);
	ASSERT_NE(NULL, self->t.ctx) TH_LOG("no %s: %m", RSOFT_DEV);
	ASSERT_EQ(0, ibv_query_port(self->t.ctx, 1, &port));
	self->t.lid = port.lid;
	self->t.pd = ibv_alloc_pd(self->t.ctx);
	self->t.cq = ibv_create_cq(self->t.ctx, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, self->t.pd);
	ASSERT_NE(NULL, self->t.cq);
	init.send_cq = init.recv_cq = self->t.cq;
	self->t.qp = ibv_create_qp(self->t.pd, &init);
	ASSERT_NE(NULL, self->t.qp);
}

FIXTURE_TEARDOWN(modify)
{
	if (self->t.qp)
		ibv_destroy_qp(self->t.qp);
	if (self->t.cq)
		ibv_destroy_cq(self->t.cq);
	if (self->t.pd)
		ibv_dealloc_pd(self->t.pd);
	if (self->t.ctx)
		ibv_close_device(self->t.ctx);
}

/*
 * What a QP of @type needs to move into @to from the state before it (as
 * rc_connect and ud_ready set it, towards itself): fills @a, returns the
 * mask.
 */
static int base(struct subject *t, enum ibv_qp_type type,
		enum ibv_qp_state to, struct ibv_qp_attr *a)
{
	int rc = type == IBV_QPT_RC, ud = type == IBV_QPT_UD;

	memset(a, 0, sizeof(*a));
	a->qp_state = to;
	switch (to) {
	case IBV_QPS_INIT:
		a->port_num = 1;
		a->qkey = UD_QKEY;
		return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       (ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	case IBV_QPS_RTR:
		if (ud)
			return IBV_QP_STATE;
		a->path_mtu = IBV_MTU_1024;
		a->dest_qp_num = t->qp->qp_num;
		a->ah_attr.dlid = t->lid;
		a->ah_attr.port_num = 1;
		a->max_dest_rd_atomic = 1;
		a->min_rnr_timer = 12;
		return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (rc ?
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0);
	default:
		a->timeout = 14;
		a->retry_cnt = 7;
		a->rnr_retry = 7;
		a->max_rd_atomic = 1;
		return IBV_QP_STATE | IBV_QP_SQ_PSN | (rc ? IBV_QP_TIMEOUT |
		       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC : 0);
	}
}

/* Moves the fixture's QP (in RESET) up to @to. */
static int walk(struct subject *t, enum ibv_qp_state to)
{
	struct ibv_qp_attr a;

	for (enum ibv_qp_state s = IBV_QPS_INIT; s <= to; s++) {
		int mask = base(t, t->qp->qp_type, s, &a);

		if (ibv_modify_qp(t->qp, &a, mask))
			return -1;
	}
	return 0;
}

static int query(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr init;

	memset(a, 0, sizeof(*a));
	return ibv_query_qp(qp, a, ALL_ATTRS, &init);
}

/* Whether two queries report the same QP (not all bytes are fields). */
static int same(const struct ibv_qp_attr *a, const struct ibv_qp_attr *b)
{
#define EQ(f) (a->f == b->f)
	return EQ(qp_state) && EQ(cur_qp_state) && EQ(path_mtu) &&
	       EQ(path_mig_state) && EQ(qkey) && EQ(rq_psn) && EQ(sq_psn) &&
	       EQ(dest_qp_num) && EQ(qp_access_flags) && EQ(pkey_index) &&
	       EQ(port_num) && EQ(ah_attr.dlid) && EQ(ah_attr.is_global) &&
	       EQ(ah_attr.grh.sgid_index) && EQ(max_rd_atomic) &&
	       EQ(max_dest_rd_atomic) && EQ(min_rnr_timer) && EQ(timeout) &&
	       EQ(retry_cnt) && EQ(rnr_retry) && EQ(alt_port_num) &&
	       EQ(alt_timeout);
#undef EQ
}

/*
 * Each test runs in a child of its own: loading the providers once, here,
 * spares every child doing it again (slow in the guest).
 */
static void __attribute__((constructor)) load_providers(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (list)
		ibv_free_device_list(list);
}

static void put(void *field, size_t size, uint64_t v)
{
	switch (size) {
	case 1:
		*(uint8_t *)field = v;
		break;
	case 2:
		*(uint16_t *)field = v;
		break;
	default:
		*(uint32_t *)field = v;
		break;
	}
}

static uint64_t get(const void *field, size_t size)
{
	switch (size) {
	case 1:
		return *(const uint8_t *)field;
	case 2:
		return *(const uint16_t *)field;
	default:
		return *(const uint32_t *)field;
	}
}

/* One attribute's test. */
struct attr_case {
	enum ibv_qp_state to;	/* set in the move into this state */
	int bit;		/* its mask bit */
	size_t off, size;	/* its field in struct ibv_qp_attr */
	unsigned int types;	/* the QP types that may set it then */
	uint64_t bad;		/* refused with EINVAL ... */
	uint64_t good;		/* ... this taken, and read back as read */
	uint64_t read;
};

#define FIELD_SIZE(f) sizeof(((struct ibv_qp_attr *)0)->f)

static void check(struct __test_metadata *_metadata,
		  struct subject *t, const struct attr_case *c)
{
	enum ibv_qp_type type = t->qp->qp_type;
	int may = !!(c->types & (1 << type));
	struct ibv_qp_attr before, after, a;
	int mask;

	ASSERT_EQ(0, walk(t, c->to - 1));
	ASSERT_EQ(0, query(t->qp, &before));
	mask = base(t, type, c->to, &a) | c->bit;
	put((char *)&a + c->off, c->size, c->bad);
	EXPECT_EQ(EINVAL, ibv_modify_qp(t->qp, &a, mask));
	ASSERT_EQ(0, query(t->qp, &after));
	EXPECT_EQ(c->to - 1, after.qp_state);
	EXPECT_TRUE(same(&before, &after))
		TH_LOG("a refused modify changed the QP's attributes");

	put((char *)&a + c->off, c->size, c->good);
	EXPECT_EQ(may ? 0 : EINVAL, ibv_modify_qp(t->qp, &a, mask));
	if (!may)
		return;
	ASSERT_EQ(0, query(t->qp, &after));
	EXPECT_EQ(c->to, after.qp_state);
	EXPECT_EQ(c->read, get((char *)&after + c->off, c->size));
}

enum attr_name {
	PKEY_INDEX,
	PORT_NUM,
	ACCESS_FLAGS,
	PATH_MTU,
	PATH_MTU_ZERO,
	DEST_QPN,
	MAX_DEST_RD_ATOMIC,
	MIN_RNR_TIMER,
	TIMEOUT,
	RETRY_CNT,
	RNR_RETRY,
	MAX_RD_ATOMIC,
	PATH_MIG_STATE,
	CUR_STATE,
};

/* The attributes, by test name. */
static const struct attr_case cases[] = {
	/* A one-entry P_Key table (the bug of issue 18: UC took index 1). */
	[PKEY_INDEX] = {
		.to = IBV_QPS_INIT, .bit = IBV_QP_PKEY_INDEX,
		.off = offsetof(struct ibv_qp_attr, pkey_index),
		.size = FIELD_SIZE(pkey_index),
		.types = RC | UC | UD,
		.bad = 1,
		.good = 0, .read = 0,
	},
	/* One port (uverbs itself refuses port 2). */
	[PORT_NUM] = {
		.to = IBV_QPS_INIT, .bit = IBV_QP_PORT,
		.off = offsetof(struct ibv_qp_attr, port_num),
		.size = FIELD_SIZE(port_num),
		.types = RC | UC | UD,
		.bad = 2,
		.good = 1, .read = 1,
	},
	/* Only the flags of enum ib_access_flags a QP may carry. */
	[ACCESS_FLAGS] = {
		.to = IBV_QPS_INIT, .bit = IBV_QP_ACCESS_FLAGS,
		.off = offsetof(struct ibv_qp_attr, qp_access_flags),
		.size = FIELD_SIZE(qp_access_flags),
		.types = RC | UC,
		.bad = IBV_ACCESS_ZERO_BASED,
		.good = RIGHTS, .read = RIGHTS,
	},
	/* A valid enum ib_mtu, at most the port's 4096. */
	[PATH_MTU] = {
		.to = IBV_QPS_RTR, .bit = IBV_QP_PATH_MTU,
		.off = offsetof(struct ibv_qp_attr, path_mtu),
		.size = FIELD_SIZE(path_mtu),
		.types = RC | UC,
		.bad = IBV_MTU_4096 + 1,
		.good = IBV_MTU_4096, .read = IBV_MTU_4096,
	},
	[PATH_MTU_ZERO] = {
		.to = IBV_QPS_RTR, .bit = IBV_QP_PATH_MTU,
		.off = offsetof(struct ibv_qp_attr, path_mtu),
		.size = FIELD_SIZE(path_mtu),
		.types = RC | UC,
		.bad = 0,
		.good = IBV_MTU_256, .read = IBV_MTU_256,
	},
	/* QP numbers are 24 bits. */
	[DEST_QPN] = {
		.to = IBV_QPS_RTR, .bit = IBV_QP_DEST_QPN,
		.off = offsetof(struct ibv_qp_attr, dest_qp_num),
		.size = FIELD_SIZE(dest_qp_num),
		.types = RC | UC,
		.bad = 1 << 24,
		.good = 0xffffff, .read = 0xffffff,
	},
	[MAX_DEST_RD_ATOMIC] = {
		.to = IBV_QPS_RTR, .bit = IBV_QP_MAX_DEST_RD_ATOMIC,
		.off = offsetof(struct ibv_qp_attr, max_dest_rd_atomic),
		.size = FIELD_SIZE(max_dest_rd_atomic),
		.types = RC,
		.bad = RSOFT_MAX_RD_ATOM + 1,
		.good = RSOFT_MAX_RD_ATOM, .read = RSOFT_MAX_RD_ATOM,
	},
	/* Timers are 5-bit codes, retry counts 3 bits. */
	[MIN_RNR_TIMER] = {
		.to = IBV_QPS_RTR, .bit = IBV_QP_MIN_RNR_TIMER,
		.off = offsetof(struct ibv_qp_attr, min_rnr_timer),
		.size = FIELD_SIZE(min_rnr_timer),
		.types = RC,
		.bad = 32,
		.good = 31, .read = 31,
	},
	[TIMEOUT] = {
		.to = IBV_QPS_RTS, .bit = IBV_QP_TIMEOUT,
		.off = offsetof(struct ibv_qp_attr, timeout),
		.size = FIELD_SIZE(timeout),
		.types = RC,
		.bad = 32,
		.good = 31, .read = 31,
	},
	[RETRY_CNT] = {
		.to = IBV_QPS_RTS, .bit = IBV_QP_RETRY_CNT,
		.off = offsetof(struct ibv_qp_attr, retry_cnt),
		.size = FIELD_SIZE(retry_cnt),
		.types = RC,
		.bad = 8,
		.good = 7, .read = 7,
	},
	[RNR_RETRY] = {
		.to = IBV_QPS_RTS, .bit = IBV_QP_RNR_RETRY,
		.off = offsetof(struct ibv_qp_attr, rnr_retry),
		.size = FIELD_SIZE(rnr_retry),
		.types = RC,
		.bad = 8,
		.good = 7, .read = 7,
	},
	[MAX_RD_ATOMIC] = {
		.to = IBV_QPS_RTS, .bit = IBV_QP_MAX_QP_RD_ATOMIC,
		.off = offsetof(struct ibv_qp_attr, max_rd_atomic),
		.size = FIELD_SIZE(max_rd_atomic),
		.types = RC,
		.bad = RSOFT_MAX_RD_ATOM + 1,
		.good = RSOFT_MAX_RD_ATOM, .read = RSOFT_MAX_RD_ATOM,
	},
	/* No alternate path, so no migration state but MIGRATED. */
	[PATH_MIG_STATE] = {
		.to = IBV_QPS_RTS, .bit = IBV_QP_PATH_MIG_STATE,
		.off = offsetof(struct ibv_qp_attr, path_mig_state),
		.size = FIELD_SIZE(path_mig_state),
		.types = RC | UC,
		.bad = IBV_MIG_ARMED,
		.good = IBV_MIG_MIGRATED, .read = IBV_MIG_MIGRATED,
	},
	/* The QP is in RTR, not in RTS as the consumer claims. */
	[CUR_STATE] = {
		.to = IBV_QPS_RTS, .bit = IBV_QP_CUR_STATE,
		.off = offsetof(struct ibv_qp_attr, cur_qp_state),
		.size = FIELD_SIZE(cur_qp_state),
		.types = RC | UC | UD,
		.bad = IBV_QPS_RTS,
		.good = IBV_QPS_RTR, .read = IBV_QPS_RTS,
	},
};

TEST_F(modify, pkey_index)
{
	check(_metadata, &self->t, &cases[PKEY_INDEX]);
}

TEST_F(modify, port_num)
{
	check(_metadata, &self->t, &cases[PORT_NUM]);
}

TEST_F(modify, access_flags)
{
	check(_metadata, &self->t, &cases[ACCESS_FLAGS]);
}


TEST_F(modify, path_mtu)
{
	check(_metadata, &self->t, &cases[PATH_MTU]);
}

TEST_F(modify, path_mtu_zero)
{
	check(_metadata, &self->t, &cases[PATH_MTU_ZERO]);
}

TEST_F(modify, dest_qpn)
{
	check(_metadata, &self->t, &cases[DEST_QPN]);
}

TEST_F(modify, max_dest_rd_atomic)
{
	check(_metadata, &self->t, &cases[MAX_DEST_RD_ATOMIC]);
}

TEST_F(modify, min_rnr_timer)
{
	check(_metadata, &self->t, &cases[MIN_RNR_TIMER]);
}

TEST_F(modify, timeout)
{
	check(_metadata, &self->t, &cases[TIMEOUT]);
}

TEST_F(modify, retry_cnt)
{
	check(_metadata, &self->t, &cases[RETRY_CNT]);
}

TEST_F(modify, rnr_retry)
{
	check(_metadata, &self->t, &cases[RNR_RETRY]);
}

TEST_F(modify, max_rd_atomic)
{
	check(_metadata, &self->t, &cases[MAX_RD_ATOMIC]);
}

TEST_F(modify, path_mig_state)
{
	check(_metadata, &self->t, &cases[PATH_MIG_STATE]);
}

TEST_F(modify, cur_state)
{
	check(_metadata, &self->t, &cases[CUR_STATE]);
}

/*
 * Any Q_Key, on UD only (uverbs keeps the controlled ones, bit 31, from
 * processes without CAP_NET_RAW).
 */
TEST_F(modify, qkey)
{
	struct subject *t = &self->t;
	enum ibv_qp_type type = t->qp->qp_type;
	struct ibv_qp_attr before, after, a;
	int mask;

	ASSERT_EQ(0, query(t->qp, &before));
	mask = base(t, type, IBV_QPS_INIT, &a) | IBV_QP_QKEY;
	a.qkey = 0x7fffffff;
	if (type != IBV_QPT_UD) {
		EXPECT_EQ(EINVAL, ibv_modify_qp(t->qp, &a, mask));
		ASSERT_EQ(0, query(t->qp, &after));
		EXPECT_TRUE(same(&before, &after));
		return;
	}
	ASSERT_EQ(0, ibv_modify_qp(t->qp, &a, mask));
	ASSERT_EQ(0, query(t->qp, &after));
	EXPECT_EQ(0x7fffffff, after.qkey);
}

/*
 * PSNs are 24 bits: the core masks larger ones (with a warning) before the
 * driver sees them, as rxe's users get too.
 */
TEST_F(modify, psn)
{
	struct subject *t = &self->t;
	enum ibv_qp_type type = t->qp->qp_type;
	struct ibv_qp_attr a;
	int mask;

	ASSERT_EQ(0, walk(t, IBV_QPS_INIT));
	if (type != IBV_QPT_UD) {
		mask = base(t, type, IBV_QPS_RTR, &a);
		a.rq_psn = (1 << 24) | 3;
		ASSERT_EQ(0, ibv_modify_qp(t->qp, &a, mask));
		ASSERT_EQ(0, query(t->qp, &a));
		EXPECT_EQ(3, a.rq_psn);
	} else {
		ASSERT_EQ(0, walk(t, IBV_QPS_RTR));
	}
	mask = base(t, type, IBV_QPS_RTS, &a);
	a.sq_psn = (1 << 24) | 5;
	ASSERT_EQ(0, ibv_modify_qp(t->qp, &a, mask));
	ASSERT_EQ(0, query(t->qp, &a));
	EXPECT_EQ(5, a.sq_psn);
}

/*
 * The primary path's address: the one port, the one GID of an InfiniBand
 * port. UD QPs have none (each send names its own).
 */
TEST_F(modify, av)
{
	struct subject *t = &self->t;
	enum ibv_qp_type type = t->qp->qp_type;
	struct ibv_qp_attr before, after, a;
	int mask;

	ASSERT_EQ(0, walk(t, IBV_QPS_INIT));
	ASSERT_EQ(0, query(t->qp, &before));
	mask = base(t, type, IBV_QPS_RTR, &a) | IBV_QP_AV;
	a.ah_attr.port_num = 2;
	EXPECT_EQ(EINVAL, ibv_modify_qp(t->qp, &a, mask));
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(t->qp, &a, mask));
	ASSERT_EQ(0, query(t->qp, &after));
	EXPECT_EQ(IBV_QPS_INIT, after.qp_state);
	EXPECT_TRUE(same(&before, &after));

	a.ah_attr.grh.sgid_index = 0;
	EXPECT_EQ(type == IBV_QPT_UD ? EINVAL : 0,
		  ibv_modify_qp(t->qp, &a, mask));
	if (type == IBV_QPT_UD)
		return;
	ASSERT_EQ(0, query(t->qp, &after));
	EXPECT_EQ(IBV_QPS_RTR, after.qp_state);
	EXPECT_EQ(1, after.ah_attr.is_global);
	EXPECT_EQ(t->lid, after.ah_attr.dlid);
}

/* No automatic path migration: an alternate path is refused. */
TEST_F(modify, alt_path)
{
	struct subject *t = &self->t;
	enum ibv_qp_type type = t->qp->qp_type;
	struct ibv_qp_attr before, after, a;
	int mask;

	ASSERT_EQ(0, walk(t, IBV_QPS_INIT));
	ASSERT_EQ(0, query(t->qp, &before));
	mask = base(t, type, IBV_QPS_RTR, &a) | IBV_QP_ALT_PATH;
	a.alt_ah_attr.dlid = t->lid;
	a.alt_ah_attr.port_num = 1;
	a.alt_port_num = 1;
	a.alt_timeout = 14;
	EXPECT_EQ(EINVAL, ibv_modify_qp(t->qp, &a, mask));
	ASSERT_EQ(0, query(t->qp, &after));
	EXPECT_EQ(IBV_QPS_INIT, after.qp_state);
	EXPECT_TRUE(same(&before, &after));
	/* The same move without it goes. */
	EXPECT_EQ(0, ibv_modify_qp(t->qp, &a, mask & ~IBV_QP_ALT_PATH));
}

TEST_HARNESS_MAIN
