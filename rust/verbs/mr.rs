// SPDX-License-Identifier: GPL-2.0

//! The verbs of rsoft's memory regions: each lives in the device's MR
//! table, under its key.

use crate::{
    device::RsoftDevice,
    ib::{self, Access, Key, Memory, MrId, MrRereg, PageList, PdId},
    limits,
    mr::{Mr, MrEntry},
};
use kernel::{prelude::*, sync::Arc};

#[vtable]
impl ib::MrOps for Mr {
    type Device = RsoftDevice;

    fn register(
        dev: &RsoftDevice,
        pd: PdId,
        mem: Memory,
        iova: u64,
        access: Access,
    ) -> Result<(Key, impl PinInit<Self>)> {
        let entry = MrEntry::new(pd, iova, access, Arc::new(mem, GFP_KERNEL)?)?;
        // A refused MR is dropped outside the lock (it unpins).
        let key = dev.net.mrs().insert_entry(entry)?;
        Ok((key.key(), Mr { key, pages: None }))
    }

    fn alloc_fast(
        dev: &RsoftDevice,
        pd: PdId,
        id: MrId,
        max_pages: u32,
    ) -> Result<(Key, impl PinInit<Self>)> {
        if max_pages > limits::MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let pages = Arc::new(Memory::Pages(PageList::new(max_pages)?), GFP_KERNEL)?;
        let key = dev.net.mrs().insert_fast(id, pd, pages.clone())?;
        let pages = Some(pages);
        Ok((key.key(), Mr { key, pages }))
    }

    fn pages(&self) -> Option<&PageList> {
        match self.pages.as_deref()? {
            Memory::Pages(list) => Some(list),
            _ => None,
        }
    }

    fn deregister(self: Pin<&Self>, dev: &RsoftDevice) {
        if let Some(slot) = dev.net.mrs().remove(self.key) {
            slot.close();
        }
    }

    fn rereg(&self, dev: &RsoftDevice, change: &MrRereg) -> Result {
        // The core serialises calls on one MR: what is read here stays.
        let old = dev.net.mrs().get(self.key).ok_or(EINVAL)?;
        let access = change.access.unwrap_or(old.access);
        let (iova, mem) = match (change.pin(access)?, change.new_iova()) {
            (Some(mem), Some(iova)) => (iova, Arc::new(mem, GFP_KERNEL)?),
            _ => (old.iova, old.mem.clone()),
        };
        let new = MrEntry::new(change.pd.unwrap_or(old.pd), iova, access, mem)?;
        // Transfers under the old registration finish (or stop) first; its
        // memory goes when the last of them lets go.
        match dev.net.mrs().replace(self.key, new) {
            Ok(old) => old.close(),
            Err(new) => {
                drop(new);
                return Err(EINVAL);
            }
        }
        Ok(())
    }
}
