// SPDX-License-Identifier: GPL-2.0

//! The responder: takes a request when it arrives at its QP, checks it
//! (connection, state, PSN, opcode, Q_Key, keys and access, lengths,
//! receive), executes it and answers. A datagram, at most one MTU, and a
//! SEND or WRITE of at most a page are executed under the responder's
//! lock, in the critical section that judged them (which also keeps the
//! receive completions of concurrent senders in order); larger data moves
//! with no lock held.

mod parts;

use super::{
    packet::{Nak, Opcode, Request, Response, ATOMIC_LEN},
    rules,
};
use crate::{
    complete::{self, After},
    copy::{self, check_sges, write_sges, BadSge, Pace},
    counters::Counter,
    grh::{self, GRH_LEN},
    ib::{self, Access, RecvGrh, Remote, SendOp, Wc, WcEx, WcOpcode, WcStatus},
    limits,
    mr::{Grant, MrKey},
    net::{Link, Net},
    psn::{Psn, Sequence},
    qp::{QpInner, QpShared, QpUse, Qpn},
    scratch::Buf,
    wq::{GrantedSge, RecvWqe, SgeCopy, Sges},
};
use kernel::prelude::*;

/// A receive WQE a request took, its SGEs in the caller's room.
struct Recv<'r> {
    wqe: RecvWqe,
    sges: &'r [SgeCopy],
}

/// What the responder makes of a request, decided under its lock.
enum Verdict<'r> {
    /// Execute it, with the receive it takes, if any.
    Execute(Option<Recv<'r>>),
    /// Executed before: answered again, never executed again; or a
    /// duplicate READ refused, NAKed.
    Answer(Response),
    /// Refused; a receive it took completes in error with the status.
    Nak(Nak, Option<(Recv<'r>, WcStatus)>),
    /// Dropped without a word.
    Drop,
}

/// Takes `req`, which arrived at `port` for `dest`, and answers it; `None`
/// when it is dropped without an answer. The receive it takes is copied
/// into `room`.
pub(crate) fn receive(
    port: &Net,
    dest: &QpUse,
    req: &Request<'_>,
    room: &mut Buf<SgeCopy>,
    pace: &Pace<'_>,
    after: &mut After,
) -> Option<Response> {
    if dest.qp_type.is_datagram() {
        datagram(port, dest, req, room, after);
        return None;
    }
    if !req.piece.first {
        return parts::go_on(port, dest, req, room, after);
    }
    let mut d = dest.inner.lock();
    let verdict = match judge(port, dest, &mut d, req, room, after) {
        Verdict::Execute(recv) if !req.piece.last => {
            let recv = recv.map(|r| (r.wqe, r.sges.len()));
            let response = parts::begin(port, dest, &mut d, req, recv, room, after);
            return answer_locked(dest, &mut d, response, after);
        }
        verdict => verdict,
    };
    if let Verdict::Execute(recv) = &verdict {
        if is_small(req) {
            return Some(execute_locked(
                port,
                dest,
                &mut d,
                req,
                recv.as_ref(),
                after,
            ));
        }
    }
    // Completed with no lock held: a flush of `dest`, and its Last WQE
    // Reached event, wait for it.
    if let Verdict::Execute(Some(_)) | Verdict::Nak(_, Some(_)) = &verdict {
        d.rq_busy += 1;
    }
    match &verdict {
        // The receive says why as it completes, with no lock held; the QP
        // takes no request meanwhile.
        Verdict::Nak(_, Some(_)) => {
            d.replies.seal();
            dest.enter_error(&mut d);
        }
        Verdict::Nak(nak, None) => end_on_nak(dest, &mut d, *nak, after),
        _ => {}
    }
    drop(d);
    match verdict {
        Verdict::Drop => {
            after.dropped = true;
            None
        }
        Verdict::Answer(response) => Some(response),
        Verdict::Nak(nak, recv) => {
            if let Some((recv, status)) = recv {
                complete_recv(port, dest, recv, req, status, 0, after);
            }
            // UC's requester hears nothing of it.
            rules::acknowledged(dest.qp_type).then_some(Response::Nak(nak))
        }
        Verdict::Execute(recv) => match execute(port, dest, req, recv, pace, after) {
            // Destroyed during the copy, it answers nothing, as a host
            // that vanished does not: its requester retries, then fails
            // as it would on a wire.
            Response::Fault if dest.is_closing() => {
                after.dropped = true;
                None
            }
            response => Some(response),
        },
    }
}

/// Ends `dest` (whose lock `d` is) if its answer to a request, `response`,
/// is a NAK that ends it, and returns the answer.
fn answer_locked(
    dest: &QpUse,
    d: &mut QpInner,
    response: Option<Response>,
    after: &mut After,
) -> Option<Response> {
    if let Some(Response::Nak(nak)) = &response {
        end_on_nak(dest, d, *nak, after);
    }
    response
}

/// Ends `dest`, whose lock `d` is held since it decided on `nak`, if
/// `nak` ends it: an RC responder that refuses a request as invalid, or
/// for its access or its receive, enters the error state with its
/// requester, as IBA's responder classes A and C have it (and rxe and
/// hardware do). It takes nothing more from a peer that broke the rules,
/// and its consumer learns why from a receive completed in error or else
/// an affiliated event. Under the same lock hold, so that a QP reset and
/// connected again meanwhile is not ended for its past.
fn end_on_nak(dest: &QpUse, d: &mut QpInner, nak: Nak, after: &mut After) {
    if let Some(fault) = nak.fault() {
        d.replies.seal();
        if dest.fail(d, fault) {
            run_after(dest, after);
        }
    }
}

/// The SGEs of `qp`'s receive `sges`, entered as MRs of the PD of its
/// queue (the SRQ's, if it has one) that the consumer may write.
fn receive_sges<'a>(qp: &QpShared, sges: &'a [SgeCopy]) -> Sges<'a> {
    let pd = qp.srq.as_ref().map_or(qp.pd, |srq| srq.pd);
    Sges::new(sges, Grant::new(pd, Access::LOCAL_WRITE))
}

/// Shows the oldest receive of `dest` (whose lock `d` is) to `decide`,
/// and takes it, its SGEs copied into `room`, if `decide` says so. An
/// empty SRQ remembers that a sender waits for it.
fn receive_at<'r, R>(
    dest: &QpShared,
    d: &mut QpInner,
    room: &'r mut Buf<SgeCopy>,
    decide: impl FnOnce(Option<&[SgeCopy]>) -> (bool, R),
) -> (Option<Recv<'r>>, R) {
    match &dest.srq {
        Some(srq) => {
            let mut s = srq.inner.lock();
            let (take, r) = decide(s.rq.front().map(|(_, sges)| sges));
            if s.rq.is_empty() {
                s.waited_on = true;
            }
            let recv = front_into(s.rq.front(), room, take).and_then(|sges| {
                let wqe = srq.pop(&mut s)?;
                Some(Recv { wqe, sges })
            });
            (recv, r)
        }
        None => {
            let (take, r) = decide(d.receive_front().map(|(_, sges)| sges));
            let recv = front_into(d.receive_front(), room, take).and_then(|sges| {
                let wqe = d.take_receive()?;
                Some(Recv { wqe, sges })
            });
            (recv, r)
        }
    }
}

/// The SGEs of `front`, the oldest receive of a queue, copied into `room`,
/// when it is to be taken.
fn front_into<'r>(
    front: Option<(&RecvWqe, &[SgeCopy])>,
    room: &'r mut Buf<SgeCopy>,
    take: bool,
) -> Option<&'r [SgeCopy]> {
    let (_, sges) = front.filter(|_| take)?;
    room.fill(sges)
}

/// Whether `remote` names `len` bytes of an MR of `dest` that both the MR
/// and the QP (whose rights are `qp_rights`) open to `need`.
fn remote_ok(
    port: &Net,
    dest: &QpShared,
    qp_rights: Access,
    remote: Remote,
    len: u64,
    need: Access,
) -> bool {
    port.mrs().passes(MrKey::of(remote.rkey), |mr| {
        mr.pd == dest.pd
            && mr.access.contains(need)
            && qp_rights.contains(need)
            && mr.offset_of(remote.addr, len).is_some()
    })
}

/// Decides, under the responder's lock, what `req`, a message's first
/// packet, comes to at `dest`. On UC, which answers nothing, whatever the
/// responder would refuse is dropped and takes no receive, but for a
/// receive whose buffers are bad, which fails with the QP, and an SRQ's
/// receive too small for the message, which fails alone.
fn judge<'r>(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    req: &Request<'_>,
    room: &'r mut Buf<SgeCopy>,
    after: &mut After,
) -> Verdict<'r> {
    let uc = !rules::acknowledged(dest.qp_type);
    // A responder answers only its connected peer, on its own transport,
    // and only when ready; other packets it drops without a word.
    if d.attr.dest_qpn != req.src.qpn.num()
        || !carries(dest, req)
        || !rules::takes_requests(d.state)
        || !is_from_peer(d, req)
    {
        return Verdict::Drop;
    }
    if uc {
        // A message that lost its last packet ends where the next begins
        // (its completion may overrun the CQ).
        parts::abandon(port, dest, d, after);
        if !rules::takes_requests(d.state) {
            return Verdict::Drop;
        }
    }
    // UC messages are one packet each: each starts anew. A duplicate READ
    // is read again, after the same checks.
    let seq = if uc {
        Sequence::Expected
    } else {
        req.psn.against(d.resp_psn)
    };
    match seq {
        Sequence::Ahead => {
            return out_of_sequence(d, req.psn).map_or(Verdict::Drop, |n| Verdict::Nak(n, None))
        }
        Sequence::Expected => in_sequence(d),
        Sequence::Duplicate => {
            port.counters.add(Counter::WireDuplicates, 1);
            if !matches!(req.op, SendOp::RdmaRead(_)) {
                return duplicate(d, req);
            }
        }
    }
    let fresh = seq == Sequence::Expected;
    // RC: a message's first packet while another still lacks its last
    // breaks the sequence (IBA's class C, rxe's MISSING_OPCODE_LAST_C): the
    // other's receive fails, and the responder ends with the NAK. UC ended
    // the other above, and goes on.
    if fresh && !uc && d.inbound.is_some() {
        parts::abandon(port, dest, d, after);
        return Verdict::Nak(Nak::InvalidRequest, None);
    }
    // A duplicate READ refused (its MR went since, say) is NAKed but
    // leaves the QP as it is: it may be stale, reordered, or another QP's
    // of the peer host, as the wire names none.
    let nak = |nak| match (uc, fresh) {
        (true, _) => Verdict::Drop,
        (false, true) => Verdict::Nak(nak, None),
        (false, false) => Verdict::Answer(Response::Nak(nak)),
    };
    // A packet not the length its place in the message asks, or a READ or
    // WRITE longer than any message, is malformed: it touches no memory
    // and takes no receive.
    let too_long = match req.op {
        SendOp::RdmaWrite(_) | SendOp::RdmaRead(_) => req.len > limits::MAX_MSG_SIZE,
        _ => false,
    };
    if too_long || !req.piece.fits(req.data.len(), req.mtu) {
        return nak(Nak::InvalidRequest);
    }
    let rights = d.attr.access_flags;
    // A zero-length RDMA names no memory and checks no key; an atomic
    // names its 8 bytes whatever length it claims.
    let remote_check = |remote, len: u64, need| {
        let bad = len > 0 && !remote_ok(port, dest, rights, remote, len, need);
        bad.then(|| nak(Nak::RemoteAccess))
    };
    // With no responder resources, READs and atomics are refused, as rxe
    // and hardware refuse them.
    if req.opcode.answers_with_data() && d.attr.max_dest_rd_atomic == 0 {
        return nak(Nak::InvalidRequest);
    }
    let refused = match req.op {
        SendOp::Send => None,
        SendOp::RdmaWrite(r) => remote_check(r, req.len.into(), Access::REMOTE_WRITE),
        SendOp::RdmaRead(r) => remote_check(r, req.len.into(), Access::REMOTE_READ),
        // The core keeps an MR's iova and memory at the same page offset,
        // so an aligned address is an aligned word.
        SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. }
            if remote.addr % 8 != 0 =>
        {
            Some(nak(Nak::InvalidRequest))
        }
        SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => {
            remote_check(remote, ATOMIC_LEN, Access::REMOTE_ATOMIC)
        }
        SendOp::Local(_) => Some(nak(Nak::InvalidRequest)),
    };
    if let Some(verdict) = refused {
        return verdict;
    }
    if !req.opcode.consumes_recv() {
        if fresh {
            d.resp_psn = req.psn.add(req.span);
            if req.opcode.answers_with_data() {
                d.resp_after_data = Some(d.resp_psn);
            }
        }
        return Verdict::Execute(None);
    }
    let rnr_timer = d.attr.min_rnr_timer;
    let (recv, refusal) = receive_at(dest, d, room, |front| {
        let Some(rsges) = front else {
            return (false, Some((Nak::Rnr(rnr_timer), WcStatus::Success)));
        };
        if req.opcode == Opcode::WriteImm {
            return (true, None);
        }
        let refusal = match check_sges(port.mrs(), receive_sges(dest, rsges)) {
            Err(BadSge) => Some((Nak::RemoteOperation, WcStatus::LocalProtection)),
            Ok(room) if u64::from(req.len) > room => {
                Some((Nak::InvalidRequest, WcStatus::LocalLength))
            }
            Ok(_) => None,
        };
        // UC leaves its own receive too small where it is (the message is
        // dropped: IBA's class D), but takes an SRQ's, which cannot go
        // back, to fail it alone (class E), and one whose buffers are bad,
        // to fail it and the QP (class A), as it does for a message of
        // several packets and as rxe does.
        let short = matches!(refusal, Some((_, WcStatus::LocalLength)));
        (!(uc && short && dest.srq.is_none()), refusal)
    });
    // SEND_WITH_INV: the key names a fast-registration MR of the responder
    // (only kernel consumers have any), invalidated as the send is taken.
    // What it mapped may be dropped under the lock: kernel pages, which
    // are not released on drop.
    let refusal = match (refusal, req.invalidate) {
        (None, Some(key)) if port.mrs().invalidate(dest.pd, MrKey::of(key)).is_err() => {
            Some((Nak::RemoteOperation, WcStatus::RemoteInvalidRequest))
        }
        (refusal, _) => refusal,
    };
    match (refusal, recv) {
        (None, recv) => {
            d.resp_psn = req.psn.next();
            Verdict::Execute(recv)
        }
        // A receive taken is completed whatever the QP type.
        (Some(_), None) if uc => Verdict::Drop,
        (Some((_, WcStatus::LocalLength)), Some(recv)) if uc => {
            lose_srq_receive(port, dest, d, &recv.wqe, after);
            Verdict::Drop
        }
        (Some((nak @ Nak::Rnr(_), _)), _) => Verdict::Nak(nak, None),
        (Some((nak, status)), recv) => {
            d.resp_psn = req.psn.next();
            Verdict::Nak(nak, recv.map(|r| (r, status)))
        }
    }
}

/// The answer to the packet with PSN `psn`, ahead of the one the
/// responder whose lock `d` is expects: a NAK that names the expected PSN,
/// once per gap and round of the requester; the packets after it in the
/// same round are dropped (IBA 9.7.5.1.1: the requester goes back to the
/// PSN the NAK names and sends all from there). A packet no later than the
/// one NAKed last starts a new round: mostly the requester went back and
/// lost the expected packet again (else the packet came late, reordered,
/// or twice), and is NAKed too. Silent, the responder left the requester
/// to its local ACK timeout, where most of RC's time went under 1% loss
/// on a veth.
pub(super) fn out_of_sequence(d: &mut QpInner, psn: Psn) -> Option<Nak> {
    let expected = d.resp_psn;
    if d.sequence_naked
        .is_some_and(|naked| !psn.within(expected, naked))
    {
        return None;
    }
    d.sequence_naked = Some(psn);
    Some(Nak::Sequence {
        expected,
        ack_before: d.resp_after_data != Some(expected),
    })
}

/// Notes that the responder whose lock `d` is took the packet it expects:
/// a gap after it is a new one, NAKed again.
pub(super) fn in_sequence(d: &mut QpInner) {
    d.sequence_naked = None;
}

/// Whether `req` comes from the port the responder's path leads to: an RC
/// or UC responder answers its connected peer alone. On InfiniBand a device
/// is its own fabric, so the QP number says it all.
fn is_from_peer(d: &QpInner, req: &Request<'_>) -> bool {
    match req.src.port {
        Link::Ib { .. } => true,
        Link::Roce => d
            .attr
            .av
            .grh
            .as_ref()
            .is_some_and(|g| req.src.sgid == Some(g.dgid)),
    }
}

/// Whether `req` is a request of `dest`'s transport that it can take.
fn carries(dest: &QpShared, req: &Request<'_>) -> bool {
    rules::carries(dest.qp_type, req.opcode) && rules::bth(dest.qp_type, req.opcode) == req.bth
}

/// The answer to a SEND, WRITE or atomic executed before (IBA 9.7.5.1.2):
/// a SEND or a WRITE is acknowledged again, an atomic answered with the
/// result it had, if kept; nothing is executed twice.
fn duplicate(d: &QpInner, req: &Request<'_>) -> Verdict<'static> {
    match req.op {
        SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. } => match d.atomics.find(req.psn) {
            Some(old) => Verdict::Answer(Response::Atomic(old)),
            None => Verdict::Drop,
        },
        _ => Verdict::Answer(Response::Ack),
    }
}

/// The most bytes a SEND or WRITE moves under its responder's lock: a
/// request this small is judged, executed and its receive completed in one
/// critical section, as a datagram is; a larger one moves with no lock
/// held, in chunks, and may sleep between them.
const SMALL_MAX: u32 = 4096;

/// Whether `req` is executed under its responder's lock: a small SEND or
/// WRITE (a READ's data moves at the requester, an atomic takes the
/// responder's lock itself).
fn is_small(req: &Request<'_>) -> bool {
    matches!(req.op, SendOp::Send | SendOp::RdmaWrite(_)) && req.len <= SMALL_MAX
}

/// Executes the small `req` (accepted by [`judge`]) at `dest` under its
/// lock `d`, completes the receive it took under it too, and answers.
fn execute_locked(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    req: &Request<'_>,
    recv: Option<&Recv<'_>>,
    after: &mut After,
) -> Response {
    // One chunk at most: no sleeping under the lock.
    let pace = Pace {
        may_sleep: false,
        stop: &|| dest.is_closing(),
        refused: copy::NEVER,
    };
    let (response, status) = perform(port, dest, req, recv, &pace);
    if let Some(recv) = recv {
        let wc = recv_wc(dest, recv, req, status, req.len);
        complete_locked(port, dest, d, wc, req.solicited, OnError::EndQp, after);
    }
    response
}

/// Executes `req` (accepted by [`judge`]) at `dest`, completes the receive
/// it took, and answers.
fn execute(
    port: &Net,
    dest: &QpUse,
    req: &Request<'_>,
    recv: Option<Recv<'_>>,
    pace: &Pace<'_>,
    after: &mut After,
) -> Response {
    let (response, status) = perform(port, dest, req, recv.as_ref(), pace);
    if let Some(recv) = recv {
        complete_recv(port, dest, recv, req, status, req.len, after);
    }
    response
}

/// Moves the data of `req` at `dest` (into `recv` for a SEND) and counts
/// it; returns the answer and the status of the receive's completion.
fn perform(
    port: &Net,
    dest: &QpShared,
    req: &Request<'_>,
    recv: Option<&Recv<'_>>,
    pace: &Pace<'_>,
) -> (Response, WcStatus) {
    let mrs = port.mrs();
    let response = match req.op {
        SendOp::Send => match recv {
            // An empty message names no memory: no SGE list to walk.
            Some(_) if req.len == 0 => Ok(Response::Ack),
            Some(recv) => req
                .data
                .copy_to(mrs, receive_sges(dest, recv.sges), 0, pace)
                .map(|()| Response::Ack),
            None => Err(EINVAL),
        },
        SendOp::RdmaWrite(r) => {
            let dst = [SgeCopy::remote(r, req.len)];
            let grant = Grant::new(dest.pd, Access::REMOTE_WRITE);
            req.data
                .copy_to(mrs, Sges::new(&dst, grant), 0, pace)
                .map(|()| Response::Ack)
        }
        SendOp::RdmaRead(r) => Ok(Response::Read(GrantedSge {
            sge: SgeCopy::remote(r, req.len),
            grant: Grant::new(dest.pd, Access::REMOTE_READ),
        })),
        SendOp::CompareSwap {
            remote,
            compare,
            swap,
        } => atomic(port, dest, req, remote, compare, Some(swap)),
        SendOp::FetchAdd { remote, add } => atomic(port, dest, req, remote, add, None),
        SendOp::Local(_) => Err(EINVAL),
    };
    let (response, status) = match response {
        Ok(response) => (response, WcStatus::Success),
        // An MR went away meanwhile, or the QP is being destroyed.
        Err(_) => (Response::Fault, WcStatus::LocalProtection),
    };
    if status == WcStatus::Success {
        port.counters
            .executed(req.opcode.counter(), req.opcode.consumes_recv(), req.len);
    }
    (response, status)
}

/// UC loses a message that the receive `wqe` it took from the SRQ of
/// `dest` (whose lock `d` is) cannot hold: the receive, which cannot go
/// back to the SRQ, completes REM_INV_REQ_ERR while the QP stays ready
/// (IBA's class E, as rxe).
pub(super) fn lose_srq_receive(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    wqe: &RecvWqe,
    after: &mut After,
) {
    let wc = failed_wc(dest, wqe, WcStatus::RemoteInvalidRequest);
    complete_locked(port, dest, d, wc, false, OnError::GoOn, after);
}

/// What a receive that completes in error does to its QP.
#[derive(Clone, Copy)]
pub(super) enum OnError {
    /// Moves it to the error state, as every error does but those of
    /// [`OnError::GoOn`].
    EndQp,
    /// The QP goes on: IBA's class E error (an SRQ's receive that a UC
    /// message took and could not fill), and a UD receive too short for
    /// its datagram (see [`complete::push_going_on`]).
    GoOn,
}

/// Completes a receive of `dest` under its lock `d`; a completion that
/// overruns its CQ, or fails with `on_error` [`OnError::EndQp`], moves
/// `dest` to the error state, to flush.
fn complete_locked(
    port: &Net,
    dest: &QpUse,
    d: &mut QpInner,
    wc: Wc,
    solicited: bool,
    on_error: OnError,
    after: &mut After,
) {
    let push = match on_error {
        OnError::EndQp => complete::push,
        OnError::GoOn => complete::push_going_on,
    };
    if push(port, dest.recv_cq(), wc, solicited, after) {
        error_locked(dest, d, after);
    }
}

/// Moves `dest` (whose lock `d` is) to the error state, and has it run
/// after the step, to flush.
fn error_locked(dest: &QpUse, d: &mut QpInner, after: &mut After) {
    dest.enter_error(d);
    run_after(dest, after);
}

/// Has `dest` run after the step (to flush), unless it is being destroyed.
fn run_after(dest: &QpUse, after: &mut After) {
    if let Some(dest) = dest.arc().enter() {
        after.kick(dest);
    }
}

/// Performs an atomic on the 8 bytes at `remote` and keeps its result for
/// a duplicate of the request.
fn atomic(
    port: &Net,
    dest: &QpShared,
    req: &Request<'_>,
    remote: Remote,
    operand: u64,
    swap: Option<u64>,
) -> Result<Response> {
    let grant = Grant::new(dest.pd, Access::REMOTE_ATOMIC);
    let held = port
        .mrs()
        .enter(MrKey::of(remote.rkey), grant)
        .ok_or(EINVAL)?;
    let rmr = held.entry();
    let roff = rmr.offset_of(remote.addr, ATOMIC_LEN).ok_or(EINVAL)?;
    let old = {
        let _atomics = port.fabric.atomics.lock();
        rmr.mem.atomic(roff, operand, swap)?
    };
    dest.inner.lock().atomics.keep(req.psn, old);
    Ok(Response::Atomic(old))
}

/// What the receiver of a datagram from `req`'s port along `route` is told
/// its buffer starts with.
fn recv_grh(req: &Request<'_>) -> RecvGrh {
    let route = req
        .datagram
        .as_ref()
        .and_then(|(d, _)| d.address.grh.as_ref());
    match (route, req.src.port) {
        (None, _) => RecvGrh::Absent,
        (Some(_), Link::Ib { .. }) => RecvGrh::Ib,
        (Some(route), Link::Roce) => grh::roce_kind(route),
    }
}

/// The completion of a receive of `dest` that `req` took.
fn recv_wc(dest: &QpShared, recv: &Recv<'_>, req: &Request<'_>, status: WcStatus, len: u32) -> Wc {
    if status != WcStatus::Success {
        return failed_wc(dest, &recv.wqe, status);
    }
    // A UD receive always counts the GRH space.
    let grh_len = if req.datagram.is_some() { GRH_LEN } else { 0 };
    Wc {
        wr_id: recv.wqe.wr_id,
        qp: dest.id(),
        status,
        opcode: match req.opcode {
            Opcode::WriteImm => WcOpcode::RecvRdmaWithImm,
            _ => WcOpcode::Recv,
        },
        byte_len: len + grh_len,
        ex: match (req.imm, req.invalidate) {
            (Some(imm), _) => WcEx::Imm(imm),
            (None, Some(key)) => WcEx::Invalidated(key),
            (None, None) => WcEx::None,
        },
        src_qp: req.src.qpn.num(),
        slid: match req.src.port {
            Link::Ib { lid, .. } => lid,
            Link::Roce => 0,
        },
        grh: recv_grh(req),
        ..Wc::EMPTY
    }
}

/// The completion of `dest`'s receive `wqe` in error, with `status`: only
/// its wr_id, status and QP mean anything.
fn failed_wc(dest: &QpShared, wqe: &RecvWqe, status: WcStatus) -> Wc {
    Wc {
        wr_id: wqe.wr_id,
        qp: dest.id(),
        status,
        opcode: WcOpcode::Recv,
        ..Wc::EMPTY
    }
}

/// Completes the receive `recv` of `dest` that `req` took, then lets a
/// flush of `dest` that waited for it go on.
fn complete_recv(
    port: &Net,
    dest: &QpUse,
    recv: Recv<'_>,
    req: &Request<'_>,
    status: WcStatus,
    len: u32,
    after: &mut After,
) {
    let wc = recv_wc(dest, &recv, req, status, len);
    let mut kick = complete::complete(port, dest, dest.recv_cq(), wc, req.solicited, after);
    kick |= dest.receive_done(&mut dest.inner.lock());
    if kick {
        run_after(dest, after);
    }
}

/// UD: delivers the datagram `req` into the oldest receive of `dest`, all
/// under its lock; whatever does not reach a ready receive is dropped
/// without a word.
fn datagram(
    port: &Net,
    dest: &QpUse,
    req: &Request<'_>,
    room: &mut Buf<SgeCopy>,
    after: &mut After,
) {
    let Some((d, qkey)) = &req.datagram else {
        return;
    };
    let mut dl = dest.inner.lock();
    // QP1 takes MADs, never longer: a longer datagram would fail a
    // receive, which the MAD layer does not post again, so a peer could
    // starve the port's MAD and CM agents.
    let too_long = dest.qpn == Qpn::GSI && req.len > ib::MAD_SIZE;
    if too_long || !carries(dest, req) || !rules::takes_requests(dl.state) || dl.attr.qkey != *qkey
    {
        after.dropped = true;
        return;
    }
    let len = req.len;
    let (recv, checked) = receive_at(dest, &mut dl, room, |front| match front {
        None => (false, WcStatus::Success),
        Some(rsges) => match check_sges(port.mrs(), receive_sges(dest, rsges)) {
            Err(BadSge) => (true, WcStatus::LocalProtection),
            Ok(room) if room < u64::from(len + GRH_LEN) => (true, WcStatus::LocalLength),
            Ok(_) => (true, WcStatus::Success),
        },
    });
    let Some(recv) = recv else {
        after.dropped = true;
        return;
    };
    let status = if checked == WcStatus::Success {
        // At most an MTU, under the lock.
        let pace = Pace::ONE_PACKET;
        let rsges = receive_sges(dest, recv.sges);
        let mrs = port.mrs();
        let moved = match (&d.address.grh, req.src.port) {
            (Some(route), Link::Ib { gid, .. }) => {
                write_sges(mrs, rsges, 0, &grh::header(RecvGrh::Ib, gid, route, len))
            }
            (Some(route), Link::Roce) => {
                let h = grh::header(grh::roce_kind(route), route.sgid, route, len);
                write_sges(mrs, rsges, 0, &h)
            }
            (None, _) => Ok(()),
        }
        .and_then(|()| req.data.copy_to(mrs, rsges, GRH_LEN, &pace));
        match moved {
            Ok(()) => {
                port.counters.executed(req.opcode.counter(), true, len);
                WcStatus::Success
            }
            Err(_) => WcStatus::LocalProtection,
        }
    } else {
        checked
    };
    let wc = recv_wc(dest, &recv, req, status, len);
    // Too long for the receive: the sender's doing, and any host may send
    // to a UD QP. The receive fails and the QP goes on, as on hns (rxe
    // drops the datagram and keeps the receive).
    let on_error = if status == WcStatus::LocalLength {
        OnError::GoOn
    } else {
        OnError::EndQp
    };
    complete_locked(port, dest, &mut dl, wc, req.solicited, on_error, after);
}
