// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 wire: a request for a port of another host leaves through
//! the sending port's netdev as a RoCEv2 packet (IPv4 or IPv6, UDP port 4791, the
//! base transport header, the opcode's extension headers, the payload, its
//! pad and the ICRC), as rxe and RoCE NICs put it on the wire. So far it
//! carries datagrams (UD, and QP1's MADs), over IPv4 or IPv6; connected
//! requests for other hosts are lost, and their requester retries.

use super::icrc;
use crate::{
    complete::After,
    copy::Pace,
    counters::Counter,
    ib::{Address, IpPacket},
    net::{Link, Net},
    scratch::Buf,
    transport::{Dest, Request, Response, Wire},
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
    ) -> Option<Response> {
        let Dest::Address(av) = to else {
            return None;
        };
        if !matches!(from.link, Link::Roce) || !from.is_up() || req.datagram.is_none() {
            return None;
        }
        match send_datagram(from, av, req) {
            Ok(bytes) => {
                from.counters.add(Counter::WireSentPackets, 1);
                from.counters.add(Counter::WireSentBytes, bytes as u64);
            }
            Err(_) => from.counters.add(Counter::WireSendErrors, 1),
        }
        // A datagram is not answered.
        None
    }
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

/// Sends datagram `req` to `av` as one UD packet; returns its length.
fn send_datagram(from: &Net, av: &Address, req: &Request<'_>) -> Result<usize> {
    let (Some(grh), Some((_, qkey))) = (av.grh.as_ref(), req.datagram.as_ref()) else {
        return Err(EINVAL);
    };
    let v4 = grh.sgid.ipv4().zip(grh.dgid.ipv4());
    let ip_header = if v4.is_some() {
        IPV4_HEADER
    } else {
        IPV6_HEADER
    };
    let netdev = from.netdev().ok_or(ENODEV)?;
    let len = req.len as usize;
    let pad = len.wrapping_neg() & 3;
    let imm = if req.imm.is_some() { IMM_DT } else { 0 };
    let total = ip_header + UDP_HEADER + BTH + DETH + imm + len + pad + icrc::LEN;
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
    // BTH: opcode, SE, pad count (TVer 0), P_Key, destination QP, PSN.
    c.put(&[req.bth, (u8::from(req.solicited) << 7) | ((pad as u8) << 4)])?;
    c.put(&PKEY.to_be_bytes())?;
    c.put(&[0])?;
    c.put(&be24(req.dest.num().get()))?;
    c.put(&[0])?;
    c.put(&be24(req.psn.get()))?;
    // DETH: Q_Key and source QP.
    c.put(&qkey.to_be_bytes())?;
    c.put(&[0])?;
    c.put(&be24(req.src.qpn.num().get()))?;
    if let Some(imm) = req.imm {
        // Kept in network byte order since it was posted.
        c.put(&imm.to_ne_bytes())?;
    }
    req.data.read_into(from.mrs(), c.take(len)?)?;
    c.take(pad)?.fill(0);
    icrc::seal(pkt.bytes());
    pkt.send()?;
    Ok(total)
}
