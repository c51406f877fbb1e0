// SPDX-License-Identifier: GPL-2.0

//! `KVec::pop`, which 6.12's kernel crate lacks (7.x dropped the
//! `set_len` it would be written with).

use kernel::alloc::KVec;

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
