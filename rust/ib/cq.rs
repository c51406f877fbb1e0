// SPDX-License-Identifier: GPL-2.0

//! Completion queues: creation attributes, work completions as the driver
//! produces them, and the handle through which it raises CQ events.

use super::{
    bindings,
    compat::{with_resize_cq, ResizeCq},
    device_data::OnDevice,
    eopnotsupp,
    event::Notifier,
    hold::Hold,
    ids::{Key, QpNum},
    object::CoreObject,
    qp_name::{QpName, WcQp},
    res::{fill_driver_attrs, DriverAttrs},
};
use core::marker::PhantomData;
use kernel::{
    error::{from_result, VTABLE_DEFAULT_ERROR},
    ffi,
    prelude::*,
};

/// What a consumer asked for in `create_cq`.
pub(crate) struct CqAttr {
    /// Minimum number of entries.
    pub(crate) cqe: u32,
    pub(crate) comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN`: a full CQ overwrites instead of
    /// failing.
    pub(crate) ignore_overrun: bool,
}

/// How a CQ is armed (`enum ib_cq_notify_flags`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CqArm {
    Solicited,
    NextCompletion,
}

/// Completion status (`enum ib_wc_status`), the ones rsoft produces.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WcStatus {
    Success,
    LocalLength,
    LocalProtection,
    WrFlush,
    RemoteInvalidRequest,
    RemoteAccess,
    RemoteOperation,
    RetryExceeded,
    RnrRetryExceeded,
    LocalQpOperation,
}

impl WcStatus {
    fn to_c(self) -> bindings::ib_wc_status {
        match self {
            Self::Success => bindings::ib_wc_status_IB_WC_SUCCESS,
            Self::LocalLength => bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
            Self::LocalProtection => bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
            Self::WrFlush => bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            Self::RemoteInvalidRequest => bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
            Self::RemoteAccess => bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
            Self::RemoteOperation => bindings::ib_wc_status_IB_WC_REM_OP_ERR,
            Self::RetryExceeded => bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
            Self::RnrRetryExceeded => bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
            Self::LocalQpOperation => bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        }
    }
}

/// The operation a completion reports (`enum ib_wc_opcode`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum WcOpcode {
    Send,
    RdmaWrite,
    RdmaRead,
    CompareSwap,
    FetchAdd,
    Recv,
    RecvRdmaWithImm,
    RegMr,
    LocalInv,
}

/// What a completion's `ex` union carries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum WcEx {
    None,
    /// Immediate data as sent (network byte order).
    Imm(u32),
    /// The key a SEND_WITH_INV invalidated at the receiver.
    Invalidated(Key),
}

/// One work completion.
///
/// For an error completion only `wr_id`, `status`, `qp` and `vendor_err`
/// mean anything (the rest is what the producer had, not a promise).
pub(crate) struct Wc {
    pub(crate) wr_id: u64,
    pub(crate) qp: WcQp,
    pub(crate) status: WcStatus,
    pub(crate) opcode: WcOpcode,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    pub(crate) ex: WcEx,
    pub(crate) src_qp: QpNum,
    pub(crate) slid: u16,
    /// UD: what the first 40 bytes of the receive buffer hold.
    pub(crate) grh: RecvGrh,
}

/// The header a UD receive finds in the first 40 bytes of its buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecvGrh {
    /// None was sent: the bytes are undefined.
    Absent,
    /// A GRH on an InfiniBand port.
    Ib,
    /// RoCE v1: a GRH.
    RoceV1,
    /// RoCE v2 over IPv4: an IPv4 header in the last 20 bytes.
    Ipv4,
    /// RoCE v2 over IPv6: an IPv6 header.
    Ipv6,
}

// A CQ ring stores these: keep them small (Documentation/rsoft.rst).
const _: () = assert!(core::mem::size_of::<Wc>() <= 48);

impl Wc {
    /// A placeholder for storage that holds no completion.
    pub(crate) const EMPTY: Self = Self {
        wr_id: 0,
        qp: WcQp::NONE,
        status: WcStatus::Success,
        opcode: WcOpcode::Send,
        vendor_err: 0,
        byte_len: 0,
        ex: WcEx::None,
        src_qp: QpNum::new(0),
        slid: 0,
        grh: RecvGrh::Absent,
    };
}

impl Default for Wc {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// The consumer's array of `ib_wc` that `poll_cq` fills.
///
/// # Invariants
///
/// `wc` points to at least `room + filled` writable `ib_wc`s.
pub(crate) struct WcSink<'a> {
    wc: *mut bindings::ib_wc,
    room: usize,
    filled: usize,
    _array: PhantomData<&'a mut [bindings::ib_wc]>,
}

impl WcSink<'_> {
    /// How many more completions fit.
    pub(crate) fn room(&self) -> usize {
        self.room
    }

    /// Writes the next completion; ignored when there is no room, or when
    /// it names no QP (one made after its QP's destroy began).
    pub(crate) fn push(&mut self, wc: Wc) {
        if self.room == 0 {
            return;
        }
        // The QP is live: its destroy cannot return while a name of it is
        // counted, as `wc.qp` was until now. From here on it is the
        // consumer's business, as is the QP's destroy.
        let Some(qp) = wc.qp.into_ptr() else {
            return;
        };
        // SAFETY: by the invariant slot `filled` is writable.
        let c = unsafe { &mut *self.wc.add(self.filled) };
        c.__bindgen_anon_1.wr_id = wc.wr_id;
        c.status = wc.status.to_c();
        c.opcode = match wc.opcode {
            WcOpcode::Send => bindings::ib_wc_opcode_IB_WC_SEND,
            WcOpcode::RdmaWrite => bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
            WcOpcode::RdmaRead => bindings::ib_wc_opcode_IB_WC_RDMA_READ,
            WcOpcode::CompareSwap => bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
            WcOpcode::FetchAdd => bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
            WcOpcode::Recv => bindings::ib_wc_opcode_IB_WC_RECV,
            WcOpcode::RecvRdmaWithImm => bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
            WcOpcode::RegMr => bindings::ib_wc_opcode_IB_WC_REG_MR,
            WcOpcode::LocalInv => bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        };
        c.vendor_err = wc.vendor_err;
        c.byte_len = wc.byte_len;
        c.qp = qp;
        let (ex, flags) = match wc.ex {
            WcEx::None => (0, 0),
            WcEx::Imm(imm) => (imm, bindings::ib_wc_flags_IB_WC_WITH_IMM),
            WcEx::Invalidated(key) => (key.get(), bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE),
        };
        c.ex.imm_data = ex;
        c.src_qp = wc.src_qp.get();
        c.slid = wc.slid.into();
        // Only GRH, WITH_IMM (and WITH_NETWORK_HDR_TYPE, which uverbs drops)
        // mean the same to the kernel and libibverbs; WITH_INVALIDATE
        // reaches kernel consumers only (only they have keys that can be
        // invalidated).
        let network = match wc.grh {
            RecvGrh::Absent | RecvGrh::Ib => None,
            RecvGrh::RoceV1 => Some(bindings::rdma_network_type_RDMA_NETWORK_ROCE_V1),
            RecvGrh::Ipv4 => Some(bindings::rdma_network_type_RDMA_NETWORK_IPV4),
            RecvGrh::Ipv6 => Some(bindings::rdma_network_type_RDMA_NETWORK_IPV6),
        };
        let flag = |set: bool, bit: u32| if set { bit } else { 0 };
        c.wc_flags = (flags
            | flag(wc.grh != RecvGrh::Absent, bindings::ib_wc_flags_IB_WC_GRH)
            | flag(
                network.is_some(),
                bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE,
            )) as i32;
        c.network_hdr_type = network.unwrap_or(0) as u8;
        c.pkey_index = 0;
        c.sl = 0;
        c.dlid_path_bits = 0;
        // uverbs indexes the port array with it; 1 is rsoft's only port.
        c.port_num = 1;
        self.room -= 1;
        self.filled += 1;
    }
}

/// The verbs of a driver's completion queues; `Self` is the driver's data
/// behind each `ib_cq`.
#[vtable]
pub(crate) trait CqOps: Send + Sync + Sized {
    /// The driver's per-device state.
    type Device;

    /// A new CQ; returns its real capacity (at least `attr.cqe`).
    fn create(dev: &Self::Device, attr: &CqAttr) -> Result<(u32, impl PinInit<Self>)>;
    /// Quiesces the CQ before it is dropped: no event may be in flight after.
    fn destroy(self: Pin<&Self>, dev: &Self::Device);
    /// Moves up to `out.room()` completions into `out`, oldest first.
    fn poll(&self, out: &mut WcSink<'_>) -> Result;
    /// Arms the CQ for one event; returns whether completions are waiting.
    fn req_notify(&self, arm: CqArm) -> bool;
    /// Removes every completion naming `qp` ([`WcQp::is`]): the QP is
    /// gone. `destroy_qp` fails if one is left anywhere.
    fn purge(&self, qp: QpName<'_>);
    /// Resizes the CQ keeping its completions; returns the real capacity.
    /// Optional.
    fn resize(&self, _dev: &Self::Device, _cqe: u32) -> Result<u32> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Driver attributes for `rdma res show cq -d`. Optional.
    fn fill_res(&self, _attrs: &mut DriverAttrs<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A hold on a CQ whose driver data is a `C`: a QP's hold on its CQs, or a
/// pending event's. The CQ's destroy verb waits until every hold is dropped
/// before it drops the driver's data.
///
/// # Invariants
///
/// `hold` holds a CQ created with initialised data of type `C`.
pub(crate) struct CqRef<C> {
    hold: Hold<bindings::ib_cq>,
    _data: PhantomData<fn() -> C>,
}

impl<C> Clone for CqRef<C> {
    fn clone(&self) -> Self {
        // INVARIANT: the same CQ.
        Self {
            hold: self.hold.clone(),
            _data: PhantomData,
        }
    }
}

impl<C: Sync> CqRef<C> {
    /// # Safety
    ///
    /// `cq` is NULL or a live CQ whose driver data, of type `C`, is
    /// initialised.
    pub(super) unsafe fn from_raw(cq: *mut bindings::ib_cq) -> Option<Self> {
        // SAFETY: per the function's contract; the CQ's destroy has not
        // started, as it is live.
        let hold = unsafe { Hold::new(cq) }?;
        // INVARIANT: per the function's contract.
        Some(Self {
            hold,
            _data: PhantomData,
        })
    }

    /// The driver's data of this CQ.
    pub(crate) fn data(&self) -> Pin<&C> {
        // SAFETY: by the type invariant the data was initialised as a `C`,
        // and `destroy_cq` drops it only once no hold is left.
        unsafe { CoreObject::<bindings::ib_cq, C>::data(self.hold.as_ptr()) }
    }

    /// Calls the consumer's completion handler. Never with a CQ lock held.
    pub(crate) fn completion_event(&self) {
        let cq = self.hold.as_ptr();
        // SAFETY: the CQ is held; the core set `comp_handler` and
        // `cq_context` before `create_cq` and never changes them.
        unsafe {
            if let Some(handler) = (*cq).comp_handler {
                handler(cq, (*cq).cq_context);
            }
        }
    }

    /// Raises `IB_EVENT_CQ_ERR`. Never with a CQ lock held.
    pub(crate) fn error_event(&self) {
        Notifier::from_hold(self.hold.clone()).raise(bindings::ib_event_type_IB_EVENT_CQ_ERR);
    }
}

type CqObject<C> = CoreObject<bindings::ib_cq, C>;

/// The driver's data of a CQ.
///
/// # Safety
///
/// `cq` is a live CQ whose data, a `C`, is initialised, and stays so for
/// `'a`.
pub(super) unsafe fn data_of<'a, C>(cq: *mut bindings::ib_cq) -> Pin<&'a C> {
    // SAFETY: per the function's contract.
    unsafe { CqObject::<C>::data(cq) }
}

/// `create_cq` flags rsoft knows; TIMESTAMP_COMPLETION is not supported.
const IGNORE_OVERRUN: u32 =
    bindings::ib_uverbs_ex_create_cq_flags_IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN;

/// Routes the core's calls on CQs to the [`CqOps`] of `C`.
///
/// # Invariants
///
/// Its ops are only in the tables that [`Self::ops`]' contract allows, so every
/// CQ they are called on carries a `C`, on a device whose data is a
/// `C::Device`.
pub(super) struct CqAdapter<C>(PhantomData<C>);

// SAFETY: by the type invariant its ops are only in tables of a driver
// whose device data is a `C::Device`.
unsafe impl<C: CqOps> OnDevice for CqAdapter<C> {
    type Device = C::Device;
}

impl<C: CqOps> CqAdapter<C> {
    /// `ops` with the CQ verbs of `C`.
    ///
    /// # Safety
    ///
    /// The table is set only on devices whose data is a
    /// `DeviceData<C::Device>`, and every CQ of them comes from these ops.
    pub(super) const unsafe fn ops(ops: bindings::ib_device_ops) -> bindings::ib_device_ops {
        let ops = bindings::ib_device_ops {
            create_cq: Some(Self::create_cq),
            destroy_cq: Some(Self::destroy_cq),
            poll_cq: Some(Self::poll_cq),
            req_notify_cq: Some(Self::req_notify_cq),
            fill_res_cq_entry: if C::HAS_FILL_RES {
                Some(Self::fill_res_cq_entry)
            } else {
                None
            },
            size_ib_cq: CqObject::<C>::SIZE,
            ..ops
        };
        with_resize_cq::<Self>(ops, C::HAS_RESIZE)
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.create_cq`.
    unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes a valid attr and a CQ allocated with
            // `size_ib_cq` bytes whose `device` is ours.
            unsafe {
                let attr = &*attr;
                if attr.flags & !IGNORE_OVERRUN != 0 {
                    return Err(eopnotsupp());
                }
                let attr = CqAttr {
                    cqe: attr.cqe,
                    comp_vector: attr.comp_vector,
                    ignore_overrun: attr.flags & IGNORE_OVERRUN != 0,
                };
                let dev = Self::device((*cq).device);
                let (capacity, init) = C::create(dev, &attr)?;
                (*cq).cqe = capacity.try_into()?;
                let Ok(()) = CqObject::<C>::init(cq, init);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.destroy_cq`.
    unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `cq` was initialised by `create_cq`; no QP uses it (the
        // core checked); once its holders are gone nothing reaches the data
        // (`CqRef::data`), and the core frees the memory after this returns.
        unsafe {
            CqObject::<C>::wait_unheld(cq);
            CqObject::<C>::data(cq).destroy(Self::device((*cq).device));
            CqObject::<C>::drop_data(cq);
        }
        0
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.poll_cq`.
    unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        num_entries: ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> ffi::c_int {
        from_result(|| {
            // INVARIANT: the core passes `num_entries` writable `ib_wc`s.
            let mut sink = WcSink {
                wc,
                room: num_entries.try_into().unwrap_or(0),
                filled: 0,
                _array: PhantomData,
            };
            // SAFETY: `cq` is a live CQ of ours.
            let data = unsafe { CqObject::<C>::data(cq) };
            data.poll(&mut sink)?;
            Ok(sink.filled.try_into()?)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.req_notify_cq`.
    unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> ffi::c_int {
        let arm = if flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED
        {
            CqArm::Solicited
        } else {
            CqArm::NextCompletion
        };
        // SAFETY: `cq` is a live CQ of ours.
        let data = unsafe { CqObject::<C>::data(cq) };
        let waiting = data.req_notify(arm);
        let report = flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
        (report && waiting).into()
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.fill_res_cq_entry`.
    unsafe extern "C" fn fill_res_cq_entry(
        msg: *mut bindings::sk_buff,
        cq: *mut bindings::ib_cq,
    ) -> ffi::c_int {
        // SAFETY: the core holds a reference on the live CQ.
        let data = unsafe { CqObject::<C>::data(cq) };
        // SAFETY: the core passes the message it is building.
        unsafe { fill_driver_attrs(msg, |attrs| data.fill_res(attrs)) }
    }
}

impl<C: CqOps> ResizeCq for CqAdapter<C> {
    unsafe fn resize_cq(cq: *mut bindings::ib_cq, cqe: u32) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `cq` is a live CQ of ours; the core serialises resize
            // with other calls that change `cqe`.
            unsafe {
                let dev = Self::device((*cq).device);
                let data = CqObject::<C>::data(cq);
                let capacity = data.resize(dev, cqe)?;
                (*cq).cqe = capacity.try_into()?;
            }
            Ok(0)
        })
    }
}
