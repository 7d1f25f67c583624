//! Send side of the protocol core: the send buffer, cutting the message stream into numbered
//! blocks, the list of blocks not yet acknowledged, and what to (re)transmit next.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use bytes::{BufMut, Bytes, BytesMut};
use thiserror::Error;

use super::frame::ConnId;
use super::frame::{Ack, Block};

/// Blocks a sender may have outstanding beyond the receiver's cumulative acknowledgement; the
/// receiver refuses ids beyond this window. It bounds the receiver's bookkeeping when messages
/// are tiny.
pub const WINDOW_BLOCKS: u64 = 1 << 16;
/// Bytes of framing in the message stream before each message (its length, u32 big endian).
pub const MESSAGE_PREFIX_LEN: usize = 4;

/// Messages at least this large handed over as [`Bytes`] are kept as they are instead of
/// being copied into the send buffer.
pub const ZERO_COPY_MIN: usize = 16 * 1024;

/// A piece of the stream not yet cut into blocks.
#[derive(Debug)]
enum Segment {
    /// Messages copied in, packed together (with their length prefixes).
    Packed(BytesMut),
    /// One large message handed over without copying (its prefix is in the segment before).
    Shared(Bytes),
}

impl Segment {
    fn len(&self) -> usize {
        match self {
            Segment::Packed(b) => b.len(),
            Segment::Shared(b) => b.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Free capacity for packing more messages in.
    fn room(&self) -> usize {
        match self {
            Segment::Packed(b) => b.capacity() - b.len(),
            Segment::Shared(_) => 0,
        }
    }

    fn split_to(&mut self, len: usize) -> Bytes {
        match self {
            Segment::Packed(b) => b.split_to(len).freeze(),
            Segment::Shared(b) => b.split_to(len),
        }
    }
}

/// Why a message was not accepted into the send buffer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PushError {
    /// The send buffer has not enough free space now; retry after acknowledgements free some.
    #[error("send buffer full: {needed} bytes needed, {free} free")]
    Full {
        /// Bytes the message needs (with framing).
        needed: usize,
        /// Bytes free now.
        free: usize,
    },
    /// The message can never be sent: larger than the configured maximum message size.
    #[error("message of {size} bytes exceeds the maximum message size of {max} bytes")]
    TooLarge {
        /// Message size.
        size: usize,
        /// Configured maximum.
        max: usize,
    },
}

/// An acknowledgement that names blocks this sender never sent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("acknowledgement for block {acked} but only blocks below {next} were sent")]
pub struct UnknownBlockAck {
    /// Highest id the ack claims.
    pub acked: u64,
    /// Next id this sender would assign.
    pub next: u64,
}

#[derive(Debug)]
struct Unacked {
    block: Block,
    in_flight_on: Option<ConnId>,
    transmissions: u32,
}

/// The send buffer: the message stream not yet cut, and the blocks not yet acknowledged.
#[derive(Debug)]
pub struct SendBuffer {
    block_size: usize,
    capacity: usize,
    max_message: usize,
    used: usize,
    /// The stream not yet cut into blocks, as segments that each hold whole messages (a
    /// growing single buffer would be copied whole on every reallocation).
    open: VecDeque<Segment>,
    open_len: usize,
    /// Stream offsets where messages in `open` end (blocks are cut there when possible, so
    /// the receiver can hand out messages without copying them).
    boundaries: VecDeque<u64>,
    next_id: u64,
    next_offset: u64,
    unacked: BTreeMap<u64, Unacked>,
    pending: BTreeSet<u64>,
    peer_cumulative: u64,
    peer_credit: u64,
    /// Unacknowledged bytes last sent on each connection.
    in_flight: HashMap<ConnId, usize>,
    zero_copy_min: usize,
    blocks_sent: u64,
    blocks_retransmitted: u64,
    /// Block payload bytes acknowledged so far (the link's goodput, prefixes included).
    acked_bytes: u64,
}

impl SendBuffer {
    /// An empty buffer of `capacity` bytes cutting blocks of at most `block_size` bytes and
    /// accepting messages of at most `max_message` bytes.
    pub fn new(capacity: usize, block_size: usize, max_message: usize) -> Self {
        Self {
            block_size,
            capacity,
            max_message,
            used: 0,
            open: VecDeque::new(),
            open_len: 0,
            boundaries: VecDeque::new(),
            next_id: 0,
            next_offset: 0,
            unacked: BTreeMap::new(),
            pending: BTreeSet::new(),
            peer_cumulative: 0,
            peer_credit: 0,
            in_flight: HashMap::new(),
            zero_copy_min: ZERO_COPY_MIN,
            blocks_sent: 0,
            blocks_retransmitted: 0,
            acked_bytes: 0,
        }
    }

    /// Raises the capacity to `capacity` (never lowers it: what is buffered stays valid).
    pub fn grow(&mut self, capacity: usize) {
        self.capacity = self.capacity.max(capacity);
    }

    /// Bytes acknowledged by the receiver so far (block payloads, framing included).
    pub fn acked_bytes(&self) -> u64 {
        self.acked_bytes
    }

    /// Whether something waits to be sent: stream not yet cut into blocks, or blocks queued
    /// for resending.
    pub fn has_unsent(&self) -> bool {
        self.open_len > 0 || !self.pending.is_empty()
    }

    /// Checks that a message of `len` bytes can be appended now; returns the bytes it needs.
    fn admit(&self, len: usize) -> Result<usize, PushError> {
        if len > self.max_message {
            return Err(PushError::TooLarge {
                size: len,
                max: self.max_message,
            });
        }
        let needed = len + MESSAGE_PREFIX_LEN;
        if needed > self.free() {
            return Err(PushError::Full {
                needed,
                free: self.free(),
            });
        }
        Ok(needed)
    }

    /// A packed segment at the back with `room` free bytes (a new one of `capacity` if the
    /// last has less).
    fn packed_back(&mut self, room: usize, capacity: usize) -> &mut BytesMut {
        if self.open.back().is_none_or(|segment| segment.room() < room) {
            self.open
                .push_back(Segment::Packed(BytesMut::with_capacity(capacity)));
        }
        match self.open.back_mut() {
            Some(Segment::Packed(segment)) => segment,
            _ => unreachable!("a packed segment was just ensured"),
        }
    }

    fn appended(&mut self, needed: usize) {
        self.open_len += needed;
        self.boundaries
            .push_back(self.next_offset + self.open_len as u64);
        self.used += needed;
    }

    /// Appends a copy of a message to the stream if it fits in the free space.
    pub fn push_message(&mut self, message: &[u8]) -> Result<(), PushError> {
        let needed = self.admit(message.len())?;
        let block_size = self.block_size;
        let segment = self.packed_back(needed, needed.max(block_size));
        segment.put_u32(message.len() as u32);
        segment.extend_from_slice(message);
        self.appended(needed);
        Ok(())
    }

    /// Appends a message without copying it (when it is at least [`ZERO_COPY_MIN`] bytes;
    /// smaller ones are copied, as by [`push_message`](Self::push_message)).
    pub fn push_message_bytes(&mut self, message: Bytes) -> Result<(), PushError> {
        if message.len() < self.zero_copy_min {
            return self.push_message(&message);
        }
        let needed = self.admit(message.len())?;
        self.packed_back(MESSAGE_PREFIX_LEN, MESSAGE_PREFIX_LEN)
            .put_u32(message.len() as u32);
        self.open.push_back(Segment::Shared(message));
        self.appended(needed);
        Ok(())
    }

    /// The next block to put on connection `conn`, if any may be sent now: first blocks to
    /// resend (lowest id first), then a new block cut from the stream, within the receiver's
    /// credit and block window, and only while fewer than `max_in_flight` bytes sent on `conn`
    /// are unacknowledged (one block is always allowed). That limit keeps a connection from
    /// hoarding blocks it cannot transmit soon, which would hold up in-order delivery of the
    /// blocks striped over the other connections.
    pub fn next_block(&mut self, conn: ConnId, max_in_flight: usize) -> Option<Block> {
        if self.in_flight(conn) >= max_in_flight.max(1) {
            return None;
        }
        if let Some(&id) = self.pending.first() {
            let entry = self
                .unacked
                .get_mut(&id)
                .expect("pending blocks are unacked");
            if entry.block.end() > self.peer_credit {
                return None;
            }
            self.pending.remove(&id);
            entry.in_flight_on = Some(conn);
            *self.in_flight.entry(conn).or_default() += entry.block.payload.len();
            entry.transmissions += 1;
            self.blocks_sent += 1;
            if entry.transmissions > 1 {
                self.blocks_retransmitted += 1;
            }
            return Some(entry.block.clone());
        }
        if self.open_len == 0 || self.next_id >= self.peer_cumulative + WINDOW_BLOCKS {
            return None;
        }
        while self.open.front().is_some_and(|segment| segment.is_empty()) {
            self.open.pop_front();
        }
        let credit_left = self.peer_credit.saturating_sub(self.next_offset);
        let front = self.open.front_mut().expect("open bytes are in segments");
        let len = front
            .len()
            .min(self.block_size)
            .min(usize::try_from(credit_left).unwrap_or(usize::MAX));
        if len == 0 {
            return None;
        }
        // Prefer to end the block at the last message boundary inside it.
        let end = self.next_offset + len as u64;
        let mut cut = None;
        while let Some(&boundary) = self.boundaries.front() {
            if boundary > end {
                break;
            }
            cut = Some(boundary);
            self.boundaries.pop_front();
        }
        let len = cut.map_or(len, |boundary| (boundary - self.next_offset) as usize);
        let front = self.open.front_mut().expect("open bytes are in segments");
        let payload = front.split_to(len);
        self.open_len -= len;
        let block = Block {
            id: self.next_id,
            offset: self.next_offset,
            payload,
        };
        self.next_id += 1;
        self.next_offset += len as u64;
        self.blocks_sent += 1;
        *self.in_flight.entry(conn).or_default() += len;
        self.unacked.insert(
            block.id,
            Unacked {
                block: block.clone(),
                in_flight_on: Some(conn),
                transmissions: 1,
            },
        );
        Some(block)
    }

    /// Whether [`next_block`](Self::next_block) could return a block now.
    pub fn has_sendable(&self) -> bool {
        match self.pending.first() {
            Some(id) => self.unacked[id].block.end() <= self.peer_credit,
            None => {
                self.open_len > 0
                    && self.next_id < self.peer_cumulative + WINDOW_BLOCKS
                    && self.peer_credit > self.next_offset
            }
        }
    }

    /// Applies an acknowledgement: frees acknowledged blocks and raises the credit. Returns the
    /// bytes freed. Acks may arrive out of order (over different connections); stale ones are
    /// harmless.
    pub fn on_ack(&mut self, ack: &Ack) -> Result<usize, UnknownBlockAck> {
        let highest = ack.ranges.last().map_or(ack.cumulative, |r| r.1);
        if highest > self.next_id {
            return Err(UnknownBlockAck {
                acked: highest,
                next: self.next_id,
            });
        }
        self.peer_credit = self.peer_credit.max(ack.credit);
        self.peer_cumulative = self.peer_cumulative.max(ack.cumulative);
        let before = self.used;
        let below: Vec<u64> = self
            .unacked
            .range(..ack.cumulative)
            .map(|(&id, _)| id)
            .collect();
        for id in below {
            self.release(id);
        }
        for &(start, end) in &ack.ranges {
            let ids: Vec<u64> = self.unacked.range(start..end).map(|(&id, _)| id).collect();
            for id in ids {
                self.release(id);
            }
        }
        Ok(before - self.used)
    }

    fn release(&mut self, id: u64) {
        if let Some(entry) = self.unacked.remove(&id) {
            self.used -= entry.block.payload.len();
            self.acked_bytes += entry.block.payload.len() as u64;
            self.pending.remove(&id);
            if let Some(conn) = entry.in_flight_on {
                if let Some(bytes) = self.in_flight.get_mut(&conn) {
                    *bytes -= entry.block.payload.len();
                }
            }
        }
    }

    /// Connection `conn` is gone: every unacknowledged block last sent on it is queued again.
    pub fn on_connection_lost(&mut self, conn: ConnId) {
        self.in_flight.remove(&conn);
        for (&id, entry) in self.unacked.iter_mut() {
            if entry.in_flight_on == Some(conn) {
                entry.in_flight_on = None;
                self.pending.insert(id);
            }
        }
    }

    /// The peer restarted: everything addressed to its previous incarnation is dropped and
    /// numbering starts again. Returns the bytes dropped.
    pub fn reset_for_new_peer(&mut self) -> usize {
        let dropped = self.used;
        *self = Self {
            zero_copy_min: self.zero_copy_min,
            blocks_sent: self.blocks_sent,
            blocks_retransmitted: self.blocks_retransmitted,
            acked_bytes: self.acked_bytes,
            ..Self::new(self.capacity, self.block_size, self.max_message)
        };
        dropped
    }

    /// Lowers the zero-copy threshold so small test messages take that path.
    #[cfg(test)]
    pub(crate) fn set_zero_copy_min(&mut self, bytes: usize) {
        self.zero_copy_min = bytes;
    }

    /// Unacknowledged bytes last sent on `conn`.
    pub fn in_flight(&self, conn: ConnId) -> usize {
        self.in_flight.get(&conn).copied().unwrap_or(0)
    }

    /// Bytes in use (stream not yet cut plus unacknowledged blocks, with message framing).
    pub fn used(&self) -> usize {
        self.used
    }

    /// Configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Free bytes.
    pub fn free(&self) -> usize {
        self.capacity - self.used
    }

    /// Largest message accepted.
    pub fn max_message(&self) -> usize {
        self.max_message
    }

    /// Whether every message pushed so far has been acknowledged by the receiver.
    pub fn is_drained(&self) -> bool {
        self.used == 0
    }

    /// Number of blocks not yet acknowledged.
    pub fn unacked_blocks(&self) -> usize {
        self.unacked.len()
    }

    /// Block transmissions so far (first sends and resends).
    pub fn blocks_sent(&self) -> u64 {
        self.blocks_sent
    }

    /// Block transmissions that were resends after a connection loss.
    pub fn blocks_retransmitted(&self) -> u64 {
        self.blocks_retransmitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(cumulative: u64, credit: u64, ranges: Vec<(u64, u64)>) -> Ack {
        Ack {
            cumulative,
            credit,
            ranges,
        }
    }

    #[test]
    fn nothing_is_sent_without_credit_and_blocks_respect_size() {
        let mut s = SendBuffer::new(1000, 10, 500);
        s.push_message(&[7u8; 30]).unwrap();
        assert_eq!(s.used(), 34);
        assert!(s.next_block(1, usize::MAX).is_none());
        s.on_ack(&ack(0, 25, vec![])).unwrap();
        let b0 = s.next_block(1, usize::MAX).unwrap();
        let b1 = s.next_block(2, usize::MAX).unwrap();
        let b2 = s.next_block(1, usize::MAX).unwrap();
        assert_eq!((b0.id, b0.offset, b0.payload.len()), (0, 0, 10));
        assert_eq!((b1.id, b1.offset), (1, 10));
        assert_eq!((b2.id, b2.offset, b2.payload.len()), (2, 20, 5));
        assert!(s.next_block(1, usize::MAX).is_none(), "credit exhausted");
    }

    #[test]
    fn lost_connection_requeues_only_its_blocks_and_acks_free_memory() {
        let mut s = SendBuffer::new(1000, 10, 500);
        s.push_message(&[1u8; 36]).unwrap();
        s.on_ack(&ack(0, 1000, vec![])).unwrap();
        let ids: Vec<_> = (0..4)
            .map(|i| s.next_block(i % 2, usize::MAX).unwrap().id)
            .collect();
        assert_eq!(ids, vec![0, 1, 2, 3]);
        s.on_connection_lost(1);
        assert_eq!(s.next_block(5, usize::MAX).unwrap().id, 1);
        assert_eq!(s.next_block(5, usize::MAX).unwrap().id, 3);
        assert_eq!(s.blocks_retransmitted(), 2);
        assert_eq!(s.on_ack(&ack(1, 1000, vec![(2, 4)])).unwrap(), 30);
        assert_eq!(s.unacked_blocks(), 1);
        assert!(s.on_ack(&ack(9, 1000, vec![])).is_err());
        s.on_ack(&ack(4, 1000, vec![])).unwrap();
        assert!(s.is_drained());
    }

    #[test]
    fn a_connection_holds_at_most_its_in_flight_limit() {
        let mut s = SendBuffer::new(1000, 10, 500);
        s.push_message(&[1u8; 46]).unwrap();
        s.on_ack(&ack(0, 1000, vec![])).unwrap();
        assert!(s.next_block(1, 15).is_some());
        assert!(s.next_block(1, 15).is_some());
        assert!(
            s.next_block(1, 15).is_none(),
            "20 bytes in flight on connection 1"
        );
        assert_eq!(s.in_flight(1), 20);
        assert!(
            s.next_block(2, 15).is_some(),
            "other connections are not held back"
        );
        s.on_ack(&ack(1, 1000, vec![])).unwrap();
        assert_eq!(s.in_flight(1), 10);
        assert!(s.next_block(1, 15).is_some());
        s.on_connection_lost(1);
        assert_eq!(s.in_flight(1), 0);
        assert_eq!(
            s.next_block(3, 0).unwrap().id,
            1,
            "one block is always allowed"
        );
    }

    #[test]
    fn large_shared_messages_are_sliced_without_copying() {
        let mut s = SendBuffer::new(100_000, 8192, 50_000);
        s.push_message(b"small").unwrap();
        let big = Bytes::from(vec![9u8; 20_000]);
        s.push_message_bytes(big.clone()).unwrap();
        assert_eq!(s.used(), 9 + 20_004);
        s.on_ack(&ack(0, 100_000, vec![])).unwrap();
        let mut stream = Vec::new();
        let mut sizes = Vec::new();
        while let Some(block) = s.next_block(1, usize::MAX) {
            sizes.push(block.payload.len());
            if block.payload.len() > 1000 {
                // Slices of the caller's buffer, not copies.
                let inside = big.as_ptr() as usize..big.as_ptr() as usize + big.len();
                assert!(inside.contains(&(block.payload.as_ptr() as usize)));
            }
            stream.extend_from_slice(&block.payload);
        }
        assert_eq!(sizes, vec![9, 4, 8192, 8192, 3616]);
        let mut expected = [&5u32.to_be_bytes()[..], b"small", &20_000u32.to_be_bytes()].concat();
        expected.extend_from_slice(&big);
        assert_eq!(stream, expected);
    }

    #[test]
    fn full_and_too_large_are_distinguished() {
        let mut s = SendBuffer::new(100, 10, 90);
        assert!(matches!(
            s.push_message(&[0; 91]),
            Err(PushError::TooLarge { .. })
        ));
        s.push_message(&[0; 60]).unwrap();
        assert!(matches!(
            s.push_message(&[0; 40]),
            Err(PushError::Full {
                needed: 44,
                free: 36
            })
        ));
    }

    #[derive(Debug, Clone)]
    enum SenderOp {
        Push(usize),
        Send(usize),
        Lose(usize),
        Ack(u64),
    }

    use proptest::prelude::*;

    proptest! {
        /// The invariant replay detection rests on: an honest sender never hands the same
        /// block id twice to one connection, whatever the losses (connection ids are never
        /// reused) and acknowledgements; each id it sends on a connection is within
        /// [`WINDOW_BLOCKS`] of every id sent on that connection before.
        #[test]
        fn a_connection_never_carries_an_id_twice(
            ops in proptest::collection::vec(
                prop_oneof![
                    2 => (1usize..200).prop_map(SenderOp::Push),
                    6 => (0usize..3).prop_map(SenderOp::Send),
                    1 => (0usize..3).prop_map(SenderOp::Lose),
                    2 => (0u64..1000).prop_map(SenderOp::Ack),
                ],
                1..400,
            ),
        ) {
            let mut s = SendBuffer::new(4000, 50, 1000);
            s.on_ack(&ack(0, u64::MAX / 2, vec![])).unwrap();
            let mut live: [ConnId; 3] = [0, 1, 2];
            let mut next_conn = 3;
            let mut carried: HashMap<ConnId, Vec<u64>> = HashMap::new();
            let mut highest = 0;
            for op in ops {
                match op {
                    SenderOp::Push(len) => {
                        let _ = s.push_message(&vec![1; len]);
                    }
                    SenderOp::Send(c) => {
                        if let Some(block) = s.next_block(live[c], usize::MAX) {
                            let ids = carried.entry(live[c]).or_default();
                            prop_assert!(!ids.contains(&block.id), "id {} twice on {}", block.id, live[c]);
                            prop_assert!(ids.iter().all(|&id| block.id + WINDOW_BLOCKS > id));
                            ids.push(block.id);
                            highest = highest.max(block.id + 1);
                        }
                    }
                    SenderOp::Lose(c) => {
                        s.on_connection_lost(live[c]);
                        live[c] = next_conn;
                        next_conn += 1;
                    }
                    SenderOp::Ack(up_to) => {
                        s.on_ack(&ack(up_to.min(highest), u64::MAX / 2, vec![])).unwrap();
                    }
                }
            }
        }
    }
}
