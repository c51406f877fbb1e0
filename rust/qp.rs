// SPDX-License-Identifier: GPL-2.0

//! Queue pair state: attributes, state machine and the two work queues.

use crate::{
    device::Rsoft,
    ib::{
        CqRef, Datagram, PdId, QpCap, QpId, QpInitAttr, QpModify, QpNotifier, QpQuery, QpState,
        QpType, SendOp, WcOpcode,
    },
    mr::SgeCopy,
};
use kernel::prelude::*;

/// A queued work request.
#[derive(Clone, Copy)]
pub(crate) struct Wqe {
    pub(crate) wr_id: u64,
    pub(crate) op: SendOp,
    pub(crate) signaled: bool,
    pub(crate) solicited: bool,
    pub(crate) imm: Option<u32>,
    pub(crate) num_sge: usize,
    /// UD: the destination, copied from the address handle when posted.
    pub(crate) datagram: Option<Datagram>,
}

impl Wqe {
    /// Whether the operation takes a receive WQE at the responder.
    pub(crate) fn consumes_recv(&self) -> bool {
        match self.op {
            SendOp::Send => true,
            SendOp::RdmaWrite(_) => self.imm.is_some(),
            _ => false,
        }
    }

    /// The opcode of the requester's completion.
    pub(crate) fn send_opcode(&self) -> WcOpcode {
        match self.op {
            SendOp::Send => WcOpcode::Send,
            SendOp::RdmaWrite(_) => WcOpcode::RdmaWrite,
            SendOp::RdmaRead(_) => WcOpcode::RdmaRead,
            SendOp::CompareSwap { .. } => WcOpcode::CompareSwap,
            SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
        }
    }

    const EMPTY: Self = Self {
        wr_id: 0,
        op: SendOp::Send,
        signaled: false,
        solicited: false,
        imm: None,
        num_sge: 0,
        datagram: None,
    };
}

/// A FIFO of work requests with room for `max_sge` SGEs each, allocated at
/// QP creation so that posting never allocates.
pub(crate) struct WorkQueue {
    wqes: KVVec<Wqe>,
    sges: KVVec<SgeCopy>,
    max_sge: usize,
    head: usize,
    len: usize,
}

impl WorkQueue {
    pub(crate) fn new(depth: u32, max_sge: u32) -> Result<Self> {
        let (depth, max_sge) = (depth as usize, max_sge as usize);
        let slots = depth.checked_mul(max_sge).ok_or(EINVAL)?;
        Ok(Self {
            wqes: KVVec::from_elem(Wqe::EMPTY, depth, GFP_KERNEL)?,
            sges: KVVec::from_elem(SgeCopy::default(), slots, GFP_KERNEL)?,
            max_sge,
            head: 0,
            len: 0,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn len(&self) -> u32 {
        // At most the depth, which came from a u32.
        self.len as u32
    }

    pub(crate) fn capacity(&self) -> u32 {
        self.wqes.len() as u32
    }

    fn index(&self, i: usize) -> usize {
        (self.head + i) % self.wqes.len()
    }

    /// Appends a WQE; ENOMEM when full, EINVAL for too many SGEs.
    pub(crate) fn push(&mut self, wqe: Wqe, sges: impl Iterator<Item = SgeCopy>) -> Result {
        if wqe.num_sge > self.max_sge {
            return Err(EINVAL);
        }
        if self.len == self.wqes.len() {
            return Err(ENOMEM);
        }
        let slot = self.index(self.len);
        let base = slot * self.max_sge;
        for (dst, src) in self.sges[base..base + wqe.num_sge].iter_mut().zip(sges) {
            *dst = src;
        }
        self.wqes[slot] = wqe;
        self.len += 1;
        Ok(())
    }

    /// The oldest WQE and its SGEs.
    pub(crate) fn front(&self) -> Option<(&Wqe, &[SgeCopy])> {
        if self.len == 0 {
            return None;
        }
        let wqe = &self.wqes[self.head];
        let base = self.head * self.max_sge;
        Some((wqe, &self.sges[base..base + wqe.num_sge]))
    }

    pub(crate) fn pop(&mut self) -> Option<Wqe> {
        if self.len == 0 {
            return None;
        }
        let wqe = self.wqes[self.head];
        self.head = self.index(1);
        self.len -= 1;
        Some(wqe)
    }
}

/// A queue pair, owned by the device's QP table.
pub(crate) struct QpEntry {
    pub(crate) id: QpId,
    pub(crate) pd: PdId,
    pub(crate) qp_type: QpType,
    pub(crate) state: QpState,
    pub(crate) cap: QpCap,
    pub(crate) sq_sig_all: bool,
    pub(crate) send_cq: CqRef<Rsoft>,
    pub(crate) recv_cq: CqRef<Rsoft>,
    pub(crate) sq: WorkQueue,
    /// Unused when the QP takes its receives from an SRQ.
    pub(crate) rq: WorkQueue,
    /// The slot of the SRQ the QP takes its receives from.
    pub(crate) srq: Option<u32>,
    notifier: QpNotifier,
    pub(crate) attr: QpQuery,
}

impl QpEntry {
    /// A QP in the RESET state; its number is its slot in the QP table.
    pub(crate) fn new(attr: &QpInitAttr<Rsoft>) -> Result<Self> {
        let cap = attr.cap;
        Ok(Self {
            id: attr.id,
            pd: attr.pd,
            qp_type: attr.qp_type,
            state: QpState::Reset,
            cap,
            sq_sig_all: attr.sq_sig_all,
            send_cq: attr.send_cq,
            recv_cq: attr.recv_cq,
            sq: WorkQueue::new(cap.max_send_wr, cap.max_send_sge)?,
            rq: WorkQueue::new(cap.max_recv_wr, cap.max_recv_sge)?,
            srq: attr.srq.as_ref().map(|srq| srq.data().slot),
            notifier: attr.notifier,
            attr: QpQuery::default(),
        })
    }

    /// Applies a validated modify.
    pub(crate) fn apply(&mut self, m: &QpModify) {
        fn set<V: Copy>(dst: &mut V, v: Option<V>) {
            if let Some(v) = v {
                *dst = v;
            }
        }
        let a = &mut self.attr;
        set(&mut a.access_flags, m.access_flags);
        set(&mut a.path_mtu, m.path_mtu);
        set(&mut a.dest_lid, m.dest_lid);
        set(&mut a.dest_qpn, m.dest_qpn);
        set(&mut a.rq_psn, m.rq_psn);
        set(&mut a.sq_psn, m.sq_psn);
        set(&mut a.timeout, m.timeout);
        set(&mut a.retry_cnt, m.retry_cnt);
        set(&mut a.rnr_retry, m.rnr_retry);
        set(&mut a.min_rnr_timer, m.min_rnr_timer);
        set(&mut a.max_rd_atomic, m.max_rd_atomic);
        set(&mut a.max_dest_rd_atomic, m.max_dest_rd_atomic);
        set(&mut a.qkey, m.qkey);
        let Some(next) = m.state else {
            return;
        };
        match next {
            QpState::Reset => {
                // RESET discards all work without completions.
                while self.sq.pop().is_some() {}
                while self.rq.pop().is_some() {}
                self.state = next;
            }
            QpState::Error => self.enter_error(),
            _ => self.state = next,
        }
    }

    /// Moves to the error state; a QP on an SRQ then takes no more of its
    /// receives, which its consumer learns through the Last WQE Reached
    /// event (raised under the caller's lock, see [`QpNotifier`]).
    pub(crate) fn enter_error(&mut self) {
        if self.state == QpState::Error {
            return;
        }
        self.state = QpState::Error;
        if self.srq.is_some() {
            self.notifier.last_wqe_reached();
        }
    }

    pub(crate) fn query(&self) -> QpQuery {
        QpQuery {
            state: Some(self.state),
            cap: self.cap,
            sq_sig_all: self.sq_sig_all,
            ..self.attr
        }
    }
}
