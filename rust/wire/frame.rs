// SPDX-License-Identifier: GPL-2.0

//! One RoCEv2 packet out of a port's netdev: the IP header (IPv4 or IPv6,
//! from the GIDs of the route), UDP to port 4791, the BTH, the opcode's
//! extension headers, the payload with its pad, and the ICRC, as rxe and
//! RoCE NICs put it on the wire. Requests ([`super::roce`]) and the
//! responder's answers ([`super::answer`]) both leave this way.

use super::icrc;
use crate::{
    counters::Counter,
    ib::{Grh, IpPacket},
    net::Net,
    payload::Payload,
    psn::Psn,
    qp::Qpn,
};
use kernel::prelude::*;

/// The UDP port of RoCEv2 (IANA).
pub(super) const UDP_PORT: u16 = 4791;
pub(super) const IPV4_HEADER: usize = 20;
pub(super) const IPV6_HEADER: usize = 40;
pub(super) const UDP_HEADER: usize = 8;
pub(super) const BTH: usize = 12;
pub(super) const DETH: usize = 8;
pub(super) const RETH: usize = 16;
pub(super) const IMM_DT: usize = 4;
pub(super) const IETH: usize = 4;
pub(super) const AETH: usize = 4;
pub(super) const ATOMIC_ETH: usize = 28;
/// The default partition: the one P_Key of rsoft's ports.
const PKEY: u16 = 0xffff;
/// The IP time to live of a GRH with no hop limit.
const DEFAULT_TTL: u8 = 64;

/// What one packet says.
pub(super) struct Frame<'a> {
    /// The BTH opcode.
    pub(super) opcode: u8,
    pub(super) solicited: bool,
    /// An acknowledgement is wanted.
    pub(super) ack_req: bool,
    /// The sending QP: it picks the UDP source port.
    pub(super) src: Qpn,
    pub(super) dest: Qpn,
    pub(super) psn: Psn,
    /// The extension headers, in their order.
    pub(super) ext: &'a Ext,
    /// The payload: `len` bytes of `data` from its byte `skip` on.
    pub(super) data: Payload<'a>,
    pub(super) skip: u32,
    pub(super) len: u32,
}

/// The extension headers of one packet, filled in their order.
#[derive(Default)]
pub(super) struct Ext {
    bytes: [u8; 32],
    len: usize,
}

impl Ext {
    /// Appends `b`; the headers of one packet are at most 32 bytes.
    pub(super) fn put(&mut self, b: &[u8]) {
        if let Some(at) = self.bytes.get_mut(self.len..self.len + b.len()) {
            at.copy_from_slice(b);
            self.len += b.len();
        }
    }

    fn get(&self) -> &[u8] {
        &self.bytes[..self.len]
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
pub(super) fn be24(v: u32) -> [u8; 3] {
    let [_, a, b, c] = v.to_be_bytes();
    [a, b, c]
}

/// Sends `f` from `from` along `route` and counts it, sent or not: a
/// packet that cannot be sent is lost like one dropped on the way.
pub(super) fn send(from: &Net, route: &Grh, f: &Frame<'_>) {
    match build_and_send(from, route, f) {
        Ok(bytes) => {
            from.counters.add(Counter::WireSentPackets, 1);
            from.counters.add(Counter::WireSentBytes, bytes as u64);
        }
        Err(_) => from.counters.add(Counter::WireSendErrors, 1),
    }
}

/// Sends `f`; returns its length from the IP header on.
fn build_and_send(from: &Net, route: &Grh, f: &Frame<'_>) -> Result<usize> {
    let v4 = route.sgid.ipv4().zip(route.dgid.ipv4());
    let ip_header = if v4.is_some() {
        IPV4_HEADER
    } else {
        IPV6_HEADER
    };
    let netdev = from.netdev().ok_or(ENODEV)?;
    let len = f.len as usize;
    let pad = len.wrapping_neg() & 3;
    let total = ip_header + UDP_HEADER + BTH + f.ext.len + len + pad + icrc::LEN;
    let ip_len = u16::try_from(total)?;
    let udp_len = ip_len - ip_header as u16;
    // IPv4 when both GIDs are IPv4-mapped, else IPv6 (a mix fails here).
    let mut pkt = IpPacket::new(&netdev, &route.sgid, &route.dgid, total).ok_or(ENOMEM)?;
    let mut c = Cursor { rest: pkt.bytes() };
    let ttl = match route.hop_limit {
        0 => DEFAULT_TTL,
        hops => hops,
    };
    let tc = route.traffic_class;
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
        let [_, flow_hi, flow_mid, flow_lo] = (route.flow_label & 0xf_ffff).to_be_bytes();
        c.put(&[0x60 | (tc >> 4), (tc << 4) | flow_hi, flow_mid, flow_lo])?;
        c.put(&udp_len.to_be_bytes())?;
        c.put(&[17, ttl])?;
        c.put(&route.sgid.0)?;
        c.put(&route.dgid.0)?;
    }
    // UDP, with no checksum (the ICRC covers the packet), from a port
    // fixed per QP as rxe picks it.
    let sport = 0xc000 | (f.src.num().get() & 0x3fff) as u16;
    c.put(&sport.to_be_bytes())?;
    c.put(&UDP_PORT.to_be_bytes())?;
    c.put(&udp_len.to_be_bytes())?;
    c.put(&[0, 0])?;
    // BTH: opcode, SE, pad count (TVer 0), P_Key, destination QP, AckReq,
    // PSN.
    c.put(&[f.opcode, (u8::from(f.solicited) << 7) | ((pad as u8) << 4)])?;
    c.put(&PKEY.to_be_bytes())?;
    c.put(&[0])?;
    c.put(&be24(f.dest.num().get()))?;
    c.put(&[u8::from(f.ack_req) << 7])?;
    c.put(&be24(f.psn.get()))?;
    c.put(f.ext.get())?;
    f.data.read_at(from.mrs(), f.skip, c.take(len)?)?;
    c.take(pad)?.fill(0);
    icrc::seal(pkt.bytes());
    pkt.send()?;
    Ok(total)
}
