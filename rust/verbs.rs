// SPDX-License-Identifier: GPL-2.0

//! rsoft's verbs on each kind of object, one file each; the device's own
//! verbs are in [`crate::device`].

mod cq;
mod mr;
mod qp;
mod srq;
