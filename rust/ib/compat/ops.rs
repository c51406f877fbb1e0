// SPDX-License-Identifier: GPL-2.0

//! The ops whose C signature differs between kernels: each object's
//! adapter implements the kernel-independent form once, and the table gets
//! the entry this kernel declares.

use crate::ib::bindings;
use kernel::ffi;

/// An adapter's resize of a CQ, whatever the kernel's entry for it.
pub(in crate::ib) trait ResizeCq {
    /// Resizes `cq` to `cqe` entries.
    ///
    /// # Safety
    ///
    /// Only the RDMA core's resize call reaches this, with its `cq`, from a
    /// table that the implementor's own ops fill in under their contract.
    unsafe fn resize_cq(cq: *mut bindings::ib_cq, cqe: u32) -> ffi::c_int;
}

/// An adapter's registration of user memory, whatever the kernel's entry
/// for it.
pub(in crate::ib) trait RegUserMr {
    /// Registers `length` bytes of the caller's memory at `start` in `pd`.
    ///
    /// # Safety
    ///
    /// Only the RDMA core's `reg_user_mr` call reaches this, with its
    /// arguments, from a table that the implementor's own ops fill in under
    /// their contract.
    unsafe fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: ffi::c_int,
    ) -> *mut bindings::ib_mr;
}

/// `ops` with `A`'s resize as this kernel's resize entry, or none.
pub(in crate::ib) const fn with_resize_cq<A: ResizeCq>(
    mut ops: bindings::ib_device_ops,
    on: bool,
) -> bindings::ib_device_ops {
    #[cfg(rsoft_have_resize_user_cq)]
    {
        ops.resize_user_cq = if on { Some(resize_cq::<A>) } else { None };
    }
    #[cfg(not(rsoft_have_resize_user_cq))]
    {
        ops.resize_cq = if on { Some(resize_cq::<A>) } else { None };
    }
    ops
}

/// `ops` with `A`'s registration as this kernel's `reg_user_mr`.
pub(in crate::ib) const fn with_reg_user_mr<A: RegUserMr>(
    mut ops: bindings::ib_device_ops,
) -> bindings::ib_device_ops {
    ops.reg_user_mr = Some(reg_user_mr::<A>);
    ops
}

/// # Safety
///
/// Only the RDMA core calls this, as `ib_device_ops.resize_user_cq`.
#[cfg(rsoft_have_resize_user_cq)]
unsafe extern "C" fn resize_cq<A: ResizeCq>(
    cq: *mut bindings::ib_cq,
    cqe: ffi::c_uint,
    _udata: *mut bindings::ib_udata,
) -> ffi::c_int {
    // SAFETY: per the function's contract.
    unsafe { A::resize_cq(cq, cqe) }
}

/// # Safety
///
/// Only the RDMA core calls this, as `ib_device_ops.resize_cq`.
#[cfg(not(rsoft_have_resize_user_cq))]
unsafe extern "C" fn resize_cq<A: ResizeCq>(
    cq: *mut bindings::ib_cq,
    cqe: ffi::c_int,
    _udata: *mut bindings::ib_udata,
) -> ffi::c_int {
    match u32::try_from(cqe) {
        // SAFETY: per the function's contract.
        Ok(cqe) => unsafe { A::resize_cq(cq, cqe) },
        Err(_) => kernel::error::code::EINVAL.to_errno(),
    }
}

/// # Safety
///
/// Only the RDMA core calls this, as `ib_device_ops.reg_user_mr`.
#[cfg(rsoft_have_reg_user_mr_dmah)]
unsafe extern "C" fn reg_user_mr<A: RegUserMr>(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: ffi::c_int,
    _dmah: *mut bindings::ib_dmah,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: per the function's contract.
    unsafe { A::reg_user_mr(pd, start, length, iova, access) }
}

/// # Safety
///
/// Only the RDMA core calls this, as `ib_device_ops.reg_user_mr`.
#[cfg(not(rsoft_have_reg_user_mr_dmah))]
unsafe extern "C" fn reg_user_mr<A: RegUserMr>(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: ffi::c_int,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    // SAFETY: per the function's contract.
    unsafe { A::reg_user_mr(pd, start, length, iova, access) }
}
