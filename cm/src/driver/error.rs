//! What the link's API can fail with.

use thiserror::Error;

use crate::config::ConfigError;
use crate::tls::TlsError;

/// Errors of the link API.
#[derive(Debug, Error)]
pub enum LinkError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Certificates or keys are unusable.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The UDP socket could not be bound.
    #[error("cannot bind UDP socket {addr}: {cause}")]
    Bind {
        /// Address.
        addr: std::net::SocketAddr,
        /// Cause.
        cause: std::io::Error,
    },
    /// The tokio runtime of the blocking facade could not start.
    #[error("cannot start the link's runtime: {0}")]
    Runtime(std::io::Error),
    /// The message is larger than the configured maximum; it can never be sent.
    #[error("message of {size} bytes exceeds max_message ({max} bytes)")]
    MessageTooLarge {
        /// Message size.
        size: usize,
        /// Maximum.
        max: usize,
    },
    /// The link was closed by this side.
    #[error("link closed")]
    Closed,
    /// The peer closed the link and every message it sent has been received.
    #[error("peer closed the link")]
    PeerClosed,
    /// The peer's message stream is corrupt beyond repair.
    #[error("link failed: {0}")]
    Failed(String),
    /// A wait ran out of time.
    #[error("timed out")]
    Timeout,
}

/// Why a non-blocking send did not happen.
#[derive(Debug, Error)]
pub enum TrySendError {
    /// Not enough free space in the send buffer now.
    #[error("send buffer full: {needed} bytes needed, {free} free")]
    Full {
        /// Bytes needed.
        needed: usize,
        /// Bytes free.
        free: usize,
    },
    /// Any other error.
    #[error(transparent)]
    Link(#[from] LinkError),
}
