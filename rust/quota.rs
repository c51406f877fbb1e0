// SPDX-License-Identifier: GPL-2.0

//! How many objects of one kind a device has, against the limit it
//! advertises.

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// The count of one kind of object on a device, at most `max`.
pub(crate) struct Quota {
    used: AtomicU32,
    max: u32,
}

/// One unit taken from a [`Quota`]: given back when dropped, unless
/// [`Taken::keep`] hands it to the object it was taken for.
pub(crate) struct Taken<'a>(&'a Quota);

impl Quota {
    pub(crate) const fn new(max: u32) -> Self {
        Self {
            used: AtomicU32::new(0),
            max,
        }
    }

    /// Takes one unit, or fails with ENOMEM when all are used.
    pub(crate) fn take(&self) -> Result<Taken<'_>> {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(Taken(self))
    }

    /// Gives back a unit that was kept for an object now gone.
    pub(crate) fn give_back(&self) {
        self.used.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Taken<'_> {
    /// The object exists: its destroy gives the unit back.
    pub(crate) fn keep(self) {
        core::mem::forget(self);
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.0.give_back();
    }
}
