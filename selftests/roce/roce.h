/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCE paths for the tests that roce.sh and roce-cross.sh run on links.
 * They use RoCE v1 link-local GIDs: for those the core derives the
 * destination MAC from the GID, with no neighbour to resolve, so they
 * also reach another local netdev's device.
 */
#ifndef RSOFT_ROCE_H
#define RSOFT_ROCE_H

#include "../loopback.h"

/* The index of a RoCE v1 link-local GID of port 1 of @ctx, or -1. */
static inline int roce_v1_link_local(struct ibv_context *ctx)
{
	struct ibv_port_attr port;

	if (ibv_query_port(ctx, 1, &port) ||
	    port.link_layer != IBV_LINK_LAYER_ETHERNET)
		return -1;
	for (int i = 0; i < port.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (!ibv_query_gid_ex(ctx, 1, i, &e, 0) &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V1 &&
		    e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80)
			return i;
	}
	return -1;
}

/* A path to @dgid from the GID at @sgid of port 1. */
static inline struct ibv_ah_attr path_to(union ibv_gid dgid, int sgid)
{
	return (struct ibv_ah_attr){
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = dgid, .sgid_index = sgid, .hop_limit = 64 },
	};
}

/* An RC or UD QP with 4 WRs of one SGE each way. */
static inline struct ibv_qp *small_qp(struct ibv_pd *pd, struct ibv_cq *cq,
				      struct ibv_srq *srq,
				      enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &init);
}

#endif /* RSOFT_ROCE_H */
