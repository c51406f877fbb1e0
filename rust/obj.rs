// SPDX-License-Identifier: GPL-2.0

//! The objects the engine runs on, one file each: completion queues, queue
//! pairs with their work queues and their runner's scratch, shared receive
//! queues and memory regions. Their verbs are in [`crate::verbs`]; what
//! moves data between them is [`crate::transport`].

pub(crate) mod atomics;
pub(crate) mod cq;
pub(crate) mod inbound;
pub(crate) mod mr;
pub(crate) mod qp;
pub(crate) mod reply;
pub(crate) mod scratch;
pub(crate) mod srq;
pub(crate) mod wq;
