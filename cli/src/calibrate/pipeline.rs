//! `hmw calibrate` on a pipeline plan: the plan launched as `hmw launch` launches it (on this
//! machine or the clusters' own hosts), every node timing `--repeats` items of every stage
//! from the source's first item, and the run stopping then. The measured system gives each
//! worker its stage times (`stage_s`), the noise of its repeats (`chain_cv`, for the
//! threshold (158)) and its `perf` (the operations of an item of every stage per second of
//! them); the LANs and WANs keep the plan's values.

use std::{fmt::Write as _, fs, path::Path};

use anyhow::{bail, Context as _, Result};
use hmw_core::pipeline::PipelineStats;
use hmw_model::{
    params::{MeasuredCluster, MeasuredSystem, MeasuredWorker},
    plan::Plan,
};

use super::{
    args::CalibrateArgs,
    system_file::{load_average, now},
};
use crate::{
    launch::{run_for, LaunchArgs},
    pipeline::Purpose,
};

/// Every node of `plan` timed; files in `work`.
pub(super) fn calibrate(args: &CalibrateArgs, plan: &Plan, work: &Path) -> Result<MeasuredSystem> {
    let pipeline = plan.pipeline.as_ref().context("not a pipeline plan")?;
    let launch = LaunchArgs::calibration(args.plan.clone(), work.to_owned());
    let stats_path = run_for(
        launch,
        Purpose::PipelineCalibration {
            repeats: u64::from(args.repeats),
        },
    )?;
    let text = fs::read_to_string(&stats_path)
        .with_context(|| format!("cannot read {}", stats_path.display()))?;
    let stats: PipelineStats = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a pipeline run's statistics", stats_path.display()))?;
    let chain_oper = pipeline.chain_oper();
    let mut system = MeasuredSystem {
        measured_at: Some(now()),
        conditions: Some(format!(
            "hmw calibrate {} (a pipeline: every node timed {} items of every stage at once, \
             load average {} at the end); LANs and WANs are the plan's",
            args.plan.display(),
            args.repeats,
            load_average()
        )),
        clusters: Vec::new(),
        oper_cv: None,
    };
    let mut table = format!("{:<12} {:<16}", "cluster", "node");
    for s in &pipeline.stages {
        let _ = write!(table, " {:>10}", s.name);
    }
    let _ = writeln!(table, " {:>8} {:>12}", "noise", "ops/s");
    for record in &stats.calibrations {
        let Some(cluster) = plan.clusters.get(record.node.cluster()) else {
            bail!(
                "a calibration of {} names no cluster of the plan",
                record.node
            );
        };
        let chain_s: f64 = record.stage_s.iter().sum();
        let perf = chain_oper / chain_s;
        let _ = write!(table, "{:<12} {:<16}", cluster.name, record.host);
        for t in &record.stage_s {
            let _ = write!(table, " {t:>10.5}");
        }
        let _ = writeln!(table, " {:>8.3} {perf:>12.4e}", record.chain_cv);
        let entry = match system
            .clusters
            .iter_mut()
            .position(|c| c.name == cluster.name)
        {
            Some(i) => &mut system.clusters[i],
            None => {
                system.clusters.push(MeasuredCluster {
                    name: cluster.name.clone(),
                    lan_bytes_per_s: None,
                    wan_in_bytes_per_s: None,
                    wan_out_bytes_per_s: None,
                    wan_rtt_s: None,
                    wan_in_ramp_s: None,
                    wan_out_ramp_s: None,
                    master_cpu_per_task_s: None,
                    cm_cpu_per_task_s: None,
                    lan_scv: None,
                    workers: Vec::new(),
                    lan_runs: Vec::new(),
                });
                system.clusters.last_mut().expect("pushed")
            }
        };
        if entry.workers.iter().any(|w| w.host == record.host) {
            continue; // a host with two worker entries: its first node speaks for it
        }
        entry.workers.push(MeasuredWorker {
            host: record.host.clone(),
            perf,
            own_comm_bytes_per_s: None,
            cores: None,
            stage_s: Some(record.stage_s.clone()),
            chain_cv: Some(record.chain_cv),
        });
    }
    if stats.calibrations.is_empty() {
        bail!(
            "{}: the run calibrated no node (its log is beside it)",
            stats_path.display()
        );
    }
    print!("{table}");
    Ok(system)
}
