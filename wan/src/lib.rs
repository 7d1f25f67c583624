//! `hmw-wan`: a wide-area link as plain data and as a model in virtual time, with no I/O.
//!
//! What the plan, the model, the link (`hmw-cm`) and the WAN emulators share: outage windows
//! ([`Outage`]), one direction's conditions ([`DirectionConfig`]: rate, delay, jitter, loss,
//! queue) with their [`limits`], the congestion controllers by name ([`Congestion`]), and
//! [`Pipe`], one direction of an emulated WAN as a pure state machine. The UDP relay of
//! `hmw-cm` and the testbed's packet router drive the same `Pipe`; `hmw-model` reads the same
//! types from plans without pulling in the network stack.

pub mod congestion;
pub mod direction;
pub mod limits;
pub mod outage;
pub mod pipe;

pub use congestion::Congestion;
pub use direction::DirectionConfig;
pub use outage::Outage;
pub use pipe::{DirectionCounters, Drop, Pipe};

/// A value outside its limits: its key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` {reason}")]
pub struct InvalidValue {
    /// The key, prefixed by its table (`client_to_server.loss`).
    pub key: String,
    /// What is wrong, with the value.
    pub reason: String,
}
