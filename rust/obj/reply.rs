// SPDX-License-Identifier: GPL-2.0

//! An RC responder's answers on the RoCEv2 wire that wait their turn. The
//! response to a long READ is sent by the QP's worker, a batch of packets
//! at a time, not by the softirq that took the READ: that must not do
//! unbounded work, nor burst more packets than the receiving host's
//! backlog holds. The answers to the requests after it wait behind it,
//! as the requester takes answers in PSN order.

use super::wq::GrantedSge;
use crate::{
    ib::{Grh, QpNum},
    psn::Psn,
};
use kernel::prelude::*;

/// What an answer says.
#[derive(Clone, Copy)]
pub(crate) enum Said {
    Ack,
    /// A NAK, with its AETH syndrome.
    Nak(u8),
    /// An atomic's original value.
    Atomic(u64),
    /// A READ's data, in the responder's memory, checked when the READ was
    /// taken (and each time its packets are filled); `sent` of its
    /// response packets are out.
    Read {
        src: GrantedSge,
        sent: u32,
    },
}

/// An answer to one request.
#[derive(Clone, Copy)]
pub(crate) struct Reply {
    /// The responder QP's path back to the requester.
    pub(crate) route: Grh,
    /// The requester's QP.
    pub(crate) dest: QpNum,
    /// The PSN of its (first) packet.
    pub(crate) psn: Psn,
    /// The path MTU that a READ's response is cut at.
    pub(crate) mtu: u32,
    pub(crate) said: Said,
}

/// Which answer is the oldest waiting one: it stays the same answer until
/// it is sent or the queue is emptied.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Turn(u32);

/// A QP's answers waiting for its worker, oldest first: a ring.
pub(crate) struct Replies {
    slots: KVec<Option<Reply>>,
    /// The oldest's slot, and how many wait.
    head: usize,
    len: usize,
    /// Bumped whenever the oldest answer leaves.
    turn: u32,
    /// The responder ended the QP with a NAK: what waits still goes out in
    /// the error state, the NAK last.
    sealed: bool,
}

impl Replies {
    /// The most answers that wait. A requester that sends more READs and
    /// atomics than that before an answer loses the rest, and sends them
    /// again after its local ACK timeout; ACKs in a row take one place.
    const MAX: usize = 16;

    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            slots: KVec::from_elem(None, Self::MAX, GFP_KERNEL)?,
            head: 0,
            len: 0,
            turn: 0,
            sealed: false,
        })
    }

    /// The responder ends the QP with a NAK: the answers it decided on
    /// before still go out, the NAK last, as its requester waits for them
    /// in PSN order (dropped, it would retry into a QP in ERR until its
    /// retries ran out).
    pub(crate) fn seal(&mut self) {
        self.sealed = true;
    }

    /// Whether [`Replies::seal`] keeps the answers of a QP that takes no
    /// more requests.
    pub(crate) fn sealed(&self) -> bool {
        self.sealed
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn slot(&mut self, i: usize) -> Option<&mut Option<Reply>> {
        let n = self.slots.len();
        self.slots.get_mut((self.head + i) % n.max(1))
    }

    /// Queues `reply` behind the others; returns whether there was room.
    /// An ACK right behind another ACK replaces it, as ACKs are cumulative,
    /// unless that one is the oldest, whose sending may have begun.
    pub(crate) fn push(&mut self, reply: Reply) -> bool {
        let len = self.len;
        if matches!(reply.said, Said::Ack) && len > 1 {
            if let Some(last) = self.slot(len - 1) {
                if matches!(
                    last,
                    Some(Reply {
                        said: Said::Ack,
                        ..
                    })
                ) {
                    *last = Some(reply);
                    return true;
                }
            }
        }
        if len >= self.slots.len() {
            return false;
        }
        let Some(free) = self.slot(len) else {
            return false;
        };
        *free = Some(reply);
        self.len += 1;
        true
    }

    /// Keeps the answers that `keep` says to, in their order; if the
    /// oldest goes, the next is the oldest of a new turn.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&Reply) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            let Some(reply) = self.slot(i).and_then(|s| s.take()) else {
                continue;
            };
            if !keep(&reply) {
                if i == 0 {
                    self.turn = self.turn.wrapping_add(1);
                }
                continue;
            }
            if let Some(slot) = self.slot(kept) {
                *slot = Some(reply);
            }
            kept += 1;
        }
        self.len = kept;
    }

    /// The oldest answer, and its turn.
    pub(crate) fn oldest(&self) -> Option<(Turn, Reply)> {
        let reply = (*self.slots.get(self.head)?)?;
        (self.len > 0).then_some((Turn(self.turn), reply))
    }

    /// The oldest answer of `turn`, if it is still that one, had its first
    /// `sent` packets sent, and is done with when `done`.
    pub(crate) fn sent(&mut self, turn: Turn, sent: u32, done: bool) {
        if turn != Turn(self.turn) || self.len == 0 {
            return;
        }
        if done {
            if let Some(oldest) = self.slot(0) {
                *oldest = None;
            }
            self.head = (self.head + 1) % self.slots.len().max(1);
            self.len -= 1;
            self.turn = self.turn.wrapping_add(1);
        } else if let Some(Some(Reply {
            said: Said::Read { sent: s, .. },
            ..
        })) = self.slot(0)
        {
            *s = sent;
        }
    }

    /// Drops every waiting answer, and the seal: the QP's consumer moved it
    /// to RESET or ERR, or it takes no more requests, unsealed.
    pub(crate) fn clear(&mut self) {
        while self.len > 0 {
            self.sent(Turn(self.turn), 0, true);
        }
        self.sealed = false;
    }
}
