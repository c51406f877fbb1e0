// SPDX-License-Identifier: GPL-2.0

//! The buffers a QP's runner copies work requests into, allocated with the
//! QP: a step uses a WQE's SGE list or inline data with no queue lock held
//! (a RESET or a post may change the queue meanwhile), and copies only what
//! the WQE has, into memory it owns, instead of moving fixed-size lists by
//! value through its calls.

use super::wq::SgeCopy;
use crate::limits;
use kernel::prelude::*;

/// A fixed-size buffer of `T`s.
pub(crate) struct Buf<T>(KVec<T>);

impl<T: Copy + Default> Buf<T> {
    fn new(len: u32, flags: kernel::alloc::Flags) -> Result<Self> {
        Ok(Self(KVec::from_elem(T::default(), len as usize, flags)?))
    }

    /// Copies `from` into the buffer and returns the copy; `None` when it
    /// does not fit (never for what the QP's queues accept).
    pub(crate) fn fill(&mut self, from: &[T]) -> Option<&[T]> {
        let dst = self.0.get_mut(..from.len())?;
        dst.copy_from_slice(from);
        Some(dst)
    }

    /// The first `n` elements (all if there are fewer).
    pub(crate) fn first(&self, n: usize) -> &[T] {
        &self.0[..n.min(self.0.len())]
    }

    /// Takes the buffer, leaving an empty one: a message of several
    /// packets keeps the SGEs its first packet's receive had.
    pub(crate) fn take(&mut self) -> Self {
        Self(core::mem::take(&mut self.0))
    }
}

/// What one runner of a QP owns (see [`crate::engine::kick`]).
pub(crate) struct Scratch {
    /// The head send WQE's SGEs.
    pub(crate) send: Buf<SgeCopy>,
    /// The head send WQE's inline data.
    pub(crate) inline: Buf<u8>,
    /// The SGEs of the receive WQE a request of this runner took at its
    /// responder: any QP's, so room for the most any queue holds.
    pub(crate) recv: Buf<SgeCopy>,
}

impl Scratch {
    pub(crate) fn new(max_send_sge: u32, max_inline: u32) -> Result<Self> {
        Ok(Self {
            send: Buf::new(max_send_sge, GFP_KERNEL)?,
            inline: Buf::new(max_inline, GFP_KERNEL)?,
            recv: Buf::new(limits::MAX_SGE, GFP_KERNEL)?,
        })
    }
}

/// Room for the SGEs of the receive WQE a packet from the wire takes, in
/// softirq.
pub(crate) fn receive_room() -> Result<Buf<SgeCopy>> {
    Buf::new(limits::MAX_SGE, GFP_ATOMIC)
}
