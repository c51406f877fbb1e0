// SPDX-License-Identifier: GPL-2.0

//! Address handles: where a UD send goes. The `ib` layer keeps each
//! handle's address itself, so that a send WR can be read without the
//! driver's help; the driver only admits or refuses a handle.

use super::{attr::Gid, bindings, object::CoreObject, verbs::Adapter, Verbs};
use kernel::{error::from_result, ffi, prelude::*};

/// The global route of an address (the GRH a packet carries).
#[derive(Clone, Copy)]
pub(crate) struct Grh {
    pub(crate) dgid: Gid,
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
}

/// A destination port (`struct rdma_ah_attr`, IB link layer).
#[derive(Clone, Copy)]
pub(crate) struct Address {
    pub(crate) dlid: u16,
    pub(crate) port: u32,
    /// Present when the consumer asked for a GRH (`IB_AH_GRH`).
    pub(crate) grh: Option<Grh>,
}

impl Address {
    /// Reads an IB address vector.
    fn from_c(a: &bindings::rdma_ah_attr) -> Result<Self> {
        if a.type_ != bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB {
            return Err(EINVAL);
        }
        let grh = (u32::from(a.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0).then_some(Grh {
            // SAFETY: every bit pattern is a valid GID.
            dgid: Gid(unsafe { a.grh.dgid.raw }),
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
        });
        Ok(Self {
            // SAFETY: the type is IB, so the `ib` member is the valid one.
            dlid: unsafe { a.__bindgen_anon_1.ib.dlid },
            port: a.port_num,
            grh,
        })
    }
}

type AhObject = CoreObject<bindings::ib_ah, Address>;

/// Reads the address a live address handle was created with.
///
/// # Safety
///
/// `ah` is NULL or an address handle of a device whose verbs are routed by
/// [`Adapter`], live for `'a`.
pub(super) unsafe fn address<'a>(ah: *const bindings::ib_ah) -> Option<&'a Address> {
    if ah.is_null() {
        return None;
    }
    // SAFETY: per the function's contract the data was initialised by
    // `create_ah` and stays until `destroy_ah`.
    Some(unsafe { AhObject::data(ah) }.get_ref())
}

impl<T: Verbs> Adapter<T> {
    pub(super) const AH_SIZE: usize = AhObject::SIZE;

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.create_ah` or
    /// `create_user_ah`.
    pub(super) unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes an AH allocated with `size_ib_ah`
            // bytes, its device set, and a valid address vector.
            unsafe {
                let addr = Address::from_c(&*(*init).ah_attr)?;
                let dev = Self::device((*ah).device);
                T::new_ah(dev, &addr)?;
                if let Err(e) = AhObject::init(ah, addr) {
                    T::release_ah(dev);
                    return Err(e);
                }
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.destroy_ah`.
    pub(super) unsafe extern "C" fn destroy_ah(
        ah: *mut bindings::ib_ah,
        _flags: u32,
    ) -> ffi::c_int {
        // SAFETY: `ah` was initialised by `create_ah`; the core frees it
        // after this returns. Sends copy the address when posted, so no WQE
        // refers to it.
        unsafe {
            T::release_ah(Self::device((*ah).device));
            AhObject::drop_data(ah);
        }
        0
    }
}
