// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: one queue of receives that several QPs consume,
//! with a low-water limit that raises an event once per arming.

use crate::{
    ib::{IrqSpinLock, PdId, SrqAttr, SrqNotifier},
    new_irq_spinlock,
    wq::{RecvWqe, WorkQueue},
};
use kernel::{prelude::*, sync::Arc};

/// A shared receive queue as the core holds it.
pub(crate) struct Srq {
    pub(crate) shared: Arc<SrqShared>,
}

/// What changes under the SRQ's lock.
pub(crate) struct SrqInner {
    pub(crate) rq: WorkQueue<RecvWqe>,
    /// Armed limit; 0 when disarmed.
    limit: u32,
    /// A sender found the SRQ empty and waits (RNR) for a post.
    pub(crate) waited_on: bool,
}

/// An SRQ, shared by the core's object and the QPs created on it.
#[pin_data]
pub(crate) struct SrqShared {
    pub(crate) pd: PdId,
    max_sge: u32,
    notifier: SrqNotifier,
    #[pin]
    pub(crate) inner: IrqSpinLock<SrqInner>,
}

impl SrqShared {
    pub(crate) fn new(pd: PdId, attr: &SrqAttr, notifier: SrqNotifier) -> Result<Arc<Self>> {
        let inner = SrqInner {
            rq: WorkQueue::new_recv(attr.max_wr, attr.max_sge)?,
            limit: 0,
            waited_on: false,
        };
        Arc::pin_init(
            try_pin_init!(Self {
                pd,
                max_sge: attr.max_sge,
                notifier,
                inner <- new_irq_spinlock!(inner, "rsoft_srq"),
            }? Error),
            GFP_KERNEL,
        )
    }

    pub(crate) fn attr(&self) -> SrqAttr {
        let inner = self.inner.lock();
        SrqAttr {
            max_wr: inner.rq.capacity(),
            max_sge: self.max_sge,
            limit: inner.limit,
        }
    }

    /// Arms the limit event, which fires when fewer than `limit` receives
    /// are left; `limit` cannot exceed the queue's size.
    pub(crate) fn arm(&self, limit: u32) -> Result {
        let mut inner = self.inner.lock();
        if limit > inner.rq.capacity() {
            return Err(EINVAL);
        }
        inner.limit = limit;
        Ok(())
    }

    /// Takes the oldest receive (the SRQ's lock is `inner`); raises the
    /// limit event when it leaves too few.
    pub(crate) fn pop(&self, inner: &mut SrqInner) -> Option<RecvWqe> {
        let wqe = inner.rq.pop()?;
        if inner.limit != 0 && inner.rq.len() < inner.limit {
            inner.limit = 0;
            self.notifier.limit_reached();
        }
        Some(wqe)
    }
}
