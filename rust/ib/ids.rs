// SPDX-License-Identifier: GPL-2.0

//! The numbers by which consumers name QPs and memory regions: a QP number
//! (`qp_num`, `dest_qp_num`, `remote_qpn`, `src_qp`) and a memory key
//! (`lkey`, `rkey`). Any value may come from a consumer; only the driver
//! knows which name one of its objects. And the identities of protection
//! domains and memory regions, which the `ib` layer alone makes.

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

/// Names a memory region (the `ib_mr` a work request names).
///
/// Only an identity, never dereferenced, made only by the `ib` layer: of a
/// new MR, which the driver keeps with it, and of the MR a REG_MR names,
/// live when it is posted. The one that can be compared stale is the
/// latter: a REG_MR waits in its send queue, and a kernel consumer that
/// deregisters its MR before it runs breaks the verbs contract. A new MR
/// may then have the same address; if it is also a fast-registration MR
/// of the QP's PD in the same table slot, the REG_MR registers it instead.
/// That is the consumer's own MR, in its own PD, mapping its own pages, so
/// the mistake stays the consumer's; memory safety never rests on this
/// identity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct MrId(usize);

impl MrId {
    pub(super) fn new(mr: *const bindings::ib_mr) -> Self {
        Self(mr as usize)
    }
}
