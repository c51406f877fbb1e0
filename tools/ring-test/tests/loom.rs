// SPDX-License-Identifier: GPL-2.0
//! Model check (loom) of the CQ's event protocol as the kernel uses it: the
//! ring behind one lock, handlers called after the lock is dropped, destroy
//! closing the ring and waiting until no handler is in flight.
//!
//! Run: RUSTFLAGS="--cfg loom" cargo test --release --test loom
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use rsoft_ring::{Arm, Pushed, Ring};

struct Cq {
    ring: Mutex<Ring<u32, Vec<u32>>>,
    quiet: Condvar,
    events: AtomicUsize,
    destroyed: AtomicBool,
}

impl Cq {
    fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            ring: Mutex::new(Ring::new(vec![0; cap], false)),
            quiet: Condvar::new(),
            events: AtomicUsize::new(0),
            destroyed: AtomicBool::new(false),
        })
    }

    /// A producer completing one work request.
    fn complete(&self, v: u32) {
        let pushed = self.ring.lock().unwrap().push(v, false);
        let raise = matches!(
            pushed,
            Pushed::Queued { raise: true }
                | Pushed::Overwrote { raise: true }
                | Pushed::Overrun { raise: true }
        );
        if raise {
            // The consumer's handler, outside the lock.
            assert!(
                !self.destroyed.load(Ordering::SeqCst),
                "handler after destroy"
            );
            self.events.fetch_add(1, Ordering::SeqCst);
            if self.ring.lock().unwrap().event_done() {
                self.quiet.notify_all();
            }
        }
    }

    fn destroy(&self) {
        let mut ring = self.ring.lock().unwrap();
        if !ring.close() {
            while !ring.is_quiet() {
                ring = self.quiet.wait(ring).unwrap();
            }
        }
        drop(ring);
        self.destroyed.store(true, Ordering::SeqCst);
    }
}

/// One arming, two completions racing with it: at most one event, and
/// exactly one when a completion lands after the arming.
#[test]
fn one_event_per_arm() {
    loom::model(|| {
        let cq = Cq::new(4);
        let producer = {
            let cq = cq.clone();
            thread::spawn(move || {
                cq.complete(1);
                cq.complete(2);
            })
        };
        let missed = cq.ring.lock().unwrap().arm(Arm::NextCompletion);
        producer.join().unwrap();
        let events = cq.events.load(Ordering::SeqCst);
        assert!(events <= 1);
        // REPORT_MISSED_EVENTS said nothing was waiting: then the event
        // must have come (the consumer would sleep forever otherwise).
        if !missed {
            assert_eq!(events, 1);
        }
    });
}

/// Destroy racing with producers and an arming: no handler runs once
/// destroy has returned, and destroy does return.
#[test]
fn no_handler_after_destroy() {
    loom::model(|| {
        let cq = Cq::new(1);
        cq.ring.lock().unwrap().arm(Arm::NextCompletion);
        let producers: Vec<_> = (1..=2)
            .map(|v| {
                let cq = cq.clone();
                thread::spawn(move || cq.complete(v))
            })
            .collect();
        cq.destroy();
        for p in producers {
            p.join().unwrap();
        }
        assert!(cq.ring.lock().unwrap().is_quiet());
    });
}
