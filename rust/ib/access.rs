// SPDX-License-Identifier: GPL-2.0

//! Access rights of memory regions and QPs (`enum ib_access_flags`).

use super::{bindings, eopnotsupp};
use kernel::prelude::*;

/// Access rights of a memory region or QP (`enum ib_access_flags`).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Access(u32);

impl Access {
    /// Every MR may be read by local work requests.
    pub(crate) const LOCAL_READ: Self = Self(0);
    pub(crate) const LOCAL_WRITE: Self = Self(bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
    pub(crate) const REMOTE_WRITE: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    pub(crate) const REMOTE_READ: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
    pub(crate) const REMOTE_ATOMIC: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);

    /// Rights rsoft implements; `HUGETLB` is only a hint.
    const SUPPORTED: u32 = Self::LOCAL_WRITE.0
        | Self::REMOTE_WRITE.0
        | Self::REMOTE_READ.0
        | Self::REMOTE_ATOMIC.0
        | bindings::ib_access_flags_IB_ACCESS_HUGETLB;

    /// Reads the flags of a request: optional bits (such as
    /// RELAXED_ORDERING) are dropped, unsupported mandatory ones refused.
    pub(crate) fn from_request(flags: u32) -> Result<Self> {
        let flags = flags & !bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
        if flags & !Self::SUPPORTED != 0 {
            return Err(eopnotsupp());
        }
        Ok(Self(flags & !bindings::ib_access_flags_IB_ACCESS_HUGETLB))
    }

    /// Every flag a QP's `qp_access_flags` may carry, as rxe takes them:
    /// the rights, memory window binding and the MR flags a QP may name
    /// (none of which a QP acts on), and the optional hints.
    pub(crate) const QP_FLAGS: Self = Self(
        Self::LOCAL_WRITE.0
            | Self::REMOTE_WRITE.0
            | Self::REMOTE_READ.0
            | Self::REMOTE_ATOMIC.0
            | bindings::ib_access_flags_IB_ACCESS_MW_BIND
            | bindings::ib_access_flags_IB_ACCESS_ON_DEMAND
            | bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL
            | bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT
            | bindings::ib_access_flags_IB_ACCESS_OPTIONAL,
    );

    /// The flags of a QP (`qp_access_flags`) as given, reported back as
    /// they are; of them, only the remote rights act.
    pub(crate) fn from_qp(flags: u32) -> Self {
        Self(flags)
    }

    /// The raw flags, for reporting.
    pub(crate) fn bits(self) -> u32 {
        self.0
    }

    /// Whether all of `other`'s rights are granted.
    pub(crate) fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}
