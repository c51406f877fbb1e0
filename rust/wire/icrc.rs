// SPDX-License-Identifier: GPL-2.0

//! The invariant CRC of a RoCEv2 packet (IBA annex A17.3.3): CRC-32 over
//! the packet from its IP header to the end of its pad, as if 8 bytes of
//! ones (the masked LRH) came first, with the fields that routers may
//! change set to ones. It is sent inverted, least significant byte first,
//! as rxe and hardware send it.

use crate::ib::crc32_le;

/// Bytes of the UDP and base transport headers, after the IP header.
const UDP_BTH: usize = 8 + 12;
/// The longest headers covered: IPv6, UDP and BTH.
const MAX_HEADERS: usize = 40 + UDP_BTH;

/// Bytes the ICRC takes at the end of the packet.
pub(super) const LEN: usize = 4;

/// The ICRC of `pkt`, a RoCEv2 packet from its IP header (v4 without
/// options, or v6) on, as its last [`LEN`] bytes should hold it; `None` if
/// it is too short for its headers or of another IP version.
fn of(pkt: &[u8]) -> Option<[u8; LEN]> {
    let ip = match pkt.first()? >> 4 {
        4 => 20,
        6 => 40,
        _ => return None,
    };
    let headers = ip + UDP_BTH;
    let body = pkt.len().checked_sub(LEN)?;
    let mut buf = [0u8; MAX_HEADERS];
    let masked = buf.get_mut(..headers)?;
    masked.copy_from_slice(pkt.get(..headers)?);
    let rest = pkt.get(headers..body)?;
    // What routers may change: IPv4's TOS, TTL and header checksum;
    // IPv6's traffic class, flow label and hop limit; the UDP checksum;
    // the BTH's FECN, BECN and reserved bits.
    if ip == 20 {
        for i in [1, 8, 10, 11] {
            masked[i] = 0xff;
        }
    } else {
        masked[0] |= 0x0f;
        for i in [1, 2, 3, 7] {
            masked[i] = 0xff;
        }
    }
    for i in [ip + 6, ip + 7, ip + 8 + 4] {
        masked[i] = 0xff;
    }
    let crc = crc32_le(crc32_le(crc32_le(!0, &[0xff; 8]), masked), rest);
    Some((!crc).to_le_bytes())
}

/// Writes the ICRC into the last [`LEN`] bytes of `pkt`, a RoCEv2 packet
/// from its IP header on; a packet too short for its headers is left as
/// it is.
pub(super) fn seal(pkt: &mut [u8]) {
    let at = pkt.len().saturating_sub(LEN);
    if let (Some(icrc), Some(slot)) = (of(pkt), pkt.get_mut(at..)) {
        slot.copy_from_slice(&icrc);
    }
}

/// Whether the last [`LEN`] bytes of `pkt`, a RoCEv2 packet from its IP
/// header on, are its ICRC.
pub(super) fn checks(pkt: &[u8]) -> bool {
    let at = pkt.len().saturating_sub(LEN);
    of(pkt).is_some_and(|icrc| pkt.get(at..) == Some(&icrc[..]))
}
