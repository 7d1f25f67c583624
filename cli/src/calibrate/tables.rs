//! The report `hmw calibrate` prints: the workers' table, each cluster's LAN runs, the WANs,
//! and how long each part took.

use std::{fmt::Write as _, time::Duration};

use hmw_core::stats::WorkerStats;
use hmw_model::params::ApplicationParams;

use super::{lan::LanRuns, worker_figures::WorkerFigures};
use crate::wan_probe::Received;

/// A worker's row of the workers' table: the `perf` the model takes; per execution of a task
/// (each task executed `repeats` times) but for writing its result and joining it; its own
/// communication of a task's `comm_bytes` (100), done once per task, and the capacity (106)
/// it is taken at.
pub(super) fn worker_row(
    cluster: &str,
    host: &str,
    worker: &WorkerStats,
    (repeats, comm_bytes): (u32, f64),
    join_s_per_task: f64,
    figures: &WorkerFigures,
) -> String {
    // Per execution: reading the task (decoding, on the worker) and working; per task:
    // writing the result (encoding), and joining it at the master (decoding and gathering).
    let tasks = worker.tasks_computed.max(1) as f64;
    let executions = tasks * f64::from(repeats);
    let (own_ms, cores) = figures.own.map_or(("-".to_owned(), "-".to_owned()), |own| {
        (
            format!("{:.3}", 1e3 * comm_bytes / own.bytes_per_s),
            format!("{:.3}", own.capacity),
        )
    });
    format!(
        "{cluster:<12} {host:<16} {:>12.4e} {:>10.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {own_ms:>9} \
         {cores:>6}\n",
        figures.perf,
        executions / worker.busy_s.max(f64::MIN_POSITIVE),
        1e3 * worker.decode_s / executions,
        1e3 * worker.busy_s / executions,
        1e3 * worker.encode_s / tasks,
        1e3 * join_s_per_task
    )
}

/// The header of the workers' table.
pub(super) fn workers_header() -> String {
    format!(
        "{:<12} {:<16} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}\n",
        "cluster",
        "worker",
        "ops/s",
        "tasks/s",
        "read ms",
        "work ms",
        "write ms",
        "join ms",
        "own ms",
        "cores"
    )
}

/// The LAN runs of one cluster as a table.
/// `master_cpu_per_task_s`: the master's CPU per task the workers' run measured (125), which
/// tells whether the LAN set the pace of these runs (175).
pub(super) fn lan_table(
    name: &str,
    app: &ApplicationParams,
    runs: &[LanRuns],
    master_cpu_per_task_s: Option<f64>,
) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        let _ = writeln!(
            out,
            "LAN of {name}: not measured (--lan-runs 0, or no workers of its own); the \
             plan's value stays"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "LAN of {name}: {} B tasks and {} B results, no computation; bytes per second \
         of tasks and results in each run",
        app.task_bytes, app.result_bytes
    );
    let _ = writeln!(
        out,
        "{:>8} {:>5} {:>10} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "workers", "runs", "tasks/run", "mean", "std dev", "min", "max", "too short"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:>8} {:>5} {:>10} {:>12.4e} {:>12.4e} {:>12.4e} {:>12.4e} {:>10}",
            r.workers,
            r.values.len(),
            r.tasks_per_run,
            r.mean(),
            r.std_dev(),
            r.min(),
            r.max(),
            r.discarded
        );
    }
    if let Some(all) = runs.last() {
        let _ = writeln!(
            out,
            "value used (lan_bytes_per_s): the mean with all {} workers, the load of a run",
            all.workers
        );
        if let Some(scv) = all.service_scv(master_cpu_per_task_s) {
            let _ = writeln!(
                out,
                "the gaps between results with all of them: squared coefficient of variation \
                 {scv:.3} (lan_scv, (175))"
            );
        } else if let Some((gap_s, master_s)) = all.master_paced(master_cpu_per_task_s) {
            let _ = writeln!(
                out,
                "lan_scv not written: the master's CPU per task ({:.1} us) is at least half the \
                 mean gap between results ({:.1} us), so the master set the pace of these runs \
                 and their spread is not the LAN's (175)",
                master_s * 1e6,
                gap_s * 1e6
            );
        }
    }
    out
}

/// The calibration's tables, and how long each part took (workers, LANs, WANs).
pub(super) fn print_tables(
    workers_table: &str,
    lan_tables: impl Iterator<Item = String>,
    wan_table: &str,
    [workers, lans, wans]: [Duration; 3],
) {
    print!("{workers_table}");
    for table in lan_tables {
        print!("{table}");
    }
    print!("{wan_table}");
    println!(
        "measured in: workers {:.0} s, LANs {:.0} s, WANs {:.0} s",
        workers.as_secs_f64(),
        lans.as_secs_f64(),
        wans.as_secs_f64()
    );
}

/// A WAN's line of the calibration's table: its goodput each way, its round trip, and what
/// each direction lost to its ramp just connected (170).
pub(super) fn wan_line(cluster: &str, tasks: &Received, results: &Received, rtt_s: f64) -> String {
    format!(
        "{cluster:<12} WAN in (tasks) {:>12.4e} B/s, out (results) {:>12.4e} B/s, round trip \
         {:.1} ms, lost to the ramp {:.3} s in, {:.3} s out",
        tasks.bytes_per_s,
        results.bytes_per_s,
        rtt_s * 1e3,
        tasks.ramp_s,
        results.ramp_s
    )
}
