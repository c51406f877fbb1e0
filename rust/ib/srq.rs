// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: creation, modify/query attributes, posting, and
//! the handle through which the driver raises the limit event.

use super::{
    bindings, device_data::OnDevice, eopnotsupp, event::Notifier, ids::PdId, object::CoreObject,
    wr::RecvWrs,
};
use core::marker::PhantomData;
use kernel::{error::from_result, ffi, prelude::*};

/// Sizes and limit of an SRQ (`struct ib_srq_attr`).
#[derive(Clone, Copy, Default)]
pub(crate) struct SrqAttr {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    /// Raise `IB_EVENT_SRQ_LIMIT_REACHED` when fewer WRs remain; 0: off.
    pub(crate) limit: u32,
}

/// What a `modify_srq` call changes.
pub(crate) struct SrqModify {
    /// Resize (`IB_SRQ_MAX_WR`).
    pub(crate) max_wr: Option<u32>,
    /// Arm the limit event (`IB_SRQ_LIMIT`).
    pub(crate) limit: Option<u32>,
}

/// The verbs of a driver's shared receive queues; `Self` is the driver's
/// data behind each `ib_srq`.
#[vtable]
pub(crate) trait SrqOps: Send + Sync + Sized {
    /// The driver's per-device state.
    type Device;

    /// A new SRQ in `pd`. May raise `attr`'s sizes (reported back).
    fn create(
        dev: &Self::Device,
        pd: PdId,
        attr: &mut SrqAttr,
        notifier: SrqNotifier,
    ) -> Result<impl PinInit<Self>>;
    fn modify(&self, dev: &Self::Device, m: &SrqModify) -> Result;
    fn query(&self, dev: &Self::Device) -> Result<SrqAttr>;
    /// Removes the SRQ (no QP uses it any more) before it is dropped.
    fn destroy(self: Pin<&Self>, dev: &Self::Device);
    fn post_recv(&self, dev: &Self::Device, wrs: &mut RecvWrs<'_>) -> Result;
}

/// The driver's data of an SRQ that a QP being created names, for the
/// length of the `create_qp` call.
///
/// # Safety
///
/// `srq` is NULL or a live SRQ whose data, an `S`, is initialised, and
/// stays so for `'a`.
pub(super) unsafe fn data_of<'a, S>(srq: *mut bindings::ib_srq) -> Option<Pin<&'a S>> {
    // SAFETY: per the function's contract.
    (!srq.is_null()).then(|| unsafe { SrqObject::<S>::data(srq) })
}

/// Raises the events of one SRQ.
pub(crate) type SrqNotifier = Notifier<bindings::ib_srq>;

impl SrqNotifier {
    /// Raises `IB_EVENT_SRQ_LIMIT_REACHED`.
    pub(crate) fn limit_reached(&self) {
        self.raise(bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED);
    }
}

type SrqObject<S> = CoreObject<bindings::ib_srq, S>;

impl SrqAttr {
    fn write_to(&self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.limit;
    }
}

/// Routes the core's calls on SRQs to the [`SrqOps`] of `S`.
///
/// # Invariants
///
/// Its ops are only in the tables that [`Self::ops`]' contract allows, so every
/// SRQ they are called on carries an `S`, on a device whose data is an
/// `S::Device`.
pub(super) struct SrqAdapter<S>(PhantomData<S>);

// SAFETY: by the type invariant its ops are only in tables of a driver
// whose device data is a `S::Device`.
unsafe impl<S: SrqOps> OnDevice for SrqAdapter<S> {
    type Device = S::Device;
}

impl<S: SrqOps> SrqAdapter<S> {
    /// `ops` with the SRQ verbs of `S`.
    ///
    /// # Safety
    ///
    /// The table is set only on devices whose data is a
    /// `DeviceData<S::Device>`, and every SRQ of them comes from these ops.
    pub(super) const unsafe fn ops(ops: bindings::ib_device_ops) -> bindings::ib_device_ops {
        bindings::ib_device_ops {
            create_srq: Some(Self::create_srq),
            modify_srq: Some(Self::modify_srq),
            query_srq: Some(Self::query_srq),
            destroy_srq: Some(Self::destroy_srq),
            post_srq_recv: Some(Self::post_srq_recv),
            size_ib_srq: SrqObject::<S>::SIZE,
            ..ops
        }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.create_srq`.
    unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes an SRQ allocated with `size_ib_srq`
            // bytes, its device and PD set, and a valid `init`.
            unsafe {
                let init = &mut *init;
                if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
                    return Err(eopnotsupp());
                }
                let mut attr = SrqAttr {
                    max_wr: init.attr.max_wr,
                    max_sge: init.attr.max_sge,
                    // The limit is armed by modify only.
                    limit: 0,
                };
                // The core set the SRQ up before calling us; the SRQ's
                // destroy waits for the notifier.
                SrqObject::<S>::init_head(srq);
                let notifier = SrqNotifier::new(srq).ok_or(EINVAL)?;
                let dev = Self::device((*srq).device);
                let created = S::create(dev, PdId::new((*srq).pd), &mut attr, notifier);
                // The core frees the SRQ on failure: whatever the driver kept
                // of it goes first.
                let data = created.inspect_err(|_| SrqObject::<S>::wait_unheld(srq))?;
                let Ok(()) = SrqObject::<S>::init_data(srq, data);
                attr.write_to(&mut init.attr);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.modify_srq`.
    unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            let has = |bit: u32| mask & bit != 0;
            // SAFETY: `srq` is a live SRQ of ours and `attr` is valid.
            unsafe {
                let attr = &*attr;
                let m = SrqModify {
                    max_wr: has(bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR).then_some(attr.max_wr),
                    limit: has(bindings::ib_srq_attr_mask_IB_SRQ_LIMIT).then_some(attr.srq_limit),
                };
                let dev = Self::device((*srq).device);
                SrqObject::<S>::data(srq).modify(dev, &m)?;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_srq`.
    unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: `srq` is a live SRQ of ours and `attr` is writable.
            unsafe {
                let dev = Self::device((*srq).device);
                let a = SrqObject::<S>::data(srq).query(dev)?;
                a.write_to(&mut *attr);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.destroy_srq`.
    unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `srq` was initialised by `create_srq` and no QP uses it
        // (the core checked); the core frees it after this returns, and
        // `drop_data` waits for the notifier the driver was given.
        unsafe {
            SrqObject::<S>::data(srq).destroy(Self::device((*srq).device));
            SrqObject::<S>::drop_data(srq);
        }
        0
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.post_srq_recv`.
    unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> ffi::c_int {
        // SAFETY: the core passes a NULL-terminated list of valid WRs with
        // `num_sge` SGEs each, live across this call, which `wrs` does not
        // outlive.
        let mut wrs = unsafe { RecvWrs::new(wr, false, false) };
        // SAFETY: `srq` is a live SRQ of ours.
        let ret = unsafe {
            let dev = Self::device((*srq).device);
            SrqObject::<S>::data(srq).post_recv(dev, &mut wrs)
        };
        // SAFETY: the core passes a writable (or NULL) `bad_wr`.
        unsafe { wrs.finish(ret, bad_wr) }
    }
}
