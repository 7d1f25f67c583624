//! The smallest hmw application: tasks sum ranges of 1..=n; the master checks n (n + 1) / 2.
use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use serde::{Deserialize, Serialize};

/// A task, `Range(a, b)`: add up the integers `a..b`. Its result: a partial sum.
#[derive(Serialize, Deserialize)]
struct Range(u64, u64);
#[derive(Serialize, Deserialize)]
struct Sum(u64);

impl Task for Range {
    type Output = Sum;
    fn execute(self, _worker: &WorkerContext) -> Sum {
        Sum((self.0..self.1).sum())
    }
}

/// Two partial sums join into one (a sub-master joins results before they cross a WAN).
impl TaskResult for Sum {
    fn join(&mut self, other: Sum) -> Result<(), Sum> {
        self.0 += other.0;
        Ok(())
    }
}

/// The whole job, on the master, from the `[application]` table: 1..=n in `tasks` ranges.
#[derive(Clone, Default, Deserialize)]
#[serde(default)]
struct Hello {
    n: u64,
    tasks: u64,
    handed: u64,
    total: u64,
}

impl Problem for Hello {
    type Task = Range;
    fn next_task(&mut self) -> Option<Range> {
        let (n, tasks, k) = (self.n, self.tasks, self.handed);
        self.handed += 1;
        (k < tasks).then(|| Range(1 + k * n / tasks, 1 + (k + 1) * n / tasks))
    }
    fn gather(&mut self, _id: TaskId, result: Sum) {
        self.total += result.0;
    }
}

fn main() -> std::process::ExitCode {
    hmw::run(
        |settings: &Hello| Ok(settings.clone()),
        |hello, stats| {
            let (n, total, makespan_s) = (hello.n, hello.total, stats.wall_s);
            let verified = total == n * (n + 1) / 2;
            println!("hello total={total} verified={verified} makespan_s={makespan_s:.3}");
            anyhow::ensure!(verified, "the sum of 1..={n} is not {total}");
            Ok(())
        },
    )
}
