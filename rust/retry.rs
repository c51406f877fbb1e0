// SPDX-License-Identifier: GPL-2.0

//! Retrying the head send WQE of an RC QP. A responder that has no receive
//! answers with an RNR NAK, and the requester tries again after the
//! responder's RNR timer, `rnr_retry` times. A responder that does not
//! answer at all (none holds the destination, or it is not connected to
//! this QP, or not ready) leaves the requester's local ACK timeout to run
//! out, and it tries again `retry_cnt` times. Only the QP's worker waits.

use crate::ib::{self, WcStatus};

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
    /// What is left of a wait a kick ended early; a try that meets the
    /// same refusal serves the rest of it rather than a new one, so that
    /// unrelated posts do not spend the retries.
    left_us: u64,
}

/// What to do about a refusal.
pub(crate) enum Plan {
    /// The retries are spent: complete the head WQE with this status.
    Fail(WcStatus),
    /// Try again after this many microseconds.
    Wait(u64),
    /// Try again when the QP is kicked: a local ACK timeout of 0 is
    /// infinite.
    Never,
}

/// The QP attributes that bound the retries of one WQE.
pub(crate) struct Budget {
    pub(crate) rnr_retry: u8,
    pub(crate) retry_cnt: u8,
    /// The local ACK timeout, IB encoding: 4.096 us << `timeout`.
    pub(crate) timeout: u8,
}

impl Retries {
    /// Decides what `refusal` of the head WQE comes to.
    pub(crate) fn plan(&self, budget: &Budget, refusal: Refusal) -> Plan {
        match refusal {
            // rnr_retry 7 never runs out: such a sender waits for the
            // receive's post to run it again, and never gets here.
            Refusal::Rnr(_) if self.rnr_naks >= budget.rnr_retry => {
                Plan::Fail(WcStatus::RnrRetryExceeded)
            }
            Refusal::Rnr(timer) => Plan::Wait(RNR_TIMER_US[usize::from(timer & 31)].into()),
            Refusal::Silence if budget.timeout == 0 => Plan::Never,
            Refusal::Silence if self.timeouts > budget.retry_cnt => {
                Plan::Fail(WcStatus::RetryExceeded)
            }
            Refusal::Silence => Plan::Wait((4096u64 << (budget.timeout & 31)) / 1000),
        }
    }

    /// Begins a wait of `us` microseconds, or resumes the one a kick
    /// ended; returns how long it lasts.
    pub(crate) fn begin(&mut self, us: u64) -> u64 {
        if self.left_us == 0 {
            self.left_us = us;
        }
        self.left_us
    }

    /// Ends the wait for `refusal` with `left_us` of it unserved: only a
    /// wait served to its end counts as a retry.
    pub(crate) fn end(&mut self, refusal: Refusal, left_us: u64) {
        self.left_us = left_us;
        if left_us == 0 {
            let count = match refusal {
                Refusal::Rnr(_) => &mut self.rnr_naks,
                Refusal::Silence => &mut self.timeouts,
            };
            *count = count.saturating_add(1);
        }
    }
}

/// Sleeps `us` microseconds, in pieces, until `woken` says to stop;
/// returns what was left.
pub(crate) fn sleep(mut us: u64, woken: impl Fn() -> bool) -> u64 {
    while us > 0 && !woken() {
        let now = u32::try_from(us).map_or(SLEEP_US, |us| us.min(SLEEP_US));
        ib::sleep_us(now);
        us -= u64::from(now);
    }
    us
}

/// The RNR timer of the IB encoding (`min_rnr_timer`), in microseconds.
const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The longest single sleep of a wait: a destroy or a kick waits no longer
/// for the worker.
const SLEEP_US: u32 = 10_000;
