// SPDX-License-Identifier: GPL-2.0

//! The local wire: a request for a QP of an rsoft port of this host goes
//! to its responder by a direct call, with no MTU (one request per
//! message), and its data is copied once, from the requester's memory into
//! the responder's. A request for an address that no port of this host
//! answers goes on to the RoCEv2 wire.

use super::Roce;
use crate::{
    complete::After,
    copy::{self, Pace},
    net::Net,
    qp::QpUse,
    scratch::Buf,
    transport::{self, Carried, Dest, Request, Response, Wire},
    wq::SgeCopy,
};

/// Delivery to the QPs of local rsoft ports.
pub(crate) struct Local;

impl Wire for Local {
    fn carry(
        &self,
        from: &Net,
        to: Dest<'_>,
        req: &Request<'_>,
        room: &mut Buf<SgeCopy>,
        pace: &Pace<'_>,
        after: &mut After,
    ) -> Carried {
        let answer = match to {
            Dest::Peer(dest) => {
                Net::of_qp(dest).and_then(|port| deliver(port, dest, req, room, pace, after))
            }
            Dest::Address(av) => match from.with_port(av, |port| {
                deliver(port, &port.qp(req.dest)?, req, room, pace, after)
            }) {
                Some(answer) => answer,
                None => return Roce.carry(from, to, req, room, pace, after),
            },
            Dest::Remote(_) => return Roce.carry(from, to, req, room, pace, after),
        };
        answer.map_or(Carried::Lost, Carried::Answered)
    }
}

/// Hands `req` to its responder `dest`, a QP of `port`.
fn deliver(
    port: &Net,
    dest: &QpUse,
    req: &Request<'_>,
    room: &mut Buf<SgeCopy>,
    pace: &Pace<'_>,
    after: &mut After,
) -> Option<Response> {
    // A long copy stops when either end is being destroyed.
    let stop = || (pace.stop)() || dest.is_closing();
    // What refuses the requester's packets is nothing to a responder.
    let pace = Pace {
        may_sleep: pace.may_sleep,
        stop: &stop,
        refused: copy::NEVER,
    };
    transport::receive(port, dest, req, room, &pace, after)
}
