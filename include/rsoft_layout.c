// SPDX-License-Identifier: GPL-2.0
/*
 * Sizes and offsets of the C structs rsoft's Rust code reads or writes, as
 * the kernel's C compiler lays them out. Compiled to assembly only; Kbuild
 * turns the result into rust/ib/layout_generated.rs, whose constants the
 * `ib` layer checks against the bindgen view at build time (the same trick
 * as asm-offsets).
 */
#define COMPILE_OFFSETS
#include <linux/kbuild.h>
#include <rdma/ib_verbs.h>

#define SIZE(sym, type) DEFINE(sym, sizeof(type))

static void __used rsoft_layout(void)
{
	SIZE(IB_DEVICE_SIZE, struct ib_device);
	OFFSET(IB_DEVICE_OPS, ib_device, ops);
	OFFSET(IB_DEVICE_NODE_GUID, ib_device, node_guid);
	OFFSET(IB_DEVICE_UVERBS_CMD_MASK, ib_device, uverbs_cmd_mask);
	OFFSET(IB_DEVICE_NODE_TYPE, ib_device, node_type);
	OFFSET(IB_DEVICE_PHYS_PORT_CNT, ib_device, phys_port_cnt);
	OFFSET(IB_DEVICE_NUM_COMP_VECTORS, ib_device, num_comp_vectors);

	DEFINE(IB_DEVICE_OPS_SIZE, sizeof_field(struct ib_device, ops));
	OFFSET(IB_DEVICE_OPS_OWNER, ib_device_ops, owner);
	OFFSET(IB_DEVICE_OPS_QUERY_DEVICE, ib_device_ops, query_device);
	OFFSET(IB_DEVICE_OPS_ALLOC_PD, ib_device_ops, alloc_pd);
	OFFSET(IB_DEVICE_OPS_SIZE_IB_PD, ib_device_ops, size_ib_pd);
	OFFSET(IB_DEVICE_OPS_SIZE_IB_UCONTEXT, ib_device_ops, size_ib_ucontext);

	SIZE(IB_DEVICE_ATTR_SIZE, struct ib_device_attr);
	OFFSET(IB_DEVICE_ATTR_FW_VER, ib_device_attr, fw_ver);
	OFFSET(IB_DEVICE_ATTR_MAX_CQE, ib_device_attr, max_cqe);
	OFFSET(IB_DEVICE_ATTR_MAX_PD, ib_device_attr, max_pd);
	OFFSET(IB_DEVICE_ATTR_MAX_PKEYS, ib_device_attr, max_pkeys);

	SIZE(IB_PORT_ATTR_SIZE, struct ib_port_attr);
	OFFSET(IB_PORT_ATTR_STATE, ib_port_attr, state);
	OFFSET(IB_PORT_ATTR_LID, ib_port_attr, lid);
	OFFSET(IB_PORT_ATTR_ACTIVE_MTU, ib_port_attr, active_mtu);

	SIZE(IB_PORT_IMMUTABLE_SIZE, struct ib_port_immutable);
	OFFSET(IB_PORT_IMMUTABLE_CORE_CAP_FLAGS, ib_port_immutable, core_cap_flags);

	SIZE(IB_GID_SIZE, union ib_gid);
	SIZE(IB_PD_SIZE, struct ib_pd);
	OFFSET(IB_PD_DEVICE, ib_pd, device);
	SIZE(IB_UCONTEXT_SIZE, struct ib_ucontext);
	OFFSET(IB_UCONTEXT_DEVICE, ib_ucontext, device);
}
