// SPDX-License-Identifier: GPL-2.0

//! Packet sequence numbers: what orders an RC QP's requests and answers,
//! kept by its requester (the next to send) and its responder (the next
//! expected).

/// A packet sequence number: 24 bits, wrapping.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Psn(u32);

/// Where a request's PSN lies against the one its responder expects.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sequence {
    Expected,
    /// Within the half of the PSN space behind: executed before.
    Duplicate,
    /// Ahead: requests were lost in between.
    Ahead,
}

impl Psn {
    const MASK: u32 = (1 << 24) - 1;

    pub(crate) fn new(psn: u32) -> Self {
        Self(psn & Self::MASK)
    }

    /// The 24 bits a BTH carries.
    pub(crate) fn get(self) -> u32 {
        self.0
    }

    pub(crate) fn next(self) -> Self {
        self.add(1)
    }

    pub(crate) fn prev(self) -> Self {
        Self::new(self.0.wrapping_sub(1))
    }

    /// The PSN `n` packets on.
    pub(crate) fn add(self, n: u32) -> Self {
        Self::new(self.0.wrapping_add(n))
    }

    /// How many packets `self` is after `first`.
    pub(crate) fn since(self, first: Psn) -> u32 {
        self.0.wrapping_sub(first.0) & Self::MASK
    }

    /// Whether `self` lies in `first..=last`, a run of packets' PSNs.
    pub(crate) fn within(self, first: Psn, last: Psn) -> bool {
        self.since(first) <= last.since(first)
    }

    /// Where `self` lies against `expected`.
    pub(crate) fn against(self, expected: Psn) -> Sequence {
        let behind = expected.0.wrapping_sub(self.0) & Self::MASK;
        match behind {
            0 => Sequence::Expected,
            d if d <= Self::MASK / 2 => Sequence::Duplicate,
            _ => Sequence::Ahead,
        }
    }
}

impl From<Psn> for u32 {
    fn from(psn: Psn) -> u32 {
        psn.0
    }
}
