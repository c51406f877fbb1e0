// SPDX-License-Identifier: GPL-2.0

//! rsoft: software RDMA devices for developing and testing verbs software
//! with stock rdma-core on machines without RDMA hardware.

// `try_pin_init!` of a QP (a dozen fields and a work item) nests deeper
// than the default allows.
#![recursion_limit = "256"]

use kernel::prelude::*;

mod complete;
mod copy;
mod counters;
mod cq;
mod device;
mod engine;
mod fastreg;
mod gate;
mod grh;
mod ib;
mod limits;
mod mr;
mod net;
mod params;
mod payload;
mod qp;
mod quota;
// Also the host crate tools/ring-test, where its items must be public.
#[allow(unreachable_pub)]
mod ring;
mod srq;
mod table;
mod transport;
mod verbs;
mod wq;

module! {
    type: RsoftModule,
    name: "rsoft",
    author: "rsoft developers",
    description: "Software RDMA device for stock rdma-core userspace",
    license: "GPL",
}

/// Most devices one module instance registers.
const MAX_DEVICES: u32 = 16;

struct RsoftModule {
    _devices: KVec<ib::Registration<device::Rsoft>>,
}

impl kernel::Module for RsoftModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let count = params::devices();
        if !(1..=MAX_DEVICES).contains(&count) {
            pr_err!("devices={} is out of range 1..={}\n", count, MAX_DEVICES);
            return Err(EINVAL);
        }
        let mut devices = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for index in 0..count {
            // Earlier devices unregister when `devices` drops on error.
            let reg = device::register(module, index)?;
            devices.push(reg, GFP_KERNEL)?;
        }
        pr_info!("registered {} device(s)\n", count);
        Ok(Self { _devices: devices })
    }
}
