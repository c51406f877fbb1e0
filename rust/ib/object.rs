// SPDX-License-Identifier: GPL-2.0

//! Objects whose memory the RDMA core allocates for the driver.
//!
//! The core allocates `ops.size_ib_<type>` zeroed bytes, fills in its own
//! struct at the start (`INIT_RDMA_OBJ_SIZE` requires it at offset 0) and
//! then calls the driver's create verb, which initialises the driver's part in
//! place. The core frees the memory after the destroy verb, so the driver's
//! part is dropped there, and never moved in between. The destroy verb
//! also waits for the object's holders ([`super::hold`]) first.

use super::{
    compat::init_in_place,
    gate::{Count, Gate},
};
use core::mem::{align_of, size_of};
use kernel::{prelude::*, types::Opaque};

/// What every core-allocated object starts with, whatever the driver's
/// type: the core's `C` (at offset 0, as `INIT_RDMA_OBJ_SIZE` requires)
/// and the count of the object's holders.
#[repr(C)]
#[pin_data]
pub(super) struct CoreHead<C> {
    #[pin]
    core: Opaque<C>,
    #[pin]
    holders: Gate,
    /// The work completions queued in the driver that name the object
    /// ([`super::qp::WcQp`]); closed, so never counting, but on a QP from
    /// its creation to its destroy. The core may free the object only once
    /// it is empty.
    cqes: Count,
}

impl<C> CoreHead<C> {
    /// The head of a core object.
    ///
    /// # Safety
    ///
    /// `core` is a live core-allocated object of the `ib` layer whose head
    /// is initialised, and stays so for `'a`.
    pub(super) unsafe fn of<'a>(core: *const C) -> &'a Self {
        // SAFETY: per the function's contract; the head is at offset 0.
        unsafe { &*core.cast::<Self>() }
    }

    pub(super) fn holders(&self) -> &Gate {
        &self.holders
    }

    pub(super) fn cqes(&self) -> &Count {
        &self.cqes
    }
}

/// The memory layout of one core-allocated object: its head, then `T`.
///
/// # Invariants
///
/// `head` is at offset 0 (`repr(C)`); while a [`CoreObject`] is reachable
/// through the core's pointer, `head` and `data` are initialised.
#[repr(C)]
#[pin_data]
pub(super) struct CoreObject<C, T> {
    #[pin]
    head: CoreHead<C>,
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

    /// Initialises the head of an object the core just set up, so that it
    /// can be held before its driver data exists.
    ///
    /// # Safety
    ///
    /// `core` points to an allocation of at least [`Self::SIZE`] bytes that
    /// the core allocated for this type and has not yet handed to the driver.
    pub(super) unsafe fn init_head(core: *mut C) {
        let head = pin_init!(CoreHead {
            // The core has already filled in its part: keep it as it is.
            core <- Opaque::ffi_init(|_| {}),
            holders <- Gate::new(),
            cqes: Count::closed(),
        });
        // SAFETY: per the function's contract `core` is the start of a
        // suitably sized, aligned allocation that nobody else uses yet, and
        // it stays where it is until the core frees it; the head is at
        // offset 0.
        let Ok(()) = unsafe { init_in_place(head, core.cast::<CoreHead<C>>()) };
    }

    /// Initialises the driver's part of an object whose head is
    /// initialised. On failure the object holds no driver data; holds made
    /// of it must be waited for ([`Self::wait_unheld`]) before the core may
    /// free it.
    ///
    /// # Safety
    ///
    /// `core` was passed to [`Self::init_head`] and its data is not
    /// initialised.
    pub(super) unsafe fn init_data<E>(core: *mut C, data: impl PinInit<T, E>) -> Result<(), E> {
        let this = core.cast::<Self>();
        // SAFETY: per the function's contract the data's place is allocated,
        // aligned and unused, and stays where it is until the core frees it
        // (after `drop_data`).
        unsafe { init_in_place(data, core::ptr::addr_of_mut!((*this).data)) }
    }

    /// Initialises an object the core just set up: its head, then its
    /// driver data.
    ///
    /// # Safety
    ///
    /// As for [`Self::init_head`].
    pub(super) unsafe fn init<E>(core: *mut C, data: impl PinInit<T, E>) -> Result<(), E> {
        // SAFETY: per the function's contract; no hold exists yet, so a
        // failure leaves nothing to wait for.
        unsafe {
            Self::init_head(core);
            Self::init_data(core, data)
        }
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

    /// Closes the object to new holders and waits until it has none left.
    /// Sleeps.
    ///
    /// # Safety
    ///
    /// `core` was passed to a successful [`Self::init`], and the core has
    /// not freed it.
    pub(super) unsafe fn wait_unheld(core: *mut C) {
        // SAFETY: per the function's contract the head is initialised.
        unsafe { (*core.cast::<Self>()).head.holders().close() };
    }

    /// Drops the driver's part, then waits until the object has no holder
    /// left: after this the core may free the memory. Sleeps.
    ///
    /// # Safety
    ///
    /// As for [`Self::data`], and no reference from it is still in use.
    pub(super) unsafe fn drop_data(core: *mut C) {
        let this = core.cast::<Self>();
        // SAFETY: by the contract `data` is initialised and unused; it is
        // dropped in place, never moved.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*this).data)) };
        // SAFETY: the head stays initialised until the core frees the
        // memory, which it does only after this returns.
        unsafe { Self::wait_unheld(core) };
    }
}
