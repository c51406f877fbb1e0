// SPDX-License-Identifier: GPL-2.0

//! A fixed-size table of objects indexed by slot, with a stack of free
//! slots so that inserting never allocates (it runs under a spinlock).

use kernel::prelude::*;

pub(crate) struct Table<T> {
    slots: KVVec<Option<T>>,
    /// `free[..nfree]` are the free slots, lowest on top.
    free: KVVec<u32>,
    nfree: usize,
}

impl<T> Table<T> {
    pub(crate) fn new(size: u32) -> Result<Self> {
        let mut slots = KVVec::with_capacity(size as usize, GFP_KERNEL)?;
        let mut free = KVVec::with_capacity(size as usize, GFP_KERNEL)?;
        for i in 0..size {
            slots.push(None, GFP_KERNEL)?;
            free.push(size - 1 - i, GFP_KERNEL)?;
        }
        Ok(Self {
            slots,
            free,
            nfree: size as usize,
        })
    }

    /// Stores `item` in a free slot, or hands it back when the table is full.
    pub(crate) fn insert(&mut self, item: T) -> Result<u32, T> {
        if self.nfree == 0 {
            return Err(item);
        }
        self.nfree -= 1;
        let slot = self.free[self.nfree];
        self.slots[slot as usize] = Some(item);
        Ok(slot)
    }

    /// Takes the object out of `slot`; the caller drops it outside the lock.
    pub(crate) fn remove(&mut self, slot: u32) -> Option<T> {
        let item = self.slots.get_mut(slot as usize)?.take()?;
        self.free[self.nfree] = slot;
        self.nfree += 1;
        Some(item)
    }

    pub(crate) fn get(&self, slot: u32) -> Option<&T> {
        self.slots.get(slot as usize)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, slot: u32) -> Option<&mut T> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    /// The occupied slots from `from` on, in order.
    pub(crate) fn iter_from(&self, from: u32) -> impl Iterator<Item = (u32, &T)> {
        let from = (from as usize).min(self.slots.len());
        self.slots[from..]
            .iter()
            .zip(from as u32..)
            .filter_map(|(item, slot)| Some((slot, item.as_ref()?)))
    }
}
