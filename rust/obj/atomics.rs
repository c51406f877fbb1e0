// SPDX-License-Identifier: GPL-2.0

//! The results of the atomics an RC responder executed, kept for their
//! duplicates. A requester whose atomic's answer was lost asks for it
//! again, maybe after the responder executed the atomics behind it; the
//! atomic is never executed twice, so its answer must come from what was
//! kept (IBA 9.7.5.1.2). One result is kept per responder resource: as
//! many as a QP may have, the newest replacing the oldest.

use crate::{limits::MAX_RD_ATOM, psn::Psn};
use kernel::prelude::*;

/// Results kept: `max_dest_rd_atomic` at most.
const KEPT: usize = MAX_RD_ATOM as usize;

/// The newest [`KEPT`] atomics' PSNs and original values: a ring.
pub(crate) struct AtomicResults {
    kept: KVec<(Psn, u64)>,
    /// Where the next goes.
    next: usize,
    len: usize,
}

impl AtomicResults {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            kept: KVec::from_elem((Psn::default(), 0), KEPT, GFP_KERNEL)?,
            next: 0,
            len: 0,
        })
    }

    /// Keeps `old`, the original value of the atomic at `psn`.
    pub(crate) fn keep(&mut self, psn: Psn, old: u64) {
        if let Some(slot) = self.kept.get_mut(self.next) {
            *slot = (psn, old);
        }
        self.next = (self.next + 1) % KEPT;
        self.len = (self.len + 1).min(KEPT);
    }

    /// The original value of the atomic at `psn`, if it is kept; the
    /// newest first, should a PSN have come round again.
    pub(crate) fn find(&self, psn: Psn) -> Option<u64> {
        (1..=self.len)
            .filter_map(|back| self.kept.get((self.next + KEPT - back) % KEPT))
            .find(|&&(at, _)| at == psn)
            .map(|&(_, old)| old)
    }

    /// Forgets them all: a new `rq_psn`.
    pub(crate) fn clear(&mut self) {
        self.next = 0;
        self.len = 0;
    }
}
