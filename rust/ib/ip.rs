// SPDX-License-Identifier: GPL-2.0

//! IP packets sent out of a netdev: the skb is routed and allocated here,
//! the driver writes every byte from the IP header on, and the kernel's IP
//! output (netfilter, neighbour resolution, the qdisc) takes it from there.
//! The same routing says whether an address is this host's.

use super::{attr::Gid, bindings, netdev::NetDev};
use core::ptr::NonNull;
use kernel::prelude::*;

/// Whether `netdev`'s namespace routes a packet from `src` to `dst`,
/// bound to `netdev` as the core resolves a destination's MAC, to this
/// host rather than out of a netdev; `None` without a route (or, for
/// IPv6, with interrupts off).
pub(crate) fn routes_home(netdev: &NetDev, src: &Gid, dst: &Gid) -> Option<bool> {
    // SAFETY: `netdev` is valid for the call; the shim reads the 16 bytes
    // of each GID.
    let home =
        unsafe { bindings::rsoft_route_home(netdev.as_ptr(), src.0.as_ptr(), dst.0.as_ptr()) };
    (home >= 0).then_some(home > 0)
}

/// An IPv4 or IPv6 packet being filled, freed unsent if dropped.
///
/// # Invariants
///
/// `skb` is an skb this owns, routed, with `len` bytes at `data` from its
/// network header on.
pub(crate) struct IpPacket {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
}

// SAFETY: an skb that nobody else references may be filled, sent or freed
// from any thread.
unsafe impl Send for IpPacket {}

impl IpPacket {
    /// A packet of `len` bytes (IP header included) from `src` to `dst`,
    /// routed out of `netdev` in its namespace: IPv4 when both GIDs are
    /// IPv4-mapped, else IPv6. `None` without a route or memory.
    pub(crate) fn new(netdev: &NetDev, src: &Gid, dst: &Gid, len: usize) -> Option<Self> {
        let mut data = core::ptr::null_mut();
        let size = u32::try_from(len).ok()?;
        let skb = match (src.ipv4(), dst.ipv4()) {
            // SAFETY: `netdev` is valid for the call; the addresses are in
            // network byte order, as their bytes are.
            (Some(s), Some(d)) => unsafe {
                bindings::rsoft_ip4_skb(
                    netdev.as_ptr(),
                    u32::from_ne_bytes(s),
                    u32::from_ne_bytes(d),
                    size,
                    &mut data,
                )
            },
            // SAFETY: as above; the shim copies the 16 bytes of each GID.
            (None, None) => unsafe {
                bindings::rsoft_ip6_skb(
                    netdev.as_ptr(),
                    src.0.as_ptr(),
                    dst.0.as_ptr(),
                    size,
                    &mut data,
                )
            },
            _ => return None,
        };
        let skb = NonNull::new(skb)?;
        match NonNull::new(data) {
            Some(data) => Some(Self { skb, data, len }),
            None => {
                // SAFETY: the skb is ours, and nobody else has seen it.
                unsafe { bindings::rsoft_skb_free(skb.as_ptr()) };
                None
            }
        }
    }

    /// The packet's bytes, from the IP header on.
    pub(crate) fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: by the type invariant; `&mut self` makes the borrow unique.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Sends the packet; with interrupts off (a MAD is posted under an
    /// irqsave lock) it is queued for a work item instead.
    pub(crate) fn send(self) -> Result {
        let skb = self.skb.as_ptr();
        core::mem::forget(self);
        // SAFETY: the skb is ours (type invariant), and the call consumes it.
        kernel::error::to_result(unsafe { bindings::rsoft_ip4_send(skb) })
    }

    /// Sends the packet as a train: its UDP payload is packets of `seg`
    /// bytes each but a shorter last one, which the stack (or the NIC)
    /// cuts apart, each with the IP and UDP headers of the train fitted
    /// to its length (and, for IPv4, the train's IP ID plus its index).
    pub(crate) fn send_train(self, seg: u32) -> Result {
        // SAFETY: the skb is ours, routed, with its headers in place; the
        // shim leaves it as it is where `seg` makes one packet or none.
        unsafe { bindings::rsoft_udp_train(self.skb.as_ptr(), seg) };
        self.send()
    }
}

impl Drop for IpPacket {
    fn drop(&mut self) {
        // SAFETY: the skb is ours and unsent (`send` forgets `self`).
        unsafe { bindings::rsoft_skb_free(self.skb.as_ptr()) };
    }
}

/// Packets sent with interrupts off wait for a work item of the module
/// (see [`IpPacket::send`]). The module holds one of these, dropped after
/// its last device: dropping it sends what waits and waits for the work
/// item, which then runs no more.
pub(crate) struct DeferredSends(());

impl DeferredSends {
    pub(crate) fn new() -> Self {
        Self(())
    }
}

impl Drop for DeferredSends {
    fn drop(&mut self) {
        // SAFETY: dropped in process context, as every module part is.
        unsafe { bindings::rsoft_ip4_flush() };
    }
}
