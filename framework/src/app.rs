//! The application's side of the framework: the traits an application implements.
//!
//! An application is three small pieces:
//! - a [`Task`]: a unit of work that a worker executes into a result;
//! - a [`TaskResult`]: what comes back, and how two results join into one;
//! - a [`Problem`]: the whole job on the master — it divides itself into tasks and gathers the
//!   results.
//!
//! Tasks and results cross process boundaries (MPI, and the WAN between clusters), so both are
//! `serde` types; the framework serialises them with bincode.

use serde::{de::DeserializeOwned, Serialize};

use crate::machinefile::RankLine;

/// Identity of a task inside one master: the order in which the problem produced it.
pub type TaskId = u64;

/// What a worker knows about itself while executing a task.
#[derive(Debug, Clone)]
pub struct WorkerContext {
    /// MPI rank of this worker inside its cluster.
    pub rank: usize,
    /// The worker's line of the machine file: host and `key=value` annotations.
    pub line: RankLine,
}

impl WorkerContext {
    /// The `speed=` annotation of this worker's machine-file line (1.0 when absent).
    ///
    /// Emulated heterogeneous clusters use it to slow a worker down: a task that takes `t`
    /// seconds at speed 1 takes `t / speed` seconds.
    pub fn speed(&self) -> f64 {
        self.line.speed()
    }
}

/// A unit of work, sent by a master to a worker and executed there.
pub trait Task: Serialize + DeserializeOwned + Send + 'static {
    /// The result this task produces.
    type Output: TaskResult;

    /// Execute the task on a worker.
    fn execute(self, worker: &WorkerContext) -> Self::Output;

    /// Basic operations of this task (the model's `oper`); performance is measured in basic
    /// operations per second. Defaults to 1: one task is one basic operation.
    fn operations(&self) -> f64 {
        1.0
    }
}

/// The result of a [`Task`].
pub trait TaskResult: Serialize + DeserializeOwned + Send + 'static {
    /// Join `other` into `self`, or give it back when the two cannot be joined (two partial
    /// products of different matrix blocks, say). A sub-master joins up to `nr` results of one
    /// inter-cluster task with it before they cross the WAN.
    fn join(&mut self, other: Self) -> Result<(), Self>;
}

/// The whole job, owned by the master: it divides itself into tasks and gathers their results.
pub trait Problem: Send + 'static {
    /// The tasks this problem divides into.
    type Task: Task;

    /// The next task to hand out, or `None` once the problem is fully divided.
    fn next_task(&mut self) -> Option<Self::Task>;

    /// Gather the result of task `id` (the `id`-th task `next_task` produced, from 0).
    /// Called exactly once per task (or through [`gather_joined`](Self::gather_joined)), in
    /// completion order.
    fn gather(&mut self, id: TaskId, result: <Self::Task as Task>::Output);

    /// Gather a result that joins the results of the tasks `ids` (a sub-master joined them
    /// with [`TaskResult::join`] before they crossed the WAN). The default gathers it under
    /// the first id, which is right when gathering adds a result into an accumulator (a
    /// reduction, a matrix block); a problem that tracks tasks one by one overrides it.
    fn gather_joined(&mut self, ids: &[TaskId], result: <Self::Task as Task>::Output) {
        self.gather(ids[0], result);
    }

    /// Total number of tasks, when known in advance: used for progress and ETA.
    fn task_count(&self) -> Option<u64> {
        None
    }
}
