/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A connected pair of RC QPs on one rsoft device, inside one process: what
 * most data-path selftests start from.
 */
#ifndef RSOFT_LOOPBACK_H
#define RSOFT_LOOPBACK_H

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rsoft.h"

struct loopback {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;	/* send CQ of a */
	struct ibv_cq *rcq;	/* recv CQ of b (and send CQ of b, recv CQ of a) */
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	char *buf;
	size_t len;
};

/* Where and how an RC or UC QP connects (rc_connect). */
struct rc_path {
	struct ibv_ah_attr av;	/* the peer's port: a LID, or a GID on RoCE */
	enum ibv_mtu mtu;
	uint32_t dest_qpn;
	int access;		/* what the peer may do here (qp_access_flags) */
	uint8_t rnr_retry;
	/* An RC request nobody answers fails after (retry_cnt + 1) local
	 * ACK timeouts of 4.096 us << timeout.
	 */
	uint8_t timeout, retry_cnt;
	/* The first PSN sent, and the one expected from the peer. */
	uint32_t sq_psn, rq_psn;
	/* No responder resources (max_dest_rd_atomic 0) instead of one. */
	int no_rd_atomic;
	/* READs and atomics in flight each way (max_rd_atomic and
	 * max_dest_rd_atomic), when not 0 (one).
	 */
	uint8_t rd_atomic;
};

/* Moves @qp (in RESET) through INIT, RTR and RTS along @p. */
static inline int rc_connect(struct ibv_qp *qp, const struct rc_path *p)
{
	int uc = qp->qp_type == IBV_QPT_UC;
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = p->access,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = p->mtu;
	attr.dest_qp_num = p->dest_qpn;
	attr.rq_psn = p->rq_psn;
	attr.max_dest_rd_atomic = p->no_rd_atomic ? 0 : p->rd_atomic ?: 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr = p->av;
	/* UC has no responder resources, no retries, no acknowledgements. */
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (uc ? 0 :
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = p->timeout;
	attr.retry_cnt = p->retry_cnt;
	attr.rnr_retry = p->rnr_retry;
	attr.sq_psn = p->sq_psn;
	attr.max_rd_atomic = p->rd_atomic ?: 1;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | (uc ? 0 :
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
}

/* rc_connect towards @dest_qpn on @lid of an InfiniBand port. */
static inline int rsoft_connect_retry(struct ibv_qp *qp, uint16_t lid,
				      uint32_t dest_qpn, uint8_t rnr_retry,
				      int access, uint8_t timeout,
				      uint8_t retry_cnt)
{
	struct rc_path p = {
		.av = { .dlid = lid, .port_num = 1 },
		.mtu = IBV_MTU_4096, .dest_qpn = dest_qpn, .access = access,
		.rnr_retry = rnr_retry, .timeout = timeout,
		.retry_cnt = retry_cnt,
	};

	return rc_connect(qp, &p);
}

/* Moves a UD QP (in RESET) to RTS with Q_Key @qkey. */
static inline int ud_ready(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}


/* 14 and 7: about half a second until an unanswered request fails. */
static inline int rsoft_connect_access(struct ibv_qp *qp, uint16_t lid,
				       uint32_t dest_qpn, uint8_t rnr_retry,
				       int access)
{
	return rsoft_connect_retry(qp, lid, dest_qpn, rnr_retry, access, 14, 7);
}

static inline int rsoft_connect_rnr(struct ibv_qp *qp, uint16_t lid,
				    uint32_t dest_qpn, uint8_t rnr_retry)
{
	return rsoft_connect_access(qp, lid, dest_qpn, rnr_retry,
				    IBV_ACCESS_LOCAL_WRITE);
}

static inline int rsoft_connect(struct ibv_qp *qp, uint16_t lid, uint32_t dest_qpn)
{
	/* 7: retry forever, as ibv_rc_pingpong does. */
	return rsoft_connect_rnr(qp, lid, dest_qpn, 7);
}

static inline struct ibv_qp *rsoft_rc_qp(struct loopback *lb, struct ibv_cq *scq,
					 struct ibv_cq *rcq, int depth)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = {
			.max_send_wr = depth,
			.max_recv_wr = depth,
			.max_send_sge = 2,
			.max_recv_sge = 2,
		},
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(lb->pd, &init);
}

/*
 * Sets up a -> b on @dev: a sends with its completions on @scq_depth-entry
 * scq; b receives on a CQ big enough for @depth completions. Returns 0 or -1.
 */
static inline int loopback_init_dev(struct loopback *lb, const char *dev,
				    int scq_depth, int depth, size_t len)
{
	struct ibv_port_attr port;

	memset(lb, 0, sizeof(*lb));
	lb->ctx = rsoft_open(dev);
	if (!lb->ctx || ibv_query_port(lb->ctx, 1, &port))
		return -1;
	lb->pd = ibv_alloc_pd(lb->ctx);
	lb->len = len;
	lb->buf = calloc(1, len);
	if (!lb->pd || !lb->buf)
		return -1;
	lb->mr = ibv_reg_mr(lb->pd, lb->buf, len, IBV_ACCESS_LOCAL_WRITE);
	lb->scq = ibv_create_cq(lb->ctx, scq_depth, NULL, NULL, 0);
	lb->rcq = ibv_create_cq(lb->ctx, 2 * depth + 2, NULL, NULL, 0);
	if (!lb->mr || !lb->scq || !lb->rcq)
		return -1;
	lb->a = rsoft_rc_qp(lb, lb->scq, lb->rcq, depth);
	lb->b = rsoft_rc_qp(lb, lb->rcq, lb->rcq, depth);
	if (!lb->a || !lb->b)
		return -1;
	if (rsoft_connect(lb->a, port.lid, lb->b->qp_num) ||
	    rsoft_connect(lb->b, port.lid, lb->a->qp_num))
		return -1;
	return 0;
}

static inline int loopback_init(struct loopback *lb, int scq_depth, int depth,
				size_t len)
{
	return loopback_init_dev(lb, RSOFT_DEV, scq_depth, depth, len);
}

static inline void loopback_fini(struct loopback *lb)
{
	if (lb->a)
		ibv_destroy_qp(lb->a);
	if (lb->b)
		ibv_destroy_qp(lb->b);
	if (lb->scq)
		ibv_destroy_cq(lb->scq);
	if (lb->rcq)
		ibv_destroy_cq(lb->rcq);
	if (lb->mr)
		ibv_dereg_mr(lb->mr);
	if (lb->pd)
		ibv_dealloc_pd(lb->pd);
	free(lb->buf);
	if (lb->ctx)
		ibv_close_device(lb->ctx);
}

/* Posts a receive of @len bytes at @off of the buffer, id @wr_id. */
static inline int post_recv(struct loopback *lb, struct ibv_qp *qp,
			    uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)lb->buf + off,
		.length = len,
		.lkey = lb->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Posts a signaled SEND of @len bytes at @off with key @lkey, id @wr_id. */
static inline int post_send_key(struct loopback *lb, struct ibv_qp *qp,
				uint64_t wr_id, size_t off, uint32_t len,
				uint32_t lkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)lb->buf + off,
		.length = len,
		.lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static inline int post_send(struct loopback *lb, struct ibv_qp *qp,
			    uint64_t wr_id, size_t off, uint32_t len)
{
	return post_send_key(lb, qp, wr_id, off, len, lb->mr->lkey);
}

static inline int set_qp_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

static inline enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

/* CLOCK_MONOTONIC in seconds. */
static inline double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Port 1's counter @name of @ctx's device, as sysfs shows it; -1 if none. */
static inline long long port_counter(struct ibv_context *ctx, const char *name)
{
	long long v = -1;
	char path[160];
	FILE *f;

	/* The core caches the values for 10 ms. */
	usleep(50000);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
		 ibv_get_device_name(ctx->device), name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Polls @cq for one completion for up to @secs seconds: for completions
 * that come after a wait in the driver (retries). Returns what the last
 * ibv_poll_cq returned.
 */
static inline int poll_wait(struct ibv_cq *cq, struct ibv_wc *wc, double secs)
{
	double end = mono_now() + secs;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, wc)) && mono_now() < end)
		usleep(1000);
	return n;
}

/* Waits up to @ms milliseconds for an async event of @ctx. */
static inline int wait_async(struct ibv_context *ctx,
			     struct ibv_async_event *ev, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int flags = fcntl(ctx->async_fd, F_GETFL);

	fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK);
	if (poll(&pfd, 1, ms) != 1)
		return -1;
	return ibv_get_async_event(ctx, ev);
}

/*
 * A SEND long enough to be caught in flight: 64 MiB of 0xab from a's new
 * MR (wr_id 1, signaled) into another new MR, received by @qp's receive
 * or, with @qp NULL, @srq's (wr_id 9).
 */
struct long_send {
	size_t len;
	char *src, *dst;
	struct ibv_mr *smr, *dmr;
};

/*
 * Posts the receive and the SEND and returns once the copy has visibly
 * begun: 1 while it still goes on, 0 if it has ended already, -1 if it
 * could not be set up or did not begin within 5 seconds.
 */
static inline int long_send_start(struct loopback *lb, struct long_send *ls,
				  struct ibv_qp *qp, struct ibv_srq *srq)
{
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *sbad;
	double end;

	ls->len = 64 << 20;
	ls->src = malloc(ls->len);
	ls->dst = calloc(1, ls->len);
	if (!ls->src || !ls->dst)
		return -1;
	memset(ls->src, 0xab, ls->len);
	ls->smr = ibv_reg_mr(lb->pd, ls->src, ls->len, 0);
	ls->dmr = ibv_reg_mr(lb->pd, ls->dst, ls->len, IBV_ACCESS_LOCAL_WRITE);
	if (!ls->smr || !ls->dmr)
		return -1;
	sge = (struct ibv_sge){ (uintptr_t)ls->dst, ls->len, ls->dmr->lkey };
	if (qp ? ibv_post_recv(qp, &rwr, &rbad) : ibv_post_srq_recv(srq, &rwr, &rbad))
		return -1;
	sge = (struct ibv_sge){ (uintptr_t)ls->src, ls->len, ls->smr->lkey };
	if (ibv_post_send(lb->a, &swr, &sbad))
		return -1;
	/* From the post: filling and pinning 128 MiB may take longer. */
	end = mono_now() + 5;
	while (!__atomic_load_n(ls->dst, __ATOMIC_RELAXED) && mono_now() < end)
		;
	if (__atomic_load_n(ls->dst, __ATOMIC_RELAXED) != (char)0xab)
		return -1;
	return !__atomic_load_n(ls->dst + ls->len - 1, __ATOMIC_RELAXED);
}

/* Deregisters and frees what long_send_start() made; 0 if all went. */
static inline int long_send_end(struct long_send *ls)
{
	int ret = 0;

	if (ls->smr && ibv_dereg_mr(ls->smr))
		ret = -1;
	if (ls->dmr && ibv_dereg_mr(ls->dmr))
		ret = -1;
	free(ls->src);
	free(ls->dst);
	return ret;
}

#endif /* RSOFT_LOOPBACK_H */
