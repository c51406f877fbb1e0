// SPDX-License-Identifier: GPL-2.0

//! A C string's pointer in a constant: `CStr` is the kernel's own type in
//! 6.12 and `core::ffi::CStr` with an extension trait in 7.x.

use kernel::{ffi, str::CStr};

/// The C string of `s`, in a constant.
pub(in crate::ib) const fn c_str_ptr(s: &CStr) -> *const ffi::c_char {
    // `CStrExt::as_char_ptr`, which the kernel's lints point to, is no
    // `const fn`.
    #[cfg(rsoft_have_cstr_ext)]
    #[allow(clippy::disallowed_methods)]
    let ptr = s.as_ptr().cast();
    #[cfg(not(rsoft_have_cstr_ext))]
    let ptr = s.as_char_ptr();
    ptr
}
