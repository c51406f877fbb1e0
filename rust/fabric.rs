// SPDX-License-Identifier: GPL-2.0

//! What every rsoft device of the module shares: one MR table (keys are
//! unique across devices, and a key only ever works in its own PD, so a
//! key of one device is just a wrong key on another), the lock that makes
//! atomics atomic wherever their memory is registered, and the RoCE ports,
//! found by the GIDs they hold.

use crate::{
    ib::{self, Gid, IrqSpinLock, NetDev},
    mr::Mrs,
    new_irq_spinlock,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

/// A RoCE port as the fabric sees it.
pub(crate) trait Port: Send + Sync {
    /// Whether a packet to `gid` is for this port now (it holds the GID
    /// and is up).
    fn answers(&self, gid: &Gid) -> bool;

    /// Whether the port is bound to `netdev`.
    fn is_on(&self, netdev: &NetDev) -> bool;
}

/// The module's devices' common ground.
#[pin_data]
pub(crate) struct Fabric<P> {
    #[pin]
    pub(crate) mrs: Mrs,
    /// Serialises rsoft's atomics (an 8-byte operation each).
    #[pin]
    pub(crate) atomics: IrqSpinLock<()>,
    #[pin]
    ports: IrqSpinLock<KVec<Arc<P>>>,
    /// Bumped after every change of which port a GID leads to (a port
    /// attached or detached, a GID or a link state changed): a route found
    /// before is found again only while this is unchanged.
    routes: AtomicU32,
}

impl<P: Port> Fabric<P> {
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        Ok(try_pin_init!(Self {
            mrs <- Mrs::new()?,
            atomics <- new_irq_spinlock!((), "rsoft_atomics"),
            ports <- new_irq_spinlock!(KVec::new(), "rsoft_ports"),
            routes: AtomicU32::new(0),
        }? Error))
    }

    /// The routes' generation: read before a route is looked up, so that
    /// a change during the look-up makes what it found out of date.
    pub(crate) fn routes(&self) -> u32 {
        self.routes.load(Ordering::Acquire)
    }

    /// Makes every route found so far out of date; called after the change.
    pub(crate) fn reroute(&self) {
        self.routes.fetch_add(1, Ordering::AcqRel);
    }

    /// Makes `port` reachable by its GIDs until [`Self::detach`].
    pub(crate) fn attach(&self, port: Arc<P>) -> Result {
        self.ports.lock().push(port, GFP_ATOMIC)?;
        self.reroute();
        Ok(())
    }

    /// Makes `port` unreachable; returns it for the caller to drop outside
    /// the lock.
    pub(crate) fn detach(&self, port: &P) -> Option<Arc<P>> {
        let mut ports = self.ports.lock();
        let i = ports.iter().position(|p| core::ptr::eq(&**p, port))?;
        let port = ib::swap_remove(&mut ports, i);
        self.reroute();
        port
    }

    /// Calls `f` on every port, with no lock held. A port attached
    /// meanwhile may be missed and one detached may still be seen, but no
    /// port that stays is skipped: the list is walked from its end, and a
    /// detach moves only the last port, into a place not walked yet or
    /// walked already by the port itself.
    pub(crate) fn for_each_port(&self, mut f: impl FnMut(&P)) {
        let mut i = self.ports.lock().len();
        while i > 0 {
            i -= 1;
            let port = self.ports.lock().get(i).cloned();
            if let Some(port) = port {
                f(&port);
            }
        }
    }

    /// The port bound to `netdev`, where packets from other hosts arrive.
    pub(crate) fn port_on(&self, netdev: &NetDev) -> Option<Arc<P>> {
        self.ports.lock().iter().find(|p| p.is_on(netdev)).cloned()
    }

    /// The port of this host a packet to `gid` goes to; without one, the
    /// packet is for another host.
    pub(crate) fn port_of(&self, gid: &Gid) -> Option<Arc<P>> {
        self.ports.lock().iter().find(|p| p.answers(gid)).cloned()
    }
}
