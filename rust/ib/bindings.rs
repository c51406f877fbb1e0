// SPDX-License-Identifier: GPL-2.0

//! Bindings for `include/rsoft_bindings.h`, generated at build time by
//! `tools/gen-bindings.sh` with the kernel's own bindgen command line.

#![allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    // Newer kernels warn of these, which bindgen's bitfield accessors have.
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    unknown_lints,
    unnecessary_transmutes
)]

use kernel::ffi;

// Blocklisted by the kernel's bindgen parameters, defined as the kernel does.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

include!("bindings_generated.rs");
