// SPDX-License-Identifier: GPL-2.0

//! The rsoft device: one InfiniBand port that is always up, and the verbs
//! on its objects. Data movement lives in [`crate::net`].

use crate::{
    counters,
    cq::RsoftCq,
    ib::{
        self, Access, CqArm, CqAttr, IrqSpinLock, PdId, QpModify, QpQuery, QpState, QpType, SendOp,
    },
    limits,
    mr::{MrEntry, SgeCopy},
    net::{Events, Net, QPN_BASE},
    new_irq_spinlock,
    qp::{QpEntry, WorkQueue, Wqe},
    srq::SrqEntry,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{c_str, prelude::*};

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
    #[pin]
    net: IrqSpinLock<Net>,
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
    let net = Net::new(lid, ib::Gid::link_local(guid))?;
    let data = try_pin_init!(RsoftDevice {
        guid,
        lid,
        pds: AtomicU32::new(0),
        cqs: AtomicU32::new(0),
        ahs: AtomicU32::new(0),
        net <- new_irq_spinlock!(net, "rsoft_net"),
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

impl RsoftDevice {
    /// Moves QP `qpn` forward until it has nothing more to do, delivering
    /// the CQ events of each step outside the lock.
    fn run(&self, qpn: u32) {
        loop {
            let mut events = Events::new();
            let more = self.net.lock().step(qpn, &mut events);
            events.deliver();
            if !more {
                break;
            }
        }
    }

    /// Runs every QP whose peer takes its receives from SRQ `slot`: one of
    /// them found the SRQ empty and waits for a post.
    fn resume_senders_of(&self, slot: u32) {
        let mut from = 0;
        loop {
            // The guard must drop before `run` takes the lock again.
            let next = self.net.lock().next_sender_to_srq(slot, from);
            let Some(qpn) = next else {
                break;
            };
            self.run(qpn);
            from = Net::qp_slot(qpn) + 1;
        }
    }

    /// Runs QP `qpn`, then its RC peer: a step of one may have unblocked
    /// the other (a receive for a sender waiting on RNR) or put it in the
    /// error state (to be flushed).
    fn progress(&self, qpn: u32) {
        self.run(qpn);
        let peer = self.net.lock().qp(qpn).map(|qp| qp.attr.dest_qpn);
        if let Some(peer) = peer.filter(|&peer| peer != qpn) {
            self.run(peer);
        }
    }
}

/// A protection domain; only counted.
pub(crate) struct Pd;

/// A QP as the core holds it; its state lives in the device's QP table.
pub(crate) struct Qp {
    qpn: u32,
}

/// An MR as the core holds it; its state lives in the device's MR table.
pub(crate) struct Mr {
    key: u32,
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

/// A shared receive queue as the core holds it; its state lives in the
/// device's SRQ table.
pub(crate) struct Srq {
    pub(crate) slot: u32,
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
        dev.net.lock().counters.read(values);
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
            // Every atomic executes under the device's net lock.
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
        attr: &mut ib::QpInitAttr<Rsoft>,
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
        let entry = KBox::new(QpEntry::new(attr)?, GFP_KERNEL)?;
        let inserted = dev.net.lock().qps.insert(entry);
        // A refused entry is dropped here, outside the lock.
        let qpn = QPN_BASE + inserted.map_err(|_| ENOMEM)?;
        Ok((qpn, Qp { qpn }))
    }

    fn forget_qp(dev: &RsoftDevice, qpn: u32) {
        let entry = dev.net.lock().qps.remove(Net::qp_slot(qpn));
        drop(entry);
    }

    fn modify_qp(dev: &RsoftDevice, qp: &Qp, m: &QpModify) -> Result {
        {
            let mut net = dev.net.lock();
            let entry = net.qp_mut(qp.qpn).ok_or(EINVAL)?;
            let too_many = |n: Option<u8>| n.is_some_and(|n| u32::from(n) > limits::MAX_RD_ATOM);
            if !m.valid_from(entry.state)
                || too_many(m.max_rd_atomic)
                || too_many(m.max_dest_rd_atomic)
            {
                return Err(EINVAL);
            }
            entry.apply(m);
        }
        // A new state may unblock this QP (flush in ERR, sends in RTS) or
        // its peer (waiting on RNR for a QP that will now never answer).
        dev.progress(qp.qpn);
        Ok(())
    }

    fn query_qp(dev: &RsoftDevice, qp: &Qp) -> Result<QpQuery> {
        Ok(dev.net.lock().qp(qp.qpn).ok_or(EINVAL)?.query())
    }

    fn destroy_qp(dev: &RsoftDevice, qp: Pin<&Qp>) {
        let entry = {
            let mut net = dev.net.lock();
            let entry = net.qps.remove(Net::qp_slot(qp.qpn));
            // uverbs reads wc->qp of every CQE it polls: none may outlive
            // the QP.
            if let Some(e) = &entry {
                e.send_cq.data().purge(e.id);
                if !e.recv_cq.same(&e.send_cq) {
                    e.recv_cq.data().purge(e.id);
                }
            }
            entry
        };
        // A peer waiting on RNR for this QP now gets no answer.
        if let Some(e) = entry.as_ref().filter(|e| e.attr.dest_qpn != qp.qpn) {
            dev.run(e.attr.dest_qpn);
        }
        drop(entry);
    }

    fn post_send(dev: &RsoftDevice, qp: &Qp, wrs: &mut ib::SendWrs<'_>) -> Result {
        let posted = (|| {
            let mut net = dev.net.lock();
            let entry = net.qp_mut(qp.qpn).ok_or(EINVAL)?;
            if !matches!(entry.state, QpState::Rts | QpState::Sqd | QpState::Error) {
                return Err(EINVAL);
            }
            for wr in wrs {
                let wr = wr?;
                // UC has no responder resources: no reads, no atomics; UD
                // only sends, each to an address.
                let allowed = match entry.qp_type {
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
                entry.sq.push(wqe, wr.sges.iter().map(SgeCopy::from))?;
            }
            Ok(())
        })();
        // What was posted before a bad WR still goes out.
        dev.progress(qp.qpn);
        posted
    }

    fn post_recv(dev: &RsoftDevice, qp: &Qp, wrs: &mut ib::RecvWrs<'_>) -> Result {
        let posted = (|| {
            let mut net = dev.net.lock();
            let entry = net.qp_mut(qp.qpn).ok_or(EINVAL)?;
            if entry.state == QpState::Reset || entry.srq.is_some() {
                return Err(EINVAL);
            }
            push_receives(&mut entry.rq, wrs)
        })();
        // Flush if in error; resume a peer waiting for this receive.
        dev.progress(qp.qpn);
        posted
    }

    fn new_srq(
        dev: &RsoftDevice,
        pd: PdId,
        attr: &mut ib::SrqAttr,
        notifier: ib::SrqNotifier,
    ) -> Result<(u32, impl PinInit<Srq, Error>)> {
        attr.max_wr = queue_size(attr.max_wr, limits::MAX_SRQ_WR)?;
        attr.max_sge = queue_size(attr.max_sge, limits::MAX_SGE)?;
        let entry = KBox::new(SrqEntry::new(pd, attr, notifier)?, GFP_KERNEL)?;
        let inserted = dev.net.lock().srqs.insert(entry);
        // A refused entry is dropped here, outside the lock.
        let slot = inserted.map_err(|_| ENOMEM)?;
        Ok((slot, Srq { slot }))
    }

    fn forget_srq(dev: &RsoftDevice, slot: u32) {
        let entry = dev.net.lock().srqs.remove(slot);
        drop(entry);
    }

    fn modify_srq(dev: &RsoftDevice, srq: &Srq, m: &ib::SrqModify) -> Result {
        // Resizing is not offered (no IB_DEVICE_SRQ_RESIZE).
        if m.max_wr.is_some() {
            return Err(EINVAL);
        }
        let mut net = dev.net.lock();
        let entry = net.srqs.get_mut(srq.slot).ok_or(EINVAL)?;
        m.limit.map_or(Ok(()), |limit| entry.arm(limit))
    }

    fn query_srq(dev: &RsoftDevice, srq: &Srq) -> Result<ib::SrqAttr> {
        Ok(dev.net.lock().srqs.get(srq.slot).ok_or(EINVAL)?.attr())
    }

    fn destroy_srq(dev: &RsoftDevice, srq: Pin<&Srq>) {
        Self::forget_srq(dev, srq.slot);
    }

    fn post_srq_recv(dev: &RsoftDevice, srq: &Srq, wrs: &mut ib::RecvWrs<'_>) -> Result {
        let (posted, waited_on) = {
            let mut net = dev.net.lock();
            let entry = net.srqs.get_mut(srq.slot).ok_or(EINVAL)?;
            let posted = push_receives(&mut entry.rq, wrs);
            (posted, core::mem::take(&mut entry.waited_on))
        };
        if waited_on {
            dev.resume_senders_of(srq.slot);
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
        let entry = KBox::new(
            MrEntry {
                key: 0,
                pd,
                iova,
                access,
                mem,
            },
            GFP_KERNEL,
        )?;
        let inserted = dev.net.lock().insert_mr(entry);
        // A refused entry is dropped here, outside the lock (it unpins).
        let key = inserted.map_err(|_| ENOMEM)?;
        Ok((key, Mr { key }))
    }

    fn rereg_mr(dev: &RsoftDevice, mr: &Mr, change: &ib::MrRereg) -> Result {
        // The core serialises calls on one MR: the access read here stays.
        let access = match change.access {
            Some(access) => access,
            None => dev.net.lock().mr(mr.key).ok_or(EINVAL)?.access,
        };
        let mem = change.pin(access)?;
        let old = {
            let mut net = dev.net.lock();
            let entry = net.mr_mut(mr.key).ok_or(EINVAL)?;
            entry.access = access;
            if let Some(pd) = change.pd {
                entry.pd = pd;
            }
            match (mem, change.new_iova()) {
                (Some(mem), Some(iova)) => {
                    entry.iova = iova;
                    Some(core::mem::replace(&mut entry.mem, mem))
                }
                _ => None,
            }
        };
        // The old pages are unpinned here, outside the lock.
        drop(old);
        Ok(())
    }

    fn forget_mr(dev: &RsoftDevice, key: u32) {
        let entry = dev.net.lock().remove_mr(key);
        drop(entry);
    }

    fn dereg_mr(dev: &RsoftDevice, mr: Pin<&Mr>) {
        Self::forget_mr(dev, mr.key);
    }
}
