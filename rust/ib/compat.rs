// SPDX-License-Identifier: GPL-2.0

//! What differs between the kernels rsoft builds for (6.12 LTS and 7.x),
//! in one folder, a file per difference. The `rsoft_have_*`
//! configurations are what `tools/kernel-features.sh` found the kernel to
//! offer (probed, not read off a version, so that backports count); the C
//! shims take the C-side differences. Outside this folder only the lock
//! backend (`irq_lock.rs`) names one: a trait's methods are implemented
//! where its `impl` is.

mod cstr;
mod kvec;
mod ops;
mod pin_init;
mod uaccess;

pub(super) use cstr::c_str_ptr;
pub(crate) use kvec::swap_remove;
pub(super) use ops::{with_reg_user_mr, with_resize_cq, RegUserMr, ResizeCq};
pub(super) use pin_init::init_in_place;
pub(super) use uaccess::user_slice;
