// SPDX-License-Identifier: GPL-2.0

//! A small safe layer over the kernel's RDMA core (`<rdma/ib_verbs.h>`).
//!
//! Everything that touches the C API lives here: the generated bindings are
//! private to this module, and the driver sees only the [`Verbs`] trait, the
//! [`Registration`] of a device and plain attribute types. Objects the core
//! allocates (`ib_ucontext`, `ib_pd`, ...) carry the driver's data right after
//! the core's struct; see [`object`].

mod attr;
mod bindings;
mod device;
mod layout;
mod object;
mod verbs;

pub(crate) use attr::{DeviceAttr, Gid, Mtu, PhysState, PortAttr, PortState};
pub(crate) use device::{DeviceConfig, Registration};
pub(crate) use verbs::Verbs;
