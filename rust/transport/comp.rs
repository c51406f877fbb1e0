// SPDX-License-Identifier: GPL-2.0

//! The completer: retires the head send WQE from its responder's answer
//! (or from the silence that stands for one), puts a READ's data or an
//! atomic's result into its local buffers, and decides what a refusal
//! comes to.

use super::{
    head::Head,
    packet::{Nak, Response},
    rules,
};
use crate::{
    complete::{self, After},
    copy::{copy_sges, write_sges, Pace},
    counters::Counter,
    flight::{Answer, Flight, Leg, Outcome},
    ib::{Gid, QpState, SendOp, Wc, WcOpcode, WcStatus},
    net::Net,
    psn::Psn,
    qp::{QpInner, QpUse},
    retry::{ack_timeout_us, Refusal, Retries},
};

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
        Some(Response::Read(src)) => local(copy_sges(net.mrs(), head.sges(), 0, &[src], pace)),
        Some(Response::Atomic(old)) => {
            local(write_sges(net.mrs(), head.sges(), 0, &old.to_ne_bytes()))
        }
        Some(Response::Fault) => WcStatus::LocalProtection,
        Some(Response::Nak(nak)) => match nak {
            Nak::Rnr(timer) => return refused(Refusal::Rnr(timer), after),
            // Go back to the PSN the responder expects: with one request
            // outstanding that is the head's, so it is tried again like an
            // unanswered one.
            Nak::Sequence(_) => return refused(Refusal::Silence, after),
            Nak::InvalidRequest => WcStatus::RemoteInvalidRequest,
            Nak::RemoteAccess => WcStatus::RemoteAccess,
            Nak::RemoteOperation => WcStatus::RemoteOperation,
        },
    };
    let len = if status == WcStatus::Success { len } else { 0 };
    finish(net, qp, head, status, len, after)
}

/// The head WQE of `qp` (copied as `head`) is about to leave on a wire
/// whose answers come later, its packets taking `psns` PSNs. They are
/// noted before the first leaves: an answer can come back before the
/// sending returns (from another namespace of this host, in the softirq
/// that the sending runs). Unless [`Launched::left`] says the packets
/// left, nothing answers those PSNs and the note goes with the guard.
pub(super) fn launch<'a>(qp: &'a QpUse, head: &'a Head<'a>, psns: u32) -> Launched<'a> {
    let mut inner = qp.inner.lock();
    if head.is_queued(&inner) {
        let epoch = inner.sq_epoch;
        let mut flight = Flight::new(epoch, head.psn, psns);
        // A READ's response packets placed before it was sent again
        // stand: the new response is placed from where they end.
        if let Some(before) = inner
            .flight
            .filter(|f| f.epoch == epoch && f.first == head.psn)
        {
            flight.expect = before.expect;
        }
        inner.flight = Some(flight);
    }
    Launched { qp, head }
}

/// The flight [`launch`] noted for a request about to leave.
pub(super) struct Launched<'a> {
    qp: &'a QpUse,
    head: &'a Head<'a>,
}

impl Launched<'_> {
    /// The request left as packets: its flight stands.
    pub(super) fn left(self) {
        core::mem::forget(self);
    }
}

impl Drop for Launched<'_> {
    fn drop(&mut self) {
        let mut inner = self.qp.inner.lock();
        if self.head.is_queued(&inner) {
            inner.flight = None;
        }
    }
}

/// The head WQE of `qp` (copied as `head`, `len` bytes) left on a wire
/// whose answers come later, as `packets` packets. An RC requester waits
/// for the answer (or its local ACK timeout); UC's and UD's have nothing
/// to wait for, and the WQE is complete.
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
    if rules::acknowledged(qp.qp_type) {
        return refused(Refusal::Silence, after);
    }
    finish(net, qp, head, WcStatus::Success, len, after)
}

/// Notes `answer`, from `from`, for `qp`, an RC QP, whose completer acts
/// on it when it next runs: returns whether the QP is to be run. An
/// answer from anywhere but the QP's destination is not its, and one that
/// its request in flight does not wait for (a late duplicate, say) must
/// not displace one that it does.
pub(crate) fn answered(qp: &QpUse, from: &Gid, answer: Answer) -> bool {
    let mut inner = qp.inner.lock();
    let epoch = inner.sq_epoch;
    let awaited = inner
        .flight
        .is_some_and(|f| f.epoch == epoch && f.takes(&answer));
    if !awaited || !answers_to(&inner, from) {
        return false;
    }
    inner.answer = Some(answer);
    true
}

/// Whether an answer from `from` is one for the QP whose lock `inner` is:
/// from its destination, while it sends.
fn answers_to(inner: &QpInner, from: &Gid) -> bool {
    let ours = inner.attr.av.grh.is_some_and(|g| g.dgid == *from);
    ours && inner.state == QpState::Rts
}

/// Data an answer brings back.
pub(crate) enum Returned<'a> {
    /// A READ response packet's payload; the last one answers the READ.
    Read { data: &'a [u8], last: bool },
    /// An atomic's original value.
    Atomic(u64),
}

/// Places `data`, of the answer with PSN `psn` from `from`, in the
/// buffers of the head WQE of `qp` (an RC QP of `port`) whose READ or
/// atomic is in flight. READ responses are placed in order, under the
/// QP's lock (each is at most an MTU): one that is not next is dropped,
/// and the READ is sent again when its wait runs out. The last of them
/// answers the request. Returns `None` if the data was not taken, else
/// whether the QP is to be run.
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
    let epoch = inner.sq_epoch;
    let mtu = inner.attr.path_mtu.map_or(port.mtu(), |m| m.bytes());
    let flight = inner.flight.as_mut().filter(|f| f.epoch == epoch)?;
    let (wqe, sges) = inner.sq.front()?;
    let (placed, last) = match (data, wqe.op) {
        (Returned::Read { data, last }, SendOp::RdmaRead(_))
            if psn == flight.expect && last == (psn == flight.last) =>
        {
            let skip = psn.since(flight.first).saturating_mul(mtu);
            (write_sges(port.mrs(), sges, skip, data), last)
        }
        (Returned::Atomic(old), SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. })
            if psn == flight.first =>
        {
            (write_sges(port.mrs(), sges, 0, &old.to_ne_bytes()), true)
        }
        _ => return None,
    };
    flight.expect = psn.next();
    let outcome = match placed {
        Err(_) => Outcome::Fault,
        Ok(()) if last => Outcome::Aeth(Response::ACK_SYNDROME),
        Ok(()) => {
            // The responder is answering: the wait for the rest starts
            // again.
            inner.retries.progressed();
            if inner.retries.awaits_answer() && inner.attr.timeout != 0 {
                qp.arm_retry(ack_timeout_us(inner.attr.timeout));
            }
            return Some(false);
        }
    };
    inner.answer = Some(Answer {
        psn: flight.last,
        outcome,
    });
    Some(true)
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
    let (popped, more) = {
        let mut inner = qp.inner.lock();
        // A RESET meanwhile discarded it, without a completion.
        let popped = if head.is_queued(&inner) {
            inner.retries = Retries::default();
            if head.psn().is_some() {
                // A request sent as packets used a PSN each.
                let epoch = inner.sq_epoch;
                let flight = inner.flight.take().filter(|f| f.epoch == epoch);
                inner.req_psn = flight.map_or(inner.req_psn.next(), |f| f.next());
            }
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
