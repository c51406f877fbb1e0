// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 wire: a request for a port of another host leaves through
//! the sending port's netdev as a RoCEv2 packet (IPv4 or IPv6, UDP port 4791, the
//! base transport header, the opcode's extension headers, the payload, its
//! pad and the ICRC), as rxe and RoCE NICs put it on the wire, over IPv4
//! or IPv6: datagrams (UD, and QP1's MADs) and the SENDs and WRITEs of
//! connected QPs, cut into packets of the path MTU. Their answers come
//! back through [`super::receive`].

use super::icrc;
use crate::{
    complete::After,
    copy::Pace,
    counters::Counter,
    ib::{Address, IpPacket, SendOp},
    net::{Link, Net},
    psn::Psn,
    scratch::Buf,
    transport::{Carried, Dest, Request, Wire},
    wq::SgeCopy,
};
use kernel::prelude::*;

/// The UDP port of RoCEv2 (IANA).
pub(super) const UDP_PORT: u16 = 4791;
pub(super) const IPV4_HEADER: usize = 20;
pub(super) const IPV6_HEADER: usize = 40;
pub(super) const UDP_HEADER: usize = 8;
pub(super) const BTH: usize = 12;
pub(super) const DETH: usize = 8;
pub(super) const IMM_DT: usize = 4;
pub(super) const AETH: usize = 4;
/// The default partition: the one P_Key of rsoft's ports.
const PKEY: u16 = 0xffff;
/// The IP time to live of a GRH with no hop limit.
const DEFAULT_TTL: u8 = 64;

/// Delivery to the ports of other hosts.
pub(crate) struct Roce;

impl Wire for Roce {
    fn carry(
        &self,
        from: &Net,
        to: Dest<'_>,
        req: &Request<'_>,
        _room: &mut Buf<SgeCopy>,
        _pace: &Pace<'_>,
        _after: &mut After,
    ) -> Carried {
        let Dest::Address(av) = to else {
            return Carried::Lost;
        };
        // READ responses and atomic acknowledgements are not taken off
        // the wire yet: such a request is not sent (an atomic sent again
        // would be executed again), and its requester's retries run out.
        if !matches!(from.link, Link::Roce) || !from.is_up() || req.opcode.answers_with_data() {
            return Carried::Lost;
        }
        let mtu = req.mtu.max(MIN_MTU);
        let packets = req.len.div_ceil(mtu).max(1);
        for index in 0..packets {
            let part = Part {
                first: index == 0,
                last: index + 1 == packets,
                skip: index * mtu,
                psn: req.psn.add(index),
            };
            match send_packet(from, av, req, &part, mtu) {
                Ok(bytes) => {
                    from.counters.add(Counter::WireSentPackets, 1);
                    from.counters.add(Counter::WireSentBytes, bytes as u64);
                }
                // Lost like a packet dropped on the way: the requester
                // of RC sends again.
                Err(_) => from.counters.add(Counter::WireSendErrors, 1),
            }
        }
        Carried::Sent { packets }
    }
}

/// The smallest path MTU.
const MIN_MTU: u32 = 256;

/// One packet of a message.
struct Part {
    first: bool,
    last: bool,
    /// Where its payload starts in the message.
    skip: u32,
    psn: Psn,
}

/// The extension headers of one packet, in their order.
#[derive(Default)]
struct Ext {
    bytes: [u8; 32],
    len: usize,
}

impl Ext {
    fn put(&mut self, b: &[u8]) {
        if let Some(at) = self.bytes.get_mut(self.len..self.len + b.len()) {
            at.copy_from_slice(b);
            self.len += b.len();
        }
    }

    fn get(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The extension headers of `part` of `req` (IBA 9.3): DETH, RETH on the
/// first packet of a WRITE, immediate data or IETH on the last.
fn ext_headers(req: &Request<'_>, part: &Part) -> Ext {
    let mut ext = Ext::default();
    if let Some((_, qkey)) = req.datagram {
        ext.put(&qkey.to_be_bytes());
        ext.put(&[0]);
        ext.put(&be24(req.src.qpn.num().get()));
    }
    if let (SendOp::RdmaWrite(remote), true) = (req.op, part.first) {
        ext.put(&remote.addr.to_be_bytes());
        ext.put(&remote.rkey.get().to_be_bytes());
        ext.put(&req.len.to_be_bytes());
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

/// The BTH opcode of `part` of a message whose one-packet opcode is
/// `only` (IBA 9.2): SEND and WRITE have first, middle and last packets.
fn segment(only: u8, part: &Part) -> u8 {
    let op = only & 0x1f;
    let (first, middle, last) = match op {
        0x04 => (0x00, 0x01, 0x02),
        0x05 => (0x00, 0x01, 0x03),
        0x17 => (0x00, 0x01, 0x16),
        0x0a => (0x06, 0x07, 0x08),
        0x0b => (0x06, 0x07, 0x09),
        _ => (op, op, op),
    };
    let op = match (part.first, part.last) {
        (true, true) => op,
        (true, false) => first,
        (false, false) => middle,
        (false, true) => last,
    };
    (only & 0xe0) | op
}

/// Fills a packet's bytes in order.
struct Cursor<'a> {
    rest: &'a mut [u8],
}

impl<'a> Cursor<'a> {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Result<&'a mut [u8]> {
        if n > self.rest.len() {
            return Err(EINVAL);
        }
        let (head, tail) = core::mem::take(&mut self.rest).split_at_mut(n);
        self.rest = tail;
        Ok(head)
    }

    fn put(&mut self, bytes: &[u8]) -> Result {
        self.take(bytes.len())?.copy_from_slice(bytes);
        Ok(())
    }
}

/// The low 24 bits of `v`, as a BTH or DETH carries a QPN or a PSN.
fn be24(v: u32) -> [u8; 3] {
    let [_, a, b, c] = v.to_be_bytes();
    [a, b, c]
}

/// Sends `part` of `req` to `av` as one packet; returns its length.
fn send_packet(
    from: &Net,
    av: &Address,
    req: &Request<'_>,
    part: &Part,
    mtu: u32,
) -> Result<usize> {
    let grh = av.grh.as_ref().ok_or(EINVAL)?;
    let v4 = grh.sgid.ipv4().zip(grh.dgid.ipv4());
    let ip_header = if v4.is_some() {
        IPV4_HEADER
    } else {
        IPV6_HEADER
    };
    let netdev = from.netdev().ok_or(ENODEV)?;
    let len = req.len.saturating_sub(part.skip).min(mtu) as usize;
    let pad = len.wrapping_neg() & 3;
    let ext = ext_headers(req, part);
    let total = ip_header + UDP_HEADER + BTH + ext.len + len + pad + icrc::LEN;
    let ip_len = u16::try_from(total)?;
    let udp_len = ip_len - ip_header as u16;
    // IPv4 when both GIDs are IPv4-mapped, else IPv6 (a mix fails here).
    let mut pkt = IpPacket::new(&netdev, &grh.sgid, &grh.dgid, total).ok_or(ENOMEM)?;
    let bytes = pkt.bytes();
    let mut c = Cursor { rest: bytes };
    let ttl = match grh.hop_limit {
        0 => DEFAULT_TTL,
        hops => hops,
    };
    let tc = grh.traffic_class;
    if let Some((saddr, daddr)) = v4 {
        // IPv4: no options, DF set, no ID (an atomic datagram, RFC 6864);
        // the kernel's IP output writes the header checksum.
        c.put(&[0x45, tc])?;
        c.put(&ip_len.to_be_bytes())?;
        c.put(&[0, 0, 0x40, 0, ttl, 17, 0, 0])?;
        c.put(&saddr)?;
        c.put(&daddr)?;
    } else {
        // IPv6: traffic class and flow label, the length after this
        // header, UDP, the hop limit.
        let [_, flow_hi, flow_mid, flow_lo] = (grh.flow_label & 0xf_ffff).to_be_bytes();
        c.put(&[0x60 | (tc >> 4), (tc << 4) | flow_hi, flow_mid, flow_lo])?;
        c.put(&udp_len.to_be_bytes())?;
        c.put(&[17, ttl])?;
        c.put(&grh.sgid.0)?;
        c.put(&grh.dgid.0)?;
    }
    // UDP, with no checksum (the ICRC covers the packet), from a port
    // fixed per QP as rxe picks it.
    let sport = 0xc000 | (req.src.qpn.num().get() & 0x3fff) as u16;
    c.put(&sport.to_be_bytes())?;
    c.put(&UDP_PORT.to_be_bytes())?;
    c.put(&udp_len.to_be_bytes())?;
    c.put(&[0, 0])?;
    // BTH: opcode, SE (on the last packet), pad count (TVer 0), P_Key,
    // destination QP, AckReq (RC's last packet: an ACK is wanted), PSN.
    let solicited = req.solicited && part.last;
    let ack_req = part.last && req.datagram.is_none() && req.bth & 0xe0 == 0;
    c.put(&[
        segment(req.bth, part),
        (u8::from(solicited) << 7) | ((pad as u8) << 4),
    ])?;
    c.put(&PKEY.to_be_bytes())?;
    c.put(&[0])?;
    c.put(&be24(req.dest.num().get()))?;
    c.put(&[u8::from(ack_req) << 7])?;
    c.put(&be24(part.psn.get()))?;
    c.put(ext.get())?;
    req.data.read_at(from.mrs(), part.skip, c.take(len)?)?;
    c.take(pad)?.fill(0);
    icrc::seal(pkt.bytes());
    pkt.send()?;
    Ok(total)
}
