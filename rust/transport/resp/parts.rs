// SPDX-License-Identifier: GPL-2.0

//! Messages of more than one packet at the responder (from a wire with
//! packets, cut at the path MTU). The first packet is judged as a whole
//! request is, and a SEND's takes the receive; each later packet must
//! come next in PSN order, belong to the same message and fit, and its
//! data goes where the one before left off; the last completes the
//! receive (a WRITE with immediate data takes it then). Each packet is at
//! most an MTU and is placed under the responder's lock.

use super::{
    answer_locked, carries, complete_locked, failed_wc, in_sequence, is_from_peer,
    lose_srq_receive, out_of_sequence, receive_at, receive_sges, recv_wc, remote_ok, OnError, Recv,
};
use crate::{
    complete::After,
    copy::Pace,
    counters::Counter,
    ib::{Access, SendOp, WcStatus},
    inbound::{Inbound, Taken, Target},
    mr::{Grant, MrKey},
    net::Net,
    psn::Sequence,
    qp::{QpInner, QpShared, QpUse},
    scratch::Buf,
    transport::{
        packet::{Nak, Opcode, Request, Response},
        rules,
    },
    wq::{RecvWqe, SgeCopy, Sges},
};

/// Why a packet's data cannot be placed.
enum Misfit {
    /// Beyond what the receive or the WRITE's RETH holds.
    Length,
    /// Not the length its place in the message asks (see
    /// [`Piece::fits`](crate::transport::Piece::fits)): the requester's
    /// doing, as rxe fails the receive.
    Malformed,
    /// An MR went meanwhile.
    Memory,
}

impl Misfit {
    /// The status a receive the message took completes with.
    fn status(&self) -> WcStatus {
        match self {
            Self::Length => WcStatus::LocalLength,
            Self::Malformed => WcStatus::RemoteInvalidRequest,
            Self::Memory => WcStatus::LocalProtection,
        }
    }
}

/// Places the data of `req`, the next packet of `inbound` at `dest`
/// (whose lock `d` is), and returns where the message's data now ends.
/// The memory it lands in is checked as the first packet's was (each MR
/// the copy enters, by its [`Grant`]; the QP's rights here): the
/// requester may hold a message open for as long as it likes, and
/// meanwhile an MR may go and its key come back naming memory of another
/// PD or without the rights.
fn place(
    port: &Net,
    dest: &QpShared,
    d: &QpInner,
    inbound: &Inbound,
    req: &Request<'_>,
) -> Result<u32, Misfit> {
    let len = u32::try_from(req.data.len()).map_err(|_| Misfit::Length)?;
    let end = inbound.offset.checked_add(len).ok_or(Misfit::Length)?;
    let moved = match &inbound.target {
        Target::Recv { recv, room } if u64::from(end) <= *room => {
            let dst = receive_sges(dest, recv.sges());
            req.data
                .copy_to(port.mrs(), dst, inbound.offset, &Pace::ONE_PACKET)
        }
        Target::Write { remote, len } if end <= *len => {
            let rights = d.attr.access_flags;
            let need = Access::REMOTE_WRITE;
            if !remote_ok(port, dest, rights, *remote, (*len).into(), need) {
                return Err(Misfit::Memory);
            }
            let dst = [SgeCopy::remote(*remote, *len)];
            let dst = Sges::new(&dst, Grant::new(dest.pd, need));
            req.data
                .copy_to(port.mrs(), dst, inbound.offset, &Pace::ONE_PACKET)
        }
        _ => return Err(Misfit::Length),
    };
    moved.map(|()| end).map_err(|_| Misfit::Memory)
}

/// Starts the message whose first packet `req` was accepted at `dest`
/// (whose lock `d` is), with the receive it took (`recv`, its SGEs in
/// `room`): places its data and keeps what the later packets need. No
/// message is in the middle then: `judge` refused a first packet during
/// one (RC), or ended that one (UC).
pub(super) fn begin(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    req: &Request<'_>,
    recv: Option<(RecvWqe, usize)>,
    room: &mut Buf<SgeCopy>,
    after: &mut After,
) -> Option<Response> {
    let target = match (req.op, recv) {
        (SendOp::Send, Some((wqe, n))) => Target::Recv {
            room: room.first(n).iter().map(|s| u64::from(s.length)).sum(),
            recv: Taken {
                wqe,
                sges: room.take(),
                n,
            },
        },
        (SendOp::RdmaWrite(remote), None) => Target::Write {
            remote,
            len: req.len,
        },
        _ => return None,
    };
    let mut inbound = Inbound { target, offset: 0 };
    match place(port, dest, d, &inbound, req) {
        Ok(end) => {
            inbound.offset = end;
            d.inbound = Some(inbound);
            Some(Response::Ack)
        }
        Err(misfit) => refuse(port, dest, d, inbound, misfit, after),
    }
}

/// Takes `req`, a middle or last packet of a message, at `dest`.
pub(super) fn go_on(
    port: &Net,
    dest: &QpUse,
    req: &Request<'_>,
    room: &mut Buf<SgeCopy>,
    after: &mut After,
) -> Option<Response> {
    let mut d = dest.inner.lock();
    let response = next(port, dest, &mut d, req, room, after);
    answer_locked(dest, &mut d, response, after)
}

/// Takes `req`, a middle or last packet of a message, at `dest`, whose
/// lock `d` is.
fn next(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    req: &Request<'_>,
    room: &mut Buf<SgeCopy>,
    after: &mut After,
) -> Option<Response> {
    let uc = !rules::acknowledged(dest.qp_type);
    if d.attr.dest_qpn != req.src.qpn.num()
        || !carries(dest, req)
        || !rules::takes_requests(d.state)
        || !is_from_peer(d, req)
    {
        after.dropped = true;
        return None;
    }
    match req.psn.against(d.resp_psn) {
        Sequence::Expected => in_sequence(d),
        // UC: a packet was lost, and with it the message.
        _ if uc => {
            abandon(port, dest, d, after);
            after.dropped = true;
            return None;
        }
        Sequence::Ahead => {
            let nak = out_of_sequence(d, req.psn);
            after.dropped |= nak.is_none();
            return nak.map(Response::Nak);
        }
        Sequence::Duplicate => {
            port.counters.add(Counter::WireDuplicates, 1);
            return Some(Response::Ack);
        }
    }
    let same = matches!(
        (d.inbound.as_ref().map(|i| &i.target), req.op),
        (Some(Target::Recv { .. }), SendOp::Send)
            | (Some(Target::Write { .. }), SendOp::RdmaWrite(_))
    );
    let inbound = match d.inbound.take() {
        Some(inbound) if same => inbound,
        // Out of order: no first packet, or another message's.
        other => {
            d.inbound = other;
            abandon(port, dest, d, after);
            after.dropped |= uc;
            return (!uc).then_some(Response::Nak(Nak::InvalidRequest));
        }
    };
    if !req.piece.fits(req.data.len(), req.mtu) {
        return refuse(port, dest, d, inbound, Misfit::Malformed, after);
    }
    if req.piece.last {
        return end(port, dest, d, req, inbound, room, after);
    }
    match place(port, dest, d, &inbound, req) {
        Ok(end) => {
            d.resp_psn = req.psn.next();
            d.inbound = Some(Inbound {
                offset: end,
                ..inbound
            });
            Some(Response::Ack)
        }
        Err(misfit) => refuse(port, dest, d, inbound, misfit, after),
    }
}

/// Ends the message `inbound` at `dest` (whose lock `d` is) with its last
/// packet `req`: a WRITE with immediate data takes its receive now, a
/// SEND_WITH_INV invalidates its key, and the receive completes.
fn end(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    req: &Request<'_>,
    inbound: Inbound,
    room: &mut Buf<SgeCopy>,
    after: &mut After,
) -> Option<Response> {
    if req.opcode == Opcode::WriteImm {
        // The receive is completed, not written: its SGEs need not fit.
        let (recv, ()) = receive_at(dest, d, room, |front| (front.is_some(), ()));
        let Some(Recv { wqe, sges }) = recv else {
            // UC has no RNR NAK to send: the message is lost, as one that
            // lost a packet is.
            if !rules::acknowledged(dest.qp_type) {
                after.dropped = true;
                return None;
            }
            // Tried again from the first packet, after the RNR timer.
            let timer = d.attr.min_rnr_timer;
            d.inbound = Some(inbound);
            return Some(Response::Nak(Nak::Rnr(timer)));
        };
        let n = sges.len();
        return finish(port, dest, d, req, inbound, Some((wqe, room, n)), after);
    }
    finish(port, dest, d, req, inbound, None, after)
}

/// Places the last packet `req` of `inbound` and completes the message:
/// its receive (the SEND's, or `imm_recv` of a WRITE with immediate
/// data) completes with the message's length.
fn finish(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    req: &Request<'_>,
    inbound: Inbound,
    imm_recv: Option<(RecvWqe, &mut Buf<SgeCopy>, usize)>,
    after: &mut After,
) -> Option<Response> {
    let placed = place(port, dest, d, &inbound, req).and_then(|end| match inbound.target {
        Target::Write { len, .. } if end != len => Err(Misfit::Length),
        _ => Ok(end),
    });
    let end = match placed {
        Ok(end) => end,
        Err(misfit) => {
            // A WRITE with immediate data took its receive: it goes with
            // the message, as a SEND's does.
            if let Some((wqe, room, n)) = imm_recv {
                let recv = Taken {
                    wqe,
                    sges: room.take(),
                    n,
                };
                settle(port, dest, d, recv, misfit.status(), false, after);
            }
            return refuse(port, dest, d, inbound, misfit, after);
        }
    };
    d.resp_psn = req.psn.next();
    // SEND_WITH_INV: the key names a fast-registration MR of the responder.
    if let Some(key) = req.invalidate {
        if port.mrs().invalidate(dest.pd, MrKey::of(key)).is_err() {
            if let Some(recv) = inbound.into_recv() {
                settle(
                    port,
                    dest,
                    d,
                    recv,
                    WcStatus::RemoteInvalidRequest,
                    true,
                    after,
                );
            }
            return Some(Response::Nak(Nak::RemoteOperation));
        }
    }
    port.counters
        .executed(req.opcode.counter(), req.opcode.consumes_recv(), end);
    let recv = match (&inbound.target, imm_recv) {
        (Target::Recv { recv, .. }, _) => Some(Recv {
            wqe: recv.wqe,
            sges: recv.sges(),
        }),
        (Target::Write { .. }, Some((wqe, room, n))) => Some(Recv {
            wqe,
            sges: room.first(n),
        }),
        (Target::Write { .. }, None) => None,
    };
    if let Some(recv) = recv {
        let wc = recv_wc(dest, &recv, req, WcStatus::Success, end);
        complete_locked(port, dest, d, wc, req.solicited, OnError::EndQp, after);
    }
    Some(Response::Ack)
}

/// Refuses a packet of `inbound` whose data does not fit or could
/// not be placed: on RC, its receive completes in error and its requester
/// is told, as for a message of one packet; UC loses the message, and the
/// packet counts as dropped, as the rest of the message will, unless the
/// receive's own memory went, which fails the QP (see [`settle`]) as it
/// would with a first packet.
fn refuse(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    inbound: Inbound,
    misfit: Misfit,
    after: &mut After,
) -> Option<Response> {
    let (nak, fails_qp) = match (&misfit, &inbound.target) {
        (Misfit::Length | Misfit::Malformed, _) => (Nak::InvalidRequest, false),
        (Misfit::Memory, Target::Recv { .. }) => (Nak::RemoteOperation, true),
        (Misfit::Memory, Target::Write { .. }) => (Nak::RemoteAccess, false),
    };
    // The expected PSN stays the refused packet's. RC ends with the NAK
    // (see `end_on_nak`): should it be lost, the packet sent again finds
    // the QP in ERR and is never acknowledged as a duplicate, which would
    // complete a WRITE of which nothing past its first packets was placed
    // as a success. UC drops the rest of the message either way.
    if let Some(recv) = inbound.into_recv() {
        settle(port, dest, d, recv, misfit.status(), fails_qp, after);
    }
    let acknowledged = rules::acknowledged(dest.qp_type);
    after.dropped |= !acknowledged && !fails_qp;
    acknowledged.then_some(Response::Nak(nak))
}

/// Disposes of `recv`, the receive of a message of `dest` (whose lock `d`
/// is) refused with `status`. On RC it completes with `status` and the QP
/// enters the error state. UC loses the message alone (see [`lose`]),
/// unless the fault is the receive's own (`fatal`: its memory went, IBA's
/// class A error), which fails it as on RC.
fn settle(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    recv: Taken,
    status: WcStatus,
    fatal: bool,
    after: &mut After,
) {
    if fatal || rules::acknowledged(dest.qp_type) {
        let wc = failed_wc(dest, &recv.wqe, status);
        complete_locked(port, dest, d, wc, false, OnError::EndQp, after);
    } else {
        lose(port, dest, d, recv, after);
    }
}

/// Ends the message `dest` (whose lock `d` is) is in the middle of, whose
/// last packet will not come. On RC, its requester broke the sequence: a
/// SEND's receive completes in error, which moves the QP to the error
/// state (a WRITE has no receive: the caller's NAK ends the QP). UC loses
/// the message alone (see [`lose`]).
pub(super) fn abandon(port: &Net, dest: &QpUse, d: &mut QpInner, after: &mut After) {
    if let Some(recv) = d.inbound.take().and_then(Inbound::into_recv) {
        settle(
            port,
            dest,
            d,
            recv,
            WcStatus::RemoteInvalidRequest,
            false,
            after,
        );
    }
}

/// UC loses the message that took `recv` at `dest` (whose lock `d` is),
/// and goes on (IBA's class D1 and E errors, as rxe): `recv` is kept for
/// the next message, or, an SRQ's, which cannot go back, completes with
/// REM_INV_REQ_ERR while the QP stays ready.
fn lose(port: &Net, dest: &QpUse, d: &mut QpInner, recv: Taken, after: &mut After) {
    if dest.srq.is_none() {
        d.kept = Some(recv);
        return;
    }
    lose_srq_receive(port, dest, d, &recv.wqe, after);
}
