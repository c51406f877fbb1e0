// SPDX-License-Identifier: GPL-2.0

//! The local wire: a request for a QP of an rsoft port of this host goes
//! to its responder by a direct call, with no MTU (one request per
//! message), and its data is copied once, from the requester's memory into
//! the responder's.

use crate::{
    complete::After,
    copy::{Pace, SgeCopy},
    ib::Address,
    net::Net,
    scratch::Buf,
    transport::{self, Request, Response, Wire},
};

/// Delivery to the QPs of local rsoft ports.
pub(crate) struct Local;

impl Wire for Local {
    fn carry(
        &self,
        from: &Net,
        to: &Address,
        req: &Request<'_>,
        room: &mut Buf<SgeCopy>,
        pace: &Pace<'_>,
        after: &mut After,
    ) -> Option<Response> {
        from.with_port(to, |port| {
            let dest = port.qp(req.dest)?;
            // A long copy stops when either end is being destroyed.
            let stop = || (pace.stop)() || dest.is_closing();
            let pace = Pace {
                may_sleep: pace.may_sleep,
                stop: &stop,
            };
            transport::receive(port, &dest, req, room, &pace, after)
        })
        .flatten()
    }
}
