// SPDX-License-Identifier: GPL-2.0

//! A kernel timer embedded in a reference-counted owner. While armed the
//! timer holds a reference to its owner, which it hands to the owner's
//! [`OnTimer::fire`]; so the owner outlives every armed timer whatever
//! safe code does, and cancelling gives the reference back. An owner names
//! its timer field with [`impl_has_timer!`](crate::impl_has_timer), which
//! checks the field's type, and says what a firing does with [`OnTimer`].

use super::bindings;
use core::marker::PhantomData;
use kernel::{prelude::*, sync::Arc, types::Opaque};

/// An owner of a [`Timer`] field; implemented by
/// [`impl_has_timer!`](crate::impl_has_timer).
///
/// # Safety
///
/// `OFFSET` is the offset in `Self` of a field of type `Timer<Self>`.
pub(crate) unsafe trait HasTimer: Send + Sync + Sized {
    const OFFSET: usize;
}

/// What a [`Timer`] of its owner does when it goes off.
pub(crate) trait OnTimer: HasTimer {
    /// The timer went off. Runs in softirq context: it must not sleep.
    fn fire(this: Arc<Self>);
}

/// Implements [`HasTimer`] for `$owner` with its field `$field`, which
/// must be a `Timer<$owner>`: the field's type is checked here, which is
/// what the trait's safety contract asks.
#[macro_export]
macro_rules! impl_has_timer {
    ($owner:ty, $field:ident) => {
        // SAFETY: `OFFSET` is the offset of `$field`, a `Timer<$owner>` as
        // the function below proves by compiling.
        unsafe impl $crate::ib::HasTimer for $owner {
            const OFFSET: usize = ::core::mem::offset_of!($owner, $field);
        }

        const _: () = {
            #[allow(dead_code)]
            fn field_is_the_timer(owner: &$owner) -> &$crate::ib::Timer<$owner> {
                &owner.$field
            }
        };
    };
}

/// A timer that fires [`HasTimer::fire`] of the `T` it is a field of.
/// Transparent: the C timer is at the start of it.
#[pin_data]
#[repr(transparent)]
pub(crate) struct Timer<T> {
    #[pin]
    raw: Opaque<bindings::timer_list>,
    _owner: PhantomData<T>,
}

// SAFETY: the timer is only armed and cancelled through the kernel's timer
// API, which serialises itself; `T` is `Send + Sync` (`HasTimer`).
unsafe impl<T: OnTimer> Send for Timer<T> {}
// SAFETY: as for `Send`: `&Timer` gives only the kernel's own thread-safe
// operations.
unsafe impl<T: OnTimer> Sync for Timer<T> {}

impl<T: OnTimer> Timer<T> {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `timer_setup` initialises the timer in place, and it
            // is never moved afterwards (pinned).
            raw <- Opaque::ffi_init(|slot: *mut bindings::timer_list| unsafe {
                bindings::rsoft_timer_setup(slot, Some(Self::run))
            }),
            _owner: PhantomData,
        })
    }

    /// The timer of `owner`.
    fn of(owner: *const T) -> *mut bindings::timer_list {
        // `HasTimer` places a `Timer<T>` at `OFFSET`, and a `Timer` is its
        // C timer (transparent).
        owner
            .cast::<u8>()
            .wrapping_add(T::OFFSET)
            .cast::<bindings::timer_list>()
            .cast_mut()
    }

    /// Arms the timer of `owner` to fire in `us` microseconds, or moves an
    /// armed one there.
    pub(crate) fn arm(owner: &Arc<T>, us: u64) {
        let held = Arc::into_raw(owner.clone());
        // SAFETY: the timer is initialised (pinned in `owner`, alive while
        // `owner` is).
        if unsafe { bindings::rsoft_timer_arm(Self::of(held), us) } {
            // It was armed already, holding a reference of its own.
            // SAFETY: `held` comes from `Arc::into_raw` just above and was
            // handed to nobody.
            drop(unsafe { Arc::from_raw(held) });
        }
    }

    /// Disarms the timer of `owner`, and waits for a firing that runs.
    /// Sleeps. The caller's `owner` keeps `owner` alive while the
    /// reference the timer held is dropped.
    pub(crate) fn cancel(owner: &Arc<T>) {
        let this: *const T = &**owner;
        // SAFETY: the timer is initialised, and alive while `owner` is.
        if unsafe { bindings::rsoft_timer_cancel(Self::of(this)) } {
            // SAFETY: it was armed, so it held the reference `arm` made
            // with `Arc::into_raw` of this same owner; it is taken back
            // once, here, since the timer can no longer fire.
            drop(unsafe { Arc::from_raw(this) });
        }
    }

    /// The timer's C callback.
    ///
    /// # Safety
    ///
    /// Called by the kernel alone, for a timer [`Self::new`] set up and
    /// [`Self::arm`] armed.
    unsafe extern "C" fn run(raw: *mut bindings::timer_list) {
        let owner = raw.cast::<u8>().wrapping_sub(T::OFFSET).cast::<T>();
        // SAFETY: `raw` is the timer of a `T` at `OFFSET` (`HasTimer`), and
        // it fires only when armed, so it owns a reference to that `T`,
        // made by `Arc::into_raw` in `arm`; this takes it back.
        T::fire(unsafe { Arc::from_raw(owner) });
    }
}
