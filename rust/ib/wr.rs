// SPDX-License-Identifier: GPL-2.0

//! Safe views of the work request lists that `post_send`, `post_recv` and
//! `post_srq_recv` receive: each WR read once, as the driver asks for it.

use super::{
    access::Access,
    ah::{self, Address},
    bindings,
    compat::user_slice,
    ids::{Key, MrId, QpNum},
};
use core::marker::PhantomData;
use kernel::{ffi, prelude::*};

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
    /// `IB_SEND_FENCE`: it waits for the READs and atomics before it.
    pub(crate) fence: bool,
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
    /// `head` is NULL or the first of a NULL-terminated list of valid WRs that
    /// lives as long as the returned list. A send WR is the first member of the
    /// container its opcode names (`ib_rdma_wr`, `ib_atomic_wr`, `ib_reg_wr`,
    /// the last naming a live MR or none), and of an `ib_ud_wr` when
    /// `datagram`, whose AH, if any, is a live AH of a device registered by
    /// [`super::Devices`]. `sg_list` of each WR has `num_sge` valid entries.
    /// (`user` is not part of the contract: the SGEs' addresses are never
    /// trusted, only read with copies that fail on a bad one.)
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
            // live and of a registered device.
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
            fence: flags & bindings::ib_send_flags_IB_SEND_FENCE != 0,
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
/// live AH of a device registered by [`super::Devices`].
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
