//! Where a master's tasks come from and where their results go: [`TaskSource`], and a typed
//! [`Problem`] seen as one ([`ProblemSource`]).

use super::join_time::JoinTime;
use crate::{
    app::{Handout, Problem, Recipient, Task, TaskId},
    error::CoreError,
    protocol::{decode, encode, encode_into, ResultRef, ToWorker},
    spare::SpareBuffers,
};

/// What a [`TaskSource`] has to offer now.
#[derive(Debug)]
pub enum Next {
    /// A task: its basic operations and serialised body.
    Task {
        /// Basic operations.
        operations: f64,
        /// The task, bincode-encoded.
        body: Vec<u8>,
    },
    /// Nothing now; more may come (a sub-master waiting on its upstream).
    Later,
    /// Nothing for this recipient now, while others may still get tasks.
    Withheld,
    /// No task will come any more.
    Finished,
    /// The task of this id was gathered before the run resumed ([`super::ResumedSource`]):
    /// the master counts the id and asks again.
    Skip,
}

/// Where a master's serialised tasks come from and where their results go.
pub trait TaskSource {
    /// The next task, which the master will call `id`.
    fn next_task(&mut self, id: TaskId) -> Next;
    /// The next task for `to`, which the master will call `id`. Default:
    /// [`next_task`](Self::next_task), whoever asks.
    fn next_task_for(&mut self, id: TaskId, to: Recipient<'_>) -> Next {
        let _ = to;
        self.next_task(id)
    }
    /// Gather a result (for one task, or for several joined); called once per task.
    fn gather(&mut self, result: ResultRef<'_>) -> Result<(), CoreError>;
    /// [`Problem::redivide`]: the tasks (basic operations and serialised body) to send in
    /// place of task `id`, taken back from a lost or dropped cluster; `None` to send it whole.
    fn redivide(&mut self, id: TaskId, body: &[u8]) -> Option<Vec<(f64, Vec<u8>)>> {
        let _ = (id, body);
        None
    }
    /// A result for tasks `ids` this master has not handed out (their ids are past the last
    /// it produced): whether the source takes them as gathered, so that it will not hand them
    /// out (a master resumed from its journal, fed the results a far cluster computed for
    /// the master before it). Default: `false`, such a result is discharged.
    fn adopt(&mut self, ids: &[TaskId]) -> bool {
        let _ = ids;
        false
    }
    /// Total number of tasks, when known.
    fn task_count(&self) -> Option<u64>;
    /// [`Problem::later_tasks_may_do_less`].
    fn later_tasks_may_do_less(&self) -> bool {
        false
    }
    /// The rank this source's tasks arrive from, if any: its messages go to
    /// [`on_upstream`](Self::on_upstream).
    fn upstream(&self) -> Option<usize> {
        None
    }
    /// A message from the upstream rank.
    fn on_upstream(&mut self, message: ToWorker) -> Result<(), CoreError> {
        Err(CoreError::Setup(format!(
            "unexpected message from upstream: {message:?}"
        )))
    }
    /// A message the source wants sent to its upstream rank.
    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// Upstream asked to stop: the run ends now, whatever is still in flight.
    fn stopped(&self) -> bool {
        false
    }
    /// Seconds spent joining results: gathering them into the problem, or combining and
    /// joining them before they go upstream.
    fn join_s(&self) -> f64 {
        0.0
    }
    /// A source that splits its tasks before they go out: the parts each gave, on average.
    fn parts_per_task(&self) -> Option<f64> {
        None
    }
    /// [`Problem::iterations_completed`]: `None` unless the source is iterative.
    fn iterations_completed(&self) -> Option<u64> {
        None
    }
    /// [`Problem::set_active_workers`].
    fn set_active_workers(&mut self, workers: usize) {
        let _ = workers;
    }
    /// The run's clock started at `unix_s` (seconds since the Unix epoch, as the driver read
    /// it): a journal notes it. Default: nothing.
    fn run_started(&mut self, unix_s: f64) {
        let _ = unix_s;
    }
    /// A buffer done with (a message sent), to encode a task into rather than allocate one.
    /// Default: dropped.
    fn recycle(&mut self, buffer: Vec<u8>) {
        drop(buffer);
    }
}

/// A typed [`Problem`] seen as a [`TaskSource`].
pub struct ProblemSource<P> {
    problem: P,
    /// The time spent decoding results and gathering them into the problem.
    join_time: JoinTime,
    /// Buffers to encode tasks into.
    spare: SpareBuffers,
}

impl<P> ProblemSource<P> {
    /// The source of `problem`'s tasks.
    pub fn new(problem: P) -> Self {
        ProblemSource {
            problem,
            join_time: JoinTime::default(),
            spare: SpareBuffers::default(),
        }
    }

    /// The problem.
    pub fn problem(&self) -> &P {
        &self.problem
    }

    /// The problem, with what was gathered into it.
    pub fn into_problem(self) -> P {
        self.problem
    }
}

impl<P: Problem> TaskSource for ProblemSource<P> {
    fn next_task(&mut self, id: TaskId) -> Next {
        self.next_task_for(id, Recipient::Worker)
    }

    fn next_task_for(&mut self, _id: TaskId, to: Recipient<'_>) -> Next {
        match self.problem.next_task_for(to) {
            Handout::Task(task) => Next::Task {
                operations: task.operations(),
                body: encode_into(self.spare.take(), &task),
            },
            Handout::Withheld => Next::Withheld,
            Handout::Finished => Next::Finished,
        }
    }

    fn gather(&mut self, result: ResultRef<'_>) -> Result<(), CoreError> {
        self.join_time.measure(|| {
            let decoded = decode(result.body, "result").map_err(CoreError::decoding(0))?;
            match result.ids.as_slice() {
                [id] => self.problem.gather(*id, decoded),
                ids => self.problem.gather_joined(ids, decoded),
            }
            Ok(())
        })
    }

    fn redivide(&mut self, id: TaskId, body: &[u8]) -> Option<Vec<(f64, Vec<u8>)>> {
        let task: P::Task = match decode(body, "task") {
            Ok(task) => task,
            Err(error) => {
                // The master encoded it: it goes whole, as it would without redividing.
                tracing::error!(id, %error, "a task taken back does not decode; it goes whole");
                return None;
            }
        };
        let parts = self.problem.redivide(id, &task)?;
        Some(
            parts
                .into_iter()
                .map(|part| (part.operations(), encode(&part)))
                .collect(),
        )
    }

    fn task_count(&self) -> Option<u64> {
        self.problem.task_count()
    }

    fn later_tasks_may_do_less(&self) -> bool {
        self.problem.later_tasks_may_do_less()
    }

    fn join_s(&self) -> f64 {
        self.join_time.total_s()
    }

    fn iterations_completed(&self) -> Option<u64> {
        self.problem.iterations_completed()
    }

    fn set_active_workers(&mut self, workers: usize) {
        self.problem.set_active_workers(workers);
    }

    fn recycle(&mut self, buffer: Vec<u8>) {
        self.spare.keep(buffer);
    }
}
