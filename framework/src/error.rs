//! The framework's error type.

use crate::{
    config::ConfigError, machinefile::MachineFileError, protocol::DecodeError,
    transport::TransportError,
};

/// Why a run could not start or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    MachineFile(#[from] MachineFileError),
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    #[error("rank {rank}: {source}")]
    Decode {
        rank: usize,
        #[source]
        source: DecodeError,
    },
    #[error("rank {rank}: protocol violation: {message}")]
    Protocol { rank: usize, message: String },
    /// A rank reported that it cannot go on (a task panicked there, say).
    #[error("rank {rank} ({host}) failed: {message}")]
    Failed {
        rank: usize,
        host: String,
        message: String,
    },
    #[error("{0}")]
    Setup(String),
}

impl RunError {
    /// The error for a message from `rank` that did not decode: `decode(..).map_err(
    /// RunError::decoding(rank))`.
    pub fn decoding(rank: usize) -> impl FnOnce(DecodeError) -> RunError {
        move |source| RunError::Decode { rank, source }
    }
}
