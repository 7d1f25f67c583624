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
pub use limits::InvalidValue;
pub use outage::Outage;
pub use pipe::{DirectionCounters, Drop, Pipe};
