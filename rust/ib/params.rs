// SPDX-License-Identifier: GPL-2.0

//! The module's parameters as C holds them: `module_param()` is a C macro,
//! so they are declared in `include/rsoft_shims.c`, and read here.

extern "C" {
    fn rsoft_param_devices() -> u32;
    fn rsoft_param_provider() -> i32;
}

/// The `devices` parameter as given.
pub(crate) fn param_devices() -> u32 {
    // SAFETY: a plain read of a read-only (0444) parameter.
    unsafe { rsoft_param_devices() }
}

/// The `provider` parameter as given: the index of its name.
pub(crate) fn param_provider() -> i32 {
    // SAFETY: a plain read of a read-only (0444) parameter.
    unsafe { rsoft_param_provider() }
}
