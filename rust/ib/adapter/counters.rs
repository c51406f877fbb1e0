// SPDX-License-Identifier: GPL-2.0

//! The ops of the per-port counters: the names are the driver's constant
//! [`Verbs::PORT_COUNTERS`], the values it reads when the core asks.

use super::Adapter;
use crate::ib::{bindings, device_data::OnDevice, verbs::Verbs};
use kernel::ffi;

impl<T: Verbs> Adapter<T> {
    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.alloc_hw_port_stats`.
    pub(super) unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let descs = T::PORT_COUNTERS;
        let Ok(num) = ffi::c_int::try_from(descs.len()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: `descs` is a `'static` array of `num` descriptors
        // (`CounterDesc` is transparent), which the core only reads. A NULL
        // result tells the core there are no counters.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                descs.as_ptr().cast(),
                num,
                bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as ffi::c_ulong,
            )
        }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.get_hw_stats`.
    pub(super) unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: ffi::c_int,
    ) -> ffi::c_int {
        // SAFETY: `stats` came from `alloc_hw_port_stats`: it has
        // `num_counters` values, and the core holds its lock.
        let values = unsafe {
            let num = usize::try_from((*stats).num_counters).unwrap_or(0);
            core::slice::from_raw_parts_mut((*stats).value.as_mut_ptr(), num)
        };
        // SAFETY: the core calls this on our device.
        T::port_counters(unsafe { Self::device(ib) }, port, values);
        // Every value is fresh.
        values.len().try_into().unwrap_or(0)
    }
}
