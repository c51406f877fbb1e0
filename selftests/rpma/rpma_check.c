// SPDX-License-Identifier: GPL-2.0
/*
 * librpma over a RoCE link, between two processes:
 *
 *   rpma_check server ADDR PORT
 *   rpma_check client ADDR PORT
 *
 * The server registers a region filled with a known pattern and hands its
 * descriptor to the client in the connection's private data. The client
 * then, each operation waited for with rpma_cq_wait() + rpma_cq_get_wc():
 *   1. rpma_read()s the whole region and an unaligned piece of it;
 *   2. rpma_write()s a second pattern over the whole region;
 *   3. rpma_send()s a message, then rpma_send_with_imm() another;
 *   4. rpma_write_with_imm()s a third pattern over an unaligned piece;
 *   5. reads the whole region back;
 *   6. receives the server's reply (rpma_send_with_imm), whose immediate
 *      value is the server's verdict on what it received.
 * The server checks every receive completion (opcode, length, immediate
 * value, bytes) and the region's final contents byte for byte.
 *
 * Each side prints what it checked and exits 0 only if everything was
 * right: 1 for a wrong byte or completion, 2 for a failed call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <librpma.h>

#define REGION		((1UL << 20) + 4099)	/* the server's region */
#define PIECE_OFF	13			/* an unaligned read */
#define PIECE_LEN	5003
#define IMM_OFF		4097			/* the write with immediate */
#define IMM_LEN		70001
#define SLOT		4096			/* one message buffer */
#define MSG_A		1000			/* plain send */
#define MSG_B		3001			/* send with immediate: > MTU */
#define MSG_REPLY	777
#define IMM_B		0x5eed0b0bU
#define IMM_W		0x5eed1111U
#define RECV_SLOTS	3
#define WAIT_MS		30000

/* The patterns, one per seed. */
enum { P_REGION = 1, P_WRITE, P_MSG_A, P_MSG_B, P_IMM_WRITE, P_REPLY };

static const char *side = "rpma_check";

static uint8_t pattern(unsigned int seed, size_t i)
{
	uint32_t x = (uint32_t)i ^ (seed << 24) ^ (uint32_t)(i >> 32);

	x *= 0x9e3779b1U;
	x ^= x >> 15;
	x *= 0x85ebca77U;
	x ^= x >> 13;
	return x >> 24;
}

static void fill(uint8_t *buf, size_t len, unsigned int seed, size_t base)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, base + i);
}

/* Compare BUF with the pattern at BASE; print the first difference. */
static bool same(const char *what, const uint8_t *buf, size_t len,
		 unsigned int seed, size_t base)
{
	size_t i, bad = 0;

	for (i = 0; i < len; i++) {
		if (buf[i] == pattern(seed, base + i))
			continue;
		if (!bad++)
			printf("%s: %s: byte %zu is 0x%02x, want 0x%02x\n", side,
			       what, i, buf[i], pattern(seed, base + i));
	}
	if (bad)
		printf("%s: %s: %zu of %zu bytes wrong\n", side, what, bad, len);
	else
		printf("%s: %s: %zu bytes verified\n", side, what, len);
	return !bad;
}

static int call_failed(const char *call, int ret)
{
	printf("%s: %s: %s (%d)\n", side, call, rpma_err_2str(ret), ret);
	return 2;
}

/*
 * The next completion on CQ: rpma_cq_get_wc() first, and rpma_cq_wait()
 * (after a poll of its fd, to bound the wait) only when the CQ is empty.
 */
static int next_wc(struct rpma_cq *cq, struct ibv_wc *wc)
{
	struct pollfd pfd = { .events = POLLIN };
	int ret;

	ret = rpma_cq_get_fd(cq, &pfd.fd);
	if (ret)
		return call_failed("rpma_cq_get_fd", ret);
	for (;;) {
		ret = rpma_cq_get_wc(cq, 1, wc, NULL);
		if (!ret)
			break;
		if (ret != RPMA_E_NO_COMPLETION)
			return call_failed("rpma_cq_get_wc", ret);
		ret = poll(&pfd, 1, WAIT_MS);
		if (ret <= 0) {
			printf("%s: no completion in %d ms\n", side, WAIT_MS);
			return 2;
		}
		ret = rpma_cq_wait(cq);
		if (ret && ret != RPMA_E_NO_COMPLETION)
			return call_failed("rpma_cq_wait", ret);
	}
	if (wc->status != IBV_WC_SUCCESS) {
		printf("%s: completion of wr_id %llu: %s\n", side,
		       (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
		return 1;
	}
	return 0;
}

/* The next completion must be OPCODE for the request of CTX. */
static int expect_wc(struct rpma_cq *cq, enum ibv_wc_opcode opcode,
		     const void *ctx, const char *what)
{
	struct ibv_wc wc;
	int ret = next_wc(cq, &wc);

	if (ret)
		return ret;
	if (wc.opcode != opcode || wc.wr_id != (uintptr_t)ctx) {
		printf("%s: %s: completion opcode %d wr_id %llu, want %d wr_id %llu\n",
		       side, what, wc.opcode, (unsigned long long)wc.wr_id,
		       opcode, (unsigned long long)(uintptr_t)ctx);
		return 1;
	}
	printf("%s: %s: completed\n", side, what);
	return 0;
}

/* Posting @name returned @ret; if it worked, its completion is @op for @ctx. */
static int completed(struct rpma_cq *cq, int ret, const char *name,
		     enum ibv_wc_opcode op, const void *ctx, const char *what)
{
	if (ret)
		return call_failed(name, ret);
	return expect_wc(cq, op, ctx, what);
}

/* Until the connection's next event, which must be WANT. */
static int expect_event(struct rpma_conn *conn, enum rpma_conn_event want)
{
	enum rpma_conn_event ev = RPMA_CONN_UNDEFINED;
	int ret = rpma_conn_next_event(conn, &ev);

	if (ret)
		return call_failed("rpma_conn_next_event", ret);
	if (ev != want) {
		printf("%s: connection event %s, want %s\n", side,
		       rpma_utils_conn_event_2str(ev),
		       rpma_utils_conn_event_2str(want));
		return 2;
	}
	return 0;
}

static int new_peer(const char *addr, enum rpma_util_ibv_context_type type,
		    struct rpma_peer **peer)
{
	struct ibv_context *ctx;
	int ret;

	ret = rpma_utils_get_ibv_context(addr, type, &ctx);
	if (ret)
		return call_failed("rpma_utils_get_ibv_context", ret);
	printf("%s: device %s\n", side, ibv_get_device_name(ctx->device));
	ret = rpma_peer_new(ctx, peer);
	return ret ? call_failed("rpma_peer_new", ret) : 0;
}

static void *alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/* What the server checks of one receive completion. */
struct expected_recv {
	const char *what;
	enum ibv_wc_opcode opcode;
	bool imm;
	uint32_t imm_data;
	uint32_t len;
	unsigned int seed;	/* 0: no payload to compare */
};

static const struct expected_recv server_recvs[RECV_SLOTS] = {
	{ "send", IBV_WC_RECV, false, 0, MSG_A, P_MSG_A },
	{ "send with immediate", IBV_WC_RECV, true, IMM_B, MSG_B, P_MSG_B },
	{ "write with immediate", IBV_WC_RECV_RDMA_WITH_IMM, true, IMM_W,
	  IMM_LEN, 0 },
};

static int server_recv(struct rpma_cq *cq, uint8_t *msgs,
		       const struct expected_recv *e)
{
	struct ibv_wc wc;
	bool imm;
	int ret = next_wc(cq, &wc);

	if (ret)
		return ret;
	imm = wc.wc_flags & IBV_WC_WITH_IMM;
	if (wc.opcode != e->opcode || imm != e->imm || wc.byte_len != e->len ||
	    (imm && ntohl(wc.imm_data) != e->imm_data) || wc.wr_id >= RECV_SLOTS) {
		printf("%s: %s: got opcode %d imm %d (0x%x) len %u wr_id %llu; want opcode %d imm %d (0x%x) len %u\n",
		       side, e->what, wc.opcode, imm, imm ? ntohl(wc.imm_data) : 0,
		       wc.byte_len, (unsigned long long)wc.wr_id, e->opcode,
		       e->imm, e->imm_data, e->len);
		return 1;
	}
	if (imm)
		printf("%s: %s: immediate 0x%x received\n", side, e->what,
		       ntohl(wc.imm_data));
	if (e->seed && !same(e->what, msgs + wc.wr_id * SLOT, e->len, e->seed, 0))
		return 1;
	return 0;
}

static int server(const char *addr, const char *port)
{
	struct rpma_mr_local *region_mr = NULL, *msg_mr = NULL;
	struct rpma_conn_private_data pdata;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_peer *peer = NULL;
	struct rpma_ep *ep = NULL;
	uint8_t desc[64], *region, *msgs;
	struct rpma_cq *cq;
	size_t desc_size;
	uint32_t verdict = 0;
	uintptr_t i;
	int ret;

	region = alloc(REGION);
	msgs = alloc((RECV_SLOTS + 1) * SLOT);
	if (!region || !msgs)
		return 2;
	fill(region, REGION, P_REGION, 0);
	ret = new_peer(addr, RPMA_UTIL_IBV_CONTEXT_LOCAL, &peer);
	if (ret)
		return ret;
	ret = rpma_mr_reg(peer, region, REGION,
			  RPMA_MR_USAGE_READ_SRC | RPMA_MR_USAGE_WRITE_DST, &region_mr);
	if (ret)
		return call_failed("rpma_mr_reg", ret);
	ret = rpma_mr_reg(peer, msgs, (RECV_SLOTS + 1) * SLOT,
			  RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &msg_mr);
	if (ret)
		return call_failed("rpma_mr_reg", ret);
	ret = rpma_mr_get_descriptor_size(region_mr, &desc_size);
	if (ret || desc_size > sizeof(desc))
		return call_failed("rpma_mr_get_descriptor_size", ret);
	ret = rpma_mr_get_descriptor(region_mr, desc);
	if (ret)
		return call_failed("rpma_mr_get_descriptor", ret);

	ret = rpma_ep_listen(peer, addr, port, &ep);
	if (ret)
		return call_failed("rpma_ep_listen", ret);
	printf("%s: listening on %s:%s\n", side, addr, port);
	ret = rpma_ep_next_conn_req(ep, NULL, &req);
	if (ret)
		return call_failed("rpma_ep_next_conn_req", ret);
	/* Receives before the connection exists: rpma_conn_req_recv(). */
	for (i = 0; i < RECV_SLOTS; i++) {
		ret = rpma_conn_req_recv(req, msg_mr, i * SLOT, SLOT, (void *)i);
		if (ret)
			return call_failed("rpma_conn_req_recv", ret);
	}
	pdata.ptr = desc;
	pdata.len = desc_size;
	ret = rpma_conn_req_connect(&req, &pdata, &conn);
	if (ret)
		return call_failed("rpma_conn_req_connect", ret);
	ret = expect_event(conn, RPMA_CONN_ESTABLISHED);
	if (ret)
		return ret;
	printf("%s: connected\n", side);
	ret = rpma_conn_get_cq(conn, &cq);
	if (ret)
		return call_failed("rpma_conn_get_cq", ret);

	/* The client's messages, in the order it sent them (RC). */
	for (i = 0; i < RECV_SLOTS; i++) {
		ret = server_recv(cq, msgs, &server_recvs[i]);
		if (ret == 2)
			return 2;
		if (ret)
			verdict |= 1U << i;
	}
	/* The client's write, then its write with immediate inside it. */
	if (!same("region after write", region, IMM_OFF, P_WRITE, 0) ||
	    !same("region after write with immediate", region + IMM_OFF,
		  IMM_LEN, P_IMM_WRITE, IMM_OFF) ||
	    !same("region's tail after write", region + IMM_OFF + IMM_LEN,
		  REGION - IMM_OFF - IMM_LEN, P_WRITE, IMM_OFF + IMM_LEN))
		verdict |= 1U << RECV_SLOTS;

	/* The verdict travels as the immediate value of the reply. */
	fill(msgs + RECV_SLOTS * SLOT, MSG_REPLY, P_REPLY, 0);
	ret = completed(cq, rpma_send_with_imm(conn, msg_mr, RECV_SLOTS * SLOT,
					       MSG_REPLY,
					       RPMA_F_COMPLETION_ALWAYS,
					       verdict, (void *)99),
			"rpma_send_with_imm", IBV_WC_SEND, (void *)99, "reply");
	if (ret)
		return ret;

	/* The client disconnects. */
	ret = expect_event(conn, RPMA_CONN_CLOSED);
	if (ret)
		return ret;
	ret = rpma_conn_disconnect(conn);
	if (ret)
		return call_failed("rpma_conn_disconnect", ret);
	ret = rpma_conn_delete(&conn);
	if (ret)
		return call_failed("rpma_conn_delete", ret);
	ret = rpma_ep_shutdown(&ep);
	if (ret)
		return call_failed("rpma_ep_shutdown", ret);
	if (rpma_mr_dereg(&region_mr) || rpma_mr_dereg(&msg_mr) ||
	    rpma_peer_delete(&peer))
		return call_failed("teardown", ret);
	free(region);
	free(msgs);
	printf("%s: verdict 0x%x\n", side, verdict);
	return verdict ? 1 : 0;
}

static int client(const char *addr, const char *port)
{
	struct rpma_mr_local *buf_mr = NULL, *msg_mr = NULL;
	struct rpma_mr_remote *region = NULL;
	struct rpma_conn_private_data pdata;
	struct rpma_conn_cfg *cfg = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_peer *peer = NULL;
	uint8_t *buf, *msgs;
	struct rpma_cq *cq, *rcq;
	size_t remote_size;
	struct ibv_wc wc;
	bool ok = true;
	int ret;

	buf = alloc(REGION);
	msgs = alloc(3 * SLOT);
	if (!buf || !msgs)
		return 2;
	ret = new_peer(addr, RPMA_UTIL_IBV_CONTEXT_REMOTE, &peer);
	if (ret)
		return ret;
	ret = rpma_mr_reg(peer, buf, REGION,
			  RPMA_MR_USAGE_READ_DST | RPMA_MR_USAGE_WRITE_SRC, &buf_mr);
	if (ret)
		return call_failed("rpma_mr_reg", ret);
	ret = rpma_mr_reg(peer, msgs, 3 * SLOT,
			  RPMA_MR_USAGE_SEND | RPMA_MR_USAGE_RECV, &msg_mr);
	if (ret)
		return call_failed("rpma_mr_reg", ret);

	/*
	 * A TCG guest resolves addresses and routes slowly. The reply lands
	 * in a receive CQ of its own: it may come before the last read's
	 * completion.
	 */
	ret = rpma_conn_cfg_new(&cfg);
	if (!ret)
		ret = rpma_conn_cfg_set_timeout(cfg, 10000);
	if (!ret)
		ret = rpma_conn_cfg_set_rcq_size(cfg, 4);
	if (ret)
		return call_failed("rpma_conn_cfg", ret);
	ret = rpma_conn_req_new(peer, addr, port, cfg, &req);
	if (ret)
		return call_failed("rpma_conn_req_new", ret);
	/* The reply's receive, posted before the connection exists. */
	ret = rpma_conn_req_recv(req, msg_mr, 2 * SLOT, SLOT, (void *)7);
	if (ret)
		return call_failed("rpma_conn_req_recv", ret);
	ret = rpma_conn_req_connect(&req, NULL, &conn);
	if (ret)
		return call_failed("rpma_conn_req_connect", ret);
	ret = expect_event(conn, RPMA_CONN_ESTABLISHED);
	if (ret)
		return ret;
	printf("%s: connected\n", side);
	ret = rpma_conn_get_private_data(conn, &pdata);
	if (ret || !pdata.ptr)
		return call_failed("rpma_conn_get_private_data", ret);
	ret = rpma_mr_remote_from_descriptor(pdata.ptr, pdata.len, &region);
	if (ret)
		return call_failed("rpma_mr_remote_from_descriptor", ret);
	ret = rpma_mr_remote_get_size(region, &remote_size);
	if (ret || remote_size != REGION) {
		printf("%s: remote region of %zu bytes, want %lu\n", side,
		       remote_size, REGION);
		return 1;
	}
	ret = rpma_conn_get_cq(conn, &cq);
	if (!ret)
		ret = rpma_conn_get_rcq(conn, &rcq);
	if (ret || !rcq)
		return call_failed("rpma_conn_get_cq/rcq", ret);

	/* 1. read: the whole region, then an unaligned piece */
	ret = completed(cq, rpma_read(conn, buf_mr, 0, region, 0, REGION,
				      RPMA_F_COMPLETION_ALWAYS, (void *)1),
			"rpma_read", IBV_WC_RDMA_READ, (void *)1,
			"read of the region");
	if (ret)
		return ret;
	ok &= same("read of the region", buf, REGION, P_REGION, 0);
	memset(buf, 0, REGION);
	ret = completed(cq, rpma_read(conn, buf_mr, 7, region, PIECE_OFF,
				      PIECE_LEN, RPMA_F_COMPLETION_ALWAYS,
				      (void *)2),
			"rpma_read", IBV_WC_RDMA_READ, (void *)2,
			"unaligned read");
	if (ret)
		return ret;
	ok &= same("unaligned read", buf + 7, PIECE_LEN, P_REGION, PIECE_OFF);
	ok &= buf[6] == 0 && buf[7 + PIECE_LEN] == 0;

	/* 2. write: a new pattern over the whole region */
	fill(buf, REGION, P_WRITE, 0);
	ret = completed(cq, rpma_write(conn, region, 0, buf_mr, 0, REGION,
				       RPMA_F_COMPLETION_ALWAYS, (void *)3),
			"rpma_write", IBV_WC_RDMA_WRITE, (void *)3,
			"write of the region");
	if (ret)
		return ret;

	/* 3. send, then send with immediate */
	fill(msgs, MSG_A, P_MSG_A, 0);
	ret = completed(cq, rpma_send(conn, msg_mr, 0, MSG_A,
				      RPMA_F_COMPLETION_ALWAYS, (void *)4),
			"rpma_send", IBV_WC_SEND, (void *)4, "send");
	if (ret)
		return ret;
	fill(msgs + SLOT, MSG_B, P_MSG_B, 0);
	ret = completed(cq, rpma_send_with_imm(conn, msg_mr, SLOT, MSG_B,
					       RPMA_F_COMPLETION_ALWAYS, IMM_B,
					       (void *)5),
			"rpma_send_with_imm", IBV_WC_SEND, (void *)5,
			"send with immediate");
	if (ret)
		return ret;

	/* 4. write with immediate: an unaligned piece of a third pattern */
	fill(buf + IMM_OFF, IMM_LEN, P_IMM_WRITE, IMM_OFF);
	ret = completed(cq, rpma_write_with_imm(conn, region, IMM_OFF, buf_mr,
						IMM_OFF, IMM_LEN,
						RPMA_F_COMPLETION_ALWAYS, IMM_W,
						(void *)6),
			"rpma_write_with_imm", IBV_WC_RDMA_WRITE, (void *)6,
			"write with immediate");
	if (ret)
		return ret;

	/* 5. the whole region read back */
	memset(buf, 0, REGION);
	ret = completed(cq, rpma_read(conn, buf_mr, 0, region, 0, REGION,
				      RPMA_F_COMPLETION_ALWAYS, (void *)8),
			"rpma_read", IBV_WC_RDMA_READ, (void *)8, "read back");
	if (ret)
		return ret;
	ok &= same("read back, head", buf, IMM_OFF, P_WRITE, 0);
	ok &= same("read back, written with immediate", buf + IMM_OFF, IMM_LEN,
		   P_IMM_WRITE, IMM_OFF);
	ok &= same("read back, tail", buf + IMM_OFF + IMM_LEN,
		   REGION - IMM_OFF - IMM_LEN, P_WRITE, IMM_OFF + IMM_LEN);

	/* 6. the server's reply: its verdict is the immediate value */
	ret = next_wc(rcq, &wc);
	if (ret)
		return ret;
	if (wc.opcode != IBV_WC_RECV || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    wc.byte_len != MSG_REPLY || wc.wr_id != 7) {
		printf("%s: reply: opcode %d flags 0x%x len %u wr_id %llu\n",
		       side, wc.opcode, wc.wc_flags, wc.byte_len,
		       (unsigned long long)wc.wr_id);
		return 1;
	}
	ok &= same("reply", msgs + 2 * SLOT, MSG_REPLY, P_REPLY, 0);
	printf("%s: the server's verdict: 0x%x\n", side, ntohl(wc.imm_data));
	ok &= ntohl(wc.imm_data) == 0;

	ret = rpma_conn_disconnect(conn);
	if (ret)
		return call_failed("rpma_conn_disconnect", ret);
	ret = expect_event(conn, RPMA_CONN_CLOSED);
	if (ret)
		return ret;
	ret = rpma_conn_delete(&conn);
	if (ret)
		return call_failed("rpma_conn_delete", ret);
	if (rpma_mr_remote_delete(&region) || rpma_mr_dereg(&buf_mr) ||
	    rpma_mr_dereg(&msg_mr) || rpma_conn_cfg_delete(&cfg) ||
	    rpma_peer_delete(&peer))
		return call_failed("teardown", ret);
	free(buf);
	free(msgs);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server|client ADDR PORT\n", argv[0]);
		return 2;
	}
	side = argv[1];
	/* Nothing here may hang: the whole exchange takes seconds. */
	alarm(120);
	if (!strcmp(side, "server"))
		ret = server(argv[2], argv[3]);
	else
		ret = client(argv[2], argv[3]);
	printf("%s: %s\n", side, ret ? "FAILED" : "all verified");
	return ret;
}
