// SPDX-License-Identifier: GPL-2.0

//! Registration of RDMA devices with the core, and the list of a driver's
//! devices that unregisters them when the driver goes.
//!
//! A registered device belongs to the core from then on: `rdma link delete`
//! or the removal of its netdev may unregister it at any time, and the core
//! calls `dealloc_driver` once nothing runs on it any more. That is where
//! the driver's data is dropped and the device leaves the list.

use super::{
    adapter::Adapter,
    attr::LinkLayer,
    bindings,
    device_data::{DeviceData, DeviceList, DeviceObject},
    netdev::NetDev,
    Verbs,
};
use core::{
    marker::PhantomData,
    ptr::{self, NonNull},
    sync::atomic::AtomicBool,
};
use kernel::{error::to_result, prelude::*, str::CStr, sync::Arc};

/// How a device presents itself to the core, fixed before registration.
pub(crate) struct DeviceConfig<'a> {
    /// Name; a `%d` is replaced by the first free index.
    pub(crate) name: &'a CStr,
    /// EUI-64 node GUID, host byte order.
    pub(crate) node_guid: u64,
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

/// The devices of a driver whose verbs are those of `T`. Dropping it
/// unregisters every device still registered (waiting for the core's users
/// of each to go).
pub(crate) struct Devices<T: Verbs> {
    list: Arc<DeviceList>,
    module: &'static ThisModule,
    provider: Provider,
    _verbs: PhantomData<T>,
}

/// The stock rdma-core provider that opens the devices. Stock rdma-core
/// has no provider for a new driver id; the two whose every verb can go
/// through the kernel (uverbs ABI 1) are qib's and hfi1's, the same code.
#[derive(Clone, Copy)]
pub(crate) enum Provider {
    /// `libipathverbs`, as driver `RDMA_DRIVER_QIB`.
    Qib,
    /// `libhfi1verbs`, as driver `RDMA_DRIVER_HFI1`: for the day rdma-core
    /// drops `ipathverbs`.
    Hfi1,
}

impl Provider {
    fn driver_id(self) -> bindings::rdma_driver_id {
        match self {
            Self::Qib => bindings::rdma_driver_id_RDMA_DRIVER_QIB,
            Self::Hfi1 => bindings::rdma_driver_id_RDMA_DRIVER_HFI1,
        }
    }
}

impl<T: Verbs> Devices<T> {
    pub(crate) fn new(module: &'static ThisModule, provider: Provider) -> Result<Self> {
        Ok(Self {
            list: DeviceList::new()?,
            module,
            provider,
            _verbs: PhantomData,
        })
    }

    pub(super) fn list(&self) -> &Arc<DeviceList> {
        &self.list
    }

    /// Allocates a device, initialises its driver data and registers it,
    /// with its one port bound to `netdev` (a RoCE port) or not (an
    /// InfiniBand port).
    pub(crate) fn register(
        &self,
        config: &DeviceConfig<'_>,
        netdev: Option<&NetDev>,
        data: impl PinInit<T::Device, Error>,
    ) -> Result {
        // SAFETY: the size covers `ib_device` at offset 0 and the driver data.
        let raw = unsafe { bindings::rsoft_alloc_ib_device(DeviceObject::<T::Device>::SIZE) };
        let Some(ib) = NonNull::new(raw) else {
            return Err(ENOMEM);
        };
        let (link_layer, up) = match netdev {
            Some(n) => (LinkLayer::Ethernet, n.link().up),
            None => (LinkLayer::InfiniBand, true),
        };
        let data = try_pin_init!(DeviceData {
            list: self.list.clone(),
            link_layer,
            port_up: AtomicBool::new(up),
            driver <- data,
        }? Error);
        // SAFETY: `raw` is a fresh device of the right size.
        if let Err(e) = unsafe { DeviceObject::<T::Device>::init(raw, data) } {
            // SAFETY: allocated above, never registered, no driver data:
            // `dealloc_driver` is not set yet.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }

        // SAFETY: `raw` is allocated and not yet visible to anyone else. Its
        // data was initialised above as the `DeviceData<T::Device>` that
        // `Adapter::<T>::OPS` expects of every device it is set on.
        unsafe {
            bindings::ib_set_device_ops(raw, &Adapter::<T>::OPS);
            // The core pins this module while a process has the device open.
            (*raw).ops.owner = self.module.as_ptr().cast();
            (*raw).ops.driver_id = self.provider.driver_id();
            (*raw).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*raw).node_guid = config.node_guid.to_be();
            (*raw).phys_port_cnt = 1;
            (*raw).num_comp_vectors = config.comp_vectors.try_into()?;
            for cmd in DATA_PATH_CMDS {
                (*raw).uverbs_cmd_mask |= 1u64 << cmd;
            }
        }
        if let Some(netdev) = netdev {
            // SAFETY: the core holds `netdev` for the call we are in; the
            // device takes its own reference.
            let ret = unsafe { bindings::ib_device_set_netdev(raw, netdev.as_ptr(), 1) };
            if let Err(e) = to_result(ret) {
                // SAFETY: never registered; `dealloc_driver` drops the data.
                unsafe { bindings::ib_dealloc_device(raw) };
                return Err(e);
            }
        }
        // Listed before it is registered: once registered, anyone may
        // unregister it, and `dealloc_driver` unlists it.
        if let Err(e) = self.list.add(ib) {
            // SAFETY: never registered; `dealloc_driver` drops the data.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }

        // SAFETY: the device is fully set up; the name is NUL-terminated.
        // Without a DMA device the core uses virtual addresses
        // (CONFIG_INFINIBAND_VIRT_DMA), as a software device must.
        let ret = unsafe {
            bindings::ib_register_device(raw, config.name.as_char_ptr(), ptr::null_mut())
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: registration failed, so the core no longer calls into
            // the device; the caller of a failed registration deallocates,
            // which unlists it and drops the data (`dealloc_driver`).
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        Ok(())
    }
}

impl<T: Verbs> Drop for Devices<T> {
    fn drop(&mut self) {
        while let Some(next) = self.list.hold_last() {
            // SAFETY: held. Unregistering a device that is being or has
            // been unregistered by someone else waits for that, and either
            // way `dealloc_driver` has run when this returns.
            unsafe { bindings::ib_unregister_device(next.as_ptr()) };
            // Only a device whose registration never finished could still
            // be listed; never loop on it.
            self.list.remove(next.as_ptr());
        }
    }
}
