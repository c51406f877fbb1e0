// SPDX-License-Identifier: GPL-2.0

//! Retrying the front send WQE of an RC QP. A responder that has no receive
//! answers with an RNR NAK, and the requester tries again after the
//! responder's RNR timer, `rnr_retry` times. A responder that does not
//! answer at all (none holds the destination, or it is not connected to
//! this QP, or not ready) leaves the requester's local ACK timeout to run
//! out, and it tries again `retry_cnt` times. Nobody sleeps meanwhile: the
//! QP's retry timer has its worker try again.
//!
//! A wire can lose the answer that would have sent the requester back (a
//! sequence-error NAK), or the last packets of a message, after which the
//! responder has nothing to answer. So the wait for the answer to a SEND
//! or WRITE sends again once, unasked and uncounted, at an eighth of the
//! local ACK timeout (a probe, as hardware's adaptive retransmission sends
//! before the timeout set): the rest of the wait and the retries are as
//! before. The probe is for a silence after the last request that left,
//! not after the first: a requester still sending its window (a slow CPU
//! takes milliseconds a packet) waits on. The responder takes what comes
//! twice as it takes any duplicate.
//! No probe goes while a READ or atomic is in flight: its answer may pause
//! that long while the responder's worker sends it, and a READ asked for
//! again is read again whole.

use crate::ib::WcStatus;

/// Why the responder did not take the head request.
#[derive(Clone, Copy)]
pub(crate) enum Refusal {
    /// No receive: an RNR NAK with the responder's RNR timer, in the IB
    /// encoding (`min_rnr_timer`).
    Rnr(u8),
    /// No answer.
    Silence,
}

/// What the retries of the head WQE have spent, kept in the QP until the
/// WQE completes or is discarded.
#[derive(Clone, Copy, Default)]
pub(crate) struct Retries {
    rnr_naks: u8,
    timeouts: u8,
    /// The QP's retry timer runs for this refusal...
    armed: Option<Refusal>,
    /// ... and went off.
    expired: bool,
    /// The head was tried and refused: it is in flight, whatever comes.
    tried: bool,
    /// The armed wait for an answer is the probe's...
    probing: bool,
    /// ... and so the probe is spent, until an answer comes.
    probed: bool,
    /// A request left during the probe's wait.
    left: bool,
}

/// What to do about a refusal.
pub(crate) enum Plan {
    /// The retries are spent: complete the head WQE with this status.
    Fail(WcStatus),
    /// Arm the retry timer for this many microseconds; it runs the QP
    /// again.
    Wait(u64),
    /// Nothing: the retry timer runs the QP again, or, with a local ACK
    /// timeout of 0 (infinite), the next kick does.
    Idle,
}

/// The QP attributes that bound the retries of one WQE.
pub(crate) struct Budget {
    pub(crate) rnr_retry: u8,
    pub(crate) retry_cnt: u8,
    /// The local ACK timeout, IB encoding: 4.096 us << `timeout`.
    pub(crate) timeout: u8,
}

impl Retries {
    /// Decides what `refusal` of the head WQE comes to. A try that a kick
    /// (a post, say) made while the timer runs spends no retry: only a
    /// wait served to its end counts, and the probe's is not one. A wait
    /// for an answer probes if `reads` (READs and atomics in flight) is 0
    /// and `retry_cnt` allows a try more than the first.
    pub(crate) fn plan(&mut self, budget: &Budget, refusal: Refusal, reads: usize) -> Plan {
        self.tried = true;
        let mut probed = false;
        if let Some(armed) = self.armed {
            if !self.expired {
                return Plan::Idle;
            }
            probed = core::mem::take(&mut self.probing);
            match armed {
                Refusal::Rnr(_) => self.rnr_naks = self.rnr_naks.saturating_add(1),
                // The probe's wait is part of the timeout's.
                Refusal::Silence if probed => {}
                Refusal::Silence => self.timeouts = self.timeouts.saturating_add(1),
            }
            self.armed = None;
            self.expired = false;
        }
        let us = match refusal {
            // rnr_retry 7 never runs out: the request is tried again
            // after every RNR timer, as a requester re-reads its buffers
            // (a key deregistered meanwhile fails it), and at once when a
            // receive is posted.
            Refusal::Rnr(_) if budget.rnr_retry != 7 && self.rnr_naks >= budget.rnr_retry => {
                return Plan::Fail(WcStatus::RnrRetryExceeded);
            }
            Refusal::Rnr(timer) => RNR_TIMER_US[usize::from(timer & 31)].into(),
            Refusal::Silence if budget.timeout == 0 => return Plan::Idle,
            Refusal::Silence if self.timeouts > budget.retry_cnt => {
                return Plan::Fail(WcStatus::RetryExceeded);
            }
            Refusal::Silence => {
                let timeout = ack_timeout_us(budget.timeout);
                let may_probe = reads == 0 && budget.retry_cnt > 0;
                match probe_us(timeout).filter(|_| may_probe) {
                    // What the probe left of the wait.
                    Some(probe) if probed => timeout - probe,
                    Some(probe) if !self.probed => {
                        self.probed = true;
                        self.probing = true;
                        self.left = false;
                        probe
                    }
                    _ => timeout,
                }
            }
        };
        self.armed = Some(refusal);
        Plan::Wait(us)
    }

    /// An answer came while the timer ran: that wait is over, and counts
    /// for nothing.
    pub(crate) fn answered(&mut self) {
        self.armed = None;
        self.expired = false;
        self.probing = false;
        self.probed = false;
    }

    /// A sequence-error NAK, or a READ response past data that did not
    /// come: the request is due at once, from the first PSN not answered,
    /// as if the local ACK timeout had run out (and it stays due until it
    /// is sent, should the runner hand it to the QP's worker). It spends a
    /// retry as a timeout does, unless the responder made progress
    /// meanwhile ([`Retries::progressed`]).
    pub(crate) fn resend_now(&mut self) {
        self.armed = Some(Refusal::Silence);
        self.expired = true;
        // The responder answers: the wait after the resend probes again.
        self.probing = false;
        self.probed = false;
    }

    /// Whether the requester waits out an RNR timer: nothing leaves
    /// before it has run.
    pub(crate) fn holds(&self) -> bool {
        matches!(self.armed, Some(Refusal::Rnr(_))) && !self.expired
    }

    /// The responder answered part of what is in flight: the local ACK
    /// timeouts spent so far are forgiven, as a request sent again goes
    /// on from the first PSN not answered.
    pub(crate) fn progressed(&mut self) {
        self.timeouts = 0;
    }

    /// Whether the head was tried and refused: a draining send queue
    /// (SQD) still has it to finish.
    pub(crate) fn tried(&self) -> bool {
        self.tried
    }

    /// A request is about to leave: a probe due waits for the silence
    /// after it.
    pub(crate) fn leaving(&mut self) {
        self.left = true;
    }

    /// Whether a wait was served to its end: the head request is to be
    /// tried again.
    pub(crate) fn due(&self) -> bool {
        self.armed.is_some() && self.expired
    }

    /// Whether the wait for an answer runs, and has not run out: an answer
    /// in several packets restarts it with each.
    pub(crate) fn awaits_answer(&self) -> bool {
        matches!(self.armed, Some(Refusal::Silence)) && !self.expired
    }

    /// How long the wait for an answer runs, started again now: until the
    /// probe while it is due, else the whole local ACK timeout (the IB
    /// encoding `timeout`, not 0).
    pub(crate) fn answer_wait_us(&self, timeout: u8) -> u64 {
        let timeout = ack_timeout_us(timeout);
        match probe_us(timeout) {
            Some(probe) if self.probing => probe,
            _ => timeout,
        }
    }

    /// The retry timer went off: says what that comes to. `timeout`: the
    /// QP's local ACK timeout (IB encoding).
    pub(crate) fn expire(&mut self, timeout: u8) -> Expiry {
        let Some(armed) = self.armed else {
            return Expiry::Stale;
        };
        // A request that left meanwhile has the probe wait once more, not
        // until its own packet's silence: moving the timer with every
        // request would cost a timer update a request.
        if self.probing && !self.expired && core::mem::take(&mut self.left) {
            return Expiry::Again(self.answer_wait_us(timeout));
        }
        // A NAK may have ended the wait before the timer did; a probe is
        // not the timeout.
        let ack_timeout = matches!(armed, Refusal::Silence) && !self.expired && !self.probing;
        self.expired = true;
        Expiry::Due { ack_timeout }
    }
}

/// What the retry timer going off comes to.
pub(crate) enum Expiry {
    /// No wait was armed: a completion or a RESET ended it.
    Stale,
    /// The wait goes on: the timer is to be armed again for this many
    /// microseconds.
    Again(u64),
    /// The wait was served: the QP is to be run again. `ack_timeout`: it
    /// was the wait for an answer, which never came: the local ACK timeout
    /// ran out.
    Due { ack_timeout: bool },
}

/// The local ACK timeout of the IB encoding (`timeout`, not 0), in
/// microseconds: 4.096 us << `timeout`.
fn ack_timeout_us(timeout: u8) -> u64 {
    (4096u64 << (timeout & 31)) / 1000
}

/// When the wait for an answer of `timeout_us` probes: an eighth in, if
/// that is a millisecond or more (shorter waits are shorter than a timer
/// tick may be).
fn probe_us(timeout_us: u64) -> Option<u64> {
    let probe = timeout_us / 8;
    (probe >= 1000).then_some(probe)
}

/// The RNR timer of the IB encoding (`min_rnr_timer`), in microseconds.
const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];
