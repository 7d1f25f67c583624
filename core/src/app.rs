//! The application's side of the framework: the traits an application implements.
//!
//! An application is three small pieces:
//! - a [`Task`]: a unit of work that a worker executes into a result;
//! - a [`TaskResult`]: what comes back, and how two results join into one;
//! - a [`Problem`]: the whole job on the master — it divides itself into tasks and gathers the
//!   results.
//!
//! and, for runs over several clusters, optionally a fourth: a [`Splitter`], which lets the
//! sub-master of an external cluster re-divide the tasks that reach it into local tasks of a
//! finer grain, and lets a task leave out what earlier tasks already carried across the WAN.
//!
//! Tasks and results cross process boundaries (MPI, and the WAN between clusters), so both are
//! `serde` types; the framework serialises them with bincode.

use serde::{de::DeserializeOwned, Serialize};

use crate::machinefile::{MachineFile, RankLine};

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
    /// The worker of `rank`, on its line of `machines`.
    pub fn of(machines: &MachineFile, rank: usize) -> Self {
        Self {
            rank,
            line: machines.ranks[rank].clone(),
        }
    }

    /// Worker 1 on `localhost`, with no annotations (speed 1): for running tasks outside a
    /// run, in tests or a simulator.
    pub fn localhost() -> Self {
        Self {
            rank: 1,
            line: RankLine {
                line_no: 2,
                host: "localhost".into(),
                cm: None,
                annotations: Default::default(),
            },
        }
    }

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

    /// Whether executing this task leaves the worker's CPU idle: it sleeps, or waits on
    /// something else than this host's processor. The worker's communication then costs its
    /// computing nothing, and `hmw calibrate` gives it no own-communication term (100).
    /// Defaults to `false`: a task computes.
    fn waits(&self) -> bool {
        false
    }
}

/// The result of a [`Task`].
pub trait TaskResult: Serialize + DeserializeOwned + Send + 'static {
    /// Join `other` into `self`, or give it back when the two cannot be joined (two partial
    /// products of different matrix blocks, say). A sub-master joins up to `nr` results of one
    /// inter-cluster task with it before they cross the WAN.
    fn join(&mut self, other: Self) -> Result<(), Self>;

    /// Basic operations the task actually did, when the result knows it and it differs from
    /// the task's [`Task::operations`] (an estimate fixed when the task was sent: a search
    /// that prunes does less than its bound). The worker reports it in place of the estimate,
    /// so the statistics (basic operations per second) count work done. A result that joins
    /// others should add theirs. Default: `None`, the task's estimate stands.
    fn operations(&self) -> Option<f64> {
        None
    }
}

/// The whole job, owned by the master: it divides itself into tasks and gathers their results.
pub trait Problem: Send + 'static {
    /// The tasks this problem divides into.
    type Task: Task;

    /// The next task to hand out, or `None` once the problem is fully divided.
    fn next_task(&mut self) -> Option<Self::Task>;

    /// The next task for `to`, for a problem that divides itself differently for the master's
    /// own workers and for each external cluster (the matrix product's row/column strategy
    /// sends a far cluster whole rows and columns, and the master's workers block pairs).
    /// [`Handout::Withheld`] when nothing is for `to` now while others may still get tasks.
    /// Default: [`next_task`](Self::next_task), whoever asks.
    fn next_task_for(&mut self, to: Recipient<'_>) -> Handout<Self::Task> {
        let _ = to;
        match self.next_task() {
            Some(task) => Handout::Task(task),
            None => Handout::Finished,
        }
    }

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

    /// Task `id`, taken back from an external cluster that was lost (or dropped by
    /// re-planning) with its result not in, before it goes to others: the tasks to send in its
    /// place (of a finer grain, say: the matrix product's row/column pair becomes the block
    /// pairs of its products), or `None` to send it whole. The replacements take the next ids
    /// in order, as if [`next_task`](Self::next_task) had just produced them; task `id` is then
    /// never gathered (a result of it that comes late from the cluster is discharged). Only a
    /// task nobody else holds a copy of is offered. Default: `None`.
    fn redivide(&mut self, id: TaskId, task: &Self::Task) -> Option<Vec<Self::Task>> {
        let _ = (id, task);
        None
    }

    /// Total number of tasks, when known in advance: used for progress and ETA.
    fn task_count(&self) -> Option<u64> {
        None
    }

    /// Whether a task built later may do less work because of the results gathered before it
    /// (a search whose tasks carry the best bound known when they are built: the TSP's
    /// `global-pruning`). The live prediction then cannot extrapolate the work of the tasks
    /// gathered to those not yet handed out: until a drift along the dispatch order shows in
    /// the results, the lower end of its interval counts only the work left in the tasks under
    /// way. Default: `false`, a task's work does not depend on when it is built.
    fn later_tasks_may_do_less(&self) -> bool {
        false
    }

    /// Whether a run of this problem can resume from its journal (`hmw launch --resume`), or
    /// why not.
    ///
    /// A resumed run makes the problem afresh, calls [`gather`](Self::gather) (or
    /// [`gather_joined`](Self::gather_joined)) for every journaled result in the journal's
    /// order, then asks [`next_task_for`](Self::next_task_for) for tasks from the first one
    /// again: the tasks whose ids were gathered are dropped, the others handed out under the
    /// ids they had. So a problem that resumes must guarantee that **task ids do not depend on
    /// timing**: the `k`-th task produced is the same piece of work whatever was gathered
    /// before and whoever asked for it (its content may change, as a search task carrying the
    /// best bound known), and `gather` must accept a result whose task this instance has not
    /// produced yet. A problem that divides itself differently for different recipients (an
    /// override of [`next_task_for`](Self::next_task_for) that looks at `to`) does not
    /// guarantee it and must return `Err` with the reason. The framework refuses by itself an
    /// iterative problem ([`iterations_completed`](Self::iterations_completed) is `Some`: an
    /// iteration's tasks are made from the last one's results, so it would need the
    /// iterations' barriers replayed), and a journal in which a task was
    /// [`redivide`](Self::redivide)d (the replacements' ids depended on when a cluster was
    /// lost). Results joined by a sub-master resume ([`gather_joined`](Self::gather_joined)
    /// is replayed with the same ids), and so do [`Splitter`]s (they live on the clusters,
    /// which all start again). Default: `Ok(())`.
    fn check_resumable(&self) -> Result<(), String> {
        Ok(())
    }

    /// For an iterative problem ([`crate::iterative::Iterations`]): the iterations completed
    /// so far (their barrier passed). The master measures each iteration and may tune the
    /// number of workers between them. Default: `None`, the problem is not iterative.
    fn iterations_completed(&self) -> Option<u64> {
        None
    }

    /// For an iterative problem: the number of workers the master has active for the
    /// iterations to come (`[run] active_workers`, or the tuner's choice); the problem divides
    /// its next iteration for that many. Default: ignored.
    fn set_active_workers(&mut self, workers: usize) {
        let _ = workers;
    }
}

/// Who asks the master for a task ([`Problem::next_task_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipient<'a> {
    /// One of the master's own workers.
    Worker,
    /// The communication manager leading to the external cluster of this name.
    Cluster(&'a str),
}

/// What [`Problem::next_task_for`] has for a recipient.
#[derive(Debug)]
pub enum Handout<T> {
    /// A task for it.
    Task(T),
    /// Nothing for this recipient now; others may still get tasks (it asks again later).
    Withheld,
    /// The problem is fully divided: no task for anyone any more.
    Finished,
}

/// How an external cluster re-divides the tasks that reach it over the WAN (optional).
///
/// Without a splitter, an inter-cluster task is a batch of `nt` of the application's tasks,
/// executed as they are. With one, each task that reaches a sub-master is split into local
/// tasks (of a finer grain, say), their results are combined back into the task's result, and
/// that result goes back. One splitter lives in each sub-master and in each communication
/// manager facing a master, for the whole run, so it may keep state: a matrix product can
/// send each operand block across a WAN once and let the far sub-master keep it.
pub trait Splitter<T: Task>: Send + 'static {
    /// On a sub-master: divide a task that arrived over the WAN into local tasks, and give the
    /// empty result they combine into. An error stops the cluster (it is reported, and its
    /// tasks go to other clusters).
    fn split(&mut self, task: T) -> anyhow::Result<Split<T>>;

    /// On a sub-master: fold the result of one local task (or of several joined further
    /// down, with [`TaskResult::join`]) into the result of the task it came from.
    fn combine(&mut self, whole: &mut T::Output, part: T::Output);

    /// On a communication manager facing a master: the task as it crosses the WAN. The link
    /// delivers every message once and in order to the same sub-master, whose [`split`]
    /// sees them in that order, so a task may leave out what an earlier task already carried
    /// for `split` to restore. The master keeps the full task: if the cluster is lost, the
    /// task goes elsewhere whole. Default: unchanged.
    ///
    /// [`split`]: Splitter::split
    fn outbound(&mut self, task: T) -> T {
        task
    }
}

/// A task divided by a [`Splitter`]: its local tasks, and the empty result they combine into.
pub struct Split<T: Task> {
    /// The local tasks, each computed on its own.
    pub parts: Vec<T>,
    /// The empty result their results are combined into ([`Splitter::combine`]).
    pub whole: T::Output,
}
