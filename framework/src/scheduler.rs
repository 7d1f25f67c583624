//! Schedulers: how many tasks the master puts in the next batch for a worker that has room.
//!
//! Workers are served in the order they asked (on demand); a scheduler only sizes the batch.
//! The default, [`OnDemand`], sends one task per request, which balances load best when tasks
//! are large enough to hide the per-message cost. Chunking policies trade balance for fewer
//! messages when tasks are tiny.

/// What the master knows when it sizes a batch.
#[derive(Debug, Clone, Copy)]
pub struct Demand {
    /// The rank asking for work.
    pub worker: usize,
    /// Number of ranks the master feeds.
    pub workers: usize,
    /// Tasks not yet handed out, when the problem knows its size.
    pub remaining: Option<u64>,
}

/// Sizes the batches the master sends.
pub trait Scheduler: Send {
    /// Number of tasks in the next batch for `demand.worker`; at least 1.
    fn batch_size(&mut self, demand: &Demand) -> usize;

    /// A result came back: `worker` spent `busy_s` seconds on one task. Adaptive policies
    /// learn from it; the default ignores it.
    fn observe(&mut self, worker: usize, busy_s: f64) {
        let _ = (worker, busy_s);
    }
}

/// One task per request: the default.
#[derive(Debug, Default, Clone, Copy)]
pub struct OnDemand;

impl Scheduler for OnDemand {
    fn batch_size(&mut self, _demand: &Demand) -> usize {
        1
    }
}
