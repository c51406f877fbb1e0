// SPDX-License-Identifier: GPL-2.0

//! Build-time proof that the generated bindings lay out the C structs the
//! way the kernel's C compiler does, for every field rsoft touches.
//!
//! `layout_generated.rs` is produced by compiling `include/rsoft_layout.c`
//! with the kernel's C flags; a mismatch fails the build here.

use super::bindings;
use core::mem::{offset_of, size_of};

// Read only inside `const _` blocks, which dead-code analysis does not see.
#[allow(dead_code)]
mod c {
    include!("layout_generated.rs");
}

macro_rules! assert_layout {
    ($ty:ident, $size:ident $(, $field:ident @ $offset:ident)* $(,)?) => {
        const _: () = {
            assert!(size_of::<bindings::$ty>() == c::$size);
            $(assert!(offset_of!(bindings::$ty, $field) == c::$offset);)*
        };
    };
}

assert_layout!(
    ib_device,
    IB_DEVICE_SIZE,
    ops @ IB_DEVICE_OPS,
    node_guid @ IB_DEVICE_NODE_GUID,
    uverbs_cmd_mask @ IB_DEVICE_UVERBS_CMD_MASK,
    node_type @ IB_DEVICE_NODE_TYPE,
    phys_port_cnt @ IB_DEVICE_PHYS_PORT_CNT,
    num_comp_vectors @ IB_DEVICE_NUM_COMP_VECTORS,
);
assert_layout!(
    ib_device_ops,
    IB_DEVICE_OPS_SIZE,
    owner @ IB_DEVICE_OPS_OWNER,
    query_device @ IB_DEVICE_OPS_QUERY_DEVICE,
    alloc_pd @ IB_DEVICE_OPS_ALLOC_PD,
    size_ib_pd @ IB_DEVICE_OPS_SIZE_IB_PD,
    size_ib_ucontext @ IB_DEVICE_OPS_SIZE_IB_UCONTEXT,
);
assert_layout!(
    ib_device_attr,
    IB_DEVICE_ATTR_SIZE,
    fw_ver @ IB_DEVICE_ATTR_FW_VER,
    max_cqe @ IB_DEVICE_ATTR_MAX_CQE,
    max_pd @ IB_DEVICE_ATTR_MAX_PD,
    max_pkeys @ IB_DEVICE_ATTR_MAX_PKEYS,
);
assert_layout!(
    ib_port_attr,
    IB_PORT_ATTR_SIZE,
    state @ IB_PORT_ATTR_STATE,
    lid @ IB_PORT_ATTR_LID,
    active_mtu @ IB_PORT_ATTR_ACTIVE_MTU,
);
assert_layout!(
    ib_port_immutable,
    IB_PORT_IMMUTABLE_SIZE,
    core_cap_flags @ IB_PORT_IMMUTABLE_CORE_CAP_FLAGS,
);
assert_layout!(ib_gid, IB_GID_SIZE);
assert_layout!(ib_pd, IB_PD_SIZE, device @ IB_PD_DEVICE);
assert_layout!(ib_ucontext, IB_UCONTEXT_SIZE, device @ IB_UCONTEXT_DEVICE);
