// SPDX-License-Identifier: GPL-2.0

//! The completion ring of a CQ: pure logic, no kernel dependency.
//!
//! The caller hands in the storage (kvmalloc'd in the kernel, a `Vec` in the
//! host tests) and serialises all calls (the CQ's lock); the ring decides
//! what happens to each completion and tells the caller which event to raise
//! once the lock is dropped. Host `cargo test` runs this very file.

use core::ops::DerefMut;

/// How a CQ is armed for its next completion event (`ib_req_notify_cq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arm {
    /// Not armed: no event.
    None,
    /// An event for the next solicited (or error) completion.
    Solicited,
    /// An event for the next completion of any kind.
    NextCompletion,
}

/// What became of a pushed completion.
///
/// Where `raise` is true the caller must, after dropping the lock, call the
/// consumer's handler (completion or `IB_EVENT_CQ_ERR`) and then
/// [`Ring::event_done`]; that pairing is what lets [`Ring::close`] wait out
/// every handler in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Queued; `raise`: a completion event is due.
    Queued { raise: bool },
    /// The ring was full and overruns are ignored: the oldest completion was
    /// overwritten to make room. `raise`: a completion event is due.
    Overwrote { raise: bool },
    /// The ring was full: the completion is dropped and the ring is now in
    /// the error state (returned for the first overrun only). `raise`:
    /// `IB_EVENT_CQ_ERR` is due.
    Overrun { raise: bool },
    /// The ring is already in the error state; the completion is dropped.
    Dropped,
}

/// The ring has overrun and all completions queued before that are polled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overrun;

/// Resizing would drop queued completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooSmall;

/// A bounded FIFO of completions.
///
/// A completion may own something that its drop gives back (the kernel's
/// name of a QP is counted on the QP): the ring moves completions, never
/// copies them, and drops one it loses (overwritten, purged). Unused slots
/// hold `T::default()`.
///
/// # Invariants
///
/// `head < slots.len()` (or both 0 when empty storage), `len <= slots.len()`;
/// the queued completions are `slots[head..]` wrapped around, `len` of them.
pub struct Ring<T: Default, S: DerefMut<Target = [T]>> {
    slots: S,
    head: usize,
    len: usize,
    arm: Arm,
    ignore_overrun: bool,
    overrun: bool,
    /// An overrun ring was found empty once (see [`Ring::poll_each`]).
    drained: bool,
    overruns: u64,
    /// Handlers decided on but not yet reported done.
    in_flight: u32,
    closing: bool,
}

impl<T: Default, S: DerefMut<Target = [T]>> Ring<T, S> {
    /// A ring holding up to `slots.len()` completions.
    pub fn new(slots: S, ignore_overrun: bool) -> Self {
        Self {
            slots,
            head: 0,
            len: 0,
            arm: Arm::None,
            ignore_overrun,
            overrun: false,
            drained: false,
            overruns: 0,
            in_flight: 0,
            closing: false,
        }
    }

    /// How many completions fit.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// How many completions are queued.
    pub fn queued(&self) -> usize {
        self.len
    }

    /// The current arming.
    pub fn arm_state(&self) -> Arm {
        self.arm
    }

    /// Whether the ring has overrun (sticky).
    pub fn is_overrun(&self) -> bool {
        self.overrun
    }

    /// Completions lost to a full ring (dropped or overwritten).
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    fn slot(&self, i: usize) -> usize {
        let cap = self.slots.len();
        let j = self.head + i;
        if j >= cap {
            j - cap
        } else {
            j
        }
    }

    /// Appends a completion. `event` says whether it satisfies a solicited
    /// arming (a solicited or an error completion).
    pub fn push(&mut self, cqe: T, event: bool) -> Pushed {
        if self.overrun {
            self.overruns += 1;
            return Pushed::Dropped;
        }
        let cap = self.slots.len();
        let overwrote = if self.len < cap {
            let tail = self.slot(self.len);
            self.slots[tail] = cqe;
            self.len += 1;
            false
        } else if self.ignore_overrun && cap > 0 {
            // "The CQE will always be written to the next entry": the oldest.
            let tail = self.head;
            self.slots[tail] = cqe;
            self.head = self.slot(1);
            self.overruns += 1;
            true
        } else {
            self.overrun = true;
            self.overruns += 1;
            return Pushed::Overrun {
                raise: self.begin_event(),
            };
        };
        let due = match self.arm {
            Arm::NextCompletion => true,
            Arm::Solicited => event,
            Arm::None => false,
        };
        let raise = due && self.begin_event();
        if due {
            self.arm = Arm::None;
        }
        if overwrote {
            Pushed::Overwrote { raise }
        } else {
            Pushed::Queued { raise }
        }
    }

    fn begin_event(&mut self) -> bool {
        if self.closing {
            return false;
        }
        self.in_flight += 1;
        true
    }

    /// Reports that a handler [`Pushed`] asked for has returned. Returns
    /// whether a [`Ring::close`] is waiting for exactly this.
    pub fn event_done(&mut self) -> bool {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.closing && self.in_flight == 0
    }

    /// Stops all further events. Returns whether no handler is in flight;
    /// otherwise the caller waits until [`Ring::event_done`] says so.
    pub fn close(&mut self) -> bool {
        self.closing = true;
        self.in_flight == 0
    }

    /// Whether no handler is in flight.
    pub fn is_quiet(&self) -> bool {
        self.in_flight == 0
    }

    /// Hands up to `max` of the oldest completions to `take`, in order,
    /// moving them out, and returns how many.
    ///
    /// An overrun ring, once drained, answers 0 to the first poll and
    /// [`Overrun`] to every later one: uverbs polls one completion at a
    /// time and fails the whole system call on an error, which would lose
    /// the completions it already took in that call.
    pub fn poll_each(&mut self, max: usize, mut take: impl FnMut(T)) -> Result<usize, Overrun> {
        let n = max.min(self.len);
        if n == 0 && self.overrun && max > 0 {
            if self.drained {
                return Err(Overrun);
            }
            self.drained = true;
            return Ok(0);
        }
        for i in 0..n {
            let from = self.slot(i);
            take(core::mem::take(&mut self.slots[from]));
        }
        self.head = if n == self.len { 0 } else { self.slot(n) };
        self.len -= n;
        Ok(n)
    }

    /// Arms the ring for one completion event and returns whether
    /// completions are already waiting (for `IB_CQ_REPORT_MISSED_EVENTS`).
    /// A solicited arming never weakens a pending next-completion one.
    pub fn arm(&mut self, how: Arm) -> bool {
        if !(how == Arm::Solicited && self.arm == Arm::NextCompletion) {
            self.arm = how;
        }
        self.len > 0
    }

    /// Moves the queued completions, in order, into `slots`, which becomes
    /// the storage; returns the old storage for the caller to free.
    pub fn resize(&mut self, mut slots: S) -> Result<S, (S, TooSmall)> {
        if slots.len() < self.len {
            return Err((slots, TooSmall));
        }
        for (i, to) in slots.iter_mut().take(self.len).enumerate() {
            let from = self.slot(i);
            *to = core::mem::take(&mut self.slots[from]);
        }
        self.head = 0;
        Ok(core::mem::replace(&mut self.slots, slots))
    }

    /// Keeps only the completions for which `keep` holds, in order; drops
    /// the others and returns how many.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) -> usize {
        let mut kept = 0;
        for i in 0..self.len {
            let from = self.slot(i);
            let cqe = core::mem::take(&mut self.slots[from]);
            if keep(&cqe) {
                let to = self.slot(kept);
                self.slots[to] = cqe;
                kept += 1;
            }
        }
        let removed = self.len - kept;
        self.len = kept;
        if kept == 0 {
            self.head = 0;
        }
        removed
    }
}
