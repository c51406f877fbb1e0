// SPDX-License-Identifier: GPL-2.0

//! What a send request carries: the bytes its SGEs name in registered
//! memory, or the inline data copied into its WQE when it was posted.

use crate::{
    copy::{check_sges, copy_sges, write_sges, BadSge, Pace, SgeCopy, SgeList},
    ib::{Access, PdId},
    limits,
    mr::Mrs,
};
use kernel::prelude::*;

/// Inline data, copied out of its work queue with the WQE.
#[derive(Clone, Copy)]
pub(crate) struct InlineData {
    bytes: [u8; limits::MAX_INLINE_DATA as usize],
    len: usize,
}

impl InlineData {
    fn new(from: &[u8]) -> Self {
        let mut data = Self {
            bytes: [0; limits::MAX_INLINE_DATA as usize],
            len: from.len().min(limits::MAX_INLINE_DATA as usize),
        };
        data.bytes[..data.len].copy_from_slice(&from[..data.len]);
        data
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The data of a send request as its executor sees it.
pub(crate) enum Payload {
    Sges(SgeList),
    Inline(InlineData),
}

impl Payload {
    /// The payload of a queued WQE: its inline data if it has any, else
    /// its SGEs.
    pub(crate) fn new(sges: &[SgeCopy], inline: Option<&[u8]>) -> Self {
        match inline {
            Some(bytes) => Self::Inline(InlineData::new(bytes)),
            None => Self::Sges(SgeList::new(sges)),
        }
    }

    /// The request's local SGEs: where a READ or an atomic puts its
    /// result. Inline requests have none (only sends and writes are).
    pub(crate) fn sges(&self) -> &[SgeCopy] {
        match self {
            Self::Sges(list) => list.as_slice(),
            Self::Inline(_) => &[],
        }
    }

    /// The bytes it moves.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Self::Sges(list) => list.as_slice().iter().map(|s| u64::from(s.length)).sum(),
            Self::Inline(data) => data.len as u64,
        }
    }

    /// Checks the local SGEs as [`check_sges`] does and returns the
    /// length; inline data names no memory and passes.
    pub(crate) fn check(&self, mrs: &Mrs, pd: PdId, need: Access) -> Result<u64, BadSge> {
        match self {
            Self::Sges(list) => check_sges(mrs, pd, need, list.as_slice()),
            Self::Inline(data) => Ok(data.len as u64),
        }
    }

    /// Copies the payload into the buffers the (checked) `dst` SGEs name,
    /// from their byte `skip` on.
    pub(crate) fn copy_to(&self, mrs: &Mrs, dst: &[SgeCopy], skip: u32, pace: &Pace<'_>) -> Result {
        match self {
            Self::Sges(list) => copy_sges(mrs, dst, skip, list.as_slice(), pace),
            Self::Inline(data) => write_sges(mrs, dst, skip, data.as_slice()),
        }
    }
}
