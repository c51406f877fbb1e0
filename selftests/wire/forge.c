// SPDX-License-Identifier: GPL-2.0
/*
 * forge DEV GIDX SRC DST: RC requests forged packet by packet, in orders
 * and sizes that no verbs requester sends, at QPs of DEV, an rsoft link
 * whose port holds IPv4 address DST (GID index GIDX). SRC, an address of
 * this namespace that no RDMA link holds and whose UDP port 4791 is free,
 * plays the requester, QP PEER (plus the case's number) there: its
 * requests leave from a raw socket, built as rocev2.h has it, and the
 * answers come to a UDP socket on SRC:4791. Each case connects a fresh RC
 * QP of DEV (path MTU 1024) to it, asks an ACK of every packet, and checks
 * the answers (ACK or NAK, and the PSN), the responder's memory and
 * receives, its state and its affiliated events. Each request here that
 * the responder refuses is malformed or out of order: IBA's responder
 * class C (an Invalid Request NAK, the QP in ERR), or class A for an MR
 * gone mid-WRITE (a Remote Access NAK), as rxe has them:
 *   - a WRITE and a SEND of one packet each: ACKed and placed (the
 *     set-up itself);
 *   - a SEND of one packet after a SEND's first packet, and a WRITE of
 *     one packet after a WRITE's first (rxe's MISSING_OPCODE_LAST_C):
 *     NAKed; the first message's receive fails, the second is not placed;
 *   - a WRITE's middle packet with no first one (MISSING_OPCODE_FIRST);
 *   - a middle packet shorter than the path MTU, and a last one longer
 *     (rxe_resp_check_length()): nothing of it placed; sent again, as if
 *     the NAK was lost, it finds the QP in ERR and gets no answer;
 *   - a READ and a WRITE whose RETH length is above the port's
 *     max_msg_sz: NAKed, nothing read or written;
 *   - a WRITE whose MR is deregistered after its first packet: its last
 *     is NAKed with Remote Access and placed nowhere.
 * Prints one line per case and exits 0 when all pass. Needs CAP_NET_RAW.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "rocev2.h"
#include "side.h"

#define PEER		0xc0de00
#define FIRST_PSN	0x100
#define LEN		65536
#define RECV_AT		32768	/* where the responder's receives go */
#define RECV_LEN	4096
#define PKT_MAX		1500
#define RETH_LEN	16

/* RC opcodes (IBA table 38) */
enum {
	SEND_FIRST = 0x00, SEND_LAST = 0x02, SEND_ONLY = 0x04,
	WRITE_FIRST = 0x06, WRITE_MIDDLE = 0x07, WRITE_LAST = 0x08,
	WRITE_ONLY = 0x0a, READ_REQUEST = 0x0c, ACKNOWLEDGE = 0x11,
};

/* AETH syndromes (IBA 9.7.5.2.1): an ACK's low bits are its credits. */
#define ACK		0x00
#define NAK_INVALID	0x61
#define NAK_ACCESS	0x62

struct forge {
	struct side r;		/* the responder */
	union ibv_gid src_gid;
	int raw, udp;
	struct sockaddr_in dst;
	struct ipv4_udp ip;	/* its ID bumped per packet */
	uint32_t peer;		/* the case's requester QP */
	uint32_t psn;		/* the next request's */
	uint32_t max_msg;	/* the port's max_msg_sz */
};

/* A request: its opcode, a RETH if @mr, and @plen bytes of @fill. */
struct request {
	uint8_t opcode;
	const struct ibv_mr *mr;	/* the RETH names @offset of it, */
	uint32_t offset;
	uint32_t dma_len;		/* and this length */
	uint32_t plen;
	uint8_t fill;
};

/* Sends @r to the responder with PSN @psn; 0, or -1 on a socket error. */
static int send_request(struct forge *f, uint32_t psn, const struct request *r)
{
	size_t at = IP_HDR + UDP_HDR, pad = -r->plen & 3, len;
	uint8_t p[PKT_MAX];

	len = at + BTH_LEN + (r->mr ? RETH_LEN : 0) + r->plen + pad + ICRC_LEN;
	if (len > sizeof(p))
		return -1;
	if (!++f->ip.id)
		f->ip.id = 1;
	put_ipv4_udp(p, len, &f->ip);
	p[at] = r->opcode;
	p[at + 1] = pad << 4;
	put16(p + at + 2, 0xffff);
	p[at + 4] = 0;
	put24(p + at + 5, f->r.qp->qp_num);
	p[at + 8] = 0x80;		/* AckReq */
	put24(p + at + 9, psn);
	at += BTH_LEN;
	if (r->mr) {
		uint64_t va = (uintptr_t)r->mr->addr + r->offset;

		put32(p + at, va >> 32);
		put32(p + at + 4, va);
		put32(p + at + 8, r->mr->rkey);
		put32(p + at + 12, r->dma_len);
		at += RETH_LEN;
	}
	memset(p + at, r->fill, r->plen);
	memset(p + at + r->plen, 0, pad);
	seal(p, len);
	if (sendto(f->raw, p, len, 0, (struct sockaddr *)&f->dst,
		   sizeof(f->dst)) != (ssize_t)len)
		return -1;
	return 0;
}

/* An answer to the requester: its opcode, PSN and AETH syndrome. */
struct answer {
	uint8_t opcode, syndrome;
	uint32_t psn;
};

/* Waits up to @ms ms for the next answer to the case's requester. */
static int next_answer(struct forge *f, int ms, struct answer *a)
{
	struct pollfd pfd = { .fd = f->udp, .events = POLLIN };
	double end = mono_now() + ms / 1e3;
	uint8_t p[PKT_MAX];
	ssize_t n;

	for (;;) {
		int left = (end - mono_now()) * 1e3;

		if (left < 0 || poll(&pfd, 1, left) != 1)
			return -1;
		n = recv(f->udp, p, sizeof(p), MSG_DONTWAIT);
		/* (another case's QP may answer late) */
		if (n < BTH_LEN + 4 + ICRC_LEN || get24(p + 5) != f->peer)
			continue;
		a->opcode = p[0];
		a->psn = get24(p + 9);
		a->syndrome = p[BTH_LEN];
		return 0;
	}
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
 * NAK was lost does: a QP in ERR answers nothing.
 */
static int unanswered(struct forge *f, const struct request *r)
{
	struct answer a;

	if (send_request(f, (f->psn - 1) & 0xffffff, r))
		return -1;
	if (!next_answer(f, 300, &a)) {
		printf("# sent again: answered, syndrome 0x%02x\n", a.syndrome);
		return -1;
	}
	return 0;
}

/* Posts receive @wr_id: RECV_LEN bytes of its own after RECV_AT. */
static int post_recv_n(struct forge *f, uint64_t wr_id)
{
	struct side *r = &f->r;
	struct ibv_sge sge = { (uintptr_t)r->buf + RECV_AT + (wr_id - 1) * RECV_LEN,
			       RECV_LEN, r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(r->qp, &wr, &bad);
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

/* Whether the @n bytes at @off of the responder's memory are all @v. */
static int holds(struct forge *f, size_t off, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (f->r.buf[off + i] != v) {
			printf("# byte %zu of the responder's memory: 0x%02x, not 0x%02x\n",
			       off + i, f->r.buf[off + i], v);
			return -1;
		}
	return 0;
}

static int one_packet_each(struct forge *f)
{
	const struct request wr = { WRITE_ONLY, f->r.mr, 0, 64, 64, 0x11 },
			     sd = { SEND_ONLY, NULL, 0, 0, 64, 0x22 };
	struct ibv_wc wc;

	if (post_recv_n(f, 1) || step(f, &wr, ACK, "WRITE only") ||
	    step(f, &sd, ACK, "SEND only") || poll_wait(f->r.cq, &wc, 10) != 1)
		return -1;
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != 64) {
		printf("# the SEND's receive: %s, %u bytes\n",
		       ibv_wc_status_str(wc.status), wc.byte_len);
		return -1;
	}
	return holds(f, 0, 64, 0x11) || holds(f, RECV_AT, 64, 0x22) ||
	       qp_state(f->r.qp) != IBV_QPS_RTS;
}

static int send_in_send(struct forge *f)
{
	const struct request first = { SEND_FIRST, NULL, 0, 0, 1024, 0x33 },
			     only = { SEND_ONLY, NULL, 0, 0, 64, 0x44 };

	return post_recv_n(f, 1) || post_recv_n(f, 2) ||
	       step(f, &first, ACK, "SEND first") ||
	       step(f, &only, NAK_INVALID, "SEND only") ||
	       received(f, 1, IBV_WC_REM_INV_REQ_ERR) ||
	       received(f, 2, IBV_WC_WR_FLUSH_ERR) ||
	       holds(f, RECV_AT + RECV_LEN, 64, 0) || side_ended(&f->r, -1);
}

static int write_in_write(struct forge *f)
{
	const struct request first = { WRITE_FIRST, f->r.mr, 0, 2048, 1024, 0x55 },
			     only = { WRITE_ONLY, f->r.mr, 4096, 64, 64, 0x66 };

	return step(f, &first, ACK, "WRITE first") ||
	       step(f, &only, NAK_INVALID, "WRITE only") ||
	       holds(f, 0, 1024, 0x55) || holds(f, 1024, 4096, 0) ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int middle_without_first(struct forge *f)
{
	const struct request middle = { WRITE_MIDDLE, NULL, 0, 0, 1024, 0x77 };

	return step(f, &middle, NAK_INVALID, "WRITE middle") ||
	       holds(f, 0, LEN, 0) || side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int short_middle(struct forge *f)
{
	const struct request first = { WRITE_FIRST, f->r.mr, 0, 3072, 1024, 0x88 },
			     middle = { WRITE_MIDDLE, NULL, 0, 0, 512, 0x99 };

	return step(f, &first, ACK, "WRITE first") ||
	       step(f, &middle, NAK_INVALID, "WRITE middle of 512 bytes") ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR) ||
	       unanswered(f, &middle) || holds(f, 0, 1024, 0x88) ||
	       holds(f, 1024, 2048, 0);
}

static int long_last(struct forge *f)
{
	const struct request first = { SEND_FIRST, NULL, 0, 0, 1024, 0xaa },
			     last = { SEND_LAST, NULL, 0, 0, 1100, 0xbb };

	return post_recv_n(f, 1) || step(f, &first, ACK, "SEND first") ||
	       step(f, &last, NAK_INVALID, "SEND last of 1100 bytes") ||
	       received(f, 1, IBV_WC_REM_INV_REQ_ERR) ||
	       side_ended(&f->r, -1) || unanswered(f, &last) ||
	       holds(f, RECV_AT + 1024, RECV_LEN - 1024, 0);
}

static int long_read(struct forge *f)
{
	const struct request rd = { READ_REQUEST, f->r.mr, 0, f->max_msg + 1, 0, 0 };

	return step(f, &rd, NAK_INVALID, "READ") ||
	       side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int long_write(struct forge *f)
{
	const struct request first = { WRITE_FIRST, f->r.mr, 0, f->max_msg + 1,
				       1024, 0xcc };

	return step(f, &first, NAK_INVALID, "WRITE first") ||
	       holds(f, 0, LEN, 0) || side_ended(&f->r, IBV_EVENT_QP_REQ_ERR);
}

static int mr_gone(struct forge *f)
{
	struct side *r = &f->r;
	/* The last 4 KiB of the responder's memory, an MR of their own. */
	struct ibv_mr *mr = ibv_reg_mr(r->pd, r->buf + LEN - 4096, 4096,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	const struct request first = { WRITE_FIRST, mr, 0, 2048, 1024, 0xdd },
			     last = { WRITE_LAST, NULL, 0, 0, 1024, 0xee };

	if (!mr || step(f, &first, ACK, "WRITE first") || ibv_dereg_mr(mr))
		return -1;
	return step(f, &last, NAK_ACCESS, "WRITE last") ||
	       holds(f, LEN - 4096, 1024, 0xdd) ||
	       holds(f, LEN - 3072, 3072, 0) ||
	       side_ended(r, IBV_EVENT_QP_ACCESS_ERR);
}

static const struct {
	const char *name;
	int (*run)(struct forge *f);
} forged[] = {
	{ "a WRITE and a SEND of one packet each: ACKed and placed", one_packet_each },
	{ "a SEND of one packet after a SEND's first: NAKed, the first's receive fails",
	  send_in_send },
	{ "a WRITE of one packet after a WRITE's first: NAKed, not placed", write_in_write },
	{ "a WRITE's middle packet with no first: NAKed, not placed", middle_without_first },
	{ "a WRITE's middle packet of 512 bytes: NAKed, not placed, then unanswered",
	  short_middle },
	{ "a SEND's last packet of 1100 bytes: NAKed, then unanswered", long_last },
	{ "a READ of max_msg_sz + 1 bytes: NAKed", long_read },
	{ "a WRITE of max_msg_sz + 1 bytes: NAKed, not placed", long_write },
	{ "a WRITE whose MR goes after its first packet: NAKed (Remote Access), not placed",
	  mr_gone },
};

/* Runs case @i on a fresh QP of @dev; 0 when it passes. */
static int run(struct forge *f, size_t i, const char *dev, int gidx)
{
	struct rc_path path = {
		.av = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = f->src_gid, .sgid_index = gidx,
				 .hop_limit = 64 },
		},
		.mtu = IBV_MTU_1024, .dest_qpn = PEER + i,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rnr_retry = 7, .timeout = 14, .retry_cnt = 7,
		.rq_psn = FIRST_PSN,
	};
	struct ibv_port_attr port;
	int rc = -1;

	memset(&f->r, 0, sizeof(f->r));
	if (side_open(&f->r, dev, gidx, LEN, 4, 0) ||
	    ibv_query_port(f->r.ctx, 1, &port) || rc_connect(f->r.qp, &path)) {
		printf("# %s: %m\n", dev);
		goto out;
	}
	f->max_msg = port.max_msg_sz;
	f->peer = PEER + i;
	f->psn = FIRST_PSN;
	rc = forged[i].run(f);
out:
	side_close(&f->r);
	return rc;
}

/* The raw socket the requests leave from, the UDP socket of the answers. */
static int sockets(struct forge *f)
{
	struct sockaddr_in here = {
		.sin_family = AF_INET, .sin_port = htons(ROCE_PORT),
		.sin_addr.s_addr = f->ip.saddr,
	};
	double end = mono_now() + 10;

	f->raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	f->udp = socket(AF_INET, SOCK_DGRAM, 0);
	if (f->raw < 0 || f->udp < 0)
		return -1;
	/* A link deleted just now may hold the port a little longer. */
	while (bind(f->udp, (struct sockaddr *)&here, sizeof(here))) {
		if (errno != EADDRINUSE || mono_now() > end)
			return -1;
		usleep(100000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct forge f = { .ip = { .ttl = 64, .sport = 0xc000 } };
	int failed = 0, rc;

	if (argc != 5 || inet_pton(AF_INET, argv[3], &f.ip.saddr) != 1 ||
	    inet_pton(AF_INET, argv[4], &f.ip.daddr) != 1) {
		fprintf(stderr, "usage: %s DEV GIDX SRC DST\n", argv[0]);
		return 2;
	}
	f.dst = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = f.ip.daddr };
	/* SRC's GID: its IPv4-mapped IPv6 address */
	f.src_gid.raw[10] = 0xff;
	f.src_gid.raw[11] = 0xff;
	memcpy(&f.src_gid.raw[12], &f.ip.saddr, 4);
	if (sockets(&f)) {
		printf("# sockets on %s: %m\n", argv[3]);
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(forged); i++) {
		rc = run(&f, i, argv[1], atoi(argv[2]));
		printf("# %s: %s\n", forged[i].name, rc ? "FAILED" : "as due");
		failed |= rc;
	}
	return failed ? 1 : 0;
}
