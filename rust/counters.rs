// SPDX-License-Identifier: GPL-2.0

//! What rsoft counts on its port, for `rdma statistic show` and the
//! `hw_counters` directory in sysfs.

use crate::ib::{CounterDesc, PerCpuCounters};
use kernel::{c_str, prelude::*};

/// One counter; its value is the index into [`NAMES`].
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Completions queued on a CQ.
    Cqes,
    /// Completions lost because their CQ overran.
    CqOverruns,
    /// Completion events raised (armed CQs that got a completion).
    CompletionEvents,
    /// Completions with a status other than success.
    ErrorCompletions,
    Sends,
    Receives,
    RdmaWrites,
    RdmaReads,
    Atomics,
    /// Payload bytes of executed operations.
    Bytes,
    /// Packets handed to the RoCEv2 wire, and their bytes from the IP
    /// header on.
    WireSentPackets,
    WireSentBytes,
    /// Packets for the RoCEv2 wire that could not be sent (no route, no
    /// memory, dropped on the way out).
    WireSendErrors,
    /// Packets from the RoCEv2 wire taken, and their bytes from the IP
    /// header on.
    WireReceivedPackets,
    WireReceivedBytes,
    /// Packets from the RoCEv2 wire dropped for a bad ICRC.
    WireIcrcErrors,
    /// Packets from the RoCEv2 wire dropped otherwise: malformed, of an
    /// opcode not carried, for another address or an unknown QP.
    WireReceiveDrops,
    /// Packets of RC requests sent again on the RoCEv2 wire: their
    /// answer did not come in time, a NAK asked for them, or a READ's
    /// response had a gap (asked for twice, both counted).
    WireResentPackets,
    /// Sequence-error and RNR NAKs sent to and received from the RoCEv2
    /// wire.
    WireSequenceNaksSent,
    WireSequenceNaksReceived,
    WireRnrNaksSent,
    WireRnrNaksReceived,
    /// Requests from the RoCEv2 wire that the responder had taken
    /// before: answered again, never executed twice (a READ is read
    /// again).
    WireDuplicates,
    /// Local ACK timeouts run out: an RC request had no answer in time, on
    /// either wire, and is sent again (or fails with RETRY_EXC_ERR).
    LocalAckTimeouts,
}

const COUNT: usize = Counter::LocalAckTimeouts as usize + 1;

pub(crate) const NAMES: [CounterDesc; COUNT] = [
    CounterDesc::new(c_str!("cqes")),
    CounterDesc::new(c_str!("cq_overruns")),
    CounterDesc::new(c_str!("completion_events")),
    CounterDesc::new(c_str!("error_completions")),
    CounterDesc::new(c_str!("sends")),
    CounterDesc::new(c_str!("receives")),
    CounterDesc::new(c_str!("rdma_writes")),
    CounterDesc::new(c_str!("rdma_reads")),
    CounterDesc::new(c_str!("atomics")),
    CounterDesc::new(c_str!("bytes")),
    CounterDesc::new(c_str!("wire_sent_packets")),
    CounterDesc::new(c_str!("wire_sent_bytes")),
    CounterDesc::new(c_str!("wire_send_errors")),
    CounterDesc::new(c_str!("wire_received_packets")),
    CounterDesc::new(c_str!("wire_received_bytes")),
    CounterDesc::new(c_str!("wire_icrc_errors")),
    CounterDesc::new(c_str!("wire_receive_drops")),
    CounterDesc::new(c_str!("wire_resent_packets")),
    CounterDesc::new(c_str!("wire_sequence_naks_sent")),
    CounterDesc::new(c_str!("wire_sequence_naks_received")),
    CounterDesc::new(c_str!("wire_rnr_naks_sent")),
    CounterDesc::new(c_str!("wire_rnr_naks_received")),
    CounterDesc::new(c_str!("wire_duplicates")),
    CounterDesc::new(c_str!("local_ack_timeouts")),
];

/// The port's counters; updated from any CPU without a lock, each CPU in
/// a copy of its own.
pub(crate) struct Counters(PerCpuCounters<COUNT>);

impl Counters {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self(PerCpuCounters::new()?))
    }

    pub(crate) fn add(&self, counter: Counter, n: u64) {
        if n != 0 {
            self.0.add(counter as usize, n);
        }
    }

    /// Counts an executed request of kind `op` that moved `len` bytes,
    /// and the receive it consumed if `recv`.
    pub(crate) fn executed(&self, op: Counter, recv: bool, len: u32) {
        self.add(op, 1);
        self.add(Counter::Receives, recv.into());
        self.add(Counter::Bytes, len.into());
    }

    /// Copies the values, in [`NAMES`] order, into `out`.
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (i, o) in out.iter_mut().take(COUNT).enumerate() {
            *o = self.0.sum(i);
        }
    }
}
