// SPDX-License-Identifier: GPL-2.0

//! The rsoft device: one InfiniBand port that is always up, and the verbs
//! of the device itself, its PDs and its address handles. The verbs of the
//! other objects are in [`crate::verbs`]; running QPs is the engine's.

use crate::{counters, cq::RsoftCq, ib, limits, mr::Mr, net::Net, qp::Qp, quota::Quota, srq::Srq};
use kernel::{c_str, prelude::*, sync::Arc};

/// rsoft's verbs, as seen by the `ib` layer.
pub(crate) struct Rsoft;

/// Per-device state.
#[pin_data]
pub(crate) struct RsoftDevice {
    guid: u64,
    lid: u16,
    pub(crate) pds: Quota,
    pub(crate) cqs: Quota,
    pub(crate) ahs: Quota,
    pub(crate) srqs: Quota,
    pub(crate) net: Arc<Net>,
}

/// Locally administered EUI-64s (the U/L bit of the first byte is set); the
/// low bits number the devices.
const GUID_BASE: u64 = 0x0200_5e00_0000_0000;
/// The (locally administered, so nobody's) OUI that starts the GUIDs.
const VENDOR_ID: u32 = (GUID_BASE >> 40) as u32;
const FW_VERSION: u64 = 1 << 32;
const PKEY_DEFAULT: u16 = 0xffff;

/// Registers device number `index` (`rsoft<index>`, LID `index + 1`).
pub(crate) fn register(module: &'static ThisModule, index: u32) -> Result<ib::Registration<Rsoft>> {
    let lid = u16::try_from(index + 1)?;
    let guid = GUID_BASE | u64::from(lid);
    let config = ib::DeviceConfig {
        name: c_str!("rsoft%d"),
        node_guid: guid,
        ports: 1,
        comp_vectors: 1,
    };
    let net = Arc::pin_init(Net::new(lid, ib::Gid::link_local(guid))?, GFP_KERNEL)?;
    let data = try_pin_init!(RsoftDevice {
        guid,
        lid,
        pds: Quota::new(limits::MAX_PD),
        cqs: Quota::new(limits::MAX_CQ),
        ahs: Quota::new(limits::MAX_AH),
        srqs: Quota::new(limits::MAX_SRQ),
        net,
    }? Error);
    ib::Registration::new(module, &config, data)
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
            max_pkeys: 1,
            // Every atomic executes under the device's atomics lock.
            atomic_hca: true,
            max_fast_reg_pages: limits::MAX_FAST_REG_PAGES,
            ..Default::default()
        }
    }

    fn port_attr(dev: &RsoftDevice, port: u32) -> Result<ib::PortAttr> {
        if port != 1 {
            return Err(EINVAL);
        }
        Ok(ib::PortAttr {
            state: ib::PortState::Active,
            phys_state: ib::PhysState::LinkUp,
            lid: dev.lid,
            sm_lid: dev.lid,
            max_mtu: ib::Mtu::Mtu4096,
            active_mtu: ib::Mtu::Mtu4096,
            max_msg_sz: limits::MAX_MSG_SIZE,
            gid_tbl_len: 1,
            pkey_tbl_len: 1,
        })
    }

    fn gid(dev: &RsoftDevice, port: u32, index: u32) -> Result<ib::Gid> {
        if port != 1 || index != 0 {
            return Err(EINVAL);
        }
        Ok(ib::Gid::link_local(dev.guid))
    }

    fn pkey(_dev: &RsoftDevice, port: u32, index: u16) -> Result<u16> {
        if port != 1 || index != 0 {
            return Err(EINVAL);
        }
        Ok(PKEY_DEFAULT)
    }

    fn new_ucontext(_dev: &RsoftDevice) -> Result<impl PinInit<(), Error>> {
        Ok(())
    }

    fn new_pd(dev: &RsoftDevice) -> Result<impl PinInit<Pd, Error>> {
        dev.pds.take()?.keep();
        Ok(Pd)
    }

    fn release_pd(dev: &RsoftDevice, _pd: Pin<&Pd>) {
        dev.pds.give_back();
    }

    fn new_ah(dev: &RsoftDevice, addr: &ib::Address) -> Result {
        // One port, one GID.
        if addr.port != 1 || addr.grh.is_some_and(|g| g.sgid_index != 0) {
            return Err(EINVAL);
        }
        dev.ahs.take()?.keep();
        Ok(())
    }

    fn release_ah(dev: &RsoftDevice) {
        dev.ahs.give_back();
    }
}
