//! The synthetic application: tasks that take a configured time and carry configured sizes.
//!
//! It is what validates the model: its performance and message sizes are known exactly.
//! A worker's `speed=` machine-file annotation divides its compute time, emulating a
//! heterogeneous cluster.
//!
//! `[application] work` says what a task does for its time:
//! - `"sleep"` (the default): sleeps `task_seconds / speed` (exact on an oversubscribed host);
//! - `"compute"`: computes rounds of a small floating-point kernel. A worker's first tasks run
//!   the kernel until their thread has used `task_seconds / speed` of CPU time, and count the
//!   rounds: once 0.2 s of CPU is counted so (CPU time, so a CPU quota does not bias it), a task
//!   is `task_seconds x rounds_per_s / speed` rounds. Measuring costs no extra work: every task
//!   is its time of CPU from the first on (`hmw calibrate` counts every task). On an
//!   unthrottled core it takes `task_seconds / speed`; on the testbed, where a host's cgroup
//!   quota is its speed, `speed` stays 1 and the quota makes it slower.

use std::time::{Duration, Instant};

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use hmw_core::cpu_clock::thread_cpu_s;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    /// Number of tasks.
    tasks: u64,
    /// Compute time of one task on a worker of speed 1, in seconds: the mean, with `task_cv`.
    task_seconds: f64,
    /// Coefficient of variation of a task's time: each task takes `task_seconds` times a
    /// log-normal draw of mean 1 and this spread (as `hmw simulate` draws a task's operations
    /// for `[application] oper_cv`), the same for a task's index in every run; 0 (the default):
    /// every task alike.
    task_cv: f64,
    /// Spin the CPU instead of sleeping (sleeping keeps timing exact on an oversubscribed host).
    busy: bool,
    /// What a task does: sleep, or compute a calibrated amount of work.
    work: WorkKind,
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
            task_cv: 0.0,
            busy: false,
            work: WorkKind::Sleep,
            task_bytes: 64,
            result_bytes: 64,
            oper: 1.0,
            fail_at: None,
        }
    }
}

/// `[application] work`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WorkKind {
    /// Sleep for the task's time.
    Sleep,
    /// Compute for the task's time on an unthrottled core.
    Compute,
}

/// One round of the compute kernel: a chain of dependent floating-point operations.
fn kernel(mut v: f64, rounds: u64) -> f64 {
    for _ in 0..rounds {
        v = v * 1.000_000_1 + 0.000_000_3;
        v = std::hint::black_box(v);
    }
    v
}

/// Kernel rounds between two reads of the CPU clock while the rate is counted: about 0.1 ms
/// here, so that the reads (a system call each) weigh 0.3 % of the count. With 5,000 rounds
/// they weighed 3 %, the rate counted was that much low, and a task computed at it took 0.0437 s
/// of CPU for 0.045: a quota's host then read 3 % fast.
const ROUNDS_PER_READ: u64 = 40_000;

/// CPU time over which the kernel's rate is counted before it is fixed, seconds.
const RATE_CPU_S: f64 = 0.2;

/// Kernel rounds per second of CPU time on this machine's core: counted over the first tasks,
/// fixed once they used [`RATE_CPU_S`] of CPU (per process).
static RATE: std::sync::Mutex<(u64, f64, Option<f64>)> = std::sync::Mutex::new((0, 0.0, None));

/// Compute `cpu_s` seconds of work: by rounds at the fixed rate, or, until it is fixed, by CPU
/// time, the rounds done counting towards it.
fn compute(cpu_s: f64) {
    let fixed = RATE.lock().map_or(None, |r| r.2);
    if let Some(rate) = fixed {
        std::hint::black_box(kernel(1.0, (cpu_s * rate).round() as u64));
        return;
    }
    let start = thread_cpu_s();
    let mut rounds = 0u64;
    let mut v = 1.0;
    while thread_cpu_s() - start < cpu_s {
        v = kernel(v, ROUNDS_PER_READ);
        rounds += ROUNDS_PER_READ;
    }
    std::hint::black_box(v);
    let used = thread_cpu_s() - start;
    if let Ok(mut rate) = RATE.lock() {
        if rate.2.is_none() {
            rate.0 += rounds;
            rate.1 += used;
            if rate.1 >= RATE_CPU_S {
                rate.2 = Some(rate.0 as f64 / rate.1);
            }
        }
    }
}

/// Bounds that keep a run within this machine's memory and a human's patience.
const MAX_TASKS: u64 = 100_000_000;
const MAX_BYTES: usize = 1 << 30;
const MAX_SECONDS: f64 = 86_400.0;
const MAX_CV: f64 = 10.0;

/// SplitMix64's mix of `x`: 64 bits that look random, the same for the same `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Task `index`'s time over the mean: a log-normal draw of mean 1 and coefficient of
/// variation `cv` (`sigma^2 = ln(1 + cv^2)`, `exp(sigma z - sigma^2/2)`, `z` a standard
/// normal by Box-Muller from two uniforms hashed from the index).
fn time_factor(index: u64, cv: f64) -> f64 {
    if cv <= 0.0 {
        return 1.0;
    }
    let unit = |k: u64| {
        ((mix(index.wrapping_mul(2).wrapping_add(k)) >> 11) + 1) as f64 / (1u64 << 53) as f64
    };
    let z = (-2.0 * unit(0).ln()).sqrt() * (std::f64::consts::TAU * unit(1)).cos();
    let sigma2 = (1.0 + cv * cv).ln();
    (sigma2.sqrt() * z - sigma2 / 2.0).exp()
}

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
            self.task_cv.is_finite() && (0.0..=MAX_CV).contains(&self.task_cv),
            "[application] task_cv = {} must be between 0 and {MAX_CV}",
            self.task_cv
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
    compute: bool,
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
        if self.compute {
            compute(self.seconds / worker.speed());
        } else if self.busy {
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

    fn waits(&self) -> bool {
        !self.compute && !self.busy
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
    /// Gathers of each task: its check counts them rather than marking them, so a task
    /// gathered twice (a resumed run replaying what it also ran again) shows.
    gathers: Vec<u32>,
    /// The sum of the ids gathered and the tasks the results say they stand for, counted
    /// apart from `gathers`.
    id_sum: u64,
    counted: u64,
    /// The sum of the time factors of the tasks handed out.
    time_factors: f64,
}

impl Synthetic {
    fn new(settings: &Settings) -> Self {
        Synthetic {
            gathers: vec![0; settings.tasks as usize],
            settings: settings.clone(),
            produced: 0,
            id_sum: 0,
            counted: 0,
            time_factors: 0.0,
        }
    }

    /// The mean time factor of the tasks handed out: their work over as many tasks of
    /// `task_seconds`. With `task_cv > 0` a run's tasks take on average this much more (or
    /// less) than `task_seconds`: a few percent for a few hundred tasks of `task_cv = 1`.
    fn mean_time_factor(&self) -> f64 {
        if self.produced == 0 {
            return 1.0;
        }
        self.time_factors / self.produced as f64
    }

    /// Tasks never gathered, and tasks gathered more than once.
    fn missing_and_duplicates(&self) -> (u64, u64) {
        let missing = self.gathers.iter().filter(|&&g| g == 0).count() as u64;
        let duplicates = self
            .gathers
            .iter()
            .map(|&g| u64::from(g.saturating_sub(1)))
            .sum();
        (missing, duplicates)
    }
}

impl Problem for Synthetic {
    type Task = Work;

    fn next_task(&mut self) -> Option<Work> {
        (self.produced < self.settings.tasks).then(|| {
            self.produced += 1;
            let factor = time_factor(self.produced - 1, self.settings.task_cv);
            self.time_factors += factor;
            Work {
                fail: self.settings.fail_at == Some(self.produced - 1),
                seconds: self.settings.task_seconds * factor,
                busy: self.settings.busy,
                compute: self.settings.work == WorkKind::Compute,
                oper: self.settings.oper,
                result_bytes: self.settings.result_bytes,
                payload: vec![0x5A; self.settings.task_bytes],
            }
        })
    }

    fn gather(&mut self, id: TaskId, result: Done) {
        self.gather_joined(&[id], result);
    }

    fn gather_joined(&mut self, ids: &[TaskId], result: Done) {
        assert_eq!(result.payload.len(), self.settings.result_bytes);
        assert_eq!(result.count, ids.len() as u64);
        for &id in ids {
            self.gathers[id as usize] += 1;
            self.id_sum += id;
        }
        self.counted += result.count;
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.settings.tasks)
    }
}

fn main() -> std::process::ExitCode {
    hmw::run(
        |settings: &Settings| {
            settings.check()?;
            Ok(Synthetic::new(settings))
        },
        |synthetic, stats| {
            let n = synthetic.settings.tasks;
            let (missing, duplicates) = synthetic.missing_and_duplicates();
            let sums = synthetic.id_sum == n * n.saturating_sub(1) / 2 && synthetic.counted == n;
            let verified = missing == 0 && duplicates == 0 && sums;
            let resumed = stats.journal.as_ref().map_or(0, |j| j.resumed_tasks);
            println!(
                "synthetic tasks={n} verified={verified} missing={missing} \
                 duplicates={duplicates} resumed={resumed} makespan_s={:.3} \
                 mean_time_factor={:.6}",
                stats.wall_s,
                synthetic.mean_time_factor()
            );
            anyhow::ensure!(
                verified,
                "{missing} tasks never gathered, {duplicates} gathered twice, the counts' sums \
                 {} and {} for {n} tasks",
                synthetic.id_sum,
                synthetic.counted
            );
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_times_have_the_mean_and_spread_asked_for() {
        let n = 200_000u64;
        for cv in [0.0, 0.5, 1.0] {
            let draws: Vec<f64> = (0..n).map(|i| time_factor(i, cv)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let sd = (draws.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64).sqrt();
            assert!((mean - 1.0).abs() < 0.01, "cv {cv}: mean {mean}");
            assert!((sd - cv).abs() < 0.03 * cv.max(0.1), "cv {cv}: sd {sd}");
        }
        assert_eq!(time_factor(7, 1.0), time_factor(7, 1.0));
        // a run's own mean over the tasks it handed out: 1 with constant times, a few percent
        // off with few variable ones
        let run = |tasks, task_cv| {
            let mut synthetic = Synthetic::new(&Settings {
                tasks,
                task_cv,
                ..Settings::default()
            });
            assert_eq!(synthetic.mean_time_factor(), 1.0);
            while synthetic.next_task().is_some() {}
            synthetic.mean_time_factor()
        };
        assert_eq!(run(300, 0.0), 1.0);
        let few = run(300, 1.0);
        let first: f64 = (0..300).map(|i| time_factor(i, 1.0)).sum::<f64>() / 300.0;
        assert!(few == first && (few - 1.0).abs() > 0.01, "{few}");
        assert!((run(200_000, 1.0) - 1.0).abs() < 0.01);
        assert!(toml::from_str::<Settings>("task_cv = -1")
            .unwrap()
            .check()
            .is_err());
    }

    #[test]
    fn work_defaults_to_sleep_and_reads_compute() {
        assert_eq!(Settings::default().work, WorkKind::Sleep);
        let s: Settings = toml::from_str("work = \"compute\"\ntask_seconds = 0.05").unwrap();
        assert_eq!(s.work, WorkKind::Compute);
        assert!(toml::from_str::<Settings>("work = \"nap\"").is_err());
    }

    #[test]
    fn compute_takes_its_time_in_cpu_while_counting_and_after() {
        // The first tasks count the rate (by CPU time), the later ones use it (by rounds):
        // each takes its time in CPU either way.
        for _ in 0..6 {
            let start = thread_cpu_s();
            compute(0.05);
            let took = thread_cpu_s() - start;
            // CPU time, so another engineer's load does not change it much; generous bounds.
            assert!(
                (0.025..0.1).contains(&took),
                "0.05 s of work took {took} s of CPU"
            );
        }
        assert!(RATE.lock().unwrap().2.is_some_and(|r| r > 0.0));
    }
}
