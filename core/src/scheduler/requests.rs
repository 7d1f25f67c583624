//! What the master tells a scheduler about the ranks it feeds.

/// What the master knows when it sizes a batch.
#[derive(Debug, Clone, Copy)]
pub struct Demand {
    /// The rank asking for work.
    pub worker: usize,
    /// Number of workers the master feeds (not counting communication managers).
    pub workers: usize,
    /// Tasks not yet handed out, when the problem knows its size.
    pub remaining: Option<u64>,
}

/// A rank that has room for a batch, as the master sees it when it picks whom to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requester {
    /// Its rank.
    pub rank: usize,
    /// Tasks it holds: handed to it and not returned.
    pub holding: usize,
    /// A worker (else a communication manager leading to another cluster).
    pub worker: bool,
}
