// SPDX-License-Identifier: GPL-2.0
/*
 * replies DEV GIDX SRC DST [SEED]: answers forged packet by packet (see
 * forge.h) at an rsoft QP of DEV as requester, which no verbs responder
 * sends. A READ's response packets are placed into the READ's buffers at
 * offsets their PSNs give, from a peer the requester cannot trust: none
 * may reach outside those buffers.
 *   - a READ of 3000 bytes answered as due (FIRST, MIDDLE, LAST): it
 *     completes with the data, and nothing else is written (the set-up);
 *   - 300 rounds from SEED (default: the time's), each a READ of 1 to
 *     4096 bytes or a compare-and-swap at a random place, answered by 1
 *     to 12 random packets near its PSNs (READ responses of any part and
 *     length, ACKs and NAKs, atomic ACKs, now and then any opcode), and
 *     in half the rounds then as due: no byte outside the WR's buffer
 *     changes, and the QP is in RTS or ERR; reset and connected again, it
 *     then completes a READ answered as due;
 *   - a READ whose MR goes after its first response packet, the MR's
 *     keys come back to another PD's page before the last: nothing is
 *     placed there, and the READ fails with LOC_PROT_ERR.
 * Prints one line per case and exits 0 when all pass.
 */
#include "forge.h"

#define READ_VA		0x7000000	/* the peer's memory: any address */
#define READ_RKEY	0x1234
#define MTU		1024

/*
 * Posts @op (READ or compare-and-swap) of @len bytes into @at of the QP's
 * memory, through the MR of @lkey.
 */
static int post(struct forge *f, enum ibv_wr_opcode op, size_t at, uint32_t len,
		uint32_t lkey)
{
	struct side *r = &f->r;
	struct ibv_sge sge = { (uintptr_t)r->buf + at, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = READ_VA;
		wr.wr.atomic.rkey = READ_RKEY;
		wr.wr.atomic.swap = 1;
	} else {
		wr.wr.rdma.remote_addr = READ_VA;
		wr.wr.rdma.rkey = READ_RKEY;
	}
	return ibv_post_send(r->qp, &wr, &bad);
}

/* Waits for the QP's request of @opcode; its PSN, or -1. */
static int64_t requested(struct forge *f, uint8_t opcode)
{
	uint8_t p[PKT_MAX];

	if (next_packet(f, 5000, p) < 0 || p[0] != opcode) {
		printf("# no request 0x%02x came\n", opcode);
		return -1;
	}
	return get24(p + 9);
}

/* An AETH: @syndrome, and MSN 0. */
static void put_aeth(uint8_t *p, uint8_t syndrome)
{
	p[0] = syndrome;
	put24(p + 1, 0);
}

/*
 * Answers the READ of @len bytes with PSN @psn as due, each packet's
 * bytes the packet's number plus @fill.
 */
static int respond(struct forge *f, uint32_t psn, uint32_t len, uint8_t fill)
{
	uint32_t packets = len ? (len + MTU - 1) / MTU : 1;
	uint8_t aeth[AETH_LEN];

	put_aeth(aeth, 0x1f);
	for (uint32_t i = 0; i < packets; i++) {
		uint8_t opcode = packets == 1 ? READ_RESPONSE_ONLY :
				 i == 0 ? READ_RESPONSE_FIRST :
				 i + 1 < packets ? READ_RESPONSE_MIDDLE :
				 READ_RESPONSE_LAST;
		uint32_t plen = i + 1 < packets ? MTU : len - i * MTU;

		if (send_packet(f, opcode, (psn + i) & 0xffffff, aeth,
				opcode == READ_RESPONSE_MIDDLE ? 0 : AETH_LEN,
				plen, fill + i))
			return -1;
	}
	return 0;
}

/* Whether the QP's next completion is wr 1's, with @status. */
static int completed_with(struct forge *f, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	if (poll_wait(f->r.cq, &wc, 10) != 1) {
		printf("# the READ did not complete\n");
		return -1;
	}
	if (wc.wr_id != 1 || wc.status != status) {
		printf("# wr %llu: %s\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

/* A READ of 3000 bytes at 8192, answered as due: placed, nothing else. */
static int read_as_due(struct forge *f)
{
	const size_t at = 8192;
	int64_t psn;

	memset(f->r.buf, 0x5a, LEN);
	if (post(f, IBV_WR_RDMA_READ, at, 3000, f->r.mr->lkey))
		return -1;
	psn = requested(f, READ_REQUEST);
	if (psn < 0 || respond(f, psn, 3000, 0x41) ||
	    completed_with(f, IBV_WC_SUCCESS))
		return -1;
	return holds(f, at, 1024, 0x41) || holds(f, at + 1024, 1024, 0x42) ||
	       holds(f, at + 2048, 952, 0x43) || holds(f, 0, at, 0x5a) ||
	       holds(f, at + 3000, LEN - at - 3000, 0x5a);
}

/* A random answer near the @packets PSNs from @psn. */
static int random_answer(struct forge *f, uint32_t psn, uint32_t packets)
{
	static const uint8_t answers[] = {
		READ_RESPONSE_FIRST, READ_RESPONSE_MIDDLE, READ_RESPONSE_LAST,
		READ_RESPONSE_ONLY, ACKNOWLEDGE, ATOMIC_ACKNOWLEDGE,
	};
	uint8_t ext[AETH_LEN + 8], opcode = answers[below(ARRAY_SIZE(answers))];
	uint32_t plen = below(4) ? MTU : below(MTU + 77), ext_len = AETH_LEN;

	for (size_t i = 0; i < sizeof(ext); i++)
		ext[i] = random();
	/* mostly an ACK's syndrome; else a NAK, an RNR NAK, anything */
	put_aeth(ext, below(4) ? 0x1f : random());
	if (!below(16))
		opcode = below(0x20);
	if (opcode == READ_RESPONSE_MIDDLE)
		ext_len = 0;
	if (opcode == ACKNOWLEDGE || opcode == ATOMIC_ACKNOWLEDGE) {
		ext_len = opcode == ACKNOWLEDGE ? AETH_LEN : AETH_LEN + 8;
		plen = below(8) ? 0 : below(64);
	}
	psn = (psn - 1 + below(packets + 3)) & 0xffffff;
	return send_packet(f, opcode, psn, ext, ext_len, plen, random());
}

/* Takes the QP's completions; the count. */
static int drain_cq(struct forge *f)
{
	struct ibv_wc wc;
	int n = 0;

	while (ibv_poll_cq(f->r.cq, 1, &wc) > 0)
		n++;
	return n;
}

static int random_answers(struct forge *f)
{
	const uint32_t rounds = 300, guard = 4096;
	struct ibv_async_event ev;
	uint32_t done = 0;
	int64_t psn;

	srandom(f->seed);
	for (uint32_t round = 0; round < rounds; round++) {
		int atomic = !below(4);
		uint32_t len = atomic ? 8 : 1 + below(4096);
		size_t at = guard + below(LEN - 2 * guard - len);
		uint32_t packets = atomic ? 1 : (len + MTU - 1) / MTU;

		if (atomic)
			at &= ~(size_t)7;
		memset(f->r.buf, 0x5a, LEN);
		if (post(f, atomic ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_RDMA_READ,
			 at, len, f->r.mr->lkey))
			return -1;
		psn = requested(f, atomic ? 0x13 : READ_REQUEST);
		if (psn < 0)
			return -1;
		for (uint32_t k = 1 + below(12); k > 0; k--)
			if (random_answer(f, psn, packets))
				return -1;
		if (!atomic && below(2) && respond(f, psn, len, random()))
			return -1;
		usleep(20000);
		drain_answers(f);
		done += drain_cq(f);
		while (!wait_async(f->r.ctx, &ev, 0))
			ibv_ack_async_event(&ev);
		if (holds(f, 0, at, 0x5a) || holds(f, at + len, LEN - at - len, 0x5a)) {
			printf("# round %u: %s of %u bytes at %zu\n", round,
			       atomic ? "compare-and-swap" : "READ", len, at);
			return -1;
		}
		if (qp_state(f->r.qp) != IBV_QPS_RTS && qp_state(f->r.qp) != IBV_QPS_ERR) {
			printf("# round %u: the QP is in state %d\n", round,
			       qp_state(f->r.qp));
			return -1;
		}
		if (set_qp_state(f->r.qp, IBV_QPS_RESET) || rc_connect(f->r.qp, &f->path))
			return -1;
		/* what it sent before the reset is not the next round's */
		drain_answers(f);
		drain_cq(f);
	}
	printf("# %u rounds, %u completions, seed %u\n", rounds, done, f->seed);
	return read_as_due(f);
}

/*
 * A READ of two packets into the last page of the QP's memory, an MR of
 * its own that goes once the first packet is placed: another PD
 * registers a page at the same address until the MR's keys come back.
 * The last packet is placed nowhere, and the READ fails.
 */
static int read_keys_back(struct forge *f)
{
	const size_t at = LEN - 4096;
	struct side *r = &f->r;
	struct ibv_mr *mr = ibv_reg_mr(r->pd, r->buf + at, 4096,
				       IBV_ACCESS_LOCAL_WRITE), *other_mr = NULL;
	unsigned char *other = aligned_alloc(4096, 4096);
	struct ibv_pd *other_pd = ibv_alloc_pd(r->ctx);
	uint8_t aeth[AETH_LEN];
	uint32_t lkey, rkey;
	struct ibv_wc wc;
	int64_t psn;
	int rc = -1, failed;

	/*
	 * A local ACK timeout of 17 s: at the default 67 ms, the READ asked
	 * for again would find the MR gone and fail before the keys came
	 * back, with nothing left to place the last packet in.
	 */
	f->path.timeout = 22;
	if (!mr || !other || !other_pd || set_qp_state(r->qp, IBV_QPS_RESET) ||
	    rc_connect(r->qp, &f->path))
		goto out;
	memset(other, 0, 4096);
	memset(r->buf, 0x5a, LEN);
	lkey = mr->lkey;
	rkey = mr->rkey;
	put_aeth(aeth, 0x1f);
	if (post(f, IBV_WR_RDMA_READ, at, 2 * MTU, lkey))
		goto out;
	psn = requested(f, READ_REQUEST);
	if (psn < 0 || send_packet(f, READ_RESPONSE_FIRST, psn, aeth, AETH_LEN,
				   MTU, 0x41))
		goto out;
	for (double end = mono_now() + 5; r->buf[at + MTU - 1] != 0x41;)
		if (mono_now() > end) {
			printf("# the first packet was not placed\n");
			goto out;
		}
	if (ibv_dereg_mr(mr))
		goto out;
	mr = NULL;
	other_mr = keys_back(other_pd, other, (uintptr_t)r->buf + at, lkey,
			     rkey, IBV_ACCESS_LOCAL_WRITE);
	if (!other_mr)
		goto out;
	if (ibv_poll_cq(r->cq, 1, &wc)) {
		printf("# the READ ended before the keys came back\n");
		goto out;
	}
	if (send_packet(f, READ_RESPONSE_LAST, (psn + 1) & 0xffffff, aeth,
			AETH_LEN, MTU, 0x42))
		goto out;
	failed = completed_with(f, IBV_WC_LOC_PROT_ERR);
	rc = zero_page(other) || failed || holds(f, at + MTU, 4096 - MTU, 0x5a);
out:
	keys_back_done(mr, other_mr, other_pd);
	free(other);
	return rc;
}

static const struct forged_case answered[] = {
	{ "a READ of 3000 bytes answered as due: placed, nothing else written",
	  read_as_due },
	{ "READs and atomics answered at random: no byte written outside their buffers",
	  random_answers },
	{ "a READ's MR goes mid-response, its keys come back to another PD: nothing placed there",
	  read_keys_back },
};

int main(int argc, char **argv)
{
	return forge_main(argc, argv, answered, ARRAY_SIZE(answered));
}
