// SPDX-License-Identifier: GPL-2.0

//! A small safe layer over the kernel's RDMA core (`<rdma/ib_verbs.h>`).
//!
//! Everything that touches the C API lives here: the generated bindings are
//! private to this module, and the driver sees only the [`Verbs`] trait, its
//! [`Devices`] and [`Links`], and plain attribute types. Objects the core
//! allocates (`ib_ucontext`, `ib_pd`, ...) carry the driver's data right after
//! the core's struct; see [`object`].

mod access;
mod adapter;
mod ah;
mod attr;
mod bindings;
mod claim;
mod compat;
mod counters;
mod cq;
mod crc;
mod device;
mod device_data;
mod event;
mod gate;
mod hold;
mod ids;
mod ip;
mod irq_lock;
mod layout;
mod link;
mod memory;
mod mr;
mod netdev;
mod object;
mod params;
mod percpu;
mod qp;
mod qp_name;
mod res;
mod sched;
mod srq;
mod timer;
mod udp;
mod verbs;
mod wr;

pub(crate) use access::Access;
pub(crate) use ah::{Address, Grh};
pub(crate) use attr::{DeviceAttr, Gid, GidType, LinkLayer, Mtu, PhysState, PortAttr, PortState};
pub(crate) use claim::Claim;
pub(crate) use compat::swap_remove;
pub(crate) use counters::CounterDesc;
pub(crate) use cq::{CqArm, CqAttr, CqOps, CqRef, RecvGrh, Wc, WcEx, WcOpcode, WcSink, WcStatus};
pub(crate) use crc::crc32_le;
pub(crate) use device::{DeviceConfig, Devices, Provider};
pub(crate) use gate::Gate;
pub(crate) use ids::{Key, MrId, PdId, QpNum};
pub(crate) use ip::{routes_home, DeferredSends, IpPacket};
pub(crate) use irq_lock::IrqSpinLock;
pub(crate) use link::{LinkOps, Links};
pub(crate) use memory::{Memory, PageList};
pub(crate) use mr::{MrOps, MrRereg};
pub(crate) use netdev::{EthLink, Namespace, NetDev, NetDevRef};
pub(crate) use params::{param_devices, param_provider};
pub(crate) use percpu::PerCpuCounters;
pub(crate) use qp::{
    MigState, QpCap, QpFault, QpInitAttr, QpModify, QpNotifier, QpOps, QpQuery, QpState, QpType,
};
pub(crate) use qp_name::{QpId, QpName, WcQp};
pub(crate) use res::DriverAttrs;
pub(crate) use sched::{cond_resched, flush_work};
pub(crate) use srq::{SrqAttr, SrqModify, SrqNotifier, SrqOps};
pub(crate) use timer::{HasTimer, OnTimer, Timer};
pub(crate) use udp::{Listener, Listening, Receive};
pub(crate) use verbs::Verbs;
pub(crate) use wr::{Datagram, FastReg, LocalOp, RecvWrs, Remote, SendOp, SendWr, SendWrs, Sge};

use kernel::error::Error;

/// The size of a MAD, what QP1 carries.
pub(crate) const MAD_SIZE: u32 = bindings::IB_MGMT_MAD_SIZE;

/// `EOPNOTSUPP`, which the kernel crate of 6.12 does not name.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32))
}
