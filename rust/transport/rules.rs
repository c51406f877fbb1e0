// SPDX-License-Identifier: GPL-2.0

//! The rules of the QP types, in one place: what a `modify_qp` may set and
//! to what, which work requests each type posts and carries, with which
//! BTH opcode, and whether its requests are acknowledged.
//!
//! Which attributes a type may set in which transition is the core's table
//! (`ib_modify_qp_is_ok`, through [`QpModify::valid_from`]): UD and GSI
//! never get a path, UC no retries or responder resources, and so on. The
//! values are checked here against the device's limits, which are the same
//! for every type that may set them; rxe's `rxe_qp_chk_attr()` is the
//! reference, tightened where a field is narrower on the wire than in
//! `struct ib_qp_attr`. A refused modify is EINVAL and changes nothing: the
//! rules run before any of it is applied.

use super::packet::Opcode;
use crate::{
    ib::{Access, Address, MigState, QpModify, QpState, QpType, SendOp, SendWr},
    limits,
    net::{Link, ROCE_GIDS},
};
use kernel::prelude::*;

/// What a QP type carries.
struct Service {
    /// The transport bits of its BTH opcodes (IBA 9.2, the top three).
    transport: u8,
    /// RDMA WRITE, with or without immediate.
    write: bool,
    /// RDMA READ and atomics: the responder keeps resources for them.
    read_atomic: bool,
    /// Fast registration, local invalidation and SEND_WITH_INV.
    memory: bool,
    /// The responder answers every request, and the requester tries again
    /// until it does: reliable.
    acknowledged: bool,
}

const RC: Service = Service {
    transport: 0x00,
    write: true,
    read_atomic: true,
    memory: true,
    acknowledged: true,
};

/// No responder resources, no acknowledgements: nothing comes back.
const UC: Service = Service {
    transport: 0x20,
    write: true,
    read_atomic: false,
    memory: false,
    acknowledged: false,
};

/// UD and GSI: datagrams, each to an address.
const UD: Service = Service {
    transport: 0x60,
    write: false,
    read_atomic: false,
    memory: false,
    acknowledged: false,
};

impl Service {
    fn of(qp_type: QpType) -> &'static Self {
        match qp_type {
            QpType::Rc => &RC,
            QpType::Uc => &UC,
            QpType::Ud | QpType::Gsi => &UD,
        }
    }
}

/// Whether a QP of type `qp_type` carries requests of `opcode`, as a
/// requester and as a responder.
pub(crate) fn carries(qp_type: QpType, opcode: Opcode) -> bool {
    let s = Service::of(qp_type);
    match opcode {
        Opcode::Send | Opcode::SendImm => true,
        Opcode::SendInv => s.memory,
        Opcode::Write | Opcode::WriteImm => s.write,
        Opcode::Read | Opcode::CompareSwap | Opcode::FetchAdd => s.read_atomic,
    }
}

/// The BTH opcode of a one-packet request of `opcode` on `qp_type`;
/// whether the type carries it at all is [`carries`]'s answer.
pub(crate) fn bth(qp_type: QpType, opcode: Opcode) -> u8 {
    Service::of(qp_type).transport | opcode.operation()
}

/// Whether a responder of `qp_type` answers each request: only RC's
/// requester waits for an answer and tries again without one; UC and UD
/// drop what they cannot take, and nobody is told.
pub(crate) fn acknowledged(qp_type: QpType) -> bool {
    Service::of(qp_type).acknowledged
}

/// Whether a QP in `state` takes requests: its receive side runs from RTR
/// on, and goes on while its send queue drains (SQD) or is in error (SQE,
/// IBA C10-38).
pub(crate) fn takes_requests(state: QpState) -> bool {
    matches!(
        state,
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    )
}

/// Whether a QP in `state` takes answers to its requests: from RTS on, and
/// while its send queue drains, so that the requests in flight complete.
pub(crate) fn takes_answers(state: QpState) -> bool {
    matches!(state, QpState::Rts | QpState::Sqd)
}

/// Whether a QP of type `qp_type` may post `wr`.
pub(crate) fn may_post(qp_type: QpType, wr: &SendWr<'_>) -> bool {
    let s = Service::of(qp_type);
    let op = match wr.op {
        SendOp::Send => true,
        SendOp::RdmaWrite(_) => s.write,
        SendOp::RdmaRead(_) | SendOp::CompareSwap { .. } | SendOp::FetchAdd { .. } => s.read_atomic,
        SendOp::Local(_) => s.memory,
    };
    op && (s.memory || wr.invalidate.is_none()) && (!qp_type.is_datagram() || wr.datagram.is_some())
}

/// The device's one port (ports count from 1).
const PORT: u32 = 1;
/// The Local ACK Timeout and the RNR NAK timer are 5-bit codes.
const TIMER_MAX: u32 = 31;
/// Retry counts are 3 bits (7 RNR retries: for ever).
const RETRY_MAX: u32 = 7;
/// A QP number is 24 bits on the wire. The core masks PSNs, also 24 bits,
/// to that before the driver sees them (as some consumers pass random
/// 32-bit ones); a QP number it passes as given, and one that does not fit
/// names no QP.
const QPN_MAX: u32 = (1 << 24) - 1;

/// Whether `a` names a source on this device's port: an InfiniBand port has
/// one GID, a RoCE port needs a GRH (the core checked its source GID is
/// one of the port's). For address handles and QP paths alike.
pub(crate) fn address_ok(link: &Link, a: &Address) -> bool {
    let (gids, grh_needed) = match link {
        Link::Ib { .. } => (limits::IB_GIDS, false),
        Link::Roce => (ROCE_GIDS, true),
    };
    let source_ok = match a.grh {
        Some(g) => u32::from(g.sgid_index) < gids,
        None => !grh_needed,
    };
    a.port == PORT && source_ok
}

/// Whether an attribute is unset or `ok` with its value: 6.12's minimum
/// Rust predates `Option::is_none_or`, which 7.x's clippy asks for in place
/// of `map_or(true, ..)`.
fn unset_or<T>(v: Option<T>, ok: impl FnOnce(T) -> bool) -> bool {
    match v {
        Some(v) => ok(v),
        None => true,
    }
}

/// Checks a modify of a QP in state `current` on a device whose port is
/// `link`, whose send queue is `draining` in SQD: EINVAL unless every
/// attribute it sets is one its QP type may set now, with a value the
/// device takes.
pub(crate) fn check_modify(link: &Link, current: QpState, draining: bool, m: &QpModify) -> Result {
    let at_most = |v: Option<u8>, max: u32| unset_or(v, |v| u32::from(v) <= max);
    let ok = m.valid_from(current)
        // Back to RTS, or SQD again with new attributes, only once the
        // send queue drained (IBA 10.3.1), as rxe has it; to ERR at any
        // time, and to RESET, which rxe refuses too but IBA allows from
        // every state.
        && !(draining && matches!(m.state, Some(QpState::Rts | QpState::Sqd)))
        // A consumer that believes the QP is elsewhere acts on a stale view.
        && unset_or(m.cur_state, |s| s == current)
        && unset_or(m.pkey_index, |i| i < limits::PKEY_TABLE_LEN)
        && unset_or(m.port, |p| p == PORT)
        && unset_or(m.av, |a| address_ok(link, &a))
        && unset_or(m.path_mtu, |mtu| mtu <= limits::MAX_MTU)
        && at_most(m.timeout, TIMER_MAX)
        && at_most(m.min_rnr_timer, TIMER_MAX)
        && at_most(m.retry_cnt, RETRY_MAX)
        && at_most(m.rnr_retry, RETRY_MAX)
        && at_most(m.max_rd_atomic, limits::MAX_RD_ATOM)
        && at_most(m.max_dest_rd_atomic, limits::MAX_RD_ATOM)
        && unset_or(m.dest_qpn, |n| n.get() <= QPN_MAX)
        && unset_or(m.access_flags, |a| Access::QP_FLAGS.contains(a))
        // No automatic path migration (none is advertised): no alternate
        // path, so no migration state but the one without it. rxe's
        // ports, RoCE, get the same EINVAL from the core.
        && !m.alt_path
        && unset_or(m.path_mig_state, |s| s == MigState::Migrated);
    // Any Q_Key goes: uverbs keeps the controlled ones (bit 31) from
    // processes without CAP_NET_RAW.
    if ok {
        Ok(())
    } else {
        Err(EINVAL)
    }
}
