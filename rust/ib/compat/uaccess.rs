// SPDX-License-Identifier: GPL-2.0

//! A user slice by address: a `usize` in 6.12, a `UserPtr` in 7.x.

use kernel::uaccess::UserSlice;

/// The user memory at `addr`, `len` bytes long.
pub(in crate::ib) fn user_slice(addr: usize, len: usize) -> UserSlice {
    #[cfg(rsoft_have_user_ptr_newtype)]
    let addr = kernel::uaccess::UserPtr::from_addr(addr);
    UserSlice::new(addr, len)
}
