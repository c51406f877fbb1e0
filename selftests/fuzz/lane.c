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

static struct ibv_qp *new_qp(struct lane *l, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE },
		.qp_type = l->type,
	};

	return ibv_create_qp(l->pd, &init);
}

/* Moves both QPs (in RESET) to RTS towards each other. */
int lane_connect(struct lane *l)
{
	struct ibv_port_attr port;

	if (ibv_query_port(l->ctx, 1, &port))
		return -1;
	l->a_err = 0;
	l->b_err = 0;
	/* rnr_retry 7: a send waits for its receive, as the model says. */
	return rsoft_connect_access(l->a, port.lid, l->b->qp_num, 7, 0) ||
	       rsoft_connect_access(l->b, port.lid, l->a->qp_num, 7, l->qp_rights);
}

int lane_open(struct lane *l, struct ibv_context *ctx, struct ibv_pd *pd,
	      enum ibv_qp_type type, struct ibv_cq *acq, struct ibv_cq *bcq,
	      struct rng *r, int id)
{
	static const int rights[] = {
		IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_ATOMIC,
	};

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->id = id;
	l->type = type;
	l->ctx = ctx;
	l->pd = pd;
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
	l->shared_cqs = acq != NULL;
	l->acq = acq ? acq : ibv_create_cq(ctx, MAX_EXPECT, NULL, NULL, 0);
	l->bcq = bcq ? bcq : ibv_create_cq(ctx, MAX_EXPECT, NULL, NULL, 0);
	if (!l->acq || !l->bcq)
		return -1;
	l->a = new_qp(l, l->acq);
	l->b = new_qp(l, l->bcq);
	if (!l->a || !l->b)
		return -1;
	return lane_connect(l);
}

void lane_close(struct lane *l)
{
	if (l->a)
		ibv_destroy_qp(l->a);
	if (l->b)
		ibv_destroy_qp(l->b);
	if (!l->shared_cqs) {
		if (l->acq)
			ibv_destroy_cq(l->acq);
		if (l->bcq)
			ibv_destroy_cq(l->bcq);
	}
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
