//! `hmw-cm-proto`: the long-distance link's protocol as a state machine with no I/O (no tokio,
//! no quinn, no TLS); the crate `hmw-cm` drives it over QUIC.
//!
//! The driver feeds it events (a connection opened or was lost, a frame arrived, the application
//! pushed or wants a message) and asks it what to do (which block to write on which connection,
//! which acknowledgement to send). Everything about blocks, ids, the unacknowledged list,
//! acknowledgements, reordering, de-duplication and sessions lives here, so it is tested
//! deterministically with simulated loss, reordering, duplication and disconnection.

pub mod error;
pub mod frame;
pub mod receiver;
pub mod sender;
#[cfg(test)]
mod sim_tests;
pub mod state;

pub use error::ProtocolError;
pub use frame::{decode, encode_data_header, Ack, Block, ConnId, Frame, FrameError, Hello};
pub use receiver::{BlockOutcome, ReceiveBuffer};
pub use sender::{PushError, SendBuffer, UnknownBlockAck};
pub use state::{Core, CoreConfig, CoreCounters, FrameEffect, Handshake, PREVIOUS_SESSIONS};

/// Milliseconds without a packet after which a link's connection counts as dead, unless the
/// link's configuration says otherwise: the CMs see the link down that much after its last
/// packet.
pub const DEFAULT_INACTIVITY_TIMEOUT_MS: u64 = 5_000;

/// Bytes a side of a link buffers, each way, unless the link's configuration says otherwise:
/// messages sent and not yet acknowledged by the peer, and messages received and not yet read.
pub const DEFAULT_LINK_MEMORY: usize = 32 * 1024 * 1024;
