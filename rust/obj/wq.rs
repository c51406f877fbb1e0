// SPDX-License-Identifier: GPL-2.0

//! Work queues: the FIFO of work requests behind a QP's send or receive
//! queue and an SRQ, sized at creation so that posting never allocates.

use super::mr::{Grant, MrKey};
use crate::ib::{Datagram, Key, LocalOp, RecvWrs, Remote, SendOp, Sge, WcOpcode};
use kernel::prelude::*;

/// An SGE as queued in a work queue.
#[derive(Clone, Copy, Default)]
pub(crate) struct SgeCopy {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: MrKey,
}

impl From<&Sge> for SgeCopy {
    fn from(s: &Sge) -> Self {
        Self {
            addr: s.addr(),
            length: s.length(),
            lkey: MrKey::of(s.lkey()),
        }
    }
}

impl SgeCopy {
    /// The remote buffer of an RDMA or atomic operation, `len` bytes.
    pub(crate) fn remote(r: Remote, len: u32) -> Self {
        Self {
            addr: r.addr,
            length: len,
            lkey: MrKey::of(r.rkey),
        }
    }
}

/// An SGE list, and the grant each MR it names is entered under.
#[derive(Clone, Copy)]
pub(crate) struct Sges<'a> {
    pub(crate) list: &'a [SgeCopy],
    pub(crate) grant: Grant,
}

impl<'a> Sges<'a> {
    pub(crate) fn new(list: &'a [SgeCopy], grant: Grant) -> Self {
        Self { list, grant }
    }
}

/// One SGE and its grant, held past the call that checked it: a READ's
/// data at its responder, read when its response packets leave.
#[derive(Clone, Copy)]
pub(crate) struct GrantedSge {
    pub(crate) sge: SgeCopy,
    pub(crate) grant: Grant,
}

impl GrantedSge {
    pub(crate) fn sges(&self) -> Sges<'_> {
        Sges::new(core::slice::from_ref(&self.sge), self.grant)
    }
}

/// A queued send work request.
#[derive(Clone, Copy)]
pub(crate) struct Wqe {
    pub(crate) wr_id: u64,
    pub(crate) op: SendOp,
    pub(crate) signaled: bool,
    pub(crate) solicited: bool,
    /// It waits for the READs and atomics before it to complete.
    pub(crate) fence: bool,
    pub(crate) imm: Option<u32>,
    /// SEND_WITH_INV: the responder's key to invalidate.
    pub(crate) invalidate: Option<Key>,
    pub(crate) num_sge: usize,
    /// The length of its inline data, kept in its queue (set by
    /// [`WorkQueue::push`]).
    pub(crate) inline: Option<u32>,
}

impl Wqe {
    /// The opcode of the requester's completion.
    pub(crate) fn send_opcode(&self) -> WcOpcode {
        match self.op {
            SendOp::Send => WcOpcode::Send,
            SendOp::RdmaWrite(_) => WcOpcode::RdmaWrite,
            SendOp::RdmaRead(_) => WcOpcode::RdmaRead,
            SendOp::CompareSwap { .. } => WcOpcode::CompareSwap,
            SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
            SendOp::Local(LocalOp::RegMr(_)) => WcOpcode::RegMr,
            SendOp::Local(LocalOp::Invalidate(_)) => WcOpcode::LocalInv,
        }
    }
}

/// A queued receive work request: all a receive has besides its SGEs. It
/// is small, as it is taken, moved and completed once per message.
#[derive(Clone, Copy)]
pub(crate) struct RecvWqe {
    pub(crate) wr_id: u64,
    pub(crate) num_sge: usize,
}

/// What a work queue holds: a WQE whose SGEs the queue keeps beside it.
pub(crate) trait Entry: Copy {
    /// What an unused slot holds.
    const EMPTY: Self;

    /// How many of the slot's SGEs it uses.
    fn num_sge(&self) -> usize;
}

impl Entry for Wqe {
    const EMPTY: Self = Self {
        wr_id: 0,
        op: SendOp::Send,
        signaled: false,
        solicited: false,
        fence: false,
        imm: None,
        invalidate: None,
        num_sge: 0,
        inline: None,
    };

    fn num_sge(&self) -> usize {
        self.num_sge
    }
}

impl Entry for RecvWqe {
    const EMPTY: Self = Self {
        wr_id: 0,
        num_sge: 0,
    };

    fn num_sge(&self) -> usize {
        self.num_sge
    }
}

/// A FIFO of work requests with room for `max_sge` SGEs and `max_inline`
/// bytes of inline data each, allocated at QP creation so that posting
/// never allocates.
pub(crate) struct WorkQueue<W> {
    wqes: KVVec<W>,
    sges: KVVec<SgeCopy>,
    inline: KVVec<u8>,
    /// A datagram QP's send queue: each WQE's destination, copied from its
    /// address handle when posted. Beside the WQEs, not in them: a WQE is
    /// copied several times per message, and only a datagram QP's (UD,
    /// GSI) has one.
    datagrams: KVVec<Option<Datagram>>,
    max_sge: usize,
    max_inline: usize,
    head: usize,
    len: usize,
}

impl WorkQueue<RecvWqe> {
    /// A receive queue, of a QP or an SRQ.
    pub(crate) fn new_recv(depth: u32, max_sge: u32) -> Result<Self> {
        Self::new(depth, max_sge, 0)
    }

    /// Queues receive WRs, up to the first bad one.
    pub(crate) fn push_receives(&mut self, wrs: &mut RecvWrs<'_>) -> Result {
        for wr in wrs {
            let wr = wr?;
            let wqe = RecvWqe {
                wr_id: wr.wr_id,
                num_sge: wr.sges.len(),
            };
            let slot = self.place(&wqe, wr.sges.iter().map(SgeCopy::from))?;
            self.commit(slot, wqe);
        }
        Ok(())
    }
}

impl WorkQueue<Wqe> {
    /// A send queue; that of a datagram QP (`datagrams`) keeps each WQE's
    /// destination.
    pub(crate) fn new_send(
        depth: u32,
        max_sge: u32,
        max_inline: u32,
        datagrams: bool,
    ) -> Result<Self> {
        let mut queue = Self::new(depth, max_sge, max_inline)?;
        if datagrams {
            queue.datagrams = KVVec::from_elem(None, depth as usize, GFP_KERNEL)?;
        }
        Ok(queue)
    }

    /// Appends a send WQE with its SGEs, its destination if it is a
    /// datagram and, for an inline send, its data; ENOMEM when full,
    /// EINVAL for too many SGEs or too much data, or a destination on a
    /// queue that keeps none.
    pub(crate) fn push(
        &mut self,
        mut wqe: Wqe,
        sges: impl Iterator<Item = SgeCopy>,
        inline: Option<&[u8]>,
        datagram: Option<Datagram>,
    ) -> Result {
        let too_long = inline.is_some_and(|d| d.len() > self.max_inline);
        // Only a datagram QP's sends name a destination.
        if too_long || (datagram.is_some() && self.datagrams.is_empty()) {
            return Err(EINVAL);
        }
        let slot = self.place(&wqe, sges)?;
        if let Some(dst) = self.datagrams.get_mut(slot) {
            *dst = datagram;
        }
        wqe.inline = None;
        if let Some(data) = inline {
            let base = slot * self.max_inline;
            self.inline[base..base + data.len()].copy_from_slice(data);
            // At most `max_inline`, which came from a u32.
            wqe.inline = Some(data.len() as u32);
        }
        self.commit(slot, wqe);
        Ok(())
    }

    /// The destination of WQE `i`, if it is a datagram.
    pub(crate) fn datagram_of(&self, i: usize) -> Option<Datagram> {
        if i >= self.len {
            return None;
        }
        *self.datagrams.get(self.index(i))?
    }

    /// The inline data of WQE `i`, if it is an inline send.
    pub(crate) fn inline_of(&self, i: usize) -> Option<&[u8]> {
        let (wqe, _) = self.get(i)?;
        let base = self.index(i) * self.max_inline;
        self.inline.get(base..base + wqe.inline? as usize)
    }
}

impl<W: Entry> WorkQueue<W> {
    fn new(depth: u32, max_sge: u32, max_inline: u32) -> Result<Self> {
        let (depth, max_sge, max_inline) = (depth as usize, max_sge as usize, max_inline as usize);
        let slots = depth.checked_mul(max_sge).ok_or(EINVAL)?;
        let inline = depth.checked_mul(max_inline).ok_or(EINVAL)?;
        Ok(Self {
            wqes: KVVec::from_elem(W::EMPTY, depth, GFP_KERNEL)?,
            sges: KVVec::from_elem(SgeCopy::default(), slots, GFP_KERNEL)?,
            inline: KVVec::from_elem(0, inline, GFP_KERNEL)?,
            datagrams: KVVec::new(),
            max_sge,
            max_inline,
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

    /// Copies the SGEs of `wqe` into the next free slot and returns the
    /// slot; ENOMEM when full, EINVAL for too many SGEs.
    fn place(&mut self, wqe: &W, sges: impl Iterator<Item = SgeCopy>) -> Result<usize> {
        if wqe.num_sge() > self.max_sge {
            return Err(EINVAL);
        }
        if self.len == self.wqes.len() {
            return Err(ENOMEM);
        }
        let slot = self.index(self.len);
        let base = slot * self.max_sge;
        for (dst, src) in self.sges[base..base + wqe.num_sge()].iter_mut().zip(sges) {
            *dst = src;
        }
        Ok(slot)
    }

    /// Puts `wqe` in `slot`, the one [`Self::place`] returned: it is queued.
    fn commit(&mut self, slot: usize, wqe: W) {
        self.wqes[slot] = wqe;
        self.len += 1;
    }

    /// The oldest WQE and its SGEs.
    pub(crate) fn front(&self) -> Option<(&W, &[SgeCopy])> {
        self.get(0)
    }

    /// The WQE `i` places after the oldest, and its SGEs.
    pub(crate) fn get(&self, i: usize) -> Option<(&W, &[SgeCopy])> {
        if i >= self.len {
            return None;
        }
        let slot = self.index(i);
        let wqe = &self.wqes[slot];
        let base = slot * self.max_sge;
        Some((wqe, &self.sges[base..base + wqe.num_sge()]))
    }

    pub(crate) fn pop(&mut self) -> Option<W> {
        if self.len == 0 {
            return None;
        }
        let wqe = self.wqes[self.head];
        self.drop_front();
        Some(wqe)
    }

    /// Drops the oldest WQE, if any, without copying it out: its copy is
    /// the caller's already. Returns whether there was one.
    pub(crate) fn drop_front(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        self.head = self.index(1);
        self.len -= 1;
        true
    }
}
