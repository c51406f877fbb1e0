// SPDX-License-Identifier: GPL-2.0
/*
 * pmtu DEV0 GIDX0 DEV1 GIDX1: requests from port 1 of DEV0, cut at a path
 * MTU of 4096, to a QP of DEV1 whose path MTU is 1024, across a wire whose
 * netdevs take 4096-byte packets (see side.h for the rest). To the
 * responder a packet longer than its path MTU is malformed (IBA 9.7.6.1.2,
 * as rxe checks it):
 *   - an RC WRITE of one 4096-byte packet and an RC SEND of 8192 bytes
 *     (its first packet 4096) fail at the requester with REM_INV_REQ_ERR;
 *     neither writes the responder's memory, and the SEND's receive is not
 *     taken (no completion);
 *   - a UC WRITE of one such packet completes at the requester (UC hears
 *     nothing) and is dropped: the responder's memory stays as it was.
 * The same requests with the requester's path MTU 1024 arrive whole, so
 * that the set-up itself is checked. Each case has QPs of its own. Prints
 * one line per case and exits 0 when all pass.
 */
#include <string.h>
#include <unistd.h>

#include "side.h"

#define LEN	8192
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct pmtu_case {
	const char *name;
	int flags;		/* side_open()'s */
	enum ibv_wr_opcode op;
	uint32_t len;
	enum ibv_mtu mtu;	/* the requester's path MTU */
	/* The requester's completion; whether the data arrives. */
	enum ibv_wc_status status;
	int arrives;
};

static const struct pmtu_case pmtu_cases[] = {
	{ "RC WRITE of 4096 bytes at path MTU 1024", 0, IBV_WR_RDMA_WRITE,
	  4096, IBV_MTU_1024, IBV_WC_SUCCESS, 1 },
	{ "RC WRITE of one 4096-byte packet", 0, IBV_WR_RDMA_WRITE,
	  4096, IBV_MTU_4096, IBV_WC_REM_INV_REQ_ERR, 0 },
	{ "RC SEND of 8192 bytes at path MTU 1024", 0, IBV_WR_SEND,
	  8192, IBV_MTU_1024, IBV_WC_SUCCESS, 1 },
	{ "RC SEND of 8192 bytes, its first packet 4096", 0, IBV_WR_SEND,
	  8192, IBV_MTU_4096, IBV_WC_REM_INV_REQ_ERR, 0 },
	{ "UC WRITE of 4096 bytes at path MTU 1024", SIDE_UC,
	  IBV_WR_RDMA_WRITE, 4096, IBV_MTU_1024, IBV_WC_SUCCESS, 1 },
	{ "UC WRITE of one 4096-byte packet", SIDE_UC, IBV_WR_RDMA_WRITE,
	  4096, IBV_MTU_4096, IBV_WC_SUCCESS, 0 },
};

/* Runs @c on fresh QPs of the devices @argv names; 0 when it passes. */
static int run(const struct pmtu_case *c, char **argv)
{
	struct side s[2] = {};
	struct side *a = &s[0], *b = &s[1];
	struct ibv_sge sge = { 0, c->len, 0 };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = c->op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_sge rsge = { 0, LEN, 0 };
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = &rsge,
				   .num_sge = 1 }, *rbad;
	struct ibv_wc wc;
	int rc = -1;

	for (int i = 0; i < 2; i++)
		if (side_open(&s[i], argv[1 + 2 * i], atoi(argv[2 + 2 * i]),
			      LEN, 4, c->flags)) {
			printf("# %s: %m\n", argv[1 + 2 * i]);
			goto out;
		}
	if (side_connect_mtu(a, b, 0, 0, 14, c->mtu) ||
	    side_connect_mtu(b, a, 0, 0, 14, IBV_MTU_1024)) {
		printf("# connect: %m\n");
		goto out;
	}
	for (uint32_t i = 0; i < c->len; i++)
		a->buf[i] = (unsigned char)(i * 7 + 1);
	sge.addr = (uintptr_t)a->buf;
	sge.lkey = a->mr->lkey;
	rsge.addr = (uintptr_t)b->buf;
	rsge.lkey = b->mr->lkey;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (c->op == IBV_WR_SEND && ibv_post_recv(b->qp, &rwr, &rbad))
		goto out;
	if (ibv_post_send(a->qp, &wr, &bad) || poll_wait(a->cq, &wc, 60) != 1) {
		printf("# %s: no completion\n", c->name);
		goto out;
	}
	if (wc.status != c->status) {
		printf("# %s: completed %s, not %s\n", c->name,
		       ibv_wc_status_str(wc.status),
		       ibv_wc_status_str(c->status));
		goto out;
	}
	/* The responder completes its receive before it answers. */
	if (c->op == IBV_WR_SEND && ibv_poll_cq(b->cq, 1, &wc) != c->arrives) {
		printf("# %s: the receive %s\n", c->name,
		       c->arrives ? "did not complete" : "was taken");
		goto out;
	}
	if (!c->arrives && c->flags & SIDE_UC)
		usleep(100000);	/* (what nothing answers may still be on its way) */
	/* (Refused, b's memory is still all zero.) */
	if (c->arrives ? memcmp(a->buf, b->buf, c->len) :
	    memcmp(b->buf, b->buf + 1, LEN - 1) || b->buf[0]) {
		printf("# %s: the responder's memory %s\n", c->name,
		       c->arrives ? "lacks the data" : "was written");
		goto out;
	}
	rc = 0;
out:
	side_close(b);
	side_close(a);
	return rc;
}

int main(int argc, char **argv)
{
	int failed = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV0 GIDX0 DEV1 GIDX1\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(pmtu_cases); i++) {
		const char *verdict = pmtu_cases[i].arrives ? "data intact" : "refused";
		int rc = run(&pmtu_cases[i], argv);

		printf("# %s: %s\n", pmtu_cases[i].name, rc ? "FAILED" : verdict);
		failed |= rc;
	}
	return failed ? 1 : 0;
}
