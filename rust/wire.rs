// SPDX-License-Identifier: GPL-2.0

//! The wires that carry the transport's requests ([`crate::transport::Wire`]).
//! Nothing above that trait knows which wire carried a packet. One so far:
//! [`Local`], the direct call into a QP of an rsoft port of this host.

mod local;

pub(crate) use local::Local;
