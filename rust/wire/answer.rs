// SPDX-License-Identifier: GPL-2.0

//! A responder's answers to requests from other hosts, back along its
//! QP's path: an ACK or NAK (AETH), a READ's data as READ RESPONSE packets
//! of the path MTU, an atomic's original value (AtomicAckETH).

use super::{
    bth,
    frame::{self, Ext, Frame},
};
use crate::{
    ib::Grh,
    net::Net,
    payload::Payload,
    psn::Psn,
    qp::Qpn,
    transport::{self, Nak, Response},
};

/// Whom a request came from, and what it asked.
pub(super) struct Asker {
    /// The responder QP's path, to the requester.
    pub(super) route: Grh,
    /// The responder QP and the requester's.
    pub(super) src: Qpn,
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

/// Sends `response` to the request of `to` from `port`. An ACK goes only
/// where one was asked for: rxe asks on a message's last packet, and
/// every 64 packets of a long one.
pub(super) fn send(port: &Net, to: &Asker, response: Response) {
    let none = Payload::Inline(&[]);
    if let Some(counter) = response.nak_counter(true) {
        port.counters.add(counter, 1);
    }
    let (syndrome, psn) = match response {
        Response::Ack if !to.ack_req => return,
        Response::Ack => (Response::ACK_SYNDROME, to.psn),
        // It names the PSN its responder expects, not the request's.
        Response::Nak(nak @ Nak::Sequence(expected)) => (nak.syndrome(), expected),
        Response::Nak(nak) => (nak.syndrome(), to.psn),
        // The responder's own memory failed it mid-copy (an MR went).
        Response::Fault => (Nak::RemoteOperation.syndrome(), to.psn),
        Response::Atomic(old) => {
            let mut ext = aeth(Response::ACK_SYNDROME);
            ext.put(&old.to_be_bytes());
            out(
                port,
                to,
                bth::ATOMIC_ACKNOWLEDGE,
                &ext,
                to.psn,
                (none, 0, 0),
            );
            return;
        }
        Response::Read(sge) => {
            let sges = [sge];
            let data = Payload::Sges(&sges);
            let (mtu, packets) = transport::cut(sge.length, to.mtu);
            let ack = aeth(Response::ACK_SYNDROME);
            let bare = Ext::default();
            for i in 0..packets {
                let (first, last) = (i == 0, i + 1 == packets);
                let (opcode, ext) = match (first, last) {
                    (true, true) => (bth::READ_RESPONSE_ONLY, &ack),
                    (true, false) => (bth::READ_RESPONSE_FIRST, &ack),
                    (false, false) => (bth::READ_RESPONSE_MIDDLE, &bare),
                    (false, true) => (bth::READ_RESPONSE_LAST, &ack),
                };
                let skip = i * mtu;
                let len = (sge.length - skip).min(mtu);
                out(port, to, opcode, ext, to.psn.add(i), (data, skip, len));
            }
            return;
        }
    };
    out(
        port,
        to,
        bth::ACKNOWLEDGE,
        &aeth(syndrome),
        psn,
        (none, 0, 0),
    );
}

/// Sends one answer packet to `to`: `opcode` with `ext`, at `psn`, with
/// `len` bytes of `data` from its byte `skip` on.
fn out(
    port: &Net,
    to: &Asker,
    opcode: u8,
    ext: &Ext,
    psn: Psn,
    (data, skip, len): (Payload<'_>, u32, u32),
) {
    let f = Frame {
        opcode,
        solicited: false,
        ack_req: false,
        src: to.src,
        dest: to.dest,
        psn,
        ext,
        data,
        skip,
        len,
    };
    frame::send(port, &to.route, &f);
}
