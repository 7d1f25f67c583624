//! A master's tasks after a restart: the problem rebuilt from the journal of the run before
//! ([`crate::journal`]), and its tasks handed out again less those already gathered.
//!
//! A task's id is its position in the order the problem produces tasks (`Problem::next_task`).
//! On resume the problem is made afresh, every journaled result is gathered into it in the
//! journal's order, and it produces its tasks again from the first: those whose ids were
//! gathered are dropped as they come ([`Next::Skip`]: the master counts the id and asks for the
//! next), the others are handed out under the ids they had. That is right only when a task's
//! id does not depend on timing: the `k`-th task produced is the same task whatever was
//! gathered before and whoever asked (see `Problem::check_resumable`).

use super::task_source::{Next, TaskSource};
use crate::{
    app::{Recipient, TaskId},
    error::CoreError,
    journal::Record,
    protocol::ResultRef,
};

/// Task ids, as a bit per id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdSet {
    words: Vec<u64>,
    len: u64,
}

impl IdSet {
    /// Adds `id`; whether it was not there.
    pub fn insert(&mut self, id: TaskId) -> bool {
        let (word, bit) = ((id / 64) as usize, id % 64);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let fresh = self.words[word] & (1 << bit) == 0;
        self.words[word] |= 1 << bit;
        self.len += u64::from(fresh);
        fresh
    }

    /// Whether `id` is in the set.
    pub fn contains(&self, id: TaskId) -> bool {
        self.words
            .get((id / 64) as usize)
            .is_some_and(|word| word & (1 << (id % 64)) != 0)
    }

    /// How many ids the set holds.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A [`TaskSource`] resumed from a journal: the results journaled are gathered into it, and
/// the tasks they stand for are not handed out again.
pub struct ResumedSource<S> {
    inner: S,
    /// Tasks gathered: before the run, and those adopted since.
    gathered: IdSet,
    /// Tasks gathered before the run.
    before: u64,
}

impl<S: TaskSource> ResumedSource<S> {
    /// `inner` (a fresh problem's source) with every result of `records` gathered into it, in
    /// their order. Refused when the journal records a task redivided (its replacements'
    /// ids depended on when its cluster was lost), or a task gathered twice.
    pub fn replay<'a>(
        mut inner: S,
        records: impl IntoIterator<Item = &'a Record<'a>>,
    ) -> Result<Self, CoreError> {
        let mut gathered = IdSet::default();
        for record in records {
            match record {
                Record::Gathered {
                    ids,
                    operations,
                    body,
                } => {
                    for &id in ids {
                        if !gathered.insert(id) {
                            return Err(CoreError::Setup(format!(
                                "the journal holds task {id} twice: it is not a journal of one \
                                 run"
                            )));
                        }
                    }
                    inner.gather(ResultRef {
                        ids: ids.iter().copied().collect(),
                        operations: *operations,
                        busy_s: 0.0,
                        decode_s: 0.0,
                        encode_s: 0.0,
                        body,
                    })?;
                }
                Record::Redivided { id, parts } => {
                    return Err(CoreError::Setup(format!(
                        "the run cannot resume from this journal: task {id} was taken back from \
                         a lost cluster and replaced by {parts} tasks, whose ids depended on when \
                         the cluster was lost (Problem::redivide); start the run again"
                    )));
                }
                Record::Resumed { .. } | Record::Started { .. } => {}
            }
        }
        let before = gathered.len();
        Ok(ResumedSource {
            inner,
            gathered,
            before,
        })
    }

    /// The tasks gathered before this run.
    pub fn gathered_before(&self) -> u64 {
        self.before
    }

    /// The source, with everything gathered into it.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The same for a source given fresh, with nothing gathered before (a run not resumed).
    pub fn fresh(inner: S) -> Self {
        ResumedSource {
            inner,
            gathered: IdSet::default(),
            before: 0,
        }
    }
}

impl<S: TaskSource> TaskSource for ResumedSource<S> {
    fn next_task(&mut self, id: TaskId) -> Next {
        self.next_task_for(id, Recipient::Worker)
    }

    fn next_task_for(&mut self, id: TaskId, to: Recipient<'_>) -> Next {
        match self.inner.next_task_for(id, to) {
            Next::Task { body, .. } if self.gathered.contains(id) => {
                self.inner.recycle(body);
                Next::Skip
            }
            next => next,
        }
    }

    fn gather(&mut self, result: ResultRef<'_>) -> Result<(), CoreError> {
        self.inner.gather(result)
    }

    fn redivide(&mut self, id: TaskId, body: &[u8]) -> Option<Vec<(f64, Vec<u8>)>> {
        self.inner.redivide(id, body)
    }

    /// Taken unless one of `ids` was gathered before: they will be skipped when their turn
    /// comes.
    fn adopt(&mut self, ids: &[TaskId]) -> bool {
        if ids.iter().any(|&id| self.gathered.contains(id)) {
            return false;
        }
        for &id in ids {
            self.gathered.insert(id);
        }
        true
    }

    /// The tasks of this run: the problem's less those gathered before.
    fn task_count(&self) -> Option<u64> {
        self.inner
            .task_count()
            .map(|total| total.saturating_sub(self.before))
    }

    fn later_tasks_may_do_less(&self) -> bool {
        self.inner.later_tasks_may_do_less()
    }

    fn join_s(&self) -> f64 {
        self.inner.join_s()
    }

    fn iterations_completed(&self) -> Option<u64> {
        self.inner.iterations_completed()
    }

    fn set_active_workers(&mut self, workers: usize) {
        self.inner.set_active_workers(workers);
    }

    fn run_started(&mut self, unix_s: f64) {
        self.inner.run_started(unix_s);
    }

    fn recycle(&mut self, buffer: Vec<u8>) {
        self.inner.recycle(buffer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roles::ProblemSource;
    use crate::{Problem, Task, TaskResult, WorkerContext};
    use proptest::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    struct Square(u64);
    #[derive(Serialize, Deserialize)]
    struct Value(u64);
    impl Task for Square {
        type Output = Value;
        fn execute(self, _: &WorkerContext) -> Value {
            Value(self.0 * self.0)
        }
    }
    impl TaskResult for Value {
        fn join(&mut self, other: Value) -> Result<(), Value> {
            self.0 += other.0;
            Ok(())
        }
    }
    /// Squares of 0..n, gathered into a sum and a count.
    struct Squares {
        n: u64,
        next: u64,
        sum: u64,
        gathers: u64,
    }
    impl Problem for Squares {
        type Task = Square;
        fn next_task(&mut self) -> Option<Square> {
            (self.next < self.n).then(|| {
                self.next += 1;
                Square(self.next - 1)
            })
        }
        fn gather(&mut self, _: TaskId, result: Value) {
            self.sum += result.0;
            self.gathers += 1;
        }
        fn task_count(&self) -> Option<u64> {
            Some(self.n)
        }
    }
    fn squares(n: u64) -> ProblemSource<Squares> {
        ProblemSource::new(Squares {
            n,
            next: 0,
            sum: 0,
            gathers: 0,
        })
    }

    #[test]
    fn id_sets_count_what_they_hold() {
        let mut set = IdSet::default();
        assert!(set.insert(3) && set.insert(200) && !set.insert(3));
        assert!(set.contains(3) && set.contains(200) && !set.contains(4));
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn a_redivided_task_is_refused_by_name() {
        let record = Record::Redivided { id: 4, parts: 3 };
        let Err(error) = ResumedSource::replay(squares(5), [&record]) else {
            panic!("resumed");
        };
        assert!(error.to_string().contains("task 4"), "{error}");
    }

    proptest! {
        /// Whatever part of a run was journaled, in whatever order, the run resumed gathers
        /// every task exactly once, with the same answer as a run without a stop.
        #[test]
        fn a_resumed_run_gathers_every_task_once(
            n in 1u64..60,
            order in any::<prop::sample::Index>(),
            journaled in prop::collection::vec(any::<bool>(), 60),
        ) {
            // The first run: tasks gathered in some order, those marked journaled.
            let mut ids: Vec<u64> = (0..n).collect();
            let rotate = order.index(ids.len());
            ids.rotate_left(rotate);
            let bodies: Vec<(u64, Vec<u8>)> = ids
                .iter()
                .filter(|&&id| journaled[id as usize])
                .map(|&id| (id, crate::protocol::encode(&Value(id * id))))
                .collect();
            let records: Vec<Record<'_>> = bodies
                .iter()
                .map(|(id, body)| Record::Gathered { ids: vec![*id], operations: 1.0, body })
                .collect();
            let mut source = ResumedSource::replay(squares(n), &records).unwrap();
            prop_assert_eq!(source.task_count(), Some(n - records.len() as u64));
            // The resumed run: as the master asks, skipped ids counted.
            let mut id = 0;
            loop {
                match source.next_task(id) {
                    Next::Task { body, .. } => {
                        let task: Square = crate::protocol::decode(&body, "task").unwrap();
                        prop_assert_eq!(task.0, id);
                        let result = crate::protocol::encode(&task.execute(&WorkerContext::localhost()));
                        source.gather(ResultRef {
                            ids: [id].into_iter().collect(),
                            operations: 1.0, busy_s: 0.0, decode_s: 0.0, encode_s: 0.0,
                            body: &result,
                        }).unwrap();
                    }
                    Next::Skip => {}
                    Next::Finished => break,
                    other => prop_assert!(false, "{:?}", other),
                }
                id += 1;
            }
            let problem = source.into_inner().into_problem();
            prop_assert_eq!(problem.gathers, n);
            prop_assert_eq!(problem.sum, (0..n).map(|i| i * i).sum::<u64>());
        }
    }
}
