// SPDX-License-Identifier: GPL-2.0
/*
 * misfit DEV0 GIDX0 DEV1 GIDX1: requests from port 1 of DEV0 to a QP of
 * DEV1 (path MTU 1024) that do not fit, across a wire whose netdevs take
 * 4096-byte packets (see side.h for the rest). Each case has QPs of its
 * own, and says what the requester's completion is, what becomes of the
 * responder's memory and receive, and how many of the packets DEV1 counts
 * as dropped (wire_receive_drops; of a refused RC message, those that
 * left before its NAK came back, at most):
 *   - a packet longer than the responder's path MTU is malformed to it
 *     (as rxe's rxe_resp_check_length() has it): cut at a path MTU of
 *     4096, an RC WRITE of one packet and an RC SEND of two fail with
 *     REM_INV_REQ_ERR (NAKed, not dropped) and neither writes memory nor
 *     takes the receive, which flushes as the responder ends (IBA's class
 *     C error, as rxe has it); a UC WRITE of one such packet is dropped;
 *   - UC loses a message that does not fit and goes on (IBA's class D1):
 *     a SEND of 4 packets into a 2048-byte receive (its third packet does
 *     not fit, the fourth has no message to go on), and a WRITE with
 *     immediate data of 4 packets whose last finds no receive (UC has no
 *     RNR NAK). Each UC QP then takes a 64-byte SEND whole, and nothing
 *     else completes (the SEND's receive, kept, serves it).
 * The same requests at the responder's MTU arrive whole, so that the
 * set-up itself is checked. Last, a long READ and then a WRITE with a bad
 * R_Key (see read_then_refused()). Prints one line per case and exits 0
 * when all pass.
 */
#include <arpa/inet.h>
#include <string.h>

#include "side.h"

#define LEN	8192
#define SHORT	64
#define FENCE	4096	/* where a fresh receive takes the next SEND */
/* 256 packets at path MTU 1024: more than the responder's worker sends a run */
#define LONG_READ	(256 * 1024)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* What a case leaves in the responder's memory. */
enum memory { ARRIVES, UNTOUCHED, PARTLY };

struct misfit {
	const char *name;
	int flags;		/* side_open()'s */
	enum ibv_wr_opcode op;
	uint32_t len;
	enum ibv_mtu mtu;	/* the requester's path MTU */
	uint32_t recv_len;	/* the receive posted first; 0: none */
	enum ibv_wc_status status;	/* the requester's completion */
	enum memory memory;
	int received;		/* the receive completes, successfully */
	int drops;		/* wire_receive_drops at DEV1; RC: at most */
};

static const struct misfit misfits[] = {
	{ "RC WRITE of 4096 bytes at path MTU 1024", 0, IBV_WR_RDMA_WRITE,
	  4096, IBV_MTU_1024, 0, IBV_WC_SUCCESS, ARRIVES, 0, 0 },
	{ "RC WRITE of one 4096-byte packet", 0, IBV_WR_RDMA_WRITE,
	  4096, IBV_MTU_4096, 0, IBV_WC_REM_INV_REQ_ERR, UNTOUCHED, 0, 0 },
	{ "RC SEND of 8192 bytes at path MTU 1024", 0, IBV_WR_SEND,
	  8192, IBV_MTU_1024, LEN, IBV_WC_SUCCESS, ARRIVES, 1, 0 },
	{ "RC SEND of 8192 bytes, its first packet 4096", 0, IBV_WR_SEND,
	  8192, IBV_MTU_4096, LEN, IBV_WC_REM_INV_REQ_ERR, UNTOUCHED, 0, 1 },
	{ "UC WRITE of 4096 bytes at path MTU 1024", SIDE_UC,
	  IBV_WR_RDMA_WRITE, 4096, IBV_MTU_1024, 0, IBV_WC_SUCCESS, ARRIVES,
	  0, 0 },
	{ "UC WRITE of one 4096-byte packet", SIDE_UC, IBV_WR_RDMA_WRITE,
	  4096, IBV_MTU_4096, 0, IBV_WC_SUCCESS, UNTOUCHED, 0, 1 },
	{ "UC SEND of 4096 bytes into a receive of 2048", SIDE_UC, IBV_WR_SEND,
	  4096, IBV_MTU_1024, 2048, IBV_WC_SUCCESS, PARTLY, 0, 2 },
	{ "UC WRITE with immediate data of 4096 bytes, no receive", SIDE_UC,
	  IBV_WR_RDMA_WRITE_WITH_IMM, 4096, IBV_MTU_1024, 0, IBV_WC_SUCCESS,
	  PARTLY, 0, 1 },
};

/* Posts a receive of @len bytes at @off of @b's memory. */
static int post_recv_at(struct side *b, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)b->buf + off, len, b->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(b->qp, &wr, &bad);
}

/* Sends @len bytes from the start of @a's memory as @op; its completion. */
static int send_len(struct side *a, const struct side *b,
		    enum ibv_wr_opcode op, uint32_t len, struct ibv_wc *wc)
{
	struct ibv_sge sge = { (uintptr_t)a->buf, len, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(7),
		.wr.rdma = { (uintptr_t)b->buf, b->mr->rkey },
	}, *bad;

	if (ibv_post_send(a->qp, &wr, &bad) || poll_wait(a->cq, wc, 60) != 1)
		return -1;
	return 0;
}

/* Whether @n bytes at @p are all zero. */
static int zero(const unsigned char *p, size_t n)
{
	return !p[0] && !memcmp(p, p + 1, n - 1);
}

/*
 * Whether @a's UC QP sends a SEND of SHORT bytes whole to @b's, into the
 * receive its last message left (@kept) or a fresh one at FENCE, and
 * nothing else completes at @b: UC answers nothing, so this shows that
 * the QP went on and that the message before is done with.
 */
static int next_send_whole(struct side *a, struct side *b, int kept)
{
	unsigned char *dst = b->buf + (kept ? 0 : FENCE);
	struct ibv_wc wc;

	if ((!kept && post_recv_at(b, FENCE, SHORT)) ||
	    send_len(a, b, IBV_WR_SEND, SHORT, &wc) ||
	    wc.status != IBV_WC_SUCCESS || poll_wait(b->cq, &wc, 10) != 1 ||
	    wc.status != IBV_WC_SUCCESS || wc.byte_len != SHORT ||
	    memcmp(a->buf, dst, SHORT))
		return -1;
	return ibv_poll_cq(b->cq, 1, &wc);
}

/*
 * Whether @b's RC QP ended, as a responder that refused a request does
 * (see side_ended()), and flushes the receive it did not take (@posted).
 */
static int responder_ended(struct side *b, int posted,
			   enum ibv_event_type why_due)
{
	struct ibv_wc wc;

	if (side_ended(b, why_due) ||
	    (posted && (poll_wait(b->cq, &wc, 10) != 1 ||
			wc.status != IBV_WC_WR_FLUSH_ERR)))
		return -1;
	return ibv_poll_cq(b->cq, 1, &wc);
}

/* Runs @c on fresh QPs of the devices @argv names; 0 when it passes. */
static int run(const struct misfit *c, char **argv)
{
	struct side s[2] = {};
	struct side *a = &s[0], *b = &s[1];
	long long drops = -1;
	struct ibv_wc wc;
	int rc = -1, got;

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
	for (uint32_t i = 0; i < LEN; i++)
		a->buf[i] = (unsigned char)(i * 7 + 1);
	drops = port_counter(b->ctx, "wire_receive_drops");
	if ((c->recv_len && post_recv_at(b, 0, c->recv_len)) ||
	    send_len(a, b, c->op, c->len, &wc)) {
		printf("# %s: no completion\n", c->name);
		goto out;
	}
	if (wc.status != c->status) {
		printf("# %s: completed %s, not %s\n", c->name,
		       ibv_wc_status_str(wc.status),
		       ibv_wc_status_str(c->status));
		goto out;
	}
	if (c->flags & SIDE_UC) {
		if (next_send_whole(a, b, c->recv_len != 0)) {
			printf("# %s: the next SEND did not arrive alone and whole\n",
			       c->name);
			goto out;
		}
	} else if (c->status != IBV_WC_SUCCESS) {
		if (responder_ended(b, c->recv_len != 0, IBV_EVENT_QP_REQ_ERR)) {
			printf("# %s: the responder did not end\n", c->name);
			goto out;
		}
	} else {
		/* The responder completes its receive before it answers. */
		got = ibv_poll_cq(b->cq, 1, &wc);
		if (got != c->received ||
		    (got && (wc.status != IBV_WC_SUCCESS || wc.byte_len != c->len))) {
			printf("# %s: the receive %s\n", c->name,
			       c->received ? "did not complete whole" : "completed");
			goto out;
		}
	}
	if ((c->memory == ARRIVES && memcmp(a->buf, b->buf, c->len)) ||
	    (c->memory == UNTOUCHED && !zero(b->buf, c->len))) {
		printf("# %s: the responder's memory %s\n", c->name,
		       c->memory == ARRIVES ? "lacks the data" : "was written");
		goto out;
	}
	/* (Each packet sent was taken by now: answered, or fenced on UC.) */
	/*
	 * The packets of a refused RC message that left before its NAK came
	 * back find the responder in ERR, and are dropped.
	 */
	drops = port_counter(b->ctx, "wire_receive_drops") - drops;
	if (c->flags & SIDE_UC ? drops != c->drops : drops > c->drops) {
		printf("# %s: %lld packets dropped, not %d\n", c->name, drops,
		       c->drops);
		goto out;
	}
	rc = 0;
out:
	side_close(b);
	side_close(a);
	return rc;
}

/*
 * A READ of LONG_READ bytes, whose responses wait in the responder's queue
 * of answers (more than a softirq sends, or its worker in one run, so that
 * the WRITE is judged while they wait), then, in the same list, a WRITE
 * with a bad R_Key, whose NAK ends the responder behind them: the READ
 * completes with its data and the WRITE with REM_ACCESS_ERR (had the
 * responder dropped what it queued as it ended, the READ would retry into
 * a QP in ERR, to RETRY_EXC_ERR). 0 when that holds.
 */
static int read_then_refused(char **argv)
{
	struct side s[2] = {};
	struct side *a = &s[0], *b = &s[1];
	struct ibv_sge sge[2];
	struct ibv_send_wr wr[2] = {}, *bad;
	struct ibv_wc wc[2];
	int rc = -1, n = 0;

	for (int i = 0; i < 2; i++)
		if (side_open(&s[i], argv[1 + 2 * i], atoi(argv[2 + 2 * i]),
			      2 * LONG_READ, 4, 0))
			goto out;
	if (side_connect(a, b, 0, 1, 14) || side_connect(b, a, 0, 1, 14))
		goto out;
	for (uint32_t i = 0; i < LONG_READ; i++)
		b->buf[i] = (unsigned char)(i * 5 + 3);
	for (int i = 0; i < 2; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)a->buf + i * LONG_READ,
					   i ? SHORT : LONG_READ, a->mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = 1 + i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = i ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)b->buf, b->mr->rkey + (i << 8) },
			.next = i ? NULL : &wr[1],
		};
	}
	if (ibv_post_send(a->qp, wr, &bad))
		goto out;
	while (n < 2 && poll_wait(a->cq, &wc[n], 60) == 1)
		n++;
	if (n < 2 || wc[0].wr_id != 1 || wc[0].status != IBV_WC_SUCCESS ||
	    memcmp(a->buf, b->buf, LONG_READ) || wc[1].wr_id != 2 ||
	    wc[1].status != IBV_WC_REM_ACCESS_ERR) {
		printf("# READ then refused WRITE: %d completions, %s and %s\n",
		       n, n > 0 ? ibv_wc_status_str(wc[0].status) : "-",
		       n > 1 ? ibv_wc_status_str(wc[1].status) : "-");
		goto out;
	}
	rc = responder_ended(b, 0, IBV_EVENT_QP_ACCESS_ERR);
	if (rc)
		printf("# READ then refused WRITE: the responder did not end\n");
out:
	side_close(b);
	side_close(a);
	return rc;
}

int main(int argc, char **argv)
{
	int failed = 0, rc;

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV0 GIDX0 DEV1 GIDX1\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(misfits); i++) {
		const char *verdict = misfits[i].memory == ARRIVES ?
				      "data intact" : "refused";
		rc = run(&misfits[i], argv);

		printf("# %s: %s\n", misfits[i].name, rc ? "FAILED" : verdict);
		failed |= rc;
	}
	rc = read_then_refused(argv);
	printf("# a long READ, then a WRITE refused: %s\n",
	       rc ? "FAILED" : "both complete as due");
	failed |= rc;
	return failed ? 1 : 0;
}
