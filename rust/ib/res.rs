// SPDX-License-Identifier: GPL-2.0

//! Driver attributes in the core's resource tracking (`rdma res show -d`).

use super::bindings;
use core::marker::PhantomData;
use kernel::{error::to_result, ffi, prelude::*, str::CStr};

/// The driver's nest of a restrack netlink message.
pub(crate) struct DriverAttrs<'a> {
    msg: *mut bindings::sk_buff,
    _msg: PhantomData<&'a mut bindings::sk_buff>,
}

impl DriverAttrs<'_> {
    /// Adds `name = value`.
    pub(crate) fn put_u32(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: `msg` is the message being built; `name` is NUL-terminated.
        to_result(unsafe { bindings::rdma_nl_put_driver_u32(self.msg, name.as_char_ptr(), value) })
    }

    /// Adds `name = value`.
    pub(crate) fn put_u64(&mut self, name: &CStr, value: u64) -> Result {
        // SAFETY: as for `put_u32`.
        to_result(unsafe { bindings::rdma_nl_put_driver_u64(self.msg, name.as_char_ptr(), value) })
    }
}

/// Fills the driver's nest of `msg` with `fill`: the nest is closed when
/// `fill` succeeds and taken back out of the message when it fails.
///
/// # Safety
///
/// `msg` is a restrack message the core is building, for the call of its
/// `fill_res_*_entry` op this runs in.
pub(super) unsafe fn fill_driver_attrs(
    msg: *mut bindings::sk_buff,
    fill: impl FnOnce(&mut DriverAttrs<'_>) -> Result,
) -> ffi::c_int {
    // SAFETY: per the function's contract.
    let nest = unsafe { bindings::rsoft_nl_driver_start(msg) };
    if nest.is_null() {
        return -(kernel::bindings::EMSGSIZE as ffi::c_int);
    }
    let mut attrs = DriverAttrs {
        msg,
        _msg: PhantomData,
    };
    match fill(&mut attrs) {
        Ok(()) => {
            // SAFETY: `nest` was opened above on `msg`.
            unsafe { bindings::rsoft_nl_driver_end(msg, nest) };
            0
        }
        Err(e) => {
            // SAFETY: as above.
            unsafe { bindings::rsoft_nl_driver_cancel(msg, nest) };
            e.to_errno()
        }
    }
}
