// SPDX-License-Identifier: GPL-2.0
//! Property test: the ring against a plain VecDeque model, over random
//! sequences of push / poll(n) / arm / resize / retain, with completions
//! that count themselves (none copied, none leaked).

use proptest::prelude::*;
use rsoft_ring::{Arm, Overrun, Pushed, Ring, TooSmall};
use std::{collections::VecDeque, rc::Rc};

/// Polls into a slice, as `ib_poll_cq` does into its `ib_wc` array.
fn poll<T: Default>(ring: &mut Ring<T, Vec<T>>, out: &mut [T]) -> Result<usize, Overrun> {
    let mut filled = 0;
    ring.poll_each(out.len(), |v| {
        out[filled] = v;
        filled += 1;
    })
}

/// A completion that counts itself, as the kernel's name of a QP in a
/// completion does: the ring must move it, never copy or leak it.
#[derive(Default)]
struct Cqe(Option<(u32, Rc<()>)>);

impl Cqe {
    fn value(&self) -> u32 {
        self.0.as_ref().map_or(0, |(v, _)| *v)
    }
}

fn storage(cap: usize) -> Vec<Cqe> {
    (0..cap).map(|_| Cqe::default()).collect()
}

#[derive(Clone, Debug)]
enum Op {
    Push {
        event: bool,
    },
    Poll(usize),
    Arm(Arm),
    Resize(usize),
    /// Drop the completions whose value is a multiple of this.
    Purge(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => any::<bool>().prop_map(|event| Op::Push { event }),
        4 => (0usize..12).prop_map(Op::Poll),
        2 => prop_oneof![Just(Arm::None), Just(Arm::Solicited), Just(Arm::NextCompletion)]
            .prop_map(Op::Arm),
        1 => (1usize..12).prop_map(Op::Resize),
        1 => (2u32..5).prop_map(Op::Purge),
    ]
}

struct Model {
    queue: VecDeque<u32>,
    cap: usize,
    arm: Arm,
    ignore_overrun: bool,
    overrun: bool,
    drained: bool,
}

impl Model {
    fn push(&mut self, v: u32, event: bool) -> Pushed {
        if self.overrun {
            return Pushed::Dropped;
        }
        let overwrote = self.queue.len() == self.cap;
        if overwrote {
            if !self.ignore_overrun {
                self.overrun = true;
                return Pushed::Overrun { raise: true };
            }
            self.queue.pop_front();
        }
        self.queue.push_back(v);
        let raise = self.arm == Arm::NextCompletion || (self.arm == Arm::Solicited && event);
        if raise {
            self.arm = Arm::None;
        }
        if overwrote {
            Pushed::Overwrote { raise }
        } else {
            Pushed::Queued { raise }
        }
    }
}

fn run(cap: usize, ignore_overrun: bool, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut ring = Ring::new(storage(cap), ignore_overrun);
    // Every `Cqe` alive holds one more reference to this.
    let live = Rc::new(());
    let mut model = Model {
        queue: VecDeque::new(),
        cap,
        arm: Arm::None,
        ignore_overrun,
        overrun: false,
        drained: false,
    };
    let mut next = 0u32;
    for op in ops {
        match op {
            Op::Push { event } => {
                next += 1;
                let got = ring.push(Cqe(Some((next, live.clone()))), event);
                prop_assert_eq!(got, model.push(next, event));
                if matches!(
                    got,
                    Pushed::Queued { raise: true }
                        | Pushed::Overwrote { raise: true }
                        | Pushed::Overrun { raise: true }
                ) {
                    prop_assert!(!ring.event_done());
                }
            }
            Op::Poll(n) => {
                let mut out = storage(n);
                let got = poll(&mut ring, &mut out);
                let out: Vec<u32> = out.iter().map(Cqe::value).collect();
                let take = n.min(model.queue.len());
                if take == 0 && model.overrun && n > 0 && model.drained {
                    prop_assert_eq!(got, Err(Overrun));
                } else if take == 0 && model.overrun && n > 0 {
                    model.drained = true;
                    prop_assert_eq!(got, Ok(0));
                } else {
                    prop_assert_eq!(got, Ok(take));
                    let want: Vec<u32> = model.queue.drain(..take).collect();
                    prop_assert_eq!(&out[..take], &want[..]);
                }
            }
            Op::Arm(how) => {
                let missed = ring.arm(how);
                if !(how == Arm::Solicited && model.arm == Arm::NextCompletion) {
                    model.arm = how;
                }
                prop_assert_eq!(missed, !model.queue.is_empty());
            }
            Op::Resize(new_cap) => match ring.resize(storage(new_cap)) {
                Ok(old) => {
                    prop_assert!(new_cap >= model.queue.len());
                    prop_assert_eq!(old.len(), model.cap);
                    model.cap = new_cap;
                }
                Err((_, TooSmall)) => prop_assert!(new_cap < model.queue.len()),
            },
            Op::Purge(k) => {
                let before = model.queue.len();
                model.queue.retain(|v| v % k != 0);
                prop_assert_eq!(
                    ring.retain(|v| v.value() % k != 0),
                    before - model.queue.len()
                );
            }
        }
        prop_assert_eq!(ring.queued(), model.queue.len());
        prop_assert_eq!(Rc::strong_count(&live) - 1, model.queue.len());
        prop_assert_eq!(ring.capacity(), model.cap);
        prop_assert_eq!(ring.arm_state(), model.arm);
        prop_assert_eq!(ring.is_overrun(), model.overrun);
        prop_assert!(ring.is_quiet());
    }
    // Everything still queued comes out in order.
    let mut out = storage(ring.queued());
    prop_assert_eq!(poll(&mut ring, &mut out), Ok(model.queue.len()));
    let out: Vec<u32> = out.iter().map(Cqe::value).collect();
    prop_assert_eq!(out, Vec::from(model.queue));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn matches_model(cap in 1usize..8, ops in prop::collection::vec(op(), 0..200)) {
        run(cap, false, ops)?;
    }

    #[test]
    fn matches_model_ignoring_overrun(cap in 1usize..8, ops in prop::collection::vec(op(), 0..200)) {
        run(cap, true, ops)?;
    }
}

#[test]
fn overrun_keeps_earlier_completions_then_fails() {
    let mut ring = Ring::new(vec![0u32; 3], false);
    for v in 1..=3 {
        assert_eq!(ring.push(v, false), Pushed::Queued { raise: false });
    }
    assert_eq!(ring.push(4, false), Pushed::Overrun { raise: true });
    assert!(!ring.event_done());
    assert_eq!(ring.push(5, false), Pushed::Dropped);
    let mut out = [0u32; 2];
    assert_eq!(poll(&mut ring, &mut out), Ok(2));
    assert_eq!(out, [1, 2]);
    assert_eq!(poll(&mut ring, &mut out), Ok(1));
    assert_eq!(out[0], 3);
    // One empty answer ends the uverbs call that drained it; then errors.
    assert_eq!(poll(&mut ring, &mut out), Ok(0));
    assert_eq!(poll(&mut ring, &mut out), Err(Overrun));
    assert_eq!(poll(&mut ring, &mut out), Err(Overrun));
    assert_eq!(ring.overruns(), 2);
}

#[test]
fn closing_stops_events() {
    let mut ring = Ring::new(vec![0u32; 2], false);
    ring.arm(Arm::NextCompletion);
    assert_eq!(ring.push(1, false), Pushed::Queued { raise: true });
    assert!(!ring.close());
    ring.arm(Arm::NextCompletion);
    assert_eq!(ring.push(2, false), Pushed::Queued { raise: false });
    assert!(ring.event_done());
    assert!(ring.is_quiet());
}
