// SPDX-License-Identifier: GPL-2.0

//! The rsoft device: one InfiniBand port that is always up, and the verbs
//! on its objects. Running QPs lives in [`crate::engine`].

use crate::{
    copy::SgeCopy,
    counters,
    cq::RsoftCq,
    engine::{self, Ctx},
    ib::{self, Access, CqArm, CqAttr, PdId, QpModify, QpQuery, QpState, QpType, SendOp},
    limits,
    mr::{MrEntry, MrKey},
    net::Net,
    qp::{QpShared, QpUse, Qpn},
    srq::{Srq, SrqShared},
    wq::{WorkQueue, Wqe},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{c_str, prelude::*, sync::Arc};

/// rsoft's verbs, as seen by the `ib` layer.
pub(crate) struct Rsoft;

/// Per-device state.
#[pin_data]
pub(crate) struct RsoftDevice {
    guid: u64,
    lid: u16,
    pds: AtomicU32,
    cqs: AtomicU32,
    ahs: AtomicU32,
    srqs: AtomicU32,
    net: Arc<Net>,
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
        pds: AtomicU32::new(0),
        cqs: AtomicU32::new(0),
        ahs: AtomicU32::new(0),
        srqs: AtomicU32::new(0),
        net,
    }? Error);
    ib::Registration::new(module, &config, data)
}

/// Takes one of `max` units from `count`, or fails with ENOMEM.
fn take(count: &AtomicU32, max: u32) -> Result {
    count
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n < max).then_some(n + 1)
        })
        .map(|_| ())
        .map_err(|_| ENOMEM)
}

/// The context of a verb on `qp`: a user QP's verbs come from system calls.
fn ctx_of(qp: &QpShared) -> Ctx {
    Ctx::caller(qp.user)
}

impl RsoftDevice {
    /// Runs every QP that sends to a QP taking its receives from `srq`: one
    /// of them found the SRQ empty and waits for a post.
    fn resume_senders_of(&self, srq: &Arc<SrqShared>, ctx: Ctx) {
        let mut from = Qpn::from_slot(0);
        while let Some(qp) = self.net.next_sender_to(srq, from) {
            engine::kick(&self.net, &qp, ctx);
            from = Qpn::from_slot(qp.qpn.slot() + 1);
        }
    }

    /// Runs `qp`, then its connected peer: a new state or receive of one
    /// may unblock the other (a sender waiting on RNR) or leave it without
    /// an answer.
    fn progress(&self, qp: &QpUse, ctx: Ctx) {
        engine::kick(&self.net, qp, ctx);
        if qp.qp_type == QpType::Ud {
            return;
        }
        let peer = Qpn::from_raw(qp.inner.lock().attr.dest_qpn);
        if peer != qp.qpn {
            if let Some(peer) = self.net.qp(peer) {
                engine::kick(&self.net, &peer, ctx);
            }
        }
    }
}

/// A protection domain; only counted.
pub(crate) struct Pd;

/// A QP as the core holds it.
pub(crate) struct Qp {
    shared: Arc<QpShared>,
}

/// An MR as the core holds it; the region lives in the device's MR table.
pub(crate) struct Mr {
    key: MrKey,
}

/// Work queue depth and SGE count as created: at least 1, at most `max`.
fn queue_size(requested: u32, max: u32) -> Result<u32> {
    if requested > max {
        return Err(EINVAL);
    }
    Ok(requested.max(1))
}

/// Queues receive WRs on `rq`, up to the first bad one.
fn push_receives(rq: &mut WorkQueue, wrs: &mut ib::RecvWrs<'_>) -> Result {
    for wr in wrs {
        let wr = wr?;
        let wqe = Wqe {
            wr_id: wr.wr_id,
            op: SendOp::Send,
            signaled: true,
            solicited: false,
            imm: None,
            num_sge: wr.sges.len(),
            datagram: None,
        };
        rq.push(wqe, wr.sges.iter().map(SgeCopy::from))?;
    }
    Ok(())
}

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
        take(&dev.pds, limits::MAX_PD)?;
        Ok(Pd)
    }

    fn release_pd(dev: &RsoftDevice, _pd: Pin<&Pd>) {
        dev.pds.fetch_sub(1, Ordering::Relaxed);
    }

    fn new_cq(dev: &RsoftDevice, attr: &CqAttr) -> Result<(u32, impl PinInit<RsoftCq, Error>)> {
        if !(1..=limits::MAX_CQE).contains(&attr.cqe) || attr.comp_vector != 0 {
            return Err(EINVAL);
        }
        take(&dev.cqs, limits::MAX_CQ)?;
        match RsoftCq::new(attr.cqe, attr.ignore_overrun) {
            Ok(init) => Ok((attr.cqe, init)),
            Err(e) => {
                dev.cqs.fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    fn destroy_cq(dev: &RsoftDevice, cq: Pin<&RsoftCq>) {
        cq.close();
        dev.cqs.fetch_sub(1, Ordering::Relaxed);
    }

    fn purge_cq(cq: &RsoftCq, qp: ib::QpId) {
        cq.purge(qp);
    }

    fn poll_cq(cq: &RsoftCq, out: &mut ib::WcSink<'_>) -> Result {
        cq.poll(out)
    }

    fn req_notify_cq(cq: &RsoftCq, arm: CqArm) -> bool {
        cq.arm(arm)
    }

    fn resize_cq(_dev: &RsoftDevice, cq: &RsoftCq, cqe: u32) -> Result<u32> {
        if !(1..=limits::MAX_CQE).contains(&cqe) {
            return Err(EINVAL);
        }
        cq.resize(cqe)?;
        Ok(cqe)
    }

    fn fill_res_cq(cq: &RsoftCq, attrs: &mut ib::DriverAttrs<'_>) -> Result {
        cq.fill_res(attrs)
    }

    fn new_qp(
        dev: &RsoftDevice,
        attr: &mut ib::QpInitAttr<'_, Rsoft>,
    ) -> Result<(u32, impl PinInit<Qp, Error>)> {
        let cap = &mut attr.cap;
        cap.max_send_wr = queue_size(cap.max_send_wr, limits::MAX_QP_WR)?;
        cap.max_recv_wr = queue_size(cap.max_recv_wr, limits::MAX_QP_WR)?;
        cap.max_send_sge = queue_size(cap.max_send_sge, limits::MAX_SGE)?;
        cap.max_recv_sge = queue_size(cap.max_recv_sge, limits::MAX_SGE)?;
        if cap.max_inline_data > limits::MAX_INLINE_DATA {
            return Err(EINVAL);
        }
        if attr.srq.is_some() {
            // Receives come from the SRQ; the QP's own queue stays empty.
            cap.max_recv_wr = 0;
            cap.max_recv_sge = 0;
        }
        let slot = dev.net.reserve_qp()?;
        let qpn = slot.qpn();
        let shared = QpShared::new(dev.net.clone(), attr, qpn)?;
        slot.fill(shared.clone());
        Ok((qpn.raw(), Qp { shared }))
    }

    fn forget_qp(dev: &RsoftDevice, qpn: u32) {
        if let Some(qp) = dev.net.remove_qp(Qpn::from_raw(qpn)) {
            // Never ran: it has no CQEs.
            qp.close();
        }
    }

    fn modify_qp(dev: &RsoftDevice, qp: &Qp, m: &QpModify) -> Result {
        let qp = qp.shared.enter().ok_or(EINVAL)?;
        {
            let mut inner = qp.inner.lock();
            let too_many = |n: Option<u8>| n.is_some_and(|n| u32::from(n) > limits::MAX_RD_ATOM);
            if !m.valid_from(inner.state)
                || too_many(m.max_rd_atomic)
                || too_many(m.max_dest_rd_atomic)
            {
                return Err(EINVAL);
            }
            inner.apply(m);
            if m.state == Some(QpState::Error) {
                qp.enter_error(&mut inner);
            }
        }
        // A new state may unblock this QP (flush in ERR, sends in RTS) or
        // its peer (waiting on RNR for a QP that will now never answer).
        dev.progress(&qp, ctx_of(&qp));
        Ok(())
    }

    fn query_qp(_dev: &RsoftDevice, qp: &Qp) -> Result<QpQuery> {
        Ok(qp.shared.enter().ok_or(EINVAL)?.query())
    }

    fn destroy_qp(dev: &RsoftDevice, qp: Pin<&Qp>) {
        let qp = &qp.shared;
        dev.net.remove_qp(qp.qpn);
        // Whoever still runs or completes on the QP finishes first.
        qp.close();
        // A peer waiting on RNR for this QP now gets no answer.
        let peer = Qpn::from_raw(qp.inner.lock().attr.dest_qpn);
        if qp.qp_type != QpType::Ud && peer != qp.qpn {
            if let Some(peer) = dev.net.qp(peer) {
                engine::kick(&dev.net, &peer, ctx_of(qp));
            }
        }
    }

    fn post_send(dev: &RsoftDevice, qp: &Qp, wrs: &mut ib::SendWrs<'_>) -> Result {
        let qp = qp.shared.enter().ok_or(EINVAL)?;
        let posted = (|| {
            let mut inner = qp.inner.lock();
            if !matches!(inner.state, QpState::Rts | QpState::Sqd | QpState::Error) {
                return Err(EINVAL);
            }
            for wr in wrs {
                let wr = wr?;
                // UC has no responder resources: no reads, no atomics; UD
                // only sends, each to an address.
                let allowed = match qp.qp_type {
                    QpType::Rc => true,
                    QpType::Uc => matches!(wr.op, SendOp::Send | SendOp::RdmaWrite(_)),
                    QpType::Ud => matches!(wr.op, SendOp::Send) && wr.datagram.is_some(),
                };
                if !allowed {
                    return Err(EINVAL);
                }
                let wqe = Wqe {
                    wr_id: wr.wr_id,
                    op: wr.op,
                    signaled: wr.signaled,
                    solicited: wr.solicited,
                    imm: wr.imm,
                    num_sge: wr.sges.len(),
                    datagram: wr.datagram,
                };
                inner.sq.push(wqe, wr.sges.iter().map(SgeCopy::from))?;
            }
            Ok(())
        })();
        // What was posted before a bad WR still goes out.
        engine::kick(&dev.net, &qp, ctx_of(&qp));
        posted
    }

    fn post_recv(dev: &RsoftDevice, qp: &Qp, wrs: &mut ib::RecvWrs<'_>) -> Result {
        let qp = qp.shared.enter().ok_or(EINVAL)?;
        let posted = (|| {
            let mut inner = qp.inner.lock();
            if inner.state == QpState::Reset || qp.srq.is_some() {
                return Err(EINVAL);
            }
            push_receives(&mut inner.rq, wrs)
        })();
        // Flush if in error; resume a peer waiting for this receive.
        dev.progress(&qp, ctx_of(&qp));
        posted
    }

    fn new_srq(
        dev: &RsoftDevice,
        pd: PdId,
        attr: &mut ib::SrqAttr,
        notifier: ib::SrqNotifier,
    ) -> Result<impl PinInit<Srq, Error>> {
        attr.max_wr = queue_size(attr.max_wr, limits::MAX_SRQ_WR)?;
        attr.max_sge = queue_size(attr.max_sge, limits::MAX_SGE)?;
        take(&dev.srqs, limits::MAX_SRQ)?;
        match SrqShared::new(pd, attr, notifier) {
            Ok(shared) => Ok(Srq { shared }),
            Err(e) => {
                dev.srqs.fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    fn destroy_srq(dev: &RsoftDevice, _srq: Pin<&Srq>) {
        dev.srqs.fetch_sub(1, Ordering::Relaxed);
    }

    fn modify_srq(_dev: &RsoftDevice, srq: &Srq, m: &ib::SrqModify) -> Result {
        // Resizing is not offered (no IB_DEVICE_SRQ_RESIZE).
        if m.max_wr.is_some() {
            return Err(EINVAL);
        }
        m.limit.map_or(Ok(()), |limit| srq.shared.arm(limit))
    }

    fn query_srq(_dev: &RsoftDevice, srq: &Srq) -> Result<ib::SrqAttr> {
        Ok(srq.shared.attr())
    }

    fn post_srq_recv(dev: &RsoftDevice, srq: &Srq, wrs: &mut ib::RecvWrs<'_>) -> Result {
        let srq = &srq.shared;
        let (posted, waited_on) = {
            let mut inner = srq.inner.lock();
            let posted = push_receives(&mut inner.rq, wrs);
            (posted, core::mem::take(&mut inner.waited_on))
        };
        if waited_on {
            // An SRQ's posts come from wherever its QPs' posts come from:
            // assume the strictest.
            dev.resume_senders_of(srq, Ctx::caller(false));
        }
        posted
    }

    fn new_ah(dev: &RsoftDevice, addr: &ib::Address) -> Result {
        // One port, one GID.
        if addr.port != 1 || addr.grh.is_some_and(|g| g.sgid_index != 0) {
            return Err(EINVAL);
        }
        take(&dev.ahs, limits::MAX_AH)
    }

    fn release_ah(dev: &RsoftDevice) {
        dev.ahs.fetch_sub(1, Ordering::Relaxed);
    }

    fn reg_mr(
        dev: &RsoftDevice,
        pd: PdId,
        mem: ib::Memory,
        iova: u64,
        access: Access,
    ) -> Result<(u32, impl PinInit<Mr, Error>)> {
        let mr = Arc::new(
            MrEntry {
                pd,
                iova,
                access,
                mem: Arc::new(mem, GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let inserted = dev.net.mrs.insert(mr);
        // A refused MR is dropped here, outside the lock (it unpins).
        let key = inserted.map_err(|_| ENOMEM)?;
        Ok((key.raw(), Mr { key }))
    }

    fn rereg_mr(dev: &RsoftDevice, mr: &Mr, change: &ib::MrRereg) -> Result {
        // The core serialises calls on one MR: what is read here stays.
        let old = dev.net.mrs.get(mr.key).ok_or(EINVAL)?;
        let access = change.access.unwrap_or(old.access);
        let (iova, mem) = match (change.pin(access)?, change.new_iova()) {
            (Some(mem), Some(iova)) => (iova, Arc::new(mem, GFP_KERNEL)?),
            _ => (old.iova, old.mem.clone()),
        };
        let new = Arc::new(
            MrEntry {
                pd: change.pd.unwrap_or(old.pd),
                iova,
                access,
                mem,
            },
            GFP_KERNEL,
        )?;
        // The old region goes when its last transfer is done with it.
        drop(dev.net.mrs.replace(mr.key, new)?);
        Ok(())
    }

    fn forget_mr(dev: &RsoftDevice, key: u32) {
        drop(dev.net.mrs.remove(MrKey::from_raw(key)));
    }

    fn dereg_mr(dev: &RsoftDevice, mr: Pin<&Mr>) {
        drop(dev.net.mrs.remove(mr.key));
    }
}
