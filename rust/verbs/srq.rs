// SPDX-License-Identifier: GPL-2.0

//! The verbs of rsoft's shared receive queues.

use crate::{
    device::RsoftDevice,
    engine,
    ib::{self, PdId, RecvWrs, SrqAttr, SrqModify, SrqNotifier},
    limits::{self, queue_size},
    qp::Ctx,
    srq::{Srq, SrqShared},
};
use kernel::prelude::*;

#[vtable]
impl ib::SrqOps for Srq {
    type Device = RsoftDevice;

    fn create(
        dev: &RsoftDevice,
        pd: PdId,
        attr: &mut SrqAttr,
        notifier: SrqNotifier,
    ) -> Result<impl PinInit<Self>> {
        attr.max_wr = queue_size(attr.max_wr, limits::MAX_SRQ_WR)?;
        attr.max_sge = queue_size(attr.max_sge, limits::MAX_SGE)?;
        let taken = dev.srqs.take()?;
        let shared = SrqShared::new(pd, attr, notifier)?;
        taken.keep();
        Ok(Srq { shared })
    }

    fn destroy(self: Pin<&Self>, dev: &RsoftDevice) {
        dev.srqs.give_back();
    }

    fn modify(&self, _dev: &RsoftDevice, m: &SrqModify) -> Result {
        // Resizing is not offered (no IB_DEVICE_SRQ_RESIZE).
        if m.max_wr.is_some() {
            return Err(EINVAL);
        }
        m.limit.map_or(Ok(()), |limit| self.shared.arm(limit))
    }

    fn query(&self, _dev: &RsoftDevice) -> Result<SrqAttr> {
        Ok(self.shared.attr())
    }

    fn post_recv(&self, dev: &RsoftDevice, wrs: &mut RecvWrs<'_>) -> Result {
        let srq = &self.shared;
        let (posted, waited_on) = {
            let mut inner = srq.inner.lock();
            let posted = inner.rq.push_receives(wrs);
            (posted, core::mem::take(&mut inner.waited_on))
        };
        if waited_on {
            // An SRQ's posts come from wherever its QPs' posts come from:
            // assume the strictest.
            engine::resume_senders_of(&dev.net, srq, Ctx::caller(false));
        }
        posted
    }
}
