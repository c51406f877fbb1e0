// SPDX-License-Identifier: GPL-2.0
/*
 * A lane's objects: memory with guard bytes and its shadow, the MRs over
 * it, the CQs and the QPs, connected on the device's own LID.
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

/*
 * A QP of the lane: the model needs the max_inline_data it asked for to
 * be the one the QP has.
 */
static struct ibv_qp *new_qp(struct lane *l, struct cqm *cq,
			     struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq->cq, .recv_cq = cq->cq, .srq = srq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = l->max_inline },
		.qp_type = l->type,
	};
	struct ibv_qp *qp = ibv_create_qp(l->pd, &init);

	if (qp && init.cap.max_inline_data != l->max_inline) {
		violation("lane %d: create_qp asking max_inline_data %u got %u",
			  l->id, l->max_inline, init.cap.max_inline_data);
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

struct ibv_qp *lane_qp(struct lane *l, int qp)
{
	struct ibv_qp *qps[] = { l->s[0].qp, l->b, l->c, l->s[1].qp };

	return qps[qp];
}

/*
 * Moves the QPs (in RESET) to RTS: a and b towards each other; c, on UD
 * the second destination of a, on RC and UC towards d, or towards a,
 * which sends it nothing, when the lane has no d.
 */
#ifndef TIMEOUT
#define TIMEOUT 8
#endif

int lane_connect(struct lane *l)
{
	struct ibv_qp *a = l->s[0].qp, *d = l->s[1].qp;

	for (int i = 0; i < 2; i++) {
		l->s[i].err = 0;
		l->s[i].settled = 0;
		l->s[i].retired = 0;	/* sq_psn 0 */
	}
	l->b_err = 0;
	l->c_err = 0;
	if (l->type == IBV_QPT_UD)
		return ud_ready(a, l->qkey_a) || ud_ready(l->b, l->qkey_b) ||
		       (l->c && ud_ready(l->c, l->qkey_b));
	/*
	 * rnr_retry 7: a send waits for its receive, as the model says. A
	 * send to an errored b fails after four timeouts of 1 ms.
	 */
	return rsoft_connect_retry(a, l->lid, l->b->qp_num, 7, 0, TIMEOUT, 3) ||
	       rsoft_connect_access(l->b, l->lid, a->qp_num, 7, l->qp_rights) ||
	       (d && (rsoft_connect_retry(d, l->lid, l->c->qp_num, 7, 0, TIMEOUT, 3) ||
		      rsoft_connect_access(l->c, l->lid, d->qp_num, 7, l->qp_rights))) ||
	       (l->c && !d && rsoft_connect_access(l->c, l->lid, a->qp_num, 7, 0));
}

/* The lane's CQs (unless shared) and QPs, connected. */
static int qps_open(struct lane *l)
{
	if (!l->shared_cqs) {
		l->ca->cq = ibv_create_cq(l->ctx, l->ca->cap ?: MAX_EXPECT,
					  NULL, NULL, 0);
		l->cb->cq = ibv_create_cq(l->ctx, l->cb->cap ?: MAX_EXPECT,
					  NULL, NULL, 0);
	}
	if (!l->ca->cq || !l->cb->cq)
		return -1;
	l->s[0].qp = new_qp(l, l->ca, NULL);
	l->s[1].qp = l->two_senders ? new_qp(l, l->ca, NULL) : NULL;
	l->b = new_qp(l, l->cb, l->srq);
	l->c = l->srq ? new_qp(l, l->cb, l->srq) : NULL;
	if (!l->s[0].qp || (l->two_senders && !l->s[1].qp) || !l->b ||
	    (l->srq && !l->c))
		return -1;
	return lane_connect(l);
}

/*
 * Destroys the QPs, senders first: a receiver gone under a waiting sender
 * would fail it.
 */
void lane_destroy_qps(struct lane *l)
{
	struct ibv_qp **qps[] = { &l->s[0].qp, &l->s[1].qp, &l->b, &l->c };

	for (unsigned int i = 0; i < ARRAY_SIZE(qps); i++) {
		if (*qps[i])
			ibv_destroy_qp(*qps[i]);
		*qps[i] = NULL;
	}
}

static void qps_close(struct lane *l)
{
	lane_destroy_qps(l);
	if (l->shared_cqs)
		return;
	for (int i = 0; i < 2; i++) {
		struct cqm *cq = i ? l->cb : l->ca;

		if (cq->cq)
			ibv_destroy_cq(cq->cq);
		cq->cq = NULL;
	}
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
	*cq = (struct cqm){ .cq = cq->cq, .cap = tiny ? 1 + below(r, TINY_CQ) : 0 };
}

/*
 * New QPs (and CQs, unless shared), memory and MRs kept: after a CQ
 * overran, or with a new SRQ (@fresh_srq) when the old one holds receives
 * that would fail its QPs one reset at a time, or after the QPs were
 * destroyed with work queued. b's own receives go with it; an SRQ kept
 * keeps its own. Shared CQs are the campaign's to renew.
 */
int lane_renew(struct lane *l, struct rng *r, int fresh_srq)
{
	qps_close(l);
	if (fresh_srq) {
		ibv_destroy_srq(l->srq);
		l->srq = new_srq(l);
		l->srq_limit = 0;
		if (!l->srq)
			return -1;
	}
	if (!l->shared_cqs) {
		tiny_cq(l->ca, l->ca->cap, r);
		tiny_cq(l->cb, l->cb->cap, r);
	}
	model_destroy(l);
	if (fresh_srq)
		l->rq_len = 0;
	return qps_open(l);
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
	      const struct lane_kind *kind, struct cqm *shared,
	      struct rng *r, int id)
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
	l->two_senders = kind->two_senders;
	/*
	 * Tiny CQs are the lane's own: a shared one would overrun for all
	 * (the campaign makes them tiny only when the threads are stopped).
	 */
	l->shared_cqs = shared != NULL;
	l->ca = shared ? &shared[0] : &l->own_ca;
	l->cb = shared ? &shared[1] : &l->own_cb;
	if (!shared) {
		tiny_cq(l->ca, kind->tiny & 1, r);
		tiny_cq(l->cb, kind->tiny & 2, r);
	}
	l->max_inline = kind->max_inline;
	return qps_open(l);
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
