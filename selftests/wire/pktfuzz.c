// SPDX-License-Identifier: GPL-2.0
/*
 * pktfuzz: a RoCEv2 packet fuzzer. Sends seeded random packets to UDP port
 * 4791 of a RoCE link's IPv4 address from a raw IPv4 socket (the IP header
 * built here, so that the ICRC covers the header as sent):
 *
 *   pktfuzz -S SRC -D DST -q QPN [-q QPN...] [-k QKEY] [-n N] [-s SEED] [-j JOBS] [-v]
 *
 * Each packet is one of
 *   valid:   a UD SEND only (with or without immediate data) to one of the
 *            -q QPNs, its ICRC right, a payload of 0..1100 bytes (more than
 *            the 1024-byte MTU of a 1500-byte netdev now and then), the
 *            Q_Key -k most of the time, the fields the ICRC masks random;
 *   mutated: such a packet with one thing wrong (a bit flipped and the
 *            ICRC made right again, a wrong ICRC, a truncation, the pad
 *            count, TVer, P_Key, the opcode, the destination QP, the DETH,
 *            IPv4 options);
 *   random:  random bytes after the UDP header.
 * -j JOBS senders (processes, each with a socket of its own) share the
 * packets: the receiving side meets them on several CPUs at once. The same
 * seed and -j send the same packets. -v adds a line per mutation kind to
 * stderr. Prints one line at the end:
 *   pktfuzz: sent N packets (valid V, mutated M, random R) seed S
 * and exits 0, or 1 on a socket error (2 on bad arguments). Needs
 * CAP_NET_RAW. The packets are built as rocev2.h has it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* sendmmsg() */
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rocev2.h"

#define DETH_LEN	8
#define MAX_PAYLOAD	1100
#define PKT_MAX		1400
#define MAX_QPNS	32
#define MAX_JOBS	64
#define BATCH		32	/* packets per sendmmsg() */
#define UD_SEND_ONLY	0x64
#define UD_SEND_IMM	0x65

enum mutation {
	M_FLIP,		/* a bit after the UDP header, the ICRC made right */
	M_ICRC,		/* a bit after the UDP header, the ICRC left as it was */
	M_TRUNC,	/* cut short, the ICRC made right for the rest */
	M_TRUNC_BAD,	/* cut short, the ICRC not made right */
	M_PAD,		/* another pad count */
	M_TVER,		/* TVer not 0 */
	M_PKEY,		/* a random P_Key */
	M_OPCODE,	/* any other opcode, with random extension headers */
	M_DESTQP,	/* a random destination QP */
	M_DETH,		/* a random DETH */
	M_IPOPT,	/* IPv4 options (a header of 24 bytes) */
	M_COUNT
};

static const char * const mutation_name[M_COUNT] = {
	"flip", "icrc", "trunc", "trunc_bad", "pad", "tver", "pkey",
	"opcode", "destqp", "deth", "ipopt",
};

struct fuzz {
	uint64_t rng;
	uint32_t saddr, daddr;	/* network byte order */
	uint32_t qpns[MAX_QPNS];
	int nqpns;
	uint32_t qkey;
	int have_qkey;
	uint16_t ip_id;
};

/* xorshift64*, seeded through splitmix64 */
static uint64_t next(struct fuzz *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return f->rng * 0x2545f4914f6cdd1dULL;
}

static void seed(struct fuzz *f, uint64_t s)
{
	uint64_t z = s + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	f->rng = (z ^ (z >> 31)) | 1;
}

/* A random number below @n (n > 0). */
static uint32_t below(struct fuzz *f, uint32_t n)
{
	return (next(f) >> 32) % n;
}

static void fill(struct fuzz *f, uint8_t *p, size_t n)
{
	while (n--)
		*p++ = next(f) >> 56;
}

/*
 * Extension header bytes after the BTH of @opcode (IBA table 38, as
 * rxe_opcode.c and icrc.py), or -1 if it has none defined.
 */
static int ext_len(uint8_t opcode)
{
	static const signed char rc[32] = {
		0, 0, 0, 4, 0, 4,		/* SEND */
		16, 0, 0, 4, 16, 20,		/* RDMA WRITE */
		16,				/* RDMA READ request */
		4, 0, 4, 4,			/* RDMA READ response */
		4, 12,				/* ACK, ATOMIC ACK */
		28, 28,				/* CMP_SWAP, FETCH_ADD */
		-1, 4, 4,			/* SEND with invalidate */
		-1, -1, -1, -1, 20, 16, -1, -1,	/* FLUSH, ATOMIC WRITE */
	};
	uint8_t kind = opcode & 0xe0, op = opcode & 0x1f;

	if (kind == 0x00 || kind == 0x20)
		return rc[op];
	if (kind == 0x60 && (op == 0x04 || op == 0x05))
		return DETH_LEN + rc[op];
	return -1;
}

/* The IPv4 and UDP headers of a packet of @len bytes (no options). */
static void ip_udp(struct fuzz *f, uint8_t *p, size_t len)
{
	struct ipv4_udp h = { .saddr = f->saddr, .daddr = f->daddr };

	/* (one after another: the same seed, the same packets) */
	h.tos = next(f);
	if (!++f->ip_id)
		f->ip_id = 1;
	h.id = f->ip_id;
	h.ttl = 1 + below(f, 255);
	h.sport = 0xc000 | below(f, 0x4000);
	put_ipv4_udp(p, len, &h);
}

/* After a change of length: the IPv4 and UDP lengths of @len bytes. */
static void set_len(uint8_t *p, size_t len)
{
	size_t ihl = (p[0] & 0x0f) * 4;

	put16(p + 2, len);
	put16(p + ihl + 4, len - ihl);
}

/*
 * A packet of @opcode to @dqpn: BTH, the opcode's extension headers (for a
 * UD SEND the DETH with @qkey, else random bytes), @plen bytes of random
 * payload, the pad and the ICRC. Returns its length.
 */
static size_t build(struct fuzz *f, uint8_t *p, uint8_t opcode, uint32_t dqpn,
		    uint32_t qkey, size_t plen)
{
	int ext = ext_len(opcode);
	size_t pad = -plen & 3, len, at;

	if (ext < 0)
		ext = below(f, 8) * 4;
	len = IP_HDR + UDP_HDR + BTH_LEN + ext + plen + pad + ICRC_LEN;
	ip_udp(f, p, len);
	at = IP_HDR + UDP_HDR;
	p[at] = opcode;
	/* SE and M random, the pad count, TVer 0 */
	p[at + 1] = (next(f) & 0xc0) | pad << 4;
	put16(p + at + 2, below(f, 8) ? 0xffff : 0x7fff);
	p[at + 4] = next(f);			/* FECN, BECN: masked */
	put24(p + at + 5, dqpn);
	p[at + 8] = next(f) & 0x80;		/* A */
	put24(p + at + 9, next(f));		/* PSN */
	at += BTH_LEN;
	if (opcode == UD_SEND_ONLY || opcode == UD_SEND_IMM) {
		put32(p + at, qkey);
		p[at + 4] = 0;
		put24(p + at + 5, next(f));	/* source QP */
		fill(f, p + at + DETH_LEN, ext - DETH_LEN);
	} else {
		fill(f, p + at, ext);
	}
	at += ext;
	fill(f, p + at, plen);
	memset(p + at + plen, 0, pad);
	seal(p, len);
	return len;
}

/* A UD SEND only as the valid kind sends it. */
static size_t valid(struct fuzz *f, uint8_t *p)
{
	uint8_t opcode = below(f, 2) ? UD_SEND_IMM : UD_SEND_ONLY;
	uint32_t dqpn = f->qpns[below(f, f->nqpns)];
	uint32_t qkey = f->have_qkey && below(f, 4) ? f->qkey : (uint32_t)next(f);
	/* Mostly short ones, all lengths to beyond the MTU now and then. */
	size_t plen = below(f, 4) ? below(f, 300) : below(f, MAX_PAYLOAD + 1);

	return build(f, p, opcode, dqpn, qkey, plen);
}

/* A valid packet with mutation @m; returns its length. */
static size_t mutated(struct fuzz *f, uint8_t *p, enum mutation m)
{
	size_t len = valid(f, p), at, bit, cut, plen;
	const size_t bth = IP_HDR + UDP_HDR;
	uint32_t dqpn;
	uint8_t opcode;

	switch (m) {
	case M_FLIP:
		bit = bth * 8 + below(f, (len - bth - ICRC_LEN) * 8);
		p[bit / 8] ^= 1 << (bit % 8);
		break;
	case M_ICRC:
		bit = bth * 8 + below(f, (len - bth) * 8);
		p[bit / 8] ^= 1 << (bit % 8);
		return len;
	case M_TRUNC:
	case M_TRUNC_BAD:
		cut = bth + below(f, len - bth);
		set_len(p, cut);
		if (m == M_TRUNC)
			seal(p, cut);
		return cut;
	case M_PAD:
		p[bth + 1] ^= (1 + below(f, 3)) << 4;
		break;
	case M_TVER:
		p[bth + 1] |= 1 + below(f, 15);
		break;
	case M_PKEY:
		put16(p + bth + 2, next(f));
		break;
	case M_OPCODE:
		opcode = next(f);
		while (opcode == UD_SEND_ONLY || opcode == UD_SEND_IMM)
			opcode = next(f);
		dqpn = below(f, 2) ? f->qpns[below(f, f->nqpns)] : (uint32_t)next(f);
		plen = below(f, 4) ? below(f, 64) : below(f, MAX_PAYLOAD + 1);
		return build(f, p, opcode, dqpn, next(f), plen);
	case M_DESTQP:
		put24(p + bth + 5, next(f));
		break;
	case M_DETH:
		fill(f, p + bth + BTH_LEN, DETH_LEN);
		break;
	case M_IPOPT:
		/* three NOPs and an end of options */
		memmove(p + IP_HDR + 4, p + IP_HDR, len - IP_HDR);
		p[0] = 0x46;
		at = IP_HDR;
		p[at++] = 1;
		p[at++] = 1;
		p[at++] = 1;
		p[at] = 0;
		len += 4;
		set_len(p, len);
		return len;
	default:
		break;
	}
	seal(p, len);
	return len;
}

/* Random bytes after the UDP header. */
static size_t random_packet(struct fuzz *f, uint8_t *p)
{
	size_t len = IP_HDR + UDP_HDR + below(f, MAX_PAYLOAD + 100);

	ip_udp(f, p, len);
	fill(f, p + IP_HDR + UDP_HDR, len - IP_HDR - UDP_HDR);
	return len;
}

/*
 * Sends the @n packets of @msgs (sendmmsg: one system call for a batch);
 * waits a little when the device's queue is full.
 */
static int send_batch(int fd, struct mmsghdr *msgs, unsigned int n)
{
	const struct timespec pause = { 0, 1000000 };
	int sent;

	while (n) {
		sent = sendmmsg(fd, msgs, n, 0);
		if (sent < 0) {
			if (errno == ENOBUFS || errno == EAGAIN)
				nanosleep(&pause, NULL);
			else if (errno != EINTR)
				return -1;
			continue;
		}
		msgs += sent;
		n -= sent;
	}
	return 0;
}

static void bad_args(const char *prog)
{
	fprintf(stderr,
		"usage: %s -S SRC -D DST -q QPN [-q QPN...] [-k QKEY] [-n N] [-s SEED] [-j JOBS] [-v]\n",
		prog);
	exit(2);
}

/* What one sender sent, in memory its parent shares. */
struct tally {
	unsigned long kind[3];		/* valid, mutated, random */
	unsigned long mutation[M_COUNT];
	int failed;
};

/*
 * Sender @id of @jobs: its share of the @n packets, from a random stream
 * of its own (the seed's and its number's), onto a socket of its own.
 */
static void sender(struct fuzz *f, unsigned long long s, int id, int jobs,
		   unsigned long n, struct tally *t)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = f->daddr };
	static uint8_t pkt[BATCH][PKT_MAX];
	static struct mmsghdr msgs[BATCH];
	static struct iovec iov[BATCH];
	unsigned int queued = 0;
	int fd;

	seed(f, s ^ (0x9e3779b97f4a7c15ULL * id));
	f->ip_id = next(f);
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		perror("pktfuzz: socket(AF_INET, SOCK_RAW, IPPROTO_RAW)");
		t->failed = 1;
		return;
	}
	for (unsigned int b = 0; b < BATCH; b++) {
		iov[b].iov_base = pkt[b];
		msgs[b].msg_hdr.msg_iov = &iov[b];
		msgs[b].msg_hdr.msg_iovlen = 1;
		msgs[b].msg_hdr.msg_name = &to;
		msgs[b].msg_hdr.msg_namelen = sizeof(to);
	}
	for (unsigned long i = id; i < n; i += jobs) {
		uint32_t kind = below(f, 100);
		uint8_t *p = pkt[queued];
		enum mutation m;
		size_t len;

		if (kind < 40) {
			len = valid(f, p);
			t->kind[0]++;
		} else if (kind < 85) {
			m = below(f, M_COUNT);
			len = mutated(f, p, m);
			t->kind[1]++;
			t->mutation[m]++;
		} else {
			len = random_packet(f, p);
			t->kind[2]++;
		}
		iov[queued++].iov_len = len;
		if (queued < BATCH && i + jobs < n)
			continue;
		if (send_batch(fd, msgs, queued) < 0) {
			perror("pktfuzz: sendmmsg");
			t->failed = 1;
			break;
		}
		queued = 0;
	}
	close(fd);
}

int main(int argc, char **argv)
{
	unsigned long long seed_arg = (unsigned long long)time(NULL) ^ getpid();
	unsigned long n = 100000, kind[3] = { 0 }, by_mutation[M_COUNT] = { 0 };
	int opt, jobs = 1, verbose = 0, have_src = 0, have_dst = 0, failed = 0;
	struct fuzz f = { 0 };
	struct tally *tally;
	char *end;

	while ((opt = getopt(argc, argv, "S:D:q:k:n:s:j:v")) != -1) {
		switch (opt) {
		case 'S':
			have_src = inet_pton(AF_INET, optarg, &f.saddr) == 1;
			break;
		case 'D':
			have_dst = inet_pton(AF_INET, optarg, &f.daddr) == 1;
			break;
		case 'q':
			if (f.nqpns == MAX_QPNS)
				bad_args(argv[0]);
			f.qpns[f.nqpns++] = strtoul(optarg, &end, 0) & 0xffffff;
			if (*end)
				bad_args(argv[0]);
			break;
		case 'k':
			f.qkey = strtoul(optarg, &end, 0);
			f.have_qkey = 1;
			if (*end)
				bad_args(argv[0]);
			break;
		case 'n':
			n = strtoul(optarg, &end, 0);
			if (*end)
				bad_args(argv[0]);
			break;
		case 's':
			seed_arg = strtoull(optarg, &end, 0);
			if (*end)
				bad_args(argv[0]);
			break;
		case 'j':
			jobs = strtol(optarg, &end, 0);
			if (*end || jobs < 1 || jobs > MAX_JOBS)
				bad_args(argv[0]);
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			bad_args(argv[0]);
		}
	}
	if (!have_src || !have_dst || !f.nqpns || optind != argc)
		bad_args(argv[0]);
	tally = mmap(NULL, jobs * sizeof(*tally), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tally == MAP_FAILED) {
		perror("pktfuzz: mmap");
		return 1;
	}
	memset(tally, 0, jobs * sizeof(*tally));
	/* Sender 0 is this process, the others children. */
	for (int id = 1; id < jobs; id++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("pktfuzz: fork");
			tally[id].failed = 1;
		} else if (!pid) {
			sender(&f, seed_arg, id, jobs, n, &tally[id]);
			_exit(0);
		}
	}
	sender(&f, seed_arg, 0, jobs, n, &tally[0]);
	while (wait(NULL) > 0)
		;
	for (int id = 0; id < jobs; id++) {
		for (int k = 0; k < 3; k++)
			kind[k] += tally[id].kind[k];
		for (int m = 0; m < M_COUNT; m++)
			by_mutation[m] += tally[id].mutation[m];
		failed |= tally[id].failed;
	}
	if (verbose) {
		fprintf(stderr, "pktfuzz: mutations:");
		for (int m = 0; m < M_COUNT; m++)
			fprintf(stderr, " %s %lu", mutation_name[m], by_mutation[m]);
		fprintf(stderr, "\n");
	}
	printf("pktfuzz: sent %lu packets (valid %lu, mutated %lu, random %lu) seed %llu\n",
	       kind[0] + kind[1] + kind[2], kind[0], kind[1], kind[2], seed_arg);
	return failed;
}
