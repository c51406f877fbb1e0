// SPDX-License-Identifier: GPL-2.0
/*
 * window DEV0 GIDX0 DEV1 GIDX1: RC between port 1 of DEV0 and of DEV1
 * (their GIDs at those indices name each other across a wire), each way,
 * in batches that take 32 PSNs each and are posted as one list: 32 SENDs,
 * 32 WRITEs, 8 READs of 4 packets and 32 fetch-and-adds on one word, with
 * 4 READs and atomics in flight. Every PSN starts at 2^24 - 32, so that
 * the last of each batch ends in 31 (mod 32): the test script drops every
 * ACK but those, and a requester that keeps one request in flight, or
 * does not take an ACK as answering every PSN before it (coalesced, IBA
 * 9.7.5.1.2), waits out its local ACK timeout (about 1 s) and fails. The
 * data of each batch is checked. Prints a line per batch and exits 0 when
 * all pass.
 *
 * window DEV0 GIDX0 DEV1 GIDX1 rnr: instead, each way, 32 SENDs posted as
 * one list while the responder has one receive; the other 31 are posted
 * 2 s later. Until then the second SEND is refused with an RNR NAK round
 * after round (rnr_retry 7: for ever), and in each round the SENDs after
 * it may bring a sequence-error NAK (rxe's responder sends one), which
 * the test script may hold back past the RNR timer's end. The requester
 * takes that NAK as the refusal's: it neither cuts the RNR wait short nor
 * spends retry_cnt, which would end in RETRY_EXC within eight rounds.
 * All 32 complete, data checked.
 *
 * window DEV0 GIDX0 DEV1 GIDX1 readgap: instead, DEV1 READs from DEV0 (8
 * READs of 4 packets, 4 in flight) with a local ACK timeout of 0, which
 * never runs out, while the test script drops every READ response MIDDLE
 * packet whose PSN is 1 (mod 4): each READ's second packet. The
 * requester asks again for that packet alone, once the READ's last
 * response packet came past the gap; the answer is one packet (ONLY from
 * rsoft, LAST from rxe's replay) and passes. A requester that waited for
 * a timeout (rxe's) never completes the last READ; one that asked for
 * the whole rest of the READ would have rxe's replay lead with a MIDDLE
 * packet at that PSN, dropped again every time. Data checked.
 *
 * window DEV0 GIDX0 DEV1 GIDX1 atomics: instead, only the 32
 * fetch-and-adds each way, while the test script loses answers to them:
 * an atomic whose answer was lost is asked for again after the atomics
 * behind it ran, and its responder answers with the original value it
 * kept for it, executing nothing twice (the words' values checked).
 *
 * window DEV0 GIDX0 DEV1 GIDX1 readgaplong: readgap, then one READ of 160
 * packets, of which the same filter drops 40. A requester notes at most
 * 128 packets past a gap: the last packets and the LAST one come past
 * what it can note, and a requester that asked for only the first gap
 * would never ask for the rest. For a responder that answers a READ
 * asked for from its middle with a FIRST packet (rsoft), not a MIDDLE
 * one (rxe).
 *
 * window DEV0 GIDX0 DEV1 GIDX1 readack: instead, DEV0 posts a READ of one
 * packet and two WRITEs after it as one list, while the test script
 * holds back the READ's response and the first WRITE: the second WRITE
 * comes first, and the responder NAKs the gap it leaves. The READ's data
 * and the WRITEs' are checked. A responder that also ACKed the PSN before
 * the gap, the READ's, had rxe's requester complete the READ with no
 * data; the test script counts such ACKs.
 */
#include <string.h>
#include <unistd.h>

#include "side.h"

#define START_PSN	0xffffe0
#define BATCH		32
#define SMALL		64		/* a SEND's or WRITE's bytes */
#define READ_LEN	4096		/* 4 packets at MTU 1024 */
#define READS		(BATCH * 1024 / READ_LEN)
/* 160 packets: more than the 128 PSNs a requester notes past a gap. */
#define LONG_READ	(160 * 1024)
/* The layout of each side's memory. */
#define SRC		0
#define DST		LONG_READ
#define WORD		(2 * LONG_READ)
#define OLD		(WORD + 4096)
#define MEM		(WORD + 8192)
#define N_OPS		4

/* A pattern of its own for each batch and WR. */
static void fill(unsigned char *p, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 13 + seed * 101 + (i >> 8));
}

/* Waits for @n completions on @cq, of wr_ids 0 to @n - 1 in order. */
static int all_completed(struct ibv_cq *cq, int n)
{
	for (int i = 0; i < n; i++)
		if (completed(cq, i))
			return -1;
	return 0;
}

/*
 * Posts @n WRs of opcode @op from @a to @b as one list, the i-th of @len
 * bytes at SRC + i * @len (DST + i * @len for a READ) against @b's at
 * DST + i * @len (SRC + i * @len for a READ), or 8 bytes at OLD + 8 * i
 * against @b's WORD for a fetch-and-add of 1.
 */
static int post(struct side *a, struct side *b, enum ibv_wr_opcode op,
		int n, size_t len)
{
	struct ibv_send_wr wr[BATCH] = {}, *bad;
	struct ibv_sge sge[BATCH];
	int read = op == IBV_WR_RDMA_READ, atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;

	for (int i = 0; i < n; i++) {
		size_t here = atomic ? OLD + 8u * i : (read ? DST : SRC) + i * len;
		size_t there = atomic ? WORD : (read ? SRC : DST) + i * len;

		sge[i] = (struct ibv_sge){ (uintptr_t)(a->buf + here),
					   atomic ? 8 : len, a->mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = op, .send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
		};
		if (atomic) {
			wr[i].wr.atomic.remote_addr = (uintptr_t)(b->buf + there);
			wr[i].wr.atomic.rkey = b->mr->rkey;
			wr[i].wr.atomic.compare_add = 1;
		} else if (op != IBV_WR_SEND) {
			wr[i].wr.rdma.remote_addr = (uintptr_t)(b->buf + there);
			wr[i].wr.rdma.rkey = b->mr->rkey;
		}
	}
	return ibv_post_send(a->qp, wr, &bad);
}

/* Posts receives @from to @to - 1 of @b, SMALL bytes at DST + i * SMALL. */
static int receives(struct side *b, int from, int to)
{
	struct ibv_recv_wr wr[BATCH] = {}, *bad;
	struct ibv_sge sge[BATCH];

	for (int i = from; i < to; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)(b->buf + DST + i * SMALL),
					   SMALL, b->mr->lkey };
		wr[i] = (struct ibv_recv_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.next = i + 1 < to ? &wr[i + 1] : NULL,
		};
	}
	return ibv_post_recv(b->qp, &wr[from], &bad);
}

/*
 * One batch of @n WRs of @op, @len bytes each (an atomic's 8), from @a to
 * @b, its data checked; 0 when it passed. A SEND's receives are all
 * posted first, or only one if @late (the rest 2 s after the SENDs).
 */
static int batch(struct side *a, struct side *b, enum ibv_wr_opcode op,
		 int n, size_t len, int seed, int late)
{
	int read = op == IBV_WR_RDMA_READ;
	unsigned char *src = (read ? b : a)->buf + SRC;
	unsigned char *dst = (read ? a : b)->buf + DST;

	memset(a->buf, 0, MEM);
	memset(b->buf, 0, MEM);
	fill(src, n * len, seed);
	if (op == IBV_WR_SEND && receives(b, 0, late ? 1 : n))
		return -1;
	if (post(a, b, op, n, len))
		return -1;
	if (late && (sleep(2) || receives(b, 1, n)))
		return -1;
	if (all_completed(a->cq, n))
		return -1;
	if (op == IBV_WR_SEND && all_completed(b->cq, n))
		return -1;
	if (op != IBV_WR_ATOMIC_FETCH_AND_ADD)
		return memcmp(src, dst, n * len) ? -1 : 0;
	/* Executed once each, in order: the i-th saw i. */
	for (int i = 0; i < n; i++) {
		uint64_t old;

		memcpy(&old, a->buf + OLD + 8 * i, 8);
		if (old != (uint64_t)i)
			return -1;
	}
	return *(uint64_t *)(b->buf + WORD) == BATCH ? 0 : -1;
}

/*
 * A READ of SMALL bytes from @b's SRC to @a's DST and two WRITEs of SMALL
 * bytes from @a's SRC + SMALL to @b's DST + SMALL, as one list; 0 when
 * all completed with their data.
 */
static int read_then_writes(struct side *a, struct side *b, int seed)
{
	struct ibv_send_wr wr[3] = {}, *bad;
	struct ibv_sge sge[3];

	memset(a->buf, 0, MEM);
	memset(b->buf, 0, MEM);
	fill(b->buf + SRC, SMALL, seed);
	fill(a->buf + SRC + SMALL, 2 * SMALL, seed + 1);
	for (int i = 0; i < 3; i++) {
		size_t here = (i ? SRC : DST) + i * SMALL;
		size_t there = (i ? DST : SRC) + i * SMALL;

		sge[i] = (struct ibv_sge){ (uintptr_t)(a->buf + here), SMALL,
					   a->mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = i ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i < 2 ? &wr[i + 1] : NULL,
		};
		wr[i].wr.rdma.remote_addr = (uintptr_t)(b->buf + there);
		wr[i].wr.rdma.rkey = b->mr->rkey;
	}
	if (ibv_post_send(a->qp, wr, &bad) || all_completed(a->cq, 3))
		return -1;
	if (memcmp(b->buf + SRC, a->buf + DST, SMALL))
		return -1;
	return memcmp(a->buf + SRC + SMALL, b->buf + DST + SMALL, 2 * SMALL) ? -1 : 0;
}

int main(int argc, char **argv)
{
	static const struct { enum ibv_wr_opcode op; const char *name; } ops[N_OPS] = {
		{ IBV_WR_SEND, "32 SENDs" },
		{ IBV_WR_RDMA_WRITE, "32 WRITEs" },
		{ IBV_WR_RDMA_READ, "8 READs of 4 packets" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, "32 fetch-and-adds" },
	};
	struct side s[2] = {};
	const char *mode = argc == 6 ? argv[5] : "";
	int rnr = !strcmp(mode, "rnr"), longread = !strcmp(mode, "readgaplong");
	int gap = longread || !strcmp(mode, "readgap");
	int atomics = !strcmp(mode, "atomics"), readack = !strcmp(mode, "readack");
	/* The ops run each way (from direction @from on), ops[@op, @end). */
	int from = gap, op = gap ? 2 : atomics ? 3 : 0;
	int end = rnr ? 1 : gap ? 3 : N_OPS;
	int failed = 0, seed = 0;

	if (argc == 6 && !rnr && !gap && !atomics && !readack) {
		fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
		return 1;
	}
	/*
	 * A local ACK timeout of 4.096 us << 18 (about 1 s), or none; 268 ms
	 * where answers are lost.
	 */
	if (sides_open(s, argc - (argc == 6), argv, MEM, BATCH, START_PSN, 4,
		       gap ? 0 : atomics ? 16 : 18))
		return 1;
	if (readack) {
		int bad = read_then_writes(&s[0], &s[1], ++seed);

		printf("# a READ and two WRITEs %s -> %s, one list, the first WRITE late: %s\n",
		       argv[1], argv[3], bad ? "FAILED" : "data intact");
		failed += bad != 0;
		from = 2;
	}
	for (int d = from; d < 2; d++)
		for (int o = op; o < end; o++) {
			int read = ops[o].op == IBV_WR_RDMA_READ;
			int bad = batch(&s[d], &s[1 - d], ops[o].op,
					read ? READS : BATCH,
					read ? READ_LEN : SMALL, ++seed, rnr);

			printf("# %s %s -> %s, one list%s: %s\n", ops[o].name,
			       argv[1 + 2 * d], argv[3 - 2 * d],
			       rnr ? ", 1 receive" :
			       gap ? ", second packets lost" :
			       atomics ? ", answers lost" : "",
			       bad ? "FAILED" : "data intact");
			failed += bad != 0;
		}
	if (longread) {
		int bad = batch(&s[1], &s[0], IBV_WR_RDMA_READ, 1, LONG_READ,
				++seed, 0);

		printf("# a READ of 160 packets %s -> %s, every fourth lost: %s\n",
		       argv[3], argv[1], bad ? "FAILED" : "data intact");
		failed += bad != 0;
	}
	side_close(&s[1]);
	side_close(&s[0]);
	printf("# %d of %d batches failed\n", failed, seed);
	return failed != 0;
}
