// SPDX-License-Identifier: GPL-2.0

//! A responder's answers to requests from other hosts, back along its
//! QP's path: an ACK or NAK (AETH), a READ's data as READ RESPONSE packets
//! of the path MTU, an atomic's original value (AtomicAckETH). A short
//! answer leaves from the softirq that took the request; a long READ's
//! response, and every answer behind it, waits for the QP's worker
//! ([`crate::reply`]), which sends a batch of packets per run.

use super::{
    bth,
    frame::{self, Ext, Frame},
};
use crate::{
    copy,
    counters::Counter,
    ib::Grh,
    net::Net,
    payload::Payload,
    psn::{Psn, Sequence},
    qp::{QpInner, QpUse, Qpn},
    reply::{Reply, Said},
    transport::{self, Nak, Response},
};

/// READ responses of at most this many packets leave from the softirq
/// that took the READ.
const BURST: u32 = 16;

/// The packets of waiting answers that one run of a QP's worker sends.
const BATCH: u32 = 64;

/// Whom a request came from, and what it asked.
pub(super) struct Asker {
    /// The responder QP's path, to the requester.
    pub(super) route: Grh,
    /// The requester's QP.
    pub(super) dest: Qpn,
    /// The request's PSN, the first a READ's responses take.
    pub(super) psn: Psn,
    pub(super) mtu: u32,
    /// It asked for an ACK.
    pub(super) ack_req: bool,
}

/// An AETH: the syndrome; the MSN, which neither rxe nor rsoft reads, is
/// left 0.
fn aeth(syndrome: u8) -> Ext {
    let mut ext = Ext::default();
    ext.put(&[syndrome, 0, 0, 0]);
    ext
}

/// Sends `response` from `qp` of `port` to the request of `to`: at once,
/// or after the answers that wait for `qp`'s worker.
pub(super) fn send(port: &Net, qp: &QpUse, to: &Asker, response: Response) {
    if let Some(counter) = response.nak_counter(true) {
        port.counters.add(counter, 1);
    }
    let said = match response {
        Response::Ack if !to.ack_req => return,
        Response::Ack => Said::Ack,
        Response::Nak(nak) => Said::Nak(nak.syndrome()),
        // The responder's own memory failed it mid-copy (an MR went).
        Response::Fault => Said::Nak(Nak::RemoteOperation.syndrome()),
        Response::Atomic(old) => Said::Atomic(old),
        Response::Read(src) => Said::Read { src, sent: 0 },
    };
    let reply = |psn, said| Reply {
        route: to.route,
        dest: to.dest.num(),
        psn,
        mtu: to.mtu,
        said,
    };
    match response {
        // It names the PSN its responder expects, not the request's,
        // and follows an ACK of the one before: a NAK stands for that
        // ACK too (IBA 9.7.5.1.1), but rxe's requester, once it went
        // back, acts on no NAK before an ACK comes, and sends on until
        // its local ACK timeout runs out. Under netem's reordering
        // (`lossy`) that made fifty 64 KiB SENDs from rxe take 63 to
        // 82 s; 20 to 26 s with the ACK. Not after a READ or atomic,
        // which that ACK would complete without its data.
        Response::Nak(Nak::Sequence {
            expected,
            ack_before,
        }) => {
            if ack_before {
                queue_or_emit(port, qp, reply(expected.prev(), Said::Ack));
            }
            queue_or_emit(port, qp, reply(expected, said));
        }
        _ => queue_or_emit(port, qp, reply(to.psn, said)),
    }
}

/// Sends `reply` from `qp` of `port` at once, or queues it for `qp`'s
/// worker behind the answers that wait there, with a long READ response.
fn queue_or_emit(port: &Net, qp: &QpUse, reply: Reply) {
    let (said, psn) = (reply.said, reply.psn);
    let long = matches!(said, Said::Read { src, .. }
        if transport::cut(src.sge.length, reply.mtu).1 > BURST);
    {
        let mut inner = qp.inner.lock();
        if let Said::Read { .. } = said {
            // A READ asked for again (its requester went back to it,
            // go-back-N) supersedes the READ responses waiting for it
            // and for the READs after it, which the requester asks for
            // again too: sent twice over they would only delay what it
            // waits for, and its every timeout meanwhile would add more.
            inner.replies.retain(|queued| ends_before(queued, psn));
        }
        if long || !inner.replies.is_empty() {
            // Nothing long for a QP that takes no more requests (its
            // consumer moved it meanwhile), but what its responder decided
            // on before it ended it.
            if !answers(&inner) {
                return;
            }
            let first = inner.replies.is_empty();
            if !inner.replies.push(reply) {
                port.counters.add(Counter::WireReceiveDrops, 1);
            } else if first {
                drop(inner);
                qp.defer();
            }
            return;
        }
    }
    emit(port, qp.qpn, &reply, u32::MAX);
}

/// Whether the QP whose state is `inner` still sends answers: it takes
/// requests, or its responder ended it with a NAK ([`Replies::seal`]).
///
/// [`Replies::seal`]: crate::reply::Replies::seal
fn answers(inner: &QpInner) -> bool {
    transport::takes_requests(inner.state) || inner.replies.sealed()
}

/// Whether `reply` is not a READ's response, or its last packet comes
/// before PSN `psn`.
fn ends_before(reply: &Reply, psn: Psn) -> bool {
    let Said::Read { src, .. } = reply.said else {
        return true;
    };
    let last = reply.psn.add(
        transport::cut(src.sge.length, reply.mtu)
            .1
            .saturating_sub(1),
    );
    matches!(last.against(psn), Sequence::Duplicate)
}

/// Sends up to [`BATCH`] packets of the answers that wait for `qp`, a QP
/// of `port`, from its worker; returns whether some still wait. A QP that
/// takes no more requests answers nothing more, but what its responder
/// decided on before it ended the QP with a NAK ([`Replies::seal`]).
///
/// [`Replies::seal`]: crate::reply::Replies::seal
pub(crate) fn send_answers(port: &Net, qp: &QpUse) -> bool {
    let mut budget = BATCH;
    while budget > 0 {
        let (turn, reply) = {
            let mut inner = qp.inner.lock();
            if !answers(&inner) {
                inner.replies.clear();
                return false;
            }
            match inner.replies.oldest() {
                Some(oldest) => oldest,
                None => return false,
            }
        };
        let before = match reply.said {
            Said::Read { sent, .. } => sent,
            _ => 0,
        };
        let (out, done) = emit(port, qp.qpn, &reply, budget);
        budget = budget.saturating_sub(out.saturating_sub(before).max(1));
        qp.inner.lock().replies.sent(turn, out, done);
    }
    !qp.inner.lock().replies.is_empty()
}

/// Sends up to `most` packets of `reply` from QP `src` of `port`, from
/// where it stands; returns how many of its packets are then out, and
/// whether that is all of them.
fn emit(port: &Net, src: Qpn, reply: &Reply, most: u32) -> (u32, bool) {
    let none = Payload::Inline(&[]);
    let (opcode, ext) = match reply.said {
        Said::Ack => (bth::ACKNOWLEDGE, aeth(Response::ACK_SYNDROME)),
        Said::Nak(syndrome) => (bth::ACKNOWLEDGE, aeth(syndrome)),
        Said::Atomic(old) => {
            let mut ext = aeth(Response::ACK_SYNDROME);
            ext.put(&old.to_be_bytes());
            (bth::ATOMIC_ACKNOWLEDGE, ext)
        }
        Said::Read {
            src: ref from,
            sent,
        } => {
            let length = from.sge.length;
            let (mtu, packets) = transport::cut(length, reply.mtu);
            let end = packets.min(sent.saturating_add(most));
            let packet = |k: u32| {
                let i = sent + k;
                let (opcode, ext) = match (i == 0, i + 1 == packets) {
                    (true, true) => (bth::READ_RESPONSE_ONLY, aeth(Response::ACK_SYNDROME)),
                    (true, false) => (bth::READ_RESPONSE_FIRST, aeth(Response::ACK_SYNDROME)),
                    (false, false) => (bth::READ_RESPONSE_MIDDLE, Ext::default()),
                    (false, true) => (bth::READ_RESPONSE_LAST, aeth(Response::ACK_SYNDROME)),
                };
                let skip = i * mtu;
                let len = (length - skip).min(mtu);
                let data = (Payload::Sges(from.sges()), skip, len);
                reply_frame(src, reply, opcode, ext, reply.psn.add(i), data)
            };
            let count = end.saturating_sub(sent);
            frame::send_run(port, &reply.route, count, copy::NEVER, packet);
            return (end, end == packets);
        }
    };
    let f = reply_frame(src, reply, opcode, ext, reply.psn, (none, 0, 0));
    frame::send(port, &reply.route, &f);
    (1, true)
}

/// Packet `opcode` of `reply` from QP `src`, with `ext`, at `psn`, with
/// `len` bytes of `data` from its byte `skip` on.
fn reply_frame<'a>(
    src: Qpn,
    reply: &Reply,
    opcode: u8,
    ext: Ext,
    psn: Psn,
    (data, skip, len): (Payload<'a>, u32, u32),
) -> Frame<'a> {
    Frame {
        opcode,
        solicited: false,
        ack_req: false,
        src,
        dest: Qpn::of(reply.dest),
        psn,
        ext,
        data,
        skip,
        len,
    }
}
