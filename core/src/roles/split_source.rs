//! A master that splits its problem's tasks as a sub-master would ([`SplitSource`]):
//! `[run] split_tasks`, for `hmw calibrate`'s runs of an external cluster's workers.
//!
//! A sub-master whose application has a [`Splitter`] hands its workers the parts of each
//! inter-cluster task, of a finer grain: their computation, their messages and the workers'
//! own time on those messages are the parts'. A calibration that handed those workers whole
//! tasks would measure another grain than the run's. This source takes the problem's tasks,
//! splits each with the application's splitter, hands the parts out one by one, combines
//! their results back into each task's result with [`Splitter::combine`], and gathers a task's
//! result into the problem once all its parts are in.

use std::collections::{HashMap, VecDeque};

use super::{
    join_time::JoinTime,
    task_source::{Next, TaskSource},
};
use crate::{
    app::{Handout, Problem, Recipient, Split, Splitter, Task, TaskId},
    error::CoreError,
    protocol::{decode, encode, ResultRef},
};

/// A task of the problem whose parts are not all back.
struct Whole<R> {
    /// The id its result is gathered under: its first part's, once handed out.
    id: Option<TaskId>,
    /// Parts not back yet (or not handed out yet).
    pending: usize,
    result: R,
}

/// A problem's tasks split into parts before they go out (see the module's documentation).
pub struct SplitSource<P: Problem> {
    problem: P,
    splitter: Box<dyn Splitter<P::Task>>,
    /// Parts not handed out yet, with the task they come from (a key of `wholes`).
    queued: VecDeque<(u64, P::Task)>,
    wholes: HashMap<u64, Whole<<P::Task as Task>::Output>>,
    /// Each part handed out: the task it comes from.
    part_of: HashMap<TaskId, u64>,
    next_whole: u64,
    /// Tasks of the problem split, and the parts they gave.
    tasks_split: u64,
    parts: u64,
    join_time: JoinTime,
}

impl<P: Problem> SplitSource<P> {
    /// The parts of `problem`'s tasks, as `splitter` divides them.
    pub fn new(problem: P, splitter: Box<dyn Splitter<P::Task>>) -> Self {
        SplitSource {
            problem,
            splitter,
            queued: VecDeque::new(),
            wholes: HashMap::new(),
            part_of: HashMap::new(),
            next_whole: 0,
            tasks_split: 0,
            parts: 0,
            join_time: JoinTime::default(),
        }
    }

    /// The problem, with the results of its tasks whose parts all came back.
    pub fn into_problem(self) -> P {
        self.problem
    }

    /// Split the problem's next task, queueing its parts; `None` when it has none for `to`.
    fn split_next(&mut self, to: Recipient<'_>) -> Option<Next> {
        let task = match self.problem.next_task_for(to) {
            Handout::Task(task) => task,
            Handout::Withheld => return Some(Next::Withheld),
            Handout::Finished => return Some(Next::Finished),
        };
        let Split { parts, whole } = match self.splitter.split(task) {
            Ok(split) => split,
            Err(error) => {
                // Nothing to measure with: the run ends, and its statistics show no parts.
                tracing::error!("cannot split a task: {error:#}");
                return Some(Next::Finished);
            }
        };
        self.tasks_split += 1;
        self.parts += parts.len() as u64;
        if parts.is_empty() {
            // Nothing to compute: its result is complete already.
            self.problem.gather(0, whole);
            return None;
        }
        let key = self.next_whole;
        self.next_whole += 1;
        self.wholes.insert(
            key,
            Whole {
                id: None,
                pending: parts.len(),
                result: whole,
            },
        );
        self.queued
            .extend(parts.into_iter().map(|part| (key, part)));
        None
    }
}

impl<P: Problem> TaskSource for SplitSource<P> {
    fn next_task(&mut self, id: TaskId) -> Next {
        self.next_task_for(id, Recipient::Worker)
    }

    fn next_task_for(&mut self, id: TaskId, to: Recipient<'_>) -> Next {
        while self.queued.is_empty() {
            if let Some(next) = self.split_next(to) {
                return next;
            }
        }
        let (key, part) = self.queued.pop_front().expect("a part is queued");
        let whole = self
            .wholes
            .get_mut(&key)
            .expect("a queued part has its whole");
        whole.id.get_or_insert(id);
        self.part_of.insert(id, key);
        Next::Task {
            operations: part.operations(),
            body: encode(&part),
        }
    }

    fn gather(&mut self, result: ResultRef<'_>) -> Result<(), CoreError> {
        let &[id] = result.ids.as_slice() else {
            return Err(CoreError::Protocol {
                rank: 0,
                message: format!(
                    "a result stands for {} parts joined: a master that splits its tasks \
                     takes one result per part",
                    result.ids.len()
                ),
            });
        };
        let key = self
            .part_of
            .remove(&id)
            .ok_or_else(|| CoreError::Protocol {
                rank: 0,
                message: format!("a result for unknown part {id}"),
            })?;
        self.join_time.measure(|| {
            let part = decode(result.body, "result").map_err(CoreError::decoding(0))?;
            let whole = self
                .wholes
                .get_mut(&key)
                .expect("a part handed out has its whole");
            self.splitter.combine(&mut whole.result, part);
            whole.pending -= 1;
            if whole.pending == 0 {
                let whole = self.wholes.remove(&key).expect("just found");
                self.problem.gather(whole.id.unwrap_or(id), whole.result);
            }
            Ok(())
        })
    }

    /// Unknown: parts are counted as they are split.
    fn task_count(&self) -> Option<u64> {
        None
    }

    fn join_s(&self) -> f64 {
        self.join_time.total_s()
    }

    fn parts_per_task(&self) -> Option<f64> {
        (self.tasks_split > 0).then(|| self.parts as f64 / self.tasks_split as f64)
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::{app::TaskResult, protocol::WireResult, WorkerContext};

    /// The sum of the integers in `[from, to)`; one basic operation per integer.
    #[derive(Debug, Serialize, Deserialize)]
    struct Span(u64, u64);

    #[derive(Debug, Serialize, Deserialize)]
    struct Sum(u64);

    impl Task for Span {
        type Output = Sum;
        fn execute(self, _: &WorkerContext) -> Sum {
            Sum((self.0..self.1).sum())
        }
        fn operations(&self) -> f64 {
            (self.1 - self.0) as f64
        }
    }

    impl TaskResult for Sum {
        fn join(&mut self, other: Sum) -> Result<(), Sum> {
            self.0 += other.0;
            Ok(())
        }
    }

    /// Spans of 30 integers, `tasks` of them; gathers each result with its id.
    struct Spans {
        tasks: u64,
        handed: u64,
        gathered: Vec<(TaskId, u64)>,
    }

    impl Problem for Spans {
        type Task = Span;
        fn next_task(&mut self) -> Option<Span> {
            (self.handed < self.tasks).then(|| {
                self.handed += 1;
                Span(30 * (self.handed - 1), 30 * self.handed)
            })
        }
        fn gather(&mut self, id: TaskId, result: Sum) {
            self.gathered.push((id, result.0));
        }
    }

    /// Into thirds.
    struct Thirds;

    impl Splitter<Span> for Thirds {
        fn split(&mut self, task: Span) -> anyhow::Result<Split<Span>> {
            let third = (task.1 - task.0) / 3;
            Ok(Split {
                parts: (0..3)
                    .map(|k| Span(task.0 + k * third, task.0 + (k + 1) * third))
                    .collect(),
                whole: Sum(0),
            })
        }
        fn combine(&mut self, whole: &mut Sum, part: Sum) {
            whole.0 += part.0;
        }
    }

    fn result_of(id: TaskId, body: &[u8]) -> WireResult {
        let part: Span = decode(body, "task").unwrap();
        WireResult {
            ids: smallvec::smallvec![id],
            operations: part.operations(),
            busy_s: 0.0,
            decode_s: 0.0,
            encode_s: 0.0,
            body: encode(&part.execute(&WorkerContext::localhost())),
        }
    }

    /// `tasks` spans, each split into thirds.
    fn thirds_of(tasks: u64) -> SplitSource<Spans> {
        let problem = Spans {
            tasks,
            handed: 0,
            gathered: Vec::new(),
        };
        SplitSource::new(problem, Box::new(Thirds))
    }

    #[test]
    fn parts_go_out_and_their_results_combine_into_each_task() {
        let mut source = thirds_of(2);
        let mut out = Vec::new();
        for id in 10.. {
            match source.next_task(id) {
                Next::Task { operations, body } => {
                    assert_eq!(operations, 10.0, "a third of a task");
                    out.push(result_of(id, &body));
                }
                Next::Finished => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(out.len(), 6);
        assert_eq!(source.parts_per_task(), Some(3.0));
        // Back in any order: each task's result once all its parts are in.
        for result in out.into_iter().rev() {
            source.gather(result.as_ref()).unwrap();
        }
        let mut gathered = source.into_problem().gathered;
        gathered.sort();
        assert_eq!(gathered, vec![(10, (0..30).sum()), (13, (30..60).sum())]);
    }

    #[test]
    fn a_result_for_a_part_never_handed_out_is_an_error() {
        let mut source = thirds_of(1);
        let result = result_of(7, &encode(&Span(0, 10)));
        assert!(source.gather(result.as_ref()).is_err());
    }
}
