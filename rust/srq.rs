// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: one queue of receives that several QPs consume,
//! with a low-water limit that raises an event once per arming.

use crate::{
    ib::{PdId, SrqAttr, SrqNotifier},
    qp::{WorkQueue, Wqe},
};
use kernel::prelude::*;

/// An SRQ, owned by the device's SRQ table.
pub(crate) struct SrqEntry {
    pub(crate) pd: PdId,
    pub(crate) rq: WorkQueue,
    max_sge: u32,
    /// Armed limit; 0 when disarmed.
    limit: u32,
    notifier: SrqNotifier,
    /// A sender found this SRQ empty and waits (RNR) for a post.
    pub(crate) waited_on: bool,
}

impl SrqEntry {
    pub(crate) fn new(pd: PdId, attr: &SrqAttr, notifier: SrqNotifier) -> Result<Self> {
        Ok(Self {
            pd,
            rq: WorkQueue::new(attr.max_wr, attr.max_sge)?,
            max_sge: attr.max_sge,
            limit: 0,
            notifier,
            waited_on: false,
        })
    }

    pub(crate) fn attr(&self) -> SrqAttr {
        SrqAttr {
            max_wr: self.rq.capacity(),
            max_sge: self.max_sge,
            limit: self.limit,
        }
    }

    /// Arms the limit event, which fires when fewer than `limit` receives
    /// are left; `limit` cannot exceed the queue's size.
    pub(crate) fn arm(&mut self, limit: u32) -> Result {
        if limit > self.rq.capacity() {
            return Err(EINVAL);
        }
        self.limit = limit;
        Ok(())
    }

    /// Takes the oldest receive; raises the limit event when it leaves too
    /// few (under the caller's lock, see [`SrqNotifier::limit_reached`]).
    pub(crate) fn pop(&mut self) -> Option<Wqe> {
        let wqe = self.rq.pop()?;
        if self.limit != 0 && self.rq.len() < self.limit {
            self.limit = 0;
            self.notifier.limit_reached();
        }
        Some(wqe)
    }
}
