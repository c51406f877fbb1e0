// SPDX-License-Identifier: GPL-2.0

//! A message of more than one packet at its responder, between its first
//! packet and its last: the receive its first packet took (a SEND) or the
//! memory it named (a WRITE), and how much of it the packets so far
//! filled; and the receive of a UC message that lost a packet, kept for
//! the next. The QP keeps both under its lock.

use super::{
    scratch::Buf,
    wq::{RecvWqe, SgeCopy},
};
use crate::ib::Remote;

/// A message in progress.
pub(crate) struct Inbound {
    pub(crate) target: Target,
    /// Bytes placed so far: where the next packet's data goes.
    pub(crate) offset: u32,
}

/// Where a message's data goes.
pub(crate) enum Target {
    /// A SEND's receive, and the bytes its SGEs hold.
    Recv { recv: Taken, room: u64 },
    /// A WRITE's memory, as its RETH named it: `len` bytes at `remote`.
    Write { remote: Remote, len: u32 },
}

/// A receive WQE a message took from its queue, with its SGEs.
pub(crate) struct Taken {
    pub(crate) wqe: RecvWqe,
    /// Its SGEs: the first `n`.
    pub(crate) sges: Buf<SgeCopy>,
    pub(crate) n: usize,
}

impl Taken {
    pub(crate) fn sges(&self) -> &[SgeCopy] {
        self.sges.first(self.n)
    }
}

impl Inbound {
    /// The receive it holds, if any.
    pub(crate) fn into_recv(self) -> Option<Taken> {
        match self.target {
            Target::Recv { recv, .. } => Some(recv),
            Target::Write { .. } => None,
        }
    }
}
