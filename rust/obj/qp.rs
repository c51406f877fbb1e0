// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: attributes, the state machine and the two work queues under
//! the QP's own lock, and the handles through which the engine reaches a
//! QP.
//!
//! A QP is shared (`Arc`) between the core's object, the device's QP table
//! and whoever runs it. It holds its CQs ([`CqRef`]): the `ib` layer keeps
//! the QP's memory until the last `Arc` is gone. Its [`Gate`] says who may
//! still work on it: every user is a [`QpUse`], and `destroy_qp` closes the
//! gate and waits for the last one, so that no completion naming the QP is
//! made after the `ib` layer purges them.
//!
//! A connected QP keeps the [`Reach`] of the peer it sends to ([`Peer`]),
//! so that a message finds its responder without a table lookup; the
//! peer's destroy empties that slot, so what a QP keeps never holds a
//! destroyed peer or its CQs.

use crate::{
    atomics::AtomicResults,
    cq::RsoftCq,
    flight::Window,
    ib::{
        Claim, CqRef, Gate, IrqSpinLock, OnTimer, PdId, QpCap, QpFault, QpId, QpInitAttr, QpModify,
        QpNotifier, QpNum, QpQuery, QpState, QpType, Timer, WcQp,
    },
    inbound::{Inbound, Taken, Target},
    new_irq_spinlock,
    psn::Psn,
    reply::Replies,
    retry::{Expiry, Retries},
    scratch::Scratch,
    srq::SrqShared,
    wq::{RecvWqe, SgeCopy, WorkQueue, Wqe},
};
use core::{any::Any, ops::Deref, sync::atomic::AtomicBool};
use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

/// A QP number; QP numbers start at [`Qpn::BASE`] (0 and 1 are the IB
/// special QPs) and map one to one onto slots of the device's QP table.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Qpn(u32);

impl Qpn {
    const BASE: u32 = 0x100;
    /// The General Services QP of a RoCE port.
    pub(crate) const GSI: Self = Self(1);

    pub(crate) fn from_slot(slot: u32) -> Self {
        Self(slot + Self::BASE)
    }

    /// The number as a consumer names it: any value.
    pub(crate) fn of(qpn: QpNum) -> Self {
        Self(qpn.get())
    }

    pub(crate) fn slot(self) -> u32 {
        self.0.wrapping_sub(Self::BASE)
    }

    pub(crate) fn num(self) -> QpNum {
        QpNum::new(self.0)
    }
}

/// A QP as the core holds it.
pub(crate) struct Qp {
    pub(crate) shared: Arc<QpShared>,
}

/// What changes under the QP's lock.
pub(crate) struct QpInner {
    pub(crate) state: QpState,
    pub(crate) attr: QpQuery,
    pub(crate) sq: WorkQueue<Wqe>,
    /// Unused when the QP takes its receives from an SRQ.
    pub(crate) rq: WorkQueue<RecvWqe>,
    /// Receives taken off `rq` or the SRQ by a sender and completed with no
    /// lock held, not completed yet: neither a flush nor the Last WQE
    /// Reached event may overtake them.
    pub(crate) rq_busy: u32,
    /// Bumped whenever `sq` is emptied without completions (RESET), so
    /// that a sender finishing the old head knows it is gone.
    pub(crate) sq_epoch: u32,
    /// What the front send WQE has spent of its retries.
    pub(crate) retries: Retries,
    /// The requester's next PSN: `sq_psn`, as set and as queried.
    pub(crate) req_psn: Psn,
    /// The requests in flight on a wire that answers later.
    pub(crate) window: Window,
    /// The PSN the responder expects: `rq_psn`, as set and as queried.
    pub(crate) resp_psn: Psn,
    /// `resp_psn` as the newest READ or atomic the responder took left
    /// it: the PSN before this one is answered by data alone, never by a
    /// plain ACK.
    pub(crate) resp_after_data: Option<Psn>,
    /// Moved to SQD, the QP has not yet said that its send queue drained.
    pub(crate) sq_draining: bool,
    /// The PSN of the packet ahead of `resp_psn` that the responder NAKed
    /// last; `None` once one at `resp_psn` comes or `rq_psn` is set: one
    /// NAK per gap and round of the requester, not one per packet.
    pub(crate) sequence_naked: Option<Psn>,
    /// The message of several packets the responder is in the middle of.
    pub(crate) inbound: Option<Inbound>,
    /// The receive of a UC message that lost a packet, on a QP without an
    /// SRQ: the next message takes it before those of `rq`, as if the lost
    /// one had never come (IBA's class D1 error).
    pub(crate) kept: Option<Taken>,
    /// The responder's atomics' results, for their duplicates.
    pub(crate) atomics: AtomicResults,
    /// The responder's answers that wait for the QP's worker.
    pub(crate) replies: Replies,
    /// The peer a connected QP sends to, as last found.
    peer: Option<Peer>,
    /// Bumped by every modify: a peer found for the path before is not
    /// kept.
    path_epoch: u32,
}

/// How the QPs connected to a QP reach it without a table lookup: the QP
/// while its port's table holds it, nothing once it left the table. A peer
/// keeps this slot, not the QP.
#[pin_data]
pub(crate) struct Reach {
    #[pin]
    qp: IrqSpinLock<Option<Arc<QpShared>>>,
}

impl Reach {
    /// Enters the QP, unless it left its table or is being destroyed.
    fn enter(&self) -> Option<QpUse> {
        self.qp.lock().as_ref()?.enter()
    }
}

/// A connected QP's peer as last found: a QP in its port's table, or on
/// another host (`reach` is `None`: no port of this host answers the
/// path). Good while the QP's path and the fabric's routes stay as they
/// were then. If the peer is destroyed, its [`Reach`] is empty; a QP that
/// reuses the number has its own.
struct Peer {
    reach: Option<Arc<Reach>>,
    /// The fabric's routes' generation ([`crate::fabric::Fabric::routes`]).
    routes: u32,
}

/// Where a connected QP's requests go, as it keeps it.
pub(crate) enum KeptPeer {
    /// To this QP of this host.
    Local(QpUse),
    /// To another host: the wire, with no look-up.
    Remote,
}

/// A queue pair.
#[pin_data]
pub(crate) struct QpShared {
    /// What the QP's worker runs it on: the device's net.
    runner: Arc<dyn Runner>,
    pub(crate) qpn: Qpn,
    id: QpId,
    pub(crate) pd: PdId,
    pub(crate) qp_type: QpType,
    pub(crate) cap: QpCap,
    pub(crate) sq_sig_all: bool,
    /// Posts come from a system call: running the QP may sleep.
    pub(crate) user: bool,
    /// Emptied when the QP leaves its port's table.
    reach: Arc<Reach>,
    send_cq: CqRef<RsoftCq>,
    recv_cq: CqRef<RsoftCq>,
    /// The SRQ the QP takes its receives from.
    pub(crate) srq: Option<Arc<SrqShared>>,
    notifier: QpNotifier,
    #[pin]
    pub(crate) inner: IrqSpinLock<QpInner>,
    #[pin]
    gate: Gate,
    /// Claimed by whoever runs the QP's queues, with the buffers a run
    /// copies into (see [`crate::engine::kick`]).
    pub(crate) run: Claim<Scratch>,
    /// There may be new work for whoever runs the QP.
    pub(crate) pending: AtomicBool,
    /// Runs the QP where the poster should not (see [`QpUse::defer`]; the
    /// engine runs it).
    #[pin]
    work: Work<QpShared>,
    /// Has the worker try the head send WQE again (see [`crate::retry`]).
    #[pin]
    retry_timer: Timer<QpShared>,
}

/// The calling context: whether it may sleep (a system call on a user QP)
/// or not (a kernel consumer, which may post from any context), and
/// whether it is the QP's worker.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    pub(crate) may_sleep: bool,
    pub(crate) worker: bool,
}

impl Ctx {
    /// The QP's worker.
    pub(crate) const WORKER: Self = Self {
        may_sleep: true,
        worker: true,
    };

    /// A verb's caller.
    pub(crate) fn caller(may_sleep: bool) -> Self {
        Self {
            may_sleep,
            worker: false,
        }
    }

    /// The caller of a verb on `qp`: a user QP's verbs come from system
    /// calls, which may sleep.
    pub(crate) fn of(qp: &QpShared) -> Self {
        Self::caller(qp.user)
    }
}

/// Runs a QP's queues (the engine, on the QP's device's net).
pub(crate) trait Runner: Send + Sync {
    fn run(&self, qp: &QpUse, ctx: Ctx);

    /// Sends a batch of the answers that wait for `qp`'s worker, from
    /// that worker alone; returns whether some still wait.
    fn send_answers(&self, qp: &QpUse) -> bool;

    /// The port itself (a [`crate::net::Net`]), for the wire that delivers
    /// to its QPs.
    fn port(&self) -> &dyn Any;

    /// The local ACK timeout of one of its QPs ran out, for its counters.
    fn ack_timed_out(&self);
}

impl_has_work! {
    impl HasWork<Self> for QpShared { self.work }
}

crate::impl_has_timer!(QpShared, retry_timer);

impl OnTimer for QpShared {
    fn fire(this: Arc<Self>) {
        let expiry = {
            let mut inner = this.inner.lock();
            let timeout = inner.attr.timeout;
            let expiry = inner.retries.expire(timeout);
            // Armed under the lock, as every wait is: an answer that comes
            // meanwhile ends this wait, not one of its own.
            if let Expiry::Again(us) = expiry {
                Timer::arm(&this, us);
            }
            expiry
        };
        if let Expiry::Due { ack_timeout } = expiry {
            if ack_timeout {
                this.runner.ack_timed_out();
            }
            // Already queued: that run will try it.
            let _ = workqueue::system_unbound().enqueue(this);
        }
    }
}

/// The QP's worker: runs what its poster left to it ([`QpUse::defer`]).
impl WorkItem for QpShared {
    type Pointer = Arc<QpShared>;

    fn run(this: Arc<QpShared>) {
        if let Some(qp) = this.enter() {
            // The rest in a later run: other work goes in between.
            if this.runner.send_answers(&qp) {
                qp.defer();
            }
            this.runner.run(&qp, Ctx::WORKER);
        }
    }
}

impl QpShared {
    /// A QP in the RESET state, numbered `qpn`.
    pub(crate) fn new(
        runner: Arc<dyn Runner>,
        attr: QpInitAttr<'_, Qp>,
        qpn: Qpn,
    ) -> Result<Arc<Self>> {
        let cap = attr.cap;
        let inner = QpInner {
            state: QpState::Reset,
            attr: QpQuery::default(),
            sq: WorkQueue::new_send(
                cap.max_send_wr,
                cap.max_send_sge,
                cap.max_inline_data,
                attr.qp_type.is_datagram(),
            )?,
            rq: WorkQueue::new_recv(cap.max_recv_wr, cap.max_recv_sge)?,
            rq_busy: 0,
            sq_epoch: 0,
            retries: Retries::default(),
            req_psn: Psn::default(),
            window: Window::default(),
            resp_psn: Psn::default(),
            resp_after_data: None,
            sequence_naked: None,
            sq_draining: false,
            atomics: AtomicResults::new()?,
            replies: Replies::new()?,
            inbound: None,
            kept: None,
            peer: None,
            path_epoch: 0,
        };
        let reach = Arc::pin_init(
            pin_init!(Reach {
                qp <- new_irq_spinlock!(None, "rsoft_reach"),
            }),
            GFP_KERNEL,
        )?;
        let srq = attr.srq.map(|srq| srq.shared.clone());
        let scratch = Scratch::new(cap.max_send_sge, cap.max_inline_data)?;
        Arc::pin_init(
            try_pin_init!(Self {
                runner,
                qpn,
                id: attr.id,
                pd: attr.pd,
                qp_type: attr.qp_type,
                cap,
                sq_sig_all: attr.sq_sig_all,
                user: attr.user,
                reach,
                send_cq: attr.send_cq,
                recv_cq: attr.recv_cq,
                srq,
                notifier: attr.notifier,
                inner <- new_irq_spinlock!(inner, "rsoft_qp"),
                gate <- Gate::new(),
                run: Claim::new(scratch),
                pending: AtomicBool::new(false),
                work <- new_work!("rsoft_qp_work"),
                retry_timer <- Timer::new(),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Enters the QP, unless it is being destroyed.
    pub(crate) fn enter(self: &Arc<Self>) -> Option<QpUse> {
        self.gate.enter().then(|| QpUse(self.clone()))
    }

    /// Closes the QP to new users and waits for those inside; after this
    /// nothing completes on its CQs through it. Sleeps.
    pub(crate) fn close(self: &Arc<Self>) {
        self.gate.close();
        // Only a user arms the retry timer, and only a user or the timer
        // queues the worker, so none can be queued once the timer is
        // disarmed; wait for one queued before, or still returning.
        Timer::cancel(self);
        crate::ib::flush_work(&self.work);
    }

    /// Makes the QP reachable by its peers: its port's table now holds it.
    pub(crate) fn open_reach(self: &Arc<Self>) {
        *self.reach.qp.lock() = Some(self.clone());
    }

    /// Makes the QP unreachable by its peers, when it leaves its port's
    /// table; returns what the slot held, for the caller to drop outside
    /// any lock.
    pub(crate) fn close_reach(&self) -> Option<Arc<Self>> {
        self.reach.qp.lock().take()
    }

    /// Whether the QP is being destroyed: a long transfer should stop.
    pub(crate) fn is_closing(&self) -> bool {
        self.gate.is_closed()
    }

    /// The QP's name for one CQE.
    pub(crate) fn id(&self) -> WcQp {
        self.id.name()
    }
}

impl QpInner {
    /// Whether the QP, moved to SQD, has drained just now: no request of
    /// it in flight, none tried and refused. True once per move: the
    /// caller raises [`QpUse::sq_drained`] once it holds no lock.
    pub(crate) fn take_drained(&mut self) -> bool {
        self.state == QpState::Sqd
            && self.window.is_empty()
            && !self.retries.tried()
            && core::mem::take(&mut self.sq_draining)
    }

    /// Whether every receive the QP took is complete: none is being
    /// completed with no lock held (`rq_busy`), and no message of several
    /// packets holds one (the QP's run flushes that in ERR, and then says
    /// so: [`Self::take_held_receive`]).
    fn receives_done(&self) -> bool {
        let held = matches!(
            self.inbound,
            Some(Inbound {
                target: Target::Recv { .. },
                ..
            })
        );
        self.rq_busy == 0 && !held
    }

    /// Takes the receive a message whose last packet will not come holds,
    /// to be completed with no lock held: counted in `rq_busy` until
    /// [`QpUse::receive_done`], so that a Last WQE Reached event waits for
    /// its completion.
    pub(crate) fn take_held_receive(&mut self) -> Option<Taken> {
        let recv = self.inbound.take().and_then(Inbound::into_recv)?;
        self.rq_busy += 1;
        Some(recv)
    }

    /// The oldest receive of the QP's own (not an SRQ's), and its SGEs.
    pub(crate) fn receive_front(&self) -> Option<(&RecvWqe, &[SgeCopy])> {
        match &self.kept {
            Some(kept) => Some((&kept.wqe, kept.sges())),
            None => self.rq.front(),
        }
    }

    /// Takes the oldest receive of the QP's own.
    pub(crate) fn take_receive(&mut self) -> Option<RecvWqe> {
        match self.kept.take() {
            Some(kept) => Some(kept.wqe),
            None => self.rq.pop(),
        }
    }

    /// The epoch of the QP's path, for [`Self::keep_peer`].
    pub(crate) fn path_epoch(&self) -> u32 {
        self.path_epoch
    }

    /// Where the QP's requests go, if the fabric's routes are still
    /// `routes` and a peer kept on this host is still in its table and not
    /// being destroyed.
    pub(crate) fn kept_peer(&self, routes: u32) -> Option<KeptPeer> {
        let peer = self.peer.as_ref().filter(|p| p.routes == routes)?;
        match &peer.reach {
            Some(reach) => reach.enter().map(KeptPeer::Local),
            None => Some(KeptPeer::Remote),
        }
    }

    /// Keeps `peer` (`None`: on another host), found for the path of
    /// `epoch` with the routes at `routes`, unless a modify came since.
    pub(crate) fn keep_peer(&mut self, peer: Option<&QpShared>, epoch: u32, routes: u32) {
        if self.path_epoch == epoch {
            // An `Arc<Reach>` dropped here is never the last one of a
            // slot that still holds a QP: that QP holds the slot too.
            self.peer = Some(Peer {
                reach: peer.map(|p| p.reach.clone()),
                routes,
            });
        }
    }

    /// Applies a validated modify, except a move to ERR (see
    /// [`QpUse::enter_error`]).
    pub(crate) fn apply(&mut self, m: &QpModify) {
        // Any modify may change where the QP sends: find the peer again.
        self.peer = None;
        self.path_epoch = self.path_epoch.wrapping_add(1);
        fn set<V: Copy>(dst: &mut V, v: Option<V>) {
            if let Some(v) = v {
                *dst = v;
            }
        }
        let a = &mut self.attr;
        set(&mut a.access_flags, m.access_flags);
        set(&mut a.path_mtu, m.path_mtu.map(Some));
        set(&mut a.av, m.av);
        set(&mut a.dest_qpn, m.dest_qpn);
        set(&mut a.timeout, m.timeout);
        set(&mut a.retry_cnt, m.retry_cnt);
        set(&mut a.rnr_retry, m.rnr_retry);
        set(&mut a.min_rnr_timer, m.min_rnr_timer);
        set(&mut a.max_rd_atomic, m.max_rd_atomic);
        set(&mut a.max_dest_rd_atomic, m.max_dest_rd_atomic);
        set(&mut a.qkey, m.qkey);
        if let Some(psn) = m.sq_psn {
            self.req_psn = Psn::new(psn);
            self.window.clear();
        }
        if let Some(psn) = m.rq_psn {
            self.resp_psn = Psn::new(psn);
            self.resp_after_data = None;
            self.sequence_naked = None;
            self.atomics.clear();
        }
        if let Some(next) = m.state {
            if next == QpState::Reset {
                // RESET discards all work without completions.
                while self.sq.drop_front() {}
                while self.rq.pop().is_some() {}
                self.kept = None;
                self.sq_epoch = self.sq_epoch.wrapping_add(1);
                self.retries = Retries::default();
                self.window.clear();
                self.inbound = None;
            }
            // The consumer's move stops the answers still queued (a long
            // READ's), sealed or not (see `Replies::seal`).
            if matches!(next, QpState::Reset | QpState::Error) {
                self.replies.clear();
            }
            // Entering SQD, the send queue starts to drain; it says so once.
            self.sq_draining =
                next == QpState::Sqd && (self.sq_draining || self.state != QpState::Sqd);
            if next != QpState::Error {
                self.state = next;
            }
        }
    }
}

/// A user of a QP: while it lives, the QP's destroy waits.
pub(crate) struct QpUse(Arc<QpShared>);

impl QpUse {
    pub(crate) fn send_cq(&self) -> &CqRef<RsoftCq> {
        &self.0.send_cq
    }

    pub(crate) fn recv_cq(&self) -> &CqRef<RsoftCq> {
        &self.0.recv_cq
    }

    /// Moves the QP (whose lock `inner` is) to the error state: every later
    /// WR flushes. A QP on an SRQ then takes no more of its receives, which
    /// its consumer learns through the Last WQE Reached event once the
    /// receives it took are complete.
    pub(crate) fn enter_error(&self, inner: &mut QpInner) {
        self.end(inner, None);
    }

    /// Moves the QP (whose lock `inner` is) to the error state for
    /// `fault`, which its responder found in a request, and tells its
    /// consumer why: no completion does. Returns whether it entered the
    /// state now; one that was in it already (a receive completed in error
    /// for the same request said why) hears nothing more.
    pub(crate) fn fail(&self, inner: &mut QpInner, fault: QpFault) -> bool {
        self.end(inner, Some(fault))
    }

    /// Moves the QP (whose lock `inner` is) to the error state, and says
    /// why (`fault`) before a QP on an SRQ may say it took its last
    /// receive, as hardware orders them. Returns whether it entered the
    /// state now.
    fn end(&self, inner: &mut QpInner, fault: Option<QpFault>) -> bool {
        if inner.state == QpState::Error {
            return false;
        }
        inner.state = QpState::Error;
        if let Some(fault) = fault {
            self.0.notifier.fault(fault);
        }
        if inner.receives_done() {
            self.last_wqe_reached();
        }
        true
    }

    /// One of the receives counted in `rq_busy` of the QP (whose lock
    /// `inner` is) is complete. Returns whether the QP is in the error
    /// state with none left: what its flush waited for.
    pub(crate) fn receive_done(&self, inner: &mut QpInner) -> bool {
        inner.rq_busy = inner.rq_busy.saturating_sub(1);
        let idle = inner.state == QpState::Error && inner.rq_busy == 0;
        if idle && inner.receives_done() {
            self.last_wqe_reached();
        }
        idle
    }

    /// Tells the consumer of the QP, moved to SQD, that its send queue has
    /// drained. Raised with no lock of the QP held, as rxe raises it.
    pub(crate) fn sq_drained(&self) {
        self.0.notifier.sq_drained();
    }

    /// Tells the consumer of a QP on an SRQ that it has completed its last
    /// receive of the SRQ.
    fn last_wqe_reached(&self) {
        if self.0.srq.is_some() {
            self.0.notifier.last_wqe_reached();
        }
    }

    /// What `query_qp` reports.
    pub(crate) fn query(&self) -> QpQuery {
        let inner = self.0.inner.lock();
        // The PSNs as they are now, as rxe reports them: where the
        // requester and the responder have got to.
        QpQuery {
            state: Some(inner.state),
            cap: self.0.cap,
            sq_sig_all: self.0.sq_sig_all,
            sq_psn: inner.req_psn.into(),
            rq_psn: inner.resp_psn.into(),
            // An error in SQD leaves the flag, which only SQD reads.
            sq_draining: inner.state == QpState::Sqd && inner.sq_draining,
            ..inner.attr
        }
    }

    pub(crate) fn arc(&self) -> &Arc<QpShared> {
        &self.0
    }

    /// The port the QP is on (see [`Runner::port`]).
    pub(crate) fn port(&self) -> &dyn Any {
        self.0.runner.port()
    }

    /// Runs the QP on its own device's net, which need not be the
    /// caller's.
    pub(crate) fn run(&self, ctx: Ctx) {
        self.0.runner.run(self, ctx);
    }

    /// Has the QP run by its worker: it may sleep and runs on whichever
    /// CPU is free, so the poster goes on (or a kernel poster in atomic
    /// context is not held up by a long copy). The run enters the QP like
    /// any user; one queued while the QP closes finds it closed, and
    /// [`QpShared::close`] waits for it.
    pub(crate) fn defer(&self) {
        // Already queued: that run will do this one's job.
        let _ = workqueue::system_unbound().enqueue(self.0.clone());
    }

    /// Arms the QP's retry timer to have the worker try the head send WQE
    /// again in `us` microseconds.
    pub(crate) fn arm_retry(&self, us: u64) {
        Timer::arm(&self.0, us);
    }
}

impl Deref for QpUse {
    type Target = QpShared;

    fn deref(&self) -> &QpShared {
        &self.0
    }
}

impl Drop for QpUse {
    fn drop(&mut self) {
        self.0.gate.leave();
    }
}
