// SPDX-License-Identifier: GPL-2.0

//! The completer: retires the head send WQE from its responder's answer
//! (or from the silence that stands for one), puts a READ's data or an
//! atomic's result into its local buffers, and decides what a refusal
//! comes to.

use super::{
    head::Head,
    packet::{Nak, Packets, Response},
    rules,
};
use crate::{
    complete::{self, After},
    copy::{copy_sges, write_sges, Pace},
    counters::Counter,
    flight::{Answer, Event, Leg, Outcome, Sent},
    ib::{Access, Gid, SendOp, Wc, WcOpcode, WcStatus},
    mr::Grant,
    net::Net,
    psn::Psn,
    qp::{QpInner, QpUse},
    retry::{Refusal, Retries},
    wq::{Sges, Wqe},
};
use kernel::error::code;

/// Retires the head WQE of `qp` (copied as `head`, `len` bytes) from
/// `response`, its responder's answer; `None` when none came. Returns
/// whether there may be more to do.
pub(crate) fn answer(
    net: &Net,
    qp: &QpUse,
    head: &Head<'_>,
    len: u32,
    response: Option<Response>,
    pace: &Pace<'_>,
    after: &mut After,
) -> bool {
    let len = match response {
        Some(_) => len,
        // What was not answered is not said to have moved anything.
        None => 0,
    };
    let status = match response {
        // RC expects an answer: it tries again until its retries run out.
        // UC and UD expect none and never know.
        None if rules::acknowledged(qp.qp_type) => return refused(Refusal::Silence, after),
        None | Some(Response::Ack) => WcStatus::Success,
        Some(Response::Read(src)) => local(
            head.sges()
                .ok_or(code::EINVAL)
                .and_then(|dst| copy_sges(net.mrs(), dst, 0, src.sges(), pace)),
        ),
        Some(Response::Atomic(old)) => local(
            head.sges()
                .ok_or(code::EINVAL)
                .and_then(|dst| write_sges(net.mrs(), dst, 0, &old.to_ne_bytes())),
        ),
        Some(Response::Fault) => WcStatus::LocalProtection,
        Some(Response::Nak(nak)) => match nak {
            Nak::Rnr(timer) => return refused(Refusal::Rnr(timer), after),
            // Go back to the PSN the responder expects: with one request
            // outstanding that is the head's, so it is tried again like an
            // unanswered one.
            Nak::Sequence { .. } => return refused(Refusal::Silence, after),
            Nak::InvalidRequest => WcStatus::RemoteInvalidRequest,
            Nak::RemoteAccess => WcStatus::RemoteAccess,
            Nak::RemoteOperation => WcStatus::RemoteOperation,
        },
    };
    let len = if status == WcStatus::Success { len } else { 0 };
    finish(net, qp, head, status, len, after)
}

/// The send WQE of `qp` copied as `head`, a READ or atomic if `returns`,
/// is about to leave on a wire whose answers come later, its packets
/// taking `psns` PSNs: `None` if the window has no room for it yet, or it
/// is fenced behind a READ or atomic in flight. It is noted in the window
/// before the first packet leaves: an answer can come back before the
/// sending returns (from another namespace of this host, in the softirq
/// that the sending runs). Unless [`Launched::left`] says the packets
/// left, nothing answers those PSNs and the note goes with the guard.
pub(super) fn launch<'a>(
    qp: &'a QpUse,
    head: &'a Head<'a>,
    packets: Packets,
    returns: bool,
) -> Option<Launched<'a>> {
    let mut inner = qp.inner.lock();
    let inner = &mut *inner;
    if !head.is_queued(inner) {
        return Some(Launched {
            qp,
            head,
            new: false,
            until: packets.sent,
        });
    }
    let window = &mut inner.window;
    let max_rd_atomic = inner.attr.max_rd_atomic;
    let psns = packets.psns;
    if !window.has_room(head.index, psns, returns, head.wqe.fence, max_rd_atomic) {
        return None;
    }
    let until = window.send_to(head.index, packets.sent);
    let last = head.psn.add(psns.saturating_sub(1));
    let sent = Sent {
        first: head.psn,
        last,
        out: if until < packets.sent {
            head.psn.add(until)
        } else {
            last.next()
        },
        returns,
    };
    let new = window.leave(head.index, sent);
    inner.req_psn = last.next();
    inner.retries.leaving();
    Some(Launched {
        qp,
        head,
        new,
        until,
    })
}

/// The window entry [`launch`] noted for a request about to leave.
pub(super) struct Launched<'a> {
    qp: &'a QpUse,
    head: &'a Head<'a>,
    /// The entry is new.
    new: bool,
    /// The packets up to this one (from the request's first) may leave.
    pub(super) until: u32,
}

impl Launched<'_> {
    /// The request left as packets: its entry stands.
    pub(super) fn left(self) {
        core::mem::forget(self);
    }
}

impl Drop for Launched<'_> {
    fn drop(&mut self) {
        let mut inner = self.qp.inner.lock();
        if self.head.is_queued(&inner) {
            inner.window.stay(self.head.index, self.new);
            inner.req_psn = self.head.psn;
        }
    }
}

/// The send WQE of `qp` copied as `head` (`len` bytes) left on a wire
/// whose answers come later, as `packets` packets. An RC requester goes
/// on to the next while the front one waits for its answer (or its local
/// ACK timeout); UC's and UD's have nothing to wait for, and the WQE is
/// complete.
pub(super) fn sent(
    net: &Net,
    qp: &QpUse,
    head: &Head<'_>,
    len: u32,
    packets: u32,
    after: &mut After,
) -> bool {
    if matches!(head.leg, Leg::Due) {
        net.counters.add(Counter::WireResentPackets, packets.into());
    }
    if !rules::acknowledged(qp.qp_type) {
        return finish(net, qp, head, WcStatus::Success, len, after);
    }
    if head.is_front() {
        // The wait for the front's answer starts (or, sent again, goes
        // on with one retry spent, unless a probe sent it).
        refused(Refusal::Silence, after);
    }
    true
}

/// The packets of `head`, a request of `qp`, stopped short for an answer
/// that refused one before them. Should an answer since have cleared that
/// (a reordered packet that closed the gap, say), nothing would send the
/// rest but a timeout: the window is sent again.
pub(super) fn cut_short(qp: &QpUse, head: &Head<'_>) {
    let mut inner = qp.inner.lock();
    if head.is_queued(&inner) {
        inner.window.stopped();
    }
}

/// The requester waits for the answers to what is in flight (or for an
/// RNR timer): the wait runs, or starts.
pub(super) fn waiting(after: &mut After) -> bool {
    refused(Refusal::Silence, after)
}

/// Notes `answer`, from `from`, for `qp`, an RC QP, whose completer acts
/// on it when it next runs: returns whether the QP is to be run. An
/// answer from anywhere but the QP's destination is not its, and one
/// older than what the answers already said (a late duplicate, say) says
/// nothing.
pub(crate) fn answered(qp: &QpUse, from: &Gid, answer: Answer) -> bool {
    let mut inner = qp.inner.lock();
    let inner = &mut *inner;
    if !answers_to(inner, from) {
        return false;
    }
    heard(qp, inner);
    let Outcome::Aeth(syndrome) = answer.outcome else {
        return false;
    };
    let window = &mut inner.window;
    let before = window.expect();
    let acted = match Response::of_aeth(syndrome, answer.psn) {
        None => false,
        Some(Response::Ack) => window.answered_to(answer.psn.next()),
        Some(Response::Nak(Nak::Sequence { expected, .. })) => {
            window.refused_at(expected, Event::Resend)
        }
        Some(_) => window.refused_at(answer.psn, Event::Refused(answer)),
    };
    if inner.window.expect() != before {
        inner.retries.progressed();
    }
    acted
}

/// The destination answered, if only with a packet that is dropped (a
/// late duplicate, or one past a lost one): it is alive and works through
/// what it was asked, so the wait for the rest starts again, as rxe's
/// completer restarts its timer whenever it has taken every packet that
/// came. A responder replays each READ asked for again in full, one after
/// the other; a timeout that ran out while it still sent an earlier
/// replay would only queue yet another, and spend a retry on a responder
/// that is busy, not lost. A progress forgives the retries spent
/// ([`Retries::progressed`]); this does not.
fn heard(qp: &QpUse, inner: &QpInner) {
    if inner.retries.awaits_answer() && inner.attr.timeout != 0 {
        qp.arm_retry(inner.retries.answer_wait_us(inner.attr.timeout));
    }
}

/// Whether an answer from `from` is one for the QP whose lock `inner` is:
/// from its destination, while it sends or drains.
fn answers_to(inner: &QpInner, from: &Gid) -> bool {
    let ours = inner.attr.av.grh.is_some_and(|g| g.dgid == *from);
    ours && rules::takes_answers(inner.state)
}

/// Data an answer brings back.
pub(crate) enum Returned<'a> {
    /// A READ response packet's payload; the last one answers the READ.
    Read { data: &'a [u8], last: bool },
    /// An atomic's original value.
    Atomic(u64),
}

/// Places `data`, of the answer with PSN `psn` from `from`, in the
/// buffers of the send WQE of `qp` (an RC QP of `port`) whose READ or
/// atomic in flight took that PSN, under the QP's lock (each is at most
/// an MTU). One that is next answers every PSN before it. A READ response
/// packet past a missing one is placed too, where its PSN says, and
/// noted, so that the READ need not be asked for again for it: under
/// reordering the missing one is mostly only late. Returns `None` if the
/// data was not taken, else whether the QP is to be run.
pub(crate) fn returned(
    port: &Net,
    qp: &QpUse,
    from: &Gid,
    psn: Psn,
    data: Returned<'_>,
) -> Option<bool> {
    let mut guard = qp.inner.lock();
    let inner = &mut *guard;
    if !answers_to(inner, from) {
        return None;
    }
    heard(qp, inner);
    let mtu = inner.attr.path_mtu.map_or(port.mtu(), |m| m.bytes());
    let (index, sent) = inner.window.holding(psn).filter(|(_, s)| s.returns)?;
    let before = inner.window.expect();
    let skipped = inner.window.answered_to(psn);
    let next = inner.window.expect() == psn;
    let ahead = !next && matches!(data, Returned::Read { .. }) && inner.window.may_note(psn);
    if !next && !ahead {
        return skipped.then_some(true);
    }
    let (wqe, sges) = inner.sq.get(index)?;
    let sges = Sges::new(sges, Grant::new(qp.pd, Access::LOCAL_WRITE));
    let (placed, last) = match (data, wqe.op) {
        // A last packet before the READ's own ends a part of it asked
        // for again.
        (Returned::Read { data, last }, SendOp::RdmaRead(_)) if last || psn != sent.last => {
            let skip = psn.since(sent.first).saturating_mul(mtu);
            (write_sges(port.mrs(), sges, skip, data), last)
        }
        (Returned::Atomic(old), SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. })
            if psn == sent.first =>
        {
            (write_sges(port.mrs(), sges, 0, &old.to_ne_bytes()), true)
        }
        _ => return None,
    };
    if ahead {
        // A fault is left to the packet's turn: it is asked for again.
        if placed.is_ok() {
            inner.window.note(psn);
        }
        return Some(skipped);
    }
    if placed.is_err() {
        let fault = Answer {
            psn,
            outcome: Outcome::Fault,
        };
        return Some(inner.window.refused_at(psn, Event::Refused(fault)));
    }
    let resend = inner.window.placed();
    inner.retries.progressed();
    // The QP is run for a WQE to retire (this one, those before it, or
    // one whose later packets came first), or to send again.
    Some(last || before != psn || resend || inner.window.expect() != psn.next())
}

/// The status of the requester's completion after it put a response's
/// data into its buffers (an MR deregistered meanwhile fails it).
fn local(moved: kernel::error::Result) -> WcStatus {
    match moved {
        Ok(()) => WcStatus::Success,
        Err(_) => WcStatus::LocalProtection,
    }
}

/// The responder did not take the head request: it is to be retried.
fn refused(refusal: Refusal, after: &mut After) -> bool {
    after.refusal = Some(refusal);
    false
}

/// Takes the head send WQE (`head`) off the queue and completes it with
/// `status` if it is signaled or failed. Returns whether there may be more
/// to do (a later post runs the QP again anyway).
pub(crate) fn finish(
    net: &Net,
    qp: &QpUse,
    head: &Head<'_>,
    status: WcStatus,
    len: u32,
    after: &mut After,
) -> bool {
    let (popped, more, drained) = {
        let mut inner = qp.inner.lock();
        // A RESET meanwhile discarded it, without a completion.
        let popped = if head.is_queued(&inner) {
            inner.retries = Retries::default();
            let inner = &mut *inner;
            match inner.window.front() {
                Some(front) if head.psn() == Some(front.first) => {
                    if let Some((sent, false)) = inner.window.retire() {
                        // Nothing after it left since the requester went
                        // back: the next PSN follows it.
                        inner.req_psn = sent.last.next();
                    }
                }
                // A request that went nowhere used a PSN all the same.
                _ if head.psn().is_some() => inner.req_psn = inner.req_psn.next(),
                _ => {}
            }
            // Completed from the head's copy, which is the front's.
            inner.sq.drop_front()
        } else {
            false
        };
        // A QP whose last request failed goes to ERR instead.
        let drained = status == WcStatus::Success && inner.take_drained();
        (popped, !inner.sq.is_empty(), drained)
    };
    // An error leaves the QP to flush.
    let errored = popped && complete_wqe(net, qp, &head.wqe, status, len, after);
    // Once the last completion is on the CQ.
    if drained {
        qp.sq_drained();
    }
    errored || more
}

/// Completes `wqe`, taken off the send queue of `qp`, with `status` if it
/// is signaled or failed. Returns whether `qp` entered the error state.
fn complete_wqe(
    net: &Net,
    qp: &QpUse,
    wqe: &Wqe,
    status: WcStatus,
    len: u32,
    after: &mut After,
) -> bool {
    if !(wqe.signaled || qp.sq_sig_all || status != WcStatus::Success) {
        return false;
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
    complete::complete(net, qp, qp.send_cq(), wc, false, after)
}
