// SPDX-License-Identifier: GPL-2.0

//! The kernel's CRC-32 (IEEE 802.3, bit-reflected, `<linux/crc32.h>`):
//! the best code it has for the CPU, which the RoCEv2 ICRC runs over every
//! byte of every packet, sent and received.

use super::bindings;

/// `crc` carried on over `bytes`, neither inverted before nor after.
pub(crate) fn crc32_le(crc: u32, bytes: &[u8]) -> u32 {
    // SAFETY: `bytes` is valid for reads of `bytes.len()` bytes during
    // the call, which keeps no pointer to it.
    unsafe { bindings::rsoft_crc32_le(crc, bytes.as_ptr(), bytes.len()) }
}
