// SPDX-License-Identifier: GPL-2.0

//! Moving bytes between the buffers SGE lists name: checking the lists
//! against the MR table, then copying a bounded chunk at a time with no
//! lock held, each piece through a reference to its MR.

use crate::{
    ib::{self, Memory},
    mr::{Grant, MrUse, Mrs},
    wq::{SgeCopy, Sges},
};
use kernel::prelude::*;

/// The most bytes copied between two checks for rescheduling and for the
/// QP being destroyed: what bounds the time a CPU spends without a chance
/// to run something else.
const CHUNK: u32 = 64 * 1024;

/// Why an SGE cannot be used.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadSge;

/// Checks the SGEs of one WR against the MR table: all must name an MR
/// their grant admits, and lie within it. Returns their total length.
pub(crate) fn check_sges(mrs: &Mrs, sges: Sges<'_>) -> Result<u64, BadSge> {
    let mut total = 0u64;
    for sge in sges.list.iter().filter(|s| s.length > 0) {
        let fits = mrs.passes(sge.lkey, |mr| {
            sges.grant.admits(mr) && mr.offset_of(sge.addr, sge.length.into()).is_some()
        });
        if !fits {
            return Err(BadSge);
        }
        total += u64::from(sge.length);
    }
    Ok(total)
}

/// How a long copy, or a request's run of packets, behaves between chunks.
pub(crate) struct Pace<'a> {
    /// The context may sleep: reschedule between chunks.
    pub(crate) may_sleep: bool,
    /// Stop (fail the copy) when this says so: the QP is being destroyed.
    pub(crate) stop: &'a dyn Fn() -> bool,
    /// Send no more of a request's packets when this says so: the
    /// responder refused one sent before them (a NAK), and the requester
    /// goes back and sends them again after it anyway.
    pub(crate) refused: &'a dyn Fn() -> bool,
}

/// The `stop` or `refused` of a copy or a run of packets that nothing can
/// cut short: its QP cannot go meanwhile, or no answer refuses it.
pub(crate) const NEVER: &dyn Fn() -> bool = &|| false;

impl Pace<'static> {
    /// A copy of at most a packet (an MTU), under a lock or in softirq:
    /// one chunk, no sleeping, nothing to stop for.
    pub(crate) const ONE_PACKET: Self = Self {
        may_sleep: false,
        stop: NEVER,
        refused: NEVER,
    };
}

impl Pace<'_> {
    fn between_chunks(&self) -> Result {
        if self.may_sleep {
            ib::cond_resched();
        }
        if (self.stop)() {
            return Err(EINTR);
        }
        Ok(())
    }
}

/// Walks the bytes an SGE list names, a contiguous piece at a time,
/// holding the MR of the current SGE.
struct Cursor<'s> {
    mrs: &'s Mrs,
    sges: core::slice::Iter<'s, SgeCopy>,
    grant: Grant,
    /// The current SGE, its MR and its offset in the MR.
    cur: Option<(SgeCopy, MrUse, u64)>,
    /// Bytes of `cur` already walked.
    done: u32,
}

impl<'s> Cursor<'s> {
    fn new(mrs: &'s Mrs, sges: Sges<'s>) -> Self {
        Self {
            mrs,
            sges: sges.list.iter(),
            grant: sges.grant,
            cur: None,
            done: 0,
        }
    }

    /// The next piece, at most `max` bytes: the memory, the offset in it
    /// and the length. Fails if an SGE's MR has gone, shrunk, is being
    /// deregistered or is not one the grant admits.
    fn take(&mut self, max: u32) -> Result<Option<(&Memory, u64, u32)>> {
        if !matches!(&self.cur, Some((sge, _, _)) if self.done < sge.length) {
            // The previous MR is left before the next is entered.
            self.cur = None;
            let Some(&sge) = self.sges.find(|s| s.length > 0) else {
                return Ok(None);
            };
            let mr = self.mrs.enter(sge.lkey, self.grant).ok_or(EINVAL)?;
            let off = mr.entry().offset_of(sge.addr, sge.length.into());
            self.cur = Some((sge, mr, off.ok_or(EINVAL)?));
            self.done = 0;
        }
        let Some((sge, mr, off)) = &self.cur else {
            return Ok(None);
        };
        if mr.is_closing() {
            return Err(EINVAL);
        }
        let at = self.done;
        let len = (sge.length - at).min(max);
        self.done += len;
        Ok(Some((&mr.entry().mem, off + u64::from(at), len)))
    }

    /// Steps over `len` bytes.
    fn skip(&mut self, mut len: u32) -> Result {
        while len > 0 {
            len -= self.take(len)?.ok_or(EINVAL)?.2;
        }
        Ok(())
    }
}

/// Copies the bytes the `src` SGEs name into the buffers the `dst` SGEs
/// name from their byte `skip` on, in order. Both lists were checked with
/// [`check_sges`] and `dst` holds at least `skip` more bytes than `src`.
pub(crate) fn copy_sges(
    mrs: &Mrs,
    dst: Sges<'_>,
    skip: u32,
    src: Sges<'_>,
    pace: &Pace<'_>,
) -> Result {
    let mut dst = Cursor::new(mrs, dst);
    dst.skip(skip)?;
    let mut src = Cursor::new(mrs, src);
    let mut since_pause = 0;
    while let Some((smem, soff, len)) = src.take(CHUNK)? {
        let mut moved = 0;
        while moved < len {
            let (dmem, doff, n) = dst.take(len - moved)?.ok_or(EINVAL)?;
            Memory::copy(dmem, doff, smem, soff + u64::from(moved), n.into())?;
            moved += n;
        }
        since_pause += len;
        if since_pause >= CHUNK {
            since_pause = 0;
            pace.between_chunks()?;
        }
    }
    Ok(())
}

/// Writes `bytes` into the buffers the (checked) `dst` SGEs name, from
/// their byte `skip` on.
pub(crate) fn write_sges(mrs: &Mrs, dst: Sges<'_>, skip: u32, bytes: &[u8]) -> Result {
    let mut dst = Cursor::new(mrs, dst);
    dst.skip(skip)?;
    let mut done = 0;
    while done < bytes.len() {
        let left = u32::try_from(bytes.len() - done)?;
        let (dmem, doff, n) = dst.take(left)?.ok_or(EINVAL)?;
        dmem.write(doff, &bytes[done..done + n as usize])?;
        done += n as usize;
    }
    Ok(())
}

/// Reads the bytes the (checked) `src` SGEs name from their byte `skip`
/// on into `out`, which they fill.
pub(crate) fn read_sges(mrs: &Mrs, src: Sges<'_>, skip: u32, out: &mut [u8]) -> Result {
    let mut src = Cursor::new(mrs, src);
    src.skip(skip)?;
    let mut done = 0;
    while done < out.len() {
        let left = u32::try_from(out.len() - done)?;
        let (smem, soff, n) = src.take(left)?.ok_or(EINVAL)?;
        smem.read(soff, &mut out[done..done + n as usize])?;
        done += n as usize;
    }
    Ok(())
}
