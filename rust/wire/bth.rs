// SPDX-License-Identifier: GPL-2.0

//! The BTH opcodes (IBA 9.2) rsoft sends and takes: UD SENDs, and the
//! requests of connected QPs and their answers. A message of more than
//! one packet has a first, middle and last packet, and each opcode names
//! the extension headers its packet carries.

use crate::transport::Opcode;

/// The transport bits of an opcode: RC, UC, UD (the top three).
pub(super) const TRANSPORT: u8 = 0xe0;
pub(super) const RC: u8 = 0x00;
pub(super) const UC: u8 = 0x20;
/// The one datagram request: a UD SEND (of one packet), without and
/// with immediate data.
pub(super) const UD_SEND_ONLY: u8 = 0x64;
pub(super) const UD_SEND_ONLY_IMM: u8 = 0x65;
/// The answers of an RC responder.
pub(super) const READ_RESPONSE_FIRST: u8 = 0x0d;
pub(super) const READ_RESPONSE_MIDDLE: u8 = 0x0e;
pub(super) const READ_RESPONSE_LAST: u8 = 0x0f;
pub(super) const READ_RESPONSE_ONLY: u8 = 0x10;
pub(super) const ACKNOWLEDGE: u8 = 0x11;
pub(super) const ATOMIC_ACKNOWLEDGE: u8 = 0x12;

/// One packet of a request, as its opcode names it.
#[derive(Clone, Copy)]
pub(super) struct Part {
    /// The message's operation; a middle packet of a SEND or WRITE names
    /// only the plain one.
    pub(super) op: Opcode,
    pub(super) first: bool,
    pub(super) last: bool,
}

/// The first, middle and last opcodes of a message whose one-packet
/// operation is `only` (the low five bits).
fn family(only: u8) -> (u8, u8, u8) {
    match only {
        0x04 => (0x00, 0x01, 0x02),
        0x05 => (0x00, 0x01, 0x03),
        0x17 => (0x00, 0x01, 0x16),
        0x0a => (0x06, 0x07, 0x08),
        0x0b => (0x06, 0x07, 0x09),
        _ => (only, only, only),
    }
}

/// The opcode of the packet `first`/`last` of a message whose one-packet
/// opcode is `only`.
pub(super) fn segment(only: u8, first: bool, last: bool) -> u8 {
    let (f, m, l) = family(only & !TRANSPORT);
    let op = match (first, last) {
        (true, true) => only & !TRANSPORT,
        (true, false) => f,
        (false, false) => m,
        (false, true) => l,
    };
    (only & TRANSPORT) | op
}

/// The request packet an opcode of RC or UC names; `None` for an answer,
/// a datagram or a reserved one.
pub(super) fn request(opcode: u8) -> Option<Part> {
    if !matches!(opcode & TRANSPORT, RC | UC) {
        return None;
    }
    let part = |op, first, last| Some(Part { op, first, last });
    match opcode & !TRANSPORT {
        0x00 => part(Opcode::Send, true, false),
        0x01 => part(Opcode::Send, false, false),
        0x02 => part(Opcode::Send, false, true),
        0x03 => part(Opcode::SendImm, false, true),
        0x04 => part(Opcode::Send, true, true),
        0x05 => part(Opcode::SendImm, true, true),
        0x06 => part(Opcode::Write, true, false),
        0x07 => part(Opcode::Write, false, false),
        0x08 => part(Opcode::Write, false, true),
        0x09 => part(Opcode::WriteImm, false, true),
        0x0a => part(Opcode::Write, true, true),
        0x0b => part(Opcode::WriteImm, true, true),
        0x0c => part(Opcode::Read, true, true),
        0x13 => part(Opcode::CompareSwap, true, true),
        0x14 => part(Opcode::FetchAdd, true, true),
        0x16 => part(Opcode::SendInv, false, true),
        0x17 => part(Opcode::SendInv, true, true),
        _ => None,
    }
}

impl Part {
    /// Whether it carries immediate data: the last of one with it.
    pub(super) fn has_imm(&self) -> bool {
        self.last && matches!(self.op, Opcode::SendImm | Opcode::WriteImm)
    }

    /// Whether it carries an IETH: the last of a SEND_WITH_INV.
    pub(super) fn has_ieth(&self) -> bool {
        self.last && self.op == Opcode::SendInv
    }
}
