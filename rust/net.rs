// SPDX-License-Identifier: GPL-2.0

//! The loopback "wire" of one device: its QP and MR tables, and the
//! execution of queued work requests between QPs of the device.
//!
//! Everything here runs under the device's `net` lock (an IRQ-safe
//! spinlock). Lock order: `net` -> CQ ring. Work moves one step (one WQE)
//! per lock acquisition, so that the CQ events a step asks for are
//! delivered right after, outside every lock.

use crate::{
    counters::{Counter, Counters},
    cq::{CqEvent, Outcome, RsoftCq},
    device::Rsoft,
    grh::{self, GRH_LEN},
    ib::PdId,
    ib::{Access, CqRef, Datagram, Gid, QpState, QpType, Remote, SendOp, Wc, WcOpcode, WcStatus},
    limits,
    mr::{atomic, check_sges, copy_sges, write_sges, BadSge, MrEntry, SgeCopy},
    qp::{QpEntry, WorkQueue, Wqe},
    srq::SrqEntry,
};
use kernel::prelude::*;

/// QP numbers start here (0 and 1 are the IB special QPs).
pub(crate) const QPN_BASE: u32 = 0x100;

/// The largest UD message: the port's MTU (4096).
const UD_MAX_MESSAGE: u64 = 4096;

/// A `remote_qkey` with this bit set means "use the sending QP's Q_Key".
const QKEY_FROM_QP: u32 = 1 << 31;

/// A table of objects owned by the device, indexed by slot, with a stack
/// of free slots so that insertion never allocates.
pub(crate) struct Table<T> {
    slots: KVVec<Option<KBox<T>>>,
    /// `free[..nfree]` are the free slots, lowest on top.
    free: KVVec<u32>,
    nfree: usize,
}

impl<T> Table<T> {
    pub(crate) fn new(size: u32) -> Result<Self> {
        let mut slots = KVVec::with_capacity(size as usize, GFP_KERNEL)?;
        let mut free = KVVec::with_capacity(size as usize, GFP_KERNEL)?;
        for i in 0..size {
            slots.push(None, GFP_KERNEL)?;
            free.push(size - 1 - i, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            free,
            nfree: size as usize,
        })
    }

    /// Stores `item` in a free slot, or hands it back when the table is full.
    pub(crate) fn insert(&mut self, item: KBox<T>) -> Result<u32, KBox<T>> {
        if self.nfree == 0 {
            return Err(item);
        }
        self.nfree -= 1;
        let slot = self.free[self.nfree];
        self.slots[slot as usize] = Some(item);
        Ok(slot)
    }

    /// Takes the object out of `slot`; the caller drops it outside the lock.
    pub(crate) fn remove(&mut self, slot: u32) -> Option<KBox<T>> {
        let item = self.slots.get_mut(slot as usize)?.take()?;
        self.free[self.nfree] = slot;
        self.nfree += 1;
        Some(item)
    }

    pub(crate) fn get(&self, slot: u32) -> Option<&T> {
        self.slots.get(slot as usize)?.as_deref()
    }

    pub(crate) fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        self.slots.get_mut(slot as usize)?.as_deref_mut()
    }
}

/// The events one step asks for; a step pushes at most two completions,
/// and each push asks for at most one event.
pub(crate) struct Events {
    list: [Option<CqEvent>; 2],
}

impl Events {
    pub(crate) fn new() -> Self {
        Self { list: [None; 2] }
    }

    fn add(&mut self, event: Option<CqEvent>) {
        if let Some(slot) = self.list.iter_mut().find(|e| e.is_none()) {
            *slot = event;
        }
    }

    /// Calls the handlers; only once no driver lock is held.
    pub(crate) fn deliver(self) {
        for event in self.list.into_iter().flatten() {
            event.deliver();
        }
    }
}

/// The device's loopback network.
pub(crate) struct Net {
    pub(crate) lid: u16,
    /// The port's GID, the source of every GRH.
    gid: Gid,
    pub(crate) qps: Table<QpEntry>,
    pub(crate) mrs: Table<MrEntry>,
    pub(crate) srqs: Table<SrqEntry>,
    pub(crate) counters: Counters,
    /// Bumped on each MR registration; the low byte of every key.
    mr_generation: u8,
}

/// Splits an MR key into its table slot and generation byte.
fn key_slot(key: u32) -> u32 {
    key >> 8
}

/// One of the two work queues of a QP.
#[derive(Clone, Copy)]
enum Queue {
    Send,
    Recv,
}

/// What executing the head send WQE of a QP comes to.
enum Attempt {
    /// Execute it towards the QP in slot `dest`, moving `len` bytes.
    Execute { dest: u32, len: u32 },
    /// The request fails at the sender only.
    SenderError(WcStatus),
    /// The responder rejects it: both sides complete in error.
    BothError {
        dest: u32,
        sender: WcStatus,
        receiver: WcStatus,
    },
    /// Receiver (the QP in slot `dest`) not ready; retry when it posts a
    /// receive.
    Wait { dest: u32 },
    /// UD: the receive it lands in completes in error; the send succeeds.
    ReceiverError { dest: u32, status: WcStatus },
    /// UC: the responder cannot take it and nobody is told; the send
    /// completes as sent.
    Dropped,
}

impl Net {
    pub(crate) fn new(lid: u16, gid: Gid) -> Result<Self> {
        Ok(Self {
            lid,
            gid,
            qps: Table::new(limits::MAX_QP)?,
            mrs: Table::new(limits::MAX_MR)?,
            srqs: Table::new(limits::MAX_SRQ)?,
            counters: Counters::default(),
            mr_generation: 0,
        })
    }

    pub(crate) fn qp_slot(qpn: u32) -> u32 {
        qpn.wrapping_sub(QPN_BASE)
    }

    pub(crate) fn qp(&self, qpn: u32) -> Option<&QpEntry> {
        self.qps.get(Self::qp_slot(qpn))
    }

    pub(crate) fn qp_mut(&mut self, qpn: u32) -> Option<&mut QpEntry> {
        self.qps.get_mut(Self::qp_slot(qpn))
    }

    /// The queue `qp`'s receives come from, and the PD they are checked in.
    fn receives<'a>(&'a self, qp: &'a QpEntry) -> Option<(&'a WorkQueue, PdId)> {
        match qp.srq {
            Some(slot) => self.srqs.get(slot).map(|srq| (&srq.rq, srq.pd)),
            None => Some((&qp.rq, qp.pd)),
        }
    }

    /// The oldest receive of QP `qpn` (from its SRQ if it has one).
    fn pop_receive(&mut self, qpn: u32) -> Option<Wqe> {
        let qp = self.qp_mut(qpn)?;
        match qp.srq {
            Some(slot) => self.srqs.get_mut(slot)?.pop(),
            None => qp.rq.pop(),
        }
    }

    /// The first QP from slot `from` on that has sends queued towards a QP
    /// whose receives come from SRQ `srq`.
    pub(crate) fn next_sender_to_srq(&self, srq: u32, from: u32) -> Option<u32> {
        let sends_to_srq = |qp: &QpEntry| {
            qp.state == QpState::Rts
                && !qp.sq.is_empty()
                && self
                    .qp(qp.attr.dest_qpn)
                    .is_some_and(|dest| dest.srq == Some(srq))
        };
        (from..limits::MAX_QP)
            .find(|&slot| self.qps.get(slot).is_some_and(sends_to_srq))
            .map(|slot| slot + QPN_BASE)
    }

    /// The MR a key names, if it is still registered.
    pub(crate) fn mr(&self, key: u32) -> Option<&MrEntry> {
        self.mrs.get(key_slot(key)).filter(|mr| mr.key == key)
    }

    pub(crate) fn mr_mut(&mut self, key: u32) -> Option<&mut MrEntry> {
        self.mrs.get_mut(key_slot(key)).filter(|mr| mr.key == key)
    }

    /// Registers an MR and returns its key: the slot, and a generation
    /// byte so that a stale key does not reach a later MR in the same slot.
    pub(crate) fn insert_mr(&mut self, mr: KBox<MrEntry>) -> Result<u32, KBox<MrEntry>> {
        let slot = self.mrs.insert(mr)?;
        self.mr_generation = self.mr_generation.wrapping_add(1);
        let key = (slot << 8) | u32::from(self.mr_generation);
        if let Some(mr) = self.mrs.get_mut(slot) {
            mr.key = key;
        }
        Ok(key)
    }

    /// Removes MR `key`; the caller drops it outside the lock.
    pub(crate) fn remove_mr(&mut self, key: u32) -> Option<KBox<MrEntry>> {
        self.mr(key)?;
        self.mrs.remove(key_slot(key))
    }

    /// Pushes `wc` to `cq`. A completion in error, or one its CQ could not
    /// take, puts QP `qpn` in the error state: every later WR of the QP
    /// flushes. This is the one place that rule lives.
    fn complete(&mut self, qpn: u32, cq: CqRef<Rsoft>, wc: Wc, solicited: bool, ev: &mut Events) {
        let error = wc.status != WcStatus::Success;
        let Outcome { event, overran } = RsoftCq::push(cq, wc, solicited || error);
        let c = &mut self.counters;
        if overran {
            c.add(Counter::CqOverruns, 1);
        } else {
            c.add(Counter::Cqes, 1);
            c.add(Counter::ErrorCompletions, error.into());
        }
        c.add(
            Counter::CompletionEvents,
            matches!(event, Some(CqEvent::Completion(_))).into(),
        );
        ev.add(event);
        if error || overran {
            if let Some(qp) = self.qp_mut(qpn) {
                qp.enter_error();
            }
        }
    }

    /// Moves QP `qpn` one step forward: one send executed or one WQE
    /// flushed. Returns whether there may be more to do.
    pub(crate) fn step(&mut self, qpn: u32, ev: &mut Events) -> bool {
        let Some(qp) = self.qp(qpn) else {
            return false;
        };
        match qp.state {
            QpState::Error => self.flush_one(qpn, ev),
            QpState::Rts if !qp.sq.is_empty() => self.send_one(qpn, ev),
            _ => false,
        }
    }

    /// Completes one outstanding WQE of an errored QP with WR_FLUSH_ERR,
    /// sends first.
    fn flush_one(&mut self, qpn: u32, ev: &mut Events) -> bool {
        // The receives of an SRQ belong to the SRQ, not to this QP.
        let own_receives = self.qp(qpn).is_some_and(|qp| qp.srq.is_none());
        self.fail_head(qpn, Queue::Send, WcStatus::WrFlush, ev)
            || (own_receives && self.fail_head(qpn, Queue::Recv, WcStatus::WrFlush, ev))
    }

    /// Whether `remote` names `len` bytes of an MR of `dest` that both the MR
    /// and the QP `dest` open to `need`.
    fn remote_ok(&self, dest: &QpEntry, remote: Remote, len: u64, need: Access) -> bool {
        self.mr(remote.rkey).is_some_and(|mr| {
            mr.pd == dest.pd
                && mr.access.contains(need)
                && dest.attr.access_flags.contains(need)
                && mr.offset_of(remote.addr, len).is_some()
        })
    }

    /// Decides what the head send WQE of QP `qpn` comes to, touching
    /// nothing. On UC, whatever the responder would reject is dropped.
    fn attempt(&self, qpn: u32) -> Option<Attempt> {
        let qp_type = self.qp(qpn)?.qp_type;
        if qp_type == QpType::Ud {
            return self.attempt_datagram(qpn);
        }
        let attempt = self.attempt_reliable(qpn)?;
        if qp_type != QpType::Uc {
            return Some(attempt);
        }
        Some(match attempt {
            Attempt::SenderError(WcStatus::LocalProtection | WcStatus::LocalLength)
            | Attempt::Execute { .. } => attempt,
            _ => Attempt::Dropped,
        })
    }

    /// What the head send WQE of QP `qpn` comes to with RC's rules.
    fn attempt_reliable(&self, qpn: u32) -> Option<Attempt> {
        let qp = self.qp(qpn)?;
        let (wqe, sges) = qp.sq.front()?;
        let lookup = |key| self.mr(key);
        // Reads and atomics write their result into the local SGEs.
        let local = match wqe.op {
            SendOp::Send | SendOp::RdmaWrite(_) => Access::LOCAL_READ,
            _ => Access::LOCAL_WRITE,
        };
        let len = match check_sges(lookup, qp.pd, local, sges) {
            Ok(len) => len,
            Err(BadSge) => return Some(Attempt::SenderError(WcStatus::LocalProtection)),
        };
        if len > u64::from(crate::limits::MAX_MSG_SIZE) {
            return Some(Attempt::SenderError(WcStatus::LocalLength));
        }
        let dest_qpn = qp.attr.dest_qpn;
        let dest = match self.qp(dest_qpn) {
            // An RC responder answers only its connected peer, on this LID.
            Some(d)
                if qp.attr.dest_lid == self.lid
                    && d.attr.dest_qpn == qpn
                    && matches!(d.state, QpState::Rtr | QpState::Rts) =>
            {
                d
            }
            // Nobody answers: the requester's retries run out.
            _ => return Some(Attempt::SenderError(WcStatus::RetryExceeded)),
        };
        let dest_slot = Net::qp_slot(dest_qpn);
        let remote_check = |remote, need| {
            // Zero-length RDMA names no memory and checks no key.
            if len > 0 && !self.remote_ok(dest, remote, len, need) {
                Some(Attempt::SenderError(WcStatus::RemoteAccess))
            } else {
                None
            }
        };
        let rejected = match wqe.op {
            SendOp::Send => None,
            SendOp::RdmaWrite(r) => remote_check(r, Access::REMOTE_WRITE),
            SendOp::RdmaRead(r) => remote_check(r, Access::REMOTE_READ),
            SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => {
                // The core keeps an MR's iova and memory at the same page
                // offset, so an aligned address is an aligned word.
                if len != 8 {
                    Some(Attempt::SenderError(WcStatus::LocalLength))
                } else if remote.addr % 8 != 0 {
                    Some(Attempt::SenderError(WcStatus::RemoteInvalidRequest))
                } else {
                    remote_check(remote, Access::REMOTE_ATOMIC)
                }
            }
        };
        if rejected.is_some() {
            return rejected;
        }
        if !wqe.consumes_recv() {
            return Some(Attempt::Execute {
                dest: dest_slot,
                len: len as u32,
            });
        }
        let (rq, rpd) = self.receives(dest)?;
        let Some((_, rsges)) = rq.front() else {
            // rnr_retry 7 means "retry forever"; a finite count is used up
            // at once, since nothing else could post the receive meanwhile.
            return Some(if qp.attr.rnr_retry == 7 {
                Attempt::Wait { dest: dest_slot }
            } else {
                Attempt::SenderError(WcStatus::RnrRetryExceeded)
            });
        };
        if matches!(wqe.op, SendOp::Send) {
            let fail = |sender, receiver| Attempt::BothError {
                dest: dest_slot,
                sender,
                receiver,
            };
            let room = match check_sges(lookup, rpd, Access::LOCAL_WRITE, rsges) {
                Ok(room) => room,
                Err(BadSge) => {
                    return Some(fail(WcStatus::RemoteOperation, WcStatus::LocalProtection));
                }
            };
            if len > room {
                return Some(fail(WcStatus::RemoteInvalidRequest, WcStatus::LocalLength));
            }
        }
        Some(Attempt::Execute {
            dest: dest_slot,
            len: len as u32,
        })
    }

    /// What the head send WQE of UD QP `qpn` comes to: whatever does not
    /// reach a ready receive is dropped without a word.
    fn attempt_datagram(&self, qpn: u32) -> Option<Attempt> {
        let qp = self.qp(qpn)?;
        let (wqe, sges) = qp.sq.front()?;
        let lookup = |key| self.mr(key);
        let Ok(len) = check_sges(lookup, qp.pd, Access::LOCAL_READ, sges) else {
            return Some(Attempt::SenderError(WcStatus::LocalProtection));
        };
        if len > UD_MAX_MESSAGE {
            return Some(Attempt::SenderError(WcStatus::LocalLength));
        }
        let d = wqe.datagram?;
        let qkey = if d.remote_qkey & QKEY_FROM_QP != 0 {
            qp.attr.qkey
        } else {
            d.remote_qkey
        };
        let dest = self.qp(d.remote_qpn).filter(|dest| {
            d.address.dlid == self.lid
                && dest.qp_type == QpType::Ud
                && matches!(dest.state, QpState::Rtr | QpState::Rts)
                && dest.attr.qkey == qkey
        });
        let Some(((_, rsges), rpd)) = dest.and_then(|dest| {
            let (rq, pd) = self.receives(dest)?;
            Some((rq.front()?, pd))
        }) else {
            return Some(Attempt::Dropped);
        };
        let dest_slot = Net::qp_slot(d.remote_qpn);
        let fail = |status| Attempt::ReceiverError {
            dest: dest_slot,
            status,
        };
        Some(match check_sges(lookup, rpd, Access::LOCAL_WRITE, rsges) {
            Err(BadSge) => fail(WcStatus::LocalProtection),
            Ok(room) if room < len + u64::from(GRH_LEN) => fail(WcStatus::LocalLength),
            Ok(_) => Attempt::Execute {
                dest: dest_slot,
                len: len as u32,
            },
        })
    }

    /// Executes the head send WQE of QP `qpn`.
    fn send_one(&mut self, qpn: u32, ev: &mut Events) -> bool {
        let Some(attempt) = self.attempt(qpn) else {
            return false;
        };
        let dest_qpn = |slot: u32| slot + QPN_BASE;
        match attempt {
            Attempt::Wait { dest } => {
                // An SRQ post must know to resume this sender.
                let srq = self.qp(dest_qpn(dest)).and_then(|d| d.srq);
                if let Some(srq) = srq.and_then(|slot| self.srqs.get_mut(slot)) {
                    srq.waited_on = true;
                }
                false
            }
            Attempt::Dropped => {
                self.complete_sent(qpn, ev);
                true
            }
            Attempt::SenderError(status) => self.fail_head(qpn, Queue::Send, status, ev),
            Attempt::ReceiverError { dest, status } => {
                self.fail_head(dest_qpn(dest), Queue::Recv, status, ev);
                self.complete_sent(qpn, ev);
                true
            }
            Attempt::BothError {
                dest,
                sender,
                receiver,
            } => {
                self.fail_head(dest_qpn(dest), Queue::Recv, receiver, ev);
                self.fail_head(qpn, Queue::Send, sender, ev)
            }
            Attempt::Execute { dest, len } => {
                self.execute(qpn, dest_qpn(dest), len, ev);
                true
            }
        }
    }

    /// Moves the data of the head send WQE of `qpn` (checked by
    /// [`Net::attempt`]); returns the status for its completions.
    fn move_data(&self, qpn: u32, dest: u32, len: u32) -> Result {
        let (qp, rqp) = (self.qp(qpn).ok_or(EINVAL)?, self.qp(dest).ok_or(EINVAL)?);
        let (wqe, sges) = qp.sq.front().ok_or(EINVAL)?;
        let lookup = |key| self.mr(key);
        let remote = |r: Remote| SgeCopy {
            addr: r.addr,
            length: len,
            lkey: r.rkey,
        };
        match wqe.op {
            SendOp::Send => {
                let rsges = self.receives(rqp).ok_or(EINVAL)?.0.front().ok_or(EINVAL)?.1;
                let Some(d) = wqe.datagram else {
                    return copy_sges(lookup, rsges, 0, sges);
                };
                if let Some(route) = &d.address.grh {
                    write_sges(lookup, rsges, &grh::header(self.gid, route, len))?;
                }
                copy_sges(lookup, rsges, GRH_LEN, sges)
            }
            SendOp::RdmaWrite(r) => copy_sges(lookup, &[remote(r)], 0, sges),
            SendOp::RdmaRead(r) => copy_sges(lookup, sges, 0, &[remote(r)]),
            SendOp::CompareSwap {
                remote,
                compare,
                swap,
            } => atomic(lookup, sges, remote, compare, Some(swap)),
            SendOp::FetchAdd { remote, add } => atomic(lookup, sges, remote, add, None),
        }
    }

    /// Executes the head send WQE of `qpn` towards `dest`, then completes
    /// the receive it consumed (if any) and the send (if signaled).
    fn execute(&mut self, qpn: u32, dest: u32, len: u32, ev: &mut Events) {
        let status = match self.move_data(qpn, dest, len) {
            Ok(()) => WcStatus::Success,
            Err(_) => WcStatus::LocalProtection,
        };
        let lid = self.lid;
        let Some(qp) = self.qp_mut(qpn) else {
            return;
        };
        let Some(wqe) = qp.sq.pop() else {
            return;
        };
        let (sid, scq, signaled) = (qp.id, qp.send_cq, wqe.signaled || qp.sq_sig_all);
        self.counters.executed(&wqe, len);
        if wqe.consumes_recv() {
            let Some(rwqe) = self.pop_receive(dest) else {
                return;
            };
            let Some(rqp) = self.qp(dest) else {
                return;
            };
            // A UD receive always counts the GRH space.
            let (grh_len, grh) = match wqe.datagram {
                Some(Datagram { address, .. }) => (GRH_LEN, address.grh.is_some()),
                None => (0, false),
            };
            let recv = Wc {
                wr_id: rwqe.wr_id,
                qp: rqp.id,
                status,
                opcode: match wqe.op {
                    SendOp::Send => WcOpcode::Recv,
                    _ => WcOpcode::RecvRdmaWithImm,
                },
                byte_len: len + grh_len,
                imm: wqe.imm,
                src_qp: qpn,
                slid: lid,
                grh,
                ..Wc::EMPTY
            };
            let rcq = rqp.recv_cq;
            self.complete(dest, rcq, recv, wqe.solicited, ev);
        }
        if signaled || status != WcStatus::Success {
            let send = Wc {
                wr_id: wqe.wr_id,
                qp: sid,
                status,
                opcode: wqe.send_opcode(),
                byte_len: len,
                ..Wc::EMPTY
            };
            self.complete(qpn, scq, send, false, ev);
        }
    }

    /// Completes the head send WQE of `qpn` as sent, if it is signaled.
    fn complete_sent(&mut self, qpn: u32, ev: &mut Events) {
        let Some(qp) = self.qp_mut(qpn) else {
            return;
        };
        let Some(wqe) = qp.sq.pop() else {
            return;
        };
        if wqe.signaled || qp.sq_sig_all {
            let wc = Wc {
                wr_id: wqe.wr_id,
                qp: qp.id,
                opcode: wqe.send_opcode(),
                ..Wc::EMPTY
            };
            let cq = qp.send_cq;
            self.complete(qpn, cq, wc, false, ev);
        }
    }

    /// Completes the head WQE of one of `qpn`'s queues with the error
    /// `status` (which puts the QP in the error state). Returns whether
    /// there was a WQE.
    fn fail_head(&mut self, qpn: u32, queue: Queue, status: WcStatus, ev: &mut Events) -> bool {
        let Some(qp) = self.qp_mut(qpn) else {
            return false;
        };
        let (id, wqe, cq, opcode) = match queue {
            Queue::Send => (qp.id, qp.sq.pop(), qp.send_cq, WcOpcode::Send),
            Queue::Recv => {
                let (id, cq) = (qp.id, qp.recv_cq);
                (id, self.pop_receive(qpn), cq, WcOpcode::Recv)
            }
        };
        let Some(wqe) = wqe else {
            return false;
        };
        let wc = Wc {
            wr_id: wqe.wr_id,
            qp: id,
            status,
            opcode,
            ..Wc::EMPTY
        };
        self.complete(qpn, cq, wc, false, ev);
        true
    }
}
