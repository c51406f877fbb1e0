// SPDX-License-Identifier: GPL-2.0

//! rsoft's completion queue: the pure [`Ring`] behind an IRQ-safe lock, and
//! the delivery of the events the ring asks for, outside that lock.

use crate::{
    ib::{self, CqArm, CqRef, IrqSpinLock, Wc, WcSink},
    new_irq_spinlock,
    ring::{Arm, Overrun, Pushed, Ring, TooSmall},
};
use kernel::{c_str, new_condvar, prelude::*, sync::CondVar};

type CqRing = Ring<Wc, KVVec<Wc>>;

/// A completion queue.
#[pin_data]
pub(crate) struct RsoftCq {
    #[pin]
    ring: IrqSpinLock<CqRing>,
    /// Signalled when the last in-flight event of a closing CQ is done.
    #[pin]
    quiet: CondVar,
}

/// Kernel memory for `capacity` completions.
fn storage(capacity: u32) -> Result<KVVec<Wc>> {
    let capacity = capacity as usize;
    let mut slots = KVVec::with_capacity(capacity, GFP_KERNEL)?;
    for _ in 0..capacity {
        slots.push(Wc::EMPTY, GFP_KERNEL)?;
    }
    Ok(slots)
}

/// An event a push asked for, delivered once the pusher's locks are gone.
/// It counts as in flight on its CQ, whose destroy waits for it, until it
/// is dropped: delivered or not, dropping it lets that destroy go on.
pub(crate) struct CqEvent {
    cq: CqRef<RsoftCq>,
    error: bool,
}

impl CqEvent {
    /// Whether it is a completion event (not a CQ error).
    pub(crate) fn is_completion(&self) -> bool {
        !self.error
    }

    /// Whether `other` is the same event of the same CQ: one delivery
    /// tells the consumer of both.
    pub(crate) fn same_as(&self, other: &Self) -> bool {
        core::ptr::eq(&*self.cq.data(), &*other.cq.data()) && self.error == other.error
    }

    /// Calls the consumer's handler.
    pub(crate) fn deliver(self) {
        if self.error {
            self.cq.error_event();
        } else {
            self.cq.completion_event();
        }
    }
}

impl Drop for CqEvent {
    fn drop(&mut self) {
        // The event's hold keeps the CQ until this is done.
        let data = self.cq.data();
        let wake = data.ring.lock().event_done();
        if wake {
            data.quiet.notify_all();
        }
    }
}

/// What became of a completion pushed by a QP.
pub(crate) struct Outcome {
    /// The event to deliver once locks are dropped.
    pub(crate) event: Option<CqEvent>,
    /// The CQ overran: the producing QP must go to the error state.
    pub(crate) overran: bool,
}

impl RsoftCq {
    pub(crate) fn new(capacity: u32, ignore_overrun: bool) -> Result<impl PinInit<Self>> {
        let ring = Ring::new(storage(capacity)?, ignore_overrun);
        Ok(pin_init!(Self {
            ring <- new_irq_spinlock!(ring, "rsoft_cq"),
            quiet <- new_condvar!("rsoft_cq_quiet"),
        }))
    }

    /// Queues `wc` on `cq`. `event`: it satisfies a solicited arming.
    pub(crate) fn push(cq: &CqRef<RsoftCq>, wc: Wc, event: bool) -> Outcome {
        let pushed = cq.data().ring.lock().push(wc, event);
        let (raise, overran) = match pushed {
            Pushed::Queued { raise } | Pushed::Overwrote { raise } => (raise, false),
            Pushed::Overrun { raise } => {
                return Outcome {
                    event: raise.then(|| CqEvent {
                        cq: cq.clone(),
                        error: true,
                    }),
                    overran: true,
                };
            }
            Pushed::Dropped => (false, true),
        };
        Outcome {
            event: raise.then(|| CqEvent {
                cq: cq.clone(),
                error: false,
            }),
            overran,
        }
    }

    pub(crate) fn poll(&self, out: &mut WcSink<'_>) -> Result {
        let mut ring = self.ring.lock();
        ring.poll_each(out.room(), |wc| out.push(wc))
            .map(|_| ())
            .map_err(|Overrun| EIO)
    }

    pub(crate) fn arm(&self, how: CqArm) -> bool {
        let how = match how {
            CqArm::Solicited => Arm::Solicited,
            CqArm::NextCompletion => Arm::NextCompletion,
        };
        self.ring.lock().arm(how)
    }

    pub(crate) fn resize(&self, capacity: u32) -> Result {
        let new = storage(capacity)?;
        let result = self.ring.lock().resize(new);
        // Whichever storage is left over is freed here, outside the lock.
        match result {
            Ok(_old) => Ok(()),
            Err((_new, TooSmall)) => Err(EINVAL),
        }
    }

    /// Removes the completions of `qp`; returns how many.
    pub(crate) fn purge(&self, qp: ib::QpName<'_>) -> usize {
        self.ring.lock().retain(|wc| !wc.qp.is(qp))
    }

    /// Reports ring depth, queued count, arming, error state and overruns.
    pub(crate) fn fill_res(&self, attrs: &mut ib::DriverAttrs<'_>) -> Result {
        let (depth, queued, arm, overrun, overruns) = {
            let ring = self.ring.lock();
            let arm = match ring.arm_state() {
                Arm::None => 0,
                Arm::Solicited => 1,
                Arm::NextCompletion => 2,
            };
            (
                ring.capacity(),
                ring.queued(),
                arm,
                ring.is_overrun(),
                ring.overruns(),
            )
        };
        attrs.put_u32(c_str!("depth"), depth.try_into()?)?;
        attrs.put_u32(c_str!("queued"), queued.try_into()?)?;
        attrs.put_u32(c_str!("armed"), arm)?;
        attrs.put_u32(c_str!("overrun"), overrun.into())?;
        attrs.put_u64(c_str!("overruns"), overruns)
    }

    /// Stops events and waits until none is in flight.
    pub(crate) fn close(&self) {
        let mut ring = self.ring.lock();
        if !ring.close() {
            while !ring.is_quiet() {
                self.quiet.wait(&mut ring);
            }
        }
    }
}
