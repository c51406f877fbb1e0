// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded random verbs-sequence fuzzer with a model (see model.c), run
 * against an rsoft device with stock libibverbs.
 *
 *   fuzz [-s SEED] [-n OPS] [-t THREADS] [-l LANES] [-d DEV]
 *
 * Single-threaded runs replay exactly from their seed. With -t, threads
 * post and poll on CQs they share; each owns its lanes, and now and then
 * one stops the others to overrun the shared CQs. Prints one TAP line; on
 * a violation, the op that found it and the ops before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

#include "fuzz.h"
#include "../loopback.h"

#define MAX_LANES	16
#define TRACE		24

static struct lane lanes[MAX_LANES];
struct stats stats;
static int nlanes;
static int failed;
static char first_violation[512];
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

/* The last steps of a single-threaded run, for the report. */
static char trace[TRACE][96];
static long ops_done, notes;
static int tracing;

void violation(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&report_lock);
	if (!failed) {
		va_start(ap, fmt);
		vsnprintf(first_violation, sizeof(first_violation), fmt, ap);
		va_end(ap);
	}
	failed = 1;
	pthread_mutex_unlock(&report_lock);
}

static void note(struct lane *l, const char *fmt, ...)
{
	va_list ap;
	char *t;
	int n;

	/* The steps after a violation are not those that found it. */
	if (!tracing || failed)
		return;
	t = trace[notes++ % TRACE];
	n = snprintf(t, sizeof(trace[0]), "op %ld lane %d: ", ops_done, l ? l->id : -1);
	va_start(ap, fmt);
	vsnprintf(t + n, sizeof(trace[0]) - n, fmt, ap);
	va_end(ap);
}

/* The lane of QP @qpn: *@qp is it, *@k which of the lane's (QP_A...). */
static struct lane *lane_of(uint32_t qpn, int *k, struct ibv_qp **qp)
{
	for (int i = 0; i < nlanes; i++) {
		for (*k = 0; *k < NQPS; (*k)++) {
			*qp = lane_qp(&lanes[i], *k);
			if (*qp && (*qp)->qp_num == qpn)
				return &lanes[i];
		}
	}
	return NULL;
}

static int poll_and_check(struct ibv_cq *cq, int max);

/*
 * Polls up to @max completions of @cq and checks each against its lane.
 * One poller at a time: two threads polling one CQ each get their share in
 * order, but could check them out of order.
 */
static int poll_cq(struct ibv_cq *cq, int max)
{
	static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;
	int n;

	pthread_mutex_lock(&poll_lock);
	n = poll_and_check(cq, max);
	pthread_mutex_unlock(&poll_lock);
	return n;
}

/* What the model knows of @cq, a lane's own or a shared one. */
static struct cqm *cqm_of(struct ibv_cq *cq)
{
	for (int i = 0; i < nlanes; i++) {
		if (lanes[i].ca->cq == cq)
			return lanes[i].ca;
		if (lanes[i].cb->cq == cq)
			return lanes[i].cb;
	}
	return NULL;
}

/*
 * An overrun CQ gives the completions queued before the overrun, in
 * order; then the first poll of the drained ring returns 0 (uverbs polls
 * one CQE at a time and stops at 0) and every later poll fails. A short
 * poll while the model expects more is no proof of loss yet: an RC
 * sender's error and flushes come from its retry timer, after the QP is
 * seen in ERR; once the ring is found drained, nothing more may come.
 */
static int overrun_poll(struct cqm *cq, int n, int max)
{
	int left = cq->fill;

	if (n < 0 && cq->drained && !left)
		return 0;
	if (n < 0 || (!n && cq->drained)) {
		violation("poll of overrun CQ %u returned %d (of %d), %d completions left, %s drained",
			  cq->cq->handle, n, max, left,
			  cq->drained ? "found" : "not");
		return -1;
	}
	if (n < max && !left)
		cq->drained = 1;
	return n;
}

static int poll_and_check(struct ibv_cq *cq, int max)
{
	struct cqm *m = cqm_of(cq);
	int over = m && m->overrun;
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(cq, max, wc);

	if (over && n < 0)
		return overrun_poll(m, n, max);
	if (n < 0) {
		violation("poll_cq failed: %d", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_qp *qp;
		struct lane *l;
		int k;

		l = lane_of(wc[i].qp_num, &k, &qp);
		if (!l) {
			violation("completion of unknown QP %u, wr_id %llu",
				  wc[i].qp_num, (unsigned long long)wc[i].wr_id);
			return -1;
		}
		/* Under the lane's lock: its owner may reset it once quiet. */
		pthread_mutex_lock(&l->lock);
		if (model_check_wc(l, k, &wc[i])) {
			pthread_mutex_unlock(&l->lock);
			return -1;
		}
		/*
		 * A completion in error leaves its QP in ERR, but for a UC
		 * SRQ receive too small for its message (class E) and a UD
		 * receive too small for its datagram.
		 */
		if (wc[i].status != IBV_WC_SUCCESS && qp_state(qp) != IBV_QPS_ERR &&
		    !(l->type == IBV_QPT_UC && l->srq &&
		      wc[i].status == IBV_WC_REM_INV_REQ_ERR) &&
		    !(l->type == IBV_QPT_UD && b_side(k) &&
		      wc[i].status == IBV_WC_LOC_LEN_ERR)) {
			violation("lane %d: QP %u not in ERR after a %s completion",
				  l->id, wc[i].qp_num, ibv_wc_status_str(wc[i].status));
			pthread_mutex_unlock(&l->lock);
			return -1;
		}
		pthread_mutex_unlock(&l->lock);
	}
	if (over)
		return overrun_poll(m, n, max);
	return n;
}

/*
 * Reads the async events there are and counts each for its lane (a CQ_ERR
 * for its CQ, once however many lanes share it): CQ_ERR of a tiny CQ,
 * SRQ_LIMIT_REACHED. Any thread may read another's.
 */
static void async_events(struct ibv_context *ctx)
{
	static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
	struct ibv_async_event ev;

	pthread_mutex_lock(&async_lock);
	while (!ibv_get_async_event(ctx, &ev)) {
		struct cqm *cq = ev.event_type == IBV_EVENT_CQ_ERR ?
				 cqm_of(ev.element.cq) : NULL;

		if (cq && !cq->cap)
			violation("CQ_ERR on CQ %u, which cannot overrun",
				  cq->cq->handle);
		if (cq)
			__atomic_add_fetch(&cq->errs, 1, __ATOMIC_SEQ_CST);
		for (int i = 0; i < nlanes; i++) {
			struct lane *l = &lanes[i];

			if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
			    ev.element.srq == l->srq)
				__atomic_add_fetch(&l->limit_events, 1, __ATOMIC_SEQ_CST);
			if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
			    l->c && (ev.element.qp == l->b || ev.element.qp == l->c))
				__atomic_add_fetch(&l->last_wqes, 1, __ATOMIC_SEQ_CST);
		}
		ibv_ack_async_event(&ev);
	}
	pthread_mutex_unlock(&async_lock);
}

/* The next @n free slots of @m, or NULL when the lane must go quiet first. */
static char *take_slots(struct mem *m, int n)
{
	char *p = m->base + SLOT * m->next_slot;

	if (m->next_slot + n > NSLOT)
		return NULL;
	m->next_slot += n;
	return p;
}

/* Slots a WR of lane @l takes: a UD message may be an MTU and a GRH. */
static int slots(const struct lane *l)
{
	return l->type == IBV_QPT_UD ? 2 : 1;
}

static void fill(struct mem *m, char *p, size_t len, struct rng *r)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)rnd(r);
	memcpy(m->shadow + (p - m->raw), p, len);
}

/* Splits @len bytes at @slot into 1..MAX_SGE SGEs with gaps between. */
static int split(struct rng *r, char *slot, uint32_t len, uint32_t key,
		 struct ibv_sge *sge)
{
	int n = 1 + below(r, MAX_SGE);
	uint64_t at = (uintptr_t)slot + below(r, 32);

	if (len < (uint32_t)n)
		n = len ? len : 1;
	for (int i = 0; i < n; i++) {
		uint32_t piece = i == n - 1 ? len : 1 + below(r, len - (n - 1 - i));

		sge[i] = (struct ibv_sge){ .addr = at, .length = piece, .lkey = key };
		at += piece + below(r, 64);
		len -= piece;
	}
	return n;
}

enum fault {
	NO_FAULT, BAD_LKEY, LOCAL_RANGE, LOCAL_RO, BAD_RKEY, REMOTE_RANGE,
	REMOTE_RO, MISALIGNED, ATOMIC_LEN, TOO_MANY_SGES, NFAULTS,
};

/*
 * UD: 0 to an MTU, some past it; to b's Q_Key, to a's (bit 31), to a
 * wrong one, or to a (which has no receive), through either AH. b and c
 * are those of lane @t, this one or another.
 */
static uint32_t build_ud(struct lane *l, struct lane *t, struct rng *r,
			 struct mwr *m)
{
	int to = below(r, 10), p = below(r, 20);

	m->global = chance(r, 50);
	m->to = t;
	/* b and c share the SRQ: either may take its next receive. */
	m->qpn = to == 9 ? l->s[0].qp->qp_num : t->c && chance(r, 40) ?
		 t->c->qp_num : t->b->qp_num;
	if (to < 7)
		m->qkey = t->qkey_b;
	else if (to < 8)
		m->qkey = 0x80000000 | (uint32_t)rnd(r);
	else
		m->qkey = t->qkey_b ^ (1 + below(r, 0xffff));
	if (!p)
		return 0;
	return p < 9 ? 1 + below(r, 64) : p < 17 ? 1 + below(r, UD_MTU) :
	       p < 19 ? UD_MTU : UD_MTU + 1 + below(r, 64);
}

static const enum ibv_wr_opcode ops[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
};

/*
 * Builds one send WR of lane @l (a datagram to lane @t) into @wr/@sge and
 * its model copy @m. Returns 1 when the post must refuse it, 2 when the
 * post must refuse its whole list (uverbs reads a UD list before the
 * driver sees any of it and takes only sends there), 0 when it is
 * accepted, -1 when the lane has no memory left.
 */
static int build_send(struct lane *l, struct lane *t, struct rng *r,
		      struct ibv_send_wr *wr, struct ibv_sge *sge, struct mwr *m)
{
	int uc = l->type == IBV_QPT_UC, ud = l->type == IBV_QPT_UD;
	enum ibv_wr_opcode op = ud ? ops[below(r, chance(r, 97) ? 2 : 4)] :
				ops[below(r, uc && chance(r, 95) ? 4 : 7)];
	int atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		     op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	int writes_local = atomic || op == IBV_WR_RDMA_READ;
	enum fault f = chance(r, 15) ? 1 + below(r, NFAULTS - 1) : NO_FAULT;
	char *aslot = take_slots(&l->am, slots(l));
	char *bslot = ud ? l->bm.base : take_slots(&l->bm, 1);
	uint32_t len, inl_len = 0;
	int refused;

	if (!aslot || !bslot)
		return -1;
	memset(wr, 0, sizeof(*wr));
	memset(m, 0, sizeof(*m));
	if (ud)
		len = build_ud(l, t, r, m);
	else if (atomic)
		len = f == ATOMIC_LEN ? 7 : 8;
	else if (chance(r, 5))
		len = 0;
	else
		len = chance(r, 50) ? 1 + below(r, 64) : 1 + below(r, SLOT / 2);
	/* What split() may name: the gaps and offset stay below 160 bytes. */
	if (!writes_local)
		fill(&l->am, aslot, len + 160 < SLOT * slots(l) ? len + 160 :
		     SLOT * slots(l), r);
	m->op = op;
	m->wr_id = (uint64_t)l->id << 32 | ++l->next_id;
	m->signaled = l->type != IBV_QPT_RC || chance(r, 75);
	m->num_sge = split(r, aslot, len, l->amr->lkey, m->sge);
	m->raddr = (uintptr_t)bslot + below(r, SLOT / 2 - 16);
	if (atomic)
		m->raddr = (m->raddr + 7) & ~7ULL;
	m->rkey = l->bmr->rkey;
	m->compare_add = chance(r, 50) ? rnd(r) : 0;
	m->swap = rnd(r);
	m->imm = (uint32_t)rnd(r);
	switch (f) {
	case BAD_LKEY:
		m->sge[0].lkey = l->amr->lkey ^ 0x5a5a0000;
		break;
	case LOCAL_RANGE:	/* into the guard bytes before the memory */
		m->sge[0].addr = (uintptr_t)l->am.base - 16;
		m->sge[0].length = 8;
		break;
	case LOCAL_RO:
		m->sge[0].lkey = l->amr_ro->lkey;
		break;
	case BAD_RKEY:
		m->rkey ^= 0x5a5a0000;
		break;
	case REMOTE_RANGE:
		m->raddr = (uintptr_t)l->bm.base + l->bm.len - 4;
		break;
	case REMOTE_RO:
		m->rkey = l->bmr_ro->rkey;
		break;
	case MISALIGNED:
		if (atomic)
			m->raddr += 4;
		break;
	default:
		break;
	}
	/*
	 * Inline data is read at the post, past the keys: only what carries
	 * data may be inline, and no more than the QP's max_inline_data.
	 */
	m->inl = chance(r, 12);
	for (int i = 0; i < m->num_sge; i++)
		inl_len += m->sge[i].length;
	/* Zero-length SGEs may name anything: the model ignores them too. */
	refused = f == TOO_MANY_SGES || (uc && writes_local) ||
		  (m->inl && (writes_local || inl_len > l->max_inline));
	if (ud && op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM)
		refused = 2;
	if (m->inl && !refused)
		count(&stats.inlined);
	memcpy(sge, m->sge, sizeof(m->sge));
	/* Inline data is read before the SGEs are counted: the extra is empty. */
	sge[MAX_SGE] = (struct ibv_sge){ 0 };
	wr->wr_id = m->wr_id;
	wr->sg_list = sge;
	wr->num_sge = f == TOO_MANY_SGES ? MAX_SGE + 1 : m->num_sge;
	wr->opcode = op;
	wr->send_flags = (m->signaled ? IBV_SEND_SIGNALED : 0) |
			 (m->inl ? IBV_SEND_INLINE : 0);
	wr->imm_data = m->imm;
	if (ud) {
		wr->wr.ud.ah = m->global ? l->gah : l->ah;
		wr->wr.ud.remote_qpn = m->qpn;
		wr->wr.ud.remote_qkey = m->qkey;
	} else if (atomic) {
		wr->wr.atomic.remote_addr = m->raddr;
		wr->wr.atomic.rkey = m->rkey;
		wr->wr.atomic.compare_add = m->compare_add;
		wr->wr.atomic.swap = m->swap;
	} else {
		wr->wr.rdma.remote_addr = m->raddr;
		wr->wr.rdma.rkey = m->rkey;
	}
	return refused;
}

/* Checks a post's result: refused at WR @bad_at (or accepted: -1). */
static int check_post(struct lane *l, const char *what, int ret, int bad_at,
		      const void *bad, const void *wrs, size_t wr_size)
{
	if (bad_at < 0 ? ret == 0 :
	    ret == EINVAL && bad == (const char *)wrs + bad_at * wr_size)
		return 0;
	violation("lane %d: %s returned %d (bad_wr at %ld), expected %s at WR %d",
		  l->id, what, ret, bad ? (long)(((const char *)bad -
		  (const char *)wrs) / (long)wr_size) : -1L,
		  bad_at < 0 ? "success" : "EINVAL", bad_at);
	return -1;
}

static int quiesce(struct lane *l, struct rng *r);
static int check_events(struct lane *l);

/* The PSN of the next request @qp sends, as ibv_query_qp reads it now. */
static int sq_psn(struct ibv_qp *qp, uint32_t *psn)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_SQ_PSN, &init))
		return -1;
	*psn = attr.sq_psn;
	return 0;
}

/*
 * An RC sender the model has run may not have run in the driver yet: a
 * post or a receive that lets it go on runs it in the system call only if
 * no other context (its RNR timer's worker) holds its runner, else that
 * context does, a little later. Its sq_psn says how far it has got.
 */
static int caught_up(struct lane *l, struct sender *s, double end)
{
	uint32_t psn;

	for (;;) {
		if (sq_psn(s->qp, &psn)) {
			violation("lane %d: query_qp failed", l->id);
			return -1;
		}
		if (psn == (s->retired & 0xffffff))
			return 0;
		if (mono_now() > end) {
			violation("lane %d: %c at PSN %u 20 s after the model retired %u requests",
				  l->id, s == l->s ? 'a' : 'd', psn, s->retired);
			return -1;
		}
		usleep(100);
	}
}

/*
 * The model may put a in ERR before the driver does: an RC request to an
 * errored b fails when a's retries run out, some time after the op that
 * decided it. Until then a's own ERR would flush the request, a dead key
 * fail it, and its completion and CQ_ERR are not there yet: ops that would
 * see the difference wait for a to get there first, or, when the model
 * has a in RTS, for a to have retired what the model did.
 */
static int settle(struct lane *l)
{
	double end = mono_now() + 20;

	for (int i = 0; i < 2; i++) {
		struct sender *s = &l->s[i];

		if (!s->err && s->qp && l->type == IBV_QPT_RC &&
		    caught_up(l, s, end))
			return -1;
		if (!s->err || s->settled)
			continue;
		while (qp_state(s->qp) != IBV_QPS_ERR) {
			if (mono_now() > end) {
				violation("lane %d: %c not in ERR 20 s after the model put it there",
					  l->id, i ? 'd' : 'a');
				return -1;
			}
			usleep(100);
		}
		s->settled = 1;
	}
	return 0;
}

/*
 * Events come in the system call that causes them: after a post, those
 * of a lane that expects any (an SRQ, a tiny CQ); the others' when quiet.
 */
static int post_events(struct lane *l)
{
	return l->srq || l->ca->cap || l->cb->cap ? check_events(l) : 0;
}

/*
 * The lane a's datagrams go to in one post: mostly its own, sometimes
 * another UD lane of the same thread.
 */
static struct lane *peer(struct lane *l, struct rng *r)
{
	struct lane *t = &l->peers[below(r, l->npeers)];

	return l->type == IBV_QPT_UD && t->type == IBV_QPT_UD &&
	       chance(r, 25) ? t : l;
}

/* Both lanes' model under their locks, taken in one order. */
static void lock_two(struct lane *l, struct lane *t)
{
	pthread_mutex_lock(t->id < l->id ? &t->lock : &l->lock);
	if (t != l)
		pthread_mutex_lock(t->id < l->id ? &l->lock : &t->lock);
}

static void unlock_two(struct lane *l, struct lane *t)
{
	if (t != l)
		pthread_mutex_unlock(&t->lock);
	pthread_mutex_unlock(&l->lock);
}

/*
 * Posts a list to a or d. While one of them waits for a receive, the
 * other gets none: a receive posted then has one taker.
 */
static int op_post_send(struct lane *l, struct rng *r)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge sge[3][MAX_SGE + 1];
	struct mwr m[3];
	int n = 1 + below(r, 3), bad_at = -1, built = 0, whole = 0, ret;
	int d = l->s[1].len ? 1 : l->s[0].len ? 0 : l->two_senders && chance(r, 50);
	struct lane *t = peer(l, r);

	if (l->s[d].len + n > DEPTH || l->am.next_slot + n * slots(l) > NSLOT ||
	    l->bm.next_slot + n > NSLOT)
		return quiesce(l, r);
	for (int i = 0; i < n; i++) {
		int refused = build_send(l, t, r, &wr[i], sge[i], &m[i]);

		if (refused < 0)
			break;
		if (i)
			wr[i - 1].next = &wr[i];
		built++;
		if (refused && bad_at < 0)
			bad_at = i;
		if (refused == 2)
			whole = 1;
	}
	if (whole)
		bad_at = 0;
	if (!built)
		return quiesce(l, r);
	note(l, "post_send %d WRs to %c (opcode %d first, refused at %d, lane %d)",
	     built, d ? 'd' : 'a', wr[0].opcode, bad_at, t->id);
	lock_two(l, t);
	ret = ibv_post_send(l->s[d].qp, wr, &bad);
	for (int i = 0; i < (bad_at < 0 ? built : bad_at); i++)
		model_post_send(l, d, &m[i]);
	model_run(l);
	unlock_two(l, t);
	return check_post(l, "post_send", ret, bad_at, bad, wr, sizeof(wr[0])) ||
	       post_events(l) || (t != l && post_events(t));
}

/*
 * Waits until the completions of @l's senders are all in (UC receives
 * rely on it), those of every UD lane of the thread for a UD lane.
 */
static int drain_senders(struct lane *l)
{
	time_t end = time(NULL) + 10;

	for (int i = 0; i < l->npeers; i++) {
		struct lane *p = &l->peers[i];

		if (p != l && (l->type != IBV_QPT_UD || p->type != IBV_QPT_UD))
			continue;
		while (p->s[0].e.len || p->s[1].e.len) {
			if (poll_cq(p->ca->cq, 16) < 0)
				return -1;
			if (time(NULL) > end) {
				violation("lane %d: %d completions of a and %d of d never came",
					  p->id, p->s[0].e.len, p->s[1].e.len);
				return -1;
			}
		}
	}
	return 0;
}

static int post_recvs(struct lane *l, struct rng *r, int valid)
{
	struct ibv_recv_wr wr[2], *bad = NULL;
	struct ibv_sge sge[2][MAX_SGE + 1];
	struct mwr m[2];
	int n = valid ? 1 : 1 + below(r, 2), bad_at = -1, ret;

	if (l->rq_len + n > DEPTH || l->bm.next_slot + n * slots(l) > NSLOT) {
		if (!valid)
			return quiesce(l, r);
		violation("lane %d: no room for a receive to end an RNR wait", l->id);
		return -1;
	}
	if (l->type != IBV_QPT_RC && drain_senders(l))
		return -1;
	for (int i = 0; i < n; i++) {
		int f = valid ? 0 : chance(r, 12) ? 1 + below(r, 3) : 0;
		/*
		 * The largest message fits, GRH space included. A UD receive
		 * too short fails b: most are long enough.
		 */
		int ud = l->type == IBV_QPT_UD;
		uint32_t most = ud ? GRH_LEN + UD_MTU : SLOT / 2;
		uint32_t room = f == 2 ? 1 + below(r, 8) :
				valid || (ud && chance(r, 90)) ? most + 64 :
				16 + below(r, most + 64);

		memset(&m[i], 0, sizeof(m[i]));
		m[i].wr_id = (uint64_t)l->id << 32 | ++l->next_id;
		m[i].num_sge = split(r, take_slots(&l->bm, slots(l)), room,
				     f == 1 ? l->bmr_ro->lkey : l->bmr->lkey, m[i].sge);
		memcpy(sge[i], m[i].sge, sizeof(m[i].sge));
		wr[i] = (struct ibv_recv_wr){
			.wr_id = m[i].wr_id, .sg_list = sge[i],
			.num_sge = f == 3 ? MAX_SGE + 1 : m[i].num_sge,
			.next = i < n - 1 ? &wr[i + 1] : NULL,
		};
		if (f == 3 && bad_at < 0)
			bad_at = i;
	}
	note(l, "post_recv %d WRs (refused at %d)", n, bad_at);
	pthread_mutex_lock(&l->lock);
	if (l->srq)
		ret = ibv_post_srq_recv(l->srq, wr, &bad);
	else
		ret = ibv_post_recv(l->b, wr, &bad);
	for (int i = 0; i < (bad_at < 0 ? n : bad_at); i++)
		model_post_recv(l, &m[i]);
	model_run(l);
	pthread_mutex_unlock(&l->lock);
	return check_post(l, "post_recv", ret, bad_at, bad, wr, sizeof(wr[0])) ||
	       post_events(l);
}

/*
 * A signaled zero-length WRITE of sender @d (UD: a SEND with a wrong
 * Q_Key, dropped): when it completes, every WR before it has.
 */
static int post_fence(struct lane *l, int d)
{
	int ud = l->type == IBV_QPT_UD;
	struct mwr m = {
		.wr_id = (uint64_t)l->id << 32 | ++l->next_id,
		.op = ud ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, .signaled = 1,
		.to = l, .qpn = ud ? l->b->qp_num : 0, .qkey = l->qkey_b ^ 1,
	};
	struct ibv_send_wr wr = {
		.wr_id = m.wr_id, .opcode = m.op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret;

	if (ud)
		wr.wr.ud = (typeof(wr.wr.ud)){ l->ah, m.qpn, m.qkey };

	pthread_mutex_lock(&l->lock);
	ret = ibv_post_send(l->s[d].qp, &wr, &bad);
	model_post_send(l, d, &m);
	model_run(l);
	pthread_mutex_unlock(&l->lock);
	return check_post(l, "post_send (fence)", ret, -1, NULL, &wr, sizeof(wr));
}

/*
 * RESET the QPs (b's receives go without completions; an SRQ keeps its
 * own) and reconnect.
 */
static int lane_reset(struct lane *l)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	int ret;

	pthread_mutex_lock(&l->lock);
	if (!l->srq)
		l->rq_len = 0;
	ret = 0;
	for (int k = 0; k < NQPS; k++) {
		struct ibv_qp *qp = lane_qp(l, k);

		ret = ret || (qp && ibv_modify_qp(qp, &attr, IBV_QP_STATE));
	}
	ret = ret || lane_connect(l);
	pthread_mutex_unlock(&l->lock);
	if (ret)
		violation("lane %d: reset and reconnect failed", l->id);
	return ret ? -1 : 0;
}

/*
 * The async events of a lane so far: CQ_ERR once for a CQ that overran, each
 * SRQ limit the model saw reached, a LAST_WQE_REACHED each time b or c
 * entered ERR; the SRQ's limit reads back as armed, 0 once reached.
 */
/*
 * How the lane's events compare with the model's count: -1 one is short
 * (it may still be on its way), 1 one is over, 0 all are there.
 */
static int events_vs_model(struct lane *l)
{
	int got[] = {
		__atomic_load_n(&l->ca->errs, __ATOMIC_SEQ_CST),
		__atomic_load_n(&l->cb->errs, __ATOMIC_SEQ_CST),
		__atomic_load_n(&l->limit_events, __ATOMIC_SEQ_CST),
		__atomic_load_n(&l->last_wqes, __ATOMIC_SEQ_CST),
	};
	int due[] = { l->ca->overrun, l->cb->overrun, l->limit_due, l->last_wqe_due };
	int short_one = 0;

	for (unsigned int i = 0; i < ARRAY_SIZE(got); i++) {
		if (got[i] > due[i])
			return 1;
		short_one |= got[i] < due[i];
	}
	return -short_one;
}

static int check_events(struct lane *l)
{
	struct ibv_srq_attr attr;
	double end = mono_now() + 5;
	int vs;

	/* An event is dispatched just after the state change it follows. */
	if (settle(l))
		return -1;
	async_events(l->ctx);
	while ((vs = events_vs_model(l)) < 0 && mono_now() < end) {
		usleep(1000);
		async_events(l->ctx);
	}
	if (vs) {
		violation("lane %d: %d+%d CQ_ERR, %d SRQ_LIMIT_REACHED and %d LAST_WQE_REACHED events, model says %d+%d, %d and %d",
			  l->id, l->ca->errs, l->cb->errs, l->limit_events,
			  l->last_wqes, l->ca->overrun, l->cb->overrun,
			  l->limit_due, l->last_wqe_due);
		return -1;
	}
	if (l->srq && (ibv_query_srq(l->srq, &attr) ||
		       attr.srq_limit != (uint32_t)l->srq_limit)) {
		violation("lane %d: SRQ limit reads %u, model says %d", l->id,
			  attr.srq_limit, l->srq_limit);
		return -1;
	}
	return 0;
}

/* Arms the SRQ limit, at most its size, often below its receives. */
static int arm_srq(struct lane *l, struct rng *r)
{
	struct ibv_srq_attr attr = {
		.srq_limit = 1 + below(r, l->rq_len && chance(r, 50) ? l->rq_len : DEPTH),
	};
	int ret;

	note(l, "arm the SRQ limit at %u, %d receives", attr.srq_limit, l->rq_len);
	pthread_mutex_lock(&l->lock);
	ret = ibv_modify_srq(l->srq, &attr, IBV_SRQ_LIMIT);
	if (!ret)
		l->srq_limit = attr.srq_limit;
	pthread_mutex_unlock(&l->lock);
	if (ret)
		violation("lane %d: modify_srq limit %u: %d", l->id, attr.srq_limit, ret);
	return ret ? -1 : 0;
}

/* A CQ overran, or the SRQ holds stale receives: new QPs (and SRQ). */
static int fresh_qps(struct lane *l, struct rng *r, int new_srq)
{
	int ret;

	note(l, "new QPs (CQs overran %d/%d), new SRQ %d", l->ca->overrun,
	     l->cb->overrun, new_srq);
	pthread_mutex_lock(&l->lock);
	ret = lane_renew(l, r, new_srq);
	pthread_mutex_unlock(&l->lock);
	if (ret)
		violation("lane %d: new QPs: %m", l->id);
	return ret ? -1 : 0;
}

/*
 * Lets the lane go quiet: receives for sends waiting on RNR, every
 * expected completion polled, memory compared with the model; a lane in
 * error is reset and connected again. Then its memory is free.
 */
/* Whether a sender waits for a receive its receiver can still take. */
static int waiting(struct lane *l)
{
	return (l->s[0].len && !l->b_err) || (l->s[1].len && !l->c_err);
}

/* The QPs must be in the states the model says: ERR or RTS. */
static int check_states(struct lane *l)
{
	for (int k = 0; k < NQPS; k++) {
		struct ibv_qp *qp = lane_qp(l, k);
		int err = *lane_err(l, k);

		if (qp && qp_state(qp) != (err ? IBV_QPS_ERR : IBV_QPS_RTS)) {
			violation("lane %d: %c in state %d, model says %s", l->id,
				  'a' + k, qp_state(qp), err ? "ERR" : "RTS");
			return -1;
		}
	}
	return 0;
}

static int quiesce(struct lane *l, struct rng *r)
{
	time_t end = time(NULL) + 20;
	int stale;

	note(l, "quiesce");
	/*
	 * a's fence to an errored b fails only when a's retries run out, d's
	 * to a live c at once: on a shared tiny CQ the model's order, a's
	 * completion first, holds only if a gets there before d's goes.
	 */
	for (int i = 0; i < 1 + l->two_senders; i++) {
		if ((l->s[i].len < DEPTH && post_fence(l, i)) || settle(l))
			return -1;
	}
	while (model_pending(l)) {
		if (waiting(l) && !l->rq_len && l->bm.next_slot < NSLOT &&
		    post_recvs(l, r, 1))
			return -1;
		if (poll_cq(l->ca->cq, 16) < 0 || poll_cq(l->cb->cq, 16) < 0)
			return -1;
		if (time(NULL) > end) {
			violation("lane %d: completions lost: %d of a, %d of d, %d of b, %d+%d sends waiting",
				  l->id, l->s[0].e.len, l->s[1].e.len, l->eb.len,
				  l->s[0].len, l->s[1].len);
			return -1;
		}
		if (l->bm.next_slot == NSLOT && waiting(l) && !l->rq_len)
			l->bm.next_slot--;	/* room for one more receive */
	}
	if (mem_check(l, &l->am, "a") || mem_check(l, &l->bm, "b") ||
	    check_events(l))
		return -1;
	l->am.next_slot = 0;
	l->bm.next_slot = 0;
	/* Threads may read the QPs of all lanes: those stay. */
	stale = l->srq && !l->shared_cqs && model_stale_recvs(l);
	if (l->s[0].err || l->s[1].err || l->b_err || l->c_err || stale) {
		if (check_states(l))
			return -1;
		/* Lanes on an overrun shared CQ get new QPs all at once. */
		if (l->shared_cqs && (l->ca->overrun || l->cb->overrun))
			return 0;
		if (l->ca->overrun || l->cb->overrun || stale ?
		    fresh_qps(l, r, stale) : lane_reset(l))
			return -1;
	}
	return l->srq && !l->srq_limit && chance(r, 30) ? arm_srq(l, r) : 0;
}

/*
 * Moves a, b, c or d to ERR: everything outstanding on it flushes, but
 * for the receives of an SRQ, which stay for the other QPs.
 */
static int op_error(struct lane *l, struct rng *r)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int k = below(r, l->two_senders ? 4 : l->c ? 3 : 2), ret;
	struct ibv_qp *qp = lane_qp(l, k);

	if (settle(l))
		return -1;

	note(l, "modify %c to ERR", 'a' + k);
	pthread_mutex_lock(&l->lock);
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	model_qp_error(l, k);
	model_run(l);
	pthread_mutex_unlock(&l->lock);
	if (ret)
		violation("lane %d: modify to ERR failed: %d", l->id, ret);
	/*
	 * b or c in ERR fails a sender waiting for its receive when the
	 * retries run out: on a tiny CQ, no poll may come before that.
	 */
	return ret ? -1 : post_events(l);
}

/* A transition the QP state machine does not have changes nothing. */
static int op_illegal_modify(struct lane *l, struct rng *r)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT };
	int ret;

	if (quiesce(l, r))
		return -1;
	note(l, "illegal modify to INIT");
	ret = ibv_modify_qp(l->s[0].qp, &attr, IBV_QP_STATE);
	if (ret != EINVAL || check_states(l)) {
		violation("lane %d: RTS/ERR -> INIT returned %d, state now %d",
			  l->id, ret, qp_state(l->s[0].qp));
		return -1;
	}
	return 0;
}

/*
 * Deregisters a memory region that queued WRs may name and registers the
 * memory again: the old key is dead, queued WRs that use it fail.
 */
static int op_rereg(struct lane *l, struct rng *r)
{
	int b = chance(r, 50);
	struct ibv_mr **mr = b ? &l->bmr : &l->amr;
	struct mem *m = b ? &l->bm : &l->am;
	int access = IBV_ACCESS_LOCAL_WRITE | (b ? l->brights : 0);

	if (settle(l))
		return -1;
	note(l, "dereg and reg %c's MR", b ? 'b' : 'a');
	pthread_mutex_lock(&l->lock);
	if (ibv_dereg_mr(*mr))
		violation("lane %d: dereg_mr failed", l->id);
	*mr = ibv_reg_mr(l->pd, m->base, m->len, access);
	/*
	 * A send waiting for a receive is tried again after each RNR timer
	 * and rereads its buffers: with a dead key it fails, as the model
	 * says now, but the driver only at its next try.
	 */
	model_run(l);
	pthread_mutex_unlock(&l->lock);
	if (!*mr) {
		violation("lane %d: reg_mr failed: %m", l->id);
		return -1;
	}
	/*
	 * As after op_error: that failure must land before a poll does. A
	 * poll first would make room on a tiny CQ the model has it overrun.
	 */
	return post_events(l);
}

/* Verbs that must fail and change nothing. */
static int op_refused(struct lane *l, struct rng *r)
{
	struct ibv_qp_init_attr init = {
		.send_cq = l->ca->cq, .recv_cq = l->ca->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1,
			 .max_inline_data = RSOFT_MAX_INLINE_DATA + 1 + below(r, 256) },
		.qp_type = l->type,
	};
	struct ibv_sge sge = { (uintptr_t)l->am.base, 8, l->amr->lkey };
	struct ibv_recv_wr wr[2] = {
		{ .wr_id = 1, .next = &wr[1], .sg_list = &sge, .num_sge = 1 },
		{ .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
	}, *bad = NULL;
	struct ibv_qp *qp;
	int ret;

	uint32_t asked = init.cap.max_inline_data;

	note(l, "refused verbs");
	qp = ibv_create_qp(l->pd, &init);
	if (qp || errno != EINVAL) {
		violation("create_qp asking max_inline_data %u: %s %u", asked,
			  qp ? "granted" : strerror(errno),
			  qp ? init.cap.max_inline_data : 0);
		if (qp)
			ibv_destroy_qp(qp);
		return -1;
	}
	init.cap.max_inline_data = 0;
	qp = ibv_create_qp(l->pd, &init);
	if (!qp) {
		violation("create_qp: %m");
		return -1;
	}
	/* A QP in RESET takes no receive: the list is refused at its head. */
	ret = ibv_post_recv(qp, wr, &bad);
	ibv_destroy_qp(qp);
	if (ret != EINVAL || bad != &wr[0]) {
		violation("post_recv in RESET: %d, bad_wr %p (head %p)", ret,
			  (void *)bad, (void *)wr);
		return -1;
	}
	/* Nor does a QP on an SRQ. */
	bad = NULL;
	ret = l->srq ? ibv_post_recv(l->b, wr, &bad) : EINVAL;
	if (l->srq && (ret != EINVAL || bad != &wr[0])) {
		violation("post_recv on a QP of an SRQ: %d, bad_wr %p (head %p)",
			  ret, (void *)bad, (void *)wr);
		return -1;
	}
	/* A CQ with QPs on it cannot go. */
	if (!l->shared_cqs && ibv_destroy_cq(l->ca->cq) != EBUSY) {
		violation("destroy_cq of a CQ in use did not fail with EBUSY");
		return -1;
	}
	return 0;
}

/*
 * A CQ is resized to @cqe entries, a tiny one to another tiny size:
 * refused (EINVAL) below the completions it holds.
 */
static int resize(struct cqm *m, int cqe, struct rng *r)
{
	int want, ret;

	if (m->cap)
		cqe = 1 + below(r, TINY_CQ);
	if (m->overrun)
		return 0;
	want = cqe < m->fill ? EINVAL : 0;
	ret = ibv_resize_cq(m->cq, cqe);
	if (ret != want || (!ret && m->cq->cqe != cqe)) {
		violation("resize_cq of CQ %u holding %d to %d: %d (cqe %d)",
			  m->cq->handle, m->fill, cqe, ret, m->cq->cqe);
		return -1;
	}
	if (!ret && m->cap)
		m->cap = cqe;
	return 0;
}

static int op_resize(struct lane *l, struct rng *r)
{
	int cqe = MAX_EXPECT + below(r, 64);

	note(l, "resize CQs to %d", cqe);
	if (l->shared_cqs)
		return 0;
	if (settle(l))
		return -1;
	return resize(l->ca, cqe, r) || resize(l->cb, cqe, r);
}

/*
 * Destroys the QPs with work queued, sends waiting for receives and
 * receives not taken: what the CQs hold is polled first, and after the
 * destroy the CQs must give nothing more, neither of those WRs nor a
 * flush. The lane then gets new QPs; an SRQ keeps its receives.
 */
static int op_destroy(struct lane *l, struct rng *r)
{
	time_t end = time(NULL) + 20;
	int queued;

	if (settle(l))
		return -1;
	while (l->s[0].e.len || l->s[1].e.len || l->eb.len) {
		if (poll_cq(l->ca->cq, 16) < 0 || poll_cq(l->cb->cq, 16) < 0)
			return -1;
		if (time(NULL) > end) {
			violation("lane %d: completions lost before a destroy: %d of a, %d of d, %d of b",
				  l->id, l->s[0].e.len, l->s[1].e.len, l->eb.len);
			return -1;
		}
	}
	if (check_events(l))
		return -1;
	queued = l->s[0].len + l->s[1].len + (l->srq ? 0 : l->rq_len);
	note(l, "destroy the QPs, %d WRs queued", queued);
	if (queued)
		count(&stats.destroys);
	pthread_mutex_lock(&l->lock);
	lane_destroy_qps(l);
	pthread_mutex_unlock(&l->lock);
	if (poll_cq(l->ca->cq, 16) < 0 || poll_cq(l->cb->cq, 16) < 0)
		return -1;
	return fresh_qps(l, r, 0);
}

/* One random op on lane @l; @single: ops that only one thread may do. */
static int step(struct lane *l, struct rng *r, int single)
{
	int p = below(r, 100);

	if (p < 36)
		return op_post_send(l, r);
	if (p < 58)
		return post_recvs(l, r, 0);
	if (p < 80) {
		int b = chance(r, 50), n = 1 + below(r, 16);

		note(l, "poll %c's CQ for %d", b ? 'b' : 'a', n);
		return poll_cq(b ? l->cb->cq : l->ca->cq, n) < 0;
	}
	if (p < 84)
		return quiesce(l, r);
	if (p < 88)
		return op_error(l, r);
	if (p < 91)
		return op_rereg(l, r);
	if (!single)
		return 0;
	if (p < 93)
		return op_illegal_modify(l, r);
	if (p < 96)
		return op_resize(l, r);
	/* New QPs are slow to make: a destroy is rarer than the others. */
	if (p < 97 && chance(r, 30))
		return op_destroy(l, r);
	return op_refused(l, r);
}

/*
 * Threaded runs stop the other threads for what needs every lane: a step
 * holds the world for reading, shared_overrun() for writing.
 */
static pthread_rwlock_t world;
static struct cqm shared[2];	/* the CQs of all a and d, of all b and c */
static int shared_cqe;

/*
 * With the other threads stopped and every lane quiet, the shared CQs (a
 * side's, b side's or both) become tiny and random posts on any lanes go
 * on until one overruns: the model counts their fill as it does a lane's
 * own tiny CQ. Every lane is then quiesced, and when a CQ overran all get
 * new QPs on a new one; a tiny CQ that did not overrun is made big again.
 */
static int shared_overrun(struct rng *r)
{
	int which = 1 + below(r, 3);

	for (int i = 0; i < nlanes; i++) {
		if (quiesce(&lanes[i], r))
			return -1;
	}
	for (int k = 0; k < 2; k++) {
		if (which & 1 << k && resize(&shared[k], 1 + below(r, TINY_CQ), r))
			return -1;
		if (which & 1 << k)
			shared[k].cap = shared[k].cq->cqe;
	}
	for (int n = 0; n < 64 && !shared[0].overrun && !shared[1].overrun; n++) {
		struct lane *l = &lanes[below(r, nlanes)];

		if (l->type != IBV_QPT_RC &&
		    (chance(r, 60) ? op_post_send(l, r) : post_recvs(l, r, 0)))
			return -1;
	}
	for (int i = 0; i < nlanes; i++) {
		if (quiesce(&lanes[i], r))
			return -1;
	}
	if (shared[0].overrun || shared[1].overrun) {
		count(&stats.shared_overruns);
		for (int i = 0; i < nlanes; i++)
			lane_destroy_qps(&lanes[i]);
	}
	for (int k = 0; k < 2; k++) {
		if (shared[k].overrun) {
			ibv_destroy_cq(shared[k].cq);
			shared[k].cq = ibv_create_cq(lanes[0].ctx, shared_cqe,
						     NULL, NULL, 0);
		} else if (shared[k].cap && ibv_resize_cq(shared[k].cq, shared_cqe)) {
			violation("resize_cq of an empty shared CQ to %d failed",
				  shared_cqe);
			return -1;
		}
		shared[k] = (struct cqm){ .cq = shared[k].cq };
		if (!shared[k].cq) {
			violation("create_cq: %m");
			return -1;
		}
	}
	for (int i = 0; i < nlanes; i++) {
		if (!lanes[i].s[0].qp && fresh_qps(&lanes[i], r, 0))
			return -1;
	}
	return 0;
}

struct worker {
	pthread_t thread;
	struct rng rng;
	int first, count;	/* its lanes */
	long ops, done;
	int single;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (w->done = 0; w->done < w->ops && !failed; w->done++) {
		struct lane *l = &lanes[w->first + below(&w->rng, w->count)];
		enum { OVERRUN = 1, DESTROY } alone;
		int ret;

		if (w->single)
			ops_done = w->done;
		/*
		 * What needs every lane runs alone: a shared overrun, or a
		 * destroy with work queued (a lane gets new QPs only with the
		 * other threads stopped).
		 */
		alone = w->single ? 0 : !below(&w->rng, 600) ? OVERRUN :
			!below(&w->rng, 900) ? DESTROY : 0;
		if (alone) {
			/* A failure shows the steps of this phase. */
			pthread_rwlock_wrlock(&world);
			ops_done = w->done;
			tracing = 1;
			ret = alone == OVERRUN ? shared_overrun(&w->rng) :
			      op_destroy(l, &w->rng);
			tracing = ret != 0;
		} else {
			pthread_rwlock_rdlock(&world);
			ret = step(l, &w->rng, w->single);
		}
		pthread_rwlock_unlock(&world);
		if (ret) {
			/* Every way out of a step that fails says why. */
			if (!failed)
				violation("op %ld failed without a report", w->done);
			break;
		}
	}
	pthread_rwlock_rdlock(&world);
	for (int i = 0; i < w->count && !failed; i++)
		quiesce(&lanes[w->first + i], &w->rng);
	pthread_rwlock_unlock(&world);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *dev = RSOFT_DEV;
	unsigned long long seed = time(NULL);
	long nops = 2000, done = 0;
	int threads = 1, per = 4, opt;
	struct worker wk[8];
	struct ibv_context *ctx;
	pthread_rwlockattr_t wattr;
	struct rng r, more;
	struct timespec t0, t1;
	char kinds[256] = "";

	while ((opt = getopt(argc, argv, "s:n:t:l:d:")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			nops = strtol(optarg, NULL, 0);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'l':
			per = atoi(optarg);
			break;
		case 'd':
			dev = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s [-s SEED] [-n OPS] [-t THREADS] [-l LANES] [-d DEV]\n",
				argv[0]);
			return 2;
		}
	}
	if (threads < 1 || threads > 8 || per < 1 || threads * per > MAX_LANES) {
		fprintf(stderr, "at most 8 threads and %d lanes in all\n", MAX_LANES);
		return 2;
	}
	ctx = rsoft_open(dev);
	if (!ctx) {
		printf("not ok - fuzz: cannot open %s: %m\n", dev);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r.s = seed;
	/* Choices the fuzzer gained later: a seed's lanes stay what they were. */
	more.s = ~seed;
	tracing = threads == 1;
	/*
	 * Threads share two CQs: all a's and d's completions on one, all b's
	 * and c's on the other. The world lock must not starve its writer.
	 */
	pthread_rwlockattr_init(&wattr);
	pthread_rwlockattr_setkind_np(&wattr,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&world, &wattr);
	if (threads > 1) {
		shared_cqe = threads * per * 2 * MAX_EXPECT;
		shared[0].cq = ibv_create_cq(ctx, shared_cqe, NULL, NULL, 0);
		shared[1].cq = ibv_create_cq(ctx, shared_cqe, NULL, NULL, 0);
		if (!shared[0].cq || !shared[1].cq) {
			printf("not ok - fuzz: create shared CQs: %m\n");
			return 1;
		}
	}
	/* The async events are read when a lane goes quiet: without waiting. */
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	for (nlanes = 0; nlanes < threads * per; nlanes++) {
		static const enum ibv_qp_type types[] = {
			IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
		};
		static const char * const tiny[] = {
			"", "+tinyA", "+tinyB", "+tinyAB",
		};
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		/* Every run of three lanes or more has each type. */
		struct lane_kind kind = {
			.type = types[(seed + nlanes) % 3],
			.srq = chance(&r, 35),
			.tiny = chance(&r, 30) ? 1 + below(&r, 3) : 0,
		};
		struct lane *l = &lanes[nlanes];

		/* Half the RC and UC lanes with an SRQ have c take sends too. */
		kind.two_senders = kind.srq && kind.type != IBV_QPT_UD &&
				   chance(&more, 50);
		/* Inline data up to a random limit: none, some, the device's most. */
		kind.max_inline = chance(&more, 20) ? 0 : chance(&more, 20) ?
				  RSOFT_MAX_INLINE_DATA :
				  1 + below(&more, RSOFT_MAX_INLINE_DATA);
		snprintf(kinds + strlen(kinds), sizeof(kinds) - strlen(kinds),
			 "%s%s%s%s%s", nlanes ? " " : "lanes ",
			 kind.type == IBV_QPT_RC ? "RC" : kind.type == IBV_QPT_UC ? "UC" : "UD",
			 kind.srq ? "+SRQ" : "", kind.two_senders ? "+d" : "",
			 threads > 1 ? "" : tiny[kind.tiny]);
		if (!pd || lane_open(l, ctx, pd, &kind, threads > 1 ? shared : NULL,
				     &r, nlanes)) {
			printf("not ok - fuzz: lane %d setup: %m\n", nlanes);
			return 1;
		}
		/* UD lanes send to those of their thread. */
		l->peers = &lanes[nlanes - nlanes % per];
		l->npeers = per;
	}
	for (int i = 0; i < threads; i++) {
		wk[i] = (struct worker){
			.rng = { seed * 1000003 + i }, .first = i * per, .count = per,
			.ops = nops / threads, .single = threads == 1,
		};
		pthread_create(&wk[i].thread, NULL, work, &wk[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(wk[i].thread, NULL);
		done += wk[i].done;
	}
	/* Nothing may come after everything expected came. */
	if (!failed) {
		for (int i = 0; i < nlanes; i++) {
			if (poll_cq(lanes[i].ca->cq, 16) || poll_cq(lanes[i].cb->cq, 16))
				break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < nlanes; i++) {
		struct ibv_pd *pd = lanes[i].pd;

		lane_close(&lanes[i]);
		ibv_dealloc_pd(pd);
	}
	for (int k = 0; k < 2; k++) {
		if (shared[k].cq)
			ibv_destroy_cq(shared[k].cq);
	}
	ibv_close_device(ctx);
	if (!failed) {
		printf("ok - fuzz seed %llu: %ld ops, %d threads, %d lanes (%.1f s)\n",
		       seed, done, threads, nlanes,
		       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		printf("# %s; %ld datagrams received by b, %ld by c (%ld from another lane), %ld dropped; %ld CQ overruns (%ld of shared CQs); %ld SRQ limits reached; %ld inline WRs; %ld destroys with work queued\n",
		       kinds, stats.datagrams, stats.to_c, stats.across,
		       stats.dropped, stats.overruns, stats.shared_overruns,
		       stats.limits, stats.inlined, stats.destroys);
		return 0;
	}
	printf("not ok - fuzz seed %llu: %ld ops, %d threads: %s\n", seed, nops,
	       threads, first_violation);
	if (threads == 1)
		printf("# replay: fuzz -s %llu -n %ld -l %d; the last steps:\n",
		       seed, ops_done + 1, per);
	else if (notes)
		printf("# the last steps of the threads stopped for shared CQs:\n");
	for (long i = notes > TRACE ? notes - TRACE : 0; i < notes; i++)
		printf("#   %s\n", trace[i % TRACE]);
	return 1;
}
