// SPDX-License-Identifier: GPL-2.0

//! Holding a core object past the call that handed it over.
//!
//! The core frees an object's memory right after its destroy verb returns,
//! so a driver that keeps a pointer to it (a QP to its CQs and SRQ, a
//! pending event to its CQ) needs that verb to wait. Every core-allocated
//! object of the `ib` layer counts its holders in a [`super::gate::Gate`];
//! a [`Hold`] is one of them, and the `ib` layer's destroy verb closes the
//! gate and waits until the last [`Hold`] is dropped before it lets the
//! core free the memory. A leaked hold makes destroy wait for ever; it can
//! never make it free memory that is still in use.

use super::object::CoreHead;
use core::ptr::NonNull;

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
        unsafe { head.as_ref() }.holders().enter_beside();
        // INVARIANT: counted just now, on a live object.
        Some(Self { head })
    }

    /// The object's head.
    pub(super) fn head_ptr(&self) -> NonNull<CoreHead<C>> {
        self.head
    }

    /// The core's object.
    pub(super) fn as_ptr(&self) -> *mut C {
        self.head.as_ptr().cast()
    }

    pub(super) fn head(&self) -> &CoreHead<C> {
        // SAFETY: by the type invariant the object is live while held.
        unsafe { self.head.as_ref() }
    }
}

impl<C> Clone for Hold<C> {
    fn clone(&self) -> Self {
        self.head().holders().enter_beside();
        // INVARIANT: counted just now; `self` keeps the object live.
        Self { head: self.head }
    }
}

impl<C> Drop for Hold<C> {
    fn drop(&mut self) {
        self.head().holders().leave();
    }
}
