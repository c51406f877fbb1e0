// SPDX-License-Identifier: GPL-2.0

//! The Global Route Header a UD receive finds in the first 40 bytes of its
//! buffer when the sender's address handle asked for one.

use crate::ib::{Gid, Grh};

/// Bytes a UD receive buffer reserves for the GRH, present or not.
pub(crate) const GRH_LEN: u32 = 40;

/// IPVer 6, as in an IPv6 header whose layout the GRH shares.
const IP_VERSION: u32 = 6;
/// Next Header for an IBA transport header.
const NEXT_HEADER_IBA: u8 = 0x1b;

/// The GRH of a packet carrying `payload` bytes from `sgid` along `route`.
pub(crate) fn header(sgid: Gid, route: &Grh, payload: u32) -> [u8; GRH_LEN as usize] {
    let mut h = [0u8; GRH_LEN as usize];
    let vtf =
        (IP_VERSION << 28) | (u32::from(route.traffic_class) << 20) | (route.flow_label & 0xf_ffff);
    h[0..4].copy_from_slice(&vtf.to_be_bytes());
    // Payload length is 16 bits on the wire; a UD payload is at most an MTU.
    h[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
    h[6] = NEXT_HEADER_IBA;
    h[7] = route.hop_limit;
    h[8..24].copy_from_slice(&sgid.0);
    h[24..40].copy_from_slice(&route.dgid.0);
    h
}
