// SPDX-License-Identifier: GPL-2.0

//! A gate that counts the users inside an object and lets its destroy close
//! the gate and wait until the last user has left: what makes a reference
//! found in a table safe to use after the table lock is dropped.

use crate::{ib::IrqSpinLock, new_irq_spinlock};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{new_condvar, prelude::*, sync::CondVar};

/// The bit of [`Gate::state`] that says the gate is closed; the other bits
/// count the users inside.
const CLOSED: u32 = 1 << 31;

/// Entering and leaving are one atomic operation each (they happen several
/// times per work request); only the close, and the last user leaving a
/// closed gate, take the lock that the close sleeps on.
#[pin_data]
pub(crate) struct Gate {
    state: AtomicU32,
    /// Held by the close from its last look at `state` until it sleeps,
    /// and by the last user to leave while it wakes the close.
    #[pin]
    lock: IrqSpinLock<()>,
    #[pin]
    empty: CondVar,
}

impl Gate {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            state: AtomicU32::new(0),
            lock <- new_irq_spinlock!((), "rsoft_gate"),
            empty <- new_condvar!("rsoft_gate_empty"),
        })
    }

    /// Enters, unless the gate is closed (or impossibly full).
    pub(crate) fn enter(&self) -> bool {
        self.state
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |s| {
                (s & CLOSED == 0 && s + 1 < CLOSED).then_some(s + 1)
            })
            .is_ok()
    }

    /// Leaves after a successful [`Gate::enter`].
    pub(crate) fn leave(&self) {
        if self.state.fetch_sub(1, Ordering::Release) == CLOSED | 1 {
            let _lock = self.lock.lock();
            self.empty.notify_all();
        }
    }

    /// Whether the gate is closing: a long operation inside should stop.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::Relaxed) & CLOSED != 0
    }

    /// Closes the gate and waits until every user has left. Sleeps.
    pub(crate) fn close(&self) {
        let mut lock = self.lock.lock();
        self.state.fetch_or(CLOSED, Ordering::AcqRel);
        while self.state.load(Ordering::Acquire) != CLOSED {
            self.empty.wait(&mut lock);
        }
    }
}
