// SPDX-License-Identifier: GPL-2.0

//! Running a QP: whoever finds new work on a QP (a post, a modify, a peer's
//! receive) kicks it; one runner at a time executes its send queue in
//! order, or flushes it in the error state, with no device-wide lock.
//! Completions are the last thing a step does, and their events are
//! delivered once the step holds no lock.

use crate::{
    counters::Counter,
    cq::{CqEvent, Outcome, RsoftCq},
    device::Rsoft,
    ib::{CqRef, QpState, Wc, WcOpcode, WcStatus},
    net::Net,
    qp::QpUse,
    transport,
};
use core::sync::atomic::Ordering;

/// The calling context: whether it may sleep (a system call on a user QP)
/// or not (a kernel consumer, which may post from any context), and
/// whether it is the QP's worker.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    pub(crate) may_sleep: bool,
    worker: bool,
}

impl Ctx {
    /// The QP's worker.
    pub(crate) const WORKER: Self = Self {
        may_sleep: true,
        worker: true,
    };

    /// A verb's caller.
    pub(crate) fn caller(may_sleep: bool) -> Self {
        Self {
            may_sleep,
            worker: false,
        }
    }
}

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

/// What a step leaves to do once it holds no lock: events to deliver, and
/// another QP to run (a peer it moved to the error state, or one whose
/// flush waited for the receive it completed).
#[derive(Default)]
pub(crate) struct After {
    events: [Option<CqEvent>; 2],
    kick: Option<QpUse>,
}

impl After {
    fn add(&mut self, event: Option<CqEvent>) {
        if let Some(slot) = self.events.iter_mut().find(|e| e.is_none()) {
            *slot = event;
        }
    }

    /// Asks for `qp` to be run after the step.
    pub(crate) fn kick(&mut self, qp: QpUse) {
        self.kick = Some(qp);
    }

    fn finish(self, net: &Net, ctx: Ctx) {
        for event in self.events.into_iter().flatten() {
            event.deliver();
        }
        if let Some(qp) = self.kick {
            kick(net, &qp, ctx);
        }
    }
}

/// Runs `qp` until it has nothing more to do, unless someone else runs it:
/// that runner then sees the new work.
pub(crate) fn kick(net: &Net, qp: &QpUse, ctx: Ctx) {
    qp.pending.store(true, Ordering::SeqCst);
    loop {
        if qp.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut defer = false;
        while !defer && qp.pending.swap(false, Ordering::SeqCst) {
            loop {
                let mut after = After::default();
                let next = step(net, qp, ctx, &mut after);
                after.finish(net, ctx);
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
        qp.running.store(false, Ordering::SeqCst);
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

/// Moves `qp` one step: one send WQE executed or one WQE flushed.
fn step(net: &Net, qp: &QpUse, ctx: Ctx, after: &mut After) -> Next {
    let more = |did: bool| if did { Next::More } else { Next::Idle };
    if qp.is_closing() {
        return Next::Idle;
    }
    let head = {
        let inner = qp.inner.lock();
        match inner.state {
            QpState::Error => {
                drop(inner);
                return more(flush_one(net, qp, after));
            }
            QpState::Rts => match transport::Head::of(&inner) {
                Some(head) => head,
                None => return Next::Idle,
            },
            _ => return Next::Idle,
        }
    };
    if !ctx.worker && head.bytes() > INLINE_MAX {
        return Next::Defer;
    }
    more(transport::send(net, qp, &head, ctx, after))
}

/// Completes one outstanding WQE of an errored QP with WR_FLUSH_ERR, sends
/// first. Receives a sender has taken are completed by that sender first.
fn flush_one(net: &Net, qp: &QpUse, after: &mut After) -> bool {
    let (wqe, recv) = {
        let mut inner = qp.inner.lock();
        if let Some(wqe) = inner.sq.pop() {
            (wqe, false)
        } else if qp.srq.is_none() && inner.rq_busy == 0 {
            // The receives of an SRQ belong to the SRQ, not to this QP.
            match inner.rq.pop() {
                Some(wqe) => (wqe, true),
                None => return false,
            }
        } else {
            return false;
        }
    };
    let (cq, opcode) = if recv {
        (qp.recv_cq(), WcOpcode::Recv)
    } else {
        (qp.send_cq(), WcOpcode::Send)
    };
    let wc = Wc {
        wr_id: wqe.wr_id,
        qp: qp.id(),
        status: WcStatus::WrFlush,
        opcode,
        ..Wc::EMPTY
    };
    complete(net, qp, cq, wc, false, after);
    true
}

/// Pushes `wc` to `cq` and counts it. Returns whether its QP must enter
/// the error state: the completion is in error, or its CQ could not take
/// it. This is the one place that rule lives.
pub(crate) fn push(
    net: &Net,
    cq: CqRef<Rsoft>,
    wc: Wc,
    solicited: bool,
    after: &mut After,
) -> bool {
    let error = wc.status != WcStatus::Success;
    let Outcome { event, overran } = RsoftCq::push(cq, wc, solicited || error);
    let c = &net.counters;
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
    after.add(event);
    error || overran
}

/// Pushes `wc` to `cq`, a CQ of `qp`, and puts `qp` in the error state if
/// [`push`] says so: every later WR of the QP flushes. Returns whether `qp`
/// entered the error state now.
pub(crate) fn complete(
    net: &Net,
    qp: &QpUse,
    cq: CqRef<Rsoft>,
    wc: Wc,
    solicited: bool,
    after: &mut After,
) -> bool {
    if !push(net, cq, wc, solicited, after) {
        return false;
    }
    let mut inner = qp.inner.lock();
    let was = inner.state;
    qp.enter_error(&mut inner);
    was != QpState::Error
}
