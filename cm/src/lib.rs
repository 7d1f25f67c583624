//! `hmw-cm`: the long-distance service of hmw.
//!
//! A reliable, buffered, striped, reconnecting message [`Link`](driver::Link) over QUIC with
//! mutual TLS, built as a protocol core with no I/O ([`proto`]) and a thin tokio + quinn driver
//! ([`driver`]); plus the user-space WAN emulator ([`wanem`]).

pub mod proto;
