// SPDX-License-Identifier: GPL-2.0

//! RoCE links: `rdma link add NAME type TYPE netdev DEV` creates a device
//! bound to a netdev (`rdma_link_ops`), and the netdev's events reach the
//! device: its removal unregisters the device, carrier and MTU changes
//! reach the driver and the port's consumers (`IB_EVENT_PORT_ACTIVE`,
//! `IB_EVENT_PORT_ERR`).

use super::{
    bindings,
    device::Devices,
    device_data::DeviceObject,
    netdev::{EthLink, NetDev},
    Verbs,
};
use core::{
    ffi::c_void,
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    error::{from_result, to_result},
    ffi,
    prelude::*,
    str::CStr,
    sync::Arc,
    types::Opaque,
};

/// A driver whose devices can be created on netdevs.
pub(crate) trait LinkOps: Verbs {
    /// The link type `rdma link add` names.
    const LINK_TYPE: &'static CStr;
    /// What the devices of all links share.
    type Links: Send + Sync;

    /// Registers a device named `name` on `netdev` in `devices`.
    fn new_link(
        links: &Self::Links,
        devices: &Devices<Self>,
        name: &CStr,
        netdev: &NetDev,
    ) -> Result;

    /// The netdev of the port of `dev` changed state or MTU.
    fn link_changed(dev: &Self::Device, link: EthLink);

    /// The netdev of the port of `dev` is being unregistered, which waits
    /// for every reference to it: the driver lets go of those it keeps.
    /// The device itself is unregistered next.
    fn link_gone(dev: &Self::Device);
}

/// The one link registration of the module, for `newlink`, which the core
/// calls without a context.
static LINKS: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

#[pin_data]
struct LinksInner<T: LinkOps> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    #[pin]
    notifier: Opaque<bindings::notifier_block>,
    devices: Arc<Devices<T>>,
    links: T::Links,
}

/// The link type of `T`, registered with the core while this lives (only
/// a fully registered one is ever made, so dropping it unregisters).
pub(crate) struct Links<T: LinkOps> {
    inner: Pin<KBox<LinksInner<T>>>,
}

// SAFETY: the core's structs in `LinksInner` are touched only by the core,
// under its own locks, from whichever thread; the other fields are `Send`
// and `Sync` by the trait's and `Devices`' bounds.
unsafe impl<T: LinkOps> Send for Links<T> {}
// SAFETY: as for `Send`; `&Links` gives no access to anything.
unsafe impl<T: LinkOps> Sync for Links<T> {}

impl<T: LinkOps> Links<T> {
    /// Registers the link type; the devices of links are added to `devices`.
    pub(crate) fn new(devices: Arc<Devices<T>>, links: T::Links) -> Result<Self> {
        let inner = KBox::pin_init(
            pin_init!(LinksInner {
                ops <- Opaque::ffi_init(|ops: *mut bindings::rdma_link_ops| {
                    // SAFETY: `ops` is this field's place, zeroed below.
                    unsafe {
                        ops.write(core::mem::zeroed());
                        (*ops).type_ = T::LINK_TYPE.as_char_ptr();
                        (*ops).newlink = Some(Self::newlink);
                    }
                }),
                notifier <- Opaque::ffi_init(|nb: *mut bindings::notifier_block| {
                    // SAFETY: as above.
                    unsafe {
                        nb.write(core::mem::zeroed());
                        (*nb).notifier_call = Some(Self::netdev_event);
                    }
                }),
                devices,
                links,
            }),
            GFP_KERNEL,
        )?;
        let this = ptr::from_ref(&*inner).cast_mut().cast::<c_void>();
        if LINKS
            .compare_exchange(ptr::null_mut(), this, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        // SAFETY: the notifier block is pinned in `inner` and unregistered
        // before it is freed (`Links::drop`).
        let ret = unsafe { bindings::rsoft_netdev_notifier_register(inner.notifier.get()) };
        if let Err(e) = to_result(ret) {
            LINKS.store(ptr::null_mut(), Ordering::Release);
            return Err(e);
        }
        // SAFETY: as for the notifier; `LINKS` points to `inner` from now on.
        unsafe { bindings::rdma_link_register(inner.ops.get()) };
        Ok(Self { inner })
    }

    /// # Safety
    ///
    /// Only the core calls this, as `rdma_link_ops.newlink`, with the link
    /// type registered: `LINKS` points to a live `LinksInner<T>`.
    unsafe extern "C" fn newlink(
        name: *const ffi::c_char,
        ndev: *mut bindings::net_device,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core calls this under its link lock, which
            // `rdma_link_unregister` takes before `LINKS` is cleared and
            // the registration freed; it holds `ndev` and passes a
            // NUL-terminated name for the call.
            let (this, name, netdev) = unsafe {
                (
                    &*LINKS.load(Ordering::Acquire).cast::<LinksInner<T>>(),
                    CStr::from_char_ptr(name),
                    NetDev::from_raw(ndev),
                )
            };
            if this.device_of(netdev, |_| ()).is_some() {
                return Err(EEXIST);
            }
            T::new_link(&this.links, &this.devices, name, netdev)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the core calls this, as the `notifier_call` of the block
    /// registered by [`Links::new`], with that netdev event's info.
    unsafe extern "C" fn netdev_event(
        nb: *mut bindings::notifier_block,
        event: ffi::c_ulong,
        info: *mut c_void,
    ) -> ffi::c_int {
        // SAFETY: `nb` is the `notifier` of a live `LinksInner<T>`, which
        // unregisters it before going; the core holds the event's netdev.
        let (this, netdev) = unsafe {
            let this = &*kernel::container_of!(
                nb.cast::<Opaque<bindings::notifier_block>>(),
                LinksInner<T>,
                notifier
            );
            (this, NetDev::from_raw(bindings::rsoft_netdev_of(info)))
        };
        let Ok(event) = u32::try_from(event) else {
            return bindings::NOTIFY_DONE as ffi::c_int;
        };
        this.device_of(netdev, |ib| match event {
            bindings::netdev_cmd_NETDEV_UNREGISTER => {
                // SAFETY: `ib` is registered and held for the call, and a
                // listed device's data is a `DeviceData` of `T`.
                unsafe {
                    T::link_gone(&DeviceObject::<T::Device>::data(ib).get_ref().driver);
                    bindings::ib_unregister_device_queued(ib);
                }
            }
            bindings::netdev_cmd_NETDEV_UP
            | bindings::netdev_cmd_NETDEV_DOWN
            | bindings::netdev_cmd_NETDEV_CHANGE
            | bindings::netdev_cmd_NETDEV_CHANGEMTU => {
                // SAFETY: as above; a listed device's data is a `DeviceData`
                // of `T`, live while the device is registered.
                unsafe { Self::link_changed(ib, netdev.link()) };
            }
            _ => {}
        });
        bindings::NOTIFY_DONE as ffi::c_int
    }

    /// Tells the driver and the port's consumers about `link`.
    ///
    /// # Safety
    ///
    /// `ib` is a registered device of `T`, held for the call.
    unsafe fn link_changed(ib: *mut bindings::ib_device, link: EthLink) {
        // SAFETY: per the function's contract.
        let data = unsafe { DeviceObject::<T::Device>::data(ib) }.get_ref();
        T::link_changed(&data.driver, link);
        if data.port_up.swap(link.up, Ordering::AcqRel) == link.up {
            return;
        }
        let mut event = bindings::ib_event {
            device: ib,
            event: if link.up {
                bindings::ib_event_type_IB_EVENT_PORT_ACTIVE
            } else {
                bindings::ib_event_type_IB_EVENT_PORT_ERR
            },
            // SAFETY: all-zero is a valid `ib_event` element.
            element: unsafe { core::mem::zeroed() },
        };
        event.element.port_num = 1;
        // SAFETY: `event` names a registered device; the core copies what
        // it keeps.
        unsafe { bindings::ib_dispatch_event(&event) };
    }
}

impl<T: LinkOps> LinksInner<T> {
    /// Runs `f` on the device of ours bound to `netdev`, if any, holding
    /// it registered meanwhile.
    fn device_of<R>(
        &self,
        netdev: &NetDev,
        f: impl FnOnce(*mut bindings::ib_device) -> R,
    ) -> Option<R> {
        // SAFETY: the caller holds `netdev`; a non-NULL result is a
        // registered device whose registration we hold until the put.
        let ib = unsafe {
            bindings::ib_device_get_by_netdev(
                netdev.as_ptr(),
                bindings::rdma_driver_id_RDMA_DRIVER_QIB,
            )
        };
        if ib.is_null() {
            return None;
        }
        // The driver id is borrowed from qib (see `Adapter::OPS`): only a
        // device in our list is ours.
        let r = self.devices.list().contains(ib).then(|| f(ib));
        // SAFETY: the reference taken above.
        unsafe { bindings::ib_device_put(ib) };
        r
    }
}

impl<T: LinkOps> Drop for Links<T> {
    fn drop(&mut self) {
        // SAFETY: registered in `Links::new`; after these return the core
        // calls neither back (`rdma_link_unregister` waits for `newlink`).
        unsafe {
            bindings::rdma_link_unregister(self.inner.ops.get());
            bindings::rsoft_netdev_notifier_unregister(self.inner.notifier.get());
        }
        LINKS.store(ptr::null_mut(), Ordering::Release);
    }
}
