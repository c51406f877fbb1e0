// SPDX-License-Identifier: GPL-2.0

//! Packets from other hosts: what reaches port 4791 of a RoCE port's
//! namespace on its netdev is checked (ICRC, headers, destination address),
//! over IPv4 or IPv6. A request (a UD SEND, or an RC or UC request
//! packet) goes to the responder of its QP, as the local wire hands it
//! one, and an RC responder's answer goes back; an answer (ACK, NAK, READ
//! response, atomic acknowledgement) goes to the completer of the QP whose
//! request is in flight. Anything else is dropped and counted.

use super::{answer, bth, frame, icrc};
use crate::{
    complete::After,
    copy::Pace,
    counters::Counter,
    fabric::Fabric,
    flight::{self, Answer, Outcome},
    ib::{self, Address, Gid, GidType, Grh, Key, NetDev, QpNum, QpType, Remote, SendOp},
    net::{Link, Net},
    payload::Payload,
    psn::Psn,
    qp::{Ctx, Qpn},
    scratch,
    transport::{self, Opcode, Piece, Request, Response, Returned, Source},
};

/// The low 15 bits of a P_Key: only the default partition is served.
const PKEY_BASE: u16 = 0x7fff;

/// Why a packet was not taken.
enum Dropped {
    Icrc,
    Other,
}

impl ib::Receive for Fabric<Net> {
    fn receive(&self, netdev: &NetDev, packet: &[u8]) {
        let Some(port) = self.port_on(netdev) else {
            return;
        };
        let c = &port.counters;
        match take(&port, packet) {
            Ok(()) => {
                c.add(Counter::WireReceivedPackets, 1);
                c.add(Counter::WireReceivedBytes, packet.len() as u64);
            }
            Err(Dropped::Icrc) => c.add(Counter::WireIcrcErrors, 1),
            Err(Dropped::Other) => c.add(Counter::WireReceiveDrops, 1),
        }
    }
}

/// `N` bytes of `p` from `at`.
fn field<const N: usize>(p: &[u8], at: usize) -> Result<[u8; N], Dropped> {
    p.get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .ok_or(Dropped::Other)
}

/// The 24 bits of a QPN or PSN at `at`.
fn be24(p: &[u8], at: usize) -> Result<u32, Dropped> {
    let [a, b, c] = field(p, at)?;
    Ok(u32::from_be_bytes([0, a, b, c]))
}

/// What the IP header of a packet says.
struct IpHeader {
    /// Its length: where the UDP header starts.
    len: usize,
    sgid: Gid,
    dgid: Gid,
    traffic_class: u8,
    flow_label: u32,
    hop_limit: u8,
}

/// Reads the IP header of `p`: IPv4 without options (as RoCEv2 senders
/// send it) or IPv6 with no extension header, carrying UDP.
fn ip_header(p: &[u8]) -> Result<IpHeader, Dropped> {
    let [first] = field(p, 0)?;
    let (h, protocol) = match first {
        0x45 => {
            let [tos] = field(p, 1)?;
            let [ttl, protocol] = field(p, 8)?;
            let h = IpHeader {
                len: frame::IPV4_HEADER,
                sgid: Gid::of_ipv4(field(p, 12)?),
                dgid: Gid::of_ipv4(field(p, 16)?),
                traffic_class: tos,
                flow_label: 0,
                hop_limit: ttl,
            };
            (h, protocol)
        }
        _ if first >> 4 == 6 => {
            let [b0, b1, b2, b3] = field(p, 0)?;
            let [next, hops] = field(p, 6)?;
            let h = IpHeader {
                len: frame::IPV6_HEADER,
                sgid: Gid(field(p, 8)?),
                dgid: Gid(field(p, 24)?),
                traffic_class: (b0 << 4) | (b1 >> 4),
                flow_label: u32::from_be_bytes([0, b1 & 0x0f, b2, b3]),
                hop_limit: hops,
            };
            (h, next)
        }
        _ => return Err(Dropped::Other),
    };
    if protocol != 17 {
        return Err(Dropped::Other);
    }
    Ok(h)
}

/// Checks `p`, a RoCEv2 packet from its IP header on, and hands it to its
/// QP on `port`.
fn take(port: &Net, p: &[u8]) -> Result<(), Dropped> {
    let ip = ip_header(p)?;
    let udp = ip.len;
    let bth = udp + frame::UDP_HEADER;
    let headers = bth + frame::BTH;
    let dport = u16::from_be_bytes(field(p, udp + 2)?);
    if dport != frame::UDP_PORT {
        return Err(Dropped::Other);
    }
    if !icrc::checks(p) {
        return Err(Dropped::Icrc);
    }
    let [opcode, flags] = field(p, bth)?;
    let pkey = u16::from_be_bytes(field(p, bth + 2)?);
    let dest = Qpn::of(QpNum::new(be24(p, bth + 5)?));
    let psn = Psn::new(be24(p, bth + 9)?);
    if flags & 0x0f != 0 || pkey & PKEY_BASE != PKEY_BASE || !fabric_answers(port, &ip.dgid) {
        return Err(Dropped::Other);
    }
    let pad = usize::from((flags >> 4) & 3);
    let end = p.len().checked_sub(icrc::LEN + pad).ok_or(Dropped::Other)?;
    let body = p.get(headers..end).ok_or(Dropped::Other)?;
    match opcode {
        bth::UD_SEND_ONLY | bth::UD_SEND_ONLY_IMM => {
            let datagram = Datagram {
                ip: &ip,
                dest,
                psn,
                imm: opcode == bth::UD_SEND_ONLY_IMM,
                solicited: flags & 0x80 != 0,
                body,
            };
            take_datagram(port, datagram)
        }
        bth::ACKNOWLEDGE => take_ack(port, &ip, dest, psn, body),
        bth::READ_RESPONSE_FIRST
        | bth::READ_RESPONSE_MIDDLE
        | bth::READ_RESPONSE_LAST
        | bth::READ_RESPONSE_ONLY
        | bth::ATOMIC_ACKNOWLEDGE => take_returned(port, &ip, dest, psn, opcode, body),
        _ => {
            let part = bth::request(opcode).ok_or(Dropped::Other)?;
            let packet = Packet {
                ip: &ip,
                dest,
                psn,
                transport: opcode & bth::TRANSPORT,
                part,
                solicited: flags & 0x80 != 0,
                ack_req: p.get(bth + 8).is_some_and(|b| b & 0x80 != 0),
                body,
            };
            take_request(port, &packet)
        }
    }
}

/// A request of an RC or UC QP, from its extension headers on.
struct Packet<'a> {
    ip: &'a IpHeader,
    dest: Qpn,
    psn: Psn,
    /// Its opcode's transport bits.
    transport: u8,
    part: bth::Part,
    solicited: bool,
    ack_req: bool,
    body: &'a [u8],
}

/// Reads a RETH or the address and key of an AtomicETH at `at` of `p`.
fn remote(p: &[u8], at: usize) -> Result<Remote, Dropped> {
    Ok(Remote {
        addr: u64::from_be_bytes(field(p, at)?),
        rkey: Key::new(u32::from_be_bytes(field(p, at + 8)?)),
    })
}

/// Hands a request packet to its QP's responder and sends the answer
/// back, as the local wire hands it a request and returns the answer.
fn take_request(port: &Net, pkt: &Packet<'_>) -> Result<(), Dropped> {
    let (p, part) = (pkt.body, pkt.part);
    let mut at = 0;
    let (op, reth_len) = match part.op {
        Opcode::Send | Opcode::SendImm | Opcode::SendInv => (SendOp::Send, None),
        // Later packets of a WRITE go where its first one said.
        Opcode::Write | Opcode::WriteImm if !part.first => (
            SendOp::RdmaWrite(Remote {
                addr: 0,
                rkey: Key::new(0),
            }),
            None,
        ),
        Opcode::Write | Opcode::WriteImm | Opcode::Read => {
            let r = remote(p, 0)?;
            let len = u32::from_be_bytes(field(p, 12)?);
            at = frame::RETH;
            let op = if part.op == Opcode::Read {
                SendOp::RdmaRead(r)
            } else {
                SendOp::RdmaWrite(r)
            };
            (op, Some(len))
        }
        Opcode::CompareSwap | Opcode::FetchAdd => {
            let r = remote(p, 0)?;
            let swap_add = u64::from_be_bytes(field(p, 12)?);
            let compare = u64::from_be_bytes(field(p, 20)?);
            at = frame::ATOMIC_ETH;
            let op = if part.op == Opcode::CompareSwap {
                SendOp::CompareSwap {
                    remote: r,
                    compare,
                    swap: swap_add,
                }
            } else {
                SendOp::FetchAdd {
                    remote: r,
                    add: swap_add,
                }
            };
            (op, Some(8))
        }
    };
    let imm = if part.has_imm() {
        let value = u32::from_ne_bytes(field(p, at)?);
        at += frame::IMM_DT;
        Some(value)
    } else {
        None
    };
    let invalidate = if part.has_ieth() {
        let key = u32::from_be_bytes(field(p, at)?);
        at += frame::IETH;
        Some(Key::new(key))
    } else {
        None
    };
    let data = p.get(at..).ok_or(Dropped::Other)?;
    let carried = u32::try_from(data.len()).map_err(|_| Dropped::Other)?;
    // A READ or an atomic carries no payload; a WRITE of one packet all
    // it says, the first of several less.
    let len = match (part.op, reth_len) {
        (Opcode::Read | Opcode::CompareSwap | Opcode::FetchAdd, Some(len)) if carried == 0 => len,
        (Opcode::Write | Opcode::WriteImm, Some(len)) if part.last && len == carried => len,
        (Opcode::Write | Opcode::WriteImm, Some(len)) if !part.last && len > carried => len,
        (_, None) => carried,
        _ => return Err(Dropped::Other),
    };
    let qp = port.qp(pkt.dest).ok_or(Dropped::Other)?;
    if !matches!(qp.qp_type, QpType::Rc | QpType::Uc) {
        return Err(Dropped::Other);
    }
    let (peer, path, mtu) = {
        let inner = qp.inner.lock();
        let a = &inner.attr;
        (
            a.dest_qpn,
            a.av.grh,
            a.path_mtu.map_or(port.mtu(), |m| m.bytes()),
        )
    };
    let route = path.ok_or(Dropped::Other)?;
    let span = match part.op {
        Opcode::Read => transport::cut(len, mtu).1,
        _ => 1,
    };
    let req = Request {
        psn: pkt.psn,
        opcode: part.op,
        bth: pkt.transport | part.op.operation(),
        src: Source {
            qpn: Qpn::of(peer),
            port: Link::Roce,
            sgid: Some(pkt.ip.sgid),
        },
        dest: pkt.dest,
        op,
        imm,
        invalidate,
        solicited: pkt.solicited,
        datagram: None,
        len,
        mtu,
        span,
        piece: Piece {
            first: part.first,
            last: part.last,
            packet: true,
        },
        resend_from: 0,
        send_to: u32::MAX,
        twice: false,
        data: Payload::Inline(data),
    };
    let mut room = scratch::receive_room().map_err(|_| Dropped::Other)?;
    let mut after = After::default();
    let response = transport::receive(port, &qp, &req, &mut room, &Pace::ONE_PACKET, &mut after);
    let dropped = after.dropped;
    if let Some(other) = after.finish() {
        other.run(Ctx::caller(false));
    }
    // UC answers nothing.
    if let (Some(response), bth::RC) = (response, pkt.transport) {
        let asker = answer::Asker {
            route,
            dest: req.src.qpn,
            psn: pkt.psn,
            mtu,
            ack_req: pkt.ack_req,
        };
        answer::send(port, &qp, &asker, response);
    }
    if dropped {
        return Err(Dropped::Other);
    }
    Ok(())
}

/// A UD SEND, from its DETH on.
struct Datagram<'a> {
    ip: &'a IpHeader,
    dest: Qpn,
    psn: Psn,
    imm: bool,
    solicited: bool,
    /// DETH, immediate data, payload.
    body: &'a [u8],
}

/// An acknowledgement of an RC request, `body` its AETH: the answer of
/// the request of QP `dest` of `port` with the PSN `psn`.
fn take_ack(port: &Net, ip: &IpHeader, dest: Qpn, psn: Psn, body: &[u8]) -> Result<(), Dropped> {
    let [syndrome, _, _, _] = field(body, 0)?;
    let response = Response::of_aeth(syndrome, psn).ok_or(Dropped::Other)?;
    if body.len() != frame::AETH {
        return Err(Dropped::Other);
    }
    let qp = port.qp(dest).ok_or(Dropped::Other)?;
    let answer = Answer {
        psn,
        outcome: Outcome::Aeth(syndrome),
    };
    if qp.qp_type != QpType::Rc {
        return Err(Dropped::Other);
    }
    // Counted as it came, whether or not it still says something new.
    if let Some(counter) = response.nak_counter(false) {
        port.counters.add(counter, 1);
    }
    if !transport::answered(&qp, &ip.sgid, answer) {
        return Err(Dropped::Other);
    }
    qp.run(Ctx::caller(false));
    Ok(())
}

/// A READ response or atomic acknowledgement, `body` from its AETH (none
/// on a middle READ response) on: data for the READ or atomic of QP
/// `dest` of `port` in flight.
fn take_returned(
    port: &Net,
    ip: &IpHeader,
    dest: Qpn,
    psn: Psn,
    opcode: u8,
    body: &[u8],
) -> Result<(), Dropped> {
    let at = if opcode == bth::READ_RESPONSE_MIDDLE {
        0
    } else {
        // The AETH of data is an ACK's.
        let [syndrome] = field(body, 0)?;
        if !flight::is_ack(syndrome) {
            return Err(Dropped::Other);
        }
        frame::AETH
    };
    let data = match opcode {
        bth::ATOMIC_ACKNOWLEDGE if body.len() == at + 8 => {
            Returned::Atomic(u64::from_be_bytes(field(body, at)?))
        }
        bth::ATOMIC_ACKNOWLEDGE => return Err(Dropped::Other),
        _ => Returned::Read {
            data: body.get(at..).ok_or(Dropped::Other)?,
            last: matches!(opcode, bth::READ_RESPONSE_LAST | bth::READ_RESPONSE_ONLY),
        },
    };
    let qp = port.qp(dest).ok_or(Dropped::Other)?;
    if qp.qp_type != QpType::Rc {
        return Err(Dropped::Other);
    }
    let answered = transport::returned(port, &qp, &ip.sgid, psn, data).ok_or(Dropped::Other)?;
    if answered {
        qp.run(Ctx::caller(false));
    }
    Ok(())
}

/// Hands a UD SEND to its QP on `port`.
fn take_datagram(port: &Net, d: Datagram<'_>) -> Result<(), Dropped> {
    let p = d.body;
    let qkey = u32::from_be_bytes(field(p, 0)?);
    let src = be24(p, 5)?;
    let mut at = frame::DETH;
    let imm = if d.imm {
        let value = u32::from_ne_bytes(field(p, at)?);
        at += frame::IMM_DT;
        Some(value)
    } else {
        None
    };
    let data = p.get(at..).ok_or(Dropped::Other)?;
    let len = u32::try_from(data.len()).map_err(|_| Dropped::Other)?;
    let (ip, dest) = (d.ip, d.dest);
    let (sgid, dgid) = (ip.sgid, ip.dgid);
    if len > port.mtu() {
        return Err(Dropped::Other);
    }
    let qp = port.qp(dest).ok_or(Dropped::Other)?;
    // The route back, as the sender's address vector would name it.
    let route = Grh {
        dgid,
        sgid,
        sgid_type: GidType::RoceV2,
        flow_label: ip.flow_label,
        sgid_index: 0,
        hop_limit: ip.hop_limit,
        traffic_class: ip.traffic_class,
    };
    let datagram = ib::Datagram {
        address: Address {
            dlid: 0,
            port: 1,
            grh: Some(route),
        },
        remote_qpn: dest.num(),
        remote_qkey: qkey,
    };
    let (opcode, bth) = match imm {
        Some(_) => (Opcode::SendImm, bth::UD_SEND_ONLY_IMM),
        None => (Opcode::Send, bth::UD_SEND_ONLY),
    };
    let req = Request {
        psn: d.psn,
        opcode,
        bth,
        src: Source {
            qpn: Qpn::of(QpNum::new(src)),
            port: Link::Roce,
            sgid: Some(sgid),
        },
        dest,
        op: SendOp::Send,
        imm,
        invalidate: None,
        solicited: d.solicited,
        datagram: Some((datagram, qkey)),
        len,
        mtu: port.mtu(),
        span: 1,
        piece: Piece::WHOLE,
        resend_from: 0,
        send_to: u32::MAX,
        twice: false,
        data: Payload::Inline(data),
    };
    let mut room = scratch::receive_room().map_err(|_| Dropped::Other)?;
    let mut after = After::default();
    transport::receive(port, &qp, &req, &mut room, &Pace::ONE_PACKET, &mut after);
    let dropped = after.dropped;
    if let Some(other) = after.finish() {
        other.run(Ctx::caller(false));
    }
    if dropped {
        return Err(Dropped::Other);
    }
    Ok(())
}

/// Whether `port` holds `gid` and is up.
fn fabric_answers(port: &Net, gid: &Gid) -> bool {
    crate::fabric::Port::answers(port, gid)
}
