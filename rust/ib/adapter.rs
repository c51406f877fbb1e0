// SPDX-License-Identifier: GPL-2.0

//! The const `ib_device_ops` table that routes the core's calls to a
//! driver's [`Verbs`]: each kind of object adds its own ops ([`CqAdapter`],
//! [`QpAdapter`], [`MrAdapter`], [`SrqAdapter`]); the device's own, its
//! ports', user contexts' and PDs' are here, its address handles' and
//! counters' beside.

mod ah;
mod counters;

use super::{
    ah::AhObject,
    attr::{Gid, GidType, LinkLayer},
    bindings,
    cq::CqAdapter,
    device_data::{dealloc_driver, link, DeviceObject, OnDevice},
    mr::MrAdapter,
    object::CoreObject,
    qp::QpAdapter,
    srq::SrqAdapter,
    verbs::Verbs,
};
use core::{convert::Infallible, fmt::Write, marker::PhantomData, mem::MaybeUninit};
use kernel::{error::from_result, ffi};

/// Routes the core's C calls to the [`Verbs`] of `T`.
///
/// # Invariants
///
/// Its ops are only in [`Self::OPS`], which only [`super::Devices`] of a
/// `T` registers.
pub(super) struct Adapter<T>(PhantomData<T>);

type UcontextObject<T> = CoreObject<bindings::ib_ucontext, <T as Verbs>::Ucontext>;
type PdObject<T> = CoreObject<bindings::ib_pd, <T as Verbs>::Pd>;

// SAFETY: by the type invariant its ops are only in tables of devices
// registered by `Devices` of a `T`, whose data is a `T::Device`.
unsafe impl<T: Verbs> OnDevice for Adapter<T> {
    type Device = T::Device;
}

impl<T: Verbs> Adapter<T> {
    /// The device's ops: its own verbs and those of each kind of object.
    pub(super) const OPS: bindings::ib_device_ops = {
        let ops = bindings::ib_device_ops {
            // With ABI 1 the provider sends every verb through the
            // kernel (Documentation/rsoft.rst); the driver id is
            // `Provider`'s.
            uverbs_abi_ver: 1,
            dealloc_driver: Some(dealloc_driver::<T::Device>),
            add_gid: Some(Self::add_gid),
            get_link_layer: Some(Self::get_link_layer),
            del_gid: Some(Self::del_gid),
            query_device: Some(Self::query_device),
            query_port: Some(Self::query_port),
            get_port_immutable: Some(Self::get_port_immutable),
            query_gid: Some(Self::query_gid),
            query_pkey: Some(Self::query_pkey),
            get_dev_fw_str: Some(Self::get_dev_fw_str),
            alloc_ucontext: Some(Self::alloc_ucontext),
            disassociate_ucontext: Some(Self::disassociate_ucontext),
            dealloc_ucontext: Some(Self::dealloc_ucontext),
            alloc_pd: Some(Self::alloc_pd),
            dealloc_pd: Some(Self::dealloc_pd),
            alloc_hw_port_stats: if T::HAS_PORT_COUNTERS {
                Some(Self::alloc_hw_port_stats)
            } else {
                None
            },
            get_hw_stats: if T::HAS_PORT_COUNTERS {
                Some(Self::get_hw_stats)
            } else {
                None
            },
            create_ah: Some(Self::create_ah),
            create_user_ah: Some(Self::create_ah),
            destroy_ah: Some(Self::destroy_ah),
            size_ib_ucontext: UcontextObject::<T>::SIZE,
            size_ib_pd: PdObject::<T>::SIZE,
            size_ib_ah: AhObject::SIZE,
            // SAFETY: all-zero is a valid `ib_device_ops`: no op, no
            // size.
            ..unsafe { MaybeUninit::zeroed().assume_init() }
        };
        // SAFETY: the table is set only on devices of `Devices<T>`, whose
        // data is a `DeviceData<T::Device>` (`Devices::register`). `Verbs`
        // makes every object type's `Device` `T::Device`, and a QP's `Cq`
        // and `Srq` `T::Cq` and `T::Srq`, whose ops these are: every CQ,
        // QP, MR and SRQ of such a device comes from these ops.
        unsafe {
            let ops = CqAdapter::<T::Cq>::ops(ops);
            let ops = QpAdapter::<T::Qp>::ops(ops);
            let ops = MrAdapter::<T::Mr>::ops(ops);
            SrqAdapter::<T::Srq>::ops(ops)
        }
    };

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_device`.
    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: the core calls this on our device with a valid `attr`.
        let (data, attr) = unsafe { (DeviceObject::<T::Device>::data(ib), &mut *attr) };
        T::device_attr(&data.driver).write_to(attr);
        if data.link_layer == LinkLayer::Ethernet {
            // A link's device goes with `rdma link delete`.
            attr.kernel_cap_flags |= u64::from(bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG);
        }
        0
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_port`.
    unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core calls this on our device, for one of its
            // ports, with a valid `attr`.
            let (dev, link, attr) =
                unsafe { (Self::device(ib), link::<T::Device>(ib, port), &mut *attr) };
            T::port_attr(dev, port, link)?.write_to(attr);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.get_port_immutable`.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        immutable: *mut bindings::ib_port_immutable,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core calls this on our device, for one of its
            // ports, with a valid pointer.
            let (dev, link, immutable) = unsafe {
                (
                    Self::device(ib),
                    link::<T::Device>(ib, port),
                    &mut *immutable,
                )
            };
            let attr = T::port_attr(dev, port, link)?;
            immutable.pkey_tbl_len = attr.pkey_tbl_len.into();
            immutable.gid_tbl_len = attr.gid_tbl_len.try_into()?;
            (immutable.core_cap_flags, immutable.max_mad_size) = attr.core_caps();
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_gid`.
    unsafe extern "C" fn query_gid(
        ib: *mut bindings::ib_device,
        port: u32,
        index: ffi::c_int,
        gid: *mut bindings::ib_gid,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core calls this on our device with a valid `gid`.
            let (dev, gid) = unsafe { (Self::device(ib), &mut *gid) };
            gid.raw = T::gid(dev, port, index.try_into()?)?.0;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.get_link_layer`.
    unsafe extern "C" fn get_link_layer(
        ib: *mut bindings::ib_device,
        _port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: the core calls this on our device.
        match unsafe { DeviceObject::<T::Device>::data(ib) }.link_layer {
            LinkLayer::InfiniBand => bindings::rdma_link_layer_IB_LINK_LAYER_INFINIBAND,
            LinkLayer::Ethernet => bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET,
        }
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.add_gid`.
    unsafe extern "C" fn add_gid(
        attr: *const bindings::ib_gid_attr,
        _context: *mut *mut ffi::c_void,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core passes a valid attribute of one of our
            // devices' RoCE ports.
            let (a, dev) = unsafe { (&*attr, Self::device((*attr).device)) };
            // SAFETY: every bit pattern is a valid GID.
            let gid = Gid(unsafe { a.gid.raw });
            T::add_gid(
                dev,
                a.port_num,
                a.index.into(),
                gid,
                GidType::from_c(a.gid_type),
            )?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.del_gid`.
    unsafe extern "C" fn del_gid(
        attr: *const bindings::ib_gid_attr,
        _context: *mut *mut ffi::c_void,
    ) -> ffi::c_int {
        // SAFETY: as for `add_gid`.
        let (a, dev) = unsafe { (&*attr, Self::device((*attr).device)) };
        T::del_gid(dev, a.port_num, a.index.into());
        0
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.query_pkey`.
    unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core calls this on our device with a valid `pkey`.
            let (dev, pkey) = unsafe { (Self::device(ib), &mut *pkey) };
            *pkey = T::pkey(dev, port, index)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.get_dev_fw_str`.
    unsafe extern "C" fn get_dev_fw_str(ib: *mut bindings::ib_device, out: *mut ffi::c_char) {
        // SAFETY: the core passes a buffer of IB_FW_VERSION_NAME_MAX bytes.
        let buf = unsafe {
            core::slice::from_raw_parts_mut(
                out.cast::<u8>(),
                bindings::IB_FW_VERSION_NAME_MAX as usize,
            )
        };
        // SAFETY: the core calls this on our device.
        let fw = T::device_attr(unsafe { Self::device(ib) }).fw_ver;
        let mut w = CStrWriter { buf, len: 0 };
        // Cannot fail: the longest version is 17 bytes.
        let _ = write!(w, "{}.{}.{}", fw >> 32, (fw >> 16) & 0xffff, fw & 0xffff);
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.alloc_ucontext`.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core allocated `uctx` with `size_ib_ucontext` bytes
            // and set its `device` to our device.
            unsafe {
                let dev = Self::device((*uctx).device);
                let Ok(()) = UcontextObject::<T>::init::<Infallible>(uctx, T::new_ucontext(dev)?);
            }
            Ok(0)
        })
    }

    /// Having this op lets the core take a device away from the processes
    /// that use it (`rdma link delete`, netdev removal, rmmod): it destroys
    /// their objects through the ordinary destroy verbs and the processes
    /// see `IBV_EVENT_DEVICE_FATAL`. There is nothing else to undo: rsoft
    /// maps nothing into a process.
    ///
    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.disassociate_ucontext`.
    unsafe extern "C" fn disassociate_ucontext(_uctx: *mut bindings::ib_ucontext) {}

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.dealloc_ucontext`.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: `uctx` was initialised by `alloc_ucontext`; the core frees
        // it after this returns and uses it no more.
        unsafe { UcontextObject::<T>::drop_data(uctx) };
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.alloc_pd`.
    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        from_result(|| {
            // SAFETY: the core allocated `pd` with `size_ib_pd` bytes and set
            // its `device` to our device.
            unsafe {
                let dev = Self::device((*pd).device);
                let Ok(()) = PdObject::<T>::init::<Infallible>(pd, T::new_pd(dev)?);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Only the RDMA core calls this, as `ib_device_ops.dealloc_pd`.
    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> ffi::c_int {
        // SAFETY: `pd` was initialised by `alloc_pd`; the core frees it after
        // this returns and uses it no more.
        unsafe {
            T::release_pd(Self::device((*pd).device), PdObject::<T>::data(pd));
            PdObject::<T>::drop_data(pd);
        }
        0
    }
}

/// Formats into a fixed C buffer, always leaving it NUL-terminated.
struct CStrWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Write for CStrWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.buf.len().saturating_sub(self.len + 1);
        if s.len() > room {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
        self.buf[self.len] = 0;
        Ok(())
    }
}
