// SPDX-License-Identifier: GPL-2.0

//! The names of per-port hardware counters, as the core's hw stats
//! interface lists them (`rdma statistic show`,
//! `/sys/class/infiniband/*/ports/*/hw_counters`); their ops are the
//! adapter's (`adapter/counters.rs`).

use super::{bindings, compat::c_str_ptr};
use kernel::str::CStr;

/// The name of one counter (`struct rdma_stat_desc`).
#[repr(transparent)]
pub(crate) struct CounterDesc(bindings::rdma_stat_desc);

impl CounterDesc {
    pub(crate) const fn new(name: &'static CStr) -> Self {
        Self(bindings::rdma_stat_desc {
            name: c_str_ptr(name),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }
}
