// SPDX-License-Identifier: GPL-2.0

//! The transport rules: what the head send WQE of a QP comes to on RC, UC
//! and UD, decided against the responder under its lock, and the execution
//! that follows with no lock held (a UD datagram, at most one MTU, is
//! delivered under the responder's lock, which keeps the receive
//! completions of concurrent senders in order).

use crate::{
    complete::{self, After},
    copy::{check_sges, copy_sges, write_sges, BadSge, Pace, SgeCopy, SgeList},
    fastreg,
    grh::{self, GRH_LEN},
    ib::{
        Access, Datagram, Grh, PdId, QpQuery, QpState, QpType, RecvGrh, Remote, SendOp, Wc,
        WcOpcode, WcStatus,
    },
    limits,
    mr::MrKey,
    net::{Link, Net},
    payload::Payload,
    qp::{QpInner, QpShared, QpUse, Qpn},
    retry::{Budget, Refusal, Retries},
    wq::Wqe,
};
use kernel::prelude::*;

/// A `remote_qkey` with this bit set means "use the sending QP's Q_Key".
const QKEY_FROM_QP: u32 = 1 << 31;

/// The head send WQE of a QP and what executing it needs of the QP,
/// copied out under the QP's lock.
pub(crate) struct Head {
    wqe: Wqe,
    data: Payload,
    /// The send queue's epoch when copied (see [`QpInner::sq_epoch`]).
    epoch: u32,
    attr: QpQuery,
}

impl Head {
    /// What executing it copies.
    pub(crate) fn bytes(&self) -> u64 {
        self.data.len()
    }

    /// How often it may be retried, and after how long.
    pub(crate) fn budget(&self) -> Budget {
        Budget {
            rnr_retry: self.attr.rnr_retry,
            retry_cnt: self.attr.retry_cnt,
            timeout: self.attr.timeout,
        }
    }

    /// Whether it is still on the queue whose lock `inner` is: a RESET
    /// since it was copied discarded it.
    pub(crate) fn is_queued(&self, inner: &QpInner) -> bool {
        inner.sq_epoch == self.epoch
    }

    pub(crate) fn of(inner: &QpInner) -> Option<Self> {
        let (wqe, sges) = inner.sq.front()?;
        Some(Self {
            wqe: *wqe,
            data: Payload::new(sges, inner.sq.front_inline()),
            epoch: inner.sq_epoch,
            attr: inner.attr,
        })
    }
}

/// A receive WQE a sender took.
struct Recv {
    wqe: Wqe,
    sges: SgeList,
    /// Taken from the QP's own receive queue (counted in `rq_busy`).
    own: bool,
}

/// The PD the receives of `qp` are checked in.
fn receive_pd(qp: &QpShared) -> PdId {
    qp.srq.as_ref().map_or(qp.pd, |srq| srq.pd)
}

/// Shows the oldest receive of `dest` (whose lock `d` is) to `decide`,
/// and takes it if `decide` says so. An empty SRQ remembers that a sender
/// waits for it.
fn receive_at<R>(
    dest: &QpShared,
    d: &mut QpInner,
    decide: impl FnOnce(Option<&[SgeCopy]>) -> (bool, R),
) -> (Option<Recv>, R) {
    match &dest.srq {
        Some(srq) => {
            let mut s = srq.inner.lock();
            let front = s.rq.front().map(|(_, sges)| SgeList::new(sges));
            let (take, r) = decide(front.as_ref().map(SgeList::as_slice));
            if front.is_none() {
                s.waited_on = true;
            }
            let recv = take
                .then(|| front.zip(srq.pop(&mut s)))
                .flatten()
                .map(|(sges, wqe)| Recv {
                    wqe,
                    sges,
                    own: false,
                });
            (recv, r)
        }
        None => {
            let front = d.rq.front().map(|(_, sges)| SgeList::new(sges));
            let (take, r) = decide(front.as_ref().map(SgeList::as_slice));
            let recv = take
                .then(|| front.zip(d.rq.pop()))
                .flatten()
                .map(|(sges, wqe)| Recv {
                    wqe,
                    sges,
                    own: true,
                });
            (recv, r)
        }
    }
}

/// Executes or fails the head send WQE of `qp` (copied as `head`).
/// Returns whether there may be more to do.
pub(crate) fn send(net: &Net, qp: &QpUse, head: &Head, may_sleep: bool, after: &mut After) -> bool {
    if let SendOp::Local(op) = &head.wqe.op {
        let status = fastreg::execute(net.mrs(), qp.pd, op);
        return finish_send(net, qp, head, status, 0, after);
    }
    match qp.qp_type {
        QpType::Ud | QpType::Gsi => send_datagram(net, qp, head, after),
        QpType::Rc | QpType::Uc => send_connected(net, qp, head, may_sleep, after),
    }
}

/// What the responder makes of a request, decided under its lock.
#[derive(Clone, Copy)]
enum Verdict {
    /// Execute it (with the receive taken, if it consumes one).
    Execute,
    /// The request fails at the sender only.
    SenderError(WcStatus),
    /// The responder rejects it: the receive taken and the send both
    /// complete in error.
    BothError {
        sender: WcStatus,
        receiver: WcStatus,
    },
    /// Receiver not ready; retry when it posts a receive.
    Wait,
    /// Receiver not ready: an RNR NAK with the responder's RNR timer; the
    /// requester retries (see [`crate::retry`]).
    RnrNak(u8),
    /// The responder drops it without a word.
    Unanswered,
    /// UC: the responder cannot take it and nobody is told; the send
    /// completes as sent.
    Dropped,
}

/// Whether `remote` names `len` bytes of an MR of `dest` that both the MR
/// and the QP (whose rights are `qp_rights`) open to `need`.
fn remote_ok(
    net: &Net,
    dest: &QpShared,
    qp_rights: Access,
    remote: Remote,
    len: u64,
    need: Access,
) -> bool {
    net.mrs().get(MrKey::of(remote.rkey)).is_some_and(|mr| {
        mr.pd == dest.pd
            && mr.access.contains(need)
            && qp_rights.contains(need)
            && mr.offset_of(remote.addr, len).is_some()
    })
}

/// Decides, under the responder's lock, what the request `head` of `qp`
/// comes to at `dest`. On UC, whatever the responder would reject is
/// dropped and takes no receive.
fn judge(
    net: &Net,
    qp: &QpShared,
    dest: &QpShared,
    head: &Head,
    len: u32,
) -> (Option<Recv>, Verdict) {
    let uc = qp.qp_type == QpType::Uc;
    let mut d = dest.inner.lock();
    // A responder answers only its connected peer, and only when ready;
    // other packets it drops without a word.
    if d.attr.dest_qpn != qp.qpn.num()
        || !net.is_reached_by(&d.attr.av)
        || !matches!(d.state, QpState::Rtr | QpState::Rts)
    {
        return (None, Verdict::Unanswered);
    }
    let rights = d.attr.access_flags;
    let reject = |status| {
        if uc {
            Verdict::Dropped
        } else {
            Verdict::SenderError(status)
        }
    };
    let remote_check = |remote, need| {
        // Zero-length RDMA names no memory and checks no key.
        (len > 0 && !remote_ok(net, dest, rights, remote, len.into(), need))
            .then(|| reject(WcStatus::RemoteAccess))
    };
    let rejected = match head.wqe.op {
        SendOp::Send => None,
        SendOp::RdmaWrite(r) => remote_check(r, Access::REMOTE_WRITE),
        SendOp::RdmaRead(r) => remote_check(r, Access::REMOTE_READ),
        SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => {
            // The core keeps an MR's iova and memory at the same page
            // offset, so an aligned address is an aligned word.
            if len != 8 {
                Some(Verdict::SenderError(WcStatus::LocalLength))
            } else if remote.addr % 8 != 0 {
                Some(Verdict::SenderError(WcStatus::RemoteInvalidRequest))
            } else {
                remote_check(remote, Access::REMOTE_ATOMIC)
            }
        }
        // Executed by the requester (`send`), never sent.
        SendOp::Local(_) => Some(Verdict::SenderError(WcStatus::LocalQpOperation)),
    };
    if let Some(verdict) = rejected {
        return (None, verdict);
    }
    if !head.wqe.consumes_recv() {
        return (None, Verdict::Execute);
    }
    let rpd = receive_pd(dest);
    let is_send = matches!(head.wqe.op, SendOp::Send);
    let rnr_timer = d.attr.min_rnr_timer;
    let (recv, verdict) = receive_at(dest, &mut d, |front| {
        let Some(rsges) = front else {
            // rnr_retry 7 means "retry forever": the receive's post runs
            // the requester again. A finite count waits out the RNR timer
            // between tries.
            let verdict = if uc {
                Verdict::Dropped
            } else if head.attr.rnr_retry == 7 {
                Verdict::Wait
            } else {
                Verdict::RnrNak(rnr_timer)
            };
            return (false, verdict);
        };
        if !is_send {
            return (true, Verdict::Execute);
        }
        let verdict = match check_sges(net.mrs(), rpd, Access::LOCAL_WRITE, rsges) {
            Err(BadSge) => Verdict::BothError {
                sender: WcStatus::RemoteOperation,
                receiver: WcStatus::LocalProtection,
            },
            Ok(room) if u64::from(len) > room => Verdict::BothError {
                sender: WcStatus::RemoteInvalidRequest,
                receiver: WcStatus::LocalLength,
            },
            Ok(_) => Verdict::Execute,
        };
        match verdict {
            Verdict::BothError { .. } if uc => (false, Verdict::Dropped),
            _ => (true, verdict),
        }
    });
    if recv.as_ref().is_some_and(|r| r.own) {
        d.rq_busy += 1;
    }
    // SEND_WITH_INV: the key names a fast-registration MR of the responder
    // (only kernel consumers have any), invalidated as the send is taken.
    // What it mapped may be dropped under the lock: kernel pages, which
    // are not released on drop.
    let verdict = match (verdict, head.wqe.invalidate) {
        (Verdict::Execute, Some(key)) if net.mrs().invalidate(dest.pd, MrKey::of(key)).is_err() => {
            Verdict::BothError {
                sender: WcStatus::RemoteOperation,
                receiver: WcStatus::RemoteInvalidRequest,
            }
        }
        (verdict, _) => verdict,
    };
    (recv, verdict)
}

/// Nobody answers the request `head`: RC tries again until its retries
/// run out; UC, which expects no answer, never knows.
fn unanswered(net: &Net, qp: &QpUse, head: &Head, after: &mut After) -> bool {
    match qp.qp_type {
        QpType::Uc => finish_send(net, qp, head, WcStatus::Success, 0, after),
        _ => {
            after.refusal = Some(Refusal::Silence);
            false
        }
    }
}

/// The status a completion of the head WQE gets when its execution failed
/// after the checks (an MR deregistered meanwhile, the QP destroyed).
fn status_of(moved: Result) -> WcStatus {
    match moved {
        Ok(()) => WcStatus::Success,
        Err(_) => WcStatus::LocalProtection,
    }
}

/// RC and UC: checks the request, has the responder judge it, executes it
/// and completes it.
fn send_connected(net: &Net, qp: &QpUse, head: &Head, may_sleep: bool, after: &mut After) -> bool {
    // Reads and atomics write their result into the local SGEs.
    let local = match head.wqe.op {
        SendOp::Send | SendOp::RdmaWrite(_) => Access::LOCAL_READ,
        _ => Access::LOCAL_WRITE,
    };
    let len = match head.data.check(net.mrs(), qp.pd, local) {
        Ok(len) => match u32::try_from(len) {
            Ok(len) if len <= limits::MAX_MSG_SIZE => len,
            _ => return finish_send(net, qp, head, WcStatus::LocalLength, 0, after),
        },
        Err(BadSge) => return finish_send(net, qp, head, WcStatus::LocalProtection, 0, after),
    };
    let a = &head.attr;
    let Some(dest) = net.peer(&a.av, Qpn::of(a.dest_qpn)) else {
        return unanswered(net, qp, head, after);
    };
    let (recv, verdict) = judge(net, qp, &dest, head, len);
    match verdict {
        Verdict::Wait => false,
        Verdict::RnrNak(timer) => {
            after.refusal = Some(Refusal::Rnr(timer));
            false
        }
        Verdict::Unanswered => unanswered(net, qp, head, after),
        Verdict::Dropped => finish_send(net, qp, head, WcStatus::Success, 0, after),
        Verdict::SenderError(status) => finish_send(net, qp, head, status, 0, after),
        Verdict::BothError { sender, receiver } => {
            if let Some(recv) = recv {
                complete_recv(net, qp, &dest, recv, head, receiver, 0, after);
            }
            finish_send(net, qp, head, sender, 0, after)
        }
        Verdict::Execute => {
            let stop = || qp.is_closing() || dest.is_closing();
            let pace = Pace {
                may_sleep,
                stop: &stop,
            };
            let status = status_of(move_data(net, head, recv.as_ref(), len, &pace));
            net.counters.executed(&head.wqe, len);
            if let Some(recv) = recv {
                complete_recv(net, qp, &dest, recv, head, status, len, after);
            }
            finish_send(net, qp, head, status, len, after)
        }
    }
}

/// Moves the data of the request `head` (checked by [`judge`]) into the
/// receive `recv` it took, if any.
fn move_data(net: &Net, head: &Head, recv: Option<&Recv>, len: u32, pace: &Pace<'_>) -> Result {
    let mrs = net.mrs();
    let sges = head.data.sges();
    match head.wqe.op {
        SendOp::Send => head
            .data
            .copy_to(mrs, recv.ok_or(EINVAL)?.sges.as_slice(), 0, pace),
        SendOp::RdmaWrite(r) => head.data.copy_to(mrs, &[SgeCopy::remote(r, len)], 0, pace),
        SendOp::RdmaRead(r) => copy_sges(mrs, sges, 0, &[SgeCopy::remote(r, len)], pace),
        SendOp::CompareSwap {
            remote,
            compare,
            swap,
        } => atomic(net, sges, remote, compare, Some(swap)),
        SendOp::FetchAdd { remote, add } => atomic(net, sges, remote, add, None),
        SendOp::Local(_) => Err(EINVAL),
    }
}

/// Performs an atomic on the 8 bytes at `remote` and scatters the original
/// value over the local SGEs (8 bytes in all, in however many pieces).
fn atomic(net: &Net, local: &[SgeCopy], remote: Remote, operand: u64, swap: Option<u64>) -> Result {
    let rmr = net.mrs().get(MrKey::of(remote.rkey)).ok_or(EINVAL)?;
    let roff = rmr.offset_of(remote.addr, 8).ok_or(EINVAL)?;
    let old = {
        let _atomics = net.fabric.atomics.lock();
        rmr.mem.atomic(roff, operand, swap)?
    };
    write_sges(net.mrs(), local, 0, &old.to_ne_bytes())
}

/// What the receiver of a datagram along `route` from `net` is told its
/// buffer starts with.
fn recv_grh(net: &Net, route: &Option<Grh>) -> RecvGrh {
    match (route, &net.link) {
        (None, _) => RecvGrh::Absent,
        (Some(_), Link::Ib { .. }) => RecvGrh::Ib,
        (Some(route), Link::Roce) => grh::roce_kind(route),
    }
}

/// The completion of a receive that a request of `from` (`head`) took.
fn recv_wc(
    net: &Net,
    from: &QpShared,
    dest: &QpShared,
    recv: &Recv,
    head: &Head,
    status: WcStatus,
    len: u32,
) -> Wc {
    if status != WcStatus::Success {
        return Wc {
            wr_id: recv.wqe.wr_id,
            qp: dest.id(),
            status,
            opcode: WcOpcode::Recv,
            ..Wc::EMPTY
        };
    }
    // A UD receive always counts the GRH space.
    let (grh_len, grh) = match head.wqe.datagram {
        Some(Datagram { address, .. }) => (GRH_LEN, recv_grh(net, &address.grh)),
        None => (0, RecvGrh::Absent),
    };
    Wc {
        wr_id: recv.wqe.wr_id,
        qp: dest.id(),
        status,
        opcode: match head.wqe.op {
            SendOp::Send => WcOpcode::Recv,
            _ => WcOpcode::RecvRdmaWithImm,
        },
        byte_len: len + grh_len,
        ex: head.wqe.recv_ex(),
        src_qp: from.qpn.num(),
        slid: match net.link {
            Link::Ib { lid, .. } => lid,
            Link::Roce => 0,
        },
        grh,
        ..Wc::EMPTY
    }
}

/// Completes the receive `recv` of `dest` that the request `head` of `from`
/// took, then lets a flush of `dest` that waited for it go on.
#[allow(clippy::too_many_arguments)]
fn complete_recv(
    net: &Net,
    from: &QpShared,
    dest: &QpUse,
    recv: Recv,
    head: &Head,
    status: WcStatus,
    len: u32,
    after: &mut After,
) {
    let wc = recv_wc(net, from, dest, &recv, head, status, len);
    let mut kick = complete::complete(net, dest, dest.recv_cq(), wc, head.wqe.solicited, after);
    if recv.own {
        let mut d = dest.inner.lock();
        d.rq_busy = d.rq_busy.saturating_sub(1);
        kick |= d.state == QpState::Error && d.rq_busy == 0;
    }
    if kick {
        if let Some(dest) = dest.arc().enter() {
            after.kick(dest);
        }
    }
}

/// Takes the head send WQE (`head`) off the queue and completes it with
/// `status` if it is signaled or failed. Returns whether there may be more
/// to do (a later post runs the QP again anyway).
fn finish_send(
    net: &Net,
    qp: &QpUse,
    head: &Head,
    status: WcStatus,
    len: u32,
    after: &mut After,
) -> bool {
    let (popped, more) = {
        let mut inner = qp.inner.lock();
        // A RESET meanwhile discarded it, without a completion.
        let popped = if head.is_queued(&inner) {
            inner.retries = Retries::default();
            inner.sq.pop()
        } else {
            None
        };
        (popped, !inner.sq.is_empty())
    };
    let Some(wqe) = popped else {
        return more;
    };
    if !(wqe.signaled || qp.sq_sig_all || status != WcStatus::Success) {
        return more;
    }
    let wc = Wc {
        wr_id: wqe.wr_id,
        qp: qp.id(),
        status,
        opcode: if status == WcStatus::Success {
            wqe.send_opcode()
        } else {
            WcOpcode::Send
        },
        byte_len: len,
        ..Wc::EMPTY
    };
    // An error leaves the QP to flush.
    complete::complete(net, qp, qp.send_cq(), wc, false, after) || more
}

/// The head WQE of `qp` was refused more often than its retries allow: it
/// completes in error with `status`.
pub(crate) fn retries_exceeded(
    net: &Net,
    qp: &QpUse,
    head: &Head,
    status: WcStatus,
    after: &mut After,
) -> bool {
    finish_send(net, qp, head, status, 0, after)
}

/// UD: delivers the datagram `head` if it reaches a ready receive, and
/// completes the send as sent whatever became of it.
fn send_datagram(net: &Net, qp: &QpUse, head: &Head, after: &mut After) -> bool {
    let len = match head.data.check(net.mrs(), qp.pd, Access::LOCAL_READ) {
        Err(BadSge) => return finish_send(net, qp, head, WcStatus::LocalProtection, 0, after),
        // A datagram is at most the port's MTU.
        Ok(len) if len > u64::from(net.mtu()) => {
            return finish_send(net, qp, head, WcStatus::LocalLength, 0, after)
        }
        Ok(len) => len as u32,
    };
    let Some(d) = head.wqe.datagram else {
        return finish_send(net, qp, head, WcStatus::LocalProtection, 0, after);
    };
    if let Some(dest) = net.peer(&d.address, Qpn::of(d.remote_qpn)) {
        deliver(net, qp, &dest, head, &d, len, after);
    }
    finish_send(net, qp, head, WcStatus::Success, 0, after)
}

/// Delivers a datagram into the oldest receive of `dest`, all under its
/// lock; whatever does not reach a ready receive is dropped without a word.
fn deliver(
    net: &Net,
    qp: &QpShared,
    dest: &QpUse,
    head: &Head,
    d: &Datagram,
    len: u32,
    after: &mut After,
) {
    let qkey = if d.remote_qkey & QKEY_FROM_QP != 0 {
        head.attr.qkey
    } else {
        d.remote_qkey
    };
    let rpd = receive_pd(dest);
    let mut dl = dest.inner.lock();
    if !dest.qp_type.is_datagram()
        || !matches!(dl.state, QpState::Rtr | QpState::Rts)
        || dl.attr.qkey != qkey
    {
        return;
    }
    let (recv, checked) = receive_at(dest, &mut dl, |front| match front {
        None => (false, WcStatus::Success),
        Some(rsges) => match check_sges(net.mrs(), rpd, Access::LOCAL_WRITE, rsges) {
            Err(BadSge) => (true, WcStatus::LocalProtection),
            Ok(room) if room < u64::from(len + GRH_LEN) => (true, WcStatus::LocalLength),
            Ok(_) => (true, WcStatus::Success),
        },
    });
    let Some(recv) = recv else {
        return;
    };
    let status = if checked == WcStatus::Success {
        // At most an MTU: no chunking, no sleeping under the lock.
        let pace = Pace {
            may_sleep: false,
            stop: &|| false,
        };
        let rsges = recv.sges.as_slice();
        let moved = match (&d.address.grh, net.link) {
            (Some(route), Link::Ib { gid, .. }) => write_sges(
                net.mrs(),
                rsges,
                0,
                &grh::header(RecvGrh::Ib, gid, route, len),
            ),
            (Some(route), Link::Roce) => {
                let h = grh::header(grh::roce_kind(route), route.sgid, route, len);
                write_sges(net.mrs(), rsges, 0, &h)
            }
            (None, _) => Ok(()),
        }
        .and_then(|()| head.data.copy_to(net.mrs(), rsges, GRH_LEN, &pace));
        net.counters.executed(&head.wqe, len);
        status_of(moved)
    } else {
        checked
    };
    let wc = recv_wc(net, qp, dest, &recv, head, status, len);
    if complete::push(net, dest.recv_cq(), wc, head.wqe.solicited, after) {
        dest.enter_error(&mut dl);
        drop(dl);
        if let Some(dest) = dest.arc().enter() {
            after.kick(dest);
        }
    }
}
