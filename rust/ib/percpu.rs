// SPDX-License-Identifier: GPL-2.0

//! Counters kept per CPU: a hot path adds to its own CPU's copy without an
//! atomic read-modify-write or a cache line shared with the other CPUs, and
//! the rare reader sums the copies.

use super::bindings;
use core::{ffi::c_void, ptr::NonNull};
use kernel::prelude::*;

/// `N` 64-bit counters per possible CPU.
///
/// # Invariants
///
/// `set` came from `rsoft_percpu_alloc(N)` and is freed only by `drop`.
pub(crate) struct PerCpuCounters<const N: usize> {
    set: NonNull<c_void>,
}

// SAFETY: the set is only touched through `this_cpu_add()`, which is safe
// against preemption and interrupts on the CPU it runs on, and sums read
// with `per_cpu()`; neither depends on the thread that owns the value.
unsafe impl<const N: usize> Send for PerCpuCounters<N> {}
// SAFETY: as for `Send`: every access through `&self` is one of those two.
unsafe impl<const N: usize> Sync for PerCpuCounters<N> {}

impl<const N: usize> PerCpuCounters<N> {
    /// `N` as the C side takes it; `N` is a small constant.
    const COUNT: u32 = N as u32;

    /// Allocates the counters, all zero. Sleeps.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: allocates; no precondition.
        let set = unsafe { bindings::rsoft_percpu_alloc(Self::COUNT) };
        Ok(Self {
            set: NonNull::new(set).ok_or(ENOMEM)?,
        })
    }

    /// Adds `v` to counter `i` on this CPU. Any context; an `i` out of
    /// range is ignored by the C side.
    pub(crate) fn add(&self, i: usize, v: u64) {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        // SAFETY: `set` holds `N` counters per CPU by the type invariant.
        unsafe { bindings::rsoft_percpu_add(self.set.as_ptr(), Self::COUNT, i, v) };
    }

    /// Counter `i` summed over every CPU: exact once the adders are quiet,
    /// otherwise a value it held while they ran.
    pub(crate) fn sum(&self, i: usize) -> u64 {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        // SAFETY: as in `add`.
        unsafe { bindings::rsoft_percpu_sum(self.set.as_ptr(), Self::COUNT, i) }
    }
}

impl<const N: usize> Drop for PerCpuCounters<N> {
    fn drop(&mut self) {
        // SAFETY: `set` came from `rsoft_percpu_alloc` by the type invariant
        // and is freed only here.
        unsafe { bindings::rsoft_percpu_free(self.set.as_ptr()) };
    }
}
