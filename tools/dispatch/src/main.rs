//! The dispatch benchmark application: tiny tasks (64-byte task and result, no compute), so
//! the run measures the framework's per-task overhead alone.

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use hmw_core::cpu_clock::process_cpu_s;
use serde::{Deserialize, Serialize};
use serde_bytes::ByteArray;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    tasks: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { tasks: 20_000 }
    }
}

/// A task, and its result: 64 bytes, held in place as a C program holds a fixed-size buffer,
/// so that the allocations in a run are the framework's own.
#[derive(Serialize, Deserialize)]
struct Tiny(ByteArray<64>);

impl Task for Tiny {
    type Output = Tiny;

    fn execute(self, _worker: &WorkerContext) -> Tiny {
        self
    }
}

impl TaskResult for Tiny {
    fn join(&mut self, _other: Tiny) -> Result<(), Tiny> {
        Ok(())
    }
}

struct Dispatch {
    tasks: u64,
    produced: u64,
    gathered: u64,
    /// The master process's CPU time when the first task was made, and when the last result
    /// was gathered: the same span as the run's wall time (from the start to the last result),
    /// without the stopping of the workers after it, whose cost grows with their number.
    cpu_at_start: Option<f64>,
    cpu_at_end: Option<f64>,
}

impl Problem for Dispatch {
    type Task = Tiny;

    fn next_task(&mut self) -> Option<Tiny> {
        self.cpu_at_start.get_or_insert_with(process_cpu_s);
        (self.produced < self.tasks).then(|| {
            self.produced += 1;
            Tiny(ByteArray::new([7; 64]))
        })
    }

    fn gather(&mut self, _id: TaskId, _result: Tiny) {
        self.gathered += 1;
        if self.gathered == self.tasks {
            self.cpu_at_end = Some(process_cpu_s());
        }
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }
}

fn main() -> std::process::ExitCode {
    hmw::run(
        |s: &Settings| {
            Ok(Dispatch {
                tasks: s.tasks,
                produced: 0,
                gathered: 0,
                cpu_at_start: None,
                cpu_at_end: None,
            })
        },
        |dispatch, stats| {
            let tasks = dispatch.gathered as f64;
            let master_cpu_s = dispatch.cpu_at_end.unwrap_or_else(process_cpu_s)
                - dispatch.cpu_at_start.unwrap_or(0.0);
            println!(
                "dispatch tasks={} wall_s={:.6} tasks_per_s={:.1} overhead_us={:.2} \
                 master_cpu_us_per_task={:.3}",
                dispatch.gathered,
                stats.wall_s,
                tasks / stats.wall_s,
                1e6 * stats.wall_s / tasks,
                1e6 * master_cpu_s / tasks
            );
            Ok(())
        },
    )
}
