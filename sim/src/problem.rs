//! The simulated application: tasks that stand for `oper` basic operations each (drawn from
//! the plan's distribution), results that carry the numbers of the tasks they stand for, and
//! a problem that counts how often it gathers each task (exactly once, in a correct run).
//! An iterative problem runs its tasks in iterations with a barrier between them, each
//! divided among the workers the master has active then (its tuner's count), as
//! `hmw_core::iterative::Iterations` does.

use hmw_core::{Handout, Problem, Recipient, Task, TaskId, TaskResult, WorkerContext};
use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// Task number `k` of the problem, of `operations` basic operations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimTask {
    /// The task's number in the problem.
    pub k: u64,
    /// Its basic operations.
    pub operations: f64,
}

/// The problem's task numbers a result stands for (several when joined).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimResult(pub Vec<u64>);

impl Task for SimTask {
    type Output = SimResult;
    fn execute(self, _: &WorkerContext) -> SimResult {
        SimResult(vec![self.k])
    }
    fn operations(&self) -> f64 {
        self.operations
    }
}

impl TaskResult for SimResult {
    fn join(&mut self, other: SimResult) -> Result<(), SimResult> {
        self.0.extend(other.0);
        Ok(())
    }
}

/// How many basic operations tasks have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskCost {
    /// Mean basic operations per task (`[application] oper`).
    pub oper: f64,
    /// Coefficient of variation of a task's operations (`[application] oper_cv`): 0 for
    /// identical tasks, else each task draws from a log-normal distribution of mean `oper`.
    pub cv: f64,
}

impl TaskCost {
    /// Every task `oper` basic operations.
    pub fn fixed(oper: f64) -> Self {
        TaskCost { oper, cv: 0.0 }
    }
}

/// The iterations of an iterative problem.
struct Steps {
    /// Iterations in all, and completed (their barrier passed).
    total: u64,
    completed: u64,
    /// The work of one iteration, in tasks of `oper`.
    work: f64,
    /// Workers the next iteration is divided for.
    workers: usize,
    /// Of the current iteration: tasks not handed out yet, tasks not gathered yet.
    to_hand: usize,
    outstanding: usize,
}

/// `tasks` tasks, or iterations of tasks; counts how often each is gathered.
pub struct SimProblem {
    /// Tasks of a flat problem (an iterative one produces as it goes).
    tasks: u64,
    steps: Option<Steps>,
    /// Tasks produced: new ones and those that replace a task taken back.
    produced: u64,
    /// New tasks produced, of a flat problem's `tasks`.
    new_tasks: u64,
    /// Each task taken back from a lost or dropped cluster gives way to this many (0: it
    /// goes whole).
    redivide_into: u32,
    /// Tasks that gave way to others, by number, and how many did.
    replaced: Vec<bool>,
    redivided: u64,
    cost: TaskCost,
    /// Log-normal parameters of the operations' factor (mean 1).
    sigma: f64,
    rng: Rng,
    seen: Vec<u32>,
    /// A joined result whose tasks were not the ids it came with.
    mismatched: bool,
}

impl SimProblem {
    /// `tasks` tasks of `cost`, drawn from the stream of `seed`.
    pub fn new(tasks: u64, cost: TaskCost, seed: u64) -> Self {
        SimProblem {
            tasks,
            steps: None,
            produced: 0,
            new_tasks: 0,
            redivide_into: 0,
            replaced: vec![false; tasks as usize],
            redivided: 0,
            cost,
            sigma: (1.0 + cost.cv * cost.cv).ln().sqrt(),
            rng: Rng::new(seed, 1),
            seen: vec![0; tasks as usize],
            mismatched: false,
        }
    }

    /// `iterations` iterations, each the work of `work` tasks of `cost` divided among the
    /// active workers (one task each, of `work x oper / workers` operations).
    pub fn iterative(iterations: u64, work: f64, cost: TaskCost, seed: u64) -> Self {
        let mut problem = SimProblem::new(0, cost, seed);
        problem.steps = Some(Steps {
            total: iterations,
            completed: 0,
            work,
            workers: 1,
            to_hand: 0,
            outstanding: 0,
        });
        problem
    }

    /// Each task taken back from a lost or dropped cluster gives way to `parts` tasks that
    /// share its operations (0: it goes whole).
    pub fn redividing(mut self, parts: u32) -> Self {
        self.redivide_into = parts;
        self
    }

    /// The operations of one task of `oper` on average.
    fn draw(&mut self, oper: f64) -> f64 {
        if self.sigma > 0.0 {
            let s = self.sigma;
            oper * (s * self.rng.normal() - 0.5 * s * s).exp()
        } else {
            oper
        }
    }

    /// A new task of `oper` operations on average.
    fn produce(&mut self, oper: f64) -> SimTask {
        let operations = self.draw(oper);
        self.number(operations)
    }

    /// The next task number, for a task of `operations`.
    fn number(&mut self, operations: f64) -> SimTask {
        let k = self.produced;
        self.produced += 1;
        if self.seen.len() <= k as usize {
            self.seen.push(0);
            self.replaced.push(false);
        }
        SimTask { k, operations }
    }

    /// Every task gathered exactly once, except those that gave way to others (never), and
    /// every joined result stood for the tasks it came with.
    pub fn each_gathered_once(&self) -> bool {
        !self.mismatched
            && self
                .seen
                .iter()
                .zip(&self.replaced)
                .all(|(&n, &replaced)| n == u32::from(!replaced))
    }

    /// Tasks that gave way to others.
    pub fn redivided(&self) -> u64 {
        self.redivided
    }

    /// How often each task was gathered.
    pub fn seen(&self) -> &[u32] {
        &self.seen
    }
}

impl Problem for SimProblem {
    type Task = SimTask;

    fn next_task(&mut self) -> Option<SimTask> {
        match self.next_task_for(Recipient::Worker) {
            Handout::Task(task) => Some(task),
            Handout::Withheld | Handout::Finished => None,
        }
    }

    fn next_task_for(&mut self, _to: Recipient<'_>) -> Handout<SimTask> {
        let oper = self.cost.oper;
        let Some(steps) = &mut self.steps else {
            if self.new_tasks >= self.tasks {
                return Handout::Finished;
            }
            self.new_tasks += 1;
            return Handout::Task(self.produce(oper));
        };
        if steps.to_hand == 0 && steps.outstanding == 0 {
            if steps.completed >= steps.total {
                return Handout::Finished;
            }
            // The next iteration, divided for the workers active now.
            steps.to_hand = steps.workers;
            steps.outstanding = steps.workers;
        }
        if steps.to_hand == 0 {
            // The barrier: the rest of this iteration is out.
            return Handout::Withheld;
        }
        steps.to_hand -= 1;
        let share = steps.work * oper / steps.workers as f64;
        Handout::Task(self.produce(share))
    }

    fn gather(&mut self, id: TaskId, result: SimResult) {
        self.gather_joined(&[id], result);
    }

    fn gather_joined(&mut self, ids: &[TaskId], result: SimResult) {
        // At the main master a task's id is its number: the source hands them out in order.
        self.mismatched |= match (ids, result.0.as_slice()) {
            ([id], [k]) => id != k,
            _ => {
                let mut got = result.0.clone();
                got.sort_unstable();
                let mut expected = ids.to_vec();
                expected.sort_unstable();
                got != expected
            }
        };
        let gathered = result.0.len();
        for k in result.0 {
            if let Some(n) = self.seen.get_mut(k as usize) {
                *n += 1;
            } else {
                self.mismatched = true;
            }
        }
        if let Some(steps) = &mut self.steps {
            steps.outstanding = steps.outstanding.saturating_sub(gathered);
            if steps.outstanding == 0 && steps.to_hand == 0 {
                steps.completed += 1;
            }
        }
    }

    fn redivide(&mut self, _id: TaskId, task: &SimTask) -> Option<Vec<SimTask>> {
        if self.redivide_into == 0 || self.steps.is_some() {
            return None;
        }
        let replaced = &mut self.replaced[task.k as usize];
        if !std::mem::replace(replaced, true) {
            self.redivided += 1;
        }
        let share = task.operations / f64::from(self.redivide_into);
        Some(
            (0..self.redivide_into)
                .map(|_| self.number(share))
                .collect(),
        )
    }

    /// The tasks to gather: the new ones, less those that gave way to others, plus theirs.
    fn task_count(&self) -> Option<u64> {
        let parts = self.produced - self.new_tasks;
        self.steps
            .is_none()
            .then(|| self.tasks + parts - self.redivided())
    }

    fn iterations_completed(&self) -> Option<u64> {
        self.steps.as_ref().map(|s| s.completed)
    }

    fn set_active_workers(&mut self, workers: usize) {
        if let Some(steps) = &mut self.steps {
            steps.workers = workers.max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_operations_have_the_mean_and_spread_asked_for() {
        let mut problem = SimProblem::new(50_000, TaskCost { oper: 2.0, cv: 0.5 }, 3);
        let ops: Vec<f64> = std::iter::from_fn(|| problem.next_task())
            .map(|t| t.operations)
            .collect();
        let n = ops.len() as f64;
        let mean = ops.iter().sum::<f64>() / n;
        let sd = (ops.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((mean - 2.0).abs() < 0.03, "{mean}");
        assert!((sd / mean - 0.5).abs() < 0.03, "{}", sd / mean);
        let mut fixed = SimProblem::new(3, TaskCost::fixed(4.0), 3);
        assert_eq!(fixed.next_task().unwrap().operations, 4.0);
    }

    /// A task taken back and divided in three leaves the count of tasks to gather two higher,
    /// once, however often it is offered again.
    #[test]
    fn the_task_count_follows_the_tasks_divided() {
        let mut p = SimProblem::new(10, TaskCost::fixed(3.0), 1).redividing(3);
        assert_eq!(p.task_count(), Some(10));
        let first = p.next_task().unwrap();
        let parts = p.redivide(first.k, &first).unwrap();
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|t| t.operations == 1.0));
        assert_eq!((p.redivided(), p.task_count()), (1, Some(12)));
        let part = &parts[0];
        p.redivide(part.k, part).unwrap();
        assert_eq!((p.redivided(), p.task_count()), (2, Some(14)));
    }

    /// Two iterations of the work of 8 tasks of 2 operations: the first divided for 4
    /// workers, the barrier withholds the second until every result is in, which is divided
    /// for the 2 workers set meanwhile; then it is finished, every task gathered once.
    #[test]
    fn iterations_divide_among_the_active_workers_behind_a_barrier() {
        let mut p = SimProblem::iterative(2, 8.0, TaskCost::fixed(2.0), 1);
        assert_eq!(p.iterations_completed(), Some(0));
        assert_eq!(p.task_count(), None);
        p.set_active_workers(4);
        let first: Vec<SimTask> = (0..4).map(|_| p.next_task().unwrap()).collect();
        assert!(first.iter().all(|t| t.operations == 4.0));
        assert!(matches!(
            p.next_task_for(Recipient::Worker),
            Handout::Withheld
        ));
        p.set_active_workers(2);
        for t in &first[..3] {
            p.gather(t.k, SimResult(vec![t.k]));
        }
        assert!(matches!(
            p.next_task_for(Recipient::Worker),
            Handout::Withheld
        ));
        p.gather(first[3].k, SimResult(vec![first[3].k]));
        assert_eq!(p.iterations_completed(), Some(1));
        let second: Vec<SimTask> = (0..2).map(|_| p.next_task().unwrap()).collect();
        assert!(second.iter().all(|t| t.operations == 8.0));
        p.gather_joined(
            &[second[0].k, second[1].k],
            SimResult(vec![second[0].k, second[1].k]),
        );
        assert_eq!(p.iterations_completed(), Some(2));
        assert!(matches!(
            p.next_task_for(Recipient::Worker),
            Handout::Finished
        ));
        assert!(p.each_gathered_once());
    }
}
