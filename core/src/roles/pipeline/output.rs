//! What a pipeline core asks its driver to do.

/// An output of a pipeline core.
#[derive(Debug, Clone, PartialEq)]
pub enum PipeOutput {
    /// Send these bytes to rank `to` of this cluster.
    Send {
        /// The rank.
        to: usize,
        /// The message.
        bytes: Vec<u8>,
    },
    /// The controller's sink takes item `seq` (the items come in the source's order).
    Deliver {
        /// Its sequence number.
        seq: u64,
        /// The last stage's output, encoded.
        body: Vec<u8>,
    },
    /// A progress line of the controller.
    Progress(String),
}
