// SPDX-License-Identifier: GPL-2.0

//! What the QPs of one device share: its address, its QP and MR tables,
//! its counters, and the lock that makes atomics atomic.
//!
//! Lock order (each lock is an IRQ-safe spinlock, held briefly; no data is
//! copied under any of them but a UD datagram's, at most one MTU):
//!
//! `qps` -> QP -> SRQ -> CQ ring; QP -> `mrs`; QP -> gate; `qps` -> gate.
//! `atomics` and the CQ ring take no other lock. No two QP locks are ever
//! held at once. The `ib` layer's lock of an object's holders
//! (`rust/ib/hold.rs`) comes last: a hold may be dropped under any of
//! these, and that lock takes no other.

use crate::{
    counters::Counters,
    ib::{Gid, IrqSpinLock},
    limits,
    mr::Mrs,
    new_irq_spinlock,
    qp::{QpShared, QpUse, Qpn},
    srq::SrqShared,
    table::Table,
};
use kernel::{prelude::*, sync::Arc};

/// The device's loopback network.
#[pin_data]
pub(crate) struct Net {
    pub(crate) lid: u16,
    /// The port's GID, the source of every GRH.
    pub(crate) gid: Gid,
    /// `None` while a QP is being created in the slot.
    #[pin]
    qps: IrqSpinLock<Table<Option<Arc<QpShared>>>>,
    #[pin]
    pub(crate) mrs: Mrs,
    pub(crate) counters: Counters,
    /// Serialises rsoft's atomics (an 8-byte operation each).
    #[pin]
    pub(crate) atomics: IrqSpinLock<()>,
}

/// A reserved slot of the QP table, released when dropped unless a QP was
/// put in it.
pub(crate) struct QpSlot<'a> {
    net: &'a Net,
    slot: u32,
    filled: bool,
}

impl QpSlot<'_> {
    pub(crate) fn qpn(&self) -> Qpn {
        Qpn::from_slot(self.slot)
    }

    /// Puts `qp` in the slot: from now on it can be found by number.
    pub(crate) fn fill(mut self, qp: Arc<QpShared>) {
        if let Some(entry) = self.net.qps.lock().get_mut(self.slot) {
            *entry = Some(qp);
            self.filled = true;
        }
    }
}

impl Drop for QpSlot<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.net.qps.lock().remove(self.slot);
        }
    }
}

impl Net {
    pub(crate) fn new(lid: u16, gid: Gid) -> Result<impl PinInit<Self, Error>> {
        let qps = Table::new(limits::MAX_QP)?;
        Ok(try_pin_init!(Self {
            lid,
            gid,
            qps <- new_irq_spinlock!(qps, "rsoft_qps"),
            mrs <- Mrs::new()?,
            counters: Counters::default(),
            atomics <- new_irq_spinlock!((), "rsoft_atomics"),
        }? Error))
    }

    /// Reserves a QP number.
    pub(crate) fn reserve_qp(&self) -> Result<QpSlot<'_>> {
        let slot = self.qps.lock().insert(None).map_err(|_| ENOMEM)?;
        Ok(QpSlot {
            net: self,
            slot,
            filled: false,
        })
    }

    /// Removes QP `qpn` from the table: it can no longer be found.
    pub(crate) fn remove_qp(&self, qpn: Qpn) -> Option<Arc<QpShared>> {
        self.qps.lock().remove(qpn.slot()).flatten()
    }

    /// Enters QP `qpn`, if it exists and is not being destroyed.
    pub(crate) fn qp(&self, qpn: Qpn) -> Option<QpUse> {
        let qps = self.qps.lock();
        qps.get(qpn.slot())?.as_ref()?.enter()
    }

    /// The first QP from number `from` on that has sends queued towards a
    /// QP whose receives come from `srq`.
    pub(crate) fn next_sender_to(&self, srq: &Arc<SrqShared>, from: Qpn) -> Option<QpUse> {
        let qps = self.qps.lock();
        let sends_to_srq = |qp: &Arc<QpShared>| {
            let dest = {
                let inner = qp.inner.lock();
                if inner.sq.is_empty() {
                    return false;
                }
                inner.attr.dest_qpn
            };
            let dest = qps.get(Qpn::of(dest).slot()).and_then(|d| d.as_ref());
            dest.and_then(|d| d.srq.as_ref())
                .is_some_and(|s| Arc::ptr_eq(s, srq))
        };
        let found = qps
            .iter_from(from.slot())
            .filter_map(|(_, qp)| qp.as_ref())
            .find(|qp| sends_to_srq(qp))
            .and_then(|qp| qp.enter());
        found
    }
}
