// SPDX-License-Identifier: GPL-2.0

//! Module parameters, read through the `ib` layer and checked here.

use crate::ib::{self, Provider};
use kernel::prelude::*;

/// The `devices` parameter: how many devices to register.
pub(crate) fn devices() -> u32 {
    ib::param_devices()
}

/// The `provider` parameter: which stock provider opens the devices.
pub(crate) fn provider() -> Result<Provider> {
    match ib::param_provider() {
        0 => Ok(Provider::Qib),
        1 => Ok(Provider::Hfi1),
        _ => {
            pr_err!("provider= must be qib or hfi1\n");
            Err(EINVAL)
        }
    }
}
