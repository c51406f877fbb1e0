// SPDX-License-Identifier: GPL-2.0

//! The head send WQE of a QP, copied out of its queue for one step: what
//! the requester turns into a request and the completer retires.

use super::packet::{Nak, Opcode, Response};
use crate::{
    flight::{Answer, Leg, Outcome},
    ib::Address,
    payload::Payload,
    psn::Psn,
    qp::{QpInner, QpUse, Qpn},
    retry::Budget,
    scratch::Buf,
    wq::{SgeCopy, Wqe},
};

/// The head send WQE of a QP and what executing it needs of the QP,
/// copied out under the QP's lock; its SGEs or inline data into the
/// runner's [`Scratch`](crate::scratch::Scratch).
pub(crate) struct Head<'s> {
    pub(super) wqe: Wqe,
    pub(super) data: Payload<'s>,
    /// The send queue's epoch when copied (see [`QpInner::sq_epoch`]).
    epoch: u32,
    /// The PSN its request carries.
    pub(super) psn: Psn,
    budget: Budget,
    /// The QP's own Q_Key, for a datagram that asks for it.
    pub(super) qkey: u32,
    /// A connected QP's destination.
    pub(super) path: (Address, Qpn),
    /// The epoch of `path` (see [`QpInner::path_epoch`]).
    pub(super) path_epoch: u32,
    /// A connected QP's peer, if it keeps one that is still good.
    pub(super) peer: Option<QpUse>,
    /// The most payload one packet of a connected QP carries.
    pub(super) mtu: Option<u32>,
    /// Where its request stands on a wire that answers later.
    pub(super) leg: Leg,
    /// Where it goes on from when it is sent again, in PSNs from its
    /// first: the response packets of a READ that were placed, or the
    /// packet its responder NAKed as the one it expects.
    pub(super) resume: u32,
}

impl<'s> Head<'s> {
    /// The head send WQE of the QP whose lock `inner` is, if any, its
    /// SGEs copied into `send` or its inline data into `inline` (the
    /// runner's [`Scratch`](crate::scratch::Scratch)), with the peer the
    /// QP keeps if the fabric's routes are still `routes`. An answer to
    /// its request in flight is taken off the QP: it is this run's to act
    /// on.
    pub(crate) fn of(
        inner: &mut QpInner,
        routes: u32,
        send: &'s mut Buf<SgeCopy>,
        inline: &'s mut Buf<u8>,
    ) -> Option<Self> {
        let leg = leg(inner);
        let resume = inner
            .flight
            .filter(|f| f.epoch == inner.sq_epoch && f.first == inner.req_psn)
            .map_or(0, |f| f.expect.since(f.first));
        let (wqe, sges) = inner.sq.front()?;
        let data = match inner.sq.front_inline() {
            Some(bytes) => Payload::Inline(inline.fill(bytes)?),
            None => Payload::Sges(send.fill(sges)?),
        };
        let a = &inner.attr;
        Some(Self {
            wqe: *wqe,
            data,
            epoch: inner.sq_epoch,
            psn: inner.req_psn,
            budget: Budget {
                rnr_retry: a.rnr_retry,
                retry_cnt: a.retry_cnt,
                timeout: a.timeout,
            },
            qkey: a.qkey,
            path: (a.av, Qpn::of(a.dest_qpn)),
            path_epoch: inner.path_epoch(),
            peer: inner.kept_peer(routes),
            mtu: a.path_mtu.map(|m| m.bytes()),
            leg,
            resume,
        })
    }

    /// Whether its request is to be sent now (again, if it was before).
    pub(crate) fn sends(&self) -> bool {
        matches!(self.leg, Leg::Unsent | Leg::Due)
    }

    /// What executing it copies.
    pub(crate) fn bytes(&self) -> u64 {
        self.data.len()
    }

    /// The length of its message (checked when it was first sent).
    pub(crate) fn len(&self) -> u32 {
        u32::try_from(self.bytes()).unwrap_or(u32::MAX)
    }

    /// Its local buffers: where a READ or an atomic puts its result.
    pub(crate) fn sges(&self) -> &'s [SgeCopy] {
        self.data.sges()
    }

    /// The PSN of its request; `None` for a local operation.
    pub(crate) fn psn(&self) -> Option<Psn> {
        Opcode::of(&self.wqe).map(|_| self.psn)
    }

    /// How often it may be retried, and after how long.
    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Whether it is still on the queue whose lock `inner` is: a RESET
    /// since it was copied discarded it.
    pub(crate) fn is_queued(&self, inner: &QpInner) -> bool {
        inner.sq_epoch == self.epoch
    }
}

/// Where the request of the head send WQE of the QP whose lock `inner` is
/// stands; takes the answer that it waited for. A sequence-error NAK has
/// it sent again at once, from the PSN the responder expects (go-back-N).
fn leg(inner: &mut QpInner) -> Leg {
    let epoch = inner.sq_epoch;
    let Some(flight) = inner.flight.as_mut().filter(|f| f.epoch == epoch) else {
        return Leg::Unsent;
    };
    match inner.answer.take() {
        Some(answer) if flight.takes(&answer) => match expected(&answer) {
            Some(from) => {
                let on = from.since(flight.first) > flight.expect.since(flight.first);
                if on {
                    flight.expect = from;
                }
                inner.retries.resend_now(on);
                Leg::Due
            }
            None => {
                inner.retries.answered();
                Leg::Answered(answer)
            }
        },
        // An answer to an earlier request, or one not asked for.
        _ if inner.retries.due() => Leg::Due,
        _ => Leg::Waiting,
    }
}

/// The PSN a sequence-error NAK says its responder expects.
fn expected(answer: &Answer) -> Option<Psn> {
    match answer.outcome {
        Outcome::Aeth(syndrome) => match Response::of_aeth(syndrome, answer.psn)? {
            Response::Nak(Nak::Sequence(psn)) => Some(psn),
            _ => None,
        },
        Outcome::Fault => None,
    }
}
