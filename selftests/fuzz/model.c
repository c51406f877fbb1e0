// SPDX-License-Identifier: GPL-2.0
/*
 * The model of a lane: the verbs contract for one RC, UC or UD QP pair,
 * simulated WR by WR in posting order. It predicts each completion (in
 * order, per CQ) and each byte the device writes (into the shadows).
 *
 * It depends on nothing but the order of verbs calls: an RC send that
 * finds no receive waits (rnr_retry 7) until one is posted, whenever the
 * device runs it; the fuzzer posts UC and UD receives only while the
 * senders that may reach them are idle, so a send finds the same receives
 * whenever it runs, and lets at most one of a lane's two senders wait for
 * a receive, so that a receive posted has one taker. A WR carries at most
 * one fault, so which error wins is never in question.
 *
 * A tiny CQ's fill is the model's count of completions not yet polled: a
 * single-threaded run (or a threaded one whose other threads are stopped)
 * polls nothing while the device runs a post, and the device runs a QP in
 * the system call that gave it work.
 */
#include <string.h>

#include "fuzz.h"

/*
 * b and c share one fifo: their completions come in the order of the
 * system calls that cause them. a and d have one each: a send to a
 * receiver in ERR completes when its retries run out.
 */
static struct fifo *fifo_of(struct lane *l, int qp)
{
	return b_side(qp) ? &l->eb : &l->s[qp == QP_D].e;
}

static void push(struct lane *l, const struct expect *e)
{
	struct fifo *f = fifo_of(l, e->qp);

	if (f->len == MAX_EXPECT + DEPTH) {
		violation("model: more than %d completions expected", f->len);
		return;
	}
	f->e[(f->head + f->len++) % (MAX_EXPECT + DEPTH)] = *e;
	__atomic_add_fetch(&cq_of(l, e->qp)->fill, 1, __ATOMIC_RELAXED);
}

/*
 * A completion of QP @e->qp. One that finds a tiny CQ full is lost: the
 * CQ overruns for good, and every completion it loses puts its QP in ERR
 * (whose flushes are lost too).
 */
static void expect(struct lane *l, const struct expect *e)
{
	struct cqm *cq = cq_of(l, e->qp);

	if (!cq->cap || (!cq->overrun && cq->fill < cq->cap)) {
		push(l, e);
		return;
	}
	if (!cq->overrun)
		count(&stats.overruns);
	cq->overrun = 1;
	if (!*lane_err(l, e->qp))
		model_qp_error(l, e->qp);
}

/* A completion of sender @s (0: a, 1: d). */
static void expect_send(struct lane *l, int s, const struct mwr *w,
			enum ibv_wc_status status, enum ibv_wc_opcode opcode)
{
	struct expect e = {
		.wr_id = w->wr_id, .status = status, .opcode = opcode,
		.qp = s ? QP_D : QP_A,
	};

	expect(l, &e);
}

/* The oldest receive is taken; from an SRQ, the limit may fire. */
static void take_recv(struct lane *l)
{
	l->rq_head = (l->rq_head + 1) % DEPTH;
	l->rq_len--;
	if (l->srq && l->srq_limit && l->rq_len < l->srq_limit) {
		l->srq_limit = 0;
		l->limit_due++;
		count(&stats.limits);
	}
}

/*
 * The oldest receive, taken by b or c (@qp), completes with @status (an
 * error or a flush).
 */
static void fail_recv(struct lane *l, enum ibv_wc_status status, int qp)
{
	struct expect e = {
		.wr_id = l->rq[l->rq_head].wr_id, .status = status, .qp = qp,
	};

	/* Taken first: a lost completion flushes the rest. */
	take_recv(l);
	expect(l, &e);
}

/*
 * QP @qp goes to ERR. It flushes its receives; those of an SRQ stay in
 * the SRQ, and a QP of an SRQ that enters ERR raises QP_LAST_WQE_REACHED.
 */
void model_qp_error(struct lane *l, int qp)
{
	int *err = lane_err(l, qp);

	if (l->srq && b_side(qp) && !*err)
		l->last_wqe_due++;
	*err = 1;
	while (qp == QP_B && l->rq_len && !l->srq)
		fail_recv(l, IBV_WC_WR_FLUSH_ERR, QP_B);
}

/*
 * The QPs are destroyed: their queued WRs go with no completion (the
 * fuzzer polled every completion before), an SRQ keeps its receives.
 */
void model_destroy(struct lane *l)
{
	l->s[0].len = 0;
	l->s[1].len = 0;
	if (!l->srq)
		l->rq_len = 0;
}

static enum ibv_wc_opcode send_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

static int is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static int consumes_recv(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static int in_mem(const struct mem *m, uint64_t addr, uint64_t len)
{
	uint64_t base = (uintptr_t)m->base;

	return addr >= base && addr + len <= base + m->len && addr + len >= addr;
}

static char *shadow(struct mem *m, uint64_t addr)
{
	return m->shadow + (addr - (uintptr_t)m->raw);
}

/*
 * Total length of @sge if every non-empty one names @m through @key (or,
 * when @writable is 0, @ro_key too); -1 otherwise. Inline data (@inl) is
 * read at the post from wherever it is: keys and ranges do not matter.
 */
static int64_t sges_len(const struct mem *m, const struct ibv_sge *sge, int n,
			uint32_t key, uint32_t ro_key, int writable, int inl)
{
	int64_t len = 0;

	for (int i = 0; i < n; i++) {
		if (!sge[i].length)
			continue;
		if (inl) {
			len += sge[i].length;
			continue;
		}
		if (sge[i].lkey != key && (writable || sge[i].lkey != ro_key))
			return -1;
		if (!in_mem(m, sge[i].addr, sge[i].length))
			return -1;
		len += sge[i].length;
	}
	return len;
}

static void gather(struct mem *m, const struct ibv_sge *sge, int n, char *out)
{
	for (int i = 0; i < n; i++) {
		memcpy(out, shadow(m, sge[i].addr), sge[i].length);
		out += sge[i].length;
	}
}

/* Writes @len bytes from @in at offset @skip of the SGEs' bytes. */
static void scatter_at(struct mem *m, const struct ibv_sge *sge, int n,
		       size_t skip, const char *in, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = sge[i].length;

		if (skip >= k) {
			skip -= k;
			continue;
		}
		k = k - skip < len ? k - skip : len;
		memcpy(shadow(m, sge[i].addr + skip), in, k);
		skip = 0;
		in += k;
		len -= k;
	}
}

static void scatter(struct mem *m, const struct ibv_sge *sge, int n,
		    const char *in, size_t len)
{
	scatter_at(m, sge, n, 0, in, len);
}

/* Whether b grants @need on [raddr, raddr + len) through @rkey. */
static int remote_ok(struct lane *l, uint64_t raddr, uint32_t rkey,
		     uint64_t len, int need)
{
	int mr_rights;

	if (rkey == l->bmr->rkey)
		mr_rights = l->brights;
	else if (rkey == l->bmr_ro->rkey)
		mr_rights = IBV_ACCESS_REMOTE_READ;
	else
		return 0;
	return (mr_rights & need) == need && (l->qp_rights & need) == need &&
	       in_mem(&l->bm, raddr, len);
}

/* @s's head WR failed with @status: it completes, @s goes to ERR. */
static void fail_send(struct lane *l, int s, const struct mwr *w,
		      enum ibv_wc_status status)
{
	expect_send(l, s, w, status, send_opcode(w->op));
	l->s[s].err = 1;
}

/* The data movement of a successful WR, into the shadows. */
static void apply(struct lane *l, const struct mwr *w, const struct mwr *recv,
		  int64_t len)
{
	char buf[SLOT];	/* a successful WR moves at most a slot (UD) */
	uint64_t old, val;

	switch (w->op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		gather(&l->am, w->sge, w->num_sge, buf);
		scatter(&l->bm, recv->sge, recv->num_sge, buf, len);
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		gather(&l->am, w->sge, w->num_sge, buf);
		if (len)
			memcpy(shadow(&l->bm, w->raddr), buf, len);
		break;
	case IBV_WR_RDMA_READ:
		if (len)
			scatter(&l->am, w->sge, w->num_sge,
				shadow(&l->bm, w->raddr), len);
		break;
	default:
		memcpy(&old, shadow(&l->bm, w->raddr), 8);
		if (w->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			val = old + w->compare_add;
		else
			val = old == w->compare_add ? w->swap : old;
		memcpy(shadow(&l->bm, w->raddr), &val, 8);
		scatter(&l->am, w->sge, w->num_sge, (char *)&old, 8);
		break;
	}
}

/* The GRH of a @len-byte datagram of lane @l through its global AH. */
static void grh(const struct lane *l, uint32_t len, unsigned char *h)
{
	uint32_t vtf = 6U << 28 | (uint32_t)l->tclass << 20 | l->flow_label;

	for (int i = 0; i < 4; i++)
		h[i] = vtf >> (24 - 8 * i);
	h[4] = len >> 8;
	h[5] = len;
	h[6] = 0x1b;
	h[7] = l->hop_limit;
	memcpy(h + 8, l->gid.raw, 16);
	memcpy(h + 24, l->gid.raw, 16);
}

/*
 * A UD send of a to b or c of lane @w->to (this one or another): sender
 * errors stay at the sender; whatever does not reach a ready receive of b
 * (or c, on the same SRQ) with its Q_Key is dropped; a receive in error
 * (no room for GRH + payload, or not writable) is the receiver's alone.
 * Too little room is the sender's doing: that receive fails, and the QP
 * goes on.
 */
static void run_ud(struct lane *l, const struct mwr *w, int64_t len)
{
	struct lane *t = w->to;
	uint32_t qkey = w->qkey & 0x80000000 ? l->qkey_a : w->qkey;
	int qp = w->qpn == t->b->qp_num ? QP_B :
		 t->c && w->qpn == t->c->qp_num ? QP_C : QP_A;
	struct mwr *recv = &t->rq[t->rq_head];
	unsigned char h[GRH_LEN];
	char buf[SLOT];
	int64_t room;

	if (len > UD_MTU) {
		fail_send(l, 0, w, IBV_WC_LOC_LEN_ERR);
		return;
	}
	if (qp == QP_A || *lane_err(t, qp) || qkey != t->qkey_b || !t->rq_len) {
		count(&stats.dropped);
		goto sent;
	}
	room = sges_len(&t->bm, recv->sge, recv->num_sge, t->bmr->lkey, 0, 1, 0);
	if (room < 0) {
		fail_recv(t, IBV_WC_LOC_PROT_ERR, qp);
		model_qp_error(t, qp);
		goto sent;
	}
	if (room < len + GRH_LEN) {
		fail_recv(t, IBV_WC_LOC_LEN_ERR, qp);
		goto sent;
	}
	if (w->global) {
		grh(l, len, h);
		scatter(&t->bm, recv->sge, recv->num_sge, (char *)h, GRH_LEN);
	}
	gather(&l->am, w->sge, w->num_sge, buf);
	scatter_at(&t->bm, recv->sge, recv->num_sge, GRH_LEN, buf, len);
	{
		struct expect e = {
			.wr_id = recv->wr_id, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV, .byte_len = GRH_LEN + len,
			.imm = w->op != IBV_WR_SEND, .imm_val = w->imm,
			.grh = w->global, .src_qp = l->s[0].qp->qp_num, .qp = qp,
		};

		take_recv(t);
		expect(t, &e);
	}
	count(qp == QP_C ? &stats.to_c : &stats.datagrams);
	if (t != l)
		count(&stats.across);
sent:
	if (w->signaled)
		expect_send(l, 0, w, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/*
 * Runs the head WR of sender @s (a to b, d to c); returns 0 when it must
 * wait for a receive (RC), 1 when it was consumed.
 */
static int run_one(struct lane *l, int s, const struct mwr *w)
{
	int rc = l->type == IBV_QPT_RC, writes_local;
	int need = 0, to = s ? QP_C : QP_B;
	struct mwr *recv;
	int64_t len, room;

	if (l->s[s].err) {
		expect_send(l, s, w, IBV_WC_WR_FLUSH_ERR, 0);
		return 1;
	}
	writes_local = w->op == IBV_WR_RDMA_READ || is_atomic(w->op);
	len = sges_len(&l->am, w->sge, w->num_sge, l->amr->lkey,
		       l->amr_ro->lkey, writes_local, w->inl);
	if (len < 0) {
		fail_send(l, s, w, IBV_WC_LOC_PROT_ERR);
		return 1;
	}
	if (l->type == IBV_QPT_UD) {
		run_ud(l, w, len);
		return 1;
	}
	/* The requester's own check: whether anyone answers does not matter. */
	if (is_atomic(w->op) && len != 8) {
		fail_send(l, s, w, IBV_WC_LOC_LEN_ERR);
		return 1;
	}
	if (*lane_err(l, to)) {
		if (!rc)
			goto sent;	/* UC: nobody takes it */
		fail_send(l, s, w, IBV_WC_RETRY_EXC_ERR);
		return 1;
	}
	if (w->op == IBV_WR_RDMA_WRITE || w->op == IBV_WR_RDMA_WRITE_WITH_IMM)
		need = IBV_ACCESS_REMOTE_WRITE;
	else if (w->op == IBV_WR_RDMA_READ)
		need = IBV_ACCESS_REMOTE_READ;
	else if (is_atomic(w->op))
		need = IBV_ACCESS_REMOTE_ATOMIC;
	/* An RC responder that refuses a request goes to ERR too. */
	if (is_atomic(w->op) && w->raddr % 8) {
		model_qp_error(l, to);
		fail_send(l, s, w, IBV_WC_REM_INV_REQ_ERR);
		return 1;
	}
	if (need && len && !remote_ok(l, w->raddr, w->rkey, len, need)) {
		if (!rc)
			goto sent;	/* UC: the responder drops it */
		model_qp_error(l, to);
		fail_send(l, s, w, IBV_WC_REM_ACCESS_ERR);
		return 1;
	}
	if (!consumes_recv(w->op)) {
		apply(l, w, NULL, len);
		goto sent;
	}
	if (!l->rq_len) {
		if (rc)
			return 0;	/* receiver not ready: wait */
		goto sent;
	}
	recv = &l->rq[l->rq_head];
	if (w->op != IBV_WR_RDMA_WRITE_WITH_IMM) {
		room = sges_len(&l->bm, recv->sge, recv->num_sge, l->bmr->lkey,
				0, 1, 0);
		if (room < 0 || room < len) {
			if (!rc && room >= 0 && !l->srq)
				goto sent;	/* UC: dropped, receive stays */
			if (!rc && room >= 0) {
				/* UC: an SRQ's receive fails alone */
				fail_recv(l, IBV_WC_REM_INV_REQ_ERR, to);
				goto sent;
			}
			fail_recv(l, room < 0 ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR, to);
			model_qp_error(l, to);
			if (!rc)
				goto sent;	/* UC: the sender never knows */
			fail_send(l, s, w, room < 0 ? IBV_WC_REM_OP_ERR :
				  IBV_WC_REM_INV_REQ_ERR);
			return 1;
		}
	}
	apply(l, w, recv, len);
	{
		struct expect e = {
			.wr_id = recv->wr_id, .status = IBV_WC_SUCCESS,
			.opcode = w->op == IBV_WR_RDMA_WRITE_WITH_IMM ?
				  IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
			.byte_len = len, .imm = w->op != IBV_WR_SEND,
			.imm_val = w->imm, .qp = to,
		};

		take_recv(l);
		expect(l, &e);
	}
sent:
	l->s[s].retired++;
	if (w->signaled)
		expect_send(l, s, w, IBV_WC_SUCCESS, send_opcode(w->op));
	return 1;
}

/* Runs the senders' queues until each is empty or waits for a receive. */
void model_run(struct lane *l)
{
	for (int i = 0; i < 2; i++) {
		struct sender *s = &l->s[i];

		while (s->len && run_one(l, i, &s->sq[s->head])) {
			s->head = (s->head + 1) % DEPTH;
			s->len--;
		}
	}
}

void model_post_send(struct lane *l, int s, const struct mwr *w)
{
	struct sender *q = &l->s[s];

	q->sq[(q->head + q->len++) % DEPTH] = *w;
}

void model_post_recv(struct lane *l, const struct mwr *w)
{
	l->rq[(l->rq_head + l->rq_len++) % DEPTH] = *w;
	if (l->b_err && !l->srq)
		fail_recv(l, IBV_WC_WR_FLUSH_ERR, QP_B);
}

/* Checks a polled completion of QP @qp against the model. */
int model_check_wc(struct lane *l, int qp, const struct ibv_wc *wc)
{
	struct fifo *f = fifo_of(l, qp);
	struct expect *e;
	int b = b_side(qp), ok;

	if (!f->len) {
		violation("lane %d %c: unexpected completion wr_id %llu status %s",
			  l->id, 'a' + qp, (unsigned long long)wc->wr_id,
			  ibv_wc_status_str(wc->status));
		return -1;
	}
	e = &f->e[f->head];
	ok = wc->wr_id == e->wr_id && wc->status == e->status &&
	     wc->qp_num == lane_qp(l, e->qp)->qp_num;
	if (ok && e->status == IBV_WC_SUCCESS) {
		ok = wc->opcode == e->opcode;
		if (b)
			ok = ok && wc->byte_len == e->byte_len &&
			     !!(wc->wc_flags & IBV_WC_WITH_IMM) == e->imm &&
			     (!e->imm || wc->imm_data == e->imm_val);
		/* A datagram names its sender. */
		if (b && l->type == IBV_QPT_UD)
			ok = ok && !!(wc->wc_flags & IBV_WC_GRH) == e->grh &&
			     wc->src_qp == e->src_qp && wc->slid == l->lid;
	}
	if (!ok) {
		violation("lane %d %c: got wr_id %llu %s opcode %d len %u qp %u flags %#x src %u/%u, model expects wr_id %llu %s opcode %d len %u qp %u grh %d src %u",
			  l->id, 'a' + qp, (unsigned long long)wc->wr_id,
			  ibv_wc_status_str(wc->status), wc->opcode, wc->byte_len,
			  wc->qp_num, wc->wc_flags, wc->src_qp, wc->slid,
			  (unsigned long long)e->wr_id,
			  ibv_wc_status_str(e->status), e->opcode, e->byte_len,
			  lane_qp(l, e->qp)->qp_num, e->grh, e->src_qp);
		return -1;
	}
	f->head = (f->head + 1) % (MAX_EXPECT + DEPTH);
	f->len--;
	__atomic_sub_fetch(&cq_of(l, qp)->fill, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Receives queued that name b's memory through a deregistered key. */
int model_stale_recvs(struct lane *l)
{
	int n = 0;

	for (int i = 0; i < l->rq_len; i++) {
		const struct mwr *w = &l->rq[(l->rq_head + i) % DEPTH];

		for (int k = 0; k < w->num_sge; k++)
			n += w->sge[k].length && w->sge[k].lkey != l->bmr->lkey &&
			     w->sge[k].lkey != l->bmr_ro->lkey;
	}
	return n;
}

/* Completions still to come, and sends still waiting for receives. */
int model_pending(struct lane *l)
{
	return l->s[0].e.len + l->s[1].e.len + l->eb.len + l->s[0].len +
	       l->s[1].len;
}
