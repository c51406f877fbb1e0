// SPDX-License-Identifier: GPL-2.0

//! The network device a RoCE port is bound to.

use super::bindings;
use core::ptr::NonNull;
use kernel::types::Opaque;

/// A network device, borrowed from whoever holds it for the call.
#[repr(transparent)]
pub(crate) struct NetDev(Opaque<bindings::net_device>);

/// What a RoCE port takes from its netdev.
#[derive(Clone, Copy)]
pub(crate) struct EthLink {
    /// Running, with a carrier.
    pub(crate) up: bool,
    /// The netdev's MTU, in bytes.
    pub(crate) mtu: u32,
}

impl NetDev {
    /// # Safety
    ///
    /// `ptr` is a valid `net_device` that its caller holds for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: per the function's contract; `NetDev` is transparent.
        unsafe { &*ptr.cast::<Self>() }
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The netdev's state now.
    pub(crate) fn link(&self) -> EthLink {
        // SAFETY: `self` is a valid netdev (see `from_raw`); both read
        // fields that may change under us, which only makes the answer old.
        unsafe {
            EthLink {
                up: bindings::rsoft_netdev_up(self.as_ptr()),
                mtu: bindings::rsoft_netdev_mtu(self.as_ptr()),
            }
        }
    }

    /// How many RoCEv2 packets the netdev takes in one skb that the
    /// stack cuts up (UDP GSO): 1 where it takes none.
    pub(crate) fn train_max(&self) -> u32 {
        // SAFETY: `self` is a valid netdev; the fields read may change
        // under us, which only makes the answer old.
        unsafe { bindings::rsoft_netdev_train_max(self.as_ptr()) }
    }

    /// The network namespace the netdev is in now.
    pub(crate) fn namespace(&self) -> Namespace {
        // SAFETY: `self` is a valid netdev; a registered netdev is always
        // in a namespace.
        Namespace(unsafe { bindings::rsoft_netdev_net(self.as_ptr()) })
    }

    /// The EUI-64 made from the netdev's MAC address (zero without one).
    pub(crate) fn eui64(&self) -> u64 {
        // SAFETY: `self` is a valid netdev.
        unsafe { bindings::rsoft_netdev_eui64(self.as_ptr()) }
    }
}

/// Names a network namespace, to tell whether two netdevs are in one:
/// compared, never dereferenced. A netdev that changes namespace is
/// unregistered from the old one first, so the name stays right for as
/// long as the netdev it came from is held and registered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Namespace(usize);

/// A counted reference to a netdev: it stays allocated while held, so it
/// must be let go of when the netdev is unregistered, which waits for it.
pub(crate) struct NetDevRef(NonNull<bindings::net_device>);

// SAFETY: a netdev's reference count and the fields `NetDev` reads may be
// used from any thread.
unsafe impl Send for NetDevRef {}
// SAFETY: as for `Send`; `&NetDevRef` only gives a `&NetDev`.
unsafe impl Sync for NetDevRef {}

impl NetDevRef {
    /// Takes a reference to `netdev`.
    pub(crate) fn new(netdev: &NetDev) -> Self {
        // SAFETY: `netdev` is valid for the call (see `from_raw`).
        unsafe { bindings::rsoft_netdev_hold(netdev.as_ptr()) };
        Self(NonNull::from(netdev).cast())
    }

    /// The netdev port `port` of `ib` is bound to, if it has one that is
    /// still registered.
    ///
    /// # Safety
    ///
    /// `ib` is a registered device and `port` one of its ports.
    pub(super) unsafe fn of_port(ib: *mut bindings::ib_device, port: u32) -> Option<Self> {
        // SAFETY: per the function's contract; a non-NULL result is held.
        NonNull::new(unsafe { bindings::ib_device_get_netdev(ib, port) }).map(Self)
    }
}

impl Clone for NetDevRef {
    fn clone(&self) -> Self {
        Self::new(self)
    }
}

impl core::ops::Deref for NetDevRef {
    type Target = NetDev;

    fn deref(&self) -> &NetDev {
        // SAFETY: held until `self` is dropped.
        unsafe { NetDev::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for NetDevRef {
    fn drop(&mut self) {
        // SAFETY: the reference `new`, `clone` or `of_port` took.
        unsafe { bindings::rsoft_netdev_put(self.0.as_ptr()) };
    }
}
