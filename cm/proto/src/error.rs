//! What the peer can do wrong.

use thiserror::Error;

use super::frame::{ConnId, FrameError};
use super::sender::UnknownBlockAck;

/// A violation of the protocol by the peer; the connection it arrived on is closed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// Bytes that do not decode.
    #[error("undecodable frame: {0}")]
    Frame(#[from] FrameError),
    /// A data block without payload.
    #[error("data block {id} is empty")]
    EmptyBlock {
        /// Block id.
        id: u64,
    },
    /// A block id outside the window the receiver accepts.
    #[error("unknown block id {id}: beyond the receive window ending at {window_end}")]
    UnknownBlock {
        /// Block id.
        id: u64,
        /// First id beyond the window.
        window_end: u64,
    },
    /// The same block twice on one connection.
    #[error("replay of block {id} on the same connection")]
    Replay {
        /// Block id.
        id: u64,
    },
    /// A block whose offset or length contradicts its neighbours or an earlier copy.
    #[error("inconsistent block {id}: {reason}")]
    Inconsistent {
        /// Block id.
        id: u64,
        /// What contradicts.
        reason: &'static str,
    },
    /// A block beyond the receive credit the receiver granted.
    #[error("block ends at stream offset {end}, beyond the granted credit {credit}")]
    CreditExceeded {
        /// End offset of the block.
        end: u64,
        /// Credit granted.
        credit: u64,
    },
    /// A message length larger than the receiver accepts.
    #[error("message of {len} bytes announced, the maximum is {max}")]
    OversizedMessage {
        /// Announced length.
        len: usize,
        /// Maximum accepted.
        max: usize,
    },
    /// An acknowledgement of blocks never sent.
    #[error(transparent)]
    UnknownAck(#[from] UnknownBlockAck),
    /// Data or acknowledgement before the hello.
    #[error("{0} before the hello")]
    NotHandshaken(&'static str),
    /// A second hello on one connection.
    #[error("second hello on the same connection (replay)")]
    DuplicateHello,
    /// A hello of a previous incarnation of the peer (a connection it opened before it
    /// restarted, whose hello arrived late): not a restart, just a stale connection.
    #[error("hello of session {session:016x}, a previous incarnation of the peer")]
    StaleSession {
        /// The previous incarnation's session id.
        session: u64,
    },
    /// The peer speaks another protocol version.
    #[error("peer speaks protocol version {theirs}, this side {ours}")]
    VersionMismatch {
        /// Our version.
        ours: u16,
        /// Theirs.
        theirs: u16,
    },
    /// The peer accepts smaller messages than this side may send.
    #[error("peer accepts messages up to {peer_max} bytes but this side's max_message is {our_max}: configure both sides alike")]
    IncompatiblePeer {
        /// Peer's maximum message.
        peer_max: u64,
        /// Our maximum message.
        our_max: u64,
    },
    /// A frame from a connection that is not (or no longer) part of the session.
    #[error("frame from connection {0}, which belongs to no current session")]
    UnknownConnection(ConnId),
    /// A frame of a kind not allowed where it arrived.
    #[error("unexpected {frame} frame on a {stream} stream")]
    UnexpectedFrame {
        /// Kind of frame.
        frame: &'static str,
        /// Kind of stream.
        stream: &'static str,
    },
}
