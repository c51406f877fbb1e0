// SPDX-License-Identifier: GPL-2.0

//! Count, close, wait: the one primitive behind every "nothing may use this
//! once it is gone" of rsoft.
//!
//! A [`Count`] counts the users of something in one atomic word and can be
//! closed to new ones; a [`Gate`] adds the wait for the last user to leave.
//! The `ib` layer's destroy verbs wait on an object's gate before the core
//! frees it ([`super::hold`]), and `destroy_qp` checks the count of the
//! completions that name the QP ([`super::qp::WcQp`]); the driver's objects
//! use gates so that a reference found in a table stays usable after the
//! table lock is dropped.

use super::IrqSpinLock;
use crate::new_irq_spinlock;
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::{new_condvar, prelude::*, sync::CondVar};

/// The bit of a count's word that says it is closed; the other bits count
/// the users.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// Users counted in one atomic word, which can be closed to new ones.
/// Entering and leaving are one atomic operation each (they happen several
/// times per work request).
pub(super) struct Count(AtomicUsize);

impl Count {
    pub(super) const fn new() -> Self {
        Self(AtomicUsize::new(0))
    }

    /// A count closed until [`Count::open`].
    pub(super) const fn closed() -> Self {
        Self(AtomicUsize::new(CLOSED))
    }

    /// Opens a closed count that has no user.
    pub(super) fn open(&self) {
        self.0.store(0, Ordering::Release);
    }

    /// Enters, unless the count is closed (or impossibly full).
    pub(super) fn enter(&self) -> bool {
        self.0
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |s| {
                (s & CLOSED == 0 && s + 1 < CLOSED).then_some(s + 1)
            })
            .is_ok()
    }

    /// Enters beside a user already inside, closed or not: the one inside
    /// keeps the count from being found empty meanwhile.
    fn enter_beside(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Leaves after an enter, unless this is the last user of a closed
    /// count: returns false then, and leaves nothing.
    fn leave_unless_last(&self) -> bool {
        let mut s = self.0.load(Ordering::Relaxed);
        while s != CLOSED | 1 {
            match self
                .0
                .compare_exchange_weak(s, s - 1, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Leaves after an enter. Nothing waits on a bare count: whoever closed
    /// it looks at [`Count::is_empty`] and decides.
    pub(super) fn leave(&self) {
        self.0.fetch_sub(1, Ordering::Release);
    }

    /// Closes the count to new users; those inside stay.
    pub(super) fn close(&self) {
        self.0.fetch_or(CLOSED, Ordering::AcqRel);
    }

    /// Whether the count is closed.
    pub(super) fn is_closed(&self) -> bool {
        self.0.load(Ordering::Relaxed) & CLOSED != 0
    }

    /// Whether no user is inside; after a close, for good.
    pub(super) fn is_empty(&self) -> bool {
        self.0.load(Ordering::Acquire) & !CLOSED == 0
    }
}

/// A [`Count`] whose close waits until the last user has left.
///
/// Only the close, and the last user to leave a closed gate, take the lock
/// that the close sleeps on. That last user leaves under the lock, which
/// the close holds whenever it looks at the count: the close cannot see it
/// gone, return and have the gate's memory freed before the wake-up is done
/// with it. So no user needs to keep the gate alive across
/// [`Gate::leave`]; the core frees an object as soon as its destroy verb
/// returns, with no reference count to keep it.
#[pin_data]
pub(crate) struct Gate {
    count: Count,
    #[pin]
    lock: IrqSpinLock<()>,
    #[pin]
    empty: CondVar,
}

impl Gate {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            count: Count::new(),
            lock <- new_irq_spinlock!((), "rsoft_gate"),
            empty <- new_condvar!("rsoft_gate_empty"),
        })
    }

    /// Enters, unless the gate is closed (or impossibly full).
    pub(crate) fn enter(&self) -> bool {
        self.count.enter()
    }

    /// Enters beside a user already inside, even once the gate is closed
    /// (a copy of a [`super::hold::Hold`]).
    pub(super) fn enter_beside(&self) {
        self.count.enter_beside();
    }

    /// Leaves after an enter.
    pub(crate) fn leave(&self) {
        if self.count.leave_unless_last() {
            return;
        }
        let _lock = self.lock.lock();
        if self.count.0.fetch_sub(1, Ordering::Release) == CLOSED | 1 {
            self.empty.notify_all();
        }
    }

    /// Whether the gate is closing: a long operation inside should stop.
    pub(crate) fn is_closed(&self) -> bool {
        self.count.is_closed()
    }

    /// Closes the gate and waits until every user has left. Sleeps.
    pub(crate) fn close(&self) {
        let mut lock = self.lock.lock();
        self.count.close();
        while !self.count.is_empty() {
            self.empty.wait(&mut lock);
        }
    }
}
