// SPDX-License-Identifier: GPL-2.0

//! What the `ib` layer keeps behind each `ib_device`: its own part (the
//! list the device is on, its link layer, the port state last announced),
//! then the driver's, and the list itself.
//!
//! Every op of a device reaches the driver's data from here. The data is
//! typed by the driver's device type alone, not by its whole [`super::Verbs`],
//! so that each kind of object can route its ops without naming the others.

use super::{
    attr::LinkLayer,
    bindings,
    compat::swap_remove,
    netdev::{EthLink, NetDevRef},
    object::CoreObject,
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::AtomicBool,
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// A device of the list, by the core's pointer.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Listed(NonNull<bindings::ib_device>);

// SAFETY: only an address; whoever dereferences it proves it live.
unsafe impl Send for Listed {}

/// The registered devices of one driver.
#[pin_data]
pub(super) struct DeviceList {
    #[pin]
    devices: Mutex<KVec<Listed>>,
}

impl DeviceList {
    pub(super) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                devices <- new_mutex!(KVec::new(), "rsoft_devices"),
            }),
            GFP_KERNEL,
        )
    }

    /// Lists `ib`, a device being registered whose data is a
    /// [`DeviceData`] of this driver.
    pub(super) fn add(&self, ib: NonNull<bindings::ib_device>) -> Result {
        Ok(self.devices.lock().push(Listed(ib), GFP_KERNEL)?)
    }

    /// The device listed last, held.
    pub(super) fn hold_last(&self) -> Option<HeldDevice> {
        let devices = self.devices.lock();
        let last = devices.last()?.0;
        // SAFETY: a listed device has not reached `dealloc_driver` (which
        // unlists it under this lock), so the core has not dropped its
        // reference; this one keeps the memory.
        unsafe { bindings::rsoft_ib_device_hold(last.as_ptr()) };
        // INVARIANT: held just now.
        Some(HeldDevice(last))
    }

    /// Whether `ib` is a device of the list, that is, a live device whose
    /// driver data is a [`DeviceData`] of this driver.
    pub(super) fn contains(&self, ib: *const bindings::ib_device) -> bool {
        self.devices
            .lock()
            .iter()
            .any(|d| ptr::eq(d.0.as_ptr(), ib))
    }

    pub(super) fn remove(&self, ib: *mut bindings::ib_device) {
        let mut devices = self.devices.lock();
        if let Some(i) = devices.iter().position(|d| d.0.as_ptr() == ib) {
            swap_remove(&mut devices, i);
        }
    }
}

/// A reference on a device's memory (`rsoft_ib_device_hold`), put back
/// when dropped.
///
/// # Invariants
///
/// `0` is a device on which this value holds one reference.
pub(super) struct HeldDevice(NonNull<bindings::ib_device>);

impl HeldDevice {
    pub(super) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.0.as_ptr()
    }
}

impl Drop for HeldDevice {
    fn drop(&mut self) {
        // SAFETY: by the type invariant this value holds a reference.
        unsafe { bindings::rsoft_ib_device_unhold(self.0.as_ptr()) };
    }
}

/// The `ib` layer's part of a device, then the driver's `D`.
#[pin_data]
pub(super) struct DeviceData<D> {
    pub(super) list: Arc<DeviceList>,
    pub(super) link_layer: LinkLayer,
    /// The port state last announced with a port event.
    pub(super) port_up: AtomicBool,
    #[pin]
    pub(super) driver: D,
}

/// A device whose driver data is a `D`.
pub(super) type DeviceObject<D> = CoreObject<bindings::ib_device, DeviceData<D>>;

/// The driver's data of a device.
///
/// # Safety
///
/// `ib` is a device registered (or being registered) by
/// [`super::Devices`] whose driver data is a `D`: any device that one of
/// the core's calls names, in an op of the table built for `D`'s driver.
pub(super) unsafe fn driver<'a, D>(ib: *const bindings::ib_device) -> &'a D {
    // SAFETY: the registration initialised the device data before
    // registering, and `dealloc_driver`, the core's last call, drops it,
    // so it is live during any other callback of the core.
    &unsafe { DeviceObject::<D>::data(ib) }.get_ref().driver
}

/// The `ib` layer's side of one kind of object: its ops find the driver's
/// data of the device they are called on.
///
/// # Safety
///
/// The implementor's ops are only in tables built for a driver whose
/// device data is a [`Self::Device`](OnDevice::Device).
pub(super) unsafe trait OnDevice {
    /// The driver's data of every device the ops are called on.
    type Device;

    /// The driver's data of `ib`.
    ///
    /// # Safety
    ///
    /// `ib` is the device of an object (or the device itself) that the
    /// core handed to one of the implementor's ops.
    unsafe fn device<'a>(ib: *const bindings::ib_device) -> &'a Self::Device
    where
        Self::Device: 'a,
    {
        // SAFETY: by the trait's contract the ops run only on devices
        // whose data is a `Self::Device`, and `ib` is one of them.
        unsafe { driver(ib) }
    }
}

/// The link of port `port`: its netdev's state on a RoCE port, `None` on
/// an InfiniBand port.
///
/// # Safety
///
/// As for [`driver`], and `port` is a port of `ib`.
pub(super) unsafe fn link<D>(ib: *mut bindings::ib_device, port: u32) -> Option<EthLink> {
    // SAFETY: per the function's contract.
    let data = unsafe { DeviceObject::<D>::data(ib) };
    if data.link_layer == LinkLayer::InfiniBand {
        return None;
    }
    // SAFETY: per the function's contract. A netdev on its way out
    // leaves the port down.
    let netdev = unsafe { NetDevRef::of_port(ib, port) };
    Some(netdev.map_or(EthLink { up: false, mtu: 0 }, |n| n.link()))
}

/// # Safety
///
/// Only the RDMA core calls this, as `ib_device_ops.dealloc_driver` of a
/// device whose driver data is a `D`.
pub(super) unsafe extern "C" fn dealloc_driver<D>(ib: *mut bindings::ib_device) {
    // SAFETY: the core calls this once, when nothing runs on the device any
    // more and just before it frees it; the data was initialised before the
    // ops (and so this op) were set.
    unsafe {
        DeviceObject::<D>::data(ib).list.remove(ib);
        DeviceObject::<D>::drop_data(ib);
    }
}
