//! `hmw-cm`: the long-distance service of hmw.
//!
//! A reliable, buffered, striped, reconnecting message [`Link`] over QUIC with mutual TLS:
//! the QUIC driver ([`driver`], tokio + quinn) of the protocol core with no I/O (the crate
//! `hmw-cm-proto`, re-exported as [`proto`]); plus the user-space WAN emulator ([`wanem`]).

pub mod cm_line;
pub mod config;
pub mod congestion;
pub mod driver;
pub mod keygen;
pub mod names;
pub mod stats;
pub mod tls;
pub mod tuning;
pub mod wanem;

pub use hmw_cm_proto as proto;

pub use config::{Congestion, LinkConfig, PathHint, Role, TlsConfig};
pub use driver::{BlockingLink, Link, LinkError, LinkRuntime, TrySendError};
pub use stats::{BufferUsage, ConnectionCount, LinkStats, OutageSpan, WindowStats};
