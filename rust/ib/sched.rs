// SPDX-License-Identifier: GPL-2.0

//! Giving the CPU away during long work.

use super::bindings;

/// Lets the scheduler run something else if it wants to. Only where the
/// caller may sleep.
pub(crate) fn cond_resched() {
    // SAFETY: callers are in a context that may sleep, as documented.
    unsafe { bindings::rsoft_cond_resched() }
}
