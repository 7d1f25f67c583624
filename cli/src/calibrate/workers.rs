//! The workers' runs: how many tasks make them long enough, and each worker's figures and row
//! from their statistics.

use std::{cell::Cell, fmt::Write as _};

use anyhow::{Context as _, Result};
use hmw_core::{machinefile::MachineFile, stats::RunStats};
use hmw_model::params::MeasuredWorker;
use tracing::debug;

use super::{args::CalibrateArgs, tables::worker_row, worker_figures::worker_figures};

/// The size of the workers' run: `--tasks` per worker, more once a run was too short.
pub(super) struct WorkerRuns {
    pub(super) tasks_per_worker: Cell<u64>,
    seconds: f64,
}

impl WorkerRuns {
    /// Runs again with more tasks at most this many times.
    pub(super) const RETRIES: u32 = 4;

    pub(super) fn new(args: &CalibrateArgs) -> Self {
        WorkerRuns {
            tasks_per_worker: Cell::new(args.tasks),
            seconds: args.worker_seconds.as_secs_f64(),
        }
    }

    /// `run(tasks per worker)`, again with more tasks while `busy` of its result (the
    /// shortest busy time of its workers) is under `--worker-seconds`: sized from the
    /// shortest run's rate with a margin of a quarter, the size kept for the next call.
    pub(super) fn long_enough<T>(
        &self,
        run: impl Fn(u64) -> Result<T>,
        busy: impl Fn(&T) -> f64,
    ) -> Result<T> {
        let mut retries = 0;
        loop {
            let tasks = self.tasks_per_worker.get();
            let result = run(tasks)?;
            let busy_s = busy(&result);
            if busy_s >= self.seconds || retries == Self::RETRIES {
                return Ok(result);
            }
            retries += 1;
            let scale = (1.25 * self.seconds / busy_s.max(1e-3)).min(50.0);
            self.tasks_per_worker
                .set(((tasks as f64 * scale).ceil() as u64).max(tasks + 1));
            debug!(
                tasks,
                busy_s,
                next = self.tasks_per_worker.get(),
                "workers' run too short"
            );
        }
    }
}

/// The shortest busy time of the workers of these runs (0 without any).
pub(super) fn shortest_busy_s<'a>(runs: impl IntoIterator<Item = &'a RunStats>) -> f64 {
    runs.into_iter()
        .flat_map(|stats| stats.workers.iter().map(|w| w.busy_s))
        .reduce(f64::min)
        .unwrap_or(0.0)
}

/// A workers' run: its statistics, how many times each task was executed, and the bytes of
/// one task and its result.
pub(super) struct WorkersRun<'a> {
    pub(super) stats: &'a RunStats,
    pub(super) repeats: u32,
    pub(super) comm_bytes: f64,
    /// Whether `perf` and `tput_own` are taken at the worker's capacity (106).
    pub(super) capacity: bool,
}

/// The perf and `tput_own` (100) of each worker of `ranks` (machine-file lines of cluster
/// `name`) from a workers' run in which the k-th of them was rank `first + k`, its row added
/// to `table`.
pub(super) fn measured_workers_of(
    name: &str,
    machines: &MachineFile,
    ranks: &[usize],
    first: usize,
    run: &WorkersRun,
    table: &mut String,
) -> Result<Vec<MeasuredWorker>> {
    let WorkersRun {
        stats,
        repeats,
        comm_bytes,
        capacity,
    } = *run;
    let join_s = stats.join_s / stats.tasks.max(1) as f64;
    // A run whose master split its tasks as the cluster's sub-master does: each worker
    // computed and moved parts, `comm_bytes / parts` of the plan's bytes each on average, and
    // its own time on the messages of a task of the plan is that of its parts.
    let comm_bytes = match stats.parts_per_task {
        Some(parts) if parts != 1.0 => {
            let _ = writeln!(
                table,
                "{name:<12} (tasks split as its sub-master splits them, {parts:.1} parts a \
                 task: the figures below are per part)"
            );
            comm_bytes / parts
        }
        _ => comm_bytes,
    };
    ranks
        .iter()
        .enumerate()
        .map(|(k, &line)| {
            let host = &machines.ranks[line].host;
            let worker = stats
                .workers
                .iter()
                .find(|w| w.rank == first + k)
                .with_context(|| {
                    format!(
                        "cluster {name}: worker {host} (rank {} of the calibration run) \
                         computed nothing",
                        first + k
                    )
                })?;
            let figures = worker_figures(worker, comm_bytes, repeats, capacity);
            table.push_str(&worker_row(
                name,
                host,
                worker,
                (repeats, comm_bytes),
                join_s,
                &figures,
            ));
            Ok(MeasuredWorker {
                host: host.clone(),
                perf: figures.perf,
                own_comm_bytes_per_s: figures.own.map(|own| own.bytes_per_s),
                cores: figures.own.map(|own| own.capacity),
                stage_s: None,
                chain_cv: None,
            })
        })
        .collect()
}
