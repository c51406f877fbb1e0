// SPDX-License-Identifier: GPL-2.0

//! The memory a region maps, and copying to, from and between it: user
//! memory pinned with `ib_umem`, the kernel's linear map, and the kernel
//! pages of a fast-registration MR.

use super::{access::Access, bindings};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
};
use kernel::{
    error::from_err_ptr,
    page::{PAGE_SHIFT, PAGE_SIZE},
    prelude::*,
};

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
    pub(super) unsafe fn pin(
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
            bindings::rsoft_umem_get(dev, start as usize, len as usize, access.bits() as i32)
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
    pub(super) fn start(&self) {
        self.stored.store(0, Ordering::Relaxed);
    }

    /// Ends a mapping whose first byte is at virtual-DMA address `first`
    /// and which spans `len` bytes.
    pub(super) fn finish(&self, first: u64, len: u64) {
        self.offset
            .store(first & (PAGE_SIZE as u64 - 1), Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
    }

    /// Stores the next page of a mapping: ENOMEM when there is no room.
    pub(super) fn push(&self, addr: u64) -> Result {
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

    /// Calls `f` on each page-sized piece of `[off, off + len)`, which must
    /// be in range: its page, offset in the page, offset from `off` and
    /// length.
    fn pieces(
        &self,
        off: u64,
        len: usize,
        mut f: impl FnMut(PagePtr, usize, usize, usize),
    ) -> Result {
        if !self.fits(off, len as u64) {
            return Err(EINVAL);
        }
        let mut done = 0;
        while done < len {
            let (page, in_page) = self.page_of(off + done as u64)?;
            let chunk = (len - done).min(PAGE_SIZE - in_page);
            f(page, in_page, done, chunk);
            done += chunk;
        }
        Ok(())
    }

    /// Writes `bytes` at `off`, which must leave them in range.
    pub(crate) fn write(&self, off: u64, bytes: &[u8]) -> Result {
        self.pieces(off, bytes.len(), |page, in_page, done, chunk| {
            // SAFETY: `chunk` bytes fit in the page, usable as for `copy`,
            // and in `bytes` from `done`.
            unsafe {
                bindings::rsoft_page_write(page.0, in_page, bytes[done..].as_ptr().cast(), chunk)
            };
        })
    }

    /// Reads `bytes.len()` bytes at `off`, which must be in range.
    pub(crate) fn read(&self, off: u64, bytes: &mut [u8]) -> Result {
        let len = bytes.len();
        self.pieces(off, len, |page, in_page, done, chunk| {
            // SAFETY: `chunk` bytes fit in the page, usable as for `copy`,
            // and in `bytes` from `done`.
            unsafe {
                bindings::rsoft_page_read(bytes[done..].as_mut_ptr().cast(), page.0, in_page, chunk)
            };
        })
    }
}

impl Drop for UserMemory {
    fn drop(&mut self) {
        // SAFETY: by the invariant `umem` is pinned and released only here.
        unsafe { bindings::ib_umem_release(self.umem.as_ptr()) };
    }
}
