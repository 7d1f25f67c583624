//! The synthetic application: tasks that take a configured time and carry configured sizes.
//!
//! It is what validates the model: its performance and message sizes are known exactly.
//! A worker's `speed=` machine-file annotation divides its compute time, emulating a
//! heterogeneous cluster.

use std::time::{Duration, Instant};

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    /// Number of tasks.
    tasks: u64,
    /// Compute time of one task on a worker of speed 1, in seconds.
    task_seconds: f64,
    /// Spin the CPU instead of sleeping (sleeping keeps timing exact on an oversubscribed host).
    busy: bool,
    /// Serialised size of a task's payload and of a result's payload, in bytes.
    task_bytes: usize,
    result_bytes: usize,
    /// Basic operations of a task (the model's `oper`).
    oper: f64,
    /// The task of this index panics when executed: to try how a run handles a failure.
    fail_at: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tasks: 100,
            task_seconds: 0.01,
            busy: false,
            task_bytes: 64,
            result_bytes: 64,
            oper: 1.0,
            fail_at: None,
        }
    }
}

/// Bounds that keep a run within this machine's memory and a human's patience.
const MAX_TASKS: u64 = 100_000_000;
const MAX_BYTES: usize = 1 << 30;
const MAX_SECONDS: f64 = 86_400.0;

impl Settings {
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.tasks <= MAX_TASKS,
            "[application] tasks = {} exceeds {MAX_TASKS}",
            self.tasks
        );
        anyhow::ensure!(
            self.task_seconds.is_finite() && (0.0..=MAX_SECONDS).contains(&self.task_seconds),
            "[application] task_seconds = {} must be between 0 and {MAX_SECONDS}",
            self.task_seconds
        );
        anyhow::ensure!(
            self.oper.is_finite() && self.oper > 0.0,
            "[application] oper = {} must be a positive number",
            self.oper
        );
        for (key, bytes) in [
            ("task_bytes", self.task_bytes),
            ("result_bytes", self.result_bytes),
        ] {
            anyhow::ensure!(
                bytes <= MAX_BYTES,
                "[application] {key} = {bytes} exceeds {MAX_BYTES} bytes"
            );
        }
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
struct Work {
    seconds: f64,
    busy: bool,
    oper: f64,
    result_bytes: usize,
    /// Panic instead of working (`fail_at`).
    fail: bool,
    #[serde(with = "serde_bytes")]
    payload: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Done {
    /// How many tasks this result stands for (joined results add up).
    count: u64,
    #[serde(with = "serde_bytes")]
    payload: Vec<u8>,
}

impl Task for Work {
    type Output = Done;

    fn execute(self, worker: &WorkerContext) -> Done {
        assert!(!self.fail, "this task was configured to fail (fail_at)");
        let time = Duration::from_secs_f64(self.seconds / worker.speed());
        if self.busy {
            let start = Instant::now();
            while start.elapsed() < time {
                std::hint::spin_loop();
            }
        } else {
            std::thread::sleep(time);
        }
        Done {
            count: 1,
            payload: vec![0xA5; self.result_bytes],
        }
    }

    fn operations(&self) -> f64 {
        self.oper
    }
}

impl TaskResult for Done {
    /// Joined results stand for several tasks but keep one result's size, like a reduction.
    fn join(&mut self, other: Done) -> Result<(), Done> {
        self.count += other.count;
        Ok(())
    }
}

struct Synthetic {
    settings: Settings,
    produced: u64,
    gathered: Vec<bool>,
}

impl Problem for Synthetic {
    type Task = Work;

    fn next_task(&mut self) -> Option<Work> {
        (self.produced < self.settings.tasks).then(|| {
            self.produced += 1;
            Work {
                fail: self.settings.fail_at == Some(self.produced - 1),
                seconds: self.settings.task_seconds,
                busy: self.settings.busy,
                oper: self.settings.oper,
                result_bytes: self.settings.result_bytes,
                payload: vec![0x5A; self.settings.task_bytes],
            }
        })
    }

    fn gather(&mut self, id: TaskId, result: Done) {
        assert_eq!(result.payload.len(), self.settings.result_bytes);
        self.gathered[id as usize] = true;
    }

    fn gather_joined(&mut self, ids: &[TaskId], result: Done) {
        assert_eq!(result.count, ids.len() as u64);
        for &id in ids {
            self.gathered[id as usize] = true;
        }
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.settings.tasks)
    }
}

fn main() -> std::process::ExitCode {
    hmw::run(
        |settings: &Settings| {
            settings.check()?;
            Ok(Synthetic {
                gathered: vec![false; settings.tasks as usize],
                settings: settings.clone(),
                produced: 0,
            })
        },
        |synthetic, stats| {
            let verified = synthetic.gathered.iter().all(|&g| g);
            println!(
                "synthetic tasks={} verified={verified} makespan_s={:.3}",
                synthetic.settings.tasks, stats.wall_s
            );
            anyhow::ensure!(verified, "some task results were never gathered");
            Ok(())
        },
    )
}
