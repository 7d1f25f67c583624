//! Why a core refused an input, or a run could not be set up.

use crate::{config::ConfigError, machinefile::MachineFileError, protocol::DecodeError};

/// Why a run could not start, or a role's core could not go on.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// A bad run configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A bad machine file.
    #[error(transparent)]
    MachineFile(#[from] MachineFileError),
    /// A message from `rank` did not decode.
    #[error("rank {rank}: {source}")]
    Decode {
        /// The sender.
        rank: usize,
        /// Why.
        #[source]
        source: DecodeError,
    },
    /// A message from `rank` that has no place where it came.
    #[error("rank {rank}: protocol violation: {message}")]
    Protocol {
        /// The sender.
        rank: usize,
        /// What was wrong with it.
        message: String,
    },
    /// A rank reported that it cannot go on (a task panicked there, say).
    #[error("rank {rank} ({host}) failed: {message}")]
    Failed {
        /// The rank.
        rank: usize,
        /// Its host.
        host: String,
        /// What it said.
        message: String,
    },
    /// The run could not be set up (what is missing, where).
    #[error("{0}")]
    Setup(String),
}

impl CoreError {
    /// The error for a message from `rank` that did not decode: `decode(..).map_err(
    /// CoreError::decoding(rank))`.
    pub fn decoding(rank: usize) -> impl FnOnce(DecodeError) -> CoreError {
        move |source| CoreError::Decode { rank, source }
    }
}
