// SPDX-License-Identifier: GPL-2.0

//! Driver attributes in the core's resource tracking (`rdma res show -d`).

use super::{bindings, cq::CqOps, object::CoreObject, verbs::Adapter, Verbs};
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

impl<T: Verbs> Adapter<T> {
    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.fill_res_cq_entry`.
    pub(super) unsafe extern "C" fn fill_res_cq_entry(
        msg: *mut bindings::sk_buff,
        cq: *mut bindings::ib_cq,
    ) -> ffi::c_int {
        // SAFETY: the core passes the message it is building.
        let nest = unsafe { bindings::rsoft_nl_driver_start(msg) };
        if nest.is_null() {
            return -(kernel::bindings::EMSGSIZE as ffi::c_int);
        }
        let mut attrs = DriverAttrs {
            msg,
            _msg: PhantomData,
        };
        // SAFETY: the core holds a reference on the live CQ.
        let data = unsafe { CoreObject::<bindings::ib_cq, T::Cq>::data(cq) };
        match data.fill_res(&mut attrs) {
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
}
