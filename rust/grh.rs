// SPDX-License-Identifier: GPL-2.0

//! The network header a UD receive finds in the first 40 bytes of its
//! buffer: a Global Route Header on InfiniBand and RoCE v1, an IPv4 or IPv6
//! header on RoCE v2, as a RoCE adapter leaves them there. Consumers read
//! the sender's address back from it (`ibv_init_ah_from_wc`,
//! `ib_init_ah_attr_from_wc`), and they check an IPv4 header's checksum.

use crate::ib::{Gid, GidType, Grh, RecvGrh};

/// Bytes a UD receive buffer reserves for the header, present or not.
pub(crate) const GRH_LEN: u32 = 40;

/// Next Header for an IBA transport header.
const NEXT_HEADER_IBA: u8 = 0x1b;
/// IP protocol number of UDP, which carries RoCE v2.
const IPPROTO_UDP: u8 = 17;
/// UDP, BTH, DETH and ICRC: what a RoCE v2 datagram adds to its payload
/// after the IP header.
const ROCE_V2_OVERHEAD: u32 = 8 + 12 + 8 + 4;
/// An IPv4 header without options.
const IPV4_LEN: usize = 20;

/// What a datagram along `route` carries on a RoCE port.
pub(crate) fn roce_kind(route: &Grh) -> RecvGrh {
    match route.sgid_type {
        GidType::Ib => RecvGrh::RoceV1,
        GidType::RoceV2 if route.dgid.ipv4().is_some() => RecvGrh::Ipv4,
        GidType::RoceV2 => RecvGrh::Ipv6,
    }
}

/// The header of a datagram of `kind` carrying `payload` bytes from `sgid`
/// along `route`.
pub(crate) fn header(
    kind: RecvGrh,
    sgid: Gid,
    route: &Grh,
    payload: u32,
) -> [u8; GRH_LEN as usize] {
    let mut h = [0u8; GRH_LEN as usize];
    match kind {
        RecvGrh::Ipv4 => ipv4(&mut h[GRH_LEN as usize - IPV4_LEN..], sgid, route, payload),
        RecvGrh::Ipv6 => ipv6(&mut h, sgid, route, payload + ROCE_V2_OVERHEAD, IPPROTO_UDP),
        // The GRH's payload length counts the payload alone here; nothing
        // reads more of it.
        RecvGrh::Absent | RecvGrh::Ib | RecvGrh::RoceV1 => {
            ipv6(&mut h, sgid, route, payload, NEXT_HEADER_IBA)
        }
    }
    h
}

/// A GRH, or the IPv6 header whose layout it shares.
fn ipv6(h: &mut [u8], sgid: Gid, route: &Grh, len: u32, next: u8) {
    let vtf = (6 << 28) | (u32::from(route.traffic_class) << 20) | (route.flow_label & 0xf_ffff);
    h[0..4].copy_from_slice(&vtf.to_be_bytes());
    // 16 bits on the wire; a datagram is at most an MTU.
    h[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    h[6] = next;
    h[7] = route.hop_limit;
    h[8..24].copy_from_slice(&sgid.0);
    h[24..40].copy_from_slice(&route.dgid.0);
}

/// An IPv4 header (20 bytes, no options) with its checksum.
fn ipv4(h: &mut [u8], sgid: Gid, route: &Grh, payload: u32) {
    let total = IPV4_LEN as u32 + ROCE_V2_OVERHEAD + payload;
    h[0] = 0x45;
    h[1] = route.traffic_class;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    // Don't fragment.
    h[6] = 0x40;
    h[8] = route.hop_limit;
    h[9] = IPPROTO_UDP;
    h[12..16].copy_from_slice(&sgid.ipv4().unwrap_or_default());
    h[16..20].copy_from_slice(&route.dgid.ipv4().unwrap_or_default());
    let sum = h[..IPV4_LEN]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let folded = (sum & 0xffff) + (sum >> 16);
    let folded = (folded & 0xffff) + (folded >> 16);
    h[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
}
