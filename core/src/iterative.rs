//! Iterative applications: a computation in iterations, each a set of tasks with a barrier
//! between them (a Jacobi sweep, an N-body step).
//!
//! An application implements [`Iterative`] and runs [`Iterations`] of it, which is a
//! [`Problem`]: it hands out the tasks of one iteration, withholds any more
//! ([`Handout::Withheld`]) until every result of that iteration is gathered, then begins the
//! next. Each iteration is divided for the number of workers the master has active then
//! ([`Problem::set_active_workers`]): all of its workers, `[run] active_workers`, or what the
//! tuner (`[run] tune_workers`) chose from the iterations measured so far.

use std::collections::VecDeque;

use crate::app::{Handout, Problem, Recipient, Task, TaskId};

/// A computation in iterations, each a set of tasks with a barrier between them.
pub trait Iterative: Send + 'static {
    /// The tasks the iterations divide into.
    type Task: Task;

    /// The tasks of iteration `iteration` (from 0), divided for `workers` workers (one task
    /// each suits the tuner's model: a balanced iteration of `workers` messages), or `None`
    /// when the computation is over. An empty iteration also ends it.
    fn begin(&mut self, iteration: u64, workers: usize) -> Option<Vec<Self::Task>>;

    /// Gather the result of task `index` (its place in what [`begin`](Self::begin) gave) of
    /// iteration `iteration`; called once per task, in completion order.
    fn gather(&mut self, iteration: u64, index: usize, result: <Self::Task as Task>::Output);

    /// Every result of iteration `iteration` is gathered: the barrier (swap the grids, test
    /// convergence). Default: nothing.
    fn end(&mut self, iteration: u64) {
        let _ = iteration;
    }
}

/// An [`Iterative`] computation as a [`Problem`].
pub struct Iterations<I: Iterative> {
    inner: I,
    /// Iterations completed (barrier passed); also the current iteration's number.
    completed: u64,
    /// Workers the next iteration is divided for.
    workers: usize,
    /// The current iteration, once begun: its tasks not handed out yet, the id of its first
    /// task, its task count and the results gathered.
    current: Option<Current<I::Task>>,
    /// Tasks produced so far (the id of the next).
    produced: TaskId,
    finished: bool,
}

struct Current<T> {
    pending: VecDeque<T>,
    first: TaskId,
    tasks: usize,
    gathered: usize,
}

impl<I: Iterative> Iterations<I> {
    /// `inner`, run iteration after iteration.
    pub fn new(inner: I) -> Self {
        Iterations {
            inner,
            completed: 0,
            workers: 1,
            current: None,
            produced: 0,
            finished: false,
        }
    }

    /// The computation, with what was gathered into it.
    pub fn into_inner(self) -> I {
        self.inner
    }

    /// The computation.
    pub fn inner(&self) -> &I {
        &self.inner
    }

    fn gather_at(&mut self, id: TaskId, tasks: usize, result: <I::Task as Task>::Output) {
        let Some(current) = self.current.as_mut() else {
            tracing::warn!(id, "a result outside any iteration: ignored");
            return;
        };
        let index = id.wrapping_sub(current.first) as usize;
        if index >= current.tasks {
            tracing::warn!(id, "a result of another iteration: ignored");
            return;
        }
        self.inner.gather(self.completed, index, result);
        current.gathered += tasks;
        if current.gathered >= current.tasks && current.pending.is_empty() {
            self.inner.end(self.completed);
            self.completed += 1;
            self.current = None;
        }
    }
}

impl<I: Iterative> Problem for Iterations<I> {
    type Task = I::Task;

    fn next_task(&mut self) -> Option<I::Task> {
        match self.next_task_for(Recipient::Worker) {
            Handout::Task(task) => Some(task),
            Handout::Withheld | Handout::Finished => None,
        }
    }

    fn next_task_for(&mut self, _to: Recipient<'_>) -> Handout<I::Task> {
        if self.finished {
            return Handout::Finished;
        }
        if self.current.is_none() {
            match self.inner.begin(self.completed, self.workers) {
                Some(tasks) if !tasks.is_empty() => {
                    self.current = Some(Current {
                        tasks: tasks.len(),
                        pending: tasks.into(),
                        first: self.produced,
                        gathered: 0,
                    });
                }
                _ => {
                    self.finished = true;
                    return Handout::Finished;
                }
            }
        }
        let current = self.current.as_mut().expect("begun above");
        match current.pending.pop_front() {
            Some(task) => {
                self.produced += 1;
                Handout::Task(task)
            }
            // The barrier: the rest of this iteration is out, the next waits for its results.
            None => Handout::Withheld,
        }
    }

    fn gather(&mut self, id: TaskId, result: <I::Task as Task>::Output) {
        self.gather_at(id, 1, result);
    }

    /// A result joined from several tasks (a sub-master's `nr`) counts for all of them and is
    /// gathered under the first, as [`Problem::gather_joined`] does.
    fn gather_joined(&mut self, ids: &[TaskId], result: <I::Task as Task>::Output) {
        self.gather_at(ids[0], ids.len(), result);
    }

    fn iterations_completed(&self) -> Option<u64> {
        Some(self.completed)
    }

    fn set_active_workers(&mut self, workers: usize) {
        self.workers = workers.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{TaskResult, WorkerContext};

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Add(u64);
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Sum(u64);
    impl Task for Add {
        type Output = Sum;
        fn execute(self, _: &WorkerContext) -> Sum {
            Sum(self.0 + 1)
        }
    }
    impl TaskResult for Sum {
        fn join(&mut self, other: Self) -> Result<(), Self> {
            self.0 += other.0;
            Ok(())
        }
    }

    /// Three iterations; iteration k has one task per worker; records what it saw.
    #[derive(Default)]
    struct Counting {
        begun: Vec<(u64, usize)>,
        gathered: Vec<(u64, usize, u64)>,
        ended: Vec<u64>,
    }
    impl Iterative for Counting {
        type Task = Add;
        fn begin(&mut self, iteration: u64, workers: usize) -> Option<Vec<Add>> {
            self.begun.push((iteration, workers));
            (iteration < 3).then(|| (0..workers as u64).map(Add).collect())
        }
        fn gather(&mut self, iteration: u64, index: usize, result: Sum) {
            self.gathered.push((iteration, index, result.0));
        }
        fn end(&mut self, iteration: u64) {
            self.ended.push(iteration);
        }
    }

    #[test]
    fn the_barrier_withholds_the_next_iteration_until_every_result_is_in() {
        let mut p = Iterations::new(Counting::default());
        p.set_active_workers(2);
        assert_eq!(p.iterations_completed(), Some(0));
        let Handout::Task(a) = p.next_task_for(Recipient::Worker) else {
            panic!()
        };
        let Handout::Task(b) = p.next_task_for(Recipient::Worker) else {
            panic!()
        };
        assert!(matches!(
            p.next_task_for(Recipient::Worker),
            Handout::Withheld
        ));
        // Out of order: task 1 first.
        p.gather(1, b.execute(&context()));
        assert!(matches!(
            p.next_task_for(Recipient::Worker),
            Handout::Withheld
        ));
        p.gather(0, a.execute(&context()));
        assert_eq!(p.iterations_completed(), Some(1));
        // The next iteration is divided for the workers active now.
        p.set_active_workers(3);
        let mut ids = 2..;
        for _ in 0..3 {
            let Handout::Task(t) = p.next_task_for(Recipient::Worker) else {
                panic!()
            };
            p.gather(ids.next().unwrap(), t.execute(&context()));
        }
        assert_eq!(p.iterations_completed(), Some(2));
        p.set_active_workers(1);
        let Handout::Task(t) = p.next_task_for(Recipient::Worker) else {
            panic!()
        };
        p.gather_joined(&[5], t.execute(&context()));
        assert!(matches!(
            p.next_task_for(Recipient::Worker),
            Handout::Finished
        ));
        assert!(p.next_task().is_none());
        let inner = p.into_inner();
        assert_eq!(inner.begun, vec![(0, 2), (1, 3), (2, 1), (3, 1)]);
        assert_eq!(inner.ended, vec![0, 1, 2]);
        assert_eq!(
            inner.gathered,
            vec![
                (0, 1, 2),
                (0, 0, 1),
                (1, 0, 1),
                (1, 1, 2),
                (1, 2, 3),
                (2, 0, 1)
            ]
        );
    }

    fn context() -> WorkerContext {
        WorkerContext::localhost()
    }
}
