// SPDX-License-Identifier: GPL-2.0

//! The numbers by which consumers name QPs and memory regions: a QP number
//! (`qp_num`, `dest_qp_num`, `remote_qpn`, `src_qp`) and a memory key
//! (`lkey`, `rkey`). Any value may come from a consumer; only the driver
//! knows which name one of its objects.

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
