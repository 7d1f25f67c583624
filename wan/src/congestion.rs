//! Congestion controllers of the link's QUIC connections, by the names plans and
//! configurations use.

use serde::{Deserialize, Serialize};

/// Congestion controller of every QUIC connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    /// CUBIC (quinn's default): held to a few Mbit/s per connection by random loss on a long
    /// path (its window shrinks at every loss).
    Cubic,
    /// BBR, the link's default: it paces at the measured bottleneck rate and does not take
    /// random loss for congestion, so one connection fills a lossy long path (experimental in
    /// quinn).
    #[default]
    Bbr,
    /// NewReno.
    NewReno,
}
