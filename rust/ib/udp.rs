// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 reception: one UDP socket on port 4791 in each network namespace
//! where a RoCE link listens, whose packets go to the driver in softirq.

use super::{
    bindings,
    netdev::{NetDev, NetDevRef},
};
use core::ffi::c_void;
use kernel::{error::to_result, prelude::*, sync::Arc};

/// What takes the packets that reach port 4791.
pub(crate) trait Receive: Send + Sync {
    /// `packet`, from its IP header on, came in on `netdev`. Called in
    /// softirq, for any netdev of a namespace where a [`Listener`] is.
    fn receive(&self, netdev: &NetDev, packet: &[u8]);
}

/// `R` takes the packets of every [`Listener`] while this lives; dropping
/// it closes every socket and waits until no packet is being handed over.
pub(crate) struct Listening<R: Receive> {
    /// The handler's context: kept, not read.
    _receiver: Arc<R>,
}

impl<R: Receive> Listening<R> {
    pub(crate) fn new(receiver: Arc<R>) -> Result<Self> {
        let ctx: *const R = &*receiver;
        // SAFETY: `handler::<R>` takes the context given here, which the
        // `Arc` kept in `self` keeps alive until the unregistration in
        // `drop`, after which the handler runs no more.
        to_result(unsafe {
            bindings::rsoft_udp_register(Some(handler::<R>), ctx.cast_mut().cast())
        })?;
        Ok(Self {
            _receiver: receiver,
        })
    }
}

impl<R: Receive> Drop for Listening<R> {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; returns once no handler runs. The
        // receiver goes after this, with the fields.
        unsafe { bindings::rsoft_udp_unregister() };
    }
}

/// # Safety
///
/// Only the C shim calls this, with the context of a live [`Listening`]
/// of `R`, a netdev and `len` bytes that live for the call.
unsafe extern "C" fn handler<R: Receive>(
    ctx: *mut c_void,
    ndev: *mut bindings::net_device,
    pkt: *const u8,
    len: usize,
) {
    // SAFETY: per the function's contract.
    let (receiver, netdev, packet) = unsafe {
        (
            &*ctx.cast::<R>(),
            NetDev::from_raw(ndev),
            core::slice::from_raw_parts(pkt, len),
        )
    };
    receiver.receive(netdev, packet);
}

/// A RoCE link listening on port 4791 of its netdev's namespace (with the
/// other links there), until dropped.
pub(crate) struct Listener(NetDevRef);

impl Listener {
    /// Fails while no [`Listening`] lives, and with `EADDRINUSE` where
    /// another listener has the port (6.12's rxe has it in `init_net`).
    pub(crate) fn open(netdev: &NetDevRef) -> Result<Self> {
        // SAFETY: `netdev` is held; the shim counts the namespace's users.
        to_result(unsafe { bindings::rsoft_udp_open(netdev.as_ptr()) })?;
        Ok(Self(netdev.clone()))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // SAFETY: opened in `open` on this netdev, which is held: it is
        // still in that namespace's device list, so the namespace has not
        // gone (it unregisters its netdevs, which waits for this
        // reference, before it goes).
        unsafe { bindings::rsoft_udp_close(self.0.as_ptr()) };
    }
}
