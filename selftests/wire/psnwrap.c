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
#include <string.h>

#include "side.h"

#define LEN	(64 * 1024)
#define ROUNDS	3
#define N_OPS	3	/* WRITE, READ, SEND */
/* 40 PSNs before the wrap: a 64-packet message crosses it at once. */
#define START_PSN	(0xffffff - 39)

/* A pattern of its own for each operation and round. */
static void fill(unsigned char *p, int seed)
{
	for (int i = 0; i < LEN; i++)
		p[i] = (unsigned char)(i * 7 + seed * 131 + (i >> 10));
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

	if (sides_open(s, argc, argv, 2 * LEN, 8, START_PSN, 1, 14))
		return 1;
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
