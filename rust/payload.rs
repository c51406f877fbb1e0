// SPDX-License-Identifier: GPL-2.0

//! What a send request carries: the bytes its SGEs name in registered
//! memory, or the inline data copied into its WQE when it was posted.

use crate::{
    copy::{check_sges, copy_sges, read_sges, write_sges, BadSge, Pace},
    mr::Mrs,
    wq::Sges,
};
use kernel::prelude::*;

/// The data of a send request as its executor sees it, in its runner's
/// scratch buffers.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    Sges(Sges<'a>),
    Inline(&'a [u8]),
}

impl<'a> Payload<'a> {
    /// The request's local SGEs: where a READ or an atomic puts its
    /// result. Inline requests have none (only sends and writes are).
    pub(crate) fn sges(&self) -> Option<Sges<'a>> {
        match *self {
            Self::Sges(sges) => Some(sges),
            Self::Inline(_) => None,
        }
    }

    /// The bytes it moves.
    pub(crate) fn len(&self) -> u64 {
        match *self {
            Self::Sges(sges) => sges.list.iter().map(|s| u64::from(s.length)).sum(),
            Self::Inline(data) => data.len() as u64,
        }
    }

    /// Checks the local SGEs as [`check_sges`] does and returns the
    /// length; inline data names no memory and passes.
    pub(crate) fn check(&self, mrs: &Mrs) -> Result<u64, BadSge> {
        match *self {
            Self::Sges(sges) => check_sges(mrs, sges),
            Self::Inline(data) => Ok(data.len() as u64),
        }
    }

    /// Copies the payload into the buffers the (checked) `dst` SGEs name,
    /// from their byte `skip` on.
    pub(crate) fn copy_to(&self, mrs: &Mrs, dst: Sges<'_>, skip: u32, pace: &Pace<'_>) -> Result {
        match *self {
            Self::Sges(sges) => copy_sges(mrs, dst, skip, sges, pace),
            Self::Inline(data) => write_sges(mrs, dst, skip, data),
        }
    }

    /// Reads the (checked) payload from its byte `skip` on into `out`,
    /// which it fills: one packet's share of it.
    pub(crate) fn read_at(&self, mrs: &Mrs, skip: u32, out: &mut [u8]) -> Result {
        match *self {
            Self::Sges(sges) => read_sges(mrs, sges, skip, out),
            Self::Inline(data) => {
                let from = usize::try_from(skip)?;
                let bytes = data.get(from..from + out.len()).ok_or(EINVAL)?;
                out.copy_from_slice(bytes);
                Ok(())
            }
        }
    }
}
