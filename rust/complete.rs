// SPDX-License-Identifier: GPL-2.0

//! Completing work requests: pushing a CQE, the rule that puts a QP in the
//! error state, and what a step leaves to do once it holds no lock.

use crate::{
    counters::Counter,
    cq::{CqEvent, Outcome, RsoftCq},
    ib::{CqRef, QpState, Wc, WcStatus},
    net::Net,
    qp::QpUse,
    retry::Refusal,
};

/// Distinct events one step can raise: it completes on the CQs of at most
/// two QPs (a requester and a responder, or a QP it flushes), two each, and
/// a CQ raises at most one event of each kind per arming. A consumer that
/// re-arms a CQ during the step only raises the same event again, which is
/// merged into the first (a handler learns that there are new completions,
/// not how many). So however many WQEs a step retires, no event is left
/// out.
const EVENTS: usize = 8;

/// What a step leaves to do once it holds no lock: events to deliver, and
/// another QP to run (a peer it moved to the error state, or one whose
/// flush waited for the receive it completed).
#[derive(Default)]
pub(crate) struct After {
    /// The first `raised` are taken; a step mostly raises none, and
    /// looks at none then.
    events: [Option<CqEvent>; EVENTS],
    raised: usize,
    kick: Option<QpUse>,
    /// The responder did not take the request: it is to be retried.
    pub(crate) refusal: Option<Refusal>,
    /// The responder dropped the request without a word (not for the QP,
    /// its state or its Q_Key, out of sequence, or of a message lost):
    /// one that came off a wire is counted as a drop.
    pub(crate) dropped: bool,
}

impl After {
    /// Keeps `event` for delivery, or merges it into the same one kept
    /// already (dropping it releases its CQ's destroy).
    fn add(&mut self, event: Option<CqEvent>) {
        let Some(event) = event else {
            return;
        };
        let mut raised = self.events.iter().take(self.raised).flatten();
        if raised.any(|e| e.same_as(&event)) {
            return;
        }
        if let Some(slot) = self.events.get_mut(self.raised) {
            *slot = Some(event);
            self.raised += 1;
        }
    }

    /// Asks for `qp` to be run after the step.
    pub(crate) fn kick(&mut self, qp: QpUse) {
        self.kick = Some(qp);
    }

    /// Delivers the events and returns the QP to run next, if any,
    /// leaving `self` as new: one `After` serves every step of a run,
    /// rather than an array zeroed and moved for each.
    pub(crate) fn finish(&mut self) -> Option<QpUse> {
        for slot in self.events.iter_mut().take(self.raised) {
            if let Some(event) = slot.take() {
                event.deliver();
            }
        }
        self.raised = 0;
        self.refusal = None;
        self.dropped = false;
        self.kick.take()
    }
}

/// Pushes `wc` to `cq` and counts it. Returns whether its QP must enter
/// the error state: the completion is in error, or its CQ could not take
/// it. This is the one place that rule lives.
pub(crate) fn push(
    net: &Net,
    cq: &CqRef<RsoftCq>,
    wc: Wc,
    solicited: bool,
    after: &mut After,
) -> bool {
    let error = wc.status != WcStatus::Success;
    push_going_on(net, cq, wc, solicited, after) || error
}

/// Pushes `wc` to `cq` and counts it, as [`push`] does, but returns only
/// whether the CQ could not take it: a QP whose completion in error is
/// pushed so goes on. The exceptions to [`push`]'s rule: IBA's class E
/// error (an SRQ's receive that a UC message which lost a packet, or did
/// not fit, took), and a UD receive too short for its datagram.
pub(crate) fn push_going_on(
    net: &Net,
    cq: &CqRef<RsoftCq>,
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
        event.as_ref().is_some_and(CqEvent::is_completion).into(),
    );
    after.add(event);
    overran
}

/// Pushes `wc` to `cq`, a CQ of `qp`, and puts `qp` in the error state if
/// [`push`] says so: every later WR of the QP flushes. Returns whether `qp`
/// entered the error state now.
pub(crate) fn complete(
    net: &Net,
    qp: &QpUse,
    cq: &CqRef<RsoftCq>,
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
