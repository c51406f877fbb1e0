// SPDX-License-Identifier: GPL-2.0

//! Memory regions: their identity, the verbs a driver implements for them
//! and the routing of the core's MR calls to it. What a region maps is
//! [`super::memory`]'s.

use super::{
    access::Access,
    bindings,
    compat::{with_reg_user_mr, RegUserMr},
    device_data::OnDevice,
    eopnotsupp,
    ids::{Key, MrId, PdId},
    memory::{Memory, PageList, UserMemory},
    object::CoreObject,
};
use core::{marker::PhantomData, mem::MaybeUninit};
use kernel::{
    error::{from_result, VTABLE_DEFAULT_ERROR},
    ffi,
    page::PAGE_SIZE,
    prelude::*,
};

/// What a `rereg_mr` call changes; keys stay as they are.
///
/// # Invariants
///
/// `dev` is the registered device of the MR.
pub(crate) struct MrRereg {
    pub(crate) pd: Option<PdId>,
    pub(crate) access: Option<Access>,
    /// New start address and length in the process, and new iova.
    translation: Option<(u64, u64, u64)>,
    dev: *mut bindings::ib_device,
}

impl MrRereg {
    /// The new iova, when the region is to map new memory.
    pub(crate) fn new_iova(&self) -> Option<u64> {
        self.translation.map(|(_, _, iova)| iova)
    }

    /// Pins the new memory, if any, for `access`.
    pub(crate) fn pin(&self, access: Access) -> Result<Option<Memory>> {
        let Some((start, len, _)) = self.translation else {
            return Ok(None);
        };
        // SAFETY: `dev` is registered (type invariant).
        let mem = unsafe { UserMemory::pin(self.dev, start, len, access)? };
        Ok(Some(Memory::User(mem)))
    }
}

/// The verbs of a driver's memory regions; `Self` is the driver's data
/// behind each `ib_mr`.
#[vtable]
pub(crate) trait MrOps: Send + Sync + Sized {
    /// The driver's per-device state.
    type Device;

    /// A new MR over `mem`; returns its key (lkey = rkey).
    fn register(
        dev: &Self::Device,
        pd: PdId,
        mem: Memory,
        iova: u64,
        access: Access,
    ) -> Result<(Key, impl PinInit<Self>)>;
    /// A new fast-registration MR (`IB_MR_TYPE_MEM_REG`) of `pd`, named
    /// `id`, with a [`PageList`] of `max_pages` pages; invalid until a
    /// REG_MR work request registers it. Returns its key.
    fn alloc_fast(
        dev: &Self::Device,
        pd: PdId,
        id: MrId,
        max_pages: u32,
    ) -> Result<(Key, impl PinInit<Self>)>;
    /// The page list of a fast-registration MR, which `map_mr_sg` fills.
    fn pages(&self) -> Option<&PageList>;
    /// Removes the MR from the device before it is dropped.
    fn deregister(self: Pin<&Self>, dev: &Self::Device);
    /// Changes the MR in place as `change` says (PD, access, memory); a
    /// failure changes nothing. Optional.
    fn rereg(&self, _dev: &Self::Device, _change: &MrRereg) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A memory region as registered: the core's `ib_mr`, then the driver's.
type MrObject<M> = CoreObject<bindings::ib_mr, M>;

/// Routes the core's calls on MRs to the [`MrOps`] of `M`.
///
/// # Invariants
///
/// Its ops are only in the tables that [`Self::ops`]' contract allows, so every
/// MR they are called on carries an `M`, and every PD is one of a device whose
/// data is an `M::Device`.
pub(super) struct MrAdapter<M>(PhantomData<M>);

// SAFETY: by the type invariant its ops are only in tables of a driver
// whose device data is a `M::Device`.
unsafe impl<M: MrOps> OnDevice for MrAdapter<M> {
    type Device = M::Device;
}

impl<M: MrOps> RegUserMr for MrAdapter<M> {
    unsafe fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: ffi::c_int,
    ) -> *mut bindings::ib_mr {
        let ret = (|| {
            let access = Access::from_request(access as u32)?;
            // SAFETY: the core passes a live PD of a registered device.
            let mem = unsafe { UserMemory::pin((*pd).device, start, length, access)? };
            // SAFETY: as above; by the type invariant the device's data is
            // an `M::Device`.
            unsafe { Self::register_mr(pd, Memory::User(mem), iova, length, access) }
        })();
        ret.unwrap_or_else(|e| e.to_ptr())
    }
}

impl<M: MrOps> MrAdapter<M> {
    /// `ops` with the MR verbs of `M`.
    ///
    /// # Safety
    ///
    /// The table is set only on devices whose data is a
    /// `DeviceData<M::Device>`, and every MR of them comes from these ops.
    pub(super) const unsafe fn ops(ops: bindings::ib_device_ops) -> bindings::ib_device_ops {
        let ops = bindings::ib_device_ops {
            get_dma_mr: Some(Self::get_dma_mr),
            alloc_mr: Some(Self::alloc_mr),
            map_mr_sg: Some(Self::map_mr_sg),
            rereg_user_mr: if M::HAS_REREG {
                Some(Self::rereg_user_mr)
            } else {
                None
            },
            dereg_mr: Some(Self::dereg_mr),
            ..ops
        };
        with_reg_user_mr::<Self>(ops)
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.rereg_user_mr`.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: ffi::c_int,
        start: u64,
        length: u64,
        iova: u64,
        access: ffi::c_int,
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let has = |bit: u32| flags as u32 & bit != 0;
        let ret = (|| {
            let access = if has(bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS) {
                Some(Access::from_request(access as u32)?)
            } else {
                None
            };
            // SAFETY: the core passes a live MR of ours.
            let dev = unsafe { (*mr).device };
            // INVARIANT: the MR's device is registered.
            let change = MrRereg {
                pd: has(bindings::ib_mr_rereg_flags_IB_MR_REREG_PD).then(|| PdId::new(pd)),
                access,
                translation: has(bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS)
                    .then_some((start, length, iova)),
                dev,
            };
            // SAFETY: as above; the MR's data lives until `dereg_mr`.
            unsafe { MrObject::<M>::data(mr).rereg(Self::device(change.dev), &change) }
        })();
        // NULL: the MR was changed in place (the core updates its pd, iova
        // and length).
        match ret {
            Ok(()) => core::ptr::null_mut(),
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.get_dma_mr`.
    unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: ffi::c_int,
    ) -> *mut bindings::ib_mr {
        let ret = Access::from_request(access as u32).and_then(|access| {
            // SAFETY: the core passes a live PD of ours.
            unsafe { Self::register_mr(pd, Memory::KernelLinear, 0, u64::MAX, access) }
        });
        ret.unwrap_or_else(|e| e.to_ptr())
    }

    /// Hands `mem` to the driver and wraps its MR for the core.
    ///
    /// # Safety
    ///
    /// `pd` is a live PD of a device whose data is an `M::Device`.
    unsafe fn register_mr(
        pd: *mut bindings::ib_pd,
        mem: Memory,
        iova: u64,
        length: u64,
        access: Access,
    ) -> Result<*mut bindings::ib_mr> {
        // SAFETY: per the function's contract.
        unsafe {
            Self::new_mr(pd, iova, length, |dev, pd, _| {
                M::register(dev, pd, mem, iova, access)
            })
        }
    }

    /// Has the driver create an MR (`create` gets the device, the PD and
    /// the MR's identity) and wraps it for the core.
    ///
    /// # Safety
    ///
    /// `pd` is a live PD of a device whose data is an `M::Device`.
    unsafe fn new_mr<'a, I: PinInit<M>>(
        pd: *mut bindings::ib_pd,
        iova: u64,
        length: u64,
        create: impl FnOnce(&'a M::Device, PdId, MrId) -> Result<(Key, I)>,
    ) -> Result<*mut bindings::ib_mr>
    where
        M::Device: 'a,
    {
        // SAFETY: per the function's contract.
        let dev = unsafe { Self::device((*pd).device) };
        // The core expects a zeroed `ib_mr` apart from what the driver sets;
        // allocated first, so that nothing fails once the driver has the MR.
        let obj = KBox::<MrObject<M>>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        let id = MrId::new(obj.as_ptr().cast());
        let (key, data) = create(dev, PdId::new(pd), id)?;
        let raw = KBox::into_raw(obj).cast::<bindings::ib_mr>();
        // SAFETY: `raw` is a fresh zeroed allocation of `MrObject` size.
        let Ok(()) = unsafe { MrObject::<M>::init(raw, data) };
        // SAFETY: `raw` is ours until returned to the core.
        unsafe {
            (*raw).lkey = key.get();
            (*raw).rkey = key.get();
            (*raw).iova = iova;
            (*raw).length = length;
            (*raw).page_size = PAGE_SIZE as u32;
        }
        Ok(raw)
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.alloc_mr`.
    unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return eopnotsupp().to_ptr();
        }
        // SAFETY: the core passes a live PD of ours.
        let ret = unsafe {
            Self::new_mr(pd, 0, 0, |dev, pd, id| {
                M::alloc_fast(dev, pd, id, max_num_sg)
            })
        };
        ret.unwrap_or_else(|e| e.to_ptr())
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.map_mr_sg`.
    unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: ffi::c_int,
        sg_offset: *mut ffi::c_uint,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes a live MR of ours, whose `page_size`
            // `ib_map_mr_sg` has just set.
            let (data, page_size) = unsafe { (MrObject::<M>::data(mr).get_ref(), (*mr).page_size) };
            let list = data.pages().ok_or(EINVAL)?;
            // Each stored address is one CPU page (see `PageList`).
            if page_size as usize != PAGE_SIZE {
                return Err(EINVAL);
            }
            list.start();
            // SAFETY: the core passes a valid list of `sg_nents` entries
            // (and a valid or NULL `sg_offset`); `set_page` fits `mr`.
            let mapped = unsafe {
                bindings::ib_sg_to_pages(mr, sg, sg_nents, sg_offset, Some(Self::set_page))
            };
            // SAFETY: `ib_sg_to_pages` has set them: the first byte's
            // address and the length mapped.
            unsafe { list.finish((*mr).iova, (*mr).length) };
            Ok(mapped)
        })
    }

    /// Stores one page of a mapping (`ib_sg_to_pages`' callback).
    ///
    /// # Safety
    ///
    /// Only `ib_sg_to_pages` calls this, for an MR of ours.
    unsafe extern "C" fn set_page(mr: *mut bindings::ib_mr, addr: u64) -> ffi::c_int {
        from_result(|| {
            // SAFETY: per the function's contract `mr` is a live MR of ours.
            let data = unsafe { MrObject::<M>::data(mr) }.get_ref();
            let list = data.pages().ok_or(EINVAL)?;
            list.push(addr)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.dereg_mr`.
    unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `mr` came from `new_mr`; after `deregister` nothing
        // refers to the driver data, and the allocation is ours to free.
        unsafe {
            let dev = Self::device((*mr).device);
            MrObject::<M>::data(mr).deregister(dev);
            MrObject::<M>::drop_data(mr);
            drop(KBox::from_raw(mr.cast::<MaybeUninit<MrObject<M>>>()));
        }
        0
    }
}
