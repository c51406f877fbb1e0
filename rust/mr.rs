// SPDX-License-Identifier: GPL-2.0

//! Memory regions and the device's table of them.
//!
//! A region is immutable once registered (`rereg_mr` replaces it under the
//! same key) and reference counted: a transfer holds the regions it copies
//! from and to, so a concurrent `dereg_mr` never frees memory under it; the
//! pages are unpinned when the last holder lets go.

use crate::{
    ib::{Access, IrqSpinLock, Key, Memory, PdId},
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
    pub(crate) key: MrKey,
}

/// A registered memory region.
pub(crate) struct MrEntry {
    pub(crate) pd: PdId,
    /// The address the region starts at in the consumer's view.
    pub(crate) iova: u64,
    pub(crate) access: Access,
    pub(crate) mem: Arc<Memory>,
}

impl MrEntry {
    /// The offset of `[addr, addr + len)` in the region, if it lies within.
    pub(crate) fn offset_of(&self, addr: u64, len: u64) -> Option<u64> {
        let off = addr.checked_sub(self.iova)?;
        let end = off.checked_add(len)?;
        (end <= self.mem.len()).then_some(off)
    }
}

struct Slots {
    table: Table<(u8, Arc<MrEntry>)>,
    /// Bumped on each registration.
    generation: u8,
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

    /// Registers `mr`; hands it back when the table is full.
    pub(crate) fn insert(&self, mr: Arc<MrEntry>) -> Result<MrKey, Arc<MrEntry>> {
        let mut slots = self.slots.lock();
        let generation = slots.generation.wrapping_add(1);
        let slot = slots.table.insert((generation, mr)).map_err(|(_, mr)| mr)?;
        slots.generation = generation;
        Ok(MrKey((slot << 8) | u32::from(generation)))
    }

    /// The MR `key` names, if it is still registered.
    pub(crate) fn get(&self, key: MrKey) -> Option<Arc<MrEntry>> {
        let slots = self.slots.lock();
        let (generation, mr) = slots.table.get(key.slot())?;
        (*generation == key.generation()).then(|| mr.clone())
    }

    /// Puts `mr` in place of the MR `key` names; returns the old one for
    /// the caller to drop outside the lock.
    pub(crate) fn replace(&self, key: MrKey, mr: Arc<MrEntry>) -> Result<Arc<MrEntry>> {
        let mut slots = self.slots.lock();
        match slots.table.get_mut(key.slot()) {
            Some((generation, old)) if *generation == key.generation() => {
                Ok(core::mem::replace(old, mr))
            }
            _ => Err(EINVAL),
        }
    }

    /// Removes the MR `key` names; the caller drops it outside the lock.
    pub(crate) fn remove(&self, key: MrKey) -> Option<Arc<MrEntry>> {
        let mut slots = self.slots.lock();
        if slots.table.get(key.slot())?.0 != key.generation() {
            return None;
        }
        slots.table.remove(key.slot()).map(|(_, mr)| mr)
    }
}
