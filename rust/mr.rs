// SPDX-License-Identifier: GPL-2.0

//! Memory regions: what the data path needs to check and copy.

use crate::ib::{Access, Memory, PdId, Remote, Sge};
use kernel::prelude::*;

/// A registered memory region, owned by the device's MR table.
pub(crate) struct MrEntry {
    /// lkey = rkey; set when the MR enters the table.
    pub(crate) key: u32,
    pub(crate) pd: PdId,
    /// The address the region starts at in the consumer's view.
    pub(crate) iova: u64,
    pub(crate) access: Access,
    pub(crate) mem: Memory,
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

/// Walks the bytes an SGE list names, a contiguous piece at a time.
struct Cursor<'s> {
    sges: core::slice::Iter<'s, SgeCopy>,
    cur: Option<SgeCopy>,
    /// Bytes of `cur` already walked.
    done: u32,
}

impl<'s> Cursor<'s> {
    fn new(sges: &'s [SgeCopy]) -> Self {
        let mut c = Self {
            sges: sges.iter(),
            cur: None,
            done: 0,
        };
        c.cur = c.next_sge();
        c
    }

    fn next_sge(&mut self) -> Option<SgeCopy> {
        self.sges.find(|s| s.length > 0).copied()
    }

    /// The next piece, at most `max` bytes: its SGE, the offset in that
    /// SGE and the length.
    fn take(&mut self, max: u32) -> Option<(SgeCopy, u32, u32)> {
        let cur = self.cur?;
        let (offset, len) = (self.done, (cur.length - self.done).min(max));
        self.done += len;
        if self.done == cur.length {
            self.cur = self.next_sge();
            self.done = 0;
        }
        Some((cur, offset, len))
    }

    /// Steps over `len` bytes.
    fn skip(&mut self, mut len: u32) -> Result {
        while len > 0 {
            len -= self.take(len).ok_or(EINVAL)?.2;
        }
        Ok(())
    }
}

/// The region an SGE names and the offset in it of the SGE's byte `at`.
fn locate<'a>(
    lookup: &impl Fn(u32) -> Option<&'a MrEntry>,
    sge: SgeCopy,
    at: u32,
) -> Result<(&'a MrEntry, u64)> {
    let mr = lookup(sge.lkey).ok_or(EINVAL)?;
    let off = mr.offset_of(sge.addr, sge.length.into()).ok_or(EINVAL)?;
    Ok((mr, off + u64::from(at)))
}

/// Copies the bytes the `src` SGEs name into the buffers the `dst` SGEs
/// name from their byte `skip` on, in order. Both lists were checked with
/// [`check_sges`] and `dst` holds at least `skip` more bytes than `src`.
pub(crate) fn copy_sges<'a>(
    lookup: impl Fn(u32) -> Option<&'a MrEntry>,
    dst: &[SgeCopy],
    skip: u32,
    src: &[SgeCopy],
) -> Result {
    let mut dst = Cursor::new(dst);
    dst.skip(skip)?;
    let mut src = Cursor::new(src);
    while let Some((s, s_at, len)) = src.take(u32::MAX) {
        let (smr, soff) = locate(&lookup, s, s_at)?;
        let mut moved = 0;
        while moved < len {
            let (d, d_at, n) = dst.take(len - moved).ok_or(EINVAL)?;
            let (dmr, doff) = locate(&lookup, d, d_at)?;
            Memory::copy(&dmr.mem, doff, &smr.mem, soff + u64::from(moved), n.into())?;
            moved += n;
        }
    }
    Ok(())
}

/// Writes `bytes` at the start of the buffers the (checked) `dst` SGEs name.
pub(crate) fn write_sges<'a>(
    lookup: impl Fn(u32) -> Option<&'a MrEntry>,
    dst: &[SgeCopy],
    bytes: &[u8],
) -> Result {
    let mut dst = Cursor::new(dst);
    let mut done = 0;
    while done < bytes.len() {
        let left = u32::try_from(bytes.len() - done)?;
        let (d, d_at, n) = dst.take(left).ok_or(EINVAL)?;
        let (dmr, doff) = locate(&lookup, d, d_at)?;
        dmr.mem.write(doff, &bytes[done..done + n as usize])?;
        done += n as usize;
    }
    Ok(())
}

/// Performs an atomic on the 8 bytes at `remote` and scatters the original
/// value over the local SGEs (8 bytes in all, in however many pieces). All
/// were checked by the caller.
pub(crate) fn atomic<'a>(
    lookup: impl Fn(u32) -> Option<&'a MrEntry>,
    local: &[SgeCopy],
    remote: Remote,
    operand: u64,
    swap: Option<u64>,
) -> Result {
    let rmr = lookup(remote.rkey).ok_or(EINVAL)?;
    let roff = rmr.offset_of(remote.addr, 8).ok_or(EINVAL)?;
    let old = rmr.mem.atomic(roff, operand, swap)?;
    write_sges(lookup, local, &old.to_ne_bytes())
}
