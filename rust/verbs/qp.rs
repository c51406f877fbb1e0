// SPDX-License-Identifier: GPL-2.0

//! The verbs of rsoft's queue pairs: checks and queueing here; running a QP
//! is the engine's ([`crate::engine`]).

use crate::{
    cq::RsoftCq,
    device::RsoftDevice,
    engine,
    ib::{
        self, QpCap, QpInitAttr, QpModify, QpNum, QpQuery, QpState, QpType, RecvWrs, SendOp,
        SendWrs,
    },
    limits::{self, queue_size},
    qp::{Ctx, Qp, QpShared},
    srq::Srq,
    transport,
    wq::{SgeCopy, Wqe},
};
use kernel::prelude::*;

#[vtable]
impl ib::QpOps for Qp {
    type Device = RsoftDevice;
    type Cq = RsoftCq;
    type Srq = Srq;

    fn create(
        dev: &RsoftDevice,
        mut attr: QpInitAttr<'_, Self>,
    ) -> Result<(QpNum, QpCap, impl PinInit<Self>)> {
        let cap = &mut attr.cap;
        cap.max_send_wr = queue_size(cap.max_send_wr, limits::MAX_QP_WR)?;
        cap.max_recv_wr = queue_size(cap.max_recv_wr, limits::MAX_QP_WR)?;
        cap.max_send_sge = queue_size(cap.max_send_sge, limits::MAX_SGE)?;
        cap.max_recv_sge = queue_size(cap.max_recv_sge, limits::MAX_SGE)?;
        if cap.max_inline_data > limits::MAX_INLINE_DATA {
            return Err(EINVAL);
        }
        if attr.srq.is_some() {
            // Receives come from the SRQ; the QP's own queue stays empty.
            cap.max_recv_wr = 0;
            cap.max_recv_sge = 0;
        }
        let slot = dev.net.reserve_qp(attr.qp_type == QpType::Gsi)?;
        let qpn = slot.qpn();
        let cap = attr.cap;
        let shared = QpShared::new(dev.net.clone(), attr, qpn)?;
        slot.fill(shared.clone());
        Ok((qpn.num(), cap, Qp { shared }))
    }

    fn modify(&self, dev: &RsoftDevice, m: &QpModify) -> Result {
        let qp = self.shared.enter().ok_or(EINVAL)?;
        {
            let mut inner = qp.inner.lock();
            transport::check_modify(&dev.net.link, inner.state, inner.sq_draining, m)?;
            inner.apply(m);
            if m.state == Some(QpState::Error) {
                qp.enter_error(&mut inner);
            }
        }
        // A new state may unblock this QP (flush in ERR, sends in RTS) or
        // its peer (waiting on RNR for a QP that will now never answer).
        engine::progress(&dev.net, &qp, Ctx::of(&qp));
        Ok(())
    }

    fn query(&self, _dev: &RsoftDevice) -> Result<QpQuery> {
        Ok(self.shared.enter().ok_or(EINVAL)?.query())
    }

    fn destroy(self: Pin<&Self>, dev: &RsoftDevice) {
        let qp = &self.shared;
        dev.net.remove_qp(qp.qpn);
        // Whoever still runs or completes on the QP finishes first.
        qp.close();
        // A peer waiting on RNR for this QP now gets no answer.
        engine::kick_peer(&dev.net, qp, Ctx::of(qp));
    }

    fn post_send(&self, dev: &RsoftDevice, wrs: &mut SendWrs<'_>) -> Result {
        let qp = self.shared.enter().ok_or(EINVAL)?;
        let posted = (|| {
            // Zeroed only for an inline WR: most WRs have none.
            let mut data: [u8; limits::MAX_INLINE_DATA as usize];
            for wr in wrs {
                let wr = wr?;
                if !transport::may_post(qp.qp_type, &wr) {
                    return Err(EINVAL);
                }
                // Only what carries data can carry it inline. The copy may
                // fault in user memory: it is made before taking the lock.
                let inline = if wr.inline {
                    if !matches!(wr.op, SendOp::Send | SendOp::RdmaWrite(_)) {
                        return Err(EINVAL);
                    }
                    data = [0; limits::MAX_INLINE_DATA as usize];
                    let room = data.get_mut(..qp.cap.max_inline_data as usize);
                    let len = wr.read_inline(room.ok_or(EINVAL)?)?;
                    Some(&data[..len])
                } else {
                    None
                };
                let mut inner = qp.inner.lock();
                if !matches!(inner.state, QpState::Rts | QpState::Sqd | QpState::Error) {
                    return Err(EINVAL);
                }
                let wqe = Wqe {
                    wr_id: wr.wr_id,
                    op: wr.op,
                    signaled: wr.signaled,
                    solicited: wr.solicited,
                    fence: wr.fence,
                    imm: wr.imm,
                    invalidate: wr.invalidate,
                    num_sge: wr.sges.len(),
                    inline: None,
                };
                let sges = wr.sges.iter().map(SgeCopy::from);
                inner.sq.push(wqe, sges, inline, wr.datagram)?;
            }
            Ok(())
        })();
        // What was posted before a bad WR still goes out.
        engine::kick(&dev.net, &qp, Ctx::of(&qp));
        posted
    }

    fn post_recv(&self, dev: &RsoftDevice, wrs: &mut RecvWrs<'_>) -> Result {
        let qp = self.shared.enter().ok_or(EINVAL)?;
        let mut wake = false;
        let posted = (|| {
            let mut inner = qp.inner.lock();
            if inner.state == QpState::Reset || qp.srq.is_some() {
                return Err(EINVAL);
            }
            // An ERR QP flushes what is posted. A sender refused for want
            // of a receive (RNR) was refused while the queue was empty, and
            // the post that made it not empty woke it: a post to a queue
            // that holds receives wakes nobody.
            wake = inner.state == QpState::Error || inner.rq.is_empty();
            inner.rq.push_receives(wrs)
        })();
        if wake {
            engine::progress(&dev.net, &qp, Ctx::of(&qp));
        }
        posted
    }
}
