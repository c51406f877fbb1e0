// SPDX-License-Identifier: GPL-2.0

//! Memory regions and the device's table of them.
//!
//! A registration is immutable (`rereg_mr` replaces it under the same key;
//! a fast-registration MR is registered by REG_MR and invalidated, both in
//! the table) and its memory reference counted: a transfer holds the
//! regions it copies from and to, so a concurrent `dereg_mr` never frees
//! memory under it; the pages are unpinned when the last holder lets go.
//! A transfer also enters the registration's [`Gate`] while it touches the
//! memory: `dereg_mr` and `rereg_mr` close it and wait, so that once they
//! return the memory is not accessed again, as a consumer may then reuse
//! it (a transfer stops at its next piece).

use crate::{
    ib::{Access, FastReg, Gate, IrqSpinLock, Key, Memory, MrId, PdId},
    limits, new_irq_spinlock,
    table::Table,
};
use kernel::{prelude::*, sync::Arc};

/// An lkey (which is also the rkey): the table slot, and a generation byte
/// so that a stale key does not reach a later MR in the same slot.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct MrKey(u32);

impl MrKey {
    /// A key as a work request names it: any value.
    pub(crate) fn of(key: Key) -> Self {
        Self(key.get())
    }

    pub(crate) fn key(self) -> Key {
        Key::new(self.0)
    }

    fn slot(self) -> u32 {
        self.0 >> 8
    }

    fn generation(self) -> u8 {
        self.0 as u8
    }
}

/// An MR as the core holds it; the region lives in the device's MR table.
pub(crate) struct Mr {
    /// The key the MR was created with: its slot and generation.
    pub(crate) key: MrKey,
    /// A fast-registration MR's pages (a [`Memory::Pages`]).
    pub(crate) pages: Option<Arc<Memory>>,
}

/// What a transfer may enter an MR for: the PD the MR must belong to and
/// the rights it must give. It is asked each time an MR is entered, not
/// only when a request is taken: between two packets of a message, or two
/// runs of a READ's response, an MR may go and its key, the generations of
/// its slot gone round, come back naming another PD's memory.
#[derive(Clone, Copy)]
pub(crate) struct Grant {
    pub(crate) pd: PdId,
    pub(crate) need: Access,
}

impl Grant {
    pub(crate) fn new(pd: PdId, need: Access) -> Self {
        Self { pd, need }
    }

    /// Whether `mr` is of its PD and gives its rights.
    pub(crate) fn admits(&self, mr: &MrEntry) -> bool {
        mr.pd == self.pd && mr.access.contains(self.need)
    }
}

/// A registered memory region, as the table hands it out: a transfer
/// holds one while it copies, which keeps the memory.
#[derive(Clone)]
pub(crate) struct MrEntry {
    pub(crate) pd: PdId,
    /// The address the region starts at in the consumer's view.
    pub(crate) iova: u64,
    pub(crate) access: Access,
    pub(crate) mem: Arc<Memory>,
    /// The transfers inside the memory now.
    users: Arc<Gate>,
}

/// A transfer's hold of a registration it is inside: while it lives,
/// deregistration waits.
///
/// Its fields drop in order: the memory first, then the gate is left. So
/// the last reference to a user MR's pinned pages, whose release may
/// sleep, is always deregistration's, never a transfer's, which may hold a
/// QP's lock.
pub(crate) struct MrUse {
    entry: MrEntry,
    _inside: Inside,
}

/// Leaves a registration's gate when dropped.
struct Inside(Arc<Gate>);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl MrUse {
    pub(crate) fn entry(&self) -> &MrEntry {
        &self.entry
    }

    /// Whether the registration is going: the transfer is to stop.
    pub(crate) fn is_closing(&self) -> bool {
        self.entry.users.is_closed()
    }
}

/// A new gate for a registration's transfers.
fn new_users() -> Result<Arc<Gate>> {
    Arc::pin_init(Gate::new(), GFP_KERNEL)
}

impl MrEntry {
    /// A registration of `mem` at `iova`, for `pd` with `access`.
    pub(crate) fn new(pd: PdId, iova: u64, access: Access, mem: Arc<Memory>) -> Result<Self> {
        Ok(Self {
            pd,
            iova,
            access,
            mem,
            users: new_users()?,
        })
    }

    /// Closes the registration to transfers and waits for those inside;
    /// the memory is not accessed again through it. Sleeps.
    pub(crate) fn close(&self) {
        self.users.close();
    }

    /// The offset of `[addr, addr + len)` in the region, if it lies within.
    pub(crate) fn offset_of(&self, addr: u64, len: u64) -> Option<u64> {
        let off = addr.checked_sub(self.iova)?;
        let end = off.checked_add(len)?;
        (end <= self.mem.len()).then_some(off)
    }
}

/// What a fast-registration MR is registered with by REG_MR.
struct FastMr {
    id: MrId,
    pd: PdId,
    pages: Arc<Memory>,
    /// Every registration of it shares the MR's gate, which only its
    /// deregistration closes: an invalidation may come in atomic context,
    /// and the pages are the kernel consumer's, not released on drop.
    users: Arc<Gate>,
}

/// Why a fast-registration work request failed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadKey;

/// One slot of the table; what [`Mrs::remove`] hands back to drop.
pub(crate) struct Slot {
    /// Set when the slot was filled: what the MR's own key says.
    generation: u8,
    /// The low byte of the keys that name the region now: the generation,
    /// or what the last REG_MR of a fast-registration MR set.
    key: u8,
    /// The registration; `None` while a fast-registration MR is invalid.
    entry: Option<MrEntry>,
    fast: Option<FastMr>,
}

impl Slot {
    /// Closes the MR to transfers and waits for those inside. Sleeps.
    pub(crate) fn close(&self) {
        if let Some(entry) = &self.entry {
            entry.close();
        }
        if let Some(fast) = &self.fast {
            fast.users.close();
        }
    }
}

struct Slots {
    table: Table<Slot>,
    /// Bumped on each registration.
    generation: u8,
}

impl Slots {
    /// The slot `key` names now.
    fn named(&mut self, key: MrKey) -> Option<&mut Slot> {
        self.table
            .get_mut(key.slot())
            .filter(|s| s.key == key.generation())
    }
}

/// The device's MRs; its lock is held only to find or swap an entry.
#[pin_data]
pub(crate) struct Mrs {
    #[pin]
    slots: IrqSpinLock<Slots>,
}

impl Mrs {
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let slots = Slots {
            table: Table::new(limits::MAX_MR)?,
            generation: 0,
        };
        Ok(try_pin_init!(Self {
            slots <- new_irq_spinlock!(slots, "rsoft_mrs"),
        }? Error))
    }

    /// Fills a free slot with `entry` and `fast` under a new generation;
    /// hands them back when the table is full, to be dropped outside the
    /// lock.
    fn insert(&self, entry: Option<MrEntry>, fast: Option<FastMr>) -> Result<MrKey, Slot> {
        let mut slots = self.slots.lock();
        let generation = slots.generation.wrapping_add(1);
        let slot = Slot {
            generation,
            key: generation,
            entry,
            fast,
        };
        let index = slots.table.insert(slot)?;
        slots.generation = generation;
        Ok(MrKey((index << 8) | u32::from(generation)))
    }

    /// Registers `entry`; ENOMEM when the table is full (the entry is
    /// dropped outside the lock).
    pub(crate) fn insert_entry(&self, entry: MrEntry) -> Result<MrKey> {
        self.insert(Some(entry), None).map_err(|_| ENOMEM)
    }

    /// Takes a slot for the fast-registration MR `id` of `pd` over `pages`,
    /// invalid until [`Mrs::register_fast`].
    pub(crate) fn insert_fast(&self, id: MrId, pd: PdId, pages: Arc<Memory>) -> Result<MrKey> {
        let fast = FastMr {
            id,
            pd,
            pages,
            users: new_users()?,
        };
        self.insert(None, Some(fast)).map_err(|_| ENOMEM)
    }

    /// The MR `key` names, if it is registered and valid.
    pub(crate) fn get(&self, key: MrKey) -> Option<MrEntry> {
        self.slots.lock().named(key)?.entry.clone()
    }

    /// Whether the MR `key` names is registered, valid and passes `check`,
    /// which sees it under the table's lock: a check keeps no reference,
    /// so it takes none (and never drops the last one of a memory).
    pub(crate) fn passes(&self, key: MrKey, check: impl FnOnce(&MrEntry) -> bool) -> bool {
        let mut slots = self.slots.lock();
        slots
            .named(key)
            .and_then(|slot| slot.entry.as_ref())
            .is_some_and(check)
    }

    /// Enters the MR `key` names to access its memory, if it is
    /// registered, valid, admitted by `grant` and not being deregistered.
    pub(crate) fn enter(&self, key: MrKey, grant: Grant) -> Option<MrUse> {
        let entry = self.get(key).filter(|mr| grant.admits(mr))?;
        // Not `then_some`: an `MrUse` made and dropped here would leave a
        // gate it never entered.
        if !entry.users.enter() {
            return None;
        }
        let inside = Inside(entry.users.clone());
        Some(MrUse {
            entry,
            _inside: inside,
        })
    }

    /// Puts `entry` in place of the MR `key` names and returns the old
    /// one, or hands `entry` back: the caller drops either outside the
    /// lock.
    pub(crate) fn replace(&self, key: MrKey, entry: MrEntry) -> Result<MrEntry, MrEntry> {
        let mut slots = self.slots.lock();
        match slots.named(key).and_then(|s| s.entry.as_mut()) {
            Some(old) => Ok(core::mem::replace(old, entry)),
            None => Err(entry),
        }
    }

    /// Removes the MR created with `key`, whatever keys name it now; the
    /// caller drops it outside the lock.
    pub(crate) fn remove(&self, key: MrKey) -> Option<Slot> {
        let mut slots = self.slots.lock();
        if slots.table.get(key.slot())?.generation != key.generation() {
            return None;
        }
        slots.table.remove(key.slot())
    }

    /// Executes a REG_MR of a QP of `pd`: the fast-registration MR `reg`
    /// names must be of `pd`, invalid, and the new key may change only the
    /// low byte of its keys. Then it maps the pages its last `map_mr_sg`
    /// stored, at `reg.iova`, with `reg.access`, under the new key.
    pub(crate) fn register_fast(&self, pd: PdId, reg: &FastReg) -> Result<(), BadKey> {
        let (key, index) = (MrKey::of(reg.key), MrKey::of(reg.mr_key).slot());
        let mut slots = self.slots.lock();
        let slot = slots.table.get_mut(index).ok_or(BadKey)?;
        let (mem, users) = match &slot.fast {
            Some(f)
                if f.id == reg.mr && f.pd == pd && slot.entry.is_none() && key.slot() == index =>
            {
                (f.pages.clone(), f.users.clone())
            }
            _ => return Err(BadKey),
        };
        slot.entry = Some(MrEntry {
            pd,
            iova: reg.iova,
            access: reg.access,
            mem,
            users,
        });
        slot.key = key.generation();
        Ok(())
    }

    /// Invalidates the fast-registration MR of `pd` that `key` names (valid
    /// or not); returns what it mapped for the caller to drop outside the
    /// lock.
    pub(crate) fn invalidate(&self, pd: PdId, key: MrKey) -> Result<Option<MrEntry>, BadKey> {
        let mut slots = self.slots.lock();
        let slot = slots.named(key).ok_or(BadKey)?;
        if !slot.fast.as_ref().is_some_and(|f| f.pd == pd) {
            return Err(BadKey);
        }
        Ok(slot.entry.take())
    }
}
