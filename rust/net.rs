// SPDX-License-Identifier: GPL-2.0

//! What the QPs of one device share: its port (a LID, or a netdev's GIDs),
//! its QP table, its counters, and the fabric of all devices.
//!
//! Lock order (each lock is an IRQ-safe spinlock, held briefly; no data is
//! copied under any of them but a UD datagram's, at most one MTU):
//!
//! `qps` -> QP -> SRQ -> CQ ring; QP -> `mrs`; QP -> gate (a QP's or an
//! MR's); `qps` -> gate; `gsi` -> gate; the fabric's `ports` -> `gids`;
//! `qps`, `gsi` or a QP -> a QP's reach (see [`crate::qp::Reach`]) -> gate.
//! `atomics`, `netdev` and the CQ ring take no other lock. No two QP locks are ever held at
//! once. The `ib` layer's lock of an object's holders (`rust/ib/hold.rs`)
//! comes last: a hold may be dropped under any of these, and that lock
//! takes no other.

use crate::{
    counters::Counters,
    fabric::{self, Fabric},
    ib::{
        self, Address, Gid, GidType, Grh, IrqSpinLock, Listener, Mtu, Namespace, NetDev, NetDevRef,
    },
    limits,
    mr::Mrs,
    new_irq_spinlock,
    qp::{KeptPeer, QpShared, QpUse, Qpn},
    table::Table,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

/// Entries of a RoCE port's GID table (the core fills them from the
/// netdev's addresses: two kinds for each).
pub(crate) const ROCE_GIDS: u32 = 128;

/// A device's port.
#[derive(Clone, Copy)]
pub(crate) enum Link {
    /// An InfiniBand port, always up, reached by LID.
    Ib { lid: u16, gid: Gid },
    /// A RoCE port on a netdev, reached by the GIDs of its addresses.
    Roce,
}

/// The device's loopback network.
#[pin_data]
pub(crate) struct Net {
    pub(crate) link: Link,
    /// A RoCE port's GID table, as the core filled it.
    #[pin]
    gids: IrqSpinLock<KVec<Option<(Gid, GidType)>>>,
    /// The port is up (a RoCE port: its netdev runs and has a carrier).
    up: AtomicBool,
    /// The port's active MTU, in bytes: the largest UD message.
    mtu: AtomicU32,
    /// A RoCE port's netdev, held until it is unregistered or the port
    /// goes: packets for other hosts leave through it.
    #[pin]
    netdev: IrqSpinLock<Option<Bound>>,
    /// A RoCE port's netdev's namespace, as it was bound: the host the
    /// port is on. (A netdev that moves is unregistered first.)
    namespace: Option<Namespace>,
    /// `None` while a QP is being created in the slot.
    #[pin]
    qps: IrqSpinLock<Table<Option<Arc<QpShared>>>>,
    /// A RoCE port's QP1: `Some(None)` while being created.
    #[pin]
    gsi: IrqSpinLock<Option<Option<Arc<QpShared>>>>,
    pub(crate) counters: Counters,
    pub(crate) fabric: Arc<Fabric<Net>>,
}

/// A RoCE port's hold on its netdev, and its reception of RoCEv2 packets.
pub(crate) struct Bound {
    pub(crate) netdev: NetDevRef,
    /// Kept, not read: dropping it stops listening.
    pub(crate) _listener: Listener,
}

/// A reserved QP number, released when dropped unless a QP was put in it.
pub(crate) struct QpSlot<'a> {
    net: &'a Net,
    qpn: Qpn,
    filled: bool,
}

impl QpSlot<'_> {
    pub(crate) fn qpn(&self) -> Qpn {
        self.qpn
    }

    /// Puts `qp` in the slot: from now on it can be found by number, and
    /// a peer that found it may keep it.
    pub(crate) fn fill(mut self, qp: Arc<QpShared>) {
        if self.qpn == Qpn::GSI {
            *self.net.gsi.lock() = Some(Some(qp.clone()));
            self.filled = true;
        } else if let Some(entry) = self.net.qps.lock().get_mut(self.qpn.slot()) {
            *entry = Some(qp.clone());
            self.filled = true;
        }
        if self.filled {
            qp.open_reach();
        }
    }
}

impl Drop for QpSlot<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.net.remove_qp(self.qpn);
        }
    }
}

impl Net {
    pub(crate) fn new(
        link: Link,
        netdev: Option<Bound>,
        fabric: Arc<Fabric<Net>>,
    ) -> Result<impl PinInit<Self, Error>> {
        let qps = Table::new(limits::MAX_QP)?;
        let counters = Counters::new()?;
        let gids = match link {
            Link::Ib { .. } => KVec::new(),
            Link::Roce => KVec::from_elem(None, ROCE_GIDS as usize, GFP_KERNEL)?,
        };
        Ok(try_pin_init!(Self {
            link,
            gids <- new_irq_spinlock!(gids, "rsoft_gids"),
            up: AtomicBool::new(true),
            mtu: AtomicU32::new(Mtu::Mtu4096.bytes()),
            namespace: netdev.as_ref().map(|b| b.netdev.namespace()),
            netdev <- new_irq_spinlock!(netdev, "rsoft_netdev"),
            qps <- new_irq_spinlock!(qps, "rsoft_qps"),
            gsi <- new_irq_spinlock!(None, "rsoft_gsi"),
            counters,
            fabric,
        }? Error))
    }

    pub(crate) fn mrs(&self) -> &Mrs {
        &self.fabric.mrs
    }

    pub(crate) fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// The largest UD message, in bytes.
    pub(crate) fn mtu(&self) -> u32 {
        self.mtu.load(Ordering::Relaxed)
    }

    /// A RoCE port's netdev changed: `up`, with an active MTU of `mtu`.
    pub(crate) fn set_link(&self, up: bool, mtu: Mtu) {
        self.mtu.store(mtu.bytes(), Ordering::Relaxed);
        self.up.store(up, Ordering::Relaxed);
        self.fabric.reroute();
    }

    /// The port's netdev, if it still has one.
    pub(crate) fn netdev(&self) -> Option<NetDevRef> {
        self.netdev.lock().as_ref().map(|b| b.netdev.clone())
    }

    /// Lets go of the port's netdev, whose unregistration waits for that,
    /// and stops listening there; the port is down from then on, so its
    /// namespace, which may go too, is no longer compared. Sleeps.
    pub(crate) fn unbind(&self) {
        self.up.store(false, Ordering::Relaxed);
        self.fabric.reroute();
        let netdev = self.netdev.lock().take();
        drop(netdev);
    }

    pub(crate) fn set_gid(&self, index: u32, entry: Option<(Gid, GidType)>) -> Result {
        *self.gids.lock().get_mut(index as usize).ok_or(EINVAL)? = entry;
        self.fabric.reroute();
        Ok(())
    }

    /// Reserves a QP number: 1 for the GSI QP of a RoCE port, else the
    /// next free one.
    pub(crate) fn reserve_qp(&self, gsi: bool) -> Result<QpSlot<'_>> {
        let qpn = if gsi {
            let mut slot = self.gsi.lock();
            if matches!(self.link, Link::Ib { .. }) {
                return Err(EINVAL);
            }
            if slot.is_some() {
                return Err(EBUSY);
            }
            *slot = Some(None);
            Qpn::GSI
        } else {
            Qpn::from_slot(self.qps.lock().insert(None).map_err(|_| ENOMEM)?)
        };
        Ok(QpSlot {
            net: self,
            qpn,
            filled: false,
        })
    }

    /// Removes QP `qpn` from the table: it can no longer be found, nor
    /// reached by a peer that kept it. Both happen under the table's lock,
    /// so no peer reaches it once a look-up no longer finds it (or finds a
    /// new QP of the number).
    pub(crate) fn remove_qp(&self, qpn: Qpn) -> Option<Arc<QpShared>> {
        let close = |qp: Option<Arc<QpShared>>| {
            let held = qp.as_ref().and_then(|qp| qp.close_reach());
            (qp, held)
        };
        let (qp, held) = if qpn == Qpn::GSI {
            let mut gsi = self.gsi.lock();
            close(gsi.take().flatten())
        } else {
            let mut qps = self.qps.lock();
            close(qps.remove(qpn.slot()).flatten())
        };
        // Dropped outside the lock.
        drop(held);
        qp
    }

    /// Enters QP `qpn`, if it exists and is not being destroyed.
    pub(crate) fn qp(&self, qpn: Qpn) -> Option<QpUse> {
        if qpn == Qpn::GSI {
            return self.gsi.lock().as_ref()?.as_ref()?.enter();
        }
        let qps = self.qps.lock();
        qps.get(qpn.slot())?.as_ref()?.enter()
    }

    /// Calls `f` on the local port that `av` names, as seen from this
    /// port: the one place where a request finds its responder's port. An
    /// InfiniBand port reaches itself by its LID; a RoCE port reaches the
    /// port that answers the GID in its own network namespace. Two
    /// namespaces are two hosts, so a port in another one is reached over
    /// the RoCEv2 wire, as a container's would be; so is another port of
    /// this one whose address the kernel routes out of a netdev.
    pub(crate) fn with_port<R>(&self, av: &Address, f: impl FnOnce(&Net) -> R) -> Option<R> {
        match self.link {
            Link::Ib { lid, .. } => (av.dlid == lid).then(|| f(self)),
            Link::Roce => {
                let grh = av.grh.as_ref()?;
                if !self.is_up() {
                    return None;
                }
                // `port_of` finds only ports that are up, so bound.
                let port = self.fabric.port_of(&grh.dgid)?;
                let home = port.namespace == self.namespace
                    && (core::ptr::eq(&*port, self) || self.routes_home(grh));
                home.then(|| f(&port))
            }
        }
    }

    /// Whether what this port sends as `grh` says, to another port of its
    /// namespace, stays in this host. A RoCE v1 GID is not routed; a RoCE
    /// v2 one is another host's where the kernel routes it out of a netdev:
    /// two netdevs that policy routing joins by a wire (a veth pair) are
    /// two hosts, for rsoft as for the kernel's RDMA users, which
    /// resolved the destination over it (`selftests/veth-loop.sh`).
    fn routes_home(&self, grh: &Grh) -> bool {
        if grh.sgid_type != GidType::RoceV2 {
            return true;
        }
        self.netdev()
            .and_then(|netdev| ib::routes_home(&netdev, &grh.sgid, &grh.dgid))
            .unwrap_or(true)
    }

    /// Enters the peer of connected QP `qp` of this port, if on this host:
    /// the one it keeps while nothing changed, else the one a look-up
    /// finds.
    pub(crate) fn peer_of(&self, qp: &QpShared) -> Option<QpUse> {
        if qp.qp_type.is_datagram() {
            return None;
        }
        let routes = self.fabric.routes();
        let (av, dest, epoch) = {
            let inner = qp.inner.lock();
            match inner.kept_peer(routes) {
                Some(KeptPeer::Local(peer)) => return Some(peer),
                Some(KeptPeer::Remote) => return None,
                None => {}
            }
            let a = &inner.attr;
            (a.av, Qpn::of(a.dest_qpn), inner.path_epoch())
        };
        self.find_peer(qp, &av, dest, epoch)
    }

    /// Looks up QP `dest` of the port that `av` names, the peer of
    /// connected QP `qp` of this port along its path of `epoch` (see
    /// [`crate::qp::QpInner::path_epoch`]), and has `qp` keep what it
    /// finds: the QP, or that no port of this host answers the path (its
    /// requests then go to the wire with no look-up). A port of this host
    /// without that QP is not kept: the QP may come.
    pub(crate) fn find_peer(
        &self,
        qp: &QpShared,
        av: &Address,
        dest: Qpn,
        epoch: u32,
    ) -> Option<QpUse> {
        // Read first: a route that changes during the look-up makes what
        // it found out of date.
        let routes = self.fabric.routes();
        let peer = match self.with_port(av, |port| port.qp(dest)) {
            Some(None) => return None,
            found => found.flatten(),
        };
        qp.inner.lock().keep_peer(peer.as_deref(), epoch, routes);
        peer
    }

    /// The port QP `qp` is on.
    pub(crate) fn of_qp(qp: &QpUse) -> Option<&Net> {
        qp.port().downcast_ref()
    }

    /// The first QP from number `from` on that has sends queued.
    pub(crate) fn next_sending(&self, from: Qpn) -> Option<QpUse> {
        let qps = self.qps.lock();
        let found = qps
            .iter_from(from.slot())
            .filter_map(|(_, qp)| qp.as_ref())
            .find(|qp| !qp.inner.lock().sq.is_empty())
            .and_then(|qp| qp.enter());
        found
    }
}

impl fabric::Port for Net {
    fn answers(&self, gid: &Gid) -> bool {
        self.is_up() && self.gids.lock().iter().flatten().any(|(g, _)| g == gid)
    }

    fn is_on(&self, netdev: &NetDev) -> bool {
        let bound = self.netdev.lock();
        bound
            .as_ref()
            .is_some_and(|b| core::ptr::eq(&*b.netdev, netdev))
    }
}
