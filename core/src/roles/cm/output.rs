//! What a CM's core is told about its link, and what it asks its driver to do.

use std::time::Duration;

/// The link as the driver sees it when it calls the core: plain figures, no handle.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkView {
    /// A connection is up.
    pub connected: bool,
    /// A connection was ever established.
    pub ever_connected: bool,
    /// Messages wait in the driver for room in the link's send buffer.
    pub backlog: bool,
    /// How full the link's send buffer is, from 0 to 1.
    pub send_fill: f64,
    /// Current throughput out, bytes per second.
    pub send_bytes_per_s: f64,
    /// Current throughput in, bytes per second.
    pub recv_bytes_per_s: f64,
    /// Round trip, seconds (0 before any was measured).
    pub rtt_s: f64,
}

/// An output of a CM's core.
#[derive(Debug, Clone, PartialEq)]
pub enum CmOutput {
    /// Send these bytes to the rank the CM serves in its cluster (its master or sub-master).
    ToCluster(Vec<u8>),
    /// Send these bytes over the link to the peer CM.
    ToLink(Vec<u8>),
    /// Note the link's figures now (the far cluster's report just came, and the far side
    /// closes once it is acknowledged): give them to
    /// [`CmMasterSide::set_far_link`](super::CmMasterSide::set_far_link).
    SnapshotLink,
    /// Let the peer receive what is buffered, waiting at most this long, then close the link.
    /// Nothing more goes over the link afterwards.
    CloseLink(Duration),
}
