// SPDX-License-Identifier: GPL-2.0

//! The requester: turns the head send WQE of a QP into a request with the
//! next PSN, after the checks that need no responder (its local buffers,
//! its length, its destination), and hands it to the wire. A local
//! operation (fast registration, invalidation) goes nowhere: the requester
//! executes it in order with the QP's other work.

use super::{
    comp,
    packet::{Opcode, Request, Source},
    rules, Dest, Wire,
};
use crate::{
    complete::After,
    copy::{BadSge, Pace, SgeCopy},
    fastreg,
    ib::{Access, Address, QpType, SendOp, WcStatus},
    limits,
    net::Net,
    payload::Payload,
    psn::Psn,
    qp::{QpInner, QpUse, Qpn},
    retry::Budget,
    scratch::Buf,
    wq::Wqe,
};

/// A `remote_qkey` with this bit set means "use the sending QP's Q_Key".
const QKEY_FROM_QP: u32 = 1 << 31;

/// The head send WQE of a QP and what executing it needs of the QP,
/// copied out under the QP's lock; its SGEs or inline data into the
/// runner's [`Scratch`](crate::scratch::Scratch).
pub(crate) struct Head<'s> {
    wqe: Wqe,
    data: Payload<'s>,
    /// The send queue's epoch when copied (see [`QpInner::sq_epoch`]).
    epoch: u32,
    /// The PSN its request carries.
    psn: Psn,
    budget: Budget,
    /// The QP's own Q_Key, for a datagram that asks for it.
    qkey: u32,
    /// A connected QP's destination.
    path: (Address, Qpn),
    /// The epoch of `path` (see [`QpInner::path_epoch`]).
    path_epoch: u32,
    /// A connected QP's peer, if it keeps one that is still good.
    peer: Option<QpUse>,
}

impl<'s> Head<'s> {
    /// The head send WQE of the QP whose lock `inner` is, if any, its
    /// SGEs copied into `send` or its inline data into `inline` (the
    /// runner's [`Scratch`](crate::scratch::Scratch)), with the peer the
    /// QP keeps if the fabric's routes are still `routes`.
    pub(crate) fn of(
        inner: &QpInner,
        routes: u32,
        send: &'s mut Buf<SgeCopy>,
        inline: &'s mut Buf<u8>,
    ) -> Option<Self> {
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
        })
    }

    /// What executing it copies.
    pub(crate) fn bytes(&self) -> u64 {
        self.data.len()
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
    let fail = |status, after: &mut After| comp::finish(net, qp, head, status, 0, after);
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
    let bth = opcode.bth(qp.qp_type);
    // Reads and atomics write their result into the local SGEs.
    let need = match opcode {
        Opcode::Read | Opcode::CompareSwap | Opcode::FetchAdd => Access::LOCAL_WRITE,
        _ => Access::LOCAL_READ,
    };
    let len = match head.data.check(net.mrs(), qp.pd, need) {
        Err(BadSge) => return fail(WcStatus::LocalProtection, after),
        Ok(len) => len,
    };
    // A datagram is at most the port's MTU; an atomic is 8 bytes.
    let max = match (qp.qp_type, opcode) {
        (QpType::Ud | QpType::Gsi, _) => net.mtu(),
        (_, Opcode::CompareSwap | Opcode::FetchAdd) if len != 8 => 0,
        _ => limits::MAX_MSG_SIZE,
    };
    let len = match u32::try_from(len) {
        Ok(len) if len <= max => len,
        _ => return fail(WcStatus::LocalLength, after),
    };
    let (to, dest, datagram) = match head.wqe.datagram {
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
        (None, Some(peer)) => Dest::Peer(peer),
        (None, None) => {
            found = net.find_peer(qp, &to, dest, head.path_epoch);
            found.as_ref().map_or(Dest::Address(&to), Dest::Peer)
        }
    };
    let req = Request {
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
        data: head.data,
    };
    let response = wire.carry(net, target, &req, room, pace, after);
    comp::answer(net, qp, head, len, response, pace, after)
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
