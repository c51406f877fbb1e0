// SPDX-License-Identifier: GPL-2.0

//! Affiliated asynchronous events (`struct ib_event`): how the driver
//! tells the consumer of a CQ, QP or SRQ that something happened to it.

use super::{bindings, hold::Hold};
use kernel::ffi::c_void;

/// The handler an object's consumer registered (`event_handler`).
type Handler = Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut c_void)>;

/// A core object with an event handler of its consumer's.
pub(crate) trait EventSource {
    /// The object's handler, its context, its device, and the event's
    /// `element` naming the object.
    ///
    /// # Safety
    ///
    /// `this` is a live object that the core has set up.
    unsafe fn parts(
        this: *mut Self,
    ) -> (
        Handler,
        *mut c_void,
        *mut bindings::ib_device,
        bindings::ib_event__bindgen_ty_1,
    );
}

macro_rules! event_source {
    ($ty:ident, $field:ident, $context:ident) => {
        impl EventSource for bindings::$ty {
            unsafe fn parts(
                this: *mut Self,
            ) -> (
                Handler,
                *mut c_void,
                *mut bindings::ib_device,
                bindings::ib_event__bindgen_ty_1,
            ) {
                // SAFETY: per the function's contract.
                let o = unsafe { &*this };
                let element = bindings::ib_event__bindgen_ty_1 { $field: this };
                (o.event_handler, o.$context, o.device, element)
            }
        }
    };
}

event_source!(ib_cq, cq, cq_context);
event_source!(ib_qp, qp, qp_context);
event_source!(ib_srq, srq, srq_context);

/// Raises events about one object, which it holds: the object's destroy
/// verb waits until the notifier is dropped. It reaches only the core's
/// part of the object, so the object's own driver data may keep one.
///
/// # Invariants
///
/// `hold` holds an object the core has set up, its handler and context
/// included.
pub(crate) struct Notifier<O> {
    hold: Hold<O>,
}

impl<O: EventSource> Notifier<O> {
    /// # Safety
    ///
    /// `obj` is NULL or a live, set up core-allocated object of the `ib`
    /// layer whose head is initialised.
    pub(super) unsafe fn new(obj: *mut O) -> Option<Self> {
        // SAFETY: per the function's contract.
        let hold = unsafe { Hold::new(obj) }?;
        // INVARIANT: per the function's contract.
        Some(Self { hold })
    }

    /// A notifier for the object `hold` holds, which the core has set up.
    pub(super) fn from_hold(hold: Hold<O>) -> Self {
        // INVARIANT: holds are made only of objects handed to the driver,
        // which the core sets up before it calls the create verb.
        Self { hold }
    }

    /// Calls the consumer's handler, if any, with an event of `kind`.
    ///
    /// Handlers may run in any context (hardware raises events from
    /// interrupts) and do not call back into the driver, so the caller may
    /// hold its locks.
    pub(super) fn raise(&self, kind: bindings::ib_event_type) {
        let this = self.hold.as_ptr();
        // SAFETY: the object is held and set up (type invariant).
        let (handler, context, device, element) = unsafe { O::parts(this) };
        let Some(handler) = handler else {
            return;
        };
        let mut event = bindings::ib_event {
            device,
            element,
            event: kind,
        };
        // SAFETY: the core's handler for this object, with its context; the
        // event lives across the call.
        unsafe { handler(&mut event, context) };
    }
}
