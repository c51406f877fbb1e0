// SPDX-License-Identifier: GPL-2.0

//! Memory regions: what the data path needs to check and copy.

use crate::ib::{Access, PdId, Remote, Sge, UserMemory};
use kernel::prelude::*;

/// A registered memory region, owned by the device's MR table.
pub(crate) struct MrEntry {
    /// lkey = rkey; set when the MR enters the table.
    pub(crate) key: u32,
    pub(crate) pd: PdId,
    /// The address the region starts at in the consumer's view.
    pub(crate) iova: u64,
    pub(crate) access: Access,
    pub(crate) mem: UserMemory,
}

impl MrEntry {
    /// The offset of `[addr, addr + len)` in the region, if it lies within.
    pub(crate) fn offset_of(&self, addr: u64, len: u64) -> Option<u64> {
        let off = addr.checked_sub(self.iova)?;
        let end = off.checked_add(len)?;
        (end <= self.mem.len()).then_some(off)
    }
}

/// Why an SGE cannot be used.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadSge;

/// Resolves the SGEs of one WR against the MR table: all must name an MR of
/// `pd` with `need` rights, and lie within it.
pub(crate) fn check_sges<'a>(
    lookup: impl Fn(u32) -> Option<&'a MrEntry>,
    pd: PdId,
    need: Access,
    sges: &[SgeCopy],
) -> Result<u64, BadSge> {
    let mut total = 0u64;
    for sge in sges.iter().filter(|s| s.length > 0) {
        let mr = lookup(sge.lkey).ok_or(BadSge)?;
        if mr.pd != pd || !mr.access.contains(need) {
            return Err(BadSge);
        }
        mr.offset_of(sge.addr, sge.length.into()).ok_or(BadSge)?;
        total += u64::from(sge.length);
    }
    Ok(total)
}

/// An SGE as queued in a work queue.
#[derive(Clone, Copy, Default)]
pub(crate) struct SgeCopy {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

impl From<&Sge> for SgeCopy {
    fn from(s: &Sge) -> Self {
        Self {
            addr: s.addr(),
            length: s.length(),
            lkey: s.lkey(),
        }
    }
}

/// Copies the bytes the `src` SGEs name into the buffers the `dst` SGEs
/// name, in order. Both lists were checked with [`check_sges`] and `dst`
/// holds at least as many bytes as `src`.
pub(crate) fn copy_sges<'a>(
    lookup: impl Fn(u32) -> Option<&'a MrEntry>,
    dst: &[SgeCopy],
    src: &[SgeCopy],
) -> Result {
    let mut dst = dst.iter().filter(|s| s.length > 0);
    let mut d = dst.next().copied();
    let mut d_done = 0u32;
    for s in src.iter().filter(|s| s.length > 0) {
        let smr = lookup(s.lkey).ok_or(EINVAL)?;
        let mut s_done = 0u32;
        while s_done < s.length {
            let cur = d.ok_or(EINVAL)?;
            let dmr = lookup(cur.lkey).ok_or(EINVAL)?;
            let chunk = (s.length - s_done).min(cur.length - d_done);
            let soff = smr.offset_of(s.addr, s.length.into()).ok_or(EINVAL)? + u64::from(s_done);
            let doff =
                dmr.offset_of(cur.addr, cur.length.into()).ok_or(EINVAL)? + u64::from(d_done);
            UserMemory::copy(&dmr.mem, doff, &smr.mem, soff, chunk.into())?;
            s_done += chunk;
            d_done += chunk;
            if d_done == cur.length {
                d = dst.next().copied();
                d_done = 0;
            }
        }
    }
    Ok(())
}

/// Performs an atomic on the 8 bytes at `remote` and stores the original
/// value in the one non-empty local SGE. All were checked by the caller.
pub(crate) fn atomic<'a>(
    lookup: impl Fn(u32) -> Option<&'a MrEntry>,
    local: &[SgeCopy],
    remote: Remote,
    operand: u64,
    swap: Option<u64>,
) -> Result {
    let rmr = lookup(remote.rkey).ok_or(EINVAL)?;
    let roff = rmr.offset_of(remote.addr, 8).ok_or(EINVAL)?;
    let sge = local.iter().find(|s| s.length > 0).ok_or(EINVAL)?;
    let lmr = lookup(sge.lkey).ok_or(EINVAL)?;
    let loff = lmr.offset_of(sge.addr, 8).ok_or(EINVAL)?;
    let old = rmr.mem.atomic(roff, operand, swap)?;
    lmr.mem.write(loff, &old.to_ne_bytes())
}
