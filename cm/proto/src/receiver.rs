//! Receive side of the protocol core: de-duplication by block id, replay detection per
//! connection, reordering, reassembly of the message stream, the receive buffer's credit and
//! the acknowledgements describing it.

use std::collections::{BTreeMap, HashMap, VecDeque};

use bytes::{Buf, Bytes, BytesMut};

use super::error::ProtocolError;
use super::frame::ConnId;
use super::frame::{Ack, Block, MAX_ACK_RANGES};
use super::sender::{MESSAGE_PREFIX_LEN, WINDOW_BLOCKS};

/// What became of a received block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockOutcome {
    /// New data, stored.
    Stored,
    /// Already held or delivered (a resend after a reconnect): dropped.
    Duplicate,
}

/// How far below the highest id a connection carried its ids are remembered, in blocks.
///
/// An honest sender puts a block on a given connection at most once (a block goes out again
/// only after the connection it was on is gone, and connection ids are never reused), and
/// every id it puts on a connection lies within [`WINDOW_BLOCKS`] of every other id it put
/// there: it sends only ids within that window of the cumulative acknowledgement it holds,
/// and that acknowledgement cannot pass a block still unacknowledged on a live connection.
/// Four windows are margin, not a need.
pub const REPLAY_MEMORY_BLOCKS: u64 = 4 * WINDOW_BLOCKS;

const REPLAY_MEMORY_WORDS: usize = (REPLAY_MEMORY_BLOCKS / 64) as usize;

/// The block ids one connection carried: a bit set sliding with the highest id, at most
/// [`REPLAY_MEMORY_BLOCKS`] bits (32 KiB) allocated per connection whatever the ids, even for
/// a connection whose first id is a billion blocks into the link.
#[derive(Debug, Default)]
struct CarriedIds {
    /// Id of bit 0 of `words[0]` (a multiple of 64). Ids below it are forgotten.
    base: u64,
    words: VecDeque<u64>,
}

impl CarriedIds {
    /// Whether `id` may still arrive on this connection: not carried yet and not so far below
    /// the highest carried id that it was forgotten (either is a replay).
    fn may_carry(&self, id: u64) -> bool {
        if id < self.base {
            return false;
        }
        let bit = id - self.base;
        self.words
            .get((bit / 64) as usize)
            .is_none_or(|word| word & (1 << (bit % 64)) == 0)
    }

    /// Records `id` (which [`may_carry`](Self::may_carry) allowed), sliding the memory up
    /// first when `id` lies beyond its end: the work and the allocation are bounded by the
    /// memory's size, however far `id` is from the ids carried before.
    fn insert(&mut self, id: u64) {
        debug_assert!(id >= self.base);
        let word = (id - self.base) / 64;
        let shift = (word + 1).saturating_sub(REPLAY_MEMORY_WORDS as u64);
        if shift >= self.words.len() as u64 {
            self.words.clear();
        } else {
            self.words.drain(..shift as usize);
        }
        self.base += shift * 64;
        let word = (word - shift) as usize;
        if word >= self.words.len() {
            let len = word + 1;
            if len > self.words.capacity() {
                // Doubling, but never past the bound (a plain resize could overshoot it).
                let target = (2 * self.words.capacity()).clamp(len, REPLAY_MEMORY_WORDS);
                self.words.reserve_exact(target - self.words.len());
            }
            self.words.resize(len, 0);
        }
        self.words[word] |= 1 << ((id - self.base) % 64);
    }
}

/// The receive buffer: blocks held out of order, the in-order stream being cut into messages,
/// and complete messages waiting for the application, including those of previous
/// incarnations of the peer, which count against the memory until they are handed out.
#[derive(Debug)]
pub struct ReceiveBuffer {
    capacity: usize,
    max_message: usize,
    next_id: u64,
    next_offset: u64,
    consumed: u64,
    out_of_order: BTreeMap<u64, Block>,
    /// Ids each live connection carried (replay detection).
    carried: HashMap<ConnId, CarriedIds>,
    assembly: BytesMut,
    ready: VecDeque<Bytes>,
    /// Complete messages of previous incarnations of the peer, handed out first.
    carried_over: VecDeque<Bytes>,
    /// Their bytes, length prefixes included: charged against this incarnation's credit.
    carried_bytes: u64,
    ack_dirty: bool,
    duplicates: u64,
    failed: Option<ProtocolError>,
}

impl ReceiveBuffer {
    /// An empty buffer holding at most `capacity` bytes of the stream, accepting messages of at
    /// most `max_message` bytes.
    pub fn new(capacity: usize, max_message: usize) -> Self {
        Self {
            capacity,
            max_message,
            next_id: 0,
            next_offset: 0,
            consumed: 0,
            out_of_order: BTreeMap::new(),
            carried: HashMap::new(),
            assembly: BytesMut::new(),
            ready: VecDeque::new(),
            carried_over: VecDeque::new(),
            carried_bytes: 0,
            ack_dirty: true,
            duplicates: 0,
            failed: None,
        }
    }

    /// Raises the capacity to `capacity` (never lowers it: credit granted stays granted); the
    /// next acknowledgement carries the larger credit.
    pub fn grow(&mut self, capacity: usize) {
        if capacity > self.capacity {
            self.capacity = capacity;
            self.ack_dirty = true;
        }
    }

    /// Stream offset the peer may send up to: what was read plus the memory, less what
    /// messages of previous incarnations still occupy (it rises as they are handed out).
    fn credit(&self) -> u64 {
        (self.consumed + self.capacity as u64).saturating_sub(self.carried_bytes)
    }

    /// Takes a block that arrived on connection `conn`. A block that no honest sender could
    /// have sent is an error, and the buffer is left as it was, except for a message length
    /// beyond the maximum inside the in-order stream: the stream cannot be parsed past it, so
    /// that error is permanent ([`failure`](Self::failure)).
    ///
    /// The same id twice on one connection is a [`ProtocolError::Replay`], whether the block
    /// is still held or long delivered; the same id on another connection is a resend after
    /// a connection loss and is dropped as a [`BlockOutcome::Duplicate`].
    pub fn on_block(&mut self, conn: ConnId, block: Block) -> Result<BlockOutcome, ProtocolError> {
        if let Some(failure) = &self.failed {
            return Err(failure.clone());
        }
        if block.payload.is_empty() {
            return Err(ProtocolError::EmptyBlock { id: block.id });
        }
        if block.id >= self.next_id + WINDOW_BLOCKS {
            return Err(ProtocolError::UnknownBlock {
                id: block.id,
                window_end: self.next_id + WINDOW_BLOCKS,
            });
        }
        let id = block.id;
        if !self
            .carried
            .get(&conn)
            .is_none_or(|carried| carried.may_carry(id))
        {
            return Err(ProtocolError::Replay { id });
        }
        let outcome = self.take(block)?;
        self.carried.entry(conn).or_default().insert(id);
        Ok(outcome)
    }

    /// Connection `conn` is gone: its replay memory is released.
    pub fn forget_connection(&mut self, conn: ConnId) {
        self.carried.remove(&conn);
    }

    /// Connections whose carried ids are remembered (for tests of the memory bound).
    pub fn tracked_connections(&self) -> usize {
        self.carried.len()
    }

    fn take(&mut self, block: Block) -> Result<BlockOutcome, ProtocolError> {
        if block.id < self.next_id {
            self.duplicates += 1;
            self.ack_dirty = true;
            return Ok(BlockOutcome::Duplicate);
        }
        if let Some(held) = self.out_of_order.get(&block.id) {
            if held.offset != block.offset || held.payload.len() != block.payload.len() {
                return Err(ProtocolError::Inconsistent {
                    id: block.id,
                    reason: "a resend differs from the first copy",
                });
            }
            self.duplicates += 1;
            self.ack_dirty = true;
            return Ok(BlockOutcome::Duplicate);
        }
        if block.end() > self.credit() {
            return Err(ProtocolError::CreditExceeded {
                end: block.end(),
                credit: self.credit(),
            });
        }
        self.check_neighbours(&block)?;
        if block.id == self.next_id {
            self.append_in_order(block)?;
            while let Some(entry) = self.out_of_order.first_entry() {
                if *entry.key() != self.next_id {
                    break;
                }
                let held = entry.remove();
                self.append_in_order(held)?;
            }
        } else {
            self.out_of_order.insert(block.id, block);
        }
        self.ack_dirty = true;
        Ok(BlockOutcome::Stored)
    }

    /// Offsets must chain: each block starts where its predecessor ends.
    fn check_neighbours(&self, block: &Block) -> Result<(), ProtocolError> {
        let inconsistent = |reason| ProtocolError::Inconsistent {
            id: block.id,
            reason,
        };
        if block.id == self.next_id {
            if block.offset != self.next_offset {
                return Err(inconsistent("offset does not follow the delivered stream"));
            }
        } else if block.offset < self.next_offset + (block.id - self.next_id) {
            return Err(inconsistent("offset too small for its id"));
        }
        if let Some(prev) = block
            .id
            .checked_sub(1)
            .and_then(|p| self.out_of_order.get(&p))
        {
            if prev.end() != block.offset {
                return Err(inconsistent("offset does not follow the previous block"));
            }
        }
        if let Some(next) = self.out_of_order.get(&(block.id + 1)) {
            if block.end() != next.offset {
                return Err(inconsistent("end does not meet the next block"));
            }
        }
        Ok(())
    }

    fn append_in_order(&mut self, block: Block) -> Result<(), ProtocolError> {
        self.next_id += 1;
        self.next_offset = block.end();
        let mut payload = block.payload;
        if self.assembly.len() == MESSAGE_PREFIX_LEN {
            // Only a length is pending (a large message sent without copying travels as its
            // prefix, then its body): a body that arrives whole is handed out as it is.
            let len =
                Self::announced(&self.assembly, self.max_message).map_err(|e| self.fail(e))?;
            if payload.len() >= len {
                self.assembly.clear();
                self.ready.push_back(payload.split_to(len));
            }
        }
        if self.assembly.is_empty() {
            // Whole messages inside the block are handed out without copying.
            while payload.len() >= MESSAGE_PREFIX_LEN {
                let len = Self::announced(&payload, self.max_message).map_err(|e| self.fail(e))?;
                if payload.len() < MESSAGE_PREFIX_LEN + len {
                    break;
                }
                payload.advance(MESSAGE_PREFIX_LEN);
                self.ready.push_back(payload.split_to(len));
            }
            if payload.is_empty() {
                return Ok(());
            }
            if payload.len() > MESSAGE_PREFIX_LEN {
                let len = Self::announced(&payload, self.max_message).map_err(|e| self.fail(e))?;
                self.assembly.reserve(MESSAGE_PREFIX_LEN + len);
            }
        }
        self.assembly.extend_from_slice(&payload);
        loop {
            if self.assembly.len() < MESSAGE_PREFIX_LEN {
                return Ok(());
            }
            let len =
                Self::announced(&self.assembly, self.max_message).map_err(|e| self.fail(e))?;
            if self.assembly.len() < MESSAGE_PREFIX_LEN + len {
                if self.assembly.len() > MESSAGE_PREFIX_LEN {
                    self.assembly
                        .reserve(MESSAGE_PREFIX_LEN + len - self.assembly.len());
                }
                return Ok(());
            }
            self.assembly.advance(MESSAGE_PREFIX_LEN);
            self.ready.push_back(self.assembly.split_to(len).freeze());
        }
    }

    /// The length announced by the prefix at the start of `stream`.
    fn announced(stream: &[u8], max: usize) -> Result<usize, ProtocolError> {
        let len = u32::from_be_bytes(stream[..4].try_into().expect("4 bytes")) as usize;
        if len > max {
            return Err(ProtocolError::OversizedMessage { len, max });
        }
        Ok(len)
    }

    /// A length beyond the maximum makes the stream permanently unusable.
    fn fail(&mut self, failure: ProtocolError) -> ProtocolError {
        self.failed = Some(failure.clone());
        failure
    }

    /// The permanent failure of the stream, if it has one.
    pub fn failure(&self) -> Option<&ProtocolError> {
        self.failed.as_ref()
    }

    /// The next complete message, in send order (those of previous incarnations of the peer
    /// first).
    pub fn pop_message(&mut self) -> Option<Bytes> {
        if let Some(message) = self.carried_over.pop_front() {
            self.carried_bytes -= (message.len() + MESSAGE_PREFIX_LEN) as u64;
            self.ack_dirty = true;
            return Some(message);
        }
        let message = self.ready.pop_front()?;
        self.consumed += (message.len() + MESSAGE_PREFIX_LEN) as u64;
        self.ack_dirty = true;
        Some(message)
    }

    /// The peer restarted: starts over for its new incarnation (block ids from 0, no partial
    /// message, no connection memory), keeping the counters and the complete messages not yet
    /// handed out, which are handed out first. Those stay charged against the memory: the
    /// new incarnation's credit leaves room for them, so however many restarts pile up, all
    /// the buffer holds stays within its capacity. Returns the number of messages kept.
    pub fn reset_for_new_peer(&mut self) -> usize {
        let mut carried_over = std::mem::take(&mut self.carried_over);
        carried_over.append(&mut self.ready);
        let carried_bytes = carried_over
            .iter()
            .map(|m| (m.len() + MESSAGE_PREFIX_LEN) as u64)
            .sum();
        let kept = carried_over.len();
        *self = Self {
            duplicates: self.duplicates,
            carried_over,
            carried_bytes,
            ..Self::new(self.capacity, self.max_message)
        };
        kept
    }

    /// Complete messages waiting for the application (previous incarnations' included).
    pub fn ready_messages(&self) -> usize {
        self.carried_over.len() + self.ready.len()
    }

    /// Whether the state changed since the last [`ack`](Self::ack).
    pub fn ack_dirty(&self) -> bool {
        self.ack_dirty
    }

    /// The acknowledgement describing the current state (and clears the dirty flag).
    pub fn ack(&mut self) -> Ack {
        self.ack_dirty = false;
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &id in self.out_of_order.keys() {
            if let Some(last) = ranges.last_mut().filter(|last| last.1 == id) {
                last.1 = id + 1;
            } else if ranges.len() == MAX_ACK_RANGES {
                break;
            } else {
                ranges.push((id, id + 1));
            }
        }
        Ack {
            cumulative: self.next_id,
            credit: self.credit(),
            ranges,
        }
    }

    /// Stream bytes held (out of order, being assembled, or ready, those of previous
    /// incarnations of the peer included), at most the capacity.
    pub fn buffered(&self) -> usize {
        let out_of_order: usize = self.out_of_order.values().map(|b| b.payload.len()).sum();
        (self.next_offset - self.consumed + self.carried_bytes) as usize + out_of_order
    }

    /// Configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Duplicate blocks dropped so far.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(id: u64, offset: u64, payload: &[u8]) -> Block {
        Block {
            id,
            offset,
            payload: Bytes::copy_from_slice(payload),
        }
    }

    fn framed(messages: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    #[test]
    fn reorders_and_reassembles_messages_across_blocks() {
        let stream = framed(&[b"hello", b"", b"world!"]);
        let mut r = ReceiveBuffer::new(1000, 100);
        let (a, b) = stream.split_at(7);
        assert_eq!(r.on_block(1, block(1, 7, b)).unwrap(), BlockOutcome::Stored);
        assert_eq!(r.ack().ranges, vec![(1, 2)]);
        assert!(r.pop_message().is_none());
        r.on_block(2, block(0, 0, a)).unwrap();
        assert_eq!(&r.pop_message().unwrap()[..], b"hello");
        assert_eq!(&r.pop_message().unwrap()[..], b"");
        assert_eq!(&r.pop_message().unwrap()[..], b"world!");
        let ack = r.ack();
        assert_eq!(
            (ack.cumulative, ack.credit),
            (2, 1000 + stream.len() as u64)
        );
        assert_eq!(
            r.on_block(3, block(0, 0, a)).unwrap(),
            BlockOutcome::Duplicate
        );
    }

    #[test]
    fn a_body_after_its_lone_prefix_is_handed_out_without_copying() {
        let mut r = ReceiveBuffer::new(1000, 100);
        r.on_block(1, block(0, 0, &[0, 0, 0, 2, b'h', b'i', 0, 0, 0, 5]))
            .unwrap();
        assert_eq!(&r.pop_message().unwrap()[..], b"hi");
        let body = Bytes::from_static(b"world");
        r.on_block(
            1,
            Block {
                id: 1,
                offset: 10,
                payload: body.clone(),
            },
        )
        .unwrap();
        let message = r.pop_message().unwrap();
        assert_eq!(&message[..], b"world");
        assert_eq!(
            message.as_ptr(),
            body.as_ptr(),
            "a slice of the block, not a copy"
        );
    }

    #[test]
    fn bad_blocks_are_refused_and_leave_state_intact() {
        let mut r = ReceiveBuffer::new(20, 10);
        let first = framed(&[b"x"]); // block 0: stream bytes 0..5
        let second = framed(&[b"hi"]); // block 1: stream bytes 5..11
        r.on_block(1, block(1, 5, &second)).unwrap();
        let ack_before = r.ack();
        let buffered_before = r.buffered();
        assert!(matches!(
            r.on_block(1, block(1, 5, &second)),
            Err(ProtocolError::Replay { id: 1 })
        ));
        assert!(matches!(
            r.on_block(2, block(1, 6, &second)),
            Err(ProtocolError::Inconsistent { .. })
        ));
        assert!(matches!(
            r.on_block(2, block(2, 9, b"x")),
            Err(ProtocolError::Inconsistent { .. })
        ));
        assert!(matches!(
            r.on_block(2, block(5, 18, b"xyz")),
            Err(ProtocolError::CreditExceeded { .. })
        ));
        assert!(matches!(
            r.on_block(2, block(WINDOW_BLOCKS, 0, b"x")),
            Err(ProtocolError::UnknownBlock { .. })
        ));
        assert!(matches!(
            r.on_block(2, block(0, 0, b"")),
            Err(ProtocolError::EmptyBlock { id: 0 })
        ));
        // Nothing of the refused blocks stuck: same acknowledgement, same bytes held, no
        // failure, and the stream goes on with the good blocks.
        assert_eq!(r.ack(), ack_before);
        assert_eq!(r.buffered(), buffered_before);
        assert!(r.failure().is_none());
        assert!(r.pop_message().is_none());
        assert_eq!(
            r.on_block(2, block(0, 0, &first)).unwrap(),
            BlockOutcome::Stored
        );
        assert_eq!(&r.pop_message().unwrap()[..], b"x");
        assert_eq!(&r.pop_message().unwrap()[..], b"hi");
        assert!(r.pop_message().is_none());
        assert_eq!(r.ack().cumulative, 2);
        assert_eq!(r.duplicates(), 0, "refused blocks are not duplicates");
        // A length beyond the maximum inside the in-order stream is permanent.
        assert!(matches!(
            r.on_block(2, block(2, 11, &[0, 0, 0, 200, 1])),
            Err(ProtocolError::OversizedMessage { len: 200, max: 10 })
        ));
        assert!(r.failure().is_some());
        assert!(matches!(
            r.on_block(1, block(3, 16, b"abc")),
            Err(ProtocolError::OversizedMessage { .. })
        ));
    }

    #[test]
    fn a_block_twice_on_one_connection_is_a_replay_even_long_after_delivery() {
        let mut r = ReceiveBuffer::new(1000, 100);
        let stream = framed(&[b"one", b"two"]);
        let (a, b) = stream.split_at(7);
        r.on_block(1, block(0, 0, a)).unwrap();
        r.on_block(2, block(1, 7, b)).unwrap();
        assert_eq!(&r.pop_message().unwrap()[..], b"one");
        assert_eq!(&r.pop_message().unwrap()[..], b"two");
        // Resends on other connections are duplicates, dropped.
        assert_eq!(
            r.on_block(2, block(0, 0, a)).unwrap(),
            BlockOutcome::Duplicate
        );
        assert_eq!(
            r.on_block(3, block(1, 7, b)).unwrap(),
            BlockOutcome::Duplicate
        );
        // The same id again on a connection that already carried it is a replay, delivered
        // long ago or not.
        for (conn, id, payload, offset) in [(1, 0, a, 0), (2, 1, b, 7), (2, 0, a, 0), (3, 1, b, 7)]
        {
            assert_eq!(
                r.on_block(conn, block(id, offset, payload)),
                Err(ProtocolError::Replay { id }),
                "block {id} again on connection {conn}"
            );
        }
        assert_eq!(r.duplicates(), 2);
        assert_eq!(r.tracked_connections(), 3);
        r.forget_connection(1);
        r.forget_connection(2);
        assert_eq!(r.tracked_connections(), 1);
    }

    #[test]
    fn replay_memory_slides_and_stays_bounded() {
        let mut carried = CarriedIds::default();
        // A connection carrying every third id of a long transfer (striping over three).
        let last = 3 * REPLAY_MEMORY_BLOCKS;
        for id in (0..=last).step_by(3) {
            assert!(carried.may_carry(id));
            carried.insert(id);
            assert!(!carried.may_carry(id));
        }
        assert!(carried.words.len() <= REPLAY_MEMORY_WORDS);
        // Recent ids are remembered exactly: carried ones refused, the others allowed.
        for id in last - 1000..=last {
            assert_eq!(carried.may_carry(id), id % 3 != 0, "id {id}");
        }
        // An id further below the highest than the memory reaches is refused too.
        assert!(!carried.may_carry(last - REPLAY_MEMORY_BLOCKS - 64));
        assert!(!carried.may_carry(1));
        assert!(carried.may_carry(last + 1));
    }

    #[test]
    fn replay_memory_of_a_connection_joining_a_long_lived_link_is_bounded() {
        // A link a billion blocks along: a new connection's first id is far above 0, where an
        // empty memory starts. Its memory must not grow to cover the gap (it once allocated
        // id / 8 bytes and slid word by word under the core's lock).
        let first = 1_000_000_000;
        let mut r = ReceiveBuffer::new(1 << 20, 10);
        r.next_id = first;
        r.next_offset = first;
        r.consumed = first;
        let conn = 7;
        let within_bound = |r: &ReceiveBuffer| {
            let carried = &r.carried[&conn];
            assert!(
                carried.words.capacity() <= REPLAY_MEMORY_WORDS,
                "{} words allocated",
                carried.words.capacity()
            );
        };
        for id in [first, first + 10, first + 3, first + 64, first + 700] {
            assert_eq!(
                r.on_block(conn, block(id, id, &[0])),
                Ok(BlockOutcome::Stored)
            );
            within_bound(&r);
        }
        // Replays are still detected, before and after what was delivered in order.
        for id in [first, first + 10, first + 3, first + 700] {
            assert_eq!(
                r.on_block(conn, block(id, id, &[0])),
                Err(ProtocolError::Replay { id })
            );
        }
        // Ids not carried yet, below the first one, are still allowed on it (reordering
        // across its streams); another connection only finds duplicates.
        let mut other = CarriedIds::default();
        other.insert(first);
        assert!(other.may_carry(first - 1000));
        assert!(other.may_carry(first + 1));
        assert!(!other.may_carry(first));
        assert!(other.words.capacity() <= REPLAY_MEMORY_WORDS);
        // Jumps of any size keep the bound and forget what is too far below.
        for id in [first + 5 * REPLAY_MEMORY_BLOCKS, u64::MAX / 2, u64::MAX - 1] {
            other.insert(id);
            assert!(!other.may_carry(id));
            assert!(other.may_carry(id - 1));
            assert!(!other.may_carry(first));
            assert!(other.words.capacity() <= REPLAY_MEMORY_WORDS);
            assert!(other.words.len() <= REPLAY_MEMORY_WORDS);
        }
    }

    proptest::proptest! {
        /// Whatever blocks arrive on whatever connections, the receiver refuses exactly the
        /// repeats of an id on a connection that already carried it, and drops as duplicates
        /// exactly the ids already taken on another connection.
        #[test]
        fn replay_is_exactly_a_repeat_on_the_same_connection(
            arrivals in proptest::collection::vec((0u64..4, 0u64..48), 1..300),
        ) {
            // Block i is one zero byte at offset i: the stream is empty messages.
            let mut r = ReceiveBuffer::new(1 << 20, 10);
            let mut taken: std::collections::HashSet<(u64, u64)> = Default::default();
            let mut ids: std::collections::HashSet<u64> = Default::default();
            for (conn, id) in arrivals {
                let result = r.on_block(conn, block(id, id, &[0]));
                if taken.contains(&(conn, id)) {
                    proptest::prop_assert_eq!(result, Err(ProtocolError::Replay { id }));
                } else if ids.contains(&id) {
                    proptest::prop_assert_eq!(result, Ok(BlockOutcome::Duplicate));
                } else {
                    proptest::prop_assert_eq!(result, Ok(BlockOutcome::Stored));
                }
                taken.insert((conn, id));
                ids.insert(id);
            }
        }
    }
}
