//! The LAN runs: the synthetic application with the plan's message sizes and no computation,
//! with 1, half and all of a cluster's workers, each run long enough.

use anyhow::{bail, Context as _, Result};
use hmw_core::stats::{ResultGaps, RunStats};
use hmw_model::{
    params::{ApplicationParams, MeasuredLanRuns},
    plan::Plan,
};
use indicatif::ProgressBar;

use super::args::CalibrateArgs;

/// The LAN runs with one worker count: bytes per second of each run.
pub(super) struct LanRuns {
    pub(super) workers: usize,
    pub(super) tasks_per_run: u64,
    pub(super) values: Vec<f64>,
    /// Runs too short to count (the first of a cluster sizes the others).
    pub(super) discarded: u32,
    /// The gaps between results at the master over the runs counted.
    pub(super) gaps: ResultGaps,
}

impl LanRuns {
    /// The runs as the system file records them.
    pub(super) fn summary(&self) -> MeasuredLanRuns {
        MeasuredLanRuns {
            workers: self.workers,
            runs: self.values.len(),
            tasks_per_run: self.tasks_per_run,
            mean: self.mean(),
            std_dev: self.std_dev(),
            min: self.min(),
            max: self.max(),
        }
    }

    /// `scv_lan` (175): the squared coefficient of variation of the gaps between results at
    /// the master. Its workers reply at once, so the LAN is busy throughout and a gap is the
    /// time it took to move one task and one result; `None` when the master set the pace
    /// ([`LanRuns::master_paced`]) or too few gaps were counted.
    pub(super) fn service_scv(&self, master_cpu_per_task_s: Option<f64>) -> Option<f64> {
        if self.master_paced(master_cpu_per_task_s).is_some() {
            return None;
        }
        self.gaps.scv()
    }

    /// The mean gap between results and the master's CPU per task (125) when that is at least
    /// half the gap: then the master, not the LAN, set the pace of these runs (it was busy
    /// half of each gap or more), and the gaps' spread is its own and the system's, not the
    /// LAN's (a LAN of 1 GB/s moves a task of 50 KB in 50 us, about what the master spends
    /// on it). `None` when the LAN set the pace, or no gap or master's CPU was measured.
    pub(super) fn master_paced(&self, master_cpu_per_task_s: Option<f64>) -> Option<(f64, f64)> {
        let master_s = master_cpu_per_task_s?;
        if self.gaps.count == 0 {
            return None;
        }
        let gap_s = self.gaps.sum_s / self.gaps.count as f64;
        (master_s >= gap_s / 2.0).then_some((gap_s, master_s))
    }

    pub(super) fn mean(&self) -> f64 {
        self.values.iter().sum::<f64>() / self.values.len().max(1) as f64
    }
    /// Sample standard deviation (0 with one run).
    pub(super) fn std_dev(&self) -> f64 {
        let n = self.values.len();
        if n < 2 {
            return 0.0;
        }
        let mean = self.mean();
        (self.values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
    pub(super) fn min(&self) -> f64 {
        self.values.iter().copied().fold(f64::INFINITY, f64::min)
    }
    pub(super) fn max(&self) -> f64 {
        self.values.iter().copied().fold(0.0, f64::max)
    }
}

/// Worker counts the LAN is measured with: 1, half (rounded up) and all, without repeats;
/// none for a cluster without workers (one that only relays to clusters further down).
pub(super) fn lan_worker_counts(workers: usize) -> Vec<usize> {
    if workers == 0 {
        return Vec::new();
    }
    let mut counts = vec![1, workers.div_ceil(2), workers];
    counts.dedup();
    counts
}

/// What the LAN measurements of every cluster share.
pub(super) struct LanCalibration<'a> {
    pub(super) args: &'a CalibrateArgs,
    pub(super) plan: &'a Plan,
    pub(super) bar: &'a ProgressBar,
    /// Tasks per second of the last run with one, half and all of a cluster's workers: what
    /// sizes the next such run (on this machine every cluster's; on real hosts the cluster's).
    pub(super) rates: [Option<f64>; 3],
}

/// The synthetic application of a LAN run: `tasks` tasks of the plan's sizes, no computation.
pub(super) fn lan_application(app: &ApplicationParams, tasks: u64) -> String {
    format!(
        "tasks = {tasks}\ntask_seconds = 0.0\ntask_bytes = {}\nresult_bytes = {}\n",
        app.task_bytes as u64, app.result_bytes as u64
    )
}

/// The most tasks of a LAN run.
pub(super) const LAN_TASKS_MAX: u64 = 10_000_000;

impl LanCalibration<'_> {
    /// The LAN of cluster `name`, of `workers` workers, with 1, half and all of them:
    /// `run(count, tasks)` runs `tasks` tasks of [`lan_application`] with the first `count`.
    pub(super) fn measure(
        &mut self,
        name: &str,
        workers: usize,
        mut run: impl FnMut(usize, u64) -> Result<RunStats>,
    ) -> Result<Vec<LanRuns>> {
        let args = self.args;
        let app = &self.plan.application;
        let bytes_per_task = app.task_bytes + app.result_bytes;
        let mut all = Vec::new();
        if args.lan_runs == 0 {
            return Ok(all);
        }
        // The rate with the previous worker count: it sizes the first run with the next one
        // (scaled by the count) when no run of that kind has been seen yet.
        let mut previous: Option<(usize, f64)> = None;
        for (index, count) in lan_worker_counts(workers).into_iter().enumerate() {
            // Which of one, half and all (a cluster of two has no separate half).
            let kind = if count == workers { 2 } else { index.min(1) };
            let mut runs = LanRuns {
                workers: count,
                tasks_per_run: 0,
                values: Vec::new(),
                discarded: 0,
                gaps: ResultGaps::default(),
            };
            while runs.values.len() < args.lan_runs as usize {
                self.bar.set_message(format!(
                    "{name}: LAN with {count} worker{}, run {} of {}",
                    if count == 1 { "" } else { "s" },
                    runs.values.len() + 1,
                    args.lan_runs
                ));
                // Long enough at the last rate seen, with a margin.
                let rate =
                    self.rates[kind].or_else(|| previous.map(|(c, r)| r * count as f64 / c as f64));
                let tasks = rate
                    .map_or(args.lan_tasks, |r| {
                        (r * args.lan_seconds.as_secs_f64() * 1.25).ceil() as u64
                    })
                    .clamp(args.lan_tasks, LAN_TASKS_MAX);
                let stats = run(count, tasks)
                    .with_context(|| format!("LAN of cluster {name} with {count} workers"))?;
                if stats.wall_s <= 0.0 {
                    bail!("LAN of cluster {name} with {count} workers: a run of no duration");
                }
                self.rates[kind] = Some(tasks as f64 / stats.wall_s);
                previous = Some((count, tasks as f64 / stats.wall_s));
                if stats.wall_s < args.lan_seconds.as_secs_f64() && tasks < LAN_TASKS_MAX {
                    // Too short to count (the very first, at the fewest tasks, is a warm-up
                    // that sizes the next): again, longer, at most a few times.
                    runs.discarded += 1;
                    if runs.discarded > 5 {
                        bail!(
                            "LAN of cluster {name} with {count} workers: runs stay under {} s",
                            args.lan_seconds.as_secs_f64()
                        );
                    }
                    continue;
                }
                runs.tasks_per_run = runs.tasks_per_run.max(tasks);
                if let Some(gaps) = &stats.result_gaps {
                    runs.gaps.merge(gaps);
                }
                runs.values
                    .push(tasks as f64 * bytes_per_task / stats.wall_s);
                self.bar.inc(1);
            }
            all.push(runs);
        }
        Ok(all)
    }
}
