// SPDX-License-Identifier: GPL-2.0

//! What differs between the kernels rsoft builds for (6.12 LTS and 7.x),
//! in one place. The `rsoft_have_*` configurations are what
//! `tools/kernel-features.sh` found the kernel to offer (probed, not read
//! off a version, so that backports count); the C shims take the C-side
//! differences. Outside this file only the lock backend (`irq_lock.rs`)
//! names one: a trait's methods are implemented where its `impl` is.

use super::{bindings, verbs::Adapter, Verbs};
use kernel::{alloc::KVec, ffi, prelude::*, str::CStr, uaccess::UserSlice};

/// Removes element `i` of `v` and returns it; the last element takes its
/// place, so that no other element moves. `None` if `i` is out of range.
pub(crate) fn swap_remove<T>(v: &mut KVec<T>, i: usize) -> Option<T> {
    let last = v.len().checked_sub(1)?;
    if i > last {
        return None;
    }
    v.as_mut_slice().swap(i, last);
    pop(v)
}

#[cfg(rsoft_have_kvec_pop)]
fn pop<T>(v: &mut KVec<T>) -> Option<T> {
    v.pop()
}

#[cfg(not(rsoft_have_kvec_pop))]
fn pop<T>(v: &mut KVec<T>) -> Option<T> {
    let last = v.len().checked_sub(1)?;
    // SAFETY: element `last` is initialised; it is moved out and then the
    // length shrinks past it, so it is neither dropped twice nor leaked.
    unsafe {
        let item = v.as_ptr().add(last).read();
        v.set_len(last);
        Some(item)
    }
}

/// The C string of `s`, in a constant.
pub(super) const fn c_str_ptr(s: &CStr) -> *const ffi::c_char {
    // `CStrExt::as_char_ptr`, which the kernel's lints point to, is no
    // `const fn`.
    #[cfg(rsoft_have_cstr_ext)]
    #[allow(clippy::disallowed_methods)]
    let ptr = s.as_ptr().cast();
    #[cfg(not(rsoft_have_cstr_ext))]
    let ptr = s.as_char_ptr();
    ptr
}

/// Runs `init` on `slot`.
///
/// # Safety
///
/// As for `PinInit`'s own initialisation: `slot` is valid for writes, not
/// initialised, and does not move until dropped; after an error it is
/// only deallocated.
pub(super) unsafe fn init_in_place<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    // SAFETY: per the function's contract.
    #[cfg(rsoft_have_pin_init_raw_try_init)]
    let done = unsafe { pin_init::raw_try_init(slot, init) };
    // SAFETY: per the function's contract.
    #[cfg(not(rsoft_have_pin_init_raw_try_init))]
    let done = unsafe { init.__pinned_init(slot) };
    done
}

/// The user memory at `addr`, `len` bytes long.
pub(super) fn user_slice(addr: usize, len: usize) -> UserSlice {
    #[cfg(rsoft_have_user_ptr_newtype)]
    let addr = kernel::uaccess::UserPtr::from_addr(addr);
    UserSlice::new(addr, len)
}

impl<T: Verbs> Adapter<T> {
    /// Completes `ops` with the entries whose C signature differs between
    /// kernels.
    pub(super) const fn with_compat_ops(
        mut ops: bindings::ib_device_ops,
        resize: bool,
    ) -> bindings::ib_device_ops {
        ops.reg_user_mr = Some(Self::reg_user_mr_c);
        #[cfg(rsoft_have_resize_user_cq)]
        {
            ops.resize_user_cq = if resize {
                Some(Self::resize_cq_c)
            } else {
                None
            };
        }
        #[cfg(not(rsoft_have_resize_user_cq))]
        {
            ops.resize_cq = if resize {
                Some(Self::resize_cq_c)
            } else {
                None
            };
        }
        ops
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.resize_user_cq`.
    #[cfg(rsoft_have_resize_user_cq)]
    unsafe extern "C" fn resize_cq_c(
        cq: *mut bindings::ib_cq,
        cqe: ffi::c_uint,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: per the function's contract.
        unsafe { Self::resize_cq(cq, cqe) }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.resize_cq`.
    #[cfg(not(rsoft_have_resize_user_cq))]
    unsafe extern "C" fn resize_cq_c(
        cq: *mut bindings::ib_cq,
        cqe: ffi::c_int,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        match u32::try_from(cqe) {
            // SAFETY: per the function's contract.
            Ok(cqe) => unsafe { Self::resize_cq(cq, cqe) },
            Err(_) => kernel::error::code::EINVAL.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.reg_user_mr`.
    #[cfg(rsoft_have_reg_user_mr_dmah)]
    unsafe extern "C" fn reg_user_mr_c(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: ffi::c_int,
        _dmah: *mut bindings::ib_dmah,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // SAFETY: per the function's contract.
        unsafe { Self::reg_user_mr(pd, start, length, iova, access) }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.reg_user_mr`.
    #[cfg(not(rsoft_have_reg_user_mr_dmah))]
    unsafe extern "C" fn reg_user_mr_c(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: ffi::c_int,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        // SAFETY: per the function's contract.
        unsafe { Self::reg_user_mr(pd, start, length, iova, access) }
    }
}
