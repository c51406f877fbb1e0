// SPDX-License-Identifier: GPL-2.0

//! The wires that carry the transport's requests ([`crate::transport::Wire`]).
//! Nothing above that trait knows which wire carried a packet. [`Local`],
//! the direct call into a QP of an rsoft port of this host, takes every
//! request first; what no port of this host answers goes on to [`Roce`],
//! the RoCEv2 wire to other hosts, whose packets from other hosts
//! [`receive`] takes.

mod answer;
mod bth;
mod frame;
mod icrc;
mod local;
mod receive;
mod roce;

pub(crate) use answer::send_answers;
pub(crate) use local::Local;
pub(crate) use roce::Roce;
