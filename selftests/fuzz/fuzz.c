// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded random verbs-sequence fuzzer with a model (see model.c), run
 * against an rsoft device with stock libibverbs.
 *
 *   fuzz [-s SEED] [-n OPS] [-t THREADS] [-l LANES] [-d DEV]
 *
 * Single-threaded runs replay exactly from their seed. With -t, threads
 * post and poll on CQs they share; each owns its lanes. Prints one TAP
 * line; on a violation, the op that found it and the ops before it.
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

	if (!tracing)
		return;
	t = trace[notes++ % TRACE];
	n = snprintf(t, sizeof(trace[0]), "op %ld lane %d: ", ops_done, l ? l->id : -1);
	va_start(ap, fmt);
	vsnprintf(t + n, sizeof(trace[0]) - n, fmt, ap);
	va_end(ap);
}

/* The lane of QP @qpn: *@qp is it, *@b whether it is b's side (b or c). */
static struct lane *lane_of(uint32_t qpn, int *b, struct ibv_qp **qp)
{
	for (int i = 0; i < nlanes; i++) {
		struct ibv_qp *qps[] = { lanes[i].a, lanes[i].b, lanes[i].c };

		for (int k = 0; k < 3; k++) {
			if (qps[k] && qps[k]->qp_num == qpn) {
				*b = k > 0;
				*qp = qps[k];
				return &lanes[i];
			}
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

/* The lane whose tiny CQ @cq is (*@b: b's), or NULL. */
static struct lane *tiny_lane(struct ibv_cq *cq, int *b)
{
	for (int i = 0; i < nlanes; i++) {
		*b = lanes[i].cb.cap && lanes[i].bcq == cq;
		if (*b || (lanes[i].ca.cap && lanes[i].acq == cq))
			return &lanes[i];
	}
	return NULL;
}

/*
 * An overrun CQ gives the completions queued before the overrun, in
 * order; then the first poll of the drained ring returns 0 (uverbs polls
 * one CQE at a time and stops at 0) and every later poll fails.
 */
static int overrun_poll(struct lane *t, int b, int n, int max)
{
	struct cqm *cq = b ? &t->cb : &t->ca;
	int left = b ? t->eb.len : t->ea.len;

	if (n < 0 && cq->drained && !left)
		return 0;
	if (n < 0 || (n < max && left) || (!n && cq->drained)) {
		violation("lane %d: poll of %c's overrun CQ returned %d (of %d), %d completions left, %s drained",
			  t->id, b ? 'b' : 'a', n, max, left,
			  cq->drained ? "found" : "not");
		return -1;
	}
	if (n < max)
		cq->drained = 1;
	return n;
}

static int poll_and_check(struct ibv_cq *cq, int max)
{
	int tb;
	struct lane *t = tiny_lane(cq, &tb);
	int over = t && (tb ? t->cb.overrun : t->ca.overrun);
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(cq, max, wc);

	if (over && n < 0)
		return overrun_poll(t, tb, n, max);
	if (n < 0) {
		violation("poll_cq failed: %d", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct ibv_qp *qp;
		struct lane *l;
		int b;

		l = lane_of(wc[i].qp_num, &b, &qp);
		if (!l) {
			violation("completion of unknown QP %u, wr_id %llu",
				  wc[i].qp_num, (unsigned long long)wc[i].wr_id);
			return -1;
		}
		/* Under the lane's lock: its owner may reset it once quiet. */
		pthread_mutex_lock(&l->lock);
		if (model_check_wc(l, b, &wc[i])) {
			pthread_mutex_unlock(&l->lock);
			return -1;
		}
		/* A completion in error leaves its QP in ERR. */
		if (wc[i].status != IBV_WC_SUCCESS && qp_state(qp) != IBV_QPS_ERR) {
			violation("lane %d: QP %u not in ERR after a %s completion",
				  l->id, wc[i].qp_num, ibv_wc_status_str(wc[i].status));
			pthread_mutex_unlock(&l->lock);
			return -1;
		}
		pthread_mutex_unlock(&l->lock);
	}
	if (over)
		return overrun_poll(t, tb, n, max);
	return n;
}

/*
 * Reads the async events there are and counts each for its lane: CQ_ERR
 * of a tiny CQ, SRQ_LIMIT_REACHED. Any thread may read another's.
 */
static void async_events(struct ibv_context *ctx)
{
	static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
	struct ibv_async_event ev;

	pthread_mutex_lock(&async_lock);
	while (!ibv_get_async_event(ctx, &ev)) {
		for (int i = 0; i < nlanes; i++) {
			struct lane *l = &lanes[i];

			if (ev.event_type == IBV_EVENT_CQ_ERR &&
			    (ev.element.cq == l->acq || ev.element.cq == l->bcq)) {
				struct cqm *cq = ev.element.cq == l->acq ? &l->ca : &l->cb;

				if (!cq->cap)
					violation("lane %d: CQ_ERR on a CQ that cannot overrun",
						  l->id);
				__atomic_add_fetch(&cq->errs, 1, __ATOMIC_SEQ_CST);
			}
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
 * wrong one, or to a (which has no receive), through either AH.
 */
static uint32_t build_ud(struct lane *l, struct rng *r, struct mwr *m)
{
	int to = below(r, 10), p = below(r, 20);

	m->global = chance(r, 50);
	/* b and c share the SRQ: either may take its next receive. */
	m->qpn = to == 9 ? l->a->qp_num : l->c && chance(r, 40) ?
		 l->c->qp_num : l->b->qp_num;
	if (to < 7)
		m->qkey = l->qkey_b;
	else if (to < 8)
		m->qkey = 0x80000000 | (uint32_t)rnd(r);
	else
		m->qkey = l->qkey_b ^ (1 + below(r, 0xffff));
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
 * Builds one send WR of lane @l into @wr/@sge and its model copy @m.
 * Returns 1 when the post must refuse it, 2 when the post must refuse its
 * whole list (uverbs reads a UD list before the driver sees any of it and
 * takes only sends there), 0 when it is accepted, -1 when the lane has no
 * memory left.
 */
static int build_send(struct lane *l, struct rng *r, struct ibv_send_wr *wr,
		      struct ibv_sge *sge, struct mwr *m)
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
	uint32_t len;
	int refused;

	if (!aslot || !bslot)
		return -1;
	memset(wr, 0, sizeof(*wr));
	memset(m, 0, sizeof(*m));
	if (ud)
		len = build_ud(l, r, m);
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
	/* Zero-length SGEs may name anything: the model ignores them too. */
	refused = f == TOO_MANY_SGES || (uc && writes_local);
	if (ud && op != IBV_WR_SEND && op != IBV_WR_SEND_WITH_IMM)
		refused = 2;
	memcpy(sge, m->sge, sizeof(m->sge));
	wr->wr_id = m->wr_id;
	wr->sg_list = sge;
	wr->num_sge = f == TOO_MANY_SGES ? MAX_SGE + 1 : m->num_sge;
	wr->opcode = op;
	wr->send_flags = m->signaled ? IBV_SEND_SIGNALED : 0;
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

/*
 * The model may put a in ERR before the driver does: an RC request to an
 * errored b fails when a's retries run out, some time after the op that
 * decided it. Until then a's own ERR would flush the request, a dead key
 * fail it, and its completion and CQ_ERR are not there yet: ops that would
 * see the difference wait for a to get there first.
 */
static int settle(struct lane *l)
{
	double end = mono_now() + 20;

	if (!l->a_err || l->a_settled)
		return 0;
	while (qp_state(l->a) != IBV_QPS_ERR) {
		if (mono_now() > end) {
			violation("lane %d: a not in ERR 20 s after the model put it there",
				  l->id);
			return -1;
		}
		usleep(100);
	}
	l->a_settled = 1;
	return 0;
}

/*
 * Events come in the system call that causes them: after a post, those
 * of a lane that expects any (an SRQ, a tiny CQ); the others' when quiet.
 */
static int post_events(struct lane *l)
{
	return l->srq || l->ca.cap || l->cb.cap ? check_events(l) : 0;
}

static int op_post_send(struct lane *l, struct rng *r)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge sge[3][MAX_SGE + 1];
	struct mwr m[3];
	int n = 1 + below(r, 3), bad_at = -1, built = 0, whole = 0, ret;

	if (l->sq_len + n > DEPTH || l->am.next_slot + n * slots(l) > NSLOT ||
	    l->bm.next_slot + n > NSLOT)
		return quiesce(l, r);
	for (int i = 0; i < n; i++) {
		int refused = build_send(l, r, &wr[i], sge[i], &m[i]);

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
	note(l, "post_send %d WRs (opcode %d first, refused at %d)", built,
	     wr[0].opcode, bad_at);
	pthread_mutex_lock(&l->lock);
	ret = ibv_post_send(l->a, wr, &bad);
	for (int i = 0; i < (bad_at < 0 ? built : bad_at); i++)
		model_post_send(l, &m[i]);
	model_run(l);
	pthread_mutex_unlock(&l->lock);
	return check_post(l, "post_send", ret, bad_at, bad, wr, sizeof(wr[0])) ||
	       post_events(l);
}

/* Waits until a's completions are all in (UC receives rely on it). */
static int drain_a(struct lane *l)
{
	time_t end = time(NULL) + 10;

	while (l->ea.len) {
		if (poll_cq(l->acq, 16) < 0)
			return -1;
		if (time(NULL) > end) {
			violation("lane %d: %d completions of a never came", l->id,
				  l->ea.len);
			return -1;
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
	if (l->type != IBV_QPT_RC && drain_a(l))
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
 * A signaled zero-length WRITE (UD: a SEND with a wrong Q_Key, dropped):
 * when it completes, every WR before it has.
 */
static int post_fence(struct lane *l)
{
	int ud = l->type == IBV_QPT_UD;
	struct mwr m = {
		.wr_id = (uint64_t)l->id << 32 | ++l->next_id,
		.op = ud ? IBV_WR_SEND : IBV_WR_RDMA_WRITE, .signaled = 1,
		.qpn = ud ? l->b->qp_num : 0, .qkey = l->qkey_b ^ 1,
	};
	struct ibv_send_wr wr = {
		.wr_id = m.wr_id, .opcode = m.op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret;

	if (ud)
		wr.wr.ud = (typeof(wr.wr.ud)){ l->ah, m.qpn, m.qkey };

	pthread_mutex_lock(&l->lock);
	ret = ibv_post_send(l->a, &wr, &bad);
	model_post_send(l, &m);
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
	ret = ibv_modify_qp(l->a, &attr, IBV_QP_STATE) ||
	      ibv_modify_qp(l->b, &attr, IBV_QP_STATE) ||
	      (l->c && ibv_modify_qp(l->c, &attr, IBV_QP_STATE)) || lane_connect(l);
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
		__atomic_load_n(&l->ca.errs, __ATOMIC_SEQ_CST),
		__atomic_load_n(&l->cb.errs, __ATOMIC_SEQ_CST),
		__atomic_load_n(&l->limit_events, __ATOMIC_SEQ_CST),
		__atomic_load_n(&l->last_wqes, __ATOMIC_SEQ_CST),
	};
	int due[] = { l->ca.overrun, l->cb.overrun, l->limit_due, l->last_wqe_due };
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
			  l->id, l->ca.errs, l->cb.errs, l->limit_events,
			  l->last_wqes, l->ca.overrun, l->cb.overrun,
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

	note(l, "new QPs (CQs overran %d/%d), new SRQ %d", l->ca.overrun,
	     l->cb.overrun, new_srq);
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
static int quiesce(struct lane *l, struct rng *r)
{
	time_t end = time(NULL) + 20;
	int stale;

	note(l, "quiesce");
	if (l->sq_len < DEPTH && post_fence(l))
		return -1;
	while (model_pending(l)) {
		if (l->sq_len && !l->rq_len && !l->b_err && l->bm.next_slot < NSLOT &&
		    post_recvs(l, r, 1))
			return -1;
		if (poll_cq(l->acq, 16) < 0 || poll_cq(l->bcq, 16) < 0)
			return -1;
		if (time(NULL) > end) {
			violation("lane %d: completions lost: %d of a, %d of b, %d sends waiting",
				  l->id, l->ea.len, l->eb.len, l->sq_len);
			return -1;
		}
		if (l->bm.next_slot == NSLOT && l->sq_len && !l->rq_len)
			l->bm.next_slot--;	/* room for one more receive */
	}
	if (mem_check(l, &l->am, "a") || mem_check(l, &l->bm, "b") ||
	    check_events(l))
		return -1;
	l->am.next_slot = 0;
	l->bm.next_slot = 0;
	/* Threads may read the QPs of all lanes: those stay. */
	stale = l->srq && !l->shared_cqs && model_stale_recvs(l);
	if (l->a_err || l->b_err || l->c_err || stale) {
		if (qp_state(l->a) != (l->a_err ? IBV_QPS_ERR : IBV_QPS_RTS) ||
		    qp_state(l->b) != (l->b_err ? IBV_QPS_ERR : IBV_QPS_RTS) ||
		    (l->c && qp_state(l->c) != (l->c_err ? IBV_QPS_ERR : IBV_QPS_RTS))) {
			violation("lane %d: QP states %d/%d/%d, model says a %s, b %s, c %s",
				  l->id, qp_state(l->a), qp_state(l->b),
				  l->c ? (int)qp_state(l->c) : -1,
				  l->a_err ? "ERR" : "RTS", l->b_err ? "ERR" : "RTS",
				  l->c_err ? "ERR" : "RTS");
			return -1;
		}
		if (l->ca.overrun || l->cb.overrun || stale ?
		    fresh_qps(l, r, stale) : lane_reset(l))
			return -1;
	}
	return l->srq && !l->srq_limit && chance(r, 30) ? arm_srq(l, r) : 0;
}

/*
 * Moves a, b or c to ERR: everything outstanding on it flushes, but for
 * the receives of an SRQ, which stay for the other QPs.
 */
static int op_error(struct lane *l, struct rng *r)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	int b = below(r, l->c ? 3 : 2), ret;
	struct ibv_qp *qp = b == 2 ? l->c : b ? l->b : l->a;

	if (settle(l))
		return -1;

	note(l, "modify %c to ERR", 'a' + b);
	pthread_mutex_lock(&l->lock);
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	model_qp_error(l, b);
	model_run(l);
	pthread_mutex_unlock(&l->lock);
	if (ret)
		violation("lane %d: modify to ERR failed: %d", l->id, ret);
	return ret ? -1 : 0;
}

/* A transition the QP state machine does not have changes nothing. */
static int op_illegal_modify(struct lane *l, struct rng *r)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_INIT };
	int ret;

	if (quiesce(l, r))
		return -1;
	note(l, "illegal modify to INIT");
	ret = ibv_modify_qp(l->a, &attr, IBV_QP_STATE);
	if (ret != EINVAL || qp_state(l->a) != (l->a_err ? IBV_QPS_ERR : IBV_QPS_RTS)) {
		violation("lane %d: RTS/ERR -> INIT returned %d, state now %d",
			  l->id, ret, qp_state(l->a));
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
	pthread_mutex_unlock(&l->lock);
	if (!*mr)
		violation("lane %d: reg_mr failed: %m", l->id);
	return *mr ? 0 : -1;
}

/* Verbs that must fail and change nothing. */
static int op_refused(struct lane *l, struct rng *r)
{
	struct ibv_qp_init_attr init = {
		.send_cq = l->acq, .recv_cq = l->acq,
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
	if (!l->shared_cqs && ibv_destroy_cq(l->acq) != EBUSY) {
		violation("destroy_cq of a CQ in use did not fail with EBUSY");
		return -1;
	}
	return 0;
}

/*
 * A CQ is resized to @cqe entries, a tiny one to another tiny size:
 * refused (EINVAL) below the completions it holds.
 */
static int resize(struct lane *l, struct ibv_cq *cq, struct cqm *m,
		  const struct fifo *f, int cqe, struct rng *r)
{
	int want, ret;

	if (m->cap)
		cqe = 1 + below(r, TINY_CQ);
	if (m->overrun)
		return 0;
	want = cqe < f->len ? EINVAL : 0;
	ret = ibv_resize_cq(cq, cqe);
	if (ret != want || (!ret && cq->cqe != cqe)) {
		violation("lane %d: resize_cq of a CQ holding %d to %d: %d (cqe %d)",
			  l->id, f->len, cqe, ret, cq->cqe);
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
	return resize(l, l->acq, &l->ca, &l->ea, cqe, r) ||
	       resize(l, l->bcq, &l->cb, &l->eb, cqe, r);
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
		return poll_cq(b ? l->bcq : l->acq, n) < 0;
	}
	if (p < 84)
		return quiesce(l, r);
	if (p < 88)
		return op_error(l, r);
	if (p < 91)
		return op_rereg(l, r);
	if (!single)
		return 0;
	if (p < 94)
		return op_illegal_modify(l, r);
	if (p < 97)
		return op_resize(l, r);
	return op_refused(l, r);
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

		if (w->single)
			ops_done = w->done;
		if (step(l, &w->rng, w->single)) {
			/* Every way out of a step that fails says why. */
			if (!failed)
				violation("op %ld failed without a report", w->done);
			break;
		}
	}
	for (int i = 0; i < w->count && !failed; i++)
		quiesce(&lanes[w->first + i], &w->rng);
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
	struct ibv_cq *acq = NULL, *bcq = NULL;
	struct rng r;
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
	tracing = threads == 1;
	/* Threads share two CQs: all a's completions on one, all b's on the other. */
	if (threads > 1) {
		acq = ibv_create_cq(ctx, threads * per * MAX_EXPECT, NULL, NULL, 0);
		bcq = ibv_create_cq(ctx, threads * per * MAX_EXPECT, NULL, NULL, 0);
		if (!acq || !bcq) {
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

		snprintf(kinds + strlen(kinds), sizeof(kinds) - strlen(kinds),
			 "%s%s%s%s", nlanes ? " " : "lanes ",
			 kind.type == IBV_QPT_RC ? "RC" : kind.type == IBV_QPT_UC ? "UC" : "UD",
			 kind.srq ? "+SRQ" : "", threads > 1 ? "" : tiny[kind.tiny]);
		if (!pd || lane_open(&lanes[nlanes], ctx, pd, &kind, acq, bcq, &r,
				     nlanes)) {
			printf("not ok - fuzz: lane %d setup: %m\n", nlanes);
			return 1;
		}
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
			if (poll_cq(lanes[i].acq, 16) || poll_cq(lanes[i].bcq, 16))
				break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < nlanes; i++) {
		struct ibv_pd *pd = lanes[i].pd;

		lane_close(&lanes[i]);
		ibv_dealloc_pd(pd);
	}
	if (acq)
		ibv_destroy_cq(acq);
	if (bcq)
		ibv_destroy_cq(bcq);
	ibv_close_device(ctx);
	if (!failed) {
		printf("ok - fuzz seed %llu: %ld ops, %d threads, %d lanes (%.1f s)\n",
		       seed, done, threads, nlanes,
		       t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		printf("# %s; %ld datagrams received by b, %ld by c, %ld dropped; %ld CQ overruns; %ld SRQ limits reached\n",
		       kinds, stats.datagrams, stats.to_c, stats.dropped,
		       stats.overruns, stats.limits);
		return 0;
	}
	printf("not ok - fuzz seed %llu: %ld ops, %d threads: %s\n", seed, nops,
	       threads, first_violation);
	if (threads == 1) {
		printf("# replay: fuzz -s %llu -n %ld -l %d; the last steps:\n",
		       seed, ops_done + 1, per);
		for (long i = notes > TRACE ? notes - TRACE : 0; i < notes; i++)
			printf("#   %s\n", trace[i % TRACE]);
	}
	return 1;
}
