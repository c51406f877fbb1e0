// SPDX-License-Identifier: GPL-2.0
/*
 * A lane's objects: memory with guard bytes and its shadow, the MRs over
 * it, the CQs and the QP pair, connected on the device's own LID.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "../loopback.h"

#define MEM_BYTES	(GUARD + NSLOT * SLOT + GUARD + 8)

static int mem_init(struct mem *m, struct rng *r)
{
	m->raw = aligned_alloc(4096, MEM_BYTES + 4096 - MEM_BYTES % 4096);
	m->shadow = malloc(MEM_BYTES);
	if (!m->raw || !m->shadow)
		return -1;
	for (size_t i = 0; i < MEM_BYTES; i++)
		m->raw[i] = (char)rnd(r);
	memcpy(m->shadow, m->raw, MEM_BYTES);
	/* Half the regions start 4 bytes past a word. */
	m->base = m->raw + GUARD + (chance(r, 50) ? 4 : 0);
	m->len = NSLOT * SLOT;
	m->next_slot = 0;
	return 0;
}

/* Compares memory with the model's shadow; guards included. */
int mem_check(struct lane *l, struct mem *m, const char *side)
{
	for (size_t i = 0; i < MEM_BYTES; i++) {
		if (m->raw[i] != m->shadow[i]) {
			violation("lane %d: %s memory differs at base%+ld: is %02x, model says %02x",
				  l->id, side, (long)(m->raw + i - m->base),
				  m->raw[i] & 0xff, m->shadow[i] & 0xff);
			return -1;
		}
	}
	return 0;
}

static struct ibv_qp *new_qp(struct lane *l, struct ibv_cq *cq,
			     struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .srq = srq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE },
		.qp_type = l->type,
	};

	return ibv_create_qp(l->pd, &init);
}

/*
 * Moves the QPs (in RESET) to RTS: a and b towards each other; c, on UD
 * the second destination of a, on RC and UC towards a, which sends it
 * nothing.
 */
#ifndef TIMEOUT
#define TIMEOUT 8
#endif

int lane_connect(struct lane *l)
{
	l->a_err = 0;
	l->a_settled = 0;
	l->b_err = 0;
	l->c_err = 0;
	if (l->type == IBV_QPT_UD)
		return ud_ready(l->a, l->qkey_a) || ud_ready(l->b, l->qkey_b) ||
		       (l->c && ud_ready(l->c, l->qkey_b));
	/*
	 * rnr_retry 7: a send waits for its receive, as the model says. A
	 * send to an errored b fails after four timeouts of 1 ms.
	 */
	return rsoft_connect_retry(l->a, l->lid, l->b->qp_num, 7, 0, TIMEOUT, 3) ||
	       rsoft_connect_access(l->b, l->lid, l->a->qp_num, 7, l->qp_rights) ||
	       (l->c && rsoft_connect_access(l->c, l->lid, l->a->qp_num, 7, 0));
}

/* The lane's CQs (unless shared) and QPs, connected. */
static int qps_open(struct lane *l, struct ibv_cq *acq, struct ibv_cq *bcq)
{
	l->shared_cqs = acq != NULL;
	l->acq = acq ? acq : ibv_create_cq(l->ctx, l->ca.cap ?: MAX_EXPECT,
					   NULL, NULL, 0);
	l->bcq = bcq ? bcq : ibv_create_cq(l->ctx, l->cb.cap ?: MAX_EXPECT,
					   NULL, NULL, 0);
	if (!l->acq || !l->bcq)
		return -1;
	l->a = new_qp(l, l->acq, NULL);
	l->b = new_qp(l, l->bcq, l->srq);
	l->c = l->srq ? new_qp(l, l->bcq, l->srq) : NULL;
	if (!l->a || !l->b || (l->srq && !l->c))
		return -1;
	return lane_connect(l);
}

static void qps_close(struct lane *l)
{
	struct ibv_qp **qps[] = { &l->a, &l->b, &l->c };

	for (int i = 0; i < 3; i++) {
		if (*qps[i])
			ibv_destroy_qp(*qps[i]);
		*qps[i] = NULL;
	}
	if (!l->shared_cqs) {
		if (l->acq)
			ibv_destroy_cq(l->acq);
		if (l->bcq)
			ibv_destroy_cq(l->bcq);
	}
	l->acq = NULL;
	l->bcq = NULL;
}

static struct ibv_srq *new_srq(struct lane *l)
{
	struct ibv_srq_init_attr attr = {
		.attr = { .max_wr = DEPTH, .max_sge = MAX_SGE },
	};

	return ibv_create_srq(l->pd, &attr);
}

/* A tiny CQ, or none (@tiny 0), that has not overrun. */
static void tiny_cq(struct cqm *cq, int tiny, struct rng *r)
{
	*cq = (struct cqm){ .cap = tiny ? 1 + below(r, TINY_CQ) : 0 };
}

/*
 * New QPs (and CQs, unless shared), memory and MRs kept: after a CQ
 * overran, or with a new SRQ (@fresh_srq) when the old one holds receives
 * that would fail its QPs one reset at a time. b's own receives go with
 * it; an SRQ kept keeps its own.
 */
int lane_renew(struct lane *l, struct rng *r, int fresh_srq)
{
	struct ibv_cq *acq = l->shared_cqs ? l->acq : NULL;
	struct ibv_cq *bcq = l->shared_cqs ? l->bcq : NULL;

	qps_close(l);
	if (fresh_srq) {
		ibv_destroy_srq(l->srq);
		l->srq = new_srq(l);
		l->srq_limit = 0;
		if (!l->srq)
			return -1;
	}
	tiny_cq(&l->ca, l->ca.cap, r);
	tiny_cq(&l->cb, l->cb.cap, r);
	l->sq_len = 0;
	if (!l->srq || fresh_srq)
		l->rq_len = 0;
	return qps_open(l, acq, bcq);
}

/* UD: an AH to our own LID, and one with a GRH to GID 0. */
static int ud_open(struct lane *l, struct rng *r)
{
	struct ibv_ah_attr attr = { .dlid = l->lid, .port_num = 1 };

	l->qkey_b = (uint32_t)rnd(r) & 0x7fffffff;
	l->qkey_a = chance(r, 50) ? l->qkey_b : (uint32_t)rnd(r) & 0x7fffffff;
	l->tclass = (uint8_t)rnd(r);
	l->hop_limit = 1 + below(r, 255);
	l->flow_label = (uint32_t)rnd(r) & 0xfffff;
	l->ah = ibv_create_ah(l->pd, &attr);
	attr.is_global = 1;
	attr.grh.dgid = l->gid;
	attr.grh.traffic_class = l->tclass;
	attr.grh.hop_limit = l->hop_limit;
	attr.grh.flow_label = l->flow_label;
	l->gah = ibv_create_ah(l->pd, &attr);
	return l->ah && l->gah ? 0 : -1;
}

int lane_open(struct lane *l, struct ibv_context *ctx, struct ibv_pd *pd,
	      const struct lane_kind *kind, struct ibv_cq *acq,
	      struct ibv_cq *bcq, struct rng *r, int id)
{
	static const int rights[] = {
		IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct ibv_port_attr port;

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->id = id;
	l->type = kind->type;
	l->ctx = ctx;
	l->pd = pd;
	if (ibv_query_port(ctx, 1, &port) || ibv_query_gid(ctx, 1, 0, &l->gid))
		return -1;
	l->lid = port.lid;
	if (mem_init(&l->am, r) || mem_init(&l->bm, r))
		return -1;
	/* Most lanes grant every right; some miss one on the MR or the QP. */
	l->brights = l->qp_rights = rights[0] | rights[1] | rights[2];
	if (chance(r, 25))
		l->brights &= ~rights[below(r, 3)];
	if (chance(r, 25))
		l->qp_rights &= ~rights[below(r, 3)];
	l->amr = ibv_reg_mr(pd, l->am.base, l->am.len, IBV_ACCESS_LOCAL_WRITE);
	l->amr_ro = ibv_reg_mr(pd, l->am.base, l->am.len, 0);
	l->bmr = ibv_reg_mr(pd, l->bm.base, l->bm.len,
			    IBV_ACCESS_LOCAL_WRITE | l->brights);
	l->bmr_ro = ibv_reg_mr(pd, l->bm.base, l->bm.len, IBV_ACCESS_REMOTE_READ);
	if (!l->amr || !l->amr_ro || !l->bmr || !l->bmr_ro)
		return -1;
	if (l->type == IBV_QPT_UD && ud_open(l, r))
		return -1;
	if (kind->srq) {
		l->srq = new_srq(l);
		if (!l->srq)
			return -1;
	}
	/* Tiny CQs are the lane's own: a shared one would overrun for all. */
	tiny_cq(&l->ca, !acq && kind->tiny & 1, r);
	tiny_cq(&l->cb, !acq && kind->tiny & 2, r);
	return qps_open(l, acq, bcq);
}

void lane_close(struct lane *l)
{
	qps_close(l);
	if (l->srq)
		ibv_destroy_srq(l->srq);
	if (l->ah)
		ibv_destroy_ah(l->ah);
	if (l->gah)
		ibv_destroy_ah(l->gah);
	if (l->amr)
		ibv_dereg_mr(l->amr);
	if (l->amr_ro)
		ibv_dereg_mr(l->amr_ro);
	if (l->bmr)
		ibv_dereg_mr(l->bmr);
	if (l->bmr_ro)
		ibv_dereg_mr(l->bmr_ro);
	free(l->am.raw);
	free(l->am.shadow);
	free(l->bm.raw);
	free(l->bm.shadow);
	pthread_mutex_destroy(&l->lock);
}
