// SPDX-License-Identifier: GPL-2.0
/*
 * forge DEV GIDX SRC DST [SEED]: RC requests forged packet by packet (see
 * forge.h), in orders and sizes that no verbs requester sends, at QPs of
 * DEV. Each asks an ACK, and each case checks the answers (ACK or NAK,
 * and the PSN), the responder's memory and receives, its state and its
 * affiliated events. Each request here that the responder refuses is
 * malformed or out of order, or names memory the requester may not
 * write: IBA's responder class C (an Invalid Request or Remote Access
 * NAK, the QP in ERR), or class A for a receive whose MR went (a Remote
 * Operational NAK), as rxe has them:
 *   - a WRITE and a SEND of one packet each: ACKed and placed (the
 *     set-up itself);
 *   - a SEND of one packet, a WRITE's first packet or a READ after a
 *     SEND's first packet, and a WRITE or a SEND of one packet after a
 *     WRITE's first (rxe's MISSING_OPCODE_LAST_C): NAKed; the first
 *     message's receive fails, the second is not placed; on an SRQ the
 *     QP then says it took its last receive; on UC, which answers
 *     nothing, the first message is lost and the second taken;
 *   - on an SRQ, a SEND's first packet, then the QP moved to ERR behind
 *     200 sends: Last WQE Reached comes after the held receive's flush;
 *   - a WRITE's middle packet with no first one (MISSING_OPCODE_FIRST);
 *   - a middle packet shorter than the path MTU, and a last one longer
 *     (rxe_resp_check_length()): nothing of it placed; sent again, as if
 *     the NAK was lost, it finds the QP in ERR and gets no answer;
 *   - a READ and a WRITE whose RETH length is above the port's
 *     max_msg_sz: NAKed, nothing read or written;
 *   - a WRITE whose MR is deregistered after its first packet: its last
 *     is NAKed with Remote Access and placed nowhere; and again, a WRITE
 *     and a SEND, with the MR's keys come back to another PD's MR at the
 *     same address before the last packet: nothing placed there;
 *   - a READ of 256 MiB whose MR goes while its response streams, and
 *     whose keys come back to another PD's memory at the same address:
 *     none of that memory leaves;
 *   - 4000 random requests from SEED (default: the time's), valid but for
 *     one in 32, at QPs that may write only the middle of their memory:
 *     nothing outside it is written, and the QP works afterwards.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "forge.h"

#define RECV_AT		32768	/* where the responder's receives go */
#define RECV_LEN	4096

/* A request: its opcode, a RETH if @mr, and @plen bytes of @fill. */
struct request {
	uint8_t opcode;
	const struct ibv_mr *mr;	/* the RETH names @offset of it */
	uint8_t reth;			/* (or, with no @mr, of the QP's MR), */
	uint32_t offset;
	uint32_t dma_len;		/* and this length */
	uint32_t plen;
	uint8_t fill;
};

/* Sends @r to the responder with PSN @psn; 0, or -1 on a socket error. */
static int send_request(struct forge *f, uint32_t psn, const struct request *r)
{
	const struct ibv_mr *mr = r->mr ?: r->reth ? f->r.mr : NULL;
	uint8_t reth[RETH_LEN];

	if (mr)
		put_reth(reth, (uintptr_t)mr->addr + r->offset, mr->rkey,
			 r->dma_len);
	return send_packet(f, r->opcode, psn, reth, mr ? RETH_LEN : 0,
			   r->plen, r->fill);
}

/* An answer to the requester: its opcode, PSN and AETH syndrome. */
struct answer {
	uint8_t opcode, syndrome;
	uint32_t psn;
};

/* Waits up to @ms ms for the next answer to the case's requester. */
static int next_answer(struct forge *f, int ms, struct answer *a)
{
	uint8_t p[PKT_MAX];

	if (next_packet(f, ms, p) < BTH_LEN + AETH_LEN + ICRC_LEN)
		return -1;
	a->opcode = p[0];
	a->psn = get24(p + 9);
	a->syndrome = p[BTH_LEN];
	return 0;
}

/*
 * Sends @r with the next PSN, and checks its answer: an ACK (@syndrome
 * ACK) or the NAK @syndrome, of that PSN.
 */
static int step(struct forge *f, const struct request *r, uint8_t syndrome,
		const char *what)
{
	uint32_t psn = f->psn;
	struct answer a;

	f->psn = (f->psn + 1) & 0xffffff;
	if (send_request(f, psn, r)) {
		printf("# %s: sendto: %m\n", what);
		return -1;
	}
	if (next_answer(f, 5000, &a)) {
		printf("# %s: no answer\n", what);
		return -1;
	}
	if (a.opcode != ACKNOWLEDGE || a.psn != psn ||
	    (syndrome == ACK ? a.syndrome >> 5 != 0 : a.syndrome != syndrome)) {
		printf("# %s: opcode 0x%02x, syndrome 0x%02x, PSN 0x%06x; not syndrome 0x%02x, PSN 0x%06x\n",
		       what, a.opcode, a.syndrome, a.psn, syndrome, psn);
		return -1;
	}
	return 0;
}

/*
 * Sends @r again with the PSN of the last request, as a requester whose
 * NAK was lost does: a QP in ERR drops it (its port counts the drop) and
 * answers nothing.
 */
static int unanswered(struct forge *f, const struct request *r)
{
	long long drops = port_counter(f->r.ctx, "wire_receive_drops");
	double end = mono_now() + 5;
	struct answer a;

	if (send_request(f, (f->psn - 1) & 0xffffff, r))
		return -1;
	while (port_counter(f->r.ctx, "wire_receive_drops") <= drops)
		if (mono_now() > end) {
			printf("# sent again: not counted as dropped\n");
			return -1;
		}
	if (!next_answer(f, 100, &a)) {
		printf("# sent again: answered, syndrome 0x%02x\n", a.syndrome);
		return -1;
	}
	return 0;
}

/* Posts receive @wr_id (to the SRQ, if any): RECV_LEN bytes after RECV_AT. */
static int post_recv_n(struct forge *f, uint64_t wr_id)
{
	struct side *r = &f->r;
	struct ibv_sge sge = { (uintptr_t)r->buf + RECV_AT + (wr_id - 1) * RECV_LEN,
			       RECV_LEN, r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
			   *bad;
	int rc = r->srq ? ibv_post_srq_recv(r->srq, &wr, &bad) :
			  ibv_post_recv(r->qp, &wr, &bad);

	if (rc)
		printf("# post receive %llu: %s\n", (unsigned long long)wr_id,
		       strerror(rc));
	return rc;
}

/* Whether the next completion is receive @wr_id's, with @status. */
static int received(struct forge *f, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	if (poll_wait(f->r.cq, &wc, 10) != 1) {
		printf("# receive %llu did not complete\n", (unsigned long long)wr_id);
		return -1;
	}
	if (wc.wr_id != wr_id || wc.status != status) {
		printf("# receive %llu: %s; not receive %llu, %s\n",
		       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		       (unsigned long long)wr_id, ibv_wc_status_str(status));
		return -1;
	}
	return 0;
}

/* Whether the QP is in RTS. */
static int ready(struct forge *f)
{
	if (qp_state(f->r.qp) == IBV_QPS_RTS)
		return 0;
	printf("# the QP is not in RTS\n");
	return -1;
}

/*
 * A WRITE of one packet at the start of @mr (at @at of the responder's
 * memory) and a SEND of one packet: ACKed and placed.
 */
static int one_packet_each(struct forge *f, const struct ibv_mr *mr, size_t at)
{
	const struct request wr = { .opcode = WRITE_ONLY, .mr = mr, .dma_len = 64,
				    .plen = 64, .fill = 0x11 },
			     sd = { .opcode = SEND_ONLY, .plen = 64, .fill = 0x22 };
	struct ibv_wc wc;

	if (post_recv_n(f, 1) || step(f, &wr, ACK, "WRITE only") ||
	    step(f, &sd, ACK, "SEND only") || poll_wait(f->r.cq, &wc, 10) != 1)
		return -1;
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != 64) {
		printf("# the SEND's receive: %s, %u bytes\n",
		       ibv_wc_status_str(wc.status), wc.byte_len);
		return -1;
	}
	return holds(f, at, 64, 0x11) || holds(f, RECV_AT, 64, 0x22) || ready(f);
}

static int set_up(struct forge *f)
{
	return one_packet_each(f, f->r.mr, 0);
}

/*
 * A SEND's first packet, then @next at the next PSN, a new message before
 * the SEND's last packet: NAKed as an invalid request. The SEND's receive
 * fails, what it took stays, the next receive flushes (an SRQ's stays in
 * the SRQ: the QP says it took its last), and nothing of @next is placed
 * (a WRITE's at 4096).
 */
static int in_send(struct forge *f)
{
	const struct request *next = f->arg;
	const struct request first = { .opcode = SEND_FIRST, .plen = 1024, .fill = 0x33 };

	return post_recv_n(f, 1) || post_recv_n(f, 2) ||
	       step(f, &first, ACK, "SEND first") ||
	       step(f, next, NAK_INVALID, "then a new message") ||
	       received(f, 1, IBV_WC_REM_INV_REQ_ERR) ||
	       (!f->r.srq && received(f, 2, IBV_WC_WR_FLUSH_ERR)) ||
	       holds(f, RECV_AT, 1024, 0x33) ||
	       holds(f, RECV_AT + 1024, 2 * RECV_LEN - 1024, 0) ||
	       holds(f, 4096, 2048, 0) ||
	       side_ended(&f->r, f->r.srq ? IBV_EVENT_QP_LAST_WQE_REACHED : -1);
}

/* What comes after a SEND's or a WRITE's first packet. */
static const struct request send_only = {
	.opcode = SEND_ONLY, .plen = 64, .fill = 0x44,
}, write_first = {
	.opcode = WRITE_FIRST, .reth = 1, .offset = 4096, .dma_len = 2048,
	.plen = 1024, .fill = 0x44,
}, write_only = {
	.opcode = WRITE_ONLY, .reth = 1, .offset = 4096, .dma_len = 64,
	.plen = 64, .fill = 0x44,
}, read_request = {
	.opcode = READ_REQUEST, .reth = 1, .offset = 4096, .dma_len = 64,
};

/*
 * A WRITE's first packet, then @next at the next PSN, a new message before
 * the WRITE's last packet: NAKed as an invalid request, which the QP's
 * consumer learns from an event; nothing of @next is placed (a WRITE's at
 * 4096), and a receive posted before flushes.
 */
static int in_write(struct forge *f)
{
	const struct request *next = f->arg;
	const struct request first = { .opcode = WRITE_FIRST, .mr = f->r.mr,
				       .dma_len = 2048, .plen = 1024, .fill = 0x55 };

	return post_recv_n(f, 1) || step(f, &first, ACK, "WRITE first") ||
	       step(f, next, NAK_INVALID, "then a new message") ||
	       holds(f, 0, 1024, 0x55) || holds(f, 1024, 4096, 0) ||
	       holds(f, RECV_AT, RECV_LEN, 0) ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR) ||
	       received(f, 1, IBV_WC_WR_FLUSH_ERR);
}

/*
 * UC: a SEND's first packet, then a SEND of one packet. UC answers
 * nothing and goes on: the first message is lost, and the second takes
 * the receive it had (IBA's class D1, as rxe).
 */
static int uc_send_in_send(struct forge *f)
{
	const struct request first = { .opcode = 0x20 | SEND_FIRST, .plen = 1024,
				       .fill = 0x33 },
			     only = { .opcode = 0x20 | SEND_ONLY, .plen = 64,
				      .fill = 0x44 };
	struct answer a;
	struct ibv_wc wc;

	if (post_recv_n(f, 1) || send_request(f, FIRST_PSN, &first) ||
	    send_request(f, FIRST_PSN + 1, &only) || poll_wait(f->r.cq, &wc, 10) != 1)
		return -1;
	if (wc.wr_id != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != 64) {
		printf("# receive %llu: %s, %u bytes\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), wc.byte_len);
		return -1;
	}
	if (!next_answer(f, 100, &a)) {
		printf("# UC answered\n");
		return -1;
	}
	return holds(f, RECV_AT, 64, 0x44) || ready(f);
}

#define HELD_SENDS	200

/* What a consumer's event thread sees when Last WQE Reached comes. */
struct watch {
	struct side *r;
	enum ibv_event_type event;	/* (-1: none came) */
	int sends, flushed;		/* the flushes in the CQ by then */
};

/* Waits for the QP's event, then takes what the CQ holds at once. */
static void *watch_events(void *arg)
{
	struct watch *w = arg;
	struct ibv_async_event ev;
	struct ibv_wc wc;

	if (wait_async(w->r->ctx, &ev, 5000))
		return NULL;
	w->event = ev.event_type;
	ibv_ack_async_event(&ev);
	while (ibv_poll_cq(w->r->cq, 1, &wc) > 0) {
		if (wc.wr_id == 1)
			w->flushed = wc.status == IBV_WC_WR_FLUSH_ERR;
		else
			w->sends++;
	}
	return NULL;
}

/*
 * An SRQ's receive held by a SEND's first packet when the consumer moves
 * the QP to ERR, behind HELD_SENDS SENDs that wait for ACKs: the QP says
 * it took its last receive only once that receive's flush is in the CQ,
 * after the sends'. A thread of the consumer's waits for the event and
 * then drains the CQ, as ib_drain_qp() does; with the event first, it
 * would miss the receive.
 */
static int held_receive(struct forge *f)
{
	const struct request first = { .opcode = SEND_FIRST, .plen = 1024,
				       .fill = 0xdd };
	struct side *r = &f->r;
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct watch w = { .r = r, .event = -1 };
	pthread_t watcher;
	int rc;

	if (post_recv_n(f, 1) || step(f, &first, ACK, "SEND first"))
		return -1;
	for (wr.wr_id = 100; wr.wr_id < 100 + HELD_SENDS; wr.wr_id++)
		if (ibv_post_send(r->qp, &wr, &bad))
			return -1;
	if (pthread_create(&watcher, NULL, watch_events, &w))
		return -1;
	usleep(20000);		/* (the watcher waits on the event) */
	rc = set_qp_state(r->qp, IBV_QPS_ERR);
	pthread_join(watcher, NULL);
	if (rc || w.event != IBV_EVENT_QP_LAST_WQE_REACHED) {
		printf("# event %d\n", w.event);
		return -1;
	}
	if (!w.flushed) {
		printf("# Last WQE Reached before the receive's flush (%d sends flushed by then)\n",
		       w.sends);
		return -1;
	}
	return 0;
}

static int middle_without_first(struct forge *f)
{
	const struct request middle = { .opcode = WRITE_MIDDLE, .plen = 1024, .fill = 0x77 };

	return step(f, &middle, NAK_INVALID, "WRITE middle") ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int short_middle(struct forge *f)
{
	const struct request first = { .opcode = WRITE_FIRST, .mr = f->r.mr,
				       .dma_len = 3072, .plen = 1024, .fill = 0x88 },
			     middle = { .opcode = WRITE_MIDDLE, .plen = 512, .fill = 0x99 };

	return step(f, &first, ACK, "WRITE first") ||
	       step(f, &middle, NAK_INVALID, "WRITE middle of 512 bytes") ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR) ||
	       unanswered(f, &middle) || holds(f, 0, 1024, 0x88) ||
	       holds(f, 1024, 2048, 0);
}

static int long_last(struct forge *f)
{
	const struct request first = { .opcode = SEND_FIRST, .plen = 1024, .fill = 0xaa },
			     last = { .opcode = SEND_LAST, .plen = 1100, .fill = 0xbb };

	return post_recv_n(f, 1) || step(f, &first, ACK, "SEND first") ||
	       step(f, &last, NAK_INVALID, "SEND last of 1100 bytes") ||
	       received(f, 1, IBV_WC_REM_INV_REQ_ERR) ||
	       side_ended(&f->r, -1) || unanswered(f, &last) ||
	       holds(f, RECV_AT + 1024, RECV_LEN - 1024, 0);
}

/*
 * A READ and a WRITE longer than max_msg_sz: an invalid request, not (as
 * the R_Key's check of a 64 KiB MR would have it) a remote access error.
 */
static int long_read(struct forge *f)
{
	const struct request rd = { .opcode = READ_REQUEST, .mr = f->r.mr,
				    .dma_len = f->max_msg + 1 };

	return step(f, &rd, NAK_INVALID, "READ") ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int long_write(struct forge *f)
{
	const struct request first = { .opcode = WRITE_FIRST, .mr = f->r.mr,
				       .dma_len = f->max_msg + 1, .plen = 1024,
				       .fill = 0xcc };

	return step(f, &first, NAK_INVALID, "WRITE first") ||
	       holds(f, 0, 1024, 0) || side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int mr_gone(struct forge *f)
{
	struct side *r = &f->r;
	/* The last 4 KiB of the responder's memory, an MR of their own. */
	struct ibv_mr *mr = ibv_reg_mr(r->pd, r->buf + LEN - 4096, 4096,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	const struct request first = { .opcode = WRITE_FIRST, .mr = mr,
				       .dma_len = 2048, .plen = 1024, .fill = 0xdd },
			     last = { .opcode = WRITE_LAST, .plen = 1024, .fill = 0xee };

	if (!mr) {
		printf("# ibv_reg_mr: %m\n");
		return -1;
	}
	if (step(f, &first, ACK, "WRITE first")) {
		ibv_dereg_mr(mr);
		return -1;
	}
	if (ibv_dereg_mr(mr))
		return -1;
	return step(f, &last, NAK_ACCESS, "WRITE last") ||
	       holds(f, LEN - 4096, 1024, 0xdd) ||
	       holds(f, LEN - 3072, 3072, 0) ||
	       side_ended(r, IBV_EVENT_QP_ACCESS_ERR);
}

/*
 * A message's first packet into a page of memory (a WRITE's MR, or
 * @send: a receive's), whose MR then goes: another PD registers a page
 * of its own at the same address until the MR's keys come back. The
 * message's last packet is NAKed (Remote Access for the WRITE, Remote
 * Operational for the receive, which fails) and the other PD's page is
 * untouched.
 */
static int keys_come_back(struct forge *f, int send)
{
	struct side *r = &f->r;
	unsigned char *at = r->buf + (send ? RECV_AT : LEN - 4096);
	struct ibv_mr *mr = ibv_reg_mr(r->pd, at, 4096, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE), *other_mr = NULL;
	unsigned char *other = aligned_alloc(4096, 4096);
	struct ibv_pd *other_pd = ibv_alloc_pd(r->ctx);
	struct request first = { .opcode = WRITE_FIRST, .mr = mr, .dma_len = 2048,
				 .plen = 1024, .fill = 0xdd },
		       last = { .opcode = WRITE_LAST, .plen = 1024, .fill = 0xee };
	struct ibv_sge sge = { (uintptr_t)at, 4096, mr ? mr->lkey : 0 };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 },
			   *bad;
	uint32_t lkey, rkey;
	int rc = -1;

	if (!mr || !other || !other_pd)
		goto out;
	memset(other, 0, 4096);
	if (send) {
		first = (struct request){ .opcode = SEND_FIRST, .plen = 1024,
					  .fill = 0xdd };
		last.opcode = SEND_LAST;
		if (ibv_post_recv(r->qp, &wr, &bad))
			goto out;
	}
	lkey = mr->lkey;
	rkey = mr->rkey;
	if (step(f, &first, ACK, "first packet") || ibv_dereg_mr(mr))
		goto out;
	mr = NULL;
	other_mr = keys_back(other_pd, other, (uintptr_t)at, lkey, rkey,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!other_mr ||
	    step(f, &last, send ? NAK_OPERATION : NAK_ACCESS, "last packet") ||
	    (send && received(f, 1, IBV_WC_LOC_PROT_ERR)) || zero_page(other))
		goto out;
	rc = side_ended(r, send ? -1 : IBV_EVENT_QP_ACCESS_ERR);
out:
	keys_back_done(mr, other_mr, other_pd);
	free(other);
	return rc;
}

static int write_keys_back(struct forge *f)
{
	return keys_come_back(f, 0);
}

static int receive_keys_back(struct forge *f)
{
	return keys_come_back(f, 1);
}

#define ALIAS		(2 << 20)

/*
 * @len bytes (a multiple of ALIAS) of address space, each ALIAS of them
 * the same ALIAS bytes of memory, all @fill: a large MR at small cost.
 * NULL on failure.
 */
static unsigned char *aliased(size_t len, uint8_t fill)
{
	int fd = memfd_create("forge", 0);
	unsigned char *base = MAP_FAILED;

	if (fd < 0 || ftruncate(fd, ALIAS))
		goto out;
	base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (size_t off = 0; base != MAP_FAILED && off < len; off += ALIAS)
		if (mmap(base + off, ALIAS, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
			munmap(base, len);
			base = MAP_FAILED;
		}
	if (base != MAP_FAILED)
		memset(base, fill, ALIAS);
out:
	if (fd >= 0)
		close(fd);
	return base == MAP_FAILED ? NULL : base;
}

/*
 * Whether a packet of @n bytes at @p that the QP sent carries a byte
 * @v; its payload follows the BTH and, but for a middle packet, an AETH.
 */
static int carries(const uint8_t *p, ssize_t n, uint8_t v)
{
	ssize_t from = BTH_LEN + (p[0] == READ_RESPONSE_MIDDLE ? 0 : AETH_LEN);

	for (ssize_t i = from; i < n - ICRC_LEN - (p[1] >> 4 & 3); i++)
		if (p[i] == v)
			return 1;
	return 0;
}

/*
 * A READ of 256 MiB, whose response the QP's worker streams for a while:
 * once it has begun, the MR goes and another PD registers memory of its
 * own at the same address under the same keys (their generation byte
 * counted round first). What of the response still leaves must not be
 * that memory; the QP's port counts the packets it could not fill.
 */
static int read_stream_keys_back(struct forge *f)
{
	const size_t len = 256 << 20;
	unsigned char *mine = aliased(len, 0x52), *theirs = aliased(len, 0x53);
	struct ibv_pd *other_pd = ibv_alloc_pd(f->r.ctx);
	struct ibv_mr *mr = NULL, *other_mr = NULL, *small;
	const char *errors = "wire_send_errors";
	long long unfilled;
	uint32_t rkey, key;
	uint8_t reth[RETH_LEN], p[PKT_MAX];
	unsigned int after = 0;
	double swap;
	ssize_t n;
	int rc = -1;

	if (!mine || !theirs || !other_pd)
		goto out;
	mr = ibv_reg_mr(f->r.pd, mine, len, IBV_ACCESS_REMOTE_READ);
	if (!mr)
		goto out;
	rkey = mr->rkey;
	/* until the next registration gets the MR's generation */
	for (int i = 0; i < 1024; i++) {
		small = ibv_reg_mr(other_pd, theirs, 4096, IBV_ACCESS_LOCAL_WRITE);
		key = small ? small->lkey : 0;
		if (!small || ibv_dereg_mr(small))
			goto out;
		if (((key + 1) & 0xff) == (rkey & 0xff))
			break;
	}
	put_reth(reth, (uintptr_t)mine, rkey, len);
	if (send_packet(f, READ_REQUEST, f->psn, reth, RETH_LEN, 0, 0) ||
	    next_packet(f, 5000, p) < 0 || p[0] != READ_RESPONSE_FIRST) {
		printf("# the READ's response did not begin\n");
		goto out;
	}
	swap = mono_now();
	if (ibv_dereg_mr(mr))
		goto out;
	mr = NULL;
	other_mr = ibv_reg_mr_iova(other_pd, theirs, len, (uintptr_t)mine,
				   IBV_ACCESS_REMOTE_READ);
	swap = mono_now() - swap;
	if (!other_mr || other_mr->rkey != rkey) {
		printf("# the key 0x%x did not come back\n", rkey);
		goto out;
	}
	drain_answers(f);
	unfilled = port_counter(f->r.ctx, errors);
	for (double end = mono_now() + 1; mono_now() < end; after++) {
		n = next_packet(f, 100, p);
		if (n < 0)
			break;
		if (carries(p, n, 0x53)) {
			printf("# PSN 0x%06x carries another PD's memory\n",
			       get24(p + 9));
			goto out;
		}
	}
	if (!after && port_counter(f->r.ctx, errors) == unfilled) {
		printf("# the response ended before the keys came back\n");
		goto out;
	}
	printf("# the keys came back in %.0f ms; then %u packets, %lld unfilled\n",
	       swap * 1e3, after, port_counter(f->r.ctx, errors) - unfilled);
	rc = set_qp_state(f->r.qp, IBV_QPS_ERR);
out:
	keys_back_done(mr, other_mr, other_pd);
	if (mine)
		munmap(mine, len);
	if (theirs)
		munmap(theirs, len);
	return rc;
}

/* What random_request() keeps between requests. */
struct fuzzing {
	const struct ibv_mr *mr;	/* the peer's memory, */
	uint32_t guard;			/* with this many bytes each side */
	uint32_t psn;			/* the next request's */
	uint32_t left;			/* a message begun lacks this many bytes, */
	uint8_t first;			/* its first packet's opcode */
};

/*
 * A valid request next to @z's state, mostly: a message begun goes on,
 * else a SEND, WRITE, READ or atomic begins that names memory of the MR
 * (one in 8 of the guards' and the MR's, which may reach outside the MR).
 * One in 32 has one thing wrong (the opcode, the R_Key, the address, the
 * length, the payload or the PSN). Sends it with AckReq, and moves on.
 */
static int random_request(struct forge *f, struct fuzzing *z)
{
	uint32_t span = z->mr->length, plen = 0, len, off, ext_len = 0, i;
	uint8_t ext[28], opcode;
	uint64_t va;

	for (i = 0; i < sizeof(ext); i++)
		ext[i] = random();
	if (z->left && below(8)) {
		plen = z->left > 1024 ? 1024 : z->left;
		opcode = z->first + (plen < z->left ? 1 : 2);	/* MIDDLE, LAST */
		z->left -= plen;
	} else {
		i = below(6);
		len = 1 + below(4096);
		off = below(span - len + 1);
		va = (uintptr_t)z->mr->addr + off;
		/* one in 8 anywhere in the guards and the MR: refused, or not */
		if (!below(8))
			va += below(span + 2 * z->guard - len + 1) - z->guard - off;
		z->left = 0;
		if (i == 0 || i == 1) {			/* SEND */
			opcode = len > 1024 ? SEND_FIRST : SEND_ONLY;
		} else if (i == 2 || i == 3) {		/* WRITE */
			opcode = len > 1024 ? WRITE_FIRST : WRITE_ONLY;
			put_reth(ext, va, z->mr->rkey, len);
			ext_len = RETH_LEN;
		} else if (i == 4) {
			opcode = READ_REQUEST;
			put_reth(ext, va, z->mr->rkey, len);
			ext_len = RETH_LEN;
			len = 0;
		} else {				/* CMP_SWAP, FETCH_ADD */
			opcode = 0x13 + below(2);
			put_reth(ext, va & ~7ULL, z->mr->rkey, 8);
			ext_len = 28;
			len = 0;
		}
		plen = len > 1024 ? 1024 : len;
		z->first = opcode;
		z->left = len - plen;
	}
	switch (below(32) ? 6 : below(6)) {
	case 0:
		opcode = below(0x20);
		break;
	case 1:
		put32(ext + 8, random());
		break;
	case 2:	/* into a guard, or across the MR's end */
		va = (uintptr_t)z->mr->addr - z->guard + below(span + 2 * z->guard);
		put32(ext, va >> 32);
		put32(ext + 4, va);
		break;
	case 3:
		put32(ext + 12, below(2) ? (uint32_t)random() : below(8192));
		break;
	case 4:
		plen = below(1101);
		break;
	case 5:
		z->psn = (z->psn + below(8) - 4) & 0xffffff;
		break;
	}
	if (send_packet(f, opcode, z->psn, ext, ext_len, plen, random()))
		return -1;
	z->psn = (z->psn + 1) & 0xffffff;
	return 0;
}

/* Reposts the receives that completed; 0, or -1 if the QP has ended. */
static int repost(struct forge *f)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(f->r.cq, 1, &wc) > 0)
		if (wc.status != IBV_WC_SUCCESS || post_recv_n(f, wc.wr_id))
			return -1;
	return qp_state(f->r.qp) == IBV_QPS_RTS ? 0 : -1;
}

/*
 * Random RC requests, valid but for one in 32 (see random_request()), at a
 * QP whose memory the peer may touch only in the middle, guards of 4 KiB
 * each side; a round ends with the QP, in ERR or after 400 requests, and
 * the next resets it and connects it again. After each, the guards are
 * untouched and the QP is in RTS or ERR; after the last, reset and
 * connected again, it takes a WRITE and a SEND.
 */
static int random_requests(struct forge *f)
{
	const uint32_t guard = 4096, total = 4000;
	int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	struct side *r = &f->r;
	struct ibv_async_event ev;
	struct fuzzing z = { .guard = guard };
	uint32_t sent = 0, rounds = 0, i;
	struct ibv_mr *mr;
	struct ibv_wc wc;

	srandom(f->seed);
	/* The whole memory for receives alone, its middle for the peer. */
	if (ibv_dereg_mr(r->mr))
		return -1;
	r->mr = ibv_reg_mr(r->pd, r->buf, LEN, IBV_ACCESS_LOCAL_WRITE);
	mr = r->mr ? ibv_reg_mr(r->pd, r->buf + guard, LEN - 2 * guard, remote) : NULL;
	if (!mr)
		return -1;
	z.mr = mr;
	memset(r->buf, 0x5a, LEN);
	while (sent < total) {
		if (rounds++ && (set_qp_state(r->qp, IBV_QPS_RESET) ||
				 rc_connect(r->qp, &f->path)))
			return -1;
		for (uint64_t wr_id = 1; wr_id <= 4; wr_id++)
			if (post_recv_n(f, wr_id))
				return -1;
		z.psn = FIRST_PSN;
		z.left = 0;
		for (i = 0; i < 400 && sent < total; i++, sent++) {
			if (random_request(f, &z))
				return -1;
			if (i % 4 == 3) {
				usleep(1000);
				drain_answers(f);
				if (repost(f))
					break;
			}
		}
		usleep(20000);
		drain_answers(f);
		while (ibv_poll_cq(r->cq, 1, &wc) > 0)
			;
		while (!wait_async(r->ctx, &ev, 0))
			ibv_ack_async_event(&ev);
		if (holds(f, 0, guard, 0x5a) || holds(f, LEN - guard, guard, 0x5a))
			return -1;
		if (qp_state(r->qp) != IBV_QPS_RTS && qp_state(r->qp) != IBV_QPS_ERR) {
			printf("# round %u: the QP is in state %d\n", rounds, qp_state(r->qp));
			return -1;
		}
	}
	printf("# %u random requests in %u rounds, seed %u\n", sent, rounds, f->seed);
	if (set_qp_state(r->qp, IBV_QPS_RESET) || rc_connect(r->qp, &f->path))
		return -1;
	f->psn = FIRST_PSN;
	return one_packet_each(f, mr, guard);
}

static const struct forged_case forged[] = {
	{ "a WRITE and a SEND of one packet each: ACKed and placed", set_up },
	{ "a SEND of one packet after a SEND's first: NAKed, the first's receive fails",
	  in_send, 0, &send_only },
	{ "the same on an SRQ: then the QP says it took its last receive",
	  in_send, SIDE_SRQ, &send_only },
	{ "a WRITE's first packet after a SEND's first: NAKed, not placed",
	  in_send, 0, &write_first },
	{ "a READ after a SEND's first packet: NAKed", in_send, 0, &read_request },
	{ "a WRITE of one packet after a WRITE's first: NAKed, not placed",
	  in_write, 0, &write_only },
	{ "a SEND of one packet after a WRITE's first: NAKed, not placed",
	  in_write, 0, &send_only },
	{ "UC: a SEND of one packet after a SEND's first: the first lost, the second taken",
	  uc_send_in_send, SIDE_UC },
	{ "on an SRQ, a receive held by a message when the QP is moved to ERR: Last WQE Reached after its flush",
	  held_receive, SIDE_SRQ, NULL, 256 },
	{ "a WRITE's middle packet with no first: NAKed", middle_without_first },
	{ "a WRITE's middle packet of 512 bytes: NAKed, not placed, then unanswered",
	  short_middle },
	{ "a SEND's last packet of 1100 bytes: NAKed, then unanswered", long_last },
	{ "a READ of max_msg_sz + 1 bytes: NAKed", long_read },
	{ "a WRITE of max_msg_sz + 1 bytes: NAKed, not placed", long_write },
	{ "a WRITE whose MR goes after its first packet: NAKed (Remote Access), not placed",
	  mr_gone },
	{ "a WRITE whose R_Key comes back, another PD's, after its first packet: NAKed",
	  write_keys_back },
	{ "a SEND whose receive's L_Key comes back, another PD's, after its first packet: NAKed",
	  receive_keys_back },
	{ "a READ's response streamed while its R_Key comes back, another PD's: none of its memory sent",
	  read_stream_keys_back },
	{ "random requests: no byte written outside the MR, the QP then works",
	  random_requests },
};

int main(int argc, char **argv)
{
	return forge_main(argc, argv, forged, ARRAY_SIZE(forged));
}
