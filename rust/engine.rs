// SPDX-License-Identifier: GPL-2.0

//! Running a QP: whoever finds new work on a QP (a post, a modify, a peer's
//! receive) kicks it; one runner at a time executes its send queue in
//! order, or flushes it in the error state, with no device-wide lock.
//! Completions are the last thing a step does, and their events are
//! delivered once the step holds no lock.

use crate::{
    complete::{self, After},
    copy::Pace,
    counters::Counter,
    ib::{QpState, Wc, WcOpcode, WcStatus},
    net::{Link, Net},
    qp::{Ctx, QpShared, QpUse, Qpn, Runner},
    retry::Plan,
    scratch::Scratch,
    srq::SrqShared,
    transport, wire,
};
use core::{any::Any, sync::atomic::Ordering};
use kernel::sync::Arc;

/// WQEs a step of a QP in the error state flushes: enough to retire a
/// queue in few steps, few enough to let other QPs run between them.
const FLUSH_BATCH: usize = 16;

/// Requests that move more bytes than this are executed by the QP's worker
/// rather than by the poster: a kernel poster may be in atomic context, and
/// a process goes on posting while another CPU copies.
const INLINE_MAX: u64 = 16 * 1024;

/// What a step found.
enum Next {
    /// It did something; there may be more.
    More,
    /// Nothing to do until something changes.
    Idle,
    /// The head request is for the worker.
    Defer,
}

/// A QP is run on its device's net, by its worker or by whoever found work
/// for it on another device.
impl Runner for Net {
    fn run(&self, qp: &QpUse, ctx: Ctx) {
        kick(self, qp, ctx);
    }

    fn send_answers(&self, qp: &QpUse) -> bool {
        wire::send_answers(self, qp)
    }

    fn port(&self) -> &dyn Any {
        self
    }

    fn ack_timed_out(&self) {
        self.counters.add(Counter::LocalAckTimeouts, 1);
    }
}

/// Runs `qp` until it has nothing more to do, unless someone else runs it:
/// that runner then sees the new work.
pub(crate) fn kick(net: &Net, qp: &QpUse, ctx: Ctx) {
    qp.pending.store(true, Ordering::SeqCst);
    loop {
        let Some(mut scratch) = qp.run.try_claim() else {
            return;
        };
        let mut defer = false;
        let mut after = After::default();
        while !defer && qp.pending.swap(false, Ordering::SeqCst) {
            loop {
                let next = step(net, qp, ctx, &mut scratch, &mut after);
                if let Some(other) = after.finish() {
                    other.run(ctx);
                }
                match next {
                    Next::More => {}
                    Next::Idle => break,
                    Next::Defer => {
                        defer = true;
                        break;
                    }
                }
            }
        }
        drop(scratch);
        if defer {
            qp.defer();
            return;
        }
        // Work that came after the last look but before the release.
        if !qp.pending.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// Runs `qp`, then its connected peer: a new state or receive of one may
/// unblock the other (a sender waiting on RNR) or leave it without an
/// answer.
pub(crate) fn progress(net: &Net, qp: &QpUse, ctx: Ctx) {
    kick(net, qp, ctx);
    kick_peer(net, qp, ctx);
}

/// Runs the QP that `qp` is connected to, if any and not `qp` itself.
pub(crate) fn kick_peer(net: &Net, qp: &QpShared, ctx: Ctx) {
    if let Some(peer) = net.peer_of(qp) {
        if !core::ptr::eq(&*peer, qp) {
            peer.run(ctx);
        }
    }
}

/// Runs every QP that sends to a QP taking its receives from `srq`, which
/// is on `net`: one of them found the SRQ empty and waits for a post. On
/// RoCE that sender may be on any port of the host.
pub(crate) fn resume_senders_of(net: &Net, srq: &Arc<SrqShared>, ctx: Ctx) {
    match net.link {
        Link::Ib { .. } => resume_senders_on(net, srq, ctx),
        Link::Roce => net
            .fabric
            .for_each_port(|port| resume_senders_on(port, srq, ctx)),
    }
}

/// Runs the QPs of `net` that send to a QP taking its receives from `srq`.
/// Each destination is looked up with no lock of `net` held, as any
/// request's is.
fn resume_senders_on(net: &Net, srq: &Arc<SrqShared>, ctx: Ctx) {
    let mut from = Qpn::from_slot(0);
    while let Some(qp) = net.next_sending(from) {
        from = Qpn::from_slot(qp.qpn.slot() + 1);
        let to_srq = net
            .peer_of(&qp)
            .is_some_and(|d| d.srq.as_ref().is_some_and(|s| Arc::ptr_eq(s, srq)));
        if to_srq {
            kick(net, &qp, ctx);
        }
    }
}

/// Moves `qp` one step: one send WQE executed or one WQE flushed.
fn step(net: &Net, qp: &QpUse, ctx: Ctx, scratch: &mut Scratch, after: &mut After) -> Next {
    let more = |did: bool| if did { Next::More } else { Next::Idle };
    if qp.is_closing() {
        return Next::Idle;
    }
    let Scratch { send, inline, recv } = scratch;
    let routes = net.fabric.routes();
    let head = {
        let mut inner = qp.inner.lock();
        match inner.state {
            QpState::Error => {
                drop(inner);
                return more(flush(net, qp, after));
            }
            QpState::Rts | QpState::Sqd => {
                match transport::Head::of(&mut inner, qp.pd, routes, send, inline) {
                    Some(head) => head,
                    None => {
                        let drained = inner.take_drained();
                        drop(inner);
                        if drained {
                            qp.sq_drained();
                        }
                        return Next::Idle;
                    }
                }
            }
            _ => return Next::Idle,
        }
    };
    if !ctx.worker && head.sends() && head.bytes() > INLINE_MAX {
        return Next::Defer;
    }
    let stop = || qp.is_closing();
    // The wire asks between packets, with no lock of the QP held.
    let refused = || qp.inner.lock().window.refused();
    let pace = Pace {
        may_sleep: ctx.may_sleep,
        stop: &stop,
        refused: &refused,
    };
    let did = transport::send(net, &wire::Local, qp, &head, recv, &pace, after);
    let Some(refusal) = after.refusal.take() else {
        return more(did);
    };
    // Checked under the same lock: a RESET since the try discarded it.
    let plan = {
        let mut inner = qp.inner.lock();
        if !head.is_queued(&inner) {
            return Next::More;
        }
        // A probe sends the whole window again: none while it holds a
        // READ or an atomic (the head, if it left, is in it by now).
        let reads = inner.window.reads();
        let plan = inner.retries.plan(head.budget(), refusal, reads);
        // Armed under the lock, as the completer arms it: an answer that
        // comes meanwhile then ends this wait, or starts its own after it.
        if let Plan::Wait(us) = plan {
            qp.arm_retry(us);
        }
        plan
    };
    // A request that left goes on to the next, while the front's answer
    // is awaited.
    match plan {
        Plan::Fail(status) => more(transport::retries_exceeded(net, qp, &head, status, after)),
        Plan::Wait(_) | Plan::Idle => more(did),
    }
}

/// Flushes up to [`FLUSH_BATCH`] WQEs of an errored QP; returns whether it
/// flushed any.
fn flush(net: &Net, qp: &QpUse, after: &mut After) -> bool {
    let mut any = false;
    for _ in 0..FLUSH_BATCH {
        if !flush_one(net, qp, after) {
            break;
        }
        any = true;
    }
    any
}

/// Completes one outstanding WQE of an errored QP with WR_FLUSH_ERR, sends
/// first. Receives a sender has taken are completed by that sender first.
fn flush_one(net: &Net, qp: &QpUse, after: &mut After) -> bool {
    let (wr_id, from) = {
        let mut inner = qp.inner.lock();
        if let Some(wqe) = inner.sq.pop() {
            (wqe.wr_id, Flushed::Send)
        } else if let Some(recv) = inner.take_held_receive() {
            // The receive of a message whose last packet never came.
            (recv.wqe.wr_id, Flushed::Held)
        } else if qp.srq.is_none() && inner.rq_busy == 0 {
            // The receives of an SRQ belong to the SRQ, not to this QP.
            match inner.take_receive() {
                Some(wqe) => (wqe.wr_id, Flushed::Recv),
                None => return false,
            }
        } else {
            return false;
        }
    };
    let (cq, opcode) = match from {
        Flushed::Send => (qp.send_cq(), WcOpcode::Send),
        Flushed::Recv | Flushed::Held => (qp.recv_cq(), WcOpcode::Recv),
    };
    let wc = Wc {
        wr_id,
        qp: qp.id(),
        status: WcStatus::WrFlush,
        opcode,
        ..Wc::EMPTY
    };
    complete::complete(net, qp, cq, wc, false, after);
    if from == Flushed::Held {
        qp.receive_done(&mut qp.inner.lock());
    }
    true
}

/// The queue a WQE [`flush_one`] completes was on.
#[derive(PartialEq, Eq)]
enum Flushed {
    Send,
    Recv,
    /// A message of several packets held it (see
    /// [`QpInner::take_held_receive`](crate::qp::QpInner::take_held_receive)).
    Held,
}
