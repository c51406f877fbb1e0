/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The verbs fuzzer's shared types. A lane is one QP pair on the device,
 * RC, UC (connected) or UD (a sends through AHs to b's own LID): a sends,
 * b receives and is the responder; each side has its own CQ and memory.
 * b may take its receives from an SRQ, and a's CQ may be small enough to
 * overrun. The model of a lane predicts, in order, every completion of
 * both CQs and every byte of both memories.
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
	int c;			/* UD: a completion of c, not b */
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
	/* UD: the address handle (global or not), remote QPN and Q_Key. */
	int global;
	uint32_t qpn, qkey;
};

struct fifo {
	struct expect e[MAX_EXPECT + DEPTH];
	int head, len;
};

/* What the model knows of a tiny CQ (a's or b's). */
struct cqm {
	int cap;		/* its entries; 0: not tiny, never overruns */
	int overrun;		/* it lost a completion */
	int drained;		/* it overran and a poll found it empty */
	int errs;		/* its CQ_ERR events seen */
};

struct lane {
	int id;
	enum ibv_qp_type type;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *acq, *bcq;	/* own, or the campaign's shared ones */
	int shared_cqs;
	struct ibv_qp *a, *b;
	struct ibv_srq *srq;		/* b's receives, or NULL */
	struct ibv_qp *c;		/* a second QP on srq: UD datagrams only */
	struct ibv_ah *ah, *gah;	/* UD: to our LID, and with a GRH */
	uint32_t qkey_a, qkey_b;	/* UD: the QPs' Q_Keys */
	uint16_t lid;
	union ibv_gid gid;		/* the port's GID 0 */
	uint8_t tclass, hop_limit;	/* of gah's GRH */
	uint32_t flow_label;
	struct mem am, bm;
	struct ibv_mr *amr;		/* a's memory, LOCAL_WRITE */
	struct ibv_mr *amr_ro;		/* a's memory, no LOCAL_WRITE */
	struct ibv_mr *bmr;		/* b's memory, the rights of brights */
	struct ibv_mr *bmr_ro;		/* b's memory, REMOTE_READ only */
	int brights;			/* remote rights of bmr */
	int qp_rights;			/* b's qp_access_flags */
	/* The model. */
	struct mwr sq[DEPTH];		/* posted, not executed (RNR wait) */
	int sq_head, sq_len;
	struct mwr rq[DEPTH];		/* b's (or the SRQ's) receives not consumed */
	int rq_head, rq_len;
	int a_err, b_err, c_err;	/* the model's QP states */
	int a_settled;		/* a found in ERR since a_err */
	struct cqm ca, cb;		/* acq's and bcq's */
	int srq_limit;			/* the model's armed SRQ limit */
	int limit_due, limit_events;	/* SRQ_LIMIT_REACHED expected, seen */
	int last_wqe_due, last_wqes;	/* QP_LAST_WQE_REACHED of b, c */
	struct fifo ea, eb;		/* expected completions of acq, bcq */
	pthread_mutex_t lock;		/* the fifos, when CQs are shared */
	uint64_t next_id;
};

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
	int tiny;	/* 1: a's CQ is tiny, 2: b's, 3: both */
};

/* lane.c */
int lane_open(struct lane *l, struct ibv_context *ctx, struct ibv_pd *pd,
	      const struct lane_kind *kind, struct ibv_cq *acq,
	      struct ibv_cq *bcq, struct rng *r, int id);
void lane_close(struct lane *l);
int lane_connect(struct lane *l);
int lane_renew(struct lane *l, struct rng *r, int fresh_srq);
int mem_check(struct lane *l, struct mem *m, const char *side);

/* model.c */
void model_post_send(struct lane *l, const struct mwr *w);
void model_post_recv(struct lane *l, const struct mwr *w);
void model_qp_error(struct lane *l, int qp);
void model_run(struct lane *l);
int model_check_wc(struct lane *l, int b, const struct ibv_wc *wc);
int model_pending(struct lane *l);
int model_stale_recvs(struct lane *l);

#endif /* RSOFT_FUZZ_H */
