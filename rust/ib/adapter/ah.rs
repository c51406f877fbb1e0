// SPDX-License-Identifier: GPL-2.0

//! The ops of address handles: the `ib` layer keeps each handle's address
//! ([`AhObject`]); the driver only admits or refuses it.

use super::Adapter;
use crate::ib::{
    ah::{Address, AhObject},
    bindings,
    device_data::OnDevice,
    verbs::Verbs,
};
use core::convert::Infallible;
use kernel::{error::from_result, ffi};

impl<T: Verbs> Adapter<T> {
    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.create_ah` or
    /// `create_user_ah`.
    pub(super) unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes an AH allocated with `size_ib_ah`
            // bytes, its device set, and a valid address vector.
            unsafe {
                let addr = Address::from_c(&*(*init).ah_attr)?;
                let dev = Self::device((*ah).device);
                T::new_ah(dev, &addr)?;
                let Ok(()) = AhObject::init::<Infallible>(ah, addr);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.destroy_ah`.
    pub(super) unsafe extern "C" fn destroy_ah(
        ah: *mut bindings::ib_ah,
        _flags: u32,
    ) -> ffi::c_int {
        // SAFETY: `ah` was initialised by `create_ah`; the core frees it
        // after this returns. Sends copy the address when posted, so no WQE
        // refers to it.
        unsafe {
            T::release_ah(Self::device((*ah).device));
            AhObject::drop_data(ah);
        }
        0
    }
}
