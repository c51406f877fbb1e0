// SPDX-License-Identifier: GPL-2.0

//! Fast registration: what REG_MR and LOCAL_INV come to when their QP
//! executes them, in order with its other work requests.

use crate::{
    ib::{LocalOp, PdId, WcStatus},
    mr::{MrKey, Mrs},
};

/// Executes `op` for a QP of `pd`; returns the status of its completion.
/// A REG_MR of an MR that is valid, of another PD or under a key of
/// another MR, or an invalidation of a key that names no fast-registration
/// MR of `pd`, fails as rxe's do (`LOC_QP_OP_ERR`).
pub(crate) fn execute(mrs: &Mrs, pd: PdId, op: &LocalOp) -> WcStatus {
    let done = match op {
        LocalOp::RegMr(reg) => mrs.register_fast(pd, reg),
        // What it mapped is dropped here, outside the table's lock.
        LocalOp::Invalidate(key) => mrs.invalidate(pd, MrKey::of(*key)).map(drop),
    };
    match done {
        Ok(()) => WcStatus::Success,
        Err(_) => WcStatus::LocalQpOperation,
    }
}
