// SPDX-License-Identifier: GPL-2.0

//! An RC requester's window on a wire whose answers come later, in
//! softirq (the RoCEv2 wire): the send WQEs at the front of the queue
//! whose requests left, with the PSNs each took. The requester goes on
//! sending while the window has room; the receive path notes how far the
//! answers reach (an ACK answers every PSN up to its own, so the responder
//! may coalesce them, IBA 9.7.5.1.2), and the completer retires WQEs in
//! order from it on the QP's next run. A NAK, a READ response that skips
//! one, or the local ACK timeout sends the requests again from the first
//! PSN not answered (go-back-N).

use crate::psn::Psn;

/// Most requests in flight at once.
const MAX_WQES: usize = 32;

/// Most PSNs in flight at once: as rxe's 128 unacknowledged PSNs. A
/// request that takes more leaves alone, as many packets at a time as the
/// answers leave room for.
const MAX_PSNS: u32 = 128;
const _: () = assert!(MAX_PSNS <= u128::BITS);

/// A long message asks for an ACK every this many packets, so that its
/// later packets may leave as the answers come.
pub(crate) const ACK_EVERY: u32 = 32;

/// An answer from the wire: the PSN it names and what it says.
#[derive(Clone, Copy)]
pub(crate) struct Answer {
    pub(crate) psn: Psn,
    pub(crate) outcome: Outcome,
}

/// What an answer says.
#[derive(Clone, Copy)]
pub(crate) enum Outcome {
    /// Its AETH syndrome.
    Aeth(u8),
    /// Its data (a READ's, an atomic's) could not be placed in the
    /// requester's buffers: an MR of theirs went.
    Fault,
}

/// Whether an AETH's `syndrome` is an ACK's (IBA 9.7.5.2.6: its top three
/// bits are 0; an RNR NAK's are 1 and another NAK's 3, the low five bits
/// the credits, the timer or the NAK code).
pub(crate) fn is_ack(syndrome: u8) -> bool {
    syndrome >> 5 == 0
}

/// Whether `answer` is an RNR NAK (see [`is_ack`]).
fn is_rnr_nak(answer: &Answer) -> bool {
    matches!(answer.outcome, Outcome::Aeth(syndrome) if syndrome >> 5 == 1)
}

/// Where the send WQE that a step acts on stands.
#[derive(Clone, Copy)]
pub(crate) enum Leg {
    /// Its request has not left: the requester sends it.
    Unsent,
    /// Sent; no answer yet, and the wait for one has not run out.
    Waiting,
    /// Sent, and to be sent again: the wait for an answer ran out, or the
    /// responder asked for it again.
    Due,
    /// Sent in part: the answers leave room for more of its packets.
    Rest,
    /// Answered.
    Answered(Answer),
}

/// A request that left.
#[derive(Clone, Copy, Default)]
pub(crate) struct Sent {
    pub(crate) first: Psn,
    pub(crate) last: Psn,
    /// The first of its PSNs whose packet has not left: past `last` once
    /// all have.
    pub(crate) out: Psn,
    /// A READ or an atomic: answered with data, which an ACK of a later
    /// PSN cannot stand for.
    pub(crate) returns: bool,
}

/// What an answer says beyond how far the answers reach.
#[derive(Clone, Copy)]
pub(crate) enum Event {
    /// Send again from the first PSN not answered: a sequence-error NAK,
    /// or an answer past a READ or atomic whose data did not all come.
    Resend,
    /// The request at the first PSN not answered was refused (a NAK,
    /// an RNR NAK among them) or its data could not be placed.
    Refused(Answer),
}

/// The requests in flight, oldest first: a ring. Entry `i` is the send
/// queue's WQE `i`, counted from its front.
#[derive(Default)]
pub(crate) struct Window {
    sent: [Sent; MAX_WQES],
    start: usize,
    len: usize,
    /// How many of them left since the requester last went back: the next
    /// to leave is this one (sent again, when below `len`).
    cursor: usize,
    /// The first PSN not answered.
    expect: Psn,
    event: Option<Event>,
    /// `expect` when a READ response past it had the requests sent
    /// again: a skip is acted on once, not once per packet after it.
    skipped: Option<Psn>,
    /// A request stopped sending its packets for a NAK ([`Window::stopped`]):
    /// the window is sent again even if an answer clears the NAK first.
    cut: bool,
    /// `expect` when an RNR NAK refused the request there. A responder
    /// that refused one goes on answering the packets after it with a
    /// sequence-error NAK at the same PSN (rxe does, once a round), which
    /// may come after the RNR timer ran out; the request is sent again at
    /// the timer's end anyway, so such a NAK is the refusal's and neither
    /// sends it again sooner nor spends a retry.
    rnr: Option<Psn>,
    /// The requester went back to a READ or atomic at the front: only it
    /// leaves again until it is answered. A responder replays every READ
    /// asked for again in full, in order (rxe does, with nothing dropped
    /// for a later copy), so sending the whole window again after each
    /// timeout or gap has it queue replay behind replay, and the answer
    /// the front waits for comes later each time: under loss and
    /// reordering, RETRY_EXC in every run (rsoft's 64 KiB READs from rxe
    /// under netem).
    alone: bool,
    /// The READ response packets placed past a missing one: bit `i` for
    /// PSN `expect + i` (bit 0 is never set: that one is the next).
    /// [`MAX_PSNS`] bits cover every PSN in flight.
    ahead: u128,
}

impl Window {
    /// Entry `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Sent> {
        (i < self.len).then(|| self.sent[(self.start + i) % MAX_WQES])
    }

    pub(crate) fn front(&self) -> Option<Sent> {
        self.get(0)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// The first PSN not answered is now `to`, or past it, over the READ
    /// response packets placed there before: what was said of the one
    /// before is past.
    fn reach(&mut self, to: Psn) {
        let moved = to.since(self.expect);
        self.ahead = self.ahead.checked_shr(moved).unwrap_or(0);
        self.expect = to;
        while self.ahead & 1 == 1 {
            self.ahead >>= 1;
            self.expect = self.expect.next();
        }
        self.event = None;
        self.rnr = None;
    }

    /// Whether a READ response packet at `psn` may be placed past the
    /// first PSN not answered, and noted.
    pub(crate) fn may_note(&self, psn: Psn) -> bool {
        (1..MAX_PSNS).contains(&psn.since(self.expect))
    }

    /// The READ response packet at `psn` ([`Window::may_note`]) was placed.
    pub(crate) fn note(&mut self, psn: Psn) {
        if self.may_note(psn) {
            self.ahead |= 1u128 << psn.since(self.expect);
        }
    }

    /// Forgets every request: a RESET, or a new `sq_psn`.
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Whether the front request is answered in full.
    pub(crate) fn front_answered(&self) -> bool {
        self.front()
            .is_some_and(|f| self.expect.since(f.first) > f.last.since(f.first))
    }

    /// Where the front request goes on from when sent again, in PSNs from
    /// its first.
    pub(crate) fn resume(&self) -> u32 {
        self.front().map_or(0, |f| self.expect.since(f.first))
    }

    /// How many PSNs from the first not answered are missing before the
    /// first READ response packet placed past it, if any was: the front
    /// READ sent again asks for those alone, and the packets noted after
    /// them are not sent twice. Only while a packet at or past that READ's
    /// last is noted: once the part asked for is placed, it is what has
    /// [`Window::placed`] ask for the next part. Of a READ longer than
    /// [`MAX_PSNS`], the packets past the bitmap's reach were dropped
    /// unnoted; asked for in part, the rest would never be asked for with
    /// a local ACK timeout of 0. Such a READ is asked for whole.
    pub(crate) fn hole(&self) -> Option<u32> {
        let last = self.front()?.last.since(self.expect);
        (self.top()? >= last).then(|| self.ahead.trailing_zeros())
    }

    /// The furthest READ response packet noted past the first PSN not
    /// answered, in PSNs from it; `None` if none is.
    fn top(&self) -> Option<u32> {
        (u128::BITS - 1).checked_sub(self.ahead.leading_zeros())
    }

    /// Where more of the front request's packets go on from, in PSNs from
    /// its first, if some have not left and the answers leave room for at
    /// least [`ACK_EVERY`] more.
    pub(crate) fn rest(&self) -> Option<u32> {
        let f = self.front()?;
        let out = f.out.since(f.first);
        let flying = f.out.since(self.expect);
        (out <= f.last.since(f.first) && flying + ACK_EVERY <= MAX_PSNS).then_some(out)
    }

    /// How many of the `packets` of request `index` may have left once it
    /// is sent now: all, unless it is the front and more than `MAX_PSNS`
    /// of them would be unanswered.
    pub(crate) fn send_to(&self, index: usize, packets: u32) -> u32 {
        if index > 0 {
            return packets;
        }
        let answered = self.front().map_or(0, |f| self.expect.since(f.first));
        packets.min(answered.saturating_add(MAX_PSNS))
    }

    /// Whether the answers refused a PSN sent (a NAK) and the requester
    /// has yet to act on it.
    pub(crate) fn refused(&self) -> bool {
        self.event.is_some()
    }

    /// How many of the requests in flight are READs or atomics.
    pub(crate) fn reads(&self) -> usize {
        (0..self.len)
            .filter(|&i| self.get(i).is_some_and(|s| s.returns))
            .count()
    }

    /// A request stopped sending its packets for [`Window::refused`]:
    /// those left behind are sent with the window again, which the NAK
    /// asks for; should an answer clear it first (a reordered packet that
    /// closed the gap), nothing else would send them but a timeout.
    pub(crate) fn stopped(&mut self) {
        self.cut = true;
    }

    /// Takes what the answers said beyond how far they reach, or that the
    /// window is to be sent again for a request cut short.
    pub(crate) fn take_event(&mut self) -> Option<Event> {
        self.event
            .take()
            .or_else(|| core::mem::take(&mut self.cut).then_some(Event::Resend))
    }

    /// The requests are sent again, from the front: all of them, or the
    /// front alone until it is answered if it is a READ or atomic.
    pub(crate) fn go_back(&mut self) {
        self.cursor = 0;
        self.cut = false;
        self.alone = self.front().is_some_and(|f| f.returns);
    }

    /// Whether request `index`, of `psns` PSNs, may leave now: a READ or
    /// atomic if `returns`, one that waits for those before it if
    /// `fenced`. One sent before may (only the front, after going back to
    /// a READ or atomic there); a new one if the window is empty,
    /// or has room for it: at most `max_rd_atomic` READs and atomics (one
    /// if 0), and `MAX_PSNS` PSNs.
    pub(crate) fn has_room(
        &self,
        index: usize,
        psns: u32,
        returns: bool,
        fenced: bool,
        max_rd_atomic: u8,
    ) -> bool {
        if self.alone && index > 0 {
            return false;
        }
        if index < self.len || self.len == 0 {
            return true;
        }
        let (Some(front), Some(back)) = (self.front(), self.get(self.len - 1)) else {
            return true;
        };
        let psns_out = back.last.since(front.first) + 1;
        let reads = self.reads();
        self.len < MAX_WQES
            && psns_out.saturating_add(psns) <= MAX_PSNS
            && (!returns || reads < usize::from(max_rd_atomic.max(1)))
            && (!fenced || reads == 0)
    }

    /// Request `index` (`sent`) leaves: returns whether it is new to the
    /// window.
    pub(crate) fn leave(&mut self, index: usize, sent: Sent) -> bool {
        self.cursor = index + 1;
        if index < self.len {
            self.sent[(self.start + index) % MAX_WQES].out = sent.out;
            return false;
        }
        if self.len == 0 {
            self.ahead = 0;
            self.reach(sent.first);
            self.skipped = None;
        }
        self.sent[(self.start + self.len) % MAX_WQES] = sent;
        self.len += 1;
        true
    }

    /// Request `index`, whose [`Window::leave`] said `new`, did not leave.
    pub(crate) fn stay(&mut self, index: usize, new: bool) {
        if new && index + 1 == self.len {
            self.len -= 1;
        }
        self.cursor = index;
    }

    /// Takes the front request off, answered or failed: it was sent again
    /// in this round if the cursor is past it.
    pub(crate) fn retire(&mut self) -> Option<(Sent, bool)> {
        let front = self.front()?;
        let again = self.cursor > 0;
        self.start = (self.start + 1) % MAX_WQES;
        self.len -= 1;
        self.alone = false;
        self.cursor = self.cursor.saturating_sub(1);
        Some((front, again))
    }

    /// The request whose PSNs hold `psn`, and its index.
    pub(crate) fn holding(&self, psn: Psn) -> Option<(usize, Sent)> {
        (0..self.len)
            .filter_map(|i| Some((i, self.get(i)?)))
            .find(|(_, s)| psn.within(s.first, s.last))
    }

    /// How far `psn` is from the front's first PSN; `None` beyond the
    /// last that left.
    fn offset(&self, psn: Psn) -> Option<u32> {
        let front = self.front()?;
        let back = self.get(self.len - 1)?;
        let at = psn.since(front.first);
        (at <= back.last.since(front.first) + 1).then_some(at)
    }

    /// Every PSN before `to` is answered. A READ or atomic among them
    /// whose data did not all come stops that short of `to` and has the
    /// requests sent again. Returns whether anything moved.
    pub(crate) fn answered_to(&mut self, to: Psn) -> bool {
        let (Some(to_at), Some(front)) = (self.offset(to), self.front()) else {
            return false;
        };
        let at = self.expect.since(front.first);
        if to_at <= at {
            return false;
        }
        let short = (0..self.len).filter_map(|i| self.get(i)).find(|s| {
            s.returns && s.last.since(front.first) >= at && s.first.since(front.first) < to_at
        });
        let Some(short) = short else {
            self.reach(to);
            return true;
        };
        if short.last.since(front.first) > to_at {
            // A READ response past a lost one of the same READ (placed
            // and noted by the caller). The lost one may only be late
            // (reordered), so the READ is asked for again no sooner than
            // at its last response packet, after which the responder
            // sends nothing more that could fill the gap: not waiting
            // for the local ACK timeout, which may be long or infinite.
            return false;
        }
        let moved = short.first.since(front.first) > at;
        if moved {
            self.reach(short.first);
        }
        if self.skipped != Some(self.expect) {
            self.skipped = Some(self.expect);
            self.event = Some(Event::Resend);
            return true;
        }
        moved
    }

    /// A NAK (or a failure to place data) at `psn`, which comes to
    /// `event`: every PSN before it is answered. Returns whether it was
    /// taken (not beyond what left, nor older than what is known): the
    /// completer is to look.
    pub(crate) fn refused_at(&mut self, psn: Psn, event: Event) -> bool {
        let Some(front) = self.front() else {
            return false;
        };
        if self.offset(psn).is_none() || psn.since(front.first) < self.expect.since(front.first) {
            // Beyond what left, or older than what is known.
            return false;
        }
        self.answered_to(psn);
        if self.expect != psn {
            return true;
        }
        match event {
            // A refusal stands over the sequence-error NAK that the
            // packets after the refused one bring; an RNR NAK's until
            // the answers move on.
            Event::Resend
                if self.rnr == Some(psn) || matches!(self.event, Some(Event::Refused(_))) => {}
            Event::Refused(answer) if is_rnr_nak(&answer) => {
                self.rnr = Some(psn);
                self.event = Some(event);
            }
            _ => self.event = Some(event),
        }
        true
    }

    /// The response packet at the first PSN not answered was placed.
    /// Returns whether the requests are to be sent again: the next one
    /// missing is of a READ whose packets after it all came (its last
    /// among them), so nothing more can fill it.
    pub(crate) fn placed(&mut self) -> bool {
        self.reach(self.expect.next());
        let Some(top) = self.top() else {
            return false;
        };
        let gap = self
            .holding(self.expect)
            .is_some_and(|(_, s)| s.returns && top >= s.last.since(self.expect));
        if !gap || self.skipped == Some(self.expect) {
            return false;
        }
        self.skipped = Some(self.expect);
        self.event = Some(Event::Resend);
        true
    }

    /// The first PSN not answered.
    pub(crate) fn expect(&self) -> Psn {
        self.expect
    }
}
