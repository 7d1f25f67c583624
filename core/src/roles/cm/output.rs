//! What a CM's core is told about its link, and what it asks its driver to do.

use std::time::Duration;

/// The link as the driver sees it when it calls the core: plain figures, no handle.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkView {
    /// A connection is up.
    pub connected: bool,
    /// A connection was ever established.
    pub ever_connected: bool,
    /// How full the link's send buffer is, from 0 to 1.
    pub send_fill: f64,
    /// Current throughput out, bytes per second.
    pub send_bytes_per_s: f64,
    /// Current throughput in, bytes per second.
    pub recv_bytes_per_s: f64,
    /// Round trip, seconds (0 before any was measured).
    pub rtt_s: f64,
    /// Times the peer CM restarted (a new process, with a new session), as the link counts
    /// them: what the link buffered for its previous incarnation was dropped.
    pub peer_restarts: u64,
    /// Connections that joined again after one was lost, since the start.
    pub reconnections: u64,
    /// Blocks sent again after the connection carrying them died, since the start.
    pub blocks_resent: u64,
    /// Packets QUIC declared lost (and sent again), since the start.
    pub packets_lost: u64,
}

/// An output of a CM's core.
#[derive(Debug, Clone, PartialEq)]
pub enum CmOutput {
    /// Send these bytes to the rank the CM serves in its cluster (its master or sub-master).
    ToCluster(Vec<u8>),
    /// Note the link's figures now (the far cluster's report just came, and the far side
    /// closes once it is acknowledged): give them to
    /// [`CmMasterSide::set_far_link`](super::CmMasterSide::set_far_link).
    SnapshotLink,
    /// Move every message of the core's outbox into the link, let the peer receive what the
    /// link buffers, waiting at most this long in all, then close the link. Nothing more goes
    /// over the link afterwards.
    CloseLink(Duration),
}

/// The messages a CM's core has for its link, oldest first, kept by the core until the link
/// has room for them (as `quinn-proto` keeps what a connection has to send until its driver
/// polls it): the driver offers the oldest to the link's send buffer and takes it out once the
/// buffer accepted it. While messages wait here, a CM facing a master asks its master for no
/// more work, so a slow link holds tasks back on the master's side, not in a CM.
pub trait LinkOutbox {
    /// The oldest message for the link, if any.
    fn next_for_link(&self) -> Option<&[u8]>;
    /// Take the oldest message out: the link has taken (or is taking) it.
    fn pop_for_link(&mut self) -> Option<Vec<u8>>;
}
