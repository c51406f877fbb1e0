// SPDX-License-Identifier: GPL-2.0

//! The requester: turns the head send WQE of a QP into a request with the
//! next PSN, after the checks that need no responder (its local buffers,
//! its length, its destination), and hands it to the wire. A local
//! operation (fast registration, invalidation) goes nowhere: the requester
//! executes it in order with the QP's other work.

use super::{
    comp,
    head::Head,
    packet::{Carried, Opcode, Piece, Request, Response, Source, ATOMIC_LEN},
    rules, Dest, Wire,
};
use crate::{
    complete::After,
    copy::{BadSge, Pace},
    fastreg,
    flight::{Leg, Outcome},
    ib::{SendOp, WcStatus},
    limits,
    net::Net,
    qp::{KeptPeer, QpUse, Qpn},
    scratch::Buf,
    wq::SgeCopy,
};

/// A `remote_qkey` with this bit set means "use the sending QP's Q_Key".
const QKEY_FROM_QP: u32 = 1 << 31;

/// Executes or fails the head send WQE of `qp` (copied as `head`); its
/// responder copies the receive it takes into `room`. Returns whether
/// there may be more to do.
pub(crate) fn send(
    net: &Net,
    wire: &dyn Wire,
    qp: &QpUse,
    head: &Head<'_>,
    room: &mut Buf<SgeCopy>,
    pace: &Pace<'_>,
    after: &mut After,
) -> bool {
    let fail = |status, after: &mut After| {
        if head.is_front() {
            comp::finish(net, qp, head, status, 0, after)
        } else {
            // Completions come in order: it fails once those before it
            // are done.
            comp::waiting(after)
        }
    };
    match head.leg {
        Leg::Answered(answer) => {
            let response = match answer.outcome {
                Outcome::Aeth(syndrome) => Response::of_aeth(syndrome, answer.psn),
                Outcome::Fault => Some(Response::Fault),
            };
            return comp::answer(net, qp, head, head.len(), response, pace, after);
        }
        Leg::Waiting => return comp::waiting(after),
        Leg::Unsent | Leg::Due | Leg::Rest => {}
    }
    // Behind requests in flight on a wire that answers later goes only a
    // request for the same wire; a local operation, or one for a peer
    // this host keeps, waits until those are answered.
    let behind = !head.is_front();
    let local_peer = matches!(head.peer, Some(KeptPeer::Local(_)));
    if behind && (local_peer || matches!(head.wqe.op, SendOp::Local(_))) {
        return comp::waiting(after);
    }
    let Some(opcode) = Opcode::of(&head.wqe) else {
        let status = match &head.wqe.op {
            SendOp::Local(op) => fastreg::execute(net.mrs(), qp.pd, op),
            _ => WcStatus::LocalQpOperation,
        };
        return fail(status, after);
    };
    if !rules::carries(qp.qp_type, opcode) {
        return fail(WcStatus::LocalQpOperation, after);
    }
    let bth = rules::bth(qp.qp_type, opcode);
    let len = match head.data.check(net.mrs()) {
        Err(BadSge) => return fail(WcStatus::LocalProtection, after),
        Ok(len) => len,
    };
    // An atomic is exactly 8 bytes (one of none would still reach the
    // responder's memory); a datagram is at most the port's MTU.
    if opcode.is_atomic() && len != ATOMIC_LEN {
        return fail(WcStatus::LocalLength, after);
    }
    let max = if qp.qp_type.is_datagram() {
        net.mtu()
    } else {
        limits::MAX_MSG_SIZE
    };
    let len = match u32::try_from(len) {
        Ok(len) if len <= max => len,
        _ => return fail(WcStatus::LocalLength, after),
    };
    let (to, dest, datagram) = match head.datagram {
        Some(d) => {
            let qkey = if d.remote_qkey & QKEY_FROM_QP != 0 {
                head.qkey
            } else {
                d.remote_qkey
            };
            (d.address, Qpn::of(d.remote_qpn), Some((d, qkey)))
        }
        None if qp.qp_type.is_datagram() => return fail(WcStatus::LocalProtection, after),
        None => (head.path.0, head.path.1, None),
    };
    // A connected QP looks its peer up once and keeps it.
    let found;
    let target = match (&datagram, &head.peer) {
        (Some(_), _) => Dest::Address(&to),
        (None, _) if behind => Dest::Remote(&to),
        (None, Some(KeptPeer::Local(peer))) => Dest::Peer(peer),
        (None, Some(KeptPeer::Remote)) => Dest::Remote(&to),
        (None, None) => {
            found = net.find_peer(qp, &to, dest, head.path_epoch);
            found.as_ref().map_or(Dest::Address(&to), Dest::Peer)
        }
    };
    let mut req = Request {
        psn: head.psn,
        opcode,
        bth,
        src: Source {
            qpn: qp.qpn,
            port: net.link,
            sgid: to.grh.as_ref().map(|g| g.sgid),
        },
        dest,
        op: head.wqe.op,
        imm: head.wqe.imm,
        invalidate: head.wqe.invalidate,
        solicited: head.wqe.solicited,
        datagram,
        len,
        mtu: match datagram {
            Some(_) => net.mtu(),
            None => head.mtu.unwrap_or_else(|| net.mtu()),
        },
        span: 1,
        piece: Piece::WHOLE,
        resend_from: 0,
        send_to: u32::MAX,
        twice: opcode == Opcode::Read && head.ask == Some(1),
        data: head.data,
    };
    // A connected QP's request for a port that it does not keep may go
    // on a wire whose answers come later.
    let flight = match target {
        Dest::Address(_) | Dest::Remote(_) if datagram.is_none() => {
            let returns = opcode.answers_with_data();
            match comp::launch(qp, head, req.packets(), returns) {
                Some(flight) => Some(flight),
                None => return comp::waiting(after),
            }
        }
        _ => None,
    };
    if let Some(flight) = &flight {
        req.send_to = flight.until;
    }
    req.resume(head.resume, head.ask);
    let carried = wire.carry(net, target, &req, room, pace, after);
    match (flight, &carried) {
        (Some(flight), Carried::Sent { .. }) => flight.left(),
        // Dropped: nothing answers a request that did not leave.
        (flight, _) => drop(flight),
    }
    match carried {
        Carried::Answered(response) => {
            comp::answer(net, qp, head, len, Some(response), pace, after)
        }
        Carried::Lost => comp::answer(net, qp, head, len, None, pace, after),
        Carried::Sent { packets, cut_short } => {
            if cut_short {
                comp::cut_short(qp, head);
            }
            comp::sent(net, qp, head, len, packets, after)
        }
    }
}

/// The head WQE of `qp` was refused more often than its retries allow: it
/// completes in error with `status`.
pub(crate) fn retries_exceeded(
    net: &Net,
    qp: &QpUse,
    head: &Head<'_>,
    status: WcStatus,
    after: &mut After,
) -> bool {
    comp::finish(net, qp, head, status, 0, after)
}
