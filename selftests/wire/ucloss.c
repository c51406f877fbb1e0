// SPDX-License-Identifier: GPL-2.0
/*
 * ucloss DEV0 GIDX0 DEV1 GIDX1 [srq]: UC from port 1 of DEV0 to port 1 of
 * DEV1 (their GIDs at those indices name each other across a wire), path
 * MTU 1024: 32 SENDs with immediate data of 4 packets each, posted as one
 * list from PSN 2^24 - 32, while the test script loses the second packet
 * (a SEND_MIDDLE, PSN 1 mod 16) of every fourth message and the last one
 * (a SEND_LAST_WITH_IMMEDIATE, PSN 7 mod 16) of the message after it;
 * then 16 SENDs of one packet each. A UC message that lost a packet is
 * lost, but only it: the QP stays ready, and the receive the message had
 * taken serves the next message (IBA's class D1), so that the 32 receives
 * complete in order, all successful, with the 16 whole messages and the
 * 16 short ones, each one's data checked. Then one more message of 4
 * packets, which loses its second, and a WRITE: the message's receive,
 * kept, is completed by a flush (the QP moved to ERR). With srq, the
 * receives come from an SRQ, which cannot take one back: each of the 17
 * messages lost completes its receive with REM_INV_REQ_ERR and the QP
 * goes on (class E). Prints what failed and exits 0 when all passed.
 */
#include <arpa/inet.h>
#include <string.h>

#include "side.h"

#define START_PSN	0xffffe0
#define MSGS		32
#define LEN		4096		/* 4 packets at MTU 1024 */
#define SHORTS		16
#define SHORT_LEN	64
#define SENT		(MSGS + SHORTS)
/* The last message, of 4 packets, which loses its second. */
#define TAIL		SENT
/*
 * Each SEND's data at SRC + i * LEN, each receive's at DST + i * LEN; the
 * WRITE's at WRITTEN.
 */
#define SRC		0
#define DST		((TAIL + 1) * LEN)
#define WRITTEN		(2 * DST)
#define MEM		(WRITTEN + 4096)

/* A pattern of its own for each message. */
static void fill(unsigned char *p, size_t len, int seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 11 + seed * 37 + (i >> 9));
}

/* Whether the script's filter loses a packet of message @i. */
static int lost(int i)
{
	return (i < MSGS && i % 4 < 2) || i == TAIL;
}

/* The length of message @i. */
static size_t len_of(int i)
{
	return i < MSGS || i == TAIL ? LEN : SHORT_LEN;
}

/* Posts the SENDs of messages [@from, @to) from @a as one list. */
static int post_sends(struct side *a, int from, int to)
{
	struct ibv_send_wr wr[MSGS] = {}, *bad;
	struct ibv_sge sge[MSGS];

	for (int i = from; i < to; i++) {
		int k = i - from;

		fill(a->buf + SRC + (size_t)i * LEN, LEN, i);
		sge[k] = (struct ibv_sge){ (uintptr_t)(a->buf + SRC + (size_t)i * LEN),
					   len_of(i), a->mr->lkey };
		wr[k] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[k], .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(i),
			.send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < to ? &wr[k + 1] : NULL,
		};
	}
	return ibv_post_send(a->qp, wr, &bad);
}

/* Posts receives of LEN bytes to @b, of wr_ids @from to @to - 1. */
static int post_recvs(struct side *b, int from, int to)
{
	for (int i = from; i < to; i++) {
		struct ibv_sge sge = { (uintptr_t)(b->buf + DST + (size_t)i * LEN),
				       LEN, b->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (b->srq ? ibv_post_srq_recv(b->srq, &wr, &bad) :
			     ibv_post_recv(b->qp, &wr, &bad))
			return -1;
	}
	return 0;
}

/* Waits for the sender's completions of messages [@from, @to). */
static int sent(struct side *a, int from, int to)
{
	for (int i = from; i < to; i++)
		if (completed(a->cq, i))
			return -1;
	return 0;
}

/*
 * Checks @b's receive completions: the @n receives complete in order;
 * each successful one holds the next message not lost, whole; with an
 * SRQ, a message lost completes its receive with REM_INV_REQ_ERR.
 */
static int received(struct side *b, int n)
{
	unsigned char want[LEN];
	int next = 0, bad = 0;

	for (int k = 0; k < n && !bad; k++) {
		struct ibv_wc wc;
		uint32_t len;

		if (poll_wait(b->cq, &wc, 60) != 1) {
			printf("# receive %d: no completion\n", k);
			return -1;
		}
		if (wc.wr_id != (uint64_t)k) {
			printf("# receive %d: wr %llu completed instead\n", k,
			       (unsigned long long)wc.wr_id);
			return -1;
		}
		if (b->srq && next < MSGS && lost(next)) {
			if (wc.status != IBV_WC_REM_INV_REQ_ERR) {
				printf("# receive %d (message %d, lost): %s\n",
				       k, next, ibv_wc_status_str(wc.status));
				bad = 1;
			}
			next++;
			continue;
		}
		while (!b->srq && lost(next))
			next++;
		len = len_of(next);
		fill(want, len, next);
		if (wc.status != IBV_WC_SUCCESS) {
			printf("# receive %d (message %d): %s\n", k, next,
			       ibv_wc_status_str(wc.status));
			bad = 1;
		} else if (!(wc.wc_flags & IBV_WC_WITH_IMM) ||
			   ntohl(wc.imm_data) != (uint32_t)next ||
			   wc.byte_len != len ||
			   memcmp(b->buf + DST + (size_t)k * LEN, want, len)) {
			printf("# receive %d: not message %d whole (imm %u, %u bytes)\n",
			       k, next, ntohl(wc.imm_data), wc.byte_len);
			bad = 1;
		}
		next++;
	}
	return bad ? -1 : 0;
}

/*
 * Message TAIL, which loses its second packet, into @b's receive @k,
 * then a WRITE, which ends the message. Without an SRQ, the receive is
 * kept, and a flush completes it; an SRQ's completes with REM_INV_REQ_ERR.
 */
static int last_lost(struct side *a, struct side *b, int k)
{
	struct ibv_sge sge = { (uintptr_t)(a->buf + SRC), SHORT_LEN, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = TAIL + 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)(b->buf + WRITTEN), b->mr->rkey },
	}, *bad;
	enum ibv_wc_status want = b->srq ? IBV_WC_REM_INV_REQ_ERR :
					   IBV_WC_WR_FLUSH_ERR;
	struct ibv_wc wc;
	int written = 0;

	if (post_recvs(b, k, k + 1) || post_sends(a, TAIL, TAIL + 1) ||
	    sent(a, TAIL, TAIL + 1) || ibv_post_send(a->qp, &wr, &bad) ||
	    completed(a->cq, TAIL + 1)) {
		printf("# message %d: posting or sending failed\n", TAIL);
		return -1;
	}
	for (int i = 0; i < 5000 && !written; i++) {
		written = !memcmp(b->buf + WRITTEN, a->buf + SRC, SHORT_LEN);
		usleep(1000);
	}
	if (!written) {
		printf("# message %d: the WRITE after it did not arrive\n", TAIL);
		return -1;
	}
	if (!b->srq) {
		if (poll_wait(b->cq, &wc, 0.2) != 0) {
			printf("# message %d: receive %llu completed: %s\n",
			       TAIL, (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
			return -1;
		}
		if (set_qp_state(b->qp, IBV_QPS_ERR))
			return -1;
	}
	if (poll_wait(b->cq, &wc, 5) != 1) {
		printf("# message %d: receive %d never completed\n", TAIL, k);
		return -1;
	}
	if (wc.wr_id != (uint64_t)k || wc.status != want) {
		printf("# message %d: receive %llu: %s, not %d: %s\n",
		       TAIL, (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), k,
		       ibv_wc_status_str(want));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int srq = argc == 6 && !strcmp(argv[5], "srq");
	/* Without an SRQ, the lost messages' receives serve later ones. */
	int recvs = srq ? SENT : SENT - MSGS / 2;
	struct side s[2] = {};
	int bad = -1;

	if (argc != 5 && !srq) {
		fprintf(stderr, "usage: %s DEV0 GIDX0 DEV1 GIDX1 [srq]\n", argv[0]);
		return 1;
	}
	for (int i = 0; i < 2; i++)
		if (side_open(&s[i], argv[1 + 2 * i], atoi(argv[2 + 2 * i]), MEM,
			      SENT + 2, SIDE_UC | (i && srq ? SIDE_SRQ : 0))) {
			printf("# %s: %m\n", argv[1 + 2 * i]);
			goto out;
		}
	if (side_connect(&s[0], &s[1], START_PSN, 0, 0) ||
	    side_connect(&s[1], &s[0], START_PSN, 0, 0)) {
		printf("# connect: %m\n");
		goto out;
	}
	if (post_recvs(&s[1], 0, recvs) || post_sends(&s[0], 0, MSGS) ||
	    sent(&s[0], 0, MSGS) || post_sends(&s[0], MSGS, SENT) ||
	    sent(&s[0], MSGS, SENT)) {
		printf("# posting or sending failed\n");
		goto out;
	}
	bad = received(&s[1], recvs);
	if (!bad && qp_state(s[1].qp) != IBV_QPS_RTS) {
		printf("# %s's QP left RTS\n", argv[3]);
		bad = -1;
	}
	if (!bad)
		bad = last_lost(&s[0], &s[1], recvs);
	if (!bad && srq && qp_state(s[1].qp) != IBV_QPS_RTS) {
		printf("# %s's QP left RTS\n", argv[3]);
		bad = -1;
	}
	printf("# %d UC SENDs %s -> %s%s, 17 lost: %s\n", SENT + 1, argv[1],
	       argv[3], srq ? " (SRQ)" : "", bad ? "FAILED" : "the rest's data intact");
out:
	side_close(&s[1]);
	side_close(&s[0]);
	return bad != 0;
}
