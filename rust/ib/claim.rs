// SPDX-License-Identifier: GPL-2.0

//! A value that one caller at a time may claim without ever waiting: who
//! finds it claimed leaves the work to its holder. Unlike a lock it may be
//! held across sleeping and is claimed from any context, so it fits "one
//! runner at a time" (a QP's queues), where a second runner would have
//! nothing to add.

use core::{
    cell::UnsafeCell,
    marker::PhantomData,
    ops::{Deref, DerefMut},
    sync::atomic::{AtomicBool, Ordering},
};

/// A `T` behind a claim flag.
pub(crate) struct Claim<T> {
    claimed: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `Claimed`, and at most one
// exists at a time (the flag), so sharing a `Claim` hands the value to one
// thread at a time: `T: Send` is all it needs.
unsafe impl<T: Send> Sync for Claim<T> {}

impl<T> Claim<T> {
    pub(crate) fn new(value: T) -> Self {
        Self {
            claimed: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Claims the value, unless someone holds it.
    ///
    /// The flag is swapped and released with `SeqCst`: a holder that
    /// releases and then looks for work left to it, and a caller that
    /// leaves work and then tries to claim, must not both miss the other.
    pub(crate) fn try_claim(&self) -> Option<Claimed<'_, T>> {
        if self.claimed.swap(true, Ordering::SeqCst) {
            // Not `then_some`: a `Claimed` made and dropped here would
            // release the holder's claim.
            return None;
        }
        Some(Claimed {
            claim: self,
            _value: PhantomData,
        })
    }
}

/// The value of a [`Claim`], held until dropped.
pub(crate) struct Claimed<'a, T> {
    claim: &'a Claim<T>,
    /// Shared between threads only when `&mut T` may be, as a lock guard.
    _value: PhantomData<&'a mut T>,
}

impl<T> Deref for Claimed<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: this `Claimed` set the flag and is the only one until it
        // is dropped, so no `&mut T` to the value exists elsewhere.
        unsafe { &*self.claim.value.get() }
    }
}

impl<T> DerefMut for Claimed<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this borrow exclusive.
        unsafe { &mut *self.claim.value.get() }
    }
}

impl<T> Drop for Claimed<'_, T> {
    fn drop(&mut self) {
        self.claim.claimed.store(false, Ordering::SeqCst);
    }
}
