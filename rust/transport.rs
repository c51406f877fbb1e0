// SPDX-License-Identifier: GPL-2.0

//! The transport, split as a wire needs it: the requester ([`req`]) turns
//! the head send WQE of a QP into a request with its PSN; a [`Wire`]
//! carries it to the responder ([`resp`]), which checks and executes it
//! when it arrives and answers (ACK, NAK, READ data, atomic result); the
//! completer ([`comp`]) retires the WQE from the answer. Between them
//! passes one packet ([`packet`]). RC carries PSNs and answers end to end;
//! UC and UD expect no answer.

mod comp;
mod head;
mod packet;
mod req;
mod resp;
mod rules;

pub(crate) use comp::{answered, returned, Returned};
pub(crate) use head::Head;
pub(crate) use packet::{cut, Carried, Nak, Opcode, Packets, Piece, Request, Response, Source};
pub(crate) use req::{retries_exceeded, send};
pub(crate) use resp::receive;
pub(crate) use rules::{address_ok, check_modify, may_post, takes_requests};

use crate::{
    complete::After, copy::Pace, ib::Address, net::Net, qp::QpUse, scratch::Buf, wq::SgeCopy,
};

/// Where a request goes.
#[derive(Clone, Copy)]
pub(crate) enum Dest<'a> {
    /// The peer of a connected QP, on a port of this host: the QP keeps it
    /// (see [`crate::qp::Reach`]), so it is reached with no look-up.
    Peer(&'a QpUse),
    /// The port an address names: the wire finds the QP there.
    Address(&'a Address),
    /// An address on another host: the requests before this one to it
    /// went on a wire that answers later, and this one follows them.
    Remote(&'a Address),
}

/// What carries requests of a port's QPs (see [`crate::wire`]).
pub(crate) trait Wire: Sync {
    /// Carries `req` from `from` to `to`: returns the responder's answer
    /// if it came at once, else whether the request left. A receive the
    /// responder takes is copied into `room`; what it completes goes into
    /// `after`.
    fn carry(
        &self,
        from: &Net,
        to: Dest<'_>,
        req: &Request<'_>,
        room: &mut Buf<SgeCopy>,
        pace: &Pace<'_>,
        after: &mut After,
    ) -> Carried;
}
