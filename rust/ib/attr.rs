// SPDX-License-Identifier: GPL-2.0

//! Plain-Rust views of the attributes a device reports to the core.

use super::bindings;
use kernel::prelude::*;

/// Device-wide attributes and limits (`struct ib_device_attr`).
///
/// Every limit is a promise: the driver must accept any request within it.
#[derive(Clone, Copy, Default)]
pub(crate) struct DeviceAttr {
    /// Firmware version, `major << 32 | minor << 16 | sub`.
    pub(crate) fw_ver: u64,
    pub(crate) sys_image_guid: u64,
    pub(crate) vendor_id: u32,
    pub(crate) vendor_part_id: u32,
    pub(crate) hw_ver: u32,
    pub(crate) max_mr_size: u64,
    pub(crate) page_size_cap: u64,
    pub(crate) max_qp: u32,
    pub(crate) max_qp_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) max_sge_rd: u32,
    pub(crate) max_cq: u32,
    pub(crate) max_cqe: u32,
    pub(crate) max_mr: u32,
    pub(crate) max_pd: u32,
    pub(crate) max_qp_rd_atom: u32,
    pub(crate) max_qp_init_rd_atom: u32,
    pub(crate) max_srq: u32,
    pub(crate) max_srq_wr: u32,
    pub(crate) max_srq_sge: u32,
    pub(crate) max_ah: u32,
    pub(crate) max_pkeys: u16,
    /// Atomics are atomic against each other across all QPs of the device.
    pub(crate) atomic_hca: bool,
    /// Pages a fast-registration MR may map; 0: no fast registration
    /// (else `IB_DEVICE_MEM_MGT_EXTENSIONS` is advertised).
    pub(crate) max_fast_reg_pages: u32,
}

/// `v` as a limit of `ib_device_attr`, whose fields are `int` on some
/// kernels and `u32` on others: a value that fits an `int` fits both.
fn clamp_to_int<T: TryFrom<u32> + Default>(v: u32) -> T {
    T::try_from(v.min(i32::MAX as u32)).unwrap_or_default()
}

impl DeviceAttr {
    /// Writes `self` into the core's (zeroed) attribute struct.
    pub(super) fn write_to(&self, c: &mut bindings::ib_device_attr) {
        c.fw_ver = self.fw_ver;
        c.sys_image_guid = self.sys_image_guid.to_be();
        c.vendor_id = self.vendor_id;
        c.vendor_part_id = self.vendor_part_id;
        c.hw_ver = self.hw_ver;
        c.max_mr_size = self.max_mr_size;
        c.page_size_cap = self.page_size_cap;
        c.max_qp = clamp_to_int(self.max_qp);
        c.max_qp_wr = clamp_to_int(self.max_qp_wr);
        c.max_send_sge = clamp_to_int(self.max_sge);
        c.max_recv_sge = clamp_to_int(self.max_sge);
        c.max_sge_rd = clamp_to_int(self.max_sge_rd);
        c.max_cq = clamp_to_int(self.max_cq);
        c.max_cqe = clamp_to_int(self.max_cqe);
        c.max_mr = clamp_to_int(self.max_mr);
        c.max_pd = clamp_to_int(self.max_pd);
        c.max_qp_rd_atom = clamp_to_int(self.max_qp_rd_atom);
        c.max_qp_init_rd_atom = clamp_to_int(self.max_qp_init_rd_atom);
        c.max_res_rd_atom = clamp_to_int(self.max_qp_rd_atom.saturating_mul(self.max_qp));
        c.max_srq = clamp_to_int(self.max_srq);
        c.max_srq_wr = clamp_to_int(self.max_srq_wr);
        c.max_srq_sge = clamp_to_int(self.max_srq_sge);
        c.max_ah = clamp_to_int(self.max_ah);
        c.max_pkeys = self.max_pkeys;
        c.max_fast_reg_page_list_len = self.max_fast_reg_pages;
        if self.max_fast_reg_pages > 0 {
            c.device_cap_flags |= bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
        }
        c.atomic_cap = if self.atomic_hca {
            bindings::ib_atomic_cap_IB_ATOMIC_HCA
        } else {
            bindings::ib_atomic_cap_IB_ATOMIC_NONE
        };
    }
}

// The enums below have the variants rsoft uses; add others as needed.

/// Logical port state (`enum ib_port_state`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortState {
    Down,
    Active,
}

/// Physical port state (`enum ib_port_phys_state`).
#[derive(Clone, Copy)]
pub(crate) enum PhysState {
    Disabled,
    LinkUp,
}

/// Path MTU (`enum ib_mtu`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Mtu {
    Mtu256,
    Mtu512,
    Mtu1024,
    Mtu2048,
    Mtu4096,
}

impl Mtu {
    /// Reads an `enum ib_mtu`: EINVAL for a value that names no MTU.
    pub(super) fn from_c(m: bindings::ib_mtu) -> Result<Self> {
        Ok(match m {
            bindings::ib_mtu_IB_MTU_256 => Mtu::Mtu256,
            bindings::ib_mtu_IB_MTU_512 => Mtu::Mtu512,
            bindings::ib_mtu_IB_MTU_1024 => Mtu::Mtu1024,
            bindings::ib_mtu_IB_MTU_2048 => Mtu::Mtu2048,
            bindings::ib_mtu_IB_MTU_4096 => Mtu::Mtu4096,
            _ => return Err(EINVAL),
        })
    }

    pub(super) fn to_c(self) -> bindings::ib_mtu {
        match self {
            Mtu::Mtu256 => bindings::ib_mtu_IB_MTU_256,
            Mtu::Mtu512 => bindings::ib_mtu_IB_MTU_512,
            Mtu::Mtu1024 => bindings::ib_mtu_IB_MTU_1024,
            Mtu::Mtu2048 => bindings::ib_mtu_IB_MTU_2048,
            Mtu::Mtu4096 => bindings::ib_mtu_IB_MTU_4096,
        }
    }

    /// The MTU in bytes.
    pub(crate) fn bytes(self) -> u32 {
        256 << (self as u32)
    }

    /// The largest IB MTU whose packets fit an Ethernet frame of `mtu`
    /// bytes once the RoCEv2 headers are added (`iboe_get_mtu()`).
    pub(crate) fn of_ethernet(mtu: u32) -> Option<Self> {
        // GRH (or IP + UDP), BTH, the largest extended header, ICRC.
        const HEADERS: u32 = 40 + 8 + 12 + 4 + 28 + 4;
        let room = mtu.checked_sub(HEADERS)?;
        [
            Mtu::Mtu4096,
            Mtu::Mtu2048,
            Mtu::Mtu1024,
            Mtu::Mtu512,
            Mtu::Mtu256,
        ]
        .into_iter()
        .find(|m| m.bytes() <= room)
    }
}

/// What a port is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkLayer {
    /// An InfiniBand port with a LID and no management datagrams.
    InfiniBand,
    /// A RoCE (v1 and v2) port on a netdev: GIDs from its addresses, QP1
    /// for the connection manager.
    Ethernet,
}

/// Port attributes (`struct ib_port_attr`).
#[derive(Clone, Copy)]
pub(crate) struct PortAttr {
    pub(crate) link_layer: LinkLayer,
    pub(crate) state: PortState,
    pub(crate) phys_state: PhysState,
    /// Unused on Ethernet.
    pub(crate) lid: u16,
    pub(crate) sm_lid: u16,
    pub(crate) max_mtu: Mtu,
    pub(crate) active_mtu: Mtu,
    pub(crate) max_msg_sz: u32,
    pub(crate) gid_tbl_len: u32,
    pub(crate) pkey_tbl_len: u16,
}

impl PortAttr {
    /// Writes `self` into the core's (zeroed) port attribute struct.
    pub(super) fn write_to(&self, c: &mut bindings::ib_port_attr) {
        c.state = match self.state {
            PortState::Down => bindings::ib_port_state_IB_PORT_DOWN,
            PortState::Active => bindings::ib_port_state_IB_PORT_ACTIVE,
        };
        c.phys_state = match self.phys_state {
            PhysState::Disabled => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED,
            PhysState::LinkUp => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP,
        } as u8;
        c.lid = self.lid.into();
        c.sm_lid = self.sm_lid.into();
        c.max_mtu = self.max_mtu.to_c();
        c.active_mtu = self.active_mtu.to_c();
        c.max_msg_sz = self.max_msg_sz;
        c.gid_tbl_len = i32::try_from(self.gid_tbl_len).unwrap_or(i32::MAX);
        c.pkey_tbl_len = self.pkey_tbl_len;
        if self.link_layer == LinkLayer::Ethernet {
            // The kernel's CM agent runs on QP1 of the port.
            c.port_cap_flags = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
        }
        // One data virtual lane: there is no link to arbitrate.
        c.max_vl_num = 1;
        // A virtual 4x EDR link; only reported, never enforced.
        c.active_width = bindings::ib_port_width_IB_WIDTH_4X as u8;
        c.active_speed = bindings::ib_port_speed_IB_SPEED_EDR as u16;
    }

    /// The core's capability flags of the port (`ib_port_immutable`).
    pub(super) fn core_caps(&self) -> (u32, u32) {
        match self.link_layer {
            // Plain IB transport without MADs: no SMA/CM agent on the port.
            LinkLayer::InfiniBand => (bindings::RDMA_CORE_CAP_PROT_IB, 0),
            // RoCE v1 and v2: the core fills the GID table with both
            // kinds of each address.
            LinkLayer::Ethernet => (
                bindings::RDMA_CORE_PORT_IBA_ROCE | bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP,
                bindings::IB_MGMT_MAD_SIZE,
            ),
        }
    }
}

/// The kind of a GID table entry (`enum ib_gid_type`) on a RoCE port.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum GidType {
    /// InfiniBand, or RoCE v1: a GRH on the wire.
    #[default]
    Ib,
    /// RoCE v2: an IPv4 or IPv6 header on the wire.
    RoceV2,
}

impl GidType {
    pub(super) fn from_c(t: bindings::ib_gid_type) -> Self {
        if t == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP {
            Self::RoceV2
        } else {
            Self::Ib
        }
    }
}

/// A 128-bit global identifier, in network byte order.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Gid(pub(crate) [u8; 16]);

impl Gid {
    /// The IPv4 address of an IPv4-mapped GID (`::ffff:a.b.c.d`).
    pub(crate) fn ipv4(&self) -> Option<[u8; 4]> {
        let g = &self.0;
        let mapped = g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff;
        mapped.then(|| [g[12], g[13], g[14], g[15]])
    }

    /// The IPv4-mapped GID of an IPv4 address (`::ffff:a.b.c.d`).
    pub(crate) fn of_ipv4(addr: [u8; 4]) -> Self {
        let mut raw = [0u8; 16];
        raw[10] = 0xff;
        raw[11] = 0xff;
        raw[12..].copy_from_slice(&addr);
        Gid(raw)
    }

    /// The link-local GID made from an EUI-64 GUID: `fe80::/64` + GUID.
    pub(crate) fn link_local(guid: u64) -> Self {
        let mut raw = [0u8; 16];
        raw[0] = 0xfe;
        raw[1] = 0x80;
        raw[8..].copy_from_slice(&guid.to_be_bytes());
        Gid(raw)
    }
}
