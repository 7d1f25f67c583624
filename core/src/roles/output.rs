//! What a role's core asks its driver to do.

/// An output of a master's or a worker's core, pushed into a queue the driver owns (and
/// drains after each call, so no allocation is needed per message beyond the bytes sent).
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Send `bytes` (an encoded message) to rank `to` of this cluster.
    Send {
        /// The rank.
        to: usize,
        /// The message, encoded.
        bytes: Vec<u8>,
    },
    /// The master's clock starts now (every worker has asked for work, and with
    /// `wait_for_links` every link is up or given up): the driver notes the wall-clock time.
    Started,
    /// A progress line with the live prediction, every `statistics_interval`.
    Progress(String),
}
