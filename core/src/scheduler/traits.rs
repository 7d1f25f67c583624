//! The [`Scheduler`] trait and what the master tells it.

use super::{
    requests::{Demand, Requester},
    waiting::Waiting,
};

/// Decides which requester a master (or sub-master) serves next, and how many tasks it gets.
///
/// # Contract
///
/// - **What it decides.** [`pick`](Self::pick): which of the ranks with room (workers, and
///   communication managers that lead to other clusters) gets the next batch;
///   [`batch_size`](Self::batch_size): how many tasks a *worker's* batch holds. A
///   communication manager's batch is one inter-cluster task of `nt` tasks (its `nt=`
///   annotation): the scheduler picks when a CM is served, not its batch size. *Which task*
///   comes next is not the scheduler's: it stays the problem's ([`crate::Problem::next_task`],
///   which may look at the results gathered so far); tasks taken back from a lost cluster are
///   served first.
/// - **Where it runs.** In the main master and in every sub-master (each has its own
///   instance), on the master's single thread, between two messages: never concurrently,
///   never while a message is half handled. It must not block, sleep or do I/O: the whole
///   cluster waits while it decides. It must be deterministic given its inputs if the run is
///   to be replayed in virtual time (`hmw simulate`).
/// - **Cost.** Dispatch should cost `O(1)` or `O(log W)` per task for `W` ranks fed:
///   [`Waiting`] keeps the requests indexed (fewest held, oldest, highest or lowest rank), so
///   a pick need not look at every waiting rank. A scheduler may keep structures of its own,
///   fed by [`on_request`](Self::on_request) and [`observe`](Self::observe).
/// - **Timing.** The master passes no clock: `busy_s` in [`observe`](Self::observe) is the
///   time the worker measured for the task. A pick of a rank that cannot be served now (a
///   bounded cluster's share is used up; at the end, a rank that still computes) is set aside
///   by the master and the scheduler is asked again; a pick of `None` ends the round, and the
///   waiting requests stay for the next message.
pub trait Scheduler: Send {
    /// The rank to serve next, among those in `waiting` (never empty when called); `None`
    /// to serve nobody now. Default: the fewest tasks held, then the oldest request, so every
    /// rank gets its first task before any gets a second ([`Waiting::fewest_held`]).
    fn pick(&mut self, waiting: &Waiting) -> Option<usize> {
        waiting.fewest_held()
    }

    /// Number of tasks in the next batch for worker `demand.worker`; at least 1 (0 counts as
    /// 1; fewer go when fewer are left).
    fn batch_size(&mut self, demand: &Demand) -> usize;

    /// `requester` offered room for `batches` more batches. Default: nothing (the master's
    /// [`Waiting`] index holds the requests).
    fn on_request(&mut self, requester: Requester, batches: u32) {
        let _ = (requester, batches);
    }

    /// A result came back: worker `worker` spent `busy_s` seconds on one task. Adaptive
    /// policies learn from it; the default ignores it.
    fn observe(&mut self, worker: usize, busy_s: f64) {
        let _ = (worker, busy_s);
    }
}
