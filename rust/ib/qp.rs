// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation, modify and query attributes, and the routing of
//! the core's QP calls to the driver.

use super::{
    access::Access,
    ah::Address,
    attr::{LinkLayer, Mtu},
    bindings,
    cq::{self, CqOps, CqRef},
    device_data::{DeviceObject, OnDevice},
    eopnotsupp,
    event::Notifier,
    ids::{PdId, QpNum},
    object::{CoreHead, CoreObject},
    qp_name::{QpId, QpName},
    srq::{self, SrqOps},
    wr::{RecvWrs, SendWrs},
};
use core::{marker::PhantomData, ptr};
use kernel::{error::from_result, ffi, prelude::*};

/// Raises the events of one QP.
pub(crate) type QpNotifier = Notifier<bindings::ib_qp>;

impl QpNotifier {
    /// Raises `IB_EVENT_QP_LAST_WQE_REACHED`: a QP on an SRQ, now in the
    /// error state, will take no more receives from it (`ib_drain_qp`
    /// waits for this).
    pub(crate) fn last_wqe_reached(&self) {
        self.raise(bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }

    /// Raises `IB_EVENT_SQ_DRAINED`: a QP moved to SQD has no request in
    /// flight any more.
    pub(crate) fn sq_drained(&self) {
        self.raise(bindings::ib_event_type_IB_EVENT_SQ_DRAINED);
    }

    /// Raises the affiliated asynchronous error that `fault` names: the
    /// QP entered the error state for it, and no completion says why.
    pub(crate) fn fault(&self, fault: QpFault) {
        self.raise(match fault {
            QpFault::InvalidRequest => bindings::ib_event_type_IB_EVENT_QP_REQ_ERR,
            QpFault::Access => bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
            QpFault::Fatal => bindings::ib_event_type_IB_EVENT_QP_FATAL,
        });
    }
}

/// Why a QP's responder ended the QP, as its consumer hears it
/// (`IBV_EVENT_QP_REQ_ERR`, `_ACCESS_ERR`, `_FATAL`).
#[derive(Clone, Copy)]
pub(crate) enum QpFault {
    /// Its requester broke the transport's rules (an invalid request).
    InvalidRequest,
    /// A request named memory it may not touch (a remote access error).
    Access,
    /// The QP could not carry on (a remote operational error).
    Fatal,
}

/// Transport service (`enum ib_qp_type`), the ones rsoft implements.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum QpType {
    /// Reliable connected: acknowledged, errors reported on both sides.
    Rc,
    /// Unreliable connected: no acknowledgements, lost messages are silent.
    Uc,
    /// Unreliable datagram: each send names its destination.
    Ud,
    /// The General Services QP (QP1) of a RoCE port: a UD QP that carries
    /// the management datagrams of the kernel's CM agent.
    Gsi,
}

impl QpType {
    /// The type of the core's `qp_type`; `None` for one rsoft does not
    /// implement.
    fn from_c(t: bindings::ib_qp_type) -> Option<Self> {
        Some(match t {
            bindings::ib_qp_type_IB_QPT_RC => Self::Rc,
            bindings::ib_qp_type_IB_QPT_UC => Self::Uc,
            bindings::ib_qp_type_IB_QPT_UD => Self::Ud,
            bindings::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            _ => return None,
        })
    }

    /// Each send names its destination (UD and GSI): its WRs are
    /// `ib_ud_wr`s, and each is one datagram.
    pub(crate) fn is_datagram(self) -> bool {
        matches!(self, Self::Ud | Self::Gsi)
    }
}

/// QP state (`enum ib_qp_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpState {
    Reset,
    Init,
    Rtr,
    Rts,
    Sqd,
    Sqe,
    Error,
}

impl QpState {
    fn from_c(s: bindings::ib_qp_state) -> Result<Self> {
        Ok(match s {
            bindings::ib_qp_state_IB_QPS_RESET => Self::Reset,
            bindings::ib_qp_state_IB_QPS_INIT => Self::Init,
            bindings::ib_qp_state_IB_QPS_RTR => Self::Rtr,
            bindings::ib_qp_state_IB_QPS_RTS => Self::Rts,
            bindings::ib_qp_state_IB_QPS_SQD => Self::Sqd,
            bindings::ib_qp_state_IB_QPS_SQE => Self::Sqe,
            bindings::ib_qp_state_IB_QPS_ERR => Self::Error,
            _ => return Err(EINVAL),
        })
    }

    fn to_c(self) -> bindings::ib_qp_state {
        match self {
            Self::Reset => bindings::ib_qp_state_IB_QPS_RESET,
            Self::Init => bindings::ib_qp_state_IB_QPS_INIT,
            Self::Rtr => bindings::ib_qp_state_IB_QPS_RTR,
            Self::Rts => bindings::ib_qp_state_IB_QPS_RTS,
            Self::Sqd => bindings::ib_qp_state_IB_QPS_SQD,
            Self::Sqe => bindings::ib_qp_state_IB_QPS_SQE,
            Self::Error => bindings::ib_qp_state_IB_QPS_ERR,
        }
    }
}

/// Path migration state (`enum ib_mig_state`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum MigState {
    /// On the primary path with no alternate armed: the state of a QP that
    /// has never been given an alternate path.
    Migrated,
    Rearm,
    Armed,
}

impl MigState {
    fn from_c(s: bindings::ib_mig_state) -> Result<Self> {
        Ok(match s {
            bindings::ib_mig_state_IB_MIG_MIGRATED => Self::Migrated,
            bindings::ib_mig_state_IB_MIG_REARM => Self::Rearm,
            bindings::ib_mig_state_IB_MIG_ARMED => Self::Armed,
            _ => return Err(EINVAL),
        })
    }
}

/// Work queue sizes (`struct ib_qp_cap`).
#[derive(Clone, Copy, Default)]
pub(crate) struct QpCap {
    pub(crate) max_send_wr: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    /// Bytes a send WR may carry inline (`IB_SEND_INLINE`).
    pub(crate) max_inline_data: u32,
}

impl QpCap {
    fn from_c(c: &bindings::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    fn write_to(&self, c: &mut bindings::ib_qp_cap) {
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
    }
}

/// The verbs of a driver's queue pairs; `Self` is the driver's data behind
/// each `ib_qp`.
#[vtable]
pub(crate) trait QpOps: Send + Sync + Sized {
    /// The driver's per-device state.
    type Device;
    /// The driver's data of a CQ.
    type Cq: CqOps<Device = Self::Device>;
    /// The driver's data of an SRQ.
    type Srq: SrqOps<Device = Self::Device>;

    /// A new QP: returns its number and its sizes (at least `attr.cap`).
    /// The QP keeps what it needs of `attr`, its holds included; everything
    /// that can fail is done before the QP is initialised.
    fn create(
        dev: &Self::Device,
        attr: QpInitAttr<'_, Self>,
    ) -> Result<(QpNum, QpCap, impl PinInit<Self>)>;
    fn modify(&self, dev: &Self::Device, attr: &QpModify) -> Result;
    fn query(&self, dev: &Self::Device) -> Result<QpQuery>;
    /// Removes the QP from the device: when this returns, nothing may run
    /// on it any more. Its completions are purged afterwards
    /// ([`CqOps::purge`]), and a completion made of it after this
    /// returns names no QP ([`QpId::name`]).
    fn destroy(self: Pin<&Self>, dev: &Self::Device);
    fn post_send(&self, dev: &Self::Device, wrs: &mut SendWrs<'_>) -> Result;
    fn post_recv(&self, dev: &Self::Device, wrs: &mut RecvWrs<'_>) -> Result;
}

/// What a consumer asked for in `create_qp`, for the length of the call.
pub(crate) struct QpInitAttr<'a, Q: QpOps> {
    /// The QP's handle, for the QP to keep: what its completions name it
    /// with.
    pub(crate) id: QpId,
    pub(crate) pd: PdId,
    pub(crate) qp_type: QpType,
    /// Requested sizes; the driver may round them up.
    pub(crate) cap: QpCap,
    /// Every send WR completes with a CQE (`IB_SIGNAL_ALL_WR`).
    pub(crate) sq_sig_all: bool,
    /// Holds of the CQs, for the QP to keep.
    pub(crate) send_cq: CqRef<Q::Cq>,
    pub(crate) recv_cq: CqRef<Q::Cq>,
    /// Where receives come from instead of the QP's own queue.
    pub(crate) srq: Option<Pin<&'a Q::Srq>>,
    /// The QP's own notifier: the QP's destroy waits for it to be dropped.
    pub(crate) notifier: QpNotifier,
    /// Created through uverbs: its posts come from system calls of a
    /// process, which may sleep (a kernel consumer may post from any
    /// context).
    pub(crate) user: bool,
}

/// The attributes a `modify_qp` call sets; `None` where its mask is clear.
/// Enumerations are read here (a value that names nothing is EINVAL); the
/// driver's rules check the rest.
#[derive(Default)]
pub(crate) struct QpModify {
    pub(crate) state: Option<QpState>,
    /// The state the consumer believes the QP is in (`IB_QP_CUR_STATE`).
    pub(crate) cur_state: Option<QpState>,
    pub(crate) access_flags: Option<Access>,
    pub(crate) pkey_index: Option<u16>,
    pub(crate) port: Option<u32>,
    pub(crate) path_mtu: Option<Mtu>,
    /// The primary path's address (`IB_QP_AV`).
    pub(crate) av: Option<Address>,
    pub(crate) dest_qpn: Option<QpNum>,
    pub(crate) rq_psn: Option<u32>,
    pub(crate) sq_psn: Option<u32>,
    pub(crate) timeout: Option<u8>,
    pub(crate) retry_cnt: Option<u8>,
    pub(crate) rnr_retry: Option<u8>,
    pub(crate) min_rnr_timer: Option<u8>,
    pub(crate) max_rd_atomic: Option<u8>,
    pub(crate) max_dest_rd_atomic: Option<u8>,
    pub(crate) qkey: Option<u32>,
    /// An alternate path was given (`IB_QP_ALT_PATH`); its attributes are
    /// not read.
    pub(crate) alt_path: bool,
    pub(crate) path_mig_state: Option<MigState>,
    mask: u32,
    qp_type: bindings::ib_qp_type,
}

impl QpModify {
    /// Whether the core's transition table allows this modify from `current`
    /// (required and allowed attributes for each state change).
    pub(crate) fn valid_from(&self, current: QpState) -> bool {
        let next = self.state.unwrap_or(current);
        // SAFETY: a pure function of its arguments.
        unsafe {
            bindings::ib_modify_qp_is_ok(current.to_c(), next.to_c(), self.qp_type, self.mask)
        }
    }
}

/// What `query_qp` reports.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpQuery {
    pub(crate) state: Option<QpState>,
    pub(crate) cap: QpCap,
    pub(crate) sq_sig_all: bool,
    pub(crate) access_flags: Access,
    /// `None` until a modify sets it (reported as 0).
    pub(crate) path_mtu: Option<Mtu>,
    pub(crate) av: Address,
    pub(crate) dest_qpn: QpNum,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) qkey: u32,
    /// In SQD, the send queue has not drained yet (IBA 11.2.5.3).
    pub(crate) sq_draining: bool,
}

type QpObject<Q> = CoreObject<bindings::ib_qp, Q>;

/// Reads the attributes `mask` selects out of `attr`.
fn parse_modify(
    attr: &bindings::ib_qp_attr,
    mask: u32,
    qp_type: bindings::ib_qp_type,
) -> Result<QpModify> {
    let has = |bit: u32| mask & bit != 0;
    let mut m = QpModify {
        mask,
        qp_type,
        ..Default::default()
    };
    if has(bindings::ib_qp_attr_mask_IB_QP_STATE) {
        m.state = Some(QpState::from_c(attr.qp_state)?);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_CUR_STATE) {
        m.cur_state = Some(QpState::from_c(attr.cur_qp_state)?);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_PATH_MTU) {
        m.path_mtu = Some(Mtu::from_c(attr.path_mtu)?);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE) {
        m.path_mig_state = Some(MigState::from_c(attr.path_mig_state)?);
    }
    if has(bindings::ib_qp_attr_mask_IB_QP_AV) {
        // SAFETY: the core holds the AV's GID attribute for the call.
        m.av = Some(unsafe { Address::from_c(&attr.ah_attr) }?);
    }
    m.access_flags = has(bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS)
        .then(|| Access::from_qp(attr.qp_access_flags as u32));
    m.pkey_index = has(bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX).then_some(attr.pkey_index);
    m.port = has(bindings::ib_qp_attr_mask_IB_QP_PORT).then_some(attr.port_num);
    m.dest_qpn =
        has(bindings::ib_qp_attr_mask_IB_QP_DEST_QPN).then_some(QpNum::new(attr.dest_qp_num));
    m.rq_psn = has(bindings::ib_qp_attr_mask_IB_QP_RQ_PSN).then_some(attr.rq_psn);
    m.sq_psn = has(bindings::ib_qp_attr_mask_IB_QP_SQ_PSN).then_some(attr.sq_psn);
    m.timeout = has(bindings::ib_qp_attr_mask_IB_QP_TIMEOUT).then_some(attr.timeout);
    m.retry_cnt = has(bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT).then_some(attr.retry_cnt);
    m.rnr_retry = has(bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY).then_some(attr.rnr_retry);
    m.min_rnr_timer =
        has(bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER).then_some(attr.min_rnr_timer);
    m.max_rd_atomic =
        has(bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC).then_some(attr.max_rd_atomic);
    m.max_dest_rd_atomic =
        has(bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC).then_some(attr.max_dest_rd_atomic);
    m.qkey = has(bindings::ib_qp_attr_mask_IB_QP_QKEY).then_some(attr.qkey);
    m.alt_path = has(bindings::ib_qp_attr_mask_IB_QP_ALT_PATH);
    Ok(m)
}

/// Routes the core's calls on QPs to the [`QpOps`] of `Q`.
///
/// # Invariants
///
/// Its ops are only in the tables that [`Self::ops`]' contract allows, so every
/// QP they are called on carries a `Q`, its CQs `Q::Cq`s and its SRQ a
/// `Q::Srq`, on a device whose data is a `Q::Device`.
pub(super) struct QpAdapter<Q>(PhantomData<Q>);

// SAFETY: by the type invariant its ops are only in tables of a driver
// whose device data is a `Q::Device`.
unsafe impl<Q: QpOps> OnDevice for QpAdapter<Q> {
    type Device = Q::Device;
}

impl<Q: QpOps> QpAdapter<Q> {
    /// `ops` with the QP verbs of `Q`.
    ///
    /// # Safety
    ///
    /// The table is set only on devices whose data is a
    /// `DeviceData<Q::Device>`, every QP of them comes from these ops,
    /// and every CQ and SRQ from the ops of `Q::Cq` and `Q::Srq`.
    pub(super) const unsafe fn ops(ops: bindings::ib_device_ops) -> bindings::ib_device_ops {
        bindings::ib_device_ops {
            create_qp: Some(Self::create_qp),
            modify_qp: Some(Self::modify_qp),
            query_qp: Some(Self::query_qp),
            destroy_qp: Some(Self::destroy_qp),
            post_send: Some(Self::post_send),
            post_recv: Some(Self::post_recv),
            size_ib_qp: QpObject::<Q>::SIZE,
            ..ops
        }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.create_qp`.
    unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes a QP allocated with `size_ib_qp` bytes,
            // its device, PD and CQs set, and a valid `init`.
            unsafe {
                let init = &mut *init;
                let qp_type = QpType::from_c(init.qp_type).ok_or_else(eopnotsupp)?;
                if init.create_flags != 0 {
                    return Err(eopnotsupp());
                }
                let (Some(send_cq), Some(recv_cq)) =
                    (CqRef::from_raw(init.send_cq), CqRef::from_raw(init.recv_cq))
                else {
                    return Err(EINVAL);
                };
                // The QP's notifier holds it from now on.
                QpObject::<Q>::init_head(qp);
                let attr = QpInitAttr {
                    id: QpId::new(qp).ok_or(EINVAL)?,
                    pd: PdId::new((*qp).pd),
                    qp_type,
                    cap: QpCap::from_c(&init.cap),
                    sq_sig_all: init.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
                    send_cq,
                    recv_cq,
                    // The core checked the SRQ is ours and holds it while
                    // the QP exists.
                    srq: srq::data_of::<Q::Srq>(init.srq),
                    // The core set the QP up before calling us.
                    notifier: QpNotifier::new(qp).ok_or(EINVAL)?,
                    user: !udata.is_null(),
                };
                let dev = Self::device((*qp).device);
                let (qpn, cap, data) = Q::create(dev, attr).inspect_err(|_| {
                    // The core frees the QP on failure: whatever the driver
                    // kept of it goes first.
                    QpObject::<Q>::wait_unheld(qp);
                })?;
                let Ok(()) = QpObject::<Q>::init_data(qp, data);
                // Completions may name the QP from now on: on failure
                // above none can, and the core frees the QP at once.
                CoreHead::of(qp).cqes().open();
                (*qp).qp_num = qpn.get();
                cap.write_to(&mut init.cap);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.modify_qp`.
    unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: ffi::c_int,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `qp` is a live QP of ours and `attr` is valid.
            unsafe {
                let m = parse_modify(&*attr, mask as u32, (*qp).qp_type)?;
                let dev = Self::device((*qp).device);
                QpObject::<Q>::data(qp).modify(dev, &m)?;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_qp`.
    unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `qp` is a live QP of ours; `attr` and `init` are valid
            // for writes, and all-zero is a valid value of both.
            unsafe {
                let dev = Self::device((*qp).device);
                let q = QpObject::<Q>::data(qp).query(dev)?;
                // uverbs hands over kmalloc'ed buffers: what is not written
                // below (pkey_index, alternate path, ...) must read as 0,
                // not as old heap.
                ptr::write_bytes(attr, 0, 1);
                ptr::write_bytes(init, 0, 1);
                let (attr, init) = (&mut *attr, &mut *init);
                let state = q.state.ok_or(EINVAL)?.to_c();
                attr.qp_state = state;
                attr.cur_qp_state = state;
                attr.path_mtu = q.path_mtu.map_or(0, Mtu::to_c);
                attr.qp_access_flags = q.access_flags.bits() as i32;
                attr.dest_qp_num = q.dest_qpn.get();
                attr.rq_psn = q.rq_psn;
                attr.sq_psn = q.sq_psn;
                attr.timeout = q.timeout;
                attr.retry_cnt = q.retry_cnt;
                attr.rnr_retry = q.rnr_retry;
                attr.min_rnr_timer = q.min_rnr_timer;
                attr.max_rd_atomic = q.max_rd_atomic;
                attr.max_dest_rd_atomic = q.max_dest_rd_atomic;
                attr.qkey = q.qkey;
                attr.sq_draining = u8::from(q.sq_draining);
                attr.port_num = 1;
                let roce =
                    DeviceObject::<Q::Device>::data((*qp).device).link_layer == LinkLayer::Ethernet;
                q.av.write_to(&mut attr.ah_attr, roce);
                q.cap.write_to(&mut attr.cap);
                q.cap.write_to(&mut init.cap);
                init.qp_type = (*qp).qp_type;
                init.send_cq = (*qp).send_cq;
                init.recv_cq = (*qp).recv_cq;
                init.sq_sig_type = if q.sq_sig_all {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR
                } else {
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR
                };
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.destroy_qp`.
    unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `qp` was initialised by `create_qp`. The core frees it
        // after this returns 0, so every reference to it goes first:
        // completions naming it (purged, and their count must then be
        // empty), the driver's data and its holds (`drop_data` waits for
        // them). On an error the core keeps the QP and may call this again.
        // Its CQs are live and ours: the core holds them until after this
        // returns.
        unsafe {
            let cqes = CoreHead::of(qp).cqes();
            // Closed: a destroy that failed below ran the driver's already.
            if !cqes.is_closed() {
                let dev = Self::device((*qp).device);
                QpObject::<Q>::data(qp).destroy(dev);
                cqes.close();
            }
            // uverbs reads `wc->qp` of every completion it polls, kernel
            // consumers use it too.
            let name = QpName::new(CoreHead::of(qp));
            let (send_cq, recv_cq) = ((*qp).send_cq, (*qp).recv_cq);
            cq::data_of::<Q::Cq>(send_cq).purge(name);
            if recv_cq != send_cq {
                cq::data_of::<Q::Cq>(recv_cq).purge(name);
            }
            if !cqes.is_empty() {
                pr_err!(
                    "QP {:#x}: a completion survived its purge; not destroyed\n",
                    (*qp).qp_num
                );
                return EBUSY.to_errno();
            }
            QpObject::<Q>::drop_data(qp);
        }
        0
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.post_send`.
    unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> ffi::c_int {
        // SAFETY: `qp` is a live QP of ours.
        let (qp_type, user) = unsafe { ((*qp).qp_type, !(*qp).uobject.is_null()) };
        let datagram = QpType::from_c(qp_type).is_some_and(QpType::is_datagram);
        // SAFETY: the core passes a NULL-terminated list of valid WRs that
        // lives across this call, each in the container its opcode names
        // (`ib_ud_wr`s on a UD or GSI QP, whose AHs are live for the call
        // and of the QP's device: uverbs looks them up in the QP's context,
        // a kernel consumer uses its QP's device), with `num_sge` SGEs.
        // `wrs` does not outlive the call.
        let mut wrs = unsafe { SendWrs::new(wr, datagram, user) };
        // SAFETY: `qp` is a live QP of ours.
        let ret = unsafe {
            let dev = Self::device((*qp).device);
            QpObject::<Q>::data(qp).post_send(dev, &mut wrs)
        };
        // SAFETY: the core passes a writable (or NULL) `bad_wr`.
        unsafe { wrs.finish(ret, bad_wr) }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.post_recv`.
    unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> ffi::c_int {
        // SAFETY: the core passes a NULL-terminated list of valid WRs with
        // `num_sge` SGEs each, live across this call, which `wrs` does not
        // outlive.
        let mut wrs = unsafe { RecvWrs::new(wr, false, false) };
        // SAFETY: `qp` is a live QP of ours.
        let ret = unsafe {
            let dev = Self::device((*qp).device);
            QpObject::<Q>::data(qp).post_recv(dev, &mut wrs)
        };
        // SAFETY: the core passes a writable (or NULL) `bad_wr`.
        unsafe { wrs.finish(ret, bad_wr) }
    }
}
