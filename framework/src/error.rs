//! The runtime's error type.

use hmw_core::{config::ConfigError, machinefile::MachineFileError, CoreError};

use hmw_transport::TransportError;

/// Why a run could not start or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A bad configuration or machine file, a message that broke the protocol, a rank that
    /// failed, a run that could not be set up: what a role's core or the setup found.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// Sending or receiving inside a cluster failed.
    #[error("transport: {0}")]
    Transport(#[from] TransportError),
    /// The long-distance link of a communication manager failed.
    #[error("WAN link: {0}")]
    Link(String),
}

impl RunError {
    /// The run could not be set up (what is missing, where).
    pub(crate) fn setup(message: impl Into<String>) -> Self {
        RunError::Core(CoreError::Setup(message.into()))
    }
}

impl From<ConfigError> for RunError {
    fn from(error: ConfigError) -> Self {
        RunError::Core(error.into())
    }
}

impl From<MachineFileError> for RunError {
    fn from(error: MachineFileError) -> Self {
        RunError::Core(error.into())
    }
}
