// SPDX-License-Identifier: GPL-2.0

//! A spinlock that disables local interrupts while held
//! (`spin_lock_irqsave`), for state that kernel consumers reach from
//! softirq and hardirq context (CQ polling, completion generation).

use super::bindings;
use kernel::{
    ffi,
    sync::lock::{Backend, Lock},
};

/// A [`Lock`] whose guard holds the lock with local interrupts disabled.
pub(crate) type IrqSpinLock<T> = Lock<T, IrqSpinLockBackend>;

/// Creates an [`IrqSpinLock`] initialiser with its own lockdep class.
#[macro_export]
macro_rules! new_irq_spinlock {
    ($data:expr, $name:literal) => {
        $crate::ib::IrqSpinLock::new(
            $data,
            ::kernel::c_str!($name),
            ::kernel::static_lock_class!(),
        )
    };
}

/// The backend of [`IrqSpinLock`]: `spinlock_t` with saved IRQ flags.
pub(crate) struct IrqSpinLockBackend;

// SAFETY: `lock` and `unlock` map to spin_lock_irqsave/spin_unlock_irqrestore,
// which give mutual exclusion; the guard state is the saved IRQ flags that
// `unlock` must restore.
unsafe impl Backend for IrqSpinLockBackend {
    type State = bindings::spinlock_t;
    type GuardState = ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: the caller guarantees `ptr` is valid for writes and that
        // `name` and `key` live forever; `LockClassKey` wraps the very same
        // C type bindgen generated twice.
        unsafe { bindings::rsoft_spin_lock_init(ptr, name, key.cast()) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller guarantees `init` was called on `ptr`.
        unsafe { bindings::rsoft_spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: the caller owns the lock, and `flags` came from `lock`.
        unsafe { bindings::rsoft_spin_unlock_irqrestore(ptr, *flags) }
    }

    // Newer kernels' backends must offer these too (`compat`'s probe).
    #[cfg(rsoft_have_lock_backend_try)]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags = 0;
        // SAFETY: the caller guarantees `init` was called on `ptr`.
        unsafe { bindings::rsoft_spin_trylock_irqsave(ptr, &mut flags) }.then_some(flags)
    }

    #[cfg(rsoft_have_lock_backend_try)]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: the caller guarantees `init` was called on `ptr`.
        unsafe { bindings::rsoft_spin_assert_held(ptr) }
    }
}
