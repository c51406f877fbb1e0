// SPDX-License-Identifier: GPL-2.0

//! The numbers by which consumers name QPs and memory regions: a QP number
//! (`qp_num`, `dest_qp_num`, `remote_qpn`, `src_qp`) and a memory key
//! (`lkey`, `rkey`). Any value may come from a consumer; only the driver
//! knows which name one of its objects. And the identity of a protection
//! domain, which the `ib` layer alone makes.

use super::bindings;

/// A QP number.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct QpNum(u32);

impl QpNum {
    pub(crate) const fn new(qpn: u32) -> Self {
        Self(qpn)
    }

    pub(crate) const fn get(self) -> u32 {
        self.0
    }
}

/// An lkey or rkey.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Key(u32);

impl Key {
    pub(crate) const fn new(key: u32) -> Self {
        Self(key)
    }

    pub(crate) const fn get(self) -> u32 {
        self.0
    }
}

/// Names a protection domain; objects may be used together only within one.
///
/// Only an identity, never dereferenced, made only by the `ib` layer from
/// the PD of a live QP, SRQ or MR (or a rereg's new PD). It can never be
/// compared stale: the core counts every object on its PD (`usecnt`) and
/// refuses to free a PD that one still uses, and the driver keeps a PD's
/// name only in that object's data (a QP's, an SRQ's, an MR's table
/// entry), which goes before the object does. So two names are equal
/// exactly when they name the same live PD.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct PdId(usize);

impl PdId {
    pub(super) fn new(pd: *const bindings::ib_pd) -> Self {
        Self(pd as usize)
    }
}
