// SPDX-License-Identifier: GPL-2.0

//! Module parameters. `module_param()` is a C macro, so they are declared in
//! `include/rsoft_shims.c` and read from here.

use crate::ib::Provider;
use kernel::prelude::*;

extern "C" {
    fn rsoft_param_devices() -> u32;
    fn rsoft_param_provider() -> i32;
}

/// The `devices` parameter: how many devices to register.
pub(crate) fn devices() -> u32 {
    // SAFETY: a plain read of a read-only (0444) parameter.
    unsafe { rsoft_param_devices() }
}

/// The `provider` parameter: which stock provider opens the devices.
pub(crate) fn provider() -> Result<Provider> {
    // SAFETY: a plain read of a read-only (0444) parameter.
    match unsafe { rsoft_param_provider() } {
        0 => Ok(Provider::Qib),
        1 => Ok(Provider::Hfi1),
        _ => {
            pr_err!("provider= must be qib or hfi1\n");
            Err(EINVAL)
        }
    }
}
