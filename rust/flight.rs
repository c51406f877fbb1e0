// SPDX-License-Identifier: GPL-2.0

//! An RC request on a wire whose answers come later, in softirq (the
//! RoCEv2 wire): the requester notes the PSNs its packets carry and
//! waits; the receive path notes the answer that names one of them, and
//! the completer retires the WQE from it on the QP's next run. Without an
//! answer, the local ACK timeout has the requester send the request
//! again, from its first packet (go-back-N). One request is in flight at
//! a time: a window of one WQE.

use crate::psn::Psn;

/// The packets of the head send WQE's request, as last sent: its own,
/// or those of a READ's response.
#[derive(Clone, Copy)]
pub(crate) struct Flight {
    /// The send queue's epoch when it was sent: a RESET discards it.
    pub(crate) epoch: u32,
    pub(crate) first: Psn,
    pub(crate) last: Psn,
    /// The first PSN not known to have arrived: a READ's next response
    /// packet to place (they are taken in order), or the packet of a SEND
    /// or WRITE that its responder NAKed as the one it expects.
    pub(crate) expect: Psn,
}

/// An answer from the wire: the PSN it names and what it says.
#[derive(Clone, Copy)]
pub(crate) struct Answer {
    pub(crate) psn: Psn,
    pub(crate) outcome: Outcome,
}

/// What an answer says.
#[derive(Clone, Copy)]
pub(crate) enum Outcome {
    /// Its AETH syndrome.
    Aeth(u8),
    /// Its data (a READ's, an atomic's) could not be placed in the
    /// requester's buffers: an MR of theirs went.
    Fault,
}

/// Whether an AETH's `syndrome` is an ACK's (IBA 9.7.5.2.6: its top three
/// bits are 0; an RNR NAK's are 1 and another NAK's 3, the low five bits
/// the credits, the timer or the NAK code).
pub(crate) fn is_ack(syndrome: u8) -> bool {
    syndrome >> 5 == 0
}

/// Where the head send WQE's request stands.
#[derive(Clone, Copy)]
pub(crate) enum Leg {
    /// Not on a wire that answers later: the requester sends it.
    Unsent,
    /// Sent; no answer yet, and the wait for one has not run out.
    Waiting,
    /// Sent, and the wait for an answer ran out: it is sent again.
    Due,
    /// Answered.
    Answered(Answer),
}

impl Flight {
    /// The request is `packets` packets from PSN `first` on.
    pub(crate) fn new(epoch: u32, first: Psn, packets: u32) -> Self {
        Self {
            epoch,
            first,
            last: first.add(packets.saturating_sub(1)),
            expect: first,
        }
    }

    /// The PSN of the next request.
    pub(crate) fn next(&self) -> Psn {
        self.last.next()
    }

    /// Whether `answer` is the one this request waits for: an ACK of its
    /// last packet (an earlier one was not asked for), or a NAK of any.
    pub(crate) fn takes(&self, answer: &Answer) -> bool {
        match answer.outcome {
            Outcome::Aeth(syndrome) if !is_ack(syndrome) => {
                answer.psn.within(self.first, self.last)
            }
            _ => answer.psn == self.last,
        }
    }
}
