//! The simulated application: tasks that stand for `oper` basic operations each (drawn from
//! the plan's distribution), results that carry the numbers of the tasks they stand for, and
//! a problem that counts how often it gathers each task (exactly once, in a correct run).

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
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

/// `tasks` tasks; counts how often each is gathered.
pub struct SimProblem {
    tasks: u64,
    produced: u64,
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
            produced: 0,
            cost,
            sigma: (1.0 + cost.cv * cost.cv).ln().sqrt(),
            rng: Rng::new(seed, 1),
            seen: vec![0; tasks as usize],
            mismatched: false,
        }
    }

    /// Every task gathered exactly once, and every joined result stood for the tasks it came
    /// with.
    pub fn each_gathered_once(&self) -> bool {
        !self.mismatched && self.seen.iter().all(|&n| n == 1)
    }

    /// How often each task was gathered.
    pub fn seen(&self) -> &[u32] {
        &self.seen
    }
}

impl Problem for SimProblem {
    type Task = SimTask;

    fn next_task(&mut self) -> Option<SimTask> {
        if self.produced >= self.tasks {
            return None;
        }
        let k = self.produced;
        self.produced += 1;
        let operations = if self.sigma > 0.0 {
            let s = self.sigma;
            self.cost.oper * (s * self.rng.normal() - 0.5 * s * s).exp()
        } else {
            self.cost.oper
        };
        Some(SimTask { k, operations })
    }

    fn gather(&mut self, id: TaskId, result: SimResult) {
        self.gather_joined(&[id], result);
    }

    fn gather_joined(&mut self, ids: &[TaskId], result: SimResult) {
        // At the main master a task's id is its number: the source hands them out in order.
        let mut got = result.0.clone();
        got.sort_unstable();
        let mut expected = ids.to_vec();
        expected.sort_unstable();
        self.mismatched |= got != expected;
        for k in result.0 {
            if let Some(n) = self.seen.get_mut(k as usize) {
                *n += 1;
            } else {
                self.mismatched = true;
            }
        }
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
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
}
