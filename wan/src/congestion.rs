//! Congestion controllers of the link's QUIC connections, by the names plans and
//! configurations use.

use serde::{Deserialize, Serialize};

/// Congestion controller of every QUIC connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// CUBIC (quinn's default).
    #[default]
    Cubic,
    /// BBR: much better on lossy long paths with one connection (experimental in quinn).
    Bbr,
    /// NewReno.
    NewReno,
}
