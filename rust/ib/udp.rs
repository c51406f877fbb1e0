// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 reception: one UDP socket on port 4791 in each network namespace
//! where a RoCE link listens, whose packets go to the driver in softirq.

use super::{
    bindings,
    netdev::{NetDev, NetDevRef},
};
use core::{ffi::c_void, ptr::NonNull};
use kernel::{
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::Arc,
};

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

/// A RoCE link taking the RoCEv2 packets that reach it, until dropped: on
/// port 4791 of its netdev's namespace, with the other links there, or,
/// where another listener has that port, off its netdev beside the IP
/// stack (a tap).
pub(crate) struct Listener {
    /// Held until the socket's user count or the tap is let go.
    netdev: NetDevRef,
    /// The packet handlers of `rsoft_tap_open()`, if tapped.
    tap: Option<NonNull<bindings::rsoft_tap>>,
}

// SAFETY: nothing is reached through the tap's pointer but
// `rsoft_tap_close()`, once, from `drop`, which any context that may sleep
// may call.
unsafe impl Send for Listener {}
// SAFETY: `&Listener` gives no access to the tap's pointer.
unsafe impl Sync for Listener {}

impl Listener {
    /// Fails while no [`Listening`] lives. Where another listener has the
    /// port (6.12's rxe has it in `init_net`), takes the netdev's own
    /// packets off it instead.
    pub(crate) fn open(netdev: &NetDevRef) -> Result<Self> {
        // SAFETY: `netdev` is held; the shim counts the namespace's users.
        let tap = match to_result(unsafe { bindings::rsoft_udp_open(netdev.as_ptr()) }) {
            Ok(()) => None,
            // (The kernel crate of 6.12 does not name `EADDRINUSE`.)
            Err(e) if e.to_errno() == -(kernel::bindings::EADDRINUSE as i32) => {
                // SAFETY: `netdev` is held, by `self` too until `drop` has
                // closed the tap.
                let tap = from_err_ptr(unsafe { bindings::rsoft_tap_open(netdev.as_ptr()) })?;
                Some(NonNull::new(tap).ok_or(ENOMEM)?)
            }
            Err(e) => return Err(e),
        };
        Ok(Self {
            netdev: netdev.clone(),
            tap,
        })
    }

    /// Whether the link takes its packets off its netdev.
    pub(crate) fn is_tap(&self) -> bool {
        self.tap.is_some()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        match self.tap {
            // SAFETY: opened by `rsoft_tap_open()` in `open` and closed
            // only here; its netdev is held by `self.netdev`, which goes
            // after this.
            Some(tap) => unsafe { bindings::rsoft_tap_close(tap.as_ptr()) },
            // SAFETY: opened in `open` on this netdev, which is held: it is
            // still in that namespace's device list, so the namespace has
            // not gone (it unregisters its netdevs, which waits for this
            // reference, before it goes).
            None => unsafe { bindings::rsoft_udp_close(self.netdev.as_ptr()) },
        }
    }
}
