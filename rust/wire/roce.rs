// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 wire: a request for a port of another host leaves through
//! the sending port's netdev as RoCEv2 packets ([`super::frame`]):
//! datagrams (UD, and QP1's MADs), and the requests of connected QPs:
//! SENDs and WRITEs cut into packets of the path MTU, READs, atomics.
//! Their answers come back through [`super::receive`].

use super::{
    bth,
    frame::{self, be24, Ext, Frame},
};
use crate::{
    complete::After,
    copy::Pace,
    counters::Counter,
    flight,
    ib::{Remote, SendOp},
    net::{Link, Net},
    psn::Psn,
    scratch::Buf,
    transport::{Carried, Dest, Packets, Request, Wire},
    wq::SgeCopy,
};

/// Delivery to the ports of other hosts.
pub(crate) struct Roce;

impl Wire for Roce {
    fn carry(
        &self,
        from: &Net,
        to: Dest<'_>,
        req: &Request<'_>,
        _room: &mut Buf<SgeCopy>,
        pace: &Pace<'_>,
        _after: &mut After,
    ) -> Carried {
        let (Dest::Address(av) | Dest::Remote(av)) = to else {
            return Carried::Lost;
        };
        if !matches!(from.link, Link::Roce) || !from.is_up() {
            return Carried::Lost;
        }
        let Packets { mtu, sent, .. } = req.packets();
        let until = sent.min(req.send_to);
        let packets = until.saturating_sub(req.resend_from);
        let piece = |index: u32| Piece {
            first: index == 0,
            last: index + 1 == sent,
            // RC asks for the ACK that completes a message on its last
            // packet, and for one every `ACK_EVERY` before: a long message
            // leaves as the answers come.
            ack: index + 1 == sent || (index + 1) % flight::ACK_EVERY == 0,
            skip: index * mtu,
            psn: req.psn.add(index),
        };
        let copies = 1 + u32::from(req.twice);
        let all = packets.saturating_mul(copies);
        let Some(route) = av.grh.as_ref() else {
            // One that cannot be sent is lost like one dropped on the
            // way: RC's requester sends the message again.
            from.counters.add(Counter::WireSendErrors, all.into());
            return Carried::Sent {
                packets: all,
                cut_short: false,
            };
        };
        let run = || {
            frame::send_run(from, route, packets, pace.refused, |k| {
                packet(req, &piece(req.resend_from + k), mtu)
            })
        };
        let sent = (0..copies).fold(0u32, |sent, _| sent.saturating_add(run()));
        Carried::Sent {
            packets: sent,
            cut_short: sent < all,
        }
    }
}

/// One packet of a message.
struct Piece {
    first: bool,
    last: bool,
    /// It asks for an acknowledgement, on RC.
    ack: bool,
    /// Where its payload starts in the message.
    skip: u32,
    psn: Psn,
}

/// The extension headers of `part` of `req` (IBA 9.3): DETH, RETH on the
/// first packet of a WRITE and on a READ, AtomicETH, immediate data or
/// IETH on the last.
fn ext_headers(req: &Request<'_>, part: &Piece) -> Ext {
    let mut ext = Ext::default();
    if let Some((_, qkey)) = req.datagram {
        ext.put(&qkey.to_be_bytes());
        ext.put(&[0]);
        ext.put(&be24(req.src.qpn.num().get()));
    }
    let remote = |ext: &mut Ext, r: Remote| {
        ext.put(&r.addr.to_be_bytes());
        ext.put(&r.rkey.get().to_be_bytes());
    };
    match req.op {
        SendOp::RdmaWrite(r) | SendOp::RdmaRead(r) if part.first => {
            remote(&mut ext, r);
            ext.put(&req.len.to_be_bytes());
        }
        SendOp::CompareSwap {
            remote: r,
            compare,
            swap,
        } => {
            remote(&mut ext, r);
            ext.put(&swap.to_be_bytes());
            ext.put(&compare.to_be_bytes());
        }
        SendOp::FetchAdd { remote: r, add } => {
            remote(&mut ext, r);
            ext.put(&add.to_be_bytes());
            ext.put(&0u64.to_be_bytes());
        }
        _ => {}
    }
    if part.last {
        if let Some(imm) = req.imm {
            // Kept in network byte order since it was posted.
            ext.put(&imm.to_ne_bytes());
        }
        if let Some(key) = req.invalidate {
            ext.put(&key.get().to_be_bytes());
        }
    }
    ext
}

/// Packet `part` of `req`.
fn packet<'a>(req: &Request<'a>, part: &Piece, mtu: u32) -> Frame<'a> {
    Frame {
        opcode: bth::segment(req.bth, part.first, part.last),
        // The solicited event comes with the message's last packet.
        solicited: req.solicited && part.last,
        ack_req: part.ack && req.datagram.is_none() && req.bth & bth::TRANSPORT == bth::RC,
        src: req.src.qpn,
        dest: req.dest,
        psn: part.psn,
        ext: ext_headers(req, part),
        data: req.data,
        skip: part.skip,
        len: if req.opcode.answers_with_data() {
            0
        } else {
            req.len.saturating_sub(part.skip).min(mtu)
        },
    }
}
