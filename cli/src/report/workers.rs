//! Each worker of a run against its calibration: what it computed per second, and why it
//! differed — the cores its process got, or the work each CPU second did.
//!
//! `hmw calibrate` takes a worker's `perf` at its capacity (106), the cores its process got
//! while it worked, and records both. The same figures come out of the run's statistics
//! ([`perf_at_capacity`]), so the ratio of the run's `perf` to the calibration's splits into
//! two: the cores (a host shared with others, a quota, a busier neighbour) and the work per
//! CPU second (`perf / cores`: the processor's own speed, which no quota changes). A
//! prediction from the calibration assumes both stayed as calibrated.

use std::fmt::Write as _;

use hmw_core::stats::{RunStats, WorkerStats};
use hmw_model::params::MeasuredSystem;

use crate::capacity::perf_at_capacity;

/// One worker of the run and its calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerAgainstCalibration {
    pub cluster: String,
    pub host: String,
    /// The calibration's `perf`, and its cores when recorded.
    pub calibrated_perf: f64,
    pub calibrated_cores: Option<f64>,
    /// The run's `perf` (at its capacity when its CPU time tells it, else per busy second)
    /// and its cores.
    pub run_perf: f64,
    pub run_cores: Option<f64>,
}

impl WorkerAgainstCalibration {
    /// The run's `perf` over the calibration's.
    pub fn perf_ratio(&self) -> f64 {
        self.run_perf / self.calibrated_perf
    }

    /// The run's cores over the calibration's.
    pub fn cores_ratio(&self) -> Option<f64> {
        Some(self.run_cores? / self.calibrated_cores?)
    }

    /// The run's work per CPU second over the calibration's.
    pub fn speed_ratio(&self) -> Option<f64> {
        Some(self.perf_ratio() / self.cores_ratio()?)
    }
}

/// Every worker of `stats` (its clusters' too, down the tree) that `measured` calibrated, in
/// the order of the statistics.
pub fn against_calibration(
    stats: &RunStats,
    measured: &MeasuredSystem,
) -> Vec<WorkerAgainstCalibration> {
    let mut rows = Vec::new();
    collect(stats, measured, &mut rows);
    rows
}

fn collect(stats: &RunStats, measured: &MeasuredSystem, rows: &mut Vec<WorkerAgainstCalibration>) {
    let cluster = measured.clusters.iter().find(|c| c.name == stats.name);
    for worker in &stats.workers {
        let Some(calibrated) =
            cluster.and_then(|c| c.workers.iter().find(|w| w.host == worker.host))
        else {
            continue;
        };
        if worker.tasks_computed == 0 || calibrated.perf.is_nan() || calibrated.perf <= 0.0 {
            continue;
        }
        let (run_perf, run_cores) = run_figures(worker);
        rows.push(WorkerAgainstCalibration {
            cluster: stats.name.clone(),
            host: worker.host.clone(),
            calibrated_perf: calibrated.perf,
            calibrated_cores: calibrated.cores,
            run_perf,
            run_cores,
        });
    }
    for child in &stats.clusters {
        if let Some(child_stats) = &child.stats {
            collect(child_stats, measured, rows);
        }
    }
}

/// A worker's `perf` in the run and its cores, taken as the calibration takes them.
fn run_figures(worker: &WorkerStats) -> (f64, Option<f64>) {
    match perf_at_capacity(worker) {
        Some((perf, cores)) => (perf, Some(cores)),
        None => (worker.ops_per_s, None),
    }
}

/// The table, with a line naming the workers more than [`TOLERANCE`] off their calibration
/// and why; empty without rows.
pub fn text(rows: &[WorkerAgainstCalibration]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "workers against their calibration (perf at the cores its process got, (106); \
         perf / cores: work per CPU second)\n",
    );
    let _ = writeln!(
        out,
        "{:<12} {:<16} {:>12} {:>12} {:>8} {:>14} {:>8} {:>11}",
        "cluster",
        "host",
        "perf cal",
        "perf run",
        "run/cal",
        "cores cal/run",
        "run/cal",
        "work/CPU-s"
    );
    let ratio = |r: Option<f64>| r.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
    for row in rows {
        let cores = match (row.calibrated_cores, row.run_cores) {
            (Some(c), Some(r)) => format!("{c:.3}/{r:.3}"),
            _ => "-".to_owned(),
        };
        let _ = writeln!(
            out,
            "{:<12} {:<16} {:>12.4e} {:>12.4e} {:>8.3} {:>14} {:>8} {:>11}",
            row.cluster,
            row.host,
            row.calibrated_perf,
            row.run_perf,
            row.perf_ratio(),
            cores,
            ratio(row.cores_ratio()),
            ratio(row.speed_ratio()),
        );
    }
    let _ = writeln!(out, "{}", verdict(rows));
    out
}

/// How far a worker may run from its calibration before it is named.
const TOLERANCE: f64 = 0.05;

/// Which workers ran more than [`TOLERANCE`] from their calibration, and whether the cores or
/// the work per CPU second made the difference.
fn verdict(rows: &[WorkerAgainstCalibration]) -> String {
    let off: Vec<String> = rows
        .iter()
        .filter(|r| (r.perf_ratio() - 1.0).abs() > TOLERANCE)
        .map(|r| {
            let cause = match (r.cores_ratio(), r.speed_ratio()) {
                (Some(cores), Some(speed)) if (cores - 1.0).abs() >= (speed - 1.0).abs() => {
                    format!("{:.0} % of its cores", 100.0 * cores)
                }
                (Some(_), Some(speed)) => {
                    format!("{:.0} % of its work per CPU second", 100.0 * speed)
                }
                _ => "cores not recorded".to_owned(),
            };
            format!(
                "{}/{} at {:.2} ({cause})",
                r.cluster,
                r.host,
                r.perf_ratio()
            )
        })
        .collect();
    if off.is_empty() {
        format!(
            "every worker within {:.0} % of its calibrated perf",
            100.0 * TOLERANCE
        )
    } else {
        format!(
            "workers off their calibrated perf by more than {:.0} %: {}",
            100.0 * TOLERANCE,
            off.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw_model::params::{MeasuredCluster, MeasuredWorker};

    /// A worker busy 10 s whose process used `cpu_s`, all of it in its compute thread.
    fn worker(host: &str, cpu_s: f64, operations: f64) -> WorkerStats {
        let busy_s = 10.0;
        WorkerStats {
            rank: 1,
            host: host.into(),
            tasks_done: 10,
            tasks_computed: 10,
            busy_s,
            cpu_s,
            compute_cpu_s: cpu_s,
            active_s: busy_s,
            operations,
            ops_per_s: operations / busy_s,
            ..Default::default()
        }
    }

    fn calibration(perf: f64, cores: Option<f64>) -> MeasuredSystem {
        MeasuredSystem {
            measured_at: None,
            conditions: None,
            clusters: vec![MeasuredCluster {
                name: "lyon".into(),
                lan_bytes_per_s: None,
                wan_in_bytes_per_s: None,
                wan_out_bytes_per_s: None,
                wan_rtt_s: None,
                wan_in_ramp_s: None,
                wan_out_ramp_s: None,
                workers: vec![MeasuredWorker {
                    host: "lyon-1".into(),
                    perf,
                    own_comm_bytes_per_s: None,
                    cores,
                    stage_s: None,
                    chain_cv: None,
                }],
                lan_runs: Vec::new(),
                master_cpu_per_task_s: None,
                cm_cpu_per_task_s: None,
                lan_scv: None,
            }],
            oper_cv: None,
        }
    }

    fn run(workers: Vec<WorkerStats>) -> RunStats {
        RunStats {
            name: "lyon".into(),
            wall_s: 10.0,
            tasks: 10,
            workers,
            ..Default::default()
        }
    }

    #[test]
    fn fewer_cores_and_a_slower_processor_are_told_apart() {
        // Calibrated: 0.35 of a core doing 1e9 operations per CPU second.
        let calibrated = calibration(3.5e8, Some(0.35));
        // Run: 0.30 of a core (3 CPU seconds in 10), the same work per CPU second.
        let fewer_cores = run(vec![worker("lyon-1", 3.0, 3.0e9)]);
        let rows = against_calibration(&fewer_cores, &calibrated);
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert!((row.run_cores.unwrap() - 0.30).abs() < 1e-9);
        assert!((row.perf_ratio() - 3.0 / 3.5).abs() < 1e-9);
        assert!((row.speed_ratio().unwrap() - 1.0).abs() < 1e-9);
        assert!(text(&rows).contains("lyon/lyon-1 at 0.86 (86 % of its cores)"));
        // Run: its 0.35 of a core, each CPU second doing 20 % less.
        let slower = run(vec![worker("lyon-1", 3.5, 2.8e9)]);
        let rows = against_calibration(&slower, &calibrated);
        assert!((rows[0].cores_ratio().unwrap() - 1.0).abs() < 1e-9);
        assert!(text(&rows).contains("(80 % of its work per CPU second)"));
        // As calibrated.
        let same = run(vec![worker("lyon-1", 3.5, 3.5e9)]);
        assert!(text(&against_calibration(&same, &calibrated))
            .contains("every worker within 5 % of its calibrated perf"));
    }

    #[test]
    fn without_recorded_cores_only_the_perf_is_compared() {
        let rows = against_calibration(
            &run(vec![worker("lyon-1", 3.0, 3.0e9)]),
            &calibration(3.5e8, None),
        );
        assert_eq!(rows[0].speed_ratio(), None);
        assert!(text(&rows).contains("(cores not recorded)"));
        // A worker the calibration does not name is left out.
        let rows = against_calibration(
            &run(vec![worker("lyon-9", 3.0, 3.0e9)]),
            &calibration(3.5e8, None),
        );
        assert!(rows.is_empty() && text(&rows).is_empty());
    }
}
