// SPDX-License-Identifier: GPL-2.0

//! Running an initialiser in place: through `PinInit::__pinned_init` in
//! 6.12, through the pin-init crate's `raw_try_init` in 7.x.

use kernel::prelude::*;

/// Runs `init` on `slot`.
///
/// # Safety
///
/// As for `PinInit`'s own initialisation: `slot` is valid for writes, not
/// initialised, and does not move until dropped; after an error it is
/// only deallocated.
pub(in crate::ib) unsafe fn init_in_place<T, E>(
    init: impl PinInit<T, E>,
    slot: *mut T,
) -> Result<(), E> {
    // SAFETY: per the function's contract.
    #[cfg(rsoft_have_pin_init_raw_try_init)]
    let done = unsafe { pin_init::raw_try_init(slot, init) };
    // SAFETY: per the function's contract.
    #[cfg(not(rsoft_have_pin_init_raw_try_init))]
    let done = unsafe { init.__pinned_init(slot) };
    done
}
