// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation and modify attributes, and safe views of the work
//! request lists that `post_send` and `post_recv` receive.

use super::{
    ah::{self, Address},
    attr::{LinkLayer, Mtu},
    bindings,
    compat::user_slice,
    cq::{self, CqOps, CqRef},
    device::DeviceObject,
    eopnotsupp,
    event::Notifier,
    hold::Hold,
    ids::{Key, QpNum},
    mr::{Access, MrId},
    object::{CoreHead, CoreObject},
    srq,
    verbs::Adapter,
    Verbs,
};
use core::{marker::PhantomData, ptr, ptr::NonNull};
use kernel::{error::from_result, ffi, prelude::*};

/// The driver's handle of one of its QPs, from which it names the QP in
/// work completions ([`QpId::name`]). It holds the QP: the QP's destroy
/// waits until it is dropped.
pub(crate) struct QpId {
    hold: Hold<bindings::ib_qp>,
}

impl QpId {
    /// A name of the QP for one work completion.
    ///
    /// Once the QP's destroy has removed it from the driver
    /// ([`QpOps::destroy`]), a completion made of it could only be one the
    /// driver failed to purge: the name names no QP then, and the `ib`
    /// layer never reports the completion.
    pub(crate) fn name(&self) -> WcQp {
        let head = self.hold.head();
        if !head.cqes().enter() {
            return WcQp(None);
        }
        // INVARIANT: counted just now, on a QP that the hold keeps.
        WcQp(Some(self.hold.head_ptr()))
    }
}

/// Names a QP in one work completion (`ib_wc.qp`), for the time the
/// completion is queued in the driver.
///
/// Each name is counted on its QP from [`QpId::name`] until the `ib` layer
/// writes it into the consumer's `ib_wc` at poll, or it is dropped (purged,
/// overwritten, or its CQ destroyed). `destroy_qp` has the driver purge the
/// QP's completions and then lets the core free the QP only if none is
/// left; if one is, it fails the destroy rather than free a QP that a
/// later poll would hand to the consumer. So whatever the driver's safe
/// code does with its completions, none it reports names a freed QP, and
/// a correct purge keeps the destroy from ever failing or waiting for the
/// consumer. It costs an uncontended atomic increment when a completion is
/// made and a decrement when it is polled, and nothing in the ring: a name
/// is one pointer, as before. The alternative, an `ib` layer's own ring
/// that it purges itself, would still leave a copyable name in the hands
/// of the driver.
///
/// # Invariants
///
/// `0` is `None`, or the head of a QP whose count of completion names
/// counts this one.
pub(crate) struct WcQp(Option<NonNull<CoreHead<bindings::ib_qp>>>);

// SAFETY: a counted pointer to an object that the core shares between
// threads by design; counting is atomic.
unsafe impl Send for WcQp {}
// SAFETY: as for `Send`; a shared name only compares the pointer.
unsafe impl Sync for WcQp {}

impl WcQp {
    /// Names no QP: what a completion's storage holds when unused.
    pub(crate) const NONE: Self = Self(None);

    /// Whether this names `qp`.
    pub(crate) fn is(&self, qp: QpName<'_>) -> bool {
        self.0 == Some(qp.0)
    }

    /// The QP, for the consumer's `ib_wc`; uncounted from now on. `None`
    /// when it names no QP.
    pub(super) fn into_ptr(self) -> Option<*mut bindings::ib_qp> {
        Some(self.0?.as_ptr().cast())
    }
}

impl Drop for WcQp {
    fn drop(&mut self) {
        if let Some(head) = self.0 {
            // SAFETY: by the type invariant the QP counts this name, and
            // the core does not free it while its count is not empty.
            unsafe { head.as_ref() }.cqes().leave();
        }
    }
}

/// The QP whose completions a purge removes ([`CqOps::purge`]): only to
/// compare names with ([`WcQp::is`]), for the length of the call.
#[derive(Clone, Copy)]
pub(crate) struct QpName<'a>(
    NonNull<CoreHead<bindings::ib_qp>>,
    PhantomData<&'a CoreHead<bindings::ib_qp>>,
);

impl<'a> QpName<'a> {
    fn new(head: &'a CoreHead<bindings::ib_qp>) -> Self {
        Self(NonNull::from(head), PhantomData)
    }
}

/// Raises the events of one QP.
pub(crate) type QpNotifier = Notifier<bindings::ib_qp>;

impl QpNotifier {
    /// Raises `IB_EVENT_QP_LAST_WQE_REACHED`: a QP on an SRQ, now in the
    /// error state, will take no more receives from it (`ib_drain_qp`
    /// waits for this).
    pub(crate) fn last_wqe_reached(&self) {
        self.raise(bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }
}

/// Names a protection domain; objects may be used together only within one.
///
/// Only an identity, never dereferenced, made only by the `ib` layer from
/// the PD of a live QP, SRQ or MR (or a rereg's new PD). It can never be
/// compared stale: the core counts every object on its PD (`usecnt`) and
/// refuses to free a PD that one still uses, and the driver keeps a PD's
/// name only in that object's data (a QP's, an SRQ's, an MR's table
/// entry), which goes before the object does. So two names are equal
/// exactly when they name the same live PD.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct PdId(usize);

impl PdId {
    pub(super) fn new(pd: *const bindings::ib_pd) -> Self {
        Self(pd as usize)
    }
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
    /// Each send names its destination (UD and GSI).
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
    type Cq;
    /// The driver's data of an SRQ.
    type Srq;

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
    /// ([`super::CqOps::purge`]), and a completion made of it after this
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
}

/// One scatter/gather element (`struct ib_sge`).
#[repr(transparent)]
pub(crate) struct Sge(bindings::ib_sge);

impl Sge {
    pub(crate) fn addr(&self) -> u64 {
        self.0.addr
    }
    pub(crate) fn length(&self) -> u32 {
        self.0.length
    }
    pub(crate) fn lkey(&self) -> Key {
        Key::new(self.0.lkey)
    }
}

/// Builds the SGE slice of a work request.
///
/// # Safety
///
/// `list` points to `num` valid `ib_sge`s (or `num <= 0`), live for `'a`.
unsafe fn sges<'a>(list: *const bindings::ib_sge, num: ffi::c_int) -> Result<&'a [Sge]> {
    let num = usize::try_from(num).map_err(|_| EINVAL)?;
    if num == 0 || list.is_null() {
        return Ok(&[]);
    }
    // SAFETY: per the contract; `Sge` is `repr(transparent)` over `ib_sge`.
    Ok(unsafe { core::slice::from_raw_parts(list.cast::<Sge>(), num) })
}

/// Where an RDMA or atomic operation lands on the responder.
#[derive(Clone, Copy)]
pub(crate) struct Remote {
    pub(crate) addr: u64,
    pub(crate) rkey: Key,
}

/// What a send work request asks the responder for.
#[derive(Clone, Copy)]
pub(crate) enum SendOp {
    Send,
    RdmaWrite(Remote),
    RdmaRead(Remote),
    CompareSwap {
        remote: Remote,
        compare: u64,
        swap: u64,
    },
    FetchAdd {
        remote: Remote,
        add: u64,
    },
    /// Executed by the requester alone, on its device's MRs.
    Local(LocalOp),
}

/// A work request that goes nowhere: it changes an MR of the device.
#[derive(Clone, Copy)]
pub(crate) enum LocalOp {
    /// Registers a fast-registration MR (`IB_WR_REG_MR`).
    RegMr(FastReg),
    /// Invalidates the MR this key names (`IB_WR_LOCAL_INV`).
    Invalidate(Key),
}

/// What an `IB_WR_REG_MR` registers: the MR `mr` (the one whose keys are
/// `mr_key` now) under the new key `key`, at `iova`, with `access`. The
/// pages are those its last `map_mr_sg` stored.
#[derive(Clone, Copy)]
pub(crate) struct FastReg {
    pub(crate) mr: MrId,
    pub(crate) mr_key: Key,
    pub(crate) key: Key,
    pub(crate) iova: u64,
    pub(crate) access: Access,
}

/// Where a UD send goes (`struct ib_ud_wr`), copied out of the address
/// handle when posted.
#[derive(Clone, Copy)]
pub(crate) struct Datagram {
    pub(crate) address: Address,
    pub(crate) remote_qpn: QpNum,
    pub(crate) remote_qkey: u32,
}

/// One send work request.
pub(crate) struct SendWr<'a> {
    pub(crate) wr_id: u64,
    pub(crate) op: SendOp,
    pub(crate) signaled: bool,
    pub(crate) solicited: bool,
    /// Immediate data, network byte order.
    pub(crate) imm: Option<u32>,
    /// `IB_WR_SEND_WITH_INV`: the responder's key to invalidate.
    pub(crate) invalidate: Option<Key>,
    pub(crate) sges: &'a [Sge],
    /// The destination, on a UD QP.
    pub(crate) datagram: Option<Datagram>,
    /// `IB_SEND_INLINE`: the data is taken from the SGEs' buffers when
    /// posted ([`SendWr::read_inline`]); their lkeys mean nothing.
    pub(crate) inline: bool,
    /// The SGEs' buffers are a process's (a user QP's post, which comes in
    /// that process's system call), not the kernel's.
    user: bool,
}

impl SendWr<'_> {
    /// Copies the data of an inline send into `out` from the poster's
    /// buffers and returns its length: EINVAL when it does not fit,
    /// EFAULT when a buffer cannot be read. Safe whatever the addresses:
    /// user memory is read with `copy_from_user`, kernel memory with
    /// `copy_from_kernel_nofault`.
    pub(crate) fn read_inline(&self, out: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        for sge in self.sges {
            let len = sge.length() as usize;
            let to = out.get_mut(done..done + len).ok_or(EINVAL)?;
            if self.user {
                let addr = usize::try_from(sge.addr()).map_err(|_| EFAULT)?;
                user_slice(addr, len).reader().read_slice(to)?;
            } else {
                // SAFETY: `to` is `len` writable bytes; the source is only
                // probed, a fault yields an error.
                let ret = unsafe {
                    kernel::bindings::copy_from_kernel_nofault(
                        to.as_mut_ptr().cast(),
                        sge.addr() as usize as *const ffi::c_void,
                        len,
                    )
                };
                if ret != 0 {
                    return Err(EFAULT);
                }
            }
            done += len;
        }
        Ok(done)
    }
}

/// One receive work request.
pub(crate) struct RecvWr<'a> {
    pub(crate) wr_id: u64,
    pub(crate) sges: &'a [Sge],
}

/// A list of work requests as the core hands it over; remembers the first
/// one not yet accepted (the head, then the last one yielded), which is what
/// `bad_wr` reports when posting stops: a post refused before its first WR
/// is read names that first WR, as the verbs contract says.
///
/// # Invariants
///
/// `next` is NULL or a WR of a list as the contract of [`WrList::new`]
/// describes it, live for `'a`.
pub(crate) struct WrList<'a, W> {
    next: *const W,
    current: *const W,
    /// The QP is UD: its send WRs are `ib_ud_wr`s.
    datagram: bool,
    /// The QP is a process's: its WRs name user memory.
    user: bool,
    _list: PhantomData<&'a W>,
}

impl<W> WrList<'_, W> {
    /// The list starting at `head`.
    ///
    /// # Safety
    ///
    /// `head` is NULL or the first of a NULL-terminated list of valid WRs
    /// that lives as long as the returned list. A send WR is the first
    /// member of the container its opcode names (`ib_rdma_wr`,
    /// `ib_atomic_wr`, `ib_reg_wr`, the last naming a live MR or none),
    /// and of an `ib_ud_wr` when `datagram`, whose AH, if any, is a live
    /// AH of a device routed by [`Adapter`]. `sg_list` of each WR has
    /// `num_sge` valid entries. (`user` is not part of the contract: the
    /// SGEs' addresses are never trusted, only read with copies that fail
    /// on a bad one.)
    pub(super) unsafe fn new(head: *const W, datagram: bool, user: bool) -> Self {
        // INVARIANT: per the function's contract.
        Self {
            next: head,
            current: head,
            datagram,
            user,
            _list: PhantomData,
        }
    }
}

impl<W> WrList<'_, W> {
    /// Turns the outcome of posting into the errno, pointing `bad_wr` at
    /// the WR that failed.
    ///
    /// # Safety
    ///
    /// `bad_wr` is NULL or writable.
    pub(super) unsafe fn finish(&self, ret: Result, bad_wr: *mut *const W) -> ffi::c_int {
        match ret {
            Ok(()) => 0,
            Err(e) => {
                if !bad_wr.is_null() {
                    // SAFETY: per the function's contract.
                    unsafe { *bad_wr = self.current };
                }
                e.to_errno()
            }
        }
    }
}

impl<'a> Iterator for WrList<'a, bindings::ib_send_wr> {
    type Item = Result<SendWr<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: by the type invariant `next` is NULL or a valid WR, live
        // for `'a`.
        let wr = unsafe { self.next.as_ref()? };
        self.current = self.next;
        self.next = wr.next;
        let flags = wr.send_flags;
        // SAFETY: by the type invariant (the contract of `new`) the WR is
        // the first member of the container its opcode names.
        let (op, ex) = match unsafe { send_op(self.current) } {
            Some(Ok(op)) => op,
            Some(Err(e)) => return Some(Err(e)),
            None => return Some(Err(EINVAL)),
        };
        // SAFETY: by the type invariant `sg_list` has `num_sge` entries,
        // live for `'a`.
        let sges = match unsafe { sges(wr.sg_list, wr.num_sge) } {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: a plain integer union, read as `send_op` says.
        let ex_value = unsafe { wr.ex.imm_data };
        let datagram = if self.datagram {
            // SAFETY: by the type invariant, an `ib_ud_wr` whose AH is
            // live and routed by `Adapter`.
            match unsafe { datagram(self.current) } {
                Some(d) => Some(d),
                None => return Some(Err(EINVAL)),
            }
        } else {
            None
        };
        Some(Ok(SendWr {
            op,
            // SAFETY: for user and wr_id-based kernel WRs this is the id;
            // for `wr_cqe` users it is the pointer, returned as it came.
            wr_id: unsafe { wr.__bindgen_anon_1.wr_id },
            signaled: flags & bindings::ib_send_flags_IB_SEND_SIGNALED != 0,
            solicited: flags & bindings::ib_send_flags_IB_SEND_SOLICITED != 0,
            imm: (ex == Ex::Imm).then_some(ex_value),
            invalidate: (ex == Ex::Invalidate).then_some(Key::new(ex_value)),
            sges,
            datagram,
            inline: flags & bindings::ib_send_flags_IB_SEND_INLINE != 0,
            user: self.user,
        }))
    }
}

impl<'a> Iterator for WrList<'a, bindings::ib_recv_wr> {
    type Item = Result<RecvWr<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: as for send WRs.
        let wr = unsafe { self.next.as_ref()? };
        self.current = self.next;
        self.next = wr.next;
        // SAFETY: by the type invariant `sg_list` has `num_sge` entries,
        // live for `'a`.
        let sges = match unsafe { sges(wr.sg_list, wr.num_sge) } {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(RecvWr {
            // SAFETY: as for send WRs.
            wr_id: unsafe { wr.__bindgen_anon_1.wr_id },
            sges,
        }))
    }
}

/// Reads the destination of a UD send WR.
///
/// # Safety
///
/// `wr` is the first member of a valid `ib_ud_wr` whose AH, if any, is a
/// live AH of a device routed by [`Adapter`].
unsafe fn datagram(wr: *const bindings::ib_send_wr) -> Option<Datagram> {
    // SAFETY: per the function's contract.
    let ud = unsafe { &*wr.cast::<bindings::ib_ud_wr>() };
    Some(Datagram {
        // SAFETY: per the function's contract.
        address: *unsafe { ah::address(ud.ah) }?,
        remote_qpn: QpNum::new(ud.remote_qpn),
        remote_qkey: ud.remote_qkey,
    })
}

/// What the `ex` union of a send WR holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ex {
    None,
    /// `imm_data`.
    Imm,
    /// `invalidate_rkey`, of a SEND_WITH_INV.
    Invalidate,
}

/// Reads the operation of a send WR and what its `ex` union holds; `None`
/// for an opcode rsoft does not implement.
///
/// # Safety
///
/// `wr` is valid and, for RDMA, atomic and REG_MR opcodes, the first
/// member of an `ib_rdma_wr`, `ib_atomic_wr` or `ib_reg_wr` respectively,
/// the last naming a live MR (or none).
unsafe fn send_op(wr: *const bindings::ib_send_wr) -> Option<Result<(SendOp, Ex)>> {
    // SAFETY: per the function's contract.
    let (opcode, ex) = unsafe { ((*wr).opcode, (*wr).ex.invalidate_rkey) };
    let rdma = || {
        // SAFETY: per the function's contract, for the RDMA opcodes.
        let r = unsafe { &*wr.cast::<bindings::ib_rdma_wr>() };
        Remote {
            addr: r.remote_addr,
            rkey: Key::new(r.rkey),
        }
    };
    let atomic = || {
        // SAFETY: per the function's contract, for the atomic opcodes.
        let a = unsafe { &*wr.cast::<bindings::ib_atomic_wr>() };
        let remote = Remote {
            addr: a.remote_addr,
            rkey: Key::new(a.rkey),
        };
        (remote, a.compare_add, a.swap)
    };
    let reg = || {
        // SAFETY: per the function's contract, for REG_MR.
        let (r, mr) = unsafe {
            let r = &*wr.cast::<bindings::ib_reg_wr>();
            (r, r.mr.as_ref().ok_or(EINVAL)?)
        };
        Ok(FastReg {
            mr: MrId::new(r.mr),
            mr_key: Key::new(mr.lkey),
            key: Key::new(r.key),
            iova: mr.iova,
            access: Access::from_request(r.access as u32)?,
        })
    };
    Some(Ok(match opcode {
        bindings::ib_wr_opcode_IB_WR_SEND => (SendOp::Send, Ex::None),
        bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM => (SendOp::Send, Ex::Imm),
        bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV => (SendOp::Send, Ex::Invalidate),
        bindings::ib_wr_opcode_IB_WR_RDMA_WRITE => (SendOp::RdmaWrite(rdma()), Ex::None),
        bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => (SendOp::RdmaWrite(rdma()), Ex::Imm),
        bindings::ib_wr_opcode_IB_WR_RDMA_READ => (SendOp::RdmaRead(rdma()), Ex::None),
        bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => {
            let (remote, compare, swap) = atomic();
            let op = SendOp::CompareSwap {
                remote,
                compare,
                swap,
            };
            (op, Ex::None)
        }
        bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
            let (remote, add, _) = atomic();
            (SendOp::FetchAdd { remote, add }, Ex::None)
        }
        bindings::ib_wr_opcode_IB_WR_LOCAL_INV => {
            (SendOp::Local(LocalOp::Invalidate(Key::new(ex))), Ex::None)
        }
        bindings::ib_wr_opcode_IB_WR_REG_MR => match reg() {
            Ok(reg) => (SendOp::Local(LocalOp::RegMr(reg)), Ex::None),
            Err(e) => return Some(Err(e)),
        },
        _ => return None,
    }))
}

/// A send work request list.
pub(crate) type SendWrs<'a> = WrList<'a, bindings::ib_send_wr>;
/// A receive work request list.
pub(crate) type RecvWrs<'a> = WrList<'a, bindings::ib_recv_wr>;

type QpObject<T> = CoreObject<bindings::ib_qp, <T as Verbs>::Qp>;

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

impl<T: Verbs> Adapter<T> {
    pub(super) const QP_SIZE: usize = QpObject::<T>::SIZE;

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.create_qp`.
    pub(super) unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes a QP allocated with `size_ib_qp` bytes,
            // its device, PD and CQs set, and a valid `init`.
            unsafe {
                let init = &mut *init;
                let qp_type = match init.qp_type {
                    bindings::ib_qp_type_IB_QPT_RC => QpType::Rc,
                    bindings::ib_qp_type_IB_QPT_UC => QpType::Uc,
                    bindings::ib_qp_type_IB_QPT_UD => QpType::Ud,
                    bindings::ib_qp_type_IB_QPT_GSI => QpType::Gsi,
                    _ => return Err(eopnotsupp()),
                };
                if init.create_flags != 0 {
                    return Err(eopnotsupp());
                }
                let (Some(send_cq), Some(recv_cq)) =
                    (CqRef::from_raw(init.send_cq), CqRef::from_raw(init.recv_cq))
                else {
                    return Err(EINVAL);
                };
                // The QP's notifier holds it from now on.
                QpObject::<T>::init_head(qp);
                let attr = QpInitAttr {
                    id: QpId {
                        hold: Hold::new(qp).ok_or(EINVAL)?,
                    },
                    pd: PdId::new((*qp).pd),
                    qp_type,
                    cap: QpCap::from_c(&init.cap),
                    sq_sig_all: init.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
                    send_cq,
                    recv_cq,
                    // The core checked the SRQ is ours and holds it while
                    // the QP exists.
                    srq: srq::data_of::<T>(init.srq),
                    // The core set the QP up before calling us.
                    notifier: QpNotifier::new(qp).ok_or(EINVAL)?,
                    user: !udata.is_null(),
                };
                let dev = Self::device((*qp).device);
                let (qpn, cap, data) = T::Qp::create(dev, attr).inspect_err(|_| {
                    // The core frees the QP on failure: whatever the driver
                    // kept of it goes first.
                    QpObject::<T>::wait_unheld(qp);
                })?;
                let Ok(()) = QpObject::<T>::init_data(qp, data);
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
    pub(super) unsafe extern "C" fn modify_qp(
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
                QpObject::<T>::data(qp).modify(dev, &m)?;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_qp`.
    pub(super) unsafe extern "C" fn query_qp(
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
                let q = QpObject::<T>::data(qp).query(dev)?;
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
                attr.port_num = 1;
                let roce = DeviceObject::<T>::data((*qp).device).link_layer == LinkLayer::Ethernet;
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
    pub(super) unsafe extern "C" fn destroy_qp(
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
                QpObject::<T>::data(qp).destroy(dev);
                cqes.close();
            }
            // uverbs reads `wc->qp` of every completion it polls, kernel
            // consumers use it too.
            let name = QpName::new(CoreHead::of(qp));
            let (send_cq, recv_cq) = ((*qp).send_cq, (*qp).recv_cq);
            cq::data_of::<T>(send_cq).purge(name);
            if recv_cq != send_cq {
                cq::data_of::<T>(recv_cq).purge(name);
            }
            if !cqes.is_empty() {
                pr_err!(
                    "QP {:#x}: a completion survived its purge; not destroyed\n",
                    (*qp).qp_num
                );
                return EBUSY.to_errno();
            }
            QpObject::<T>::drop_data(qp);
        }
        0
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.post_send`.
    pub(super) unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> ffi::c_int {
        // SAFETY: `qp` is a live QP of ours.
        let (datagram, user) = unsafe {
            (
                matches!(
                    (*qp).qp_type,
                    bindings::ib_qp_type_IB_QPT_UD | bindings::ib_qp_type_IB_QPT_GSI
                ),
                !(*qp).uobject.is_null(),
            )
        };
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
            QpObject::<T>::data(qp).post_send(dev, &mut wrs)
        };
        // SAFETY: the core passes a writable (or NULL) `bad_wr`.
        unsafe { wrs.finish(ret, bad_wr) }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.post_recv`.
    pub(super) unsafe extern "C" fn post_recv(
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
            QpObject::<T>::data(qp).post_recv(dev, &mut wrs)
        };
        // SAFETY: the core passes a writable (or NULL) `bad_wr`.
        unsafe { wrs.finish(ret, bad_wr) }
    }
}
