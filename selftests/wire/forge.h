/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An RC peer forged packet by packet, for the tests that send an rsoft QP
 * what no verbs peer sends (forge.c: requests at a responder; replies.c:
 * answers at a requester). The program runs with DEV GIDX SRC DST [SEED]:
 * DEV is an rsoft link whose port holds IPv4 address DST (GID index
 * GIDX); SRC, an address of this namespace that no RDMA link holds and
 * whose UDP port 4791 is free, is the peer's, QP PEER (plus the case's
 * number) there. Its packets leave from a raw socket, built as rocev2.h
 * has it, and the QP's come to a UDP socket on SRC:4791. Each case has a
 * fresh RC QP of DEV (path MTU 1024, PSN FIRST_PSN each way) connected to
 * it. Needs CAP_NET_RAW.
 */
#ifndef RSOFT_WIRE_FORGE_H
#define RSOFT_WIRE_FORGE_H

#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

#include "rocev2.h"
#include "side.h"

#define PEER		0xc0de00
#define FIRST_PSN	0x100
#define LEN		65536	/* the QP's memory */
#define PKT_MAX		1500
#define RETH_LEN	16
#define AETH_LEN	4

/* RC opcodes (IBA table 38) */
enum {
	SEND_FIRST = 0x00, SEND_LAST = 0x02, SEND_ONLY = 0x04,
	WRITE_FIRST = 0x06, WRITE_MIDDLE = 0x07, WRITE_LAST = 0x08,
	WRITE_ONLY = 0x0a, READ_REQUEST = 0x0c, READ_RESPONSE_FIRST = 0x0d,
	READ_RESPONSE_MIDDLE = 0x0e, READ_RESPONSE_LAST = 0x0f,
	READ_RESPONSE_ONLY = 0x10, ACKNOWLEDGE = 0x11, ATOMIC_ACKNOWLEDGE = 0x12,
};

/* AETH syndromes (IBA 9.7.5.2.1): an ACK's low bits are its credits. */
#define ACK		0x00
#define NAK_INVALID	0x61
#define NAK_ACCESS	0x62
#define NAK_OPERATION	0x63

struct forge {
	struct side r;		/* the rsoft QP's */
	union ibv_gid src_gid;
	int raw, udp;
	struct sockaddr_in dst;
	struct ipv4_udp ip;	/* its ID bumped per packet */
	uint32_t peer;		/* the case's peer QP */
	uint32_t psn;		/* the peer's next request's */
	uint32_t max_msg;	/* the port's max_msg_sz */
	struct rc_path path;	/* the case's QP's, to the peer */
	unsigned int seed;	/* for the random cases */
	const void *arg;	/* the case's */
};

/*
 * Sends the QP a packet of @opcode with PSN @psn (AckReq set): the
 * @ext_len bytes of extension headers at @ext, then @plen bytes of @fill.
 * 0, or -1 on a socket error.
 */
static inline int send_packet(struct forge *f, uint8_t opcode, uint32_t psn,
			      const uint8_t *ext, size_t ext_len,
			      uint32_t plen, uint8_t fill)
{
	size_t at = IP_HDR + UDP_HDR, pad = -plen & 3, len;
	uint8_t p[PKT_MAX];

	len = at + BTH_LEN + ext_len + plen + pad + ICRC_LEN;
	if (len > sizeof(p)) {
		errno = EMSGSIZE;
		return -1;
	}
	if (!++f->ip.id)
		f->ip.id = 1;
	put_ipv4_udp(p, len, &f->ip);
	p[at] = opcode;
	p[at + 1] = pad << 4;
	put16(p + at + 2, 0xffff);
	p[at + 4] = 0;
	put24(p + at + 5, f->r.qp->qp_num);
	p[at + 8] = 0x80;		/* AckReq */
	put24(p + at + 9, psn);
	at += BTH_LEN;
	memcpy(p + at, ext, ext_len);
	at += ext_len;
	memset(p + at, fill, plen);
	memset(p + at + plen, 0, pad);
	seal(p, len);
	if (sendto(f->raw, p, len, 0, (struct sockaddr *)&f->dst,
		   sizeof(f->dst)) != (ssize_t)len)
		return -1;
	return 0;
}

/* Writes a RETH (or an AtomicETH's start) naming @len bytes at @va. */
static inline void put_reth(uint8_t *p, uint64_t va, uint32_t rkey, uint32_t len)
{
	put32(p, va >> 32);
	put32(p + 4, va);
	put32(p + 8, rkey);
	put32(p + 12, len);
}

/*
 * Waits up to @ms ms for the QP's next packet to the case's peer, into
 * @p (PKT_MAX bytes); its length, or -1 if none came.
 */
static inline ssize_t next_packet(struct forge *f, int ms, uint8_t *p)
{
	struct pollfd pfd = { .fd = f->udp, .events = POLLIN };
	double end = mono_now() + ms / 1e3;
	ssize_t n;

	for (;;) {
		int left = (end - mono_now()) * 1e3;

		if (left < 0 || poll(&pfd, 1, left) != 1)
			return -1;
		n = recv(f->udp, p, PKT_MAX, MSG_DONTWAIT);
		/* (another case's QP may answer late) */
		if (n >= BTH_LEN + ICRC_LEN && get24(p + 5) == f->peer)
			return n;
	}
}

/* A random number below @n. */
static inline uint32_t below(uint32_t n)
{
	return (uint32_t)random() % n;
}

/* Takes every packet that waited for the peer. */
static inline void drain_answers(struct forge *f)
{
	uint8_t p[PKT_MAX];

	while (recv(f->udp, p, sizeof(p), MSG_DONTWAIT) > 0)
		;
}

/* Whether the @n bytes at @off of the QP's memory are all @v. */
static inline int holds(struct forge *f, size_t off, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (f->r.buf[off + i] != v) {
			printf("# byte %zu of the QP's memory: 0x%02x, not 0x%02x\n",
			       off + i, f->r.buf[off + i], v);
			return -1;
		}
	return 0;
}

/*
 * Registers MRs of @pd over the page at @mem, seen at @iova, with
 * @access, until one gets the keys @lkey and @rkey (a key's generation
 * byte comes round after 256 registrations); NULL if none did.
 */
static inline struct ibv_mr *keys_back(struct ibv_pd *pd, void *mem,
				       uint64_t iova, uint32_t lkey,
				       uint32_t rkey, int access)
{
	for (int i = 0; i < 1024; i++) {
		struct ibv_mr *mr = ibv_reg_mr_iova(pd, mem, 4096, iova, access);

		if (!mr || (mr->lkey == lkey && mr->rkey == rkey))
			return mr;
		ibv_dereg_mr(mr);
	}
	printf("# keys 0x%x, 0x%x did not come back\n", lkey, rkey);
	return NULL;
}

/* Whether the page at @p is all zero. */
static inline int zero_page(const unsigned char *p)
{
	for (int i = 0; i < 4096; i++)
		if (p[i]) {
			printf("# byte %d of another PD's page: 0x%02x\n", i, p[i]);
			return -1;
		}
	return 0;
}

/*
 * Deregisters @mr and @other_mr, then deallocates @other_pd (each may be
 * NULL): what a case whose keys came back to another PD leaves.
 */
static inline void keys_back_done(struct ibv_mr *mr, struct ibv_mr *other_mr,
				  struct ibv_pd *other_pd)
{
	if (other_mr)
		ibv_dereg_mr(other_mr);
	if (mr)
		ibv_dereg_mr(mr);
	if (other_pd)
		ibv_dealloc_pd(other_pd);
}

/* One case of a program of forged packets. */
struct forged_case {
	const char *name;
	int (*run)(struct forge *f);
	int flags;		/* side_open()'s: UC, an SRQ */
	const void *arg;	/* what it runs with, as f->arg */
	int depth;		/* WRs each way, if not 4 */
};

/* Runs case @c, number @i, on a fresh QP of @dev; 0 when it passes. */
static inline int forge_run(struct forge *f, const struct forged_case *c,
			    size_t i, const char *dev, int gidx)
{
	struct ibv_port_attr port;
	int rc = -1;

	f->path = (struct rc_path){
		.av = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = f->src_gid, .sgid_index = gidx,
				 .hop_limit = 64 },
		},
		.mtu = IBV_MTU_1024, .dest_qpn = PEER + i,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rnr_retry = 7, .timeout = 14, .retry_cnt = 7,
		.sq_psn = FIRST_PSN, .rq_psn = FIRST_PSN,
	};
	memset(&f->r, 0, sizeof(f->r));
	if (side_open(&f->r, dev, gidx, LEN, c->depth ?: 4, c->flags) ||
	    ibv_query_port(f->r.ctx, 1, &port) || rc_connect(f->r.qp, &f->path)) {
		printf("# %s: %m\n", dev);
		goto out;
	}
	f->max_msg = port.max_msg_sz;
	f->peer = PEER + i;
	f->psn = FIRST_PSN;
	f->arg = c->arg;
	rc = c->run(f);
out:
	side_close(&f->r);
	return rc;
}

/* The raw socket the peer's packets leave from, the UDP socket of the QP's. */
static inline int sockets(struct forge *f)
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

/*
 * The program: DEV GIDX SRC DST [SEED] in @argv, then the @n cases of
 * @table, a line each; 0 when all pass, 1 if one failed, 2 on bad
 * arguments.
 */
static inline int forge_main(int argc, char **argv,
			     const struct forged_case *table, size_t n)
{
	struct forge f = { .ip = { .ttl = 64, .sport = 0xc000 } };
	int failed = 0, rc;

	f.seed = argc == 6 ? strtoul(argv[5], NULL, 0) : time(NULL) ^ getpid();
	if (argc < 5 || argc > 6 || inet_pton(AF_INET, argv[3], &f.ip.saddr) != 1 ||
	    inet_pton(AF_INET, argv[4], &f.ip.daddr) != 1) {
		fprintf(stderr, "usage: %s DEV GIDX SRC DST [SEED]\n", argv[0]);
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
	for (size_t i = 0; i < n; i++) {
		rc = forge_run(&f, &table[i], i, argv[1], atoi(argv[2]));
		printf("# %s: %s\n", table[i].name, rc ? "FAILED" : "as due");
		failed |= rc;
	}
	return failed ? 1 : 0;
}

#endif /* RSOFT_WIRE_FORGE_H */
