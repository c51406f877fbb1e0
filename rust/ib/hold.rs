// SPDX-License-Identifier: GPL-2.0

//! Holding a core object past the call that handed it over.
//!
//! The core frees an object's memory right after its destroy verb returns,
//! so a driver that keeps a pointer to it (a QP to its CQs and SRQ, a
//! pending event to its CQ) needs that verb to wait. Every core-allocated
//! object of the `ib` layer counts its holders ([`Holders`]); a [`Hold`] is
//! one of them, and the `ib` layer's destroy verb waits until the last
//! [`Hold`] is dropped before it lets the core free the memory. A leaked
//! hold makes destroy wait for ever; it can never make it free memory that
//! is still in use.

use super::{object::CoreHead, IrqSpinLock};
use crate::new_irq_spinlock;
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicUsize, Ordering},
};
use kernel::{new_condvar, prelude::*, sync::CondVar};

/// The count of an object's holders, and what its destroy sleeps on.
#[pin_data]
pub(super) struct Holders {
    count: AtomicUsize,
    /// Taken by the destroy while it looks at `count`, and by the last
    /// holder to leave while it wakes the destroy.
    #[pin]
    lock: IrqSpinLock<()>,
    #[pin]
    gone: CondVar,
}

impl Holders {
    pub(super) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            count: AtomicUsize::new(0),
            lock <- new_irq_spinlock!((), "rsoft_holders"),
            gone <- new_condvar!("rsoft_holders_gone"),
        })
    }

    fn get(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn put(&self) {
        // All but the last leave with one atomic operation.
        let mut count = self.count.load(Ordering::Relaxed);
        while count > 1 {
            match self.count.compare_exchange_weak(
                count,
                count - 1,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => count = now,
            }
        }
        // The last one leaves under the lock: the destroy cannot see the
        // count reach zero, return and free the memory before the wake-up
        // below is done with it.
        let _lock = self.lock.lock();
        if self.count.fetch_sub(1, Ordering::Release) == 1 {
            self.gone.notify_all();
        }
    }

    /// Waits until no holder is left. Sleeps.
    pub(super) fn wait(&self) {
        let mut lock = self.lock.lock();
        while self.count.load(Ordering::Acquire) != 0 {
            self.gone.wait(&mut lock);
        }
    }
}

/// One holder of a core object of type `C`: until it is dropped, the
/// object's destroy verb does not return.
///
/// # Invariants
///
/// `head` is the head of a live core-allocated object whose holders count
/// this hold.
pub(super) struct Hold<C> {
    head: NonNull<CoreHead<C>>,
}

// SAFETY: a hold is a counted pointer to an object that the core shares
// between threads by design; counting is atomic.
unsafe impl<C> Send for Hold<C> {}
// SAFETY: as for `Send`; a shared hold only reads the pointer.
unsafe impl<C> Sync for Hold<C> {}

impl<C> Hold<C> {
    /// Holds the object at `core`.
    ///
    /// # Safety
    ///
    /// `core` is NULL or the start of a live core-allocated object of the
    /// `ib` layer whose head is initialised, and whose destroy has not yet
    /// waited for its holders.
    pub(super) unsafe fn new(core: *mut C) -> Option<Self> {
        let head = NonNull::new(core.cast::<CoreHead<C>>())?;
        // SAFETY: per the function's contract the head is live.
        unsafe { head.as_ref() }.holders().get();
        // INVARIANT: counted just now, on a live object.
        Some(Self { head })
    }

    /// The core's object.
    pub(super) fn as_ptr(&self) -> *mut C {
        self.head.as_ptr().cast()
    }

    fn head(&self) -> &CoreHead<C> {
        // SAFETY: by the type invariant the object is live while held.
        unsafe { self.head.as_ref() }
    }
}

impl<C> Clone for Hold<C> {
    fn clone(&self) -> Self {
        self.head().holders().get();
        // INVARIANT: counted just now; `self` keeps the object live.
        Self { head: self.head }
    }
}

impl<C> Drop for Hold<C> {
    fn drop(&mut self) {
        self.head().holders().put();
    }
}
