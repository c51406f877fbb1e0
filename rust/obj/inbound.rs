// SPDX-License-Identifier: GPL-2.0

//! A message of more than one packet at its responder, between its first
//! packet and its last: the receive its first packet took (a SEND) or the
//! memory it named (a WRITE), and how much of it the packets so far
//! filled; and the receive of a UC message that lost a packet, kept for
//! the next. The QP keeps both under its lock.

use super::{
    scratch::Buf,
    wq::{SgeCopy, Wqe},
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
    /// A SEND's receive: the WQE, its SGEs (the first `n` of `sges`) and
    /// the bytes they hold.
    Recv {
        wqe: Wqe,
        sges: Buf<SgeCopy>,
        n: usize,
        room: u64,
    },
    /// A WRITE's memory, as its RETH named it: `len` bytes at `remote`.
    Write { remote: Remote, len: u32 },
}

/// The receive of a UC message that lost a packet, on a QP without an SRQ:
/// the next message takes it before any other, as if the lost one had
/// never come (IBA's class D1 error).
pub(crate) struct Kept {
    pub(crate) wqe: Wqe,
    /// Its SGEs: the first `n`.
    pub(crate) sges: Buf<SgeCopy>,
    pub(crate) n: usize,
}

impl Inbound {
    /// The receive it holds, if any: a flush completes it.
    pub(crate) fn into_recv(self) -> Option<Wqe> {
        match self.target {
            Target::Recv { wqe, .. } => Some(wqe),
            Target::Write { .. } => None,
        }
    }
}
