// SPDX-License-Identifier: GPL-2.0

//! The verbs of rsoft's completion queues.

use crate::{
    cq::RsoftCq,
    device::RsoftDevice,
    ib::{self, CqArm, CqAttr, DriverAttrs, QpName, WcSink},
    limits,
};
use kernel::prelude::*;

#[vtable]
impl ib::CqOps for RsoftCq {
    type Device = RsoftDevice;

    fn create(dev: &RsoftDevice, attr: &CqAttr) -> Result<(u32, impl PinInit<Self>)> {
        if !(1..=limits::MAX_CQE).contains(&attr.cqe) || attr.comp_vector != 0 {
            return Err(EINVAL);
        }
        let taken = dev.cqs.take()?;
        let init = RsoftCq::new(attr.cqe, attr.ignore_overrun)?;
        taken.keep();
        Ok((attr.cqe, init))
    }

    fn destroy(self: Pin<&Self>, dev: &RsoftDevice) {
        self.close();
        dev.cqs.give_back();
    }

    fn poll(&self, out: &mut WcSink<'_>) -> Result {
        RsoftCq::poll(self, out)
    }

    fn req_notify(&self, arm: CqArm) -> bool {
        self.arm(arm)
    }

    fn purge(&self, qp: QpName<'_>) {
        RsoftCq::purge(self, qp);
    }

    fn resize(&self, _dev: &RsoftDevice, cqe: u32) -> Result<u32> {
        if !(1..=limits::MAX_CQE).contains(&cqe) {
            return Err(EINVAL);
        }
        RsoftCq::resize(self, cqe)?;
        Ok(cqe)
    }

    fn fill_res(&self, attrs: &mut DriverAttrs<'_>) -> Result {
        RsoftCq::fill_res(self, attrs)
    }
}
