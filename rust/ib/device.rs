// SPDX-License-Identifier: GPL-2.0

//! Registration of an RDMA device with the core.

use super::{bindings, object::CoreObject, verbs::Adapter, Verbs};
use core::ptr::{self, NonNull};
use kernel::{error::to_result, prelude::*, str::CStr};

/// How a device presents itself to the core, fixed before registration.
pub(crate) struct DeviceConfig {
    /// Name pattern; a `%d` is replaced by the first free index.
    pub(crate) name: &'static CStr,
    /// EUI-64 node GUID, host byte order.
    pub(crate) node_guid: u64,
    pub(crate) ports: u32,
    pub(crate) comp_vectors: u32,
}

/// The uverbs commands the core leaves out of its default mask; without them
/// these verbs answer EOPNOTSUPP to userspace even when the driver has them.
const DATA_PATH_CMDS: [u32; 5] = [
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POLL_CQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_RECV,
    bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SRQ_RECV,
];

/// A registered RDMA device whose verbs are those of `T`.
///
/// Dropping it unregisters the device (waiting for the core's users to go)
/// and frees it.
///
/// # Invariants
///
/// `ib` is an `ib_device` allocated with [`Adapter::<T>::DEVICE_SIZE`] bytes,
/// its driver data is initialised, and it is registered.
pub(crate) struct Registration<T: Verbs> {
    ib: NonNull<bindings::ib_device>,
    _verbs: core::marker::PhantomData<T>,
}

// SAFETY: the core allows unregistering a device from any thread, and the
// registration hands out no reference to the device.
unsafe impl<T: Verbs> Send for Registration<T> {}
// SAFETY: `&Registration` gives no access to anything.
unsafe impl<T: Verbs> Sync for Registration<T> {}

impl<T: Verbs> Registration<T> {
    /// Allocates a device, initialises its driver data and registers it.
    pub(crate) fn new(
        module: &'static ThisModule,
        config: &DeviceConfig,
        data: impl PinInit<T::Device, Error>,
    ) -> Result<Self> {
        // SAFETY: the size covers `ib_device` at offset 0 and the driver data.
        let raw = unsafe { bindings::_ib_alloc_device(Adapter::<T>::DEVICE_SIZE) };
        let ib = NonNull::new(raw).ok_or(ENOMEM)?;

        // SAFETY: `raw` is a fresh device of the right size.
        if let Err(e) = unsafe { CoreObject::<bindings::ib_device, T::Device>::init(raw, data) } {
            // SAFETY: allocated above, never registered, no driver data.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }

        // SAFETY: `raw` is allocated and not yet visible to anyone else.
        unsafe {
            bindings::ib_set_device_ops(raw, &Adapter::<T>::OPS);
            // The core pins this module while a process has the device open.
            (*raw).ops.owner = module.as_ptr().cast();
            (*raw).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*raw).node_guid = config.node_guid.to_be();
            (*raw).phys_port_cnt = config.ports;
            (*raw).num_comp_vectors = config.comp_vectors.try_into()?;
            for cmd in DATA_PATH_CMDS {
                (*raw).uverbs_cmd_mask |= 1u64 << cmd;
            }
        }

        // SAFETY: the device is fully set up; the name is NUL-terminated.
        // Without a DMA device the core uses virtual addresses
        // (CONFIG_INFINIBAND_VIRT_DMA), as a software device must.
        let ret = unsafe {
            bindings::ib_register_device(raw, config.name.as_char_ptr(), ptr::null_mut())
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: registration failed, so the core no longer calls into
            // the device; the caller of a failed registration deallocates.
            unsafe { Self::free(raw) };
            return Err(e);
        }
        // INVARIANT: allocated, initialised and registered above.
        Ok(Self {
            ib,
            _verbs: core::marker::PhantomData,
        })
    }

    /// Drops the driver data and frees the device.
    ///
    /// # Safety
    ///
    /// `raw` has initialised driver data and is not (or no longer) registered.
    unsafe fn free(raw: *mut bindings::ib_device) {
        // SAFETY: per the contract nothing reaches the driver data any more.
        unsafe {
            CoreObject::<bindings::ib_device, T::Device>::drop_data(raw);
            bindings::ib_dealloc_device(raw);
        }
    }
}

impl<T: Verbs> Drop for Registration<T> {
    fn drop(&mut self) {
        let raw = self.ib.as_ptr();
        // SAFETY: by the type invariant the device is registered; once
        // `ib_unregister_device` returns no verb runs or will run on it.
        unsafe {
            bindings::ib_unregister_device(raw);
            Self::free(raw);
        }
    }
}
