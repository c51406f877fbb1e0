// SPDX-License-Identifier: GPL-2.0

//! rsoft: software RDMA devices for developing and testing verbs software
//! with stock rdma-core on machines without RDMA hardware.

// `try_pin_init!` of a QP (a dozen fields and a work item) nests deeper
// than the default allows.
#![recursion_limit = "256"]

use kernel::{prelude::*, sync::Arc};

mod complete;
mod copy;
mod counters;
mod device;
mod engine;
mod fabric;
mod fastreg;
mod flight;
mod grh;
mod ib;
mod limits;
mod net;
mod obj;
mod params;
mod payload;
mod psn;
mod quota;
mod retry;
// Also the host crate tools/ring-test, where its items must be public.
#[allow(unreachable_pub)]
mod ring;
mod table;
mod transport;
mod verbs;
mod wire;

// The objects live in `rust/obj/`; the rest of the driver names them
// `crate::qp` and so on, as it names every other part of rsoft.
use obj::{atomics, cq, inbound, mr, qp, reply, scratch, srq, wq};

module! {
    type: RsoftModule,
    name: "rsoft",
    description: "Software RDMA device for stock rdma-core userspace",
    license: "GPL",
}

/// Most InfiniBand devices one module instance registers.
const MAX_DEVICES: u32 = 16;

struct RsoftModule {
    // Dropped in this order: no new link, then every device goes, then
    // the packets they left for the RoCEv2 wire.
    _links: ib::Links<device::Rsoft>,
    _devices: Arc<ib::Devices<device::Rsoft>>,
    _sends: ib::DeferredSends,
    _listening: ib::Listening<fabric::Fabric<net::Net>>,
}

impl kernel::Module for RsoftModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let count = params::devices();
        if count > MAX_DEVICES {
            pr_err!("devices={} is out of range 0..={}\n", count, MAX_DEVICES);
            return Err(EINVAL);
        }
        let fabric = Arc::pin_init(fabric::Fabric::new()?, GFP_KERNEL)?;
        // Before the first link, gone after the last device.
        let listening = ib::Listening::new(fabric.clone())?;
        let devices = Arc::new(ib::Devices::new(module, params::provider()?)?, GFP_KERNEL)?;
        for index in 0..count {
            // Earlier devices unregister when `devices` drops on error.
            device::register_ib(&devices, &fabric, index)?;
        }
        let links = ib::Links::new(devices.clone(), fabric)?;
        Ok(Self {
            _links: links,
            _devices: devices,
            _sends: ib::DeferredSends::new(),
            _listening: listening,
        })
    }
}
