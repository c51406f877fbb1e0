// SPDX-License-Identifier: GPL-2.0

//! Affiliated asynchronous events (`struct ib_event`) for the consumer's
//! handler of a CQ, QP or SRQ.

use super::bindings;
use kernel::ffi::c_void;

/// The handler an object's consumer registered (`event_handler`).
pub(super) type Handler = Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut c_void)>;

/// Calls `handler`, if any, with an event of `kind` about `element`.
///
/// # Safety
///
/// `handler`, `context` and `device` are those the core set up for the live
/// object that `element` names.
pub(super) unsafe fn raise(
    handler: Handler,
    context: *mut c_void,
    device: *mut bindings::ib_device,
    element: bindings::ib_event__bindgen_ty_1,
    kind: bindings::ib_event_type,
) {
    let Some(handler) = handler else {
        return;
    };
    let mut event = bindings::ib_event {
        device,
        element,
        event: kind,
    };
    // SAFETY: per the function's contract; the event lives across the call.
    unsafe { handler(&mut event, context) };
}
