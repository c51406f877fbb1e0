// SPDX-License-Identifier: GPL-2.0

//! The rsoft device: one port, InfiniBand (always up, a LID, made by the
//! `devices` parameter) or RoCE (on a netdev, made by `rdma link add`), and
//! the verbs of the device itself, its PDs and its address handles. The
//! verbs of the other objects are in [`crate::verbs`]; running QPs is the
//! engine's.

use crate::{
    counters,
    cq::RsoftCq,
    fabric::Fabric,
    ib, limits,
    mr::Mr,
    net::{Bound, Link, Net, ROCE_GIDS},
    qp::Qp,
    quota::Quota,
    srq::Srq,
    transport,
};
use kernel::{c_str, prelude::*, str::CStr, sync::Arc};

/// rsoft's verbs, as seen by the `ib` layer.
pub(crate) struct Rsoft;

/// What all of the module's devices share.
pub(crate) type RsoftFabric = Arc<Fabric<Net>>;

/// Per-device state.
#[pin_data]
pub(crate) struct RsoftDevice {
    guid: u64,
    pub(crate) pds: Quota,
    pub(crate) cqs: Quota,
    pub(crate) ahs: Quota,
    pub(crate) srqs: Quota,
    pub(crate) net: Arc<Net>,
    /// A RoCE port is reachable on the fabric while the device lives.
    _attached: Option<Attached>,
}

/// A RoCE port's place on the fabric, left when dropped.
struct Attached(Arc<Net>);

impl Attached {
    fn new(net: &Arc<Net>) -> Result<Self> {
        net.fabric.attach(net.clone())?;
        Ok(Self(net.clone()))
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.0.unbind();
        drop(self.0.fabric.detach(&self.0));
    }
}

/// Locally administered EUI-64s (the U/L bit of the first byte is set); the
/// low bits number the devices.
const GUID_BASE: u64 = 0x0200_5e00_0000_0000;
/// The (locally administered, so nobody's) OUI that starts the GUIDs.
const VENDOR_ID: u32 = (GUID_BASE >> 40) as u32;
const FW_VERSION: u64 = 1 << 32;
const PKEY_DEFAULT: u16 = 0xffff;

/// The device's state, on `net`.
fn device(
    guid: u64,
    net: Arc<Net>,
    attached: Option<Attached>,
) -> impl PinInit<RsoftDevice, Error> {
    try_pin_init!(RsoftDevice {
        guid,
        pds: Quota::new(limits::MAX_PD),
        cqs: Quota::new(limits::MAX_CQ),
        ahs: Quota::new(limits::MAX_AH),
        srqs: Quota::new(limits::MAX_SRQ),
        net,
        _attached: attached,
    }? Error)
}

/// Registers InfiniBand device number `index` (`rsoft<index>`, LID
/// `index + 1`).
pub(crate) fn register_ib(
    devices: &ib::Devices<Rsoft>,
    fabric: &RsoftFabric,
    index: u32,
) -> Result {
    let lid = u16::try_from(index + 1)?;
    let guid = GUID_BASE | u64::from(lid);
    let config = ib::DeviceConfig {
        name: c_str!("rsoft%d"),
        node_guid: guid,
        comp_vectors: 1,
    };
    let link = Link::Ib {
        lid,
        gid: ib::Gid::link_local(guid),
    };
    let net = Arc::pin_init(Net::new(link, None, fabric.clone())?, GFP_KERNEL)?;
    devices.register(&config, None, device(guid, net, None))
}

/// The active MTU of a RoCE port whose netdev has an MTU of `mtu` bytes.
fn roce_mtu(mtu: u32) -> ib::Mtu {
    ib::Mtu::of_ethernet(mtu).unwrap_or(ib::Mtu::Mtu256)
}

impl ib::LinkOps for Rsoft {
    const LINK_TYPE: &'static CStr = c_str!("rsoft");
    type Links = RsoftFabric;

    fn new_link(
        fabric: &RsoftFabric,
        devices: &ib::Devices<Rsoft>,
        name: &CStr,
        netdev: &ib::NetDev,
    ) -> Result {
        // As rxe does: the node GUID is the EUI-64 of the netdev's MAC.
        let guid = netdev.eui64();
        let config = ib::DeviceConfig {
            name,
            node_guid: guid,
            comp_vectors: 1,
        };
        let held = ib::NetDevRef::new(netdev);
        let listener = ib::Listener::open(&held)?;
        if listener.is_tap() {
            pr_info!(
                "{}: UDP port 4791 is another listener's here: RoCEv2 packets are taken off the netdev\n",
                name
            );
        }
        let bound = Bound {
            netdev: held,
            _listener: listener,
        };
        let net = Arc::pin_init(
            Net::new(Link::Roce, Some(bound), fabric.clone())?,
            GFP_KERNEL,
        )?;
        let link = netdev.link();
        net.set_link(link.up, roce_mtu(link.mtu));
        let attached = Attached::new(&net)?;
        devices.register(&config, Some(netdev), device(guid, net, Some(attached)))
    }

    fn link_changed(dev: &RsoftDevice, link: ib::EthLink) {
        dev.net.set_link(link.up, roce_mtu(link.mtu));
    }

    fn link_gone(dev: &RsoftDevice) {
        dev.net.unbind();
    }
}

/// A protection domain; only counted.
pub(crate) struct Pd;

#[vtable]
impl ib::Verbs for Rsoft {
    type Device = RsoftDevice;
    type Ucontext = ();
    type Pd = Pd;
    type Cq = RsoftCq;
    type Qp = Qp;
    type Mr = Mr;
    type Srq = Srq;

    const PORT_COUNTERS: &'static [ib::CounterDesc] = &counters::NAMES;

    fn port_counters(dev: &RsoftDevice, _port: u32, values: &mut [u64]) {
        dev.net.counters.read(values);
    }

    fn device_attr(dev: &RsoftDevice) -> ib::DeviceAttr {
        ib::DeviceAttr {
            fw_ver: FW_VERSION,
            vendor_id: VENDOR_ID,
            sys_image_guid: dev.guid,
            max_mr_size: limits::MAX_MR_SIZE,
            page_size_cap: kernel::page::PAGE_SIZE as u64,
            max_qp: limits::MAX_QP,
            max_qp_wr: limits::MAX_QP_WR,
            max_sge: limits::MAX_SGE,
            max_sge_rd: limits::MAX_SGE,
            max_cq: limits::MAX_CQ,
            max_cqe: limits::MAX_CQE,
            max_mr: limits::MAX_MR,
            max_pd: limits::MAX_PD,
            max_qp_rd_atom: limits::MAX_RD_ATOM,
            max_qp_init_rd_atom: limits::MAX_RD_ATOM,
            max_srq: limits::MAX_SRQ,
            max_srq_wr: limits::MAX_SRQ_WR,
            max_srq_sge: limits::MAX_SGE,
            max_ah: limits::MAX_AH,
            max_pkeys: limits::PKEY_TABLE_LEN,
            // Every atomic executes under the device's atomics lock.
            atomic_hca: true,
            max_fast_reg_pages: limits::MAX_FAST_REG_PAGES,
            ..Default::default()
        }
    }

    fn port_attr(dev: &RsoftDevice, port: u32, link: Option<ib::EthLink>) -> Result<ib::PortAttr> {
        if port != 1 {
            return Err(EINVAL);
        }
        let ib = ib::PortAttr {
            link_layer: ib::LinkLayer::InfiniBand,
            state: ib::PortState::Active,
            phys_state: ib::PhysState::LinkUp,
            lid: 0,
            sm_lid: 0,
            max_mtu: limits::MAX_MTU,
            active_mtu: limits::MAX_MTU,
            max_msg_sz: limits::MAX_MSG_SIZE,
            gid_tbl_len: limits::IB_GIDS,
            pkey_tbl_len: limits::PKEY_TABLE_LEN,
        };
        Ok(match (dev.net.link, link) {
            (Link::Ib { lid, .. }, _) => ib::PortAttr {
                lid,
                sm_lid: lid,
                ..ib
            },
            (Link::Roce, link) => {
                let link = link.ok_or(EINVAL)?;
                let (state, phys_state) = if link.up {
                    (ib::PortState::Active, ib::PhysState::LinkUp)
                } else {
                    (ib::PortState::Down, ib::PhysState::Disabled)
                };
                ib::PortAttr {
                    link_layer: ib::LinkLayer::Ethernet,
                    state,
                    phys_state,
                    active_mtu: roce_mtu(link.mtu),
                    gid_tbl_len: ROCE_GIDS,
                    ..ib
                }
            }
        })
    }

    fn gid(dev: &RsoftDevice, port: u32, index: u32) -> Result<ib::Gid> {
        match dev.net.link {
            Link::Ib { gid, .. } if port == 1 && index == 0 => Ok(gid),
            _ => Err(EINVAL),
        }
    }

    fn add_gid(
        dev: &RsoftDevice,
        _port: u32,
        index: u32,
        gid: ib::Gid,
        gid_type: ib::GidType,
    ) -> Result {
        dev.net.set_gid(index, Some((gid, gid_type)))
    }

    fn del_gid(dev: &RsoftDevice, _port: u32, index: u32) {
        // Only an index the core never had could fail.
        let _ = dev.net.set_gid(index, None);
    }

    fn pkey(_dev: &RsoftDevice, port: u32, index: u16) -> Result<u16> {
        if port != 1 || index >= limits::PKEY_TABLE_LEN {
            return Err(EINVAL);
        }
        Ok(PKEY_DEFAULT)
    }

    fn new_ucontext(_dev: &RsoftDevice) -> Result<()> {
        Ok(())
    }

    fn new_pd(dev: &RsoftDevice) -> Result<Pd> {
        dev.pds.take()?.keep();
        Ok(Pd)
    }

    fn release_pd(dev: &RsoftDevice, _pd: Pin<&Pd>) {
        dev.pds.give_back();
    }

    fn new_ah(dev: &RsoftDevice, addr: &ib::Address) -> Result {
        if !transport::address_ok(&dev.net.link, addr) {
            return Err(EINVAL);
        }
        dev.ahs.take()?.keep();
        Ok(())
    }

    fn release_ah(dev: &RsoftDevice) {
        dev.ahs.give_back();
    }
}
