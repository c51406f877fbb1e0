// SPDX-License-Identifier: GPL-2.0

//! How the driver names its QPs: the handle a QP keeps of itself, and the
//! counted names its work completions carry until they are polled.

use super::{bindings, hold::Hold, object::CoreHead};
use core::{marker::PhantomData, ptr::NonNull};

/// The driver's handle of one of its QPs, from which it names the QP in
/// work completions ([`QpId::name`]). It holds the QP: the QP's destroy
/// waits until it is dropped.
pub(crate) struct QpId {
    hold: Hold<bindings::ib_qp>,
}

impl QpId {
    /// The handle of the QP at `qp`.
    ///
    /// # Safety
    ///
    /// As for [`Hold::new`].
    pub(super) unsafe fn new(qp: *mut bindings::ib_qp) -> Option<Self> {
        // SAFETY: per the function's contract.
        let hold = unsafe { Hold::new(qp) }?;
        Some(Self { hold })
    }

    /// A name of the QP for one work completion.
    ///
    /// Once the QP's destroy has removed it from the driver
    /// ([`super::QpOps::destroy`]), a completion made of it could only be one
    /// the driver failed to purge: the name names no QP then, and the `ib`
    /// layer never reports the completion.
    pub(crate) fn name(&self) -> WcQp {
        let head = self.hold.head();
        if !head.cqes().enter() {
            return WcQp(None);
        }
        // INVARIANT: counted just now, on a QP that the hold keeps.
        WcQp(Some(self.hold.head_ptr()))
    }
}

/// Names a QP in one work completion (`ib_wc.qp`), for the time the
/// completion is queued in the driver.
///
/// Each name is counted on its QP from [`QpId::name`] until the `ib` layer
/// writes it into the consumer's `ib_wc` at poll, or it is dropped (purged,
/// overwritten, or its CQ destroyed). `destroy_qp` has the driver purge the
/// QP's completions and then lets the core free the QP only if none is
/// left; if one is, it fails the destroy rather than free a QP that a
/// later poll would hand to the consumer. So whatever the driver's safe
/// code does with its completions, none it reports names a freed QP, and
/// a correct purge keeps the destroy from ever failing or waiting for the
/// consumer. It costs an uncontended atomic increment when a completion is
/// made and a decrement when it is polled, and nothing in the ring: a name
/// is one pointer, as before. The alternative, an `ib` layer's own ring
/// that it purges itself, would still leave a copyable name in the hands
/// of the driver.
///
/// # Invariants
///
/// `0` is `None`, or the head of a QP whose count of completion names
/// counts this one.
pub(crate) struct WcQp(Option<NonNull<CoreHead<bindings::ib_qp>>>);

// SAFETY: a counted pointer to an object that the core shares between
// threads by design; counting is atomic.
unsafe impl Send for WcQp {}
// SAFETY: as for `Send`; a shared name only compares the pointer.
unsafe impl Sync for WcQp {}

impl WcQp {
    /// Names no QP: what a completion's storage holds when unused.
    pub(crate) const NONE: Self = Self(None);

    /// Whether this names `qp`.
    pub(crate) fn is(&self, qp: QpName<'_>) -> bool {
        self.0 == Some(qp.0)
    }

    /// The QP, for the consumer's `ib_wc`; uncounted from now on. `None`
    /// when it names no QP.
    pub(super) fn into_ptr(self) -> Option<*mut bindings::ib_qp> {
        Some(self.0?.as_ptr().cast())
    }
}

impl Drop for WcQp {
    fn drop(&mut self) {
        if let Some(head) = self.0 {
            // SAFETY: by the type invariant the QP counts this name, and
            // the core does not free it while its count is not empty.
            unsafe { head.as_ref() }.cqes().leave();
        }
    }
}

/// The QP whose completions a purge removes ([`super::CqOps::purge`]): only to
/// compare names with ([`WcQp::is`]), for the length of the call.
#[derive(Clone, Copy)]
pub(crate) struct QpName<'a>(
    NonNull<CoreHead<bindings::ib_qp>>,
    PhantomData<&'a CoreHead<bindings::ib_qp>>,
);

impl<'a> QpName<'a> {
    pub(super) fn new(head: &'a CoreHead<bindings::ib_qp>) -> Self {
        Self(NonNull::from(head), PhantomData)
    }
}
