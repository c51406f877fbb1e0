// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned with `ib_umem`, kernel pages mapped
//! for fast registration, access rights, and copying between registered
//! pages.

use super::{bindings, eopnotsupp, ids::Key, object::CoreObject, qp::PdId, verbs::Adapter, Verbs};
use core::{
    mem::MaybeUninit,
    ptr::NonNull,
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
};
use kernel::{
    error::{from_err_ptr, from_result, VTABLE_DEFAULT_ERROR},
    ffi,
    page::{PAGE_SHIFT, PAGE_SIZE},
    prelude::*,
};

/// Access rights of a memory region or QP (`enum ib_access_flags`).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Access(u32);

impl Access {
    /// Every MR may be read by local work requests.
    pub(crate) const LOCAL_READ: Self = Self(0);
    pub(crate) const LOCAL_WRITE: Self = Self(bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
    pub(crate) const REMOTE_WRITE: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    pub(crate) const REMOTE_READ: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
    pub(crate) const REMOTE_ATOMIC: Self = Self(bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);

    /// Rights rsoft implements; `HUGETLB` is only a hint.
    const SUPPORTED: u32 = Self::LOCAL_WRITE.0
        | Self::REMOTE_WRITE.0
        | Self::REMOTE_READ.0
        | Self::REMOTE_ATOMIC.0
        | bindings::ib_access_flags_IB_ACCESS_HUGETLB;

    /// Reads the flags of a request: optional bits (such as
    /// RELAXED_ORDERING) are dropped, unsupported mandatory ones refused.
    pub(crate) fn from_request(flags: u32) -> Result<Self> {
        let flags = flags & !bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
        if flags & !Self::SUPPORTED != 0 {
            return Err(eopnotsupp());
        }
        Ok(Self(flags & !bindings::ib_access_flags_IB_ACCESS_HUGETLB))
    }

    /// Every flag a QP's `qp_access_flags` may carry, as rxe takes them:
    /// the rights, memory window binding and the MR flags a QP may name
    /// (none of which a QP acts on), and the optional hints.
    pub(crate) const QP_FLAGS: Self = Self(
        Self::LOCAL_WRITE.0
            | Self::REMOTE_WRITE.0
            | Self::REMOTE_READ.0
            | Self::REMOTE_ATOMIC.0
            | bindings::ib_access_flags_IB_ACCESS_MW_BIND
            | bindings::ib_access_flags_IB_ACCESS_ON_DEMAND
            | bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL
            | bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT
            | bindings::ib_access_flags_IB_ACCESS_OPTIONAL,
    );

    /// The flags of a QP (`qp_access_flags`) as given, reported back as
    /// they are; of them, only the remote rights act.
    pub(crate) fn from_qp(flags: u32) -> Self {
        Self(flags)
    }

    /// The raw flags, for reporting.
    pub(crate) fn bits(self) -> u32 {
        self.0
    }

    /// Whether all of `other`'s rights are granted.
    pub(crate) fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

/// A page of pinned user memory.
#[derive(Clone, Copy)]
struct PagePtr(*mut bindings::page);

// SAFETY: a pinned page may be accessed from any thread.
unsafe impl Send for PagePtr {}
// SAFETY: as for `Send`; writers are serialised by the driver.
unsafe impl Sync for PagePtr {}

/// User memory pinned for the lifetime of a memory region.
///
/// # Invariants
///
/// `umem` is a pinned `ib_umem` covering `len` bytes that start `offset`
/// bytes into `pages[0]`; `pages` are its pages in order.
pub(crate) struct UserMemory {
    umem: NonNull<bindings::ib_umem>,
    pages: KVVec<PagePtr>,
    offset: usize,
    len: u64,
}

// SAFETY: the umem is only released by `drop`, from whichever thread.
unsafe impl Send for UserMemory {}
// SAFETY: shared access only reads the page list.
unsafe impl Sync for UserMemory {}

impl UserMemory {
    /// Pins `[start, start + len)` of the calling process.
    ///
    /// # Safety
    ///
    /// `dev` is a registered device.
    unsafe fn pin(
        dev: *mut bindings::ib_device,
        start: u64,
        len: u64,
        access: Access,
    ) -> Result<Self> {
        let offset = (start as usize) & (PAGE_SIZE - 1);
        let npages = (offset as u64)
            .checked_add(len)
            .and_then(|end| end.checked_add(PAGE_SIZE as u64 - 1))
            .ok_or(EINVAL)?
            >> PAGE_SHIFT;
        let npages = usize::try_from(npages)?;
        let mut pages = KVVec::from_elem(PagePtr(core::ptr::null_mut()), npages, GFP_KERNEL)?;
        // SAFETY: per the contract; `ib_umem_get` checks the range.
        let umem = from_err_ptr(unsafe {
            bindings::rsoft_umem_get(dev, start as usize, len as usize, access.0 as i32)
        })?;
        // SAFETY: `umem` is valid; `pages` has room for `npages` entries.
        let got = unsafe { bindings::rsoft_umem_pages(umem, pages.as_mut_ptr().cast(), npages) };
        let umem = NonNull::new(umem).ok_or(ENOMEM)?;
        // INVARIANT: the umem covers exactly these pages.
        let mem = Self {
            umem,
            pages,
            offset,
            len,
        };
        if got != npages {
            return Err(EFAULT);
        }
        Ok(mem)
    }

    /// The page and in-page offset of byte `off`, which must be in range.
    fn page_of(&self, off: u64) -> (PagePtr, usize) {
        let at = self.offset + off as usize;
        (self.pages[at >> PAGE_SHIFT], at & (PAGE_SIZE - 1))
    }
}

/// Names a memory region (the `ib_mr` a work request names).
///
/// Only an identity, never dereferenced, made only by the `ib` layer: of a
/// new MR, which the driver keeps with it, and of the MR a REG_MR names,
/// live when it is posted. The one that can be compared stale is the
/// latter: a REG_MR waits in its send queue, and a kernel consumer that
/// deregisters its MR before it runs breaks the verbs contract. A new MR
/// may then have the same address; if it is also a fast-registration MR
/// of the QP's PD in the same table slot, the REG_MR registers it instead.
/// That is the consumer's own MR, in its own PD, mapping its own pages, so
/// the mistake stays the consumer's; memory safety never rests on this
/// identity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct MrId(usize);

impl MrId {
    pub(super) fn new(mr: *const bindings::ib_mr) -> Self {
        Self(mr as usize)
    }
}

/// The kernel pages a fast-registration MR maps: what `map_mr_sg` last
/// stored (virtual-DMA addresses, that is kernel virtual addresses, of
/// `PAGE_SIZE` pages), where its first byte is in the first page, and its
/// length. Sized at allocation; mapping never allocates. Offsets into it
/// count from the first byte mapped; the iova that byte has is the REG_MR's
/// business (a consumer may change `ib_mr.iova` between the two).
///
/// Everything is atomic: a consumer that maps an MR while a transfer uses
/// it gets garbage, not a data race. Every address is checked against the
/// linear map before it is used.
pub(crate) struct PageList {
    pages: KVec<AtomicU64>,
    /// Pages stored by the mapping in progress.
    stored: AtomicUsize,
    /// The offset of the first byte in the first page.
    offset: AtomicU64,
    len: AtomicU64,
}

impl PageList {
    /// Room for `max_pages` pages.
    pub(crate) fn new(max_pages: u32) -> Result<Self> {
        let mut pages = KVec::with_capacity(max_pages as usize, GFP_KERNEL)?;
        for _ in 0..max_pages {
            pages.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(Self {
            pages,
            stored: AtomicUsize::new(0),
            offset: AtomicU64::new(0),
            len: AtomicU64::new(0),
        })
    }

    /// Starts a new mapping.
    fn start(&self) {
        self.stored.store(0, Ordering::Relaxed);
    }

    /// Ends a mapping whose first byte is at virtual-DMA address `first`
    /// and which spans `len` bytes.
    fn finish(&self, first: u64, len: u64) {
        self.offset
            .store(first & (PAGE_SIZE as u64 - 1), Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
    }

    /// Stores the next page of a mapping: ENOMEM when there is no room.
    fn push(&self, addr: u64) -> Result {
        let i = self.stored.fetch_add(1, Ordering::Relaxed);
        self.pages
            .get(i)
            .ok_or(ENOMEM)?
            .store(addr, Ordering::Relaxed);
        Ok(())
    }

    /// The page and in-page offset of byte `off`, which must be in range.
    fn page_of(&self, off: u64) -> Result<(PagePtr, usize)> {
        let at = self
            .offset
            .load(Ordering::Relaxed)
            .checked_add(off)
            .ok_or(EFAULT)?;
        let page = self
            .pages
            .get(usize::try_from(at >> PAGE_SHIFT)?)
            .ok_or(EFAULT)?;
        let addr = page
            .load(Ordering::Relaxed)
            .checked_add(at & (PAGE_SIZE as u64 - 1));
        linear_page_of(usize::try_from(addr.ok_or(EFAULT)?)?)
    }
}

/// The page of the kernel's linear map that holds `addr`, and the offset
/// in it; EFAULT outside the linear map.
fn linear_page_of(addr: usize) -> Result<(PagePtr, usize)> {
    // SAFETY: a lookup in the linear map; NULL for any address outside it.
    let page = unsafe { bindings::rsoft_virt_to_page(addr) };
    if page.is_null() {
        return Err(EFAULT);
    }
    Ok((PagePtr(page), addr & (PAGE_SIZE - 1)))
}

/// The memory a region maps.
pub(crate) enum Memory {
    /// Pinned pages of a process.
    User(UserMemory),
    /// The kernel's linear map, for a kernel consumer's DMA MR: with
    /// `CONFIG_INFINIBAND_VIRT_DMA` the "DMA addresses" a consumer maps are
    /// kernel virtual addresses, and the region's offsets are those
    /// addresses. Kernel consumers own what they map, as with any DMA.
    KernelLinear,
    /// Kernel pages a fast-registration MR maps (`map_mr_sg`); what they
    /// hold belongs to the kernel consumer, as with any DMA.
    Pages(PageList),
}

impl Memory {
    /// Length in bytes.
    pub(crate) fn len(&self) -> u64 {
        match self {
            Self::User(m) => m.len,
            Self::KernelLinear => u64::MAX,
            Self::Pages(list) => list.len.load(Ordering::Relaxed),
        }
    }

    /// Whether `[off, off + len)` lies within the memory.
    fn fits(&self, off: u64, len: u64) -> bool {
        off.checked_add(len).is_some_and(|end| end <= self.len())
    }

    /// The page and in-page offset of byte `off`, which must be in range.
    fn page_of(&self, off: u64) -> Result<(PagePtr, usize)> {
        match self {
            Self::User(m) => Ok(m.page_of(off)),
            Self::KernelLinear => linear_page_of(usize::try_from(off)?),
            Self::Pages(list) => list.page_of(off),
        }
    }

    /// Copies `len` bytes from `src` at `src_off` to `dst` at `dst_off`.
    /// Out-of-range requests copy nothing and fail.
    pub(crate) fn copy(dst: &Self, dst_off: u64, src: &Self, src_off: u64, len: u64) -> Result {
        if !dst.fits(dst_off, len) || !src.fits(src_off, len) {
            return Err(EINVAL);
        }
        let mut done = 0;
        while done < len {
            let (dp, dpo) = dst.page_of(dst_off + done)?;
            let (sp, spo) = src.page_of(src_off + done)?;
            let left = usize::try_from(len - done).unwrap_or(usize::MAX);
            let chunk = left.min(PAGE_SIZE - dpo).min(PAGE_SIZE - spo);
            // SAFETY: both pages hold `chunk` bytes from their offsets: user
            // pages are pinned and in range (checked above), linear-map
            // pages (fast-registration pages are such) belong to the
            // kernel consumer that posted the work.
            unsafe { bindings::rsoft_copy_page(dp.0, dpo, sp.0, spo, chunk) };
            done += chunk as u64;
        }
        Ok(())
    }

    /// Whether the 8 bytes at `off` are in range and form an aligned word
    /// of memory (what matters is the page offset, not `off`: a region
    /// need not start on a word).
    fn word_aligned(&self, off: u64) -> bool {
        self.fits(off, 8) && self.page_of(off).is_ok_and(|(_, in_page)| in_page % 8 == 0)
    }

    /// Performs an 8-byte atomic at `off` (an aligned word, in range): compare
    /// and swap when `swap` is given, else fetch and add `operand`.
    /// Returns the original value. The caller serialises atomics.
    pub(crate) fn atomic(&self, off: u64, operand: u64, swap: Option<u64>) -> Result<u64> {
        if !self.word_aligned(off) {
            return Err(EINVAL);
        }
        let (page, in_page) = self.page_of(off)?;
        // SAFETY: the 8 bytes lie within one page (an aligned word never
        // crosses one), which is usable as for `copy`.
        Ok(unsafe {
            bindings::rsoft_page_atomic(page.0, in_page, swap.is_some(), operand, swap.unwrap_or(0))
        })
    }

    /// Writes `bytes` at `off`, which must leave them in range.
    pub(crate) fn write(&self, off: u64, bytes: &[u8]) -> Result {
        if !self.fits(off, bytes.len() as u64) {
            return Err(EINVAL);
        }
        let mut done = 0;
        while done < bytes.len() {
            let (page, in_page) = self.page_of(off + done as u64)?;
            let chunk = (bytes.len() - done).min(PAGE_SIZE - in_page);
            // SAFETY: `chunk` bytes fit in the page, usable as for `copy`.
            unsafe {
                bindings::rsoft_page_write(page.0, in_page, bytes[done..].as_ptr().cast(), chunk)
            };
            done += chunk;
        }
        Ok(())
    }
}

impl Drop for UserMemory {
    fn drop(&mut self) {
        // SAFETY: by the invariant `umem` is pinned and released only here.
        unsafe { bindings::ib_umem_release(self.umem.as_ptr()) };
    }
}

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
type MrObject<T> = CoreObject<bindings::ib_mr, <T as Verbs>::Mr>;

impl<T: Verbs> Adapter<T> {
    /// Registers user memory, for the `reg_user_mr` entry of the ops table
    /// (`compat`).
    ///
    /// # Safety
    ///
    /// Only the RDMA core's `reg_user_mr` call reaches this, with its `pd`.
    pub(super) unsafe fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        let ret = (|| {
            let access = Access::from_request(access as u32)?;
            // SAFETY: the core passes a live PD of a registered device.
            let mem = unsafe { UserMemory::pin((*pd).device, start, length, access)? };
            // SAFETY: as above.
            unsafe { Self::register_mr(pd, Memory::User(mem), iova, length, access) }
        })();
        ret.unwrap_or_else(|e| e.to_ptr())
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.rereg_user_mr`.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: kernel::ffi::c_int,
        start: u64,
        length: u64,
        iova: u64,
        access: kernel::ffi::c_int,
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
            unsafe { MrObject::<T>::data(mr).rereg(Self::device(change.dev), &change) }
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
    pub(super) unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: kernel::ffi::c_int,
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
    /// `pd` is a live PD of a `T` device.
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
                T::Mr::register(dev, pd, mem, iova, access)
            })
        }
    }

    /// Has the driver create an MR (`create` gets the device, the PD and
    /// the MR's identity) and wraps it for the core.
    ///
    /// # Safety
    ///
    /// `pd` is a live PD of a `T` device.
    unsafe fn new_mr<'a, I: PinInit<T::Mr>>(
        pd: *mut bindings::ib_pd,
        iova: u64,
        length: u64,
        create: impl FnOnce(&'a T::Device, PdId, MrId) -> Result<(Key, I)>,
    ) -> Result<*mut bindings::ib_mr> {
        // SAFETY: per the function's contract.
        let dev = unsafe { Self::device::<'a>((*pd).device) };
        // The core expects a zeroed `ib_mr` apart from what the driver sets;
        // allocated first, so that nothing fails once the driver has the MR.
        let obj = KBox::<MrObject<T>>::new_uninit(GFP_KERNEL | __GFP_ZERO)?;
        let id = MrId::new(obj.as_ptr().cast());
        let (key, data) = create(dev, PdId::new(pd), id)?;
        let raw = KBox::into_raw(obj).cast::<bindings::ib_mr>();
        // SAFETY: `raw` is a fresh zeroed allocation of `MrObject` size.
        let Ok(()) = unsafe { MrObject::<T>::init(raw, data) };
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
    pub(super) unsafe extern "C" fn alloc_mr(
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
                T::Mr::alloc_fast(dev, pd, id, max_num_sg)
            })
        };
        ret.unwrap_or_else(|e| e.to_ptr())
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.map_mr_sg`.
    pub(super) unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: ffi::c_int,
        sg_offset: *mut ffi::c_uint,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes a live MR of ours, whose `page_size`
            // `ib_map_mr_sg` has just set.
            let (data, page_size) = unsafe { (MrObject::<T>::data(mr).get_ref(), (*mr).page_size) };
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
            let data = unsafe { MrObject::<T>::data(mr) }.get_ref();
            let list = data.pages().ok_or(EINVAL)?;
            list.push(addr)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.dereg_mr`.
    pub(super) unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: `mr` came from `reg_user_mr`; after `T::dereg_mr` nothing
        // refers to the driver data, and the allocation is ours to free.
        unsafe {
            let dev = Self::device((*mr).device);
            MrObject::<T>::data(mr).deregister(dev);
            MrObject::<T>::drop_data(mr);
            drop(KBox::from_raw(mr.cast::<MaybeUninit<MrObject<T>>>()));
        }
        0
    }
}
