// SPDX-License-Identifier: GPL-2.0

//! The verbs a driver implements: those of the device here, those of each
//! kind of object in that object's own trait. [`super::adapter`] routes the
//! core's calls to them.

use super::{
    ah::Address,
    attr::{DeviceAttr, Gid, GidType, PortAttr},
    counters::CounterDesc,
    cq::CqOps,
    mr::MrOps,
    netdev::EthLink,
    qp::QpOps,
    srq::SrqOps,
};
use kernel::{error::VTABLE_DEFAULT_ERROR, prelude::*};

/// The verbs of an RDMA device driver: those of the device, its user
/// contexts, PDs and address handles here, those of each other kind of
/// object in that object's own trait ([`CqOps`], [`QpOps`], [`MrOps`],
/// [`SrqOps`]).
///
/// Port numbers and table indexes arrive already checked by the core against
/// what the device and [`Verbs::port_attr`] advertise.
#[vtable]
pub(crate) trait Verbs: Sized + 'static {
    /// Per-device driver state, stored behind the core's `ib_device`.
    type Device: Send + Sync;
    /// Per-process driver state, stored behind `ib_ucontext`.
    type Ucontext: Send + Sync;
    /// Protection domain, stored behind `ib_pd`.
    type Pd: Send + Sync;
    /// Completion queue, stored behind `ib_cq`.
    type Cq: CqOps<Device = Self::Device>;
    /// Queue pair, stored behind `ib_qp`.
    type Qp: QpOps<Device = Self::Device, Cq = Self::Cq, Srq = Self::Srq>;
    /// Memory region, stored behind `ib_mr`.
    type Mr: MrOps<Device = Self::Device>;
    /// Shared receive queue, stored behind `ib_srq`.
    type Srq: SrqOps<Device = Self::Device>;

    /// The names of the per-port counters, in the order of
    /// [`Verbs::port_counters`]' values.
    const PORT_COUNTERS: &'static [CounterDesc] = &[];
    /// Reads the counters of `port` into `values`. Optional.
    fn port_counters(_dev: &Self::Device, _port: u32, _values: &mut [u64]) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Device attributes; read once by the core at registration.
    fn device_attr(dev: &Self::Device) -> DeviceAttr;
    /// Attributes of port `port` (1-based); `link` is the state of its
    /// netdev on a RoCE port, `None` on an InfiniBand port.
    fn port_attr(dev: &Self::Device, port: u32, link: Option<EthLink>) -> Result<PortAttr>;
    /// Entry `index` of the GID table of an InfiniBand `port`.
    fn gid(dev: &Self::Device, port: u32, index: u32) -> Result<Gid>;
    /// The core put `gid` in entry `index` of the GID table of a RoCE
    /// `port` (from the netdev's addresses).
    fn add_gid(dev: &Self::Device, port: u32, index: u32, gid: Gid, gid_type: GidType) -> Result;
    /// The core emptied entry `index` of the GID table of a RoCE `port`.
    fn del_gid(dev: &Self::Device, port: u32, index: u32);
    /// Entry `index` of the P_Key table of `port`.
    fn pkey(dev: &Self::Device, port: u32, index: u16) -> Result<u16>;
    /// A new user context (one per open of the uverbs device).
    fn new_ucontext(dev: &Self::Device) -> Result<Self::Ucontext>;
    /// A new protection domain.
    fn new_pd(dev: &Self::Device) -> Result<Self::Pd>;
    /// Called just before `pd` is dropped.
    fn release_pd(dev: &Self::Device, pd: Pin<&Self::Pd>);

    /// Admits a new address handle to `addr`.
    fn new_ah(dev: &Self::Device, addr: &Address) -> Result;
    /// An address handle admitted by [`Verbs::new_ah`] is gone.
    fn release_ah(dev: &Self::Device);
}
