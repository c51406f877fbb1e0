// SPDX-License-Identifier: GPL-2.0
/*
 * psnwrap DEV0 GIDX0 DEV1 GIDX1: RC between port 1 of DEV0 and of DEV1,
 * whose GIDs at those indices (RoCE v2, on the two ends of a wire) name
 * each other, with every PSN starting 40 short of 2^24: WRITEs, READs and
 * SENDs of 64 packets (path MTU 1024) each way, so that requests, READ
 * responses and ACKs carry PSNs across the wrap to 0, with the data of
 * each checked. Both devices are opened by this one process (the core
 * shares them with every namespace), so each side's memory is checked
 * directly. Prints one line per operation and exits 0 when all pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../loopback.h"

#define LEN	(64 * 1024)
#define ROUNDS	3
#define N_OPS	3	/* WRITE, READ, SEND */
/* 40 PSNs before the wrap: a 64-packet message crosses it at once. */
#define START_PSN	(0xffffff - 39)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	union ibv_gid gid;
	int sgid;
	/* [0] is sent or read from, [1] is written or received into. */
	unsigned char *buf;
};

static int side_open(struct side *s, const char *dev, int sgid)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ;

	s->sgid = sgid;
	s->ctx = rsoft_open(dev);
	if (!s->ctx || ibv_query_gid(s->ctx, 1, sgid, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 16, NULL, NULL, 0) : NULL;
	s->buf = calloc(2, LEN);
	if (!s->cq || !s->buf)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, 2 * LEN, access);
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = s->mr ? ibv_create_qp(s->pd, &init) : NULL;
	return s->qp ? 0 : -1;
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
}

/* Connects @from's QP to @to's: both directions start at START_PSN. */
static int side_connect(struct side *from, const struct side *to)
{
	struct rc_path p = {
		.av = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = to->gid, .sgid_index = from->sgid,
				 .hop_limit = 64 },
		},
		.mtu = IBV_MTU_1024, .dest_qpn = to->qp->qp_num,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.rnr_retry = 7, .timeout = 14, .retry_cnt = 7,
		.sq_psn = START_PSN, .rq_psn = START_PSN,
	};

	return rc_connect(from->qp, &p);
}

/* A pattern of its own for each operation and round. */
static void fill(unsigned char *p, int seed)
{
	for (int i = 0; i < LEN; i++)
		p[i] = (unsigned char)(i * 7 + seed * 131 + (i >> 10));
}

/* Waits for @cq's next completion: that of @wr_id, successful. */
static int completed(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	if (poll_wait(cq, &wc, 60) != 1) {
		printf("# no completion of wr %llu\n", (unsigned long long)wr_id);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id) {
		printf("# wr %llu: %s\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

/*
 * @op from @a to @b: a WRITE of a's [0] into b's [1], a READ of b's [0]
 * into a's [1], or a SEND of a's [0] into a receive of b's [1].
 */
static int one(struct side *a, struct side *b, enum ibv_wr_opcode op,
	       int seed)
{
	unsigned char *src = op == IBV_WR_RDMA_READ ? b->buf : a->buf;
	unsigned char *dst = op == IBV_WR_RDMA_READ ? a->buf + LEN :
			     b->buf + LEN;
	struct ibv_sge sge = { (uintptr_t)a->buf, LEN, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = seed, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge rsge = { (uintptr_t)(b->buf + LEN), LEN, b->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = seed, .sg_list = &rsge,
				   .num_sge = 1 }, *rbad;

	fill(src, seed);
	memset(dst, 0, LEN);
	if (op == IBV_WR_RDMA_READ) {
		sge.addr = (uintptr_t)(a->buf + LEN);
		wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
		wr.wr.rdma.rkey = b->mr->rkey;
	} else if (op == IBV_WR_RDMA_WRITE) {
		wr.wr.rdma.remote_addr = (uintptr_t)(b->buf + LEN);
		wr.wr.rdma.rkey = b->mr->rkey;
	} else if (ibv_post_recv(b->qp, &rwr, &rbad)) {
		return -1;
	}
	if (ibv_post_send(a->qp, &wr, &bad) || completed(a->cq, seed))
		return -1;
	if (op == IBV_WR_SEND && completed(b->cq, seed))
		return -1;
	return memcmp(src, dst, LEN) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct { enum ibv_wr_opcode op; const char *name; } ops[N_OPS] = {
		{ IBV_WR_RDMA_WRITE, "WRITE" },
		{ IBV_WR_RDMA_READ, "READ" },
		{ IBV_WR_SEND, "SEND" },
	};
	struct side s[2] = {};
	int failed = 0, seed = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV0 GIDX0 DEV1 GIDX1\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < 2; i++)
		if (side_open(&s[i], argv[1 + 2 * i], atoi(argv[2 + 2 * i]))) {
			printf("# %s: %m\n", argv[1 + 2 * i]);
			return 1;
		}
	if (side_connect(&s[0], &s[1]) || side_connect(&s[1], &s[0])) {
		printf("# connect: %m\n");
		return 1;
	}
	for (int r = 0; r < ROUNDS; r++)
		for (int d = 0; d < 2; d++)
			for (int o = 0; o < N_OPS; o++) {
				int bad = one(&s[d], &s[1 - d], ops[o].op, ++seed);

				printf("# %s %s -> %s, %d KiB: %s\n", ops[o].name,
				       argv[1 + 2 * d], argv[3 - 2 * d], LEN >> 10,
				       bad ? "FAILED" : "data intact");
				failed += bad != 0;
			}
	side_close(&s[1]);
	side_close(&s[0]);
	printf("# %d of %d operations failed\n", failed, seed);
	return failed != 0;
}
