// SPDX-License-Identifier: GPL-2.0

//! The limits rsoft advertises in `query_device` and enforces on create.
//!
//! Each is sized so that the allocation behind it always succeeds: the
//! largest CQ ring is a few MiB of kvmalloc, the object counts bound what a
//! buggy or hostile process can pin in the kernel.

use crate::ib::Mtu;
use kernel::prelude::*;

pub(crate) const MAX_PD: u32 = 4096;
pub(crate) const MAX_QP: u32 = 4096;
pub(crate) const MAX_QP_WR: u32 = 16384;
pub(crate) const MAX_SGE: u32 = 32;
pub(crate) const MAX_CQ: u32 = 4096;
pub(crate) const MAX_CQE: u32 = 65535;
pub(crate) const MAX_MR: u32 = 65536;
pub(crate) const MAX_MR_SIZE: u64 = 1 << 32;
pub(crate) const MAX_SRQ: u32 = 1024;
pub(crate) const MAX_SRQ_WR: u32 = 16384;
pub(crate) const MAX_AH: u32 = 4096;
/// As rxe's: perftest and rdma_cm give a responder the initiator depth
/// of its peer, which is rxe's 128 when the peer is rxe.
pub(crate) const MAX_RD_ATOM: u32 = 128;
pub(crate) const MAX_MSG_SIZE: u32 = 1 << 31;
/// The largest path MTU a port takes (`max_mtu`), whatever its link.
pub(crate) const MAX_MTU: Mtu = Mtu::Mtu4096;
/// Entries of a port's P_Key table: the default P_Key alone (there is no
/// subnet manager to hand out others).
pub(crate) const PKEY_TABLE_LEN: u16 = 1;
/// GIDs of an InfiniBand port: its link-local GID.
pub(crate) const IB_GIDS: u32 = 1;
/// Pages a fast-registration MR maps (its page list is allocated with it):
/// what NVMe over RDMA and iSER ask for fits.
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;
/// Bytes of inline data a send WR may carry (what perftest, UCX, libfabric
/// and librpma ask for fits); a QP gets what it asks for, and each WQE of
/// its send queue that much room.
pub(crate) const MAX_INLINE_DATA: u32 = 512;

/// A work queue's depth or SGE count as created: at least 1, at most `max`.
pub(crate) fn queue_size(requested: u32, max: u32) -> Result<u32> {
    if requested > max {
        return Err(EINVAL);
    }
    Ok(requested.max(1))
}
