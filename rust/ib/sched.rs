// SPDX-License-Identifier: GPL-2.0

//! Giving the CPU away during long work, and waiting for work items.

use super::bindings;
use kernel::workqueue::Work;

/// Lets the scheduler run something else if it wants to. Only where the
/// caller may sleep.
pub(crate) fn cond_resched() {
    // SAFETY: callers are in a context that may sleep, as documented.
    unsafe { bindings::rsoft_cond_resched() }
}

/// Waits until the last queueing of `work` has finished running, so that
/// no code of the module runs for it any more. Sleeps.
pub(crate) fn flush_work<T: ?Sized, const ID: u64>(work: &Work<T, ID>) {
    // SAFETY: `work` is an initialised work item, live for the call.
    unsafe { kernel::bindings::flush_work(Work::raw_get(work)) };
}
