// SPDX-License-Identifier: GPL-2.0

//! Objects whose memory the RDMA core allocates for the driver.
//!
//! The core allocates `ops.size_ib_<type>` zeroed bytes, fills in its own
//! struct at the start (`INIT_RDMA_OBJ_SIZE` requires it at offset 0) and
//! then calls the driver's create verb, which initialises the driver's part in
//! place. The core frees the memory after the destroy verb, so the driver's
//! part is dropped there, and never moved in between.

use core::mem::{align_of, size_of};
use kernel::{init::PinInit, prelude::*, types::Opaque};

/// The memory layout of one core-allocated object: the core's `C`, then `T`.
///
/// # Invariants
///
/// `core` is at offset 0 (`repr(C)`); while a [`CoreObject`] is reachable
/// through the core's pointer, `data` is initialised.
#[repr(C)]
#[pin_data]
pub(super) struct CoreObject<C, T> {
    #[pin]
    core: Opaque<C>,
    #[pin]
    data: T,
}

impl<C, T> CoreObject<C, T> {
    /// What the core must allocate (`ops.size_ib_<type>`).
    pub(super) const SIZE: usize = {
        // kzalloc() guarantees no more alignment than a pointer's.
        assert!(align_of::<Self>() <= align_of::<u64>());
        size_of::<Self>()
    };

    /// Initialises the driver's part of an object the core just set up.
    ///
    /// # Safety
    ///
    /// `core` points to an allocation of at least [`Self::SIZE`] bytes that
    /// the core allocated for this type and has not yet handed to the driver.
    pub(super) unsafe fn init(core: *mut C, data: impl PinInit<T, Error>) -> Result {
        let init = try_pin_init!(Self {
            // The core has already filled in its part: keep it as it is.
            core <- Opaque::ffi_init(|_| {}),
            data <- data,
        }? Error);
        // SAFETY: per the function's contract `core` is the start of a
        // suitably sized, aligned allocation that nobody else uses yet, and
        // it stays where it is until the core frees it (after `drop_data`).
        unsafe { init.__pinned_init(core.cast::<Self>()) }
    }

    /// Returns the driver's part of a live object.
    ///
    /// # Safety
    ///
    /// `core` was passed to a successful [`Self::init`] and not yet to
    /// [`Self::drop_data`]; the returned reference does not outlive that.
    pub(super) unsafe fn data<'a>(core: *const C) -> Pin<&'a T> {
        let this = core.cast::<Self>();
        // SAFETY: by the contract, `this` points to an initialised object
        // that is pinned in the core's allocation.
        unsafe { Pin::new_unchecked(&(*this).data) }
    }

    /// Drops the driver's part before the core frees the memory.
    ///
    /// # Safety
    ///
    /// As for [`Self::data`], and no reference from it is still in use.
    pub(super) unsafe fn drop_data(core: *mut C) {
        let this = core.cast::<Self>();
        // SAFETY: by the contract `data` is initialised and unused; it is
        // dropped in place, never moved.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).data)) };
    }
}
