/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The verbs fuzzer's shared types. A lane is one QP pair on the device,
 * RC, UC (connected) or UD (a sends through AHs to b's own LID): a sends,
 * b receives and is the responder; each side has its own CQ and memory.
 * b may take its receives from an SRQ shared with a second QP c, which
 * receives datagrams of a (UD) or the sends of a second sender d (RC, UC);
 * a's CQ may be small enough to overrun. The model of a lane predicts, in
 * order, every completion of each QP and every byte of both memories.
 */
#ifndef RSOFT_FUZZ_H
#define RSOFT_FUZZ_H

#include <pthread.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "kselftest.h"	/* __printf */

#define SLOT		4096	/* memory is handed to WRs a slot at a time */
#define NSLOT		16
#define GUARD		64	/* guard bytes before and after each memory */
#define DEPTH		32	/* WRs per work queue */
#define MAX_SGE		3
#define MAX_EXPECT	(2 * DEPTH)
#define GRH_LEN		40	/* in front of every UD receive payload */
#define UD_MTU		4096	/* the largest UD message */
#define TINY_CQ		8	/* a tiny CQ has 1 to TINY_CQ entries */

/* A lane's QPs, as the model and its completions name them. */
enum { QP_A, QP_B, QP_C, QP_D, NQPS };

struct lane;

/* Registered memory of one side, and what the model says it holds. */
struct mem {
	char *raw;		/* GUARD + NSLOT * SLOT + GUARD + 8 bytes */
	char *shadow;		/* the model's copy of raw */
	char *base;		/* first slot: raw + GUARD + 0 or 4 */
	size_t len;
	int next_slot;		/* slots below this are taken until quiet */
};

/* A completion the model expects; fields not checked for errors. */
struct expect {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	int imm;		/* 1: IBV_WC_WITH_IMM with imm_data imm_val */
	uint32_t imm_val;
	int grh;		/* UD: 1 with IBV_WC_GRH */
	uint32_t src_qp;	/* UD: the sender's QPN */
	int qp;			/* QP_A to QP_D: whose completion */
};

/* A posted WR the model has not executed yet. */
struct mwr {
	uint64_t wr_id;
	enum ibv_wr_opcode op;
	int signaled;
	struct ibv_sge sge[MAX_SGE];
	int num_sge;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t compare_add, swap;
	uint32_t imm;
	int inl;		/* IBV_SEND_INLINE: the data, not the keys */
	/* UD: the address handle (global or not), lane, QPN and Q_Key. */
	int global;
	struct lane *to;
	uint32_t qpn, qkey;
};

struct fifo {
	struct expect e[MAX_EXPECT + DEPTH];
	int head, len;
};

/* What the model knows of a CQ: a lane's own, or one all lanes share. */
struct cqm {
	struct ibv_cq *cq;
	int cap;		/* its entries if tiny; 0: never overruns */
	int fill;		/* completions expected and not polled */
	int overrun;		/* it lost a completion */
	int drained;		/* it overran and a poll found it empty */
	int errs;		/* its CQ_ERR events seen */
};

/* A sender, a (to b) or d (to c), and what the model has of it. */
struct sender {
	struct ibv_qp *qp;
	struct mwr sq[DEPTH];		/* posted, not executed (RNR wait) */
	int head, len;
	int err;			/* the model's QP state */
	int settled;			/* found in ERR since err */
	uint32_t retired;		/* RC: executed, as sq_psn counts */
	struct fifo e;			/* its expected completions */
};

struct lane {
	int id;
	enum ibv_qp_type type;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct cqm *ca, *cb;		/* a's and d's CQ, b's and c's */
	struct cqm own_ca, own_cb;	/* unless the campaign's shared ones */
	int shared_cqs;
	struct sender s[2];		/* a, and d (RC, UC: c's sender) */
	int two_senders;
	struct ibv_qp *b;
	struct ibv_srq *srq;		/* b's receives, or NULL */
	struct ibv_qp *c;		/* a second QP on srq */
	struct ibv_ah *ah, *gah;	/* UD: to our LID, and with a GRH */
	uint32_t qkey_a, qkey_b;	/* UD: the QPs' Q_Keys */
	struct lane *peers;		/* UD: lanes a may send to, this one */
	int npeers;			/* included (one thread's) */
	uint16_t lid;
	union ibv_gid gid;		/* the port's GID 0 */
	uint8_t tclass, hop_limit;	/* of gah's GRH */
	uint32_t flow_label;
	uint32_t max_inline;		/* the senders' max_inline_data */
	struct mem am, bm;
	struct ibv_mr *amr;		/* a's memory, LOCAL_WRITE */
	struct ibv_mr *amr_ro;		/* a's memory, no LOCAL_WRITE */
	struct ibv_mr *bmr;		/* b's memory, the rights of brights */
	struct ibv_mr *bmr_ro;		/* b's memory, REMOTE_READ only */
	int brights;			/* remote rights of bmr */
	int qp_rights;			/* b's (and c's) qp_access_flags */
	/* The model. */
	struct mwr rq[DEPTH];		/* b's (or the SRQ's) receives not consumed */
	int rq_head, rq_len;
	int b_err, c_err;		/* the model's QP states */
	int srq_limit;			/* the model's armed SRQ limit */
	int limit_due, limit_events;	/* SRQ_LIMIT_REACHED expected, seen */
	int last_wqe_due, last_wqes;	/* QP_LAST_WQE_REACHED of b, c */
	struct fifo eb;			/* expected completions of b and c */
	pthread_mutex_t lock;		/* the fifos, when CQs are shared */
	uint64_t next_id;
};

/* b and c receive, on the CQ of b's side; a and d send, on a's. */
static inline int b_side(int qp)
{
	return qp == QP_B || qp == QP_C;
}

static inline struct cqm *cq_of(struct lane *l, int qp)
{
	return b_side(qp) ? l->cb : l->ca;
}

/* The model's state of QP @qp: 1 in ERR. */
static inline int *lane_err(struct lane *l, int qp)
{
	int *err[] = { &l->s[0].err, &l->b_err, &l->c_err, &l->s[1].err };

	return err[qp];
}

struct rng {
	uint64_t s;
};

static inline uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A number in [0, n). */
static inline uint32_t below(struct rng *r, uint32_t n)
{
	return n ? rnd(r) % n : 0;
}

/* True with probability pct %. */
static inline int chance(struct rng *r, int pct)
{
	return below(r, 100) < (uint32_t)pct;
}

/* What a run went through, for its report (atomic counters). */
struct stats {
	long datagrams, to_c, dropped, overruns, limits;
	long across, inlined, destroys, shared_overruns;
};

extern struct stats stats;

static inline void count(long *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* fuzz.c: reports a violation and ends the run. */
__printf(1, 2) void violation(const char *fmt, ...);

/* What kind of lane lane_open() makes. */
struct lane_kind {
	enum ibv_qp_type type;
	int srq;
	int two_senders;	/* RC, UC with an SRQ: d sends to c */
	int tiny;	/* 1: a's CQ is tiny, 2: b's, 3: both */
	uint32_t max_inline;	/* the QPs' max_inline_data */
};

/* lane.c */
int lane_open(struct lane *l, struct ibv_context *ctx, struct ibv_pd *pd,
	      const struct lane_kind *kind, struct cqm *shared,
	      struct rng *r, int id);
void lane_close(struct lane *l);
int lane_connect(struct lane *l);
void lane_destroy_qps(struct lane *l);
int lane_renew(struct lane *l, struct rng *r, int fresh_srq);
struct ibv_qp *lane_qp(struct lane *l, int qp);
int mem_check(struct lane *l, struct mem *m, const char *side);

/* model.c */
void model_post_send(struct lane *l, int s, const struct mwr *w);
void model_post_recv(struct lane *l, const struct mwr *w);
void model_qp_error(struct lane *l, int qp);
void model_destroy(struct lane *l);
void model_run(struct lane *l);
int model_check_wc(struct lane *l, int qp, const struct ibv_wc *wc);
int model_pending(struct lane *l);
int model_stale_recvs(struct lane *l);

#endif /* RSOFT_FUZZ_H */
