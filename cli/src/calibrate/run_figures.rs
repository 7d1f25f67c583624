//! What the workers' run tells beyond each worker: the master's CPU per task (125) and the
//! spread of a task's time (129) (`docs/model.md` section 16).

use std::fmt::Write as _;

use hmw_core::stats::{sample_scv, RunStats, WorkerStats};

/// `c_m` (125): the seconds of its thread's CPU the run's master spent handling messages
/// (`[run] master_cpu`), over the tasks it gathered; `None` when it did not count them.
pub(super) fn master_cpu_per_task_s(stats: &RunStats) -> Option<f64> {
    let cpu_s = stats.master_cpu_s?;
    (stats.tasks > 0 && cpu_s > 0.0).then(|| cpu_s / stats.tasks as f64)
}

/// A worker's squared coefficient of variation of its tasks' busy seconds, from their sum
/// and the sum of their squares, and the tasks it covers; `None` with fewer than two tasks or
/// no squares counted.
fn squared_variation(worker: &WorkerStats) -> Option<(f64, f64)> {
    if worker.busy_sq_s <= 0.0 {
        return None;
    }
    let scv = sample_scv(worker.tasks_computed, worker.busy_s, worker.busy_sq_s)?;
    Some((scv, worker.tasks_computed as f64))
}

/// `oper_cv` (129): the coefficient of variation of a task's time on a worker, each worker's
/// relative to its own mean (workers of different speeds are not spread), pooled over the
/// workers by their tasks. A worker executing each task `R` times (`--repeats`) returns the
/// time of the `R` executions of the same task: the spread between tasks is the same. `None`
/// when no worker computed two tasks.
pub(super) fn task_time_cv<'a>(workers: impl IntoIterator<Item = &'a WorkerStats>) -> Option<f64> {
    let (sum, count) = workers
        .into_iter()
        .filter_map(squared_variation)
        .fold((0.0, 0.0), |(sum, count), (scv, n)| {
            (sum + scv * n, count + n)
        });
    (count > 0.0).then(|| (sum / count).sqrt())
}

/// The lines the calibration prints for them.
pub(super) fn run_lines(master_cpu_s: Option<f64>, oper_cv: Option<f64>) -> String {
    let mut out = String::new();
    if let Some(c) = master_cpu_s {
        let _ = writeln!(
            out,
            "master: {:.1} us of CPU per task (master_cpu_per_task_s, (125))",
            c * 1e6
        );
    }
    if let Some(cv) = oper_cv {
        let _ = writeln!(
            out,
            "task times: coefficient of variation {cv:.3} (oper_cv, (129))"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_master_cpu_is_per_task_gathered() {
        let stats = RunStats {
            tasks: 400,
            master_cpu_s: Some(0.02),
            ..RunStats::default()
        };
        assert_eq!(master_cpu_per_task_s(&stats), Some(5e-5));
        assert_eq!(master_cpu_per_task_s(&RunStats::default()), None);
    }

    #[test]
    fn task_times_pool_each_workers_spread_around_its_own_mean() {
        // a worker of tasks 1 s and 3 s (mean 2, sample standard deviation sqrt(2)), and one
        // twice as fast with the same spread relative to its mean: cv = sqrt(2)/2 for both
        let worker = |busy_s: f64, busy_sq_s: f64| WorkerStats {
            tasks_computed: 2,
            busy_s,
            busy_sq_s,
            ..WorkerStats::default()
        };
        let cv = task_time_cv(&[worker(4.0, 10.0), worker(2.0, 2.5)]).unwrap();
        assert!((cv - 2f64.sqrt() / 2.0).abs() < 1e-12, "{cv}");
        // constant tasks: 0; nothing counted: none
        assert_eq!(task_time_cv(&[worker(4.0, 8.0)]), Some(0.0));
        assert_eq!(task_time_cv(&[worker(4.0, 0.0)]), None);
    }
}
