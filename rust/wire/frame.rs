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
use core::ops::Range;
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
    pub(super) ext: Ext,
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

impl Frame<'_> {
    /// Its length from the BTH on: headers, payload, pad and ICRC.
    fn body_len(&self) -> usize {
        let len = self.len as usize;
        BTH + self.ext.len + len + (len.wrapping_neg() & 3) + icrc::LEN
    }

    /// The UDP source port: fixed per QP, as rxe picks it.
    fn sport(&self) -> u16 {
        0xc000 | (self.src.num().get() & 0x3fff) as u16
    }
}

/// At most this many bytes, from the IP header on, leave in one train: its
/// skb then fits an order-2 allocation, which softirq can expect to get.
const TRAIN_BYTES: usize = 15 * 1024;

/// Sends `f` from `from` along `route` and counts it, sent or not: a
/// packet that cannot be sent is lost like one dropped on the way.
pub(super) fn send(from: &Net, route: &Grh, f: &Frame<'_>) {
    count(from, 1, build_and_send(from, route, f));
}

/// Sends `frame(i)` for each `i` below `n`, in order, along `route`, and
/// counts them as [`send`] does; stops early once `refused` says so, and
/// returns how many it sent. Where the netdev takes UDP GSO (a veth,
/// loopback, NICs with USO), each run of packets of one length, and a
/// shorter one after them, leaves as one skb (a train) that the stack or
/// the NIC cuts apart: one pass through the IP output, the qdisc and the
/// veth for up to [`TRAIN_BYTES`], where each packet would take its own.
pub(super) fn send_run<'a>(
    from: &Net,
    route: &Grh,
    n: u32,
    refused: &dyn Fn() -> bool,
    frame: impl Fn(u32) -> Frame<'a>,
) -> u32 {
    let most = from.netdev().map_or(1, |d| d.train_max());
    let headers = Path::of(route).headers();
    let mut i = 0;
    // A NAK can come back between two trains (on a veth, before the
    // send of one returns): what would follow it is dropped unread.
    while i < n && (i == 0 || !refused()) {
        let seg = frame(i).body_len();
        let (mut end, mut bytes) = (i + 1, headers + seg);
        while end < n && end - i < most {
            let next = frame(end).body_len();
            if next > seg || bytes + next > TRAIN_BYTES {
                break;
            }
            end += 1;
            bytes += next;
            if next < seg {
                break;
            }
        }
        if end - i == 1 {
            send(from, route, &frame(i));
        } else {
            send_train(from, route, (i..end, bytes), &frame, seg);
        }
        i = end;
    }
    i
}

/// Sends the packets `frame(i)` of `run` as one train of `total` bytes
/// from its IP header on, its packets `seg` bytes long from the BTH on but
/// for a shorter last one.
fn send_train<'a>(
    from: &Net,
    route: &Grh,
    (run, total): (Range<u32>, usize),
    frame: &impl Fn(u32) -> Frame<'a>,
    seg: usize,
) {
    let packets = run.end - run.start;
    match build_train(from, route, (run.clone(), total), frame) {
        Ok((pkt, bytes)) => {
            let sent = u32::try_from(seg).map_err(Error::from);
            count(
                from,
                packets,
                sent.and_then(|seg| pkt.send_train(seg)).map(|()| bytes),
            );
        }
        // Without memory for the train, say: they leave one by one.
        Err(_) => run.for_each(|i| send(from, route, &frame(i))),
    }
}

/// Counts `packets` sent in `bytes` from their IP headers on, or not sent.
fn count(from: &Net, packets: u32, sent: Result<usize>) {
    match sent {
        Ok(bytes) => {
            from.counters.add(Counter::WireSentPackets, packets.into());
            from.counters.add(Counter::WireSentBytes, bytes as u64);
        }
        Err(_) => from.counters.add(Counter::WireSendErrors, packets.into()),
    }
}

/// The train of `run`, `total` bytes long: one IP and UDP header, then
/// each packet from its BTH on, with the ICRC it will have once cut out:
/// over headers fitted to its own length and, for IPv4, to the IP ID it
/// will get, the train's (0) plus its index, as the kernel's GSO numbers
/// segments and has NICs number them. Returns it with the length its
/// packets will have from their IP headers on, together.
fn build_train<'a>(
    from: &Net,
    route: &Grh,
    (run, total): (Range<u32>, usize),
    frame: &impl Fn(u32) -> Frame<'a>,
) -> Result<(IpPacket, usize)> {
    let path = Path::of(route);
    let hl = path.headers();
    let netdev = from.netdev().ok_or(ENODEV)?;
    let mut pkt = IpPacket::new(&netdev, &route.sgid, &route.dgid, total).ok_or(ENOMEM)?;
    let mut c = Cursor { rest: pkt.bytes() };
    path.put(c.take(hl)?, total, 0, frame(run.start).sport())?;
    let mut image = [0u8; IPV6_HEADER + UDP_HEADER];
    let image = image.get_mut(..hl).ok_or(EINVAL)?;
    let mut bytes = 0;
    for (id, i) in (0u16..).zip(run) {
        let f = frame(i);
        let body = c.take(f.body_len())?;
        fill_body(from, &f, body)?;
        path.put(image, hl + body.len(), id, f.sport())?;
        icrc::seal_parts(image, body);
        bytes += hl + body.len();
    }
    Ok((pkt, bytes))
}

/// Sends `f`; returns its length from the IP header on.
fn build_and_send(from: &Net, route: &Grh, f: &Frame<'_>) -> Result<usize> {
    let path = Path::of(route);
    let netdev = from.netdev().ok_or(ENODEV)?;
    let total = path.headers() + f.body_len();
    let mut pkt = IpPacket::new(&netdev, &route.sgid, &route.dgid, total).ok_or(ENOMEM)?;
    let mut c = Cursor { rest: pkt.bytes() };
    let (head, body) = (c.take(path.headers())?, c.take(f.body_len())?);
    path.put(head, total, 0, f.sport())?;
    fill_body(from, f, body)?;
    icrc::seal_parts(head, body);
    pkt.send()?;
    Ok(total)
}

/// How a route's packets are addressed: IPv4 when both GIDs are
/// IPv4-mapped, else IPv6 (a mix fails in [`IpPacket::new`]).
struct Path<'a> {
    route: &'a Grh,
    v4: Option<([u8; 4], [u8; 4])>,
}

impl<'a> Path<'a> {
    fn of(route: &'a Grh) -> Self {
        Self {
            route,
            v4: route.sgid.ipv4().zip(route.dgid.ipv4()),
        }
    }

    /// The length of the IP and UDP headers.
    fn headers(&self) -> usize {
        UDP_HEADER
            + if self.v4.is_some() {
                IPV4_HEADER
            } else {
                IPV6_HEADER
            }
    }

    /// Writes into `out`, [`Self::headers`] long, the IP and UDP headers
    /// of a packet of `total` bytes from the IP header on, with IP ID `id`
    /// (IPv4) and UDP source port `sport`.
    fn put(&self, out: &mut [u8], total: usize, id: u16, sport: u16) -> Result {
        let ip_len = u16::try_from(total)?;
        let udp_len = total
            .checked_sub(self.headers() - UDP_HEADER)
            .and_then(|l| u16::try_from(l).ok())
            .ok_or(EINVAL)?;
        let route = self.route;
        let mut c = Cursor { rest: out };
        let ttl = match route.hop_limit {
            0 => DEFAULT_TTL,
            hops => hops,
        };
        let tc = route.traffic_class;
        if let Some((saddr, daddr)) = self.v4 {
            // IPv4: no options, DF set (an atomic datagram, RFC 6864); the
            // kernel's IP output writes the header checksum.
            c.put(&[0x45, tc])?;
            c.put(&ip_len.to_be_bytes())?;
            c.put(&id.to_be_bytes())?;
            c.put(&[0x40, 0, ttl, 17, 0, 0])?;
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
        // UDP, with no checksum (the ICRC covers the packet; a train's
        // packets get one from the stack).
        c.put(&sport.to_be_bytes())?;
        c.put(&UDP_PORT.to_be_bytes())?;
        c.put(&udp_len.to_be_bytes())?;
        c.put(&[0, 0])
    }
}

/// Writes `f` from its BTH to its pad into `body`, which ends with room
/// for the ICRC.
fn fill_body(from: &Net, f: &Frame<'_>, body: &mut [u8]) -> Result {
    let len = f.len as usize;
    let pad = len.wrapping_neg() & 3;
    let mut c = Cursor { rest: body };
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
    Ok(())
}
