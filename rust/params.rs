// SPDX-License-Identifier: GPL-2.0

//! Module parameters. `module_param()` is a C macro, so they are declared in
//! `include/rsoft_shims.c` and read from here.

extern "C" {
    fn rsoft_param_devices() -> u32;
}

/// The `devices` parameter: how many devices to register.
pub(crate) fn devices() -> u32 {
    // SAFETY: a plain read of a read-only (0444) parameter.
    unsafe { rsoft_param_devices() }
}
