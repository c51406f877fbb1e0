/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One end of an RC (or UC) connection between port 1 of two devices that
 * one process opens (the core shares RDMA devices with every namespace),
 * for the tests that run across a wire between them (psnwrap, window,
 * ucloss, misfit), or of one to a peer that forge.h forges: each side's
 * memory is checked directly.
 */
#ifndef RSOFT_WIRE_SIDE_H
#define RSOFT_WIRE_SIDE_H

#include <stdio.h>
#include <stdlib.h>

#include "../loopback.h"

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_srq *srq;	/* with SIDE_SRQ: the QP's receives */
	union ibv_gid gid;
	int sgid;
	/* @len bytes, registered for local and remote access. */
	unsigned char *buf;
	size_t len;
};

/* side_open's flags: a UC QP instead of RC; its receives from an SRQ. */
#define SIDE_UC		1
#define SIDE_SRQ	2

/*
 * Opens @dev for a QP as @flags say whose path starts at GID index @sgid,
 * with @len bytes of memory and room for @depth WRs each way (and
 * completions).
 */
static inline int side_open(struct side *s, const char *dev, int sgid,
			    size_t len, int depth, int flags)
{
	struct ibv_qp_init_attr init = {
		.qp_type = flags & SIDE_UC ? IBV_QPT_UC : IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_srq_init_attr srq = {
		.attr = { .max_wr = depth, .max_sge = 1 },
	};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	s->sgid = sgid;
	s->len = len;
	s->ctx = rsoft_open(dev);
	if (!s->ctx || ibv_query_gid(s->ctx, 1, sgid, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 2 * depth, NULL, NULL, 0) : NULL;
	s->buf = aligned_alloc(4096, len);
	if (!s->cq || !s->buf)
		return -1;
	memset(s->buf, 0, len);
	s->mr = ibv_reg_mr(s->pd, s->buf, len, access);
	if (s->mr && flags & SIDE_SRQ) {
		s->srq = ibv_create_srq(s->pd, &srq);
		if (!s->srq)
			return -1;
	}
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	init.srq = s->srq;
	s->qp = s->mr ? ibv_create_qp(s->pd, &init) : NULL;
	return s->qp ? 0 : -1;
}

static inline void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
}

/*
 * Connects @from's QP to @to's, path MTU @mtu, both directions starting
 * at PSN @psn, with @rd_atomic READs and atomics in flight (0: one) and
 * a local ACK timeout of 4.096 us << @timeout.
 */
static inline int side_connect_mtu(struct side *from, const struct side *to,
				   uint32_t psn, uint8_t rd_atomic,
				   uint8_t timeout, enum ibv_mtu mtu)
{
	struct rc_path p = {
		.av = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = to->gid, .sgid_index = from->sgid,
				 .hop_limit = 64 },
		},
		.mtu = mtu, .dest_qpn = to->qp->qp_num,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rnr_retry = 7, .timeout = timeout, .retry_cnt = 7,
		.sq_psn = psn, .rq_psn = psn, .rd_atomic = rd_atomic,
	};

	return rc_connect(from->qp, &p);
}

/* side_connect_mtu() at path MTU 1024. */
static inline int side_connect(struct side *from, const struct side *to,
			       uint32_t psn, uint8_t rd_atomic,
			       uint8_t timeout)
{
	return side_connect_mtu(from, to, psn, rd_atomic, timeout,
				IBV_MTU_1024);
}

/*
 * Opens the two sides that @argv names (DEV0 GIDX0 DEV1 GIDX1 after the
 * program's name) as side_open() does, and connects each to the other as
 * side_connect() does. Prints what failed and returns -1 if anything did.
 */
static inline int sides_open(struct side s[2], int argc, char **argv,
			     size_t len, int depth, uint32_t psn,
			     uint8_t rd_atomic, uint8_t timeout)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV0 GIDX0 DEV1 GIDX1\n", argv[0]);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		if (side_open(&s[i], argv[1 + 2 * i], atoi(argv[2 + 2 * i]),
			      len, depth, 0)) {
			printf("# %s: %m\n", argv[1 + 2 * i]);
			return -1;
		}
	if (side_connect(&s[0], &s[1], psn, rd_atomic, timeout) ||
	    side_connect(&s[1], &s[0], psn, rd_atomic, timeout)) {
		printf("# connect: %m\n");
		return -1;
	}
	return 0;
}

/*
 * Whether @s's RC QP ended as a responder that refused a request does
 * (IBA's class A or C error): it is in ERR and said why in the affiliated
 * event @why (an enum ibv_event_type), or, with @why -1, said nothing (a
 * receive completed in error said why).
 */
static inline int side_ended(struct side *s, int why)
{
	struct ibv_async_event ev;
	int got;

	if (qp_state(s->qp) != IBV_QPS_ERR) {
		printf("# the responder is not in ERR\n");
		return -1;
	}
	if (wait_async(s->ctx, &ev, why < 0 ? 300 : 5000)) {
		if (why < 0)
			return 0;
		printf("# no %s event\n", ibv_event_type_str(why));
		return -1;
	}
	got = ev.event_type;
	ibv_ack_async_event(&ev);
	if (got != why || ev.element.qp != s->qp) {
		printf("# event %s\n", ibv_event_type_str(got));
		return -1;
	}
	return 0;
}

/* Waits for @cq's next completion: that of @wr_id, successful. */
static inline int completed(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	if (poll_wait(cq, &wc, 60) != 1) {
		printf("# no completion of wr %llu\n",
		       (unsigned long long)wr_id);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id) {
		printf("# wr %llu: %s\n", (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

#endif /* RSOFT_WIRE_SIDE_H */
