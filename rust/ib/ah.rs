// SPDX-License-Identifier: GPL-2.0

//! Address handles: where a UD send goes. The `ib` layer keeps each
//! handle's address itself, so that a send WR can be read without the
//! driver's help; the driver only admits or refuses a handle.

use super::{
    attr::{Gid, GidType},
    bindings,
    object::CoreObject,
};
use kernel::prelude::*;

/// The global route of an address (the GRH a packet carries).
#[derive(Clone, Copy, Default)]
pub(crate) struct Grh {
    pub(crate) dgid: Gid,
    /// The source GID (entry `sgid_index` of the port's table when the
    /// address was made) and its kind.
    pub(crate) sgid: Gid,
    pub(crate) sgid_type: GidType,
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
}

/// A destination port (`struct rdma_ah_attr`): a LID on InfiniBand, a GID
/// (GRH mandatory) on RoCE.
#[derive(Clone, Copy, Default)]
pub(crate) struct Address {
    /// Zero on RoCE.
    pub(crate) dlid: u16,
    pub(crate) port: u32,
    /// Present when the consumer asked for a GRH (`IB_AH_GRH`); always on
    /// RoCE.
    pub(crate) grh: Option<Grh>,
}

impl Address {
    /// Reads an IB or RoCE address vector.
    ///
    /// # Safety
    ///
    /// `a.grh.sgid_attr` is NULL or a GID attribute the core holds for the
    /// call, as in every address vector it hands a driver.
    pub(super) unsafe fn from_c(a: &bindings::rdma_ah_attr) -> Result<Self> {
        let dlid = match a.type_ {
            // SAFETY: the type is IB, so the `ib` member is the valid one.
            bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB => unsafe {
                a.__bindgen_anon_1.ib.dlid
            },
            bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE => 0,
            _ => return Err(EINVAL),
        };
        let grh = if u32::from(a.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0 {
            // SAFETY: per the function's contract.
            let sgid = unsafe { a.grh.sgid_attr.as_ref() };
            Some(Grh {
                // SAFETY: every bit pattern is a valid GID.
                dgid: Gid(unsafe { a.grh.dgid.raw }),
                sgid: sgid
                    .map(|s| {
                        // SAFETY: as above.
                        Gid(unsafe { s.gid.raw })
                    })
                    .unwrap_or_default(),
                sgid_type: sgid.map_or(GidType::Ib, |s| GidType::from_c(s.gid_type)),
                flow_label: a.grh.flow_label,
                sgid_index: a.grh.sgid_index,
                hop_limit: a.grh.hop_limit,
                traffic_class: a.grh.traffic_class,
            })
        } else if a.type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE {
            return Err(EINVAL);
        } else {
            None
        };
        Ok(Self {
            dlid,
            port: a.port_num,
            grh,
        })
    }

    /// Writes the address into a (zeroed) address vector of a port whose
    /// link layer `roce` says.
    pub(super) fn write_to(&self, a: &mut bindings::rdma_ah_attr, roce: bool) {
        a.port_num = self.port;
        if roce {
            a.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        } else {
            a.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB;
            a.__bindgen_anon_1.ib.dlid = self.dlid;
        }
        if let Some(g) = &self.grh {
            a.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
            a.grh.dgid.raw = g.dgid.0;
            a.grh.flow_label = g.flow_label;
            a.grh.sgid_index = g.sgid_index;
            a.grh.hop_limit = g.hop_limit;
            a.grh.traffic_class = g.traffic_class;
        }
    }
}

/// An address handle: the `ib` layer's own data is its address.
pub(super) type AhObject = CoreObject<bindings::ib_ah, Address>;

/// Reads the address a live address handle was created with.
///
/// # Safety
///
/// `ah` is NULL or an address handle of a device registered by
/// [`super::Devices`], live for `'a`.
pub(super) unsafe fn address<'a>(ah: *const bindings::ib_ah) -> Option<&'a Address> {
    if ah.is_null() {
        return None;
    }
    // SAFETY: per the function's contract the data was initialised by
    // `create_ah` and stays until `destroy_ah`.
    Some(unsafe { AhObject::data(ah) }.get_ref())
}
