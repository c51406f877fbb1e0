// SPDX-License-Identifier: GPL-2.0

//! A gate that counts the users inside an object and lets its destroy close
//! the gate and wait until the last user has left: what makes a reference
//! found in a table safe to use after the table lock is dropped.

use crate::{ib::IrqSpinLock, new_irq_spinlock};
use kernel::{new_condvar, prelude::*, sync::CondVar};

struct Users {
    inside: u32,
    closed: bool,
}

#[pin_data]
pub(crate) struct Gate {
    #[pin]
    users: IrqSpinLock<Users>,
    /// Signalled when the last user leaves a closed gate.
    #[pin]
    empty: CondVar,
}

impl Gate {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            users <- new_irq_spinlock!(Users { inside: 0, closed: false }, "rsoft_gate"),
            empty <- new_condvar!("rsoft_gate_empty"),
        })
    }

    /// Enters, unless the gate is closed.
    pub(crate) fn enter(&self) -> bool {
        let mut users = self.users.lock();
        if users.closed {
            return false;
        }
        users.inside += 1;
        true
    }

    /// Leaves after a successful [`Gate::enter`].
    pub(crate) fn leave(&self) {
        let wake = {
            let mut users = self.users.lock();
            users.inside = users.inside.saturating_sub(1);
            users.closed && users.inside == 0
        };
        if wake {
            self.empty.notify_all();
        }
    }

    /// Whether the gate is closing: a long operation inside should stop.
    pub(crate) fn is_closed(&self) -> bool {
        self.users.lock().closed
    }

    /// Closes the gate and waits until every user has left. Sleeps.
    pub(crate) fn close(&self) {
        let mut users = self.users.lock();
        users.closed = true;
        while users.inside > 0 {
            self.empty.wait(&mut users);
        }
    }
}
