// SPDX-License-Identifier: GPL-2.0

//! What passes between the requester, the responder and the completer: a
//! request with its PSN and the IB opcode it would carry on a wire, and
//! the responder's answer. A wire carries these; the local wire by a direct
//! call, with the data left where it is and copied once by whoever takes it.

use crate::{
    counters::Counter,
    flight,
    ib::{Datagram, Gid, Key, Mtu, QpFault, Remote, SendOp},
    net::Link,
    payload::Payload,
    psn::Psn,
    qp::Qpn,
    wq::{GrantedSge, Wqe},
};

/// The bytes an atomic reads and writes, at the responder and back.
pub(super) const ATOMIC_LEN: u64 = 8;

/// The operation of a request, as the BTH opcode names it for its QP type.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opcode {
    Send,
    SendImm,
    SendInv,
    Write,
    WriteImm,
    Read,
    CompareSwap,
    FetchAdd,
}

impl Opcode {
    /// The opcode of a WQE's request; `None` for a local operation, which
    /// goes nowhere.
    pub(crate) fn of(wqe: &Wqe) -> Option<Self> {
        Some(match wqe.op {
            SendOp::Send if wqe.imm.is_some() => Self::SendImm,
            SendOp::Send if wqe.invalidate.is_some() => Self::SendInv,
            SendOp::Send => Self::Send,
            SendOp::RdmaWrite(_) if wqe.imm.is_some() => Self::WriteImm,
            SendOp::RdmaWrite(_) => Self::Write,
            SendOp::RdmaRead(_) => Self::Read,
            SendOp::CompareSwap { .. } => Self::CompareSwap,
            SendOp::FetchAdd { .. } => Self::FetchAdd,
            SendOp::Local(_) => return None,
        })
    }

    /// The operation bits of the BTH opcode of a one-packet request of this
    /// operation (IBA 9.2); the QP type's rules add the transport above them
    /// ([`super::rules::bth`]).
    pub(crate) fn operation(self) -> u8 {
        match self {
            Self::Send => 0x04,
            Self::SendImm => 0x05,
            Self::Write => 0x0a,
            Self::WriteImm => 0x0b,
            Self::Read => 0x0c,
            Self::CompareSwap => 0x13,
            Self::FetchAdd => 0x14,
            Self::SendInv => 0x17,
        }
    }

    /// The port counter of an executed request of this operation.
    pub(crate) fn counter(self) -> Counter {
        match self {
            Self::Send | Self::SendImm | Self::SendInv => Counter::Sends,
            Self::Write | Self::WriteImm => Counter::RdmaWrites,
            Self::Read => Counter::RdmaReads,
            Self::CompareSwap | Self::FetchAdd => Counter::Atomics,
        }
    }

    /// Whether it is an atomic: exactly [`ATOMIC_LEN`] bytes, answered with
    /// the old value.
    pub(crate) fn is_atomic(self) -> bool {
        matches!(self, Self::CompareSwap | Self::FetchAdd)
    }

    /// Whether its answer carries data back (a READ or an atomic): the
    /// requester writes it into its SGEs, and the responder needs the
    /// resources `max_dest_rd_atomic` counts.
    pub(crate) fn answers_with_data(self) -> bool {
        self == Self::Read || self.is_atomic()
    }

    /// Whether the request takes a receive WQE at the responder.
    pub(crate) fn consumes_recv(self) -> bool {
        matches!(
            self,
            Self::Send | Self::SendImm | Self::SendInv | Self::WriteImm
        )
    }
}

/// The sending port and QP, as a packet names them (the SLID, or the SGID
/// of its GRH, and the source QPN).
#[derive(Clone, Copy)]
pub(crate) struct Source {
    pub(crate) qpn: Qpn,
    pub(crate) port: Link,
    /// The GID the packet comes from, when it has a GRH.
    pub(crate) sgid: Option<Gid>,
}

/// A request on its way to its responder.
pub(crate) struct Request<'a> {
    pub(crate) psn: Psn,
    pub(crate) opcode: Opcode,
    /// The BTH opcode: what the responder checks against its QP type.
    pub(crate) bth: u8,
    pub(crate) src: Source,
    pub(crate) dest: Qpn,
    /// The operation with its RETH or AtomicETH fields.
    pub(crate) op: SendOp,
    pub(crate) imm: Option<u32>,
    pub(crate) invalidate: Option<Key>,
    pub(crate) solicited: bool,
    /// DETH and the route of a datagram, with the Q_Key resolved.
    pub(crate) datagram: Option<(Datagram, u32)>,
    /// The message length (RETH's DMA length for a READ or an atomic).
    pub(crate) len: u32,
    /// The most payload one packet carries, on a wire that has packets.
    pub(crate) mtu: u32,
    /// The PSNs it takes in its responder's sequence: one, or a READ's
    /// response packets on a wire that has packets.
    pub(crate) span: u32,
    /// Which packets of its message it is.
    pub(crate) piece: Piece,
    /// On a wire with packets, the first of them to send: a message sent
    /// again goes on from the packet its responder expects...
    pub(crate) resend_from: u32,
    /// ... and the first not to send now: a long message leaves a window
    /// of packets at a time.
    pub(crate) send_to: u32,
    /// A READ that asks again for one response packet missing before
    /// some placed past it (see [`Window::hole`]): on the RoCEv2 wire it
    /// leaves twice. The requester sends nothing else until it is
    /// answered, so only the local ACK timeout would show that it or its
    /// answer was lost too (about half the time of 64 KiB READs under 1%
    /// loss on a veth). The responder reads both (a duplicate READ is read
    /// again), and the requester drops whichever answer comes second; a
    /// responder that queues its answers may keep only the second READ's
    /// (rsoft's does when others wait), and then only the loss of a
    /// request is made good. A gap of several packets is asked for once:
    /// the replay would be doubled whole.
    ///
    /// [`Window::hole`]: crate::flight::Window::hole
    pub(crate) twice: bool,
    /// The payload of a SEND or WRITE, in the requester's memory.
    pub(crate) data: Payload<'a>,
}

/// The packets a request is cut into on a wire that has packets.
#[derive(Clone, Copy)]
pub(crate) struct Packets {
    /// The payload of each but the last.
    pub(crate) mtu: u32,
    /// Those the requester sends: the message's, or the one of a READ or
    /// an atomic.
    pub(crate) sent: u32,
    /// The PSNs they take: a READ takes one for each of its response
    /// packets.
    pub(crate) psns: u32,
}

/// `len` bytes cut into packets at `mtu` (never below IB's smallest): the
/// payload of each packet but the last, and how many there are (one, when
/// there is no payload). Requester and responder must cut alike, as a
/// READ's response PSNs follow from it.
pub(crate) fn cut(len: u32, mtu: u32) -> (u32, u32) {
    let mtu = mtu.max(Mtu::Mtu256.bytes());
    (mtu, len.div_ceil(mtu).max(1))
}

impl Request<'_> {
    /// Its packets, at its MTU.
    pub(crate) fn packets(&self) -> Packets {
        let (mtu, each) = cut(self.len, self.mtu);
        let (sent, psns) = match self.opcode {
            Opcode::Read => (1, each),
            Opcode::CompareSwap | Opcode::FetchAdd => (1, 1),
            _ => (each, each),
        };
        Packets { mtu, sent, psns }
    }

    /// Makes it the request as sent again from `resume` PSNs after its
    /// first: a READ whose requester placed that many of its response
    /// packets asks for the rest, from the PSN and the place in memory
    /// where they stop, or for the `ask` PSNs of it that are missing
    /// before packets placed further on (a responder answers a READ asked
    /// for again from the PSN, address and length it names; rxe takes any
    /// part of the original). A SEND or WRITE goes on from that packet,
    /// which its responder NAKed as the one it expects. Changed in place:
    /// a request is large, and a message sent once is not resumed at all.
    pub(crate) fn resume(&mut self, resume: u32, ask: Option<u32>) {
        if resume == 0 && ask.is_none() {
            return;
        }
        let Packets { mtu, sent, .. } = self.packets();
        let SendOp::RdmaRead(remote) = self.op else {
            self.resend_from = if resume < sent { resume } else { 0 };
            return;
        };
        let skip = resume.saturating_mul(mtu);
        if skip >= self.len {
            return;
        }
        let rest = self.len - skip;
        self.psn = self.psn.add(resume);
        self.op = SendOp::RdmaRead(Remote {
            addr: remote.addr.wrapping_add(skip.into()),
            ..remote
        });
        self.len = ask.map_or(rest, |psns| rest.min(psns.saturating_mul(mtu)));
    }
}

/// Which part of its message a request carries: all of it (the local
/// wire; a message of one packet), or one packet of several, which carries
/// `data` and, on the first, the message's headers. `len` is then the
/// length the headers so far say: a WRITE's RETH, or the bytes of a SEND
/// up to the end of this packet.
#[derive(Clone, Copy)]
pub(crate) struct Piece {
    pub(crate) first: bool,
    pub(crate) last: bool,
    /// It came as one packet of a RoCEv2 message, whose payload the path
    /// MTU bounds (the local wire carries whole messages).
    pub(crate) packet: bool,
}

impl Piece {
    /// A whole message, as the local wire carries it.
    pub(crate) const WHOLE: Self = Self {
        first: true,
        last: true,
        packet: false,
    };

    /// Whether `carried` bytes of payload are what a packet like this one
    /// may carry at path MTU `mtu`, as rxe's `rxe_resp_check_length()`
    /// has it: each packet of a message but the last exactly the MTU, the
    /// last at least a byte, and none more than the MTU. A longer packet
    /// would make the responder's MTU, and the PSNs of a READ's response
    /// that follow from it, mean nothing.
    pub(crate) fn fits(&self, carried: u64, mtu: u32) -> bool {
        let mtu = u64::from(mtu);
        match (self.packet, self.first, self.last) {
            (false, ..) => true,
            (true, _, false) => carried == mtu,
            (true, false, true) => (1..=mtu).contains(&carried),
            (true, true, true) => carried <= mtu,
        }
    }
}

/// NAK codes (IBA 9.7.5.2.6 and the RNR NAK).
#[derive(Clone, Copy)]
pub(crate) enum Nak {
    /// Receiver not ready, with the responder's RNR timer (IB encoding).
    Rnr(u8),
    /// PSN sequence error: the responder expects `expected`, an earlier
    /// PSN, which the NAK names (IBA 9.7.5.2.2). `ack_before`, of a
    /// responder's own NAK: the PSN before `expected` ended a SEND or
    /// WRITE, which an ACK may name too. A READ's or an atomic's is
    /// answered by its data alone: rxe's requester takes a plain ACK at
    /// the last PSN of a READ none of whose response came, or at an
    /// atomic's, for its completion, with no data.
    Sequence {
        expected: Psn,
        ack_before: bool,
    },
    InvalidRequest,
    RemoteAccess,
    RemoteOperation,
}

/// A responder's answer to a request.
pub(crate) enum Response {
    /// Executed (a SEND, WRITE or a duplicate of one).
    Ack,
    /// A READ's data: the responder's memory, checked, for the completer
    /// to copy into the request's local buffers.
    Read(GrantedSge),
    /// An atomic's original value.
    Atomic(u64),
    Nak(Nak),
    /// The data could not be moved. The local wire has the responder copy
    /// from the requester's memory, so which side's buffer failed is not
    /// known: the requester's completion says LOC_PROT_ERR, as the
    /// receiver's does.
    Fault,
}

impl Nak {
    /// Its AETH syndrome (IBA 9.7.5.2.6).
    pub(crate) fn syndrome(self) -> u8 {
        match self {
            Self::Rnr(timer) => 0x20 | (timer & 0x1f),
            Self::Sequence { .. } => 0x60,
            Self::InvalidRequest => 0x61,
            Self::RemoteAccess => 0x62,
            Self::RemoteOperation => 0x63,
        }
    }

    /// What the RC responder that sends this NAK suffered, if it ends the
    /// QP: every NAK but a PSN sequence error's and an RNR NAK (IBA's
    /// class A and C errors; rxe's do_class_ac_error()).
    pub(crate) fn fault(self) -> Option<QpFault> {
        match self {
            Self::Rnr(_) | Self::Sequence { .. } => None,
            Self::InvalidRequest => Some(QpFault::InvalidRequest),
            Self::RemoteAccess => Some(QpFault::Access),
            Self::RemoteOperation => Some(QpFault::Fatal),
        }
    }
}

impl Response {
    /// The counter of the NAKs like this one that a wire sent (`sent`) or
    /// received, if it keeps one.
    pub(crate) fn nak_counter(&self, sent: bool) -> Option<Counter> {
        Some(match (self, sent) {
            (Self::Nak(Nak::Sequence { .. }), true) => Counter::WireSequenceNaksSent,
            (Self::Nak(Nak::Sequence { .. }), false) => Counter::WireSequenceNaksReceived,
            (Self::Nak(Nak::Rnr(_)), true) => Counter::WireRnrNaksSent,
            (Self::Nak(Nak::Rnr(_)), false) => Counter::WireRnrNaksReceived,
            _ => return None,
        })
    }

    /// The AETH syndrome of an ACK: unlimited credits, as rxe sends it.
    pub(crate) const ACK_SYNDROME: u8 = 0x1f;

    /// The answer an AETH syndrome (IBA 9.7.5.2.6) with PSN `psn` gives;
    /// `None` for a reserved one.
    pub(crate) fn of_aeth(syndrome: u8, psn: Psn) -> Option<Self> {
        let code = syndrome & 0x1f;
        if flight::is_ack(syndrome) {
            return Some(Self::Ack);
        }
        Some(match syndrome >> 5 {
            1 => Self::Nak(Nak::Rnr(code)),
            3 => Self::Nak(match code {
                0 => Nak::Sequence {
                    expected: psn,
                    ack_before: false,
                },
                // An invalid request, or an invalid RD request.
                1 | 4 => Nak::InvalidRequest,
                2 => Nak::RemoteAccess,
                3 => Nak::RemoteOperation,
                _ => return None,
            }),
            _ => return None,
        })
    }
}

/// What a wire did with a request.
pub(crate) enum Carried {
    /// The responder answered at once (the local wire).
    Answered(Response),
    /// It left as `packets` packets; an answer, if one is due, comes
    /// later. `cut_short`: the rest stayed behind for an answer that
    /// refused one sent before them ([`crate::copy::Pace::refused`]).
    Sent { packets: u32, cut_short: bool },
    /// Nothing took it, and nothing will answer.
    Lost,
}
