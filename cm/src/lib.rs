//! `hmw-cm`: the long-distance service of hmw.
//!
//! A reliable, buffered, striped, reconnecting message [`Link`] over QUIC with
//! mutual TLS, built as a protocol core with no I/O ([`proto`]) and a thin tokio + quinn driver
//! ([`driver`]); plus the user-space WAN emulator ([`wanem`]).

pub mod config;
pub mod congestion;
pub mod driver;
pub mod keygen;
pub mod names;
pub mod proto;
pub mod stats;
pub mod tls;
pub mod tuning;
pub mod wanem;

pub use config::{Congestion, LinkConfig, Role, TlsConfig};
pub use driver::{BlockingLink, Link, LinkError, TrySendError};
pub use stats::{BufferUsage, ConnectionCount, LinkStats, OutageSpan, WindowStats};
