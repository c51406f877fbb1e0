// SPDX-License-Identifier: GPL-2.0

//! The verbs of rsoft's memory regions: each lives in the device's MR
//! table, under its key.

use crate::{
    device::RsoftDevice,
    ib::{self, Access, Key, Memory, MrRereg, PdId},
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
        let mr = Arc::new(
            MrEntry {
                pd,
                iova,
                access,
                mem: Arc::new(mem, GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let inserted = dev.net.mrs().insert(mr);
        // A refused MR is dropped here, outside the lock (it unpins).
        let key = inserted.map_err(|_| ENOMEM)?;
        Ok((key.key(), Mr { key }))
    }

    fn deregister(self: Pin<&Self>, dev: &RsoftDevice) {
        drop(dev.net.mrs().remove(self.key));
    }

    fn rereg(&self, dev: &RsoftDevice, change: &MrRereg) -> Result {
        // The core serialises calls on one MR: what is read here stays.
        let old = dev.net.mrs().get(self.key).ok_or(EINVAL)?;
        let access = change.access.unwrap_or(old.access);
        let (iova, mem) = match (change.pin(access)?, change.new_iova()) {
            (Some(mem), Some(iova)) => (iova, Arc::new(mem, GFP_KERNEL)?),
            _ => (old.iova, old.mem.clone()),
        };
        let new = Arc::new(
            MrEntry {
                pd: change.pd.unwrap_or(old.pd),
                iova,
                access,
                mem,
            },
            GFP_KERNEL,
        )?;
        // The old region goes when its last transfer is done with it.
        drop(dev.net.mrs().replace(self.key, new)?);
        Ok(())
    }
}
