// SPDX-License-Identifier: GPL-2.0

//! The send WQE a step of a QP acts on, copied out of its queue: the one
//! the requester turns into a request next, or the front one that the
//! completer retires. The name is rxe's: the WQE at the head of the work.

use super::packet::{Opcode, Response};
use crate::{
    flight::{Answer, Event, Leg, Outcome},
    ib::{Access, Address, Datagram, PdId, QpState},
    mr::Grant,
    payload::Payload,
    psn::Psn,
    qp::{KeptPeer, QpInner, Qpn},
    retry::Budget,
    scratch::Buf,
    wq::{SgeCopy, Sges, Wqe},
};

/// The send WQE a step acts on and what executing it needs of the QP,
/// copied out under the QP's lock; its SGEs or inline data into the
/// runner's [`Scratch`](crate::scratch::Scratch).
pub(crate) struct Head<'s> {
    pub(super) wqe: Wqe,
    /// A datagram's destination.
    pub(super) datagram: Option<Datagram>,
    pub(super) data: Payload<'s>,
    /// Its place in the send queue, from the front: the window's entry.
    pub(super) index: usize,
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
    /// Where a connected QP's requests go, if it keeps that and it is
    /// still good.
    pub(super) peer: Option<KeptPeer>,
    /// The most payload one packet of a connected QP carries.
    pub(super) mtu: Option<u32>,
    /// Where its request stands on a wire that answers later.
    pub(super) leg: Leg,
    /// Where it goes on from when it is sent again, in PSNs from its
    /// first: the response packets of a READ that were placed, or the
    /// first packet not answered; or, sent in part, the first not sent.
    pub(super) resume: u32,
    /// Sent again, how many PSNs from `resume` on it asks for, if not all
    /// the rest: see [`Window::hole`](crate::flight::Window::hole).
    pub(super) ask: Option<u32>,
}

impl<'s> Head<'s> {
    /// The send WQE of the QP whose lock `inner` is that its next step acts
    /// on, if any: the front one while answers to it are to be acted on or
    /// it is to be sent again, else the next one to leave, with its SGEs
    /// copied into `send` or its inline data into `inline` (the runner's
    /// [`Scratch`](crate::scratch::Scratch)), and the peer the QP keeps if
    /// the fabric's routes are still `routes`. An answer is taken off the
    /// QP: it is this run's to act on. Its SGEs are entered as MRs of the
    /// QP's PD, `pd`.
    pub(crate) fn of(
        inner: &mut QpInner,
        pd: PdId,
        routes: u32,
        send: &'s mut Buf<SgeCopy>,
        inline: &'s mut Buf<u8>,
    ) -> Option<Self> {
        let (index, leg) = pick(inner)?;
        let window = &inner.window;
        let (psn, resume, ask) = match (window.get(index), leg) {
            (Some(sent), Leg::Rest) => (sent.first, window.rest().unwrap_or(0), None),
            (Some(sent), _) if index == 0 => (sent.first, window.resume(), window.hole()),
            (Some(sent), _) => (sent.first, 0, None),
            (None, _) => (inner.req_psn, 0, None),
        };
        let (wqe, sges) = inner.sq.get(index)?;
        let data = match inner.sq.inline_of(index) {
            Some(bytes) => Payload::Inline(inline.fill(bytes)?),
            None => {
                // A READ or an atomic writes its result there; the rest
                // read their data from there.
                let writes = Opcode::of(wqe).is_some_and(Opcode::answers_with_data);
                let need = if writes {
                    Access::LOCAL_WRITE
                } else {
                    Access::LOCAL_READ
                };
                Payload::Sges(Sges::new(send.fill(sges)?, Grant::new(pd, need)))
            }
        };
        let a = &inner.attr;
        Some(Self {
            wqe: *wqe,
            datagram: inner.sq.datagram_of(index),
            data,
            index,
            epoch: inner.sq_epoch,
            psn,
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
            ask,
        })
    }

    /// Whether its request is to be sent now (again, if it was before).
    pub(crate) fn sends(&self) -> bool {
        matches!(self.leg, Leg::Unsent | Leg::Due | Leg::Rest)
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
    pub(crate) fn sges(&self) -> Option<Sges<'s>> {
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

    /// Whether it is the front of its queue: the only one that completes.
    pub(crate) fn is_front(&self) -> bool {
        self.index == 0
    }

    /// Whether it is still on the queue whose lock `inner` is: a RESET
    /// since it was copied discarded it.
    pub(crate) fn is_queued(&self, inner: &QpInner) -> bool {
        inner.sq_epoch == self.epoch
    }
}

/// Which send WQE of the QP whose lock `inner` is the next step acts on,
/// counted from the queue's front, and where it stands: the front one
/// answered in full, refused, or to be sent again (go-back-N); else the
/// next one to leave, while the requester does not wait out an RNR timer
/// and its send queue does not drain (SQD: nothing new leaves, but a
/// front that was tried and refused is tried again).
fn pick(inner: &mut QpInner) -> Option<(usize, Leg)> {
    let window = &mut inner.window;
    if let Some(front) = window.front() {
        if window.front_answered() {
            inner.retries.answered();
            let answer = Answer {
                psn: front.last,
                outcome: Outcome::Aeth(Response::ACK_SYNDROME),
            };
            return Some((0, Leg::Answered(answer)));
        }
        match window.take_event() {
            Some(Event::Refused(answer)) => {
                // If the front survives (an RNR NAK), what followed it is
                // sent again after it.
                window.go_back();
                inner.retries.answered();
                return Some((0, Leg::Answered(answer)));
            }
            // While an RNR timer runs, the packets after the refused one
            // bring sequence-error NAKs: its end sends them again.
            Some(Event::Resend) if inner.retries.holds() => {}
            Some(Event::Resend) => inner.retries.resend_now(),
            None => {}
        }
        if inner.retries.due() {
            window.go_back();
            return Some((0, Leg::Due));
        }
        if inner.retries.holds() {
            return Some((0, Leg::Waiting));
        }
        if window.rest().is_some() {
            return Some((0, Leg::Rest));
        }
    }
    let next = window.cursor();
    let new = next > 0 || !inner.retries.tried();
    let draining = inner.state == QpState::Sqd && new;
    match window.get(next) {
        Some(_) => Some((next, Leg::Due)),
        None if next < inner.sq.len() as usize && !draining => Some((next, Leg::Unsent)),
        None => (!window.is_empty()).then_some((0, Leg::Waiting)),
    }
}
