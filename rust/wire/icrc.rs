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
    let at = ip_udp(pkt)?;
    of_parts(pkt.get(..at)?, pkt.get(at..pkt.len().checked_sub(LEN)?)?)
}

/// The length of the IP and UDP headers that `pkt` starts with.
fn ip_udp(pkt: &[u8]) -> Option<usize> {
    match pkt.first()? >> 4 {
        4 => Some(20 + 8),
        6 => Some(40 + 8),
        _ => None,
    }
}

/// The ICRC of the packet of `headers` (IP and UDP) followed by `body`
/// (from the BTH to the end of the pad).
fn of_parts(headers: &[u8], body: &[u8]) -> Option<[u8; LEN]> {
    let ip = headers.len().checked_sub(8)?;
    if ip_udp(headers)? != headers.len() {
        return None;
    }
    let covered = ip + UDP_BTH;
    let (bth, rest) = (body.get(..UDP_BTH - 8)?, body.get(UDP_BTH - 8..)?);
    let mut buf = [0u8; MAX_HEADERS];
    let masked = buf.get_mut(..covered)?;
    masked.get_mut(..headers.len())?.copy_from_slice(headers);
    masked.get_mut(headers.len()..)?.copy_from_slice(bth);
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

/// Writes the ICRC into the last [`LEN`] bytes of `body`, the packet from
/// its BTH on, which will follow `headers` (its IP and UDP headers); a
/// packet too short for its headers is left as it is.
pub(super) fn seal_parts(headers: &[u8], body: &mut [u8]) {
    let at = body.len().saturating_sub(LEN);
    let (covered, slot) = body.split_at_mut(at);
    if let (Some(icrc), true) = (of_parts(headers, covered), slot.len() == LEN) {
        slot.copy_from_slice(&icrc);
    }
}

/// Whether the last [`LEN`] bytes of `pkt`, a RoCEv2 packet from its IP
/// header on, are its ICRC.
pub(super) fn checks(pkt: &[u8]) -> bool {
    let at = pkt.len().saturating_sub(LEN);
    of(pkt).is_some_and(|icrc| pkt.get(at..) == Some(&icrc[..]))
}
