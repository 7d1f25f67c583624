//! Wire frames of the long-distance protocol and their encoder/decoder.
//!
//! Every frame is `type: u8`, `body_len: u32` (big endian), then the body. The decoder works on a
//! growing byte buffer (what a stream reader appends to) and never panics on any input: a frame
//! that cannot be valid is reported as a [`FrameError`] so the connection can be closed with a
//! logged reason.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use thiserror::Error;

/// Identity of one transport connection, assigned by the driver, never reused.
pub type ConnId = u64;

/// Protocol version carried in [`Hello`]; peers with another version are refused.
pub const PROTOCOL_VERSION: u16 = 1;
/// Largest block payload any peer may send (a protocol constant, block sizes are validated
/// against it).
pub const MAX_BLOCK_SIZE: usize = 16 * 1024 * 1024;
/// Most selective-acknowledgement ranges carried by one [`Ack`].
pub const MAX_ACK_RANGES: usize = 256;

const HEADER_LEN: usize = 5;
const TYPE_HELLO: u8 = 1;
const TYPE_DATA: u8 = 2;
const TYPE_ACK: u8 = 3;
const HELLO_BODY_LEN: usize = 2 + 8 + 4 + 8 + 4;
const DATA_FIXED_LEN: usize = 8 + 8;
const ACK_FIXED_LEN: usize = 8 + 8 + 2;
const ACK_RANGE_LEN: usize = 16;

/// First frame on every connection, in both directions: who is talking and what it can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// Protocol version ([`PROTOCOL_VERSION`]).
    pub version: u16,
    /// Random identity of the sending link instance; a new value means the peer restarted.
    pub session: u64,
    /// Index of this connection among the link's connections (0-based).
    pub connection_index: u32,
    /// Largest message the sender of this hello accepts, in bytes.
    pub max_message: u64,
    /// Block size the sender of this hello uses.
    pub block_size: u32,
}

/// One numbered piece of the sender's message stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Block id: consecutive from 0 within a session.
    pub id: u64,
    /// Offset of the first payload byte in the session's message stream.
    pub offset: u64,
    /// Payload (never empty).
    pub payload: Bytes,
}

impl Block {
    /// Offset one past the last payload byte.
    pub fn end(&self) -> u64 {
        self.offset + self.payload.len() as u64
    }
}

/// Acknowledgement of blocks held by the receiver, plus its flow-control credit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ack {
    /// Every block id below this one has been received.
    pub cumulative: u64,
    /// The sender may send stream bytes below this offset.
    pub credit: u64,
    /// Received ids above `cumulative`, as increasing, disjoint, non-adjacent half-open ranges.
    pub ranges: Vec<(u64, u64)>,
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Connection opening.
    Hello(Hello),
    /// A data block.
    Data(Block),
    /// An acknowledgement.
    Ack(Ack),
}

/// Why bytes could not be decoded into a frame.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    /// The type byte names no frame.
    #[error("unknown frame type {0}")]
    UnknownType(u8),
    /// The length field exceeds what this frame type may carry.
    #[error("frame of type {kind} announces {len} bytes, more than the limit of {max}")]
    Oversized {
        /// Frame type name.
        kind: &'static str,
        /// Announced body length.
        len: usize,
        /// Largest acceptable body length.
        max: usize,
    },
    /// The body is inconsistent with its type.
    #[error("malformed {kind} frame: {reason}")]
    Malformed {
        /// Frame type name.
        kind: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}

impl Frame {
    /// Appends the encoding of this frame to `out` (copies the payload of a data frame; the
    /// driver uses [`encode_data_header`] to send payloads without copying).
    pub fn encode(&self, out: &mut BytesMut) {
        match self {
            Frame::Hello(h) => {
                out.put_u8(TYPE_HELLO);
                out.put_u32(HELLO_BODY_LEN as u32);
                out.put_u16(h.version);
                out.put_u64(h.session);
                out.put_u32(h.connection_index);
                out.put_u64(h.max_message);
                out.put_u32(h.block_size);
            }
            Frame::Data(block) => {
                out.extend_from_slice(&encode_data_header(block));
                out.extend_from_slice(&block.payload);
            }
            Frame::Ack(ack) => {
                out.put_u8(TYPE_ACK);
                out.put_u32((ACK_FIXED_LEN + ACK_RANGE_LEN * ack.ranges.len()) as u32);
                out.put_u64(ack.cumulative);
                out.put_u64(ack.credit);
                out.put_u16(ack.ranges.len() as u16);
                for &(start, end) in &ack.ranges {
                    out.put_u64(start);
                    out.put_u64(end);
                }
            }
        }
    }

    /// The encoding of this frame as one buffer.
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::new();
        self.encode(&mut out);
        out.freeze()
    }
}

/// Frame header and block header of a data frame; the payload follows it on the wire.
pub fn encode_data_header(block: &Block) -> Bytes {
    let mut out = BytesMut::with_capacity(HEADER_LEN + DATA_FIXED_LEN);
    out.put_u8(TYPE_DATA);
    out.put_u32((DATA_FIXED_LEN + block.payload.len()) as u32);
    out.put_u64(block.id);
    out.put_u64(block.offset);
    out.freeze()
}

/// Removes one complete frame from the front of `buf`.
///
/// Returns `Ok(None)` when `buf` holds only the beginning of a frame (read more and call again);
/// an error means the byte stream is corrupt and the connection must be closed.
pub fn decode(buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let kind = buf[0];
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    let (name, max) = match kind {
        TYPE_HELLO => ("hello", HELLO_BODY_LEN),
        TYPE_DATA => ("data", DATA_FIXED_LEN + MAX_BLOCK_SIZE),
        TYPE_ACK => ("ack", ACK_FIXED_LEN + ACK_RANGE_LEN * MAX_ACK_RANGES),
        other => return Err(FrameError::UnknownType(other)),
    };
    if len > max {
        return Err(FrameError::Oversized {
            kind: name,
            len,
            max,
        });
    }
    if buf.len() < HEADER_LEN + len {
        // Room for the whole frame at once (its length is bounded by `max` above, and the peer
        // is authenticated): growing the buffer as bytes arrive would copy them again.
        buf.reserve(HEADER_LEN + len - buf.len());
        return Ok(None);
    }
    buf.advance(HEADER_LEN);
    let mut body = buf.split_to(len);
    let frame = match kind {
        TYPE_HELLO => decode_hello(&mut body)?,
        TYPE_DATA => decode_data(&mut body)?,
        _ => decode_ack(&mut body)?,
    };
    Ok(Some(frame))
}

fn decode_hello(body: &mut BytesMut) -> Result<Frame, FrameError> {
    if body.len() != HELLO_BODY_LEN {
        return Err(FrameError::Malformed {
            kind: "hello",
            reason: "wrong body length",
        });
    }
    Ok(Frame::Hello(Hello {
        version: body.get_u16(),
        session: body.get_u64(),
        connection_index: body.get_u32(),
        max_message: body.get_u64(),
        block_size: body.get_u32(),
    }))
}

fn decode_data(body: &mut BytesMut) -> Result<Frame, FrameError> {
    if body.len() <= DATA_FIXED_LEN {
        return Err(FrameError::Malformed {
            kind: "data",
            reason: "empty payload",
        });
    }
    let id = body.get_u64();
    let offset = body.get_u64();
    let payload = std::mem::take(body).freeze();
    if offset.checked_add(payload.len() as u64).is_none() {
        return Err(FrameError::Malformed {
            kind: "data",
            reason: "offset overflows",
        });
    }
    Ok(Frame::Data(Block {
        id,
        offset,
        payload,
    }))
}

fn decode_ack(body: &mut BytesMut) -> Result<Frame, FrameError> {
    const MALFORMED: fn(&'static str) -> FrameError = |reason| FrameError::Malformed {
        kind: "ack",
        reason,
    };
    if body.len() < ACK_FIXED_LEN {
        return Err(MALFORMED("too short"));
    }
    let cumulative = body.get_u64();
    let credit = body.get_u64();
    let count = body.get_u16() as usize;
    if count > MAX_ACK_RANGES || body.len() != count * ACK_RANGE_LEN {
        return Err(MALFORMED("range count disagrees with length"));
    }
    let mut ranges = Vec::with_capacity(count);
    let mut floor = cumulative;
    for _ in 0..count {
        let start = body.get_u64();
        let end = body.get_u64();
        // Ranges must be increasing, disjoint, non-adjacent and above the cumulative point.
        if start <= floor || end <= start {
            return Err(MALFORMED("ranges not increasing and disjoint"));
        }
        floor = end;
        ranges.push((start, end));
    }
    Ok(Frame::Ack(Ack {
        cumulative,
        credit,
        ranges,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_frame() -> impl Strategy<Value = Frame> {
        let hello = (
            any::<u16>(),
            any::<u64>(),
            any::<u32>(),
            any::<u64>(),
            any::<u32>(),
        )
            .prop_map(
                |(version, session, connection_index, max_message, block_size)| {
                    Frame::Hello(Hello {
                        version,
                        session,
                        connection_index,
                        max_message,
                        block_size,
                    })
                },
            );
        let data = (
            any::<u64>(),
            0u64..1 << 40,
            prop::collection::vec(any::<u8>(), 1..300),
        )
            .prop_map(|(id, offset, payload)| {
                Frame::Data(Block {
                    id,
                    offset,
                    payload: payload.into(),
                })
            });
        let ack = (
            0u64..1000,
            any::<u64>(),
            prop::collection::vec((1u64..5, 1u64..5), 0..20),
        )
            .prop_map(|(cumulative, credit, gaps)| {
                let mut ranges = Vec::new();
                let mut at = cumulative;
                for (gap, len) in gaps {
                    let start = at + gap;
                    ranges.push((start, start + len));
                    at = start + len;
                }
                Frame::Ack(Ack {
                    cumulative,
                    credit,
                    ranges,
                })
            });
        prop_oneof![hello, data, ack]
    }

    proptest! {
        /// Any byte string either decodes, waits for more, or fails cleanly: never a panic, and
        /// a successful decode consumes exactly the frame's bytes. The first byte is mostly a
        /// valid frame type and the length field mostly small, so that the body decoders see
        /// arbitrary bodies instead of the type check stopping nearly every case.
        #[test]
        fn decoder_survives_arbitrary_bytes(
            kind in prop_oneof![3 => Just(TYPE_HELLO), 3 => Just(TYPE_DATA), 3 => Just(TYPE_ACK), 1 => any::<u8>()],
            len in prop_oneof![4 => 0u32..600, 1 => any::<u32>()],
            body in prop::collection::vec(any::<u8>(), 0..2048),
            framed in any::<bool>(),
        ) {
            let mut bytes = vec![kind];
            if framed {
                bytes.extend_from_slice(&len.to_be_bytes());
            }
            bytes.extend_from_slice(&body);
            let mut buf = BytesMut::from(&bytes[..]);
            loop {
                let before = buf.len();
                match decode(&mut buf) {
                    Ok(Some(frame)) => {
                        prop_assert!(buf.len() < before);
                        // Whatever decoded re-encodes to the bytes it came from.
                        let encoded = frame.to_bytes();
                        prop_assert_eq!(&encoded[..], &bytes[bytes.len() - before..][..encoded.len()]);
                    }
                    Err(FrameError::UnknownType(t)) => {
                        // Only a type byte that names no frame stops here.
                        prop_assert_eq!(t, bytes[bytes.len() - before]);
                        prop_assert!(![TYPE_HELLO, TYPE_DATA, TYPE_ACK].contains(&t));
                        break;
                    }
                    Ok(None) | Err(_) => break,
                }
            }
        }

        /// Valid frames with corrupted bytes (the interesting inputs: lengths, types and
        /// ranges that almost make sense) never panic the decoder and never make it consume
        /// more than it was given.
        #[test]
        fn decoder_survives_corrupted_frames(
            frames in prop::collection::vec(arb_frame(), 1..6),
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        ) {
            let mut wire = BytesMut::new();
            for f in &frames {
                f.encode(&mut wire);
            }
            for (at, value) in flips {
                let i = at.index(wire.len());
                wire[i] = value;
            }
            let mut buf = wire.clone();
            let mut consumed = 0;
            while let Ok(Some(frame)) = decode(&mut buf) {
                consumed += frame.to_bytes().len();
                prop_assert_eq!(consumed + buf.len(), wire.len());
            }
        }

        /// Frames survive encoding and decoding, whatever the chunking of the byte stream.
        #[test]
        fn frames_round_trip_across_chunks(frames in prop::collection::vec(arb_frame(), 1..10), chunk in 1usize..64) {
            let mut wire = BytesMut::new();
            for f in &frames {
                f.encode(&mut wire);
            }
            let mut buf = BytesMut::new();
            let mut decoded = Vec::new();
            for piece in wire.chunks(chunk) {
                buf.extend_from_slice(piece);
                while let Some(f) = decode(&mut buf).unwrap() {
                    decoded.push(f);
                }
            }
            prop_assert!(buf.is_empty());
            prop_assert_eq!(decoded, frames);
        }
    }

    #[test]
    fn oversized_length_is_rejected_before_buffering() {
        let mut buf = BytesMut::new();
        buf.put_u8(TYPE_DATA);
        buf.put_u32(u32::MAX);
        assert!(matches!(
            decode(&mut buf),
            Err(FrameError::Oversized { kind: "data", .. })
        ));
    }

    #[test]
    fn unknown_type_and_bad_ack_ranges_are_rejected() {
        let mut buf = BytesMut::from(&[9u8, 0, 0, 0, 0][..]);
        assert_eq!(decode(&mut buf), Err(FrameError::UnknownType(9)));
        let bad = Frame::Ack(Ack {
            cumulative: 10,
            credit: 0,
            ranges: vec![(12, 14), (13, 20)],
        });
        let mut buf = BytesMut::from(&bad.to_bytes()[..]);
        assert!(matches!(
            decode(&mut buf),
            Err(FrameError::Malformed { kind: "ack", .. })
        ));
    }
}
