//! The model's working range (`docs/model.md`, "Validation"): plans whose numbers are each
//! positive and finite can still make a derived quantity of sections 1 and 2 — the workload
//! (1), a task's time on a worker, a transfer time (11)(15)(48), the steady performance
//! (26)(32)(36) and steady time (25)(31), the startup and end times, the best time (6) —
//! underflow to zero or overflow to infinity, and the methodology then has nothing sound to
//! balance. [`check_working_range`] rejects such an input before it is evaluated, naming the
//! plan key (and cluster and machine) responsible.
//!
//! The range, [`SMALLEST`] to [`LARGEST`] (seconds, basic operations), is far outside anything
//! physical (a task of 1e15 operations on a 1e-3 operations-per-second machine takes 1e18 s,
//! the universe is 4e17 s old) and far inside what `f64` holds, so that the sums and products
//! of the methodology stay finite and keep their precision.

use thiserror::Error;

use super::cluster::ClusterModel;
use super::execution::cluster_performance;
use super::limits::Bottleneck;
use super::params::{ApplicationParams, ClusterParams, ModelInput};

/// The smallest workload or time (other than zero) the model works with.
pub const SMALLEST: f64 = 1e-150;

/// The largest workload or time the model works with.
pub const LARGEST: f64 = 1e150;

/// A value that takes a derived quantity out of the working range, named as in the plan.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{}key `{key}`: {message}", context(cluster, machine))]
pub struct RangeError {
    /// The cluster whose quantity is out of range, if it is a cluster's.
    pub cluster: Option<String>,
    /// The worker machine whose `perf` is responsible, if one is.
    pub machine: Option<String>,
    /// The plan key most responsible: `perf`, `lan_bytes_per_s`, `wan_in_bytes_per_s`,
    /// `wan_out_bytes_per_s`, or an application key such as `application.oper` or
    /// `application.grain[grain = 400].tasks`.
    pub key: String,
    /// The values involved, the quantity they make and the range.
    pub message: String,
}

fn context(cluster: &Option<String>, machine: &Option<String>) -> String {
    let mut context = String::new();
    if let Some(cluster) = cluster {
        context.push_str(&format!("cluster `{cluster}`, "));
    }
    if let Some(machine) = machine {
        context.push_str(&format!("machine `{machine}`, "));
    }
    context
}

/// A number as a plan would write it: whole numbers without a fraction, very small and very
/// large ones in scientific notation (`4`, `0.5`, `1e-320`, `inf`).
fn show(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x}")
    } else {
        format!("{x:?}")
    }
}

/// Whether a workload or time is usable: from [`SMALLEST`] to [`LARGEST`].
fn in_range(x: f64) -> bool {
    (SMALLEST..=LARGEST).contains(&x)
}

/// Whether a time that may legitimately be zero (nothing to transfer) is usable: zero or at most
/// [`LARGEST`].
fn at_most_largest(x: f64) -> bool {
    (0.0..=LARGEST).contains(&x)
}

const RANGE: &str = "the model works with workloads (basic operations) and times (seconds) from \
                     1e-150 to 1e150";

/// Sections 1 and 2: checks that every quantity the methodology derives from `input` — (1),
/// `oper/perf`, (11)(15)(48), (25)(26)(31)(32)(36), (12)-(21), (37)-(56), (6) — is in the
/// working range, for the application and for every candidate grain: on every cluster with all
/// its workers (the largest startup, end and performance) and with its slowest worker alone
/// (the smallest steady performance any selection can have), and the best time (6) with every
/// worker of the plan. The first quantity out of range is the error.
pub fn check_working_range(input: &ModelInput) -> Result<(), RangeError> {
    let applications = std::iter::once(("application".to_string(), &input.application)).chain(
        input.grains.iter().map(|g| {
            (
                format!("application.grain[grain = {}]", g.grain),
                &g.application,
            )
        }),
    );
    // (6) over every worker of the plan: the shortest best time any selection has
    let mcperf: f64 = input
        .system
        .clusters
        .iter()
        .flat_map(|c| c.workers.iter().map(|w| w.perf))
        .sum();
    for (prefix, app) in applications {
        check_workload(&prefix, app)?;
        for cluster in &input.system.clusters {
            check_cluster(&prefix, app, cluster, input.options.cluster_options())?;
        }
        check_best_time(&prefix, app, mcperf)?;
    }
    Ok(())
}

/// (6): the best time of the workload with every worker of the plan, `mcperf` basic operations
/// per second in all.
fn check_best_time(prefix: &str, app: &ApplicationParams, mcperf: f64) -> Result<(), RangeError> {
    let best = app.workload() / mcperf;
    if in_range(best) {
        return Ok(());
    }
    Err(RangeError {
        cluster: None,
        machine: None,
        key: "perf".into(),
        message: format!(
            "the workers' perf values sum to {} basic operations per second, so the best \
             possible time (6) of the workload {} ({prefix}) is {} s; {RANGE}",
            show(mcperf),
            show(app.workload()),
            show(best)
        ),
    })
}

/// (1): `workload = tasks * oper`.
fn check_workload(prefix: &str, app: &ApplicationParams) -> Result<(), RangeError> {
    let workload = app.workload();
    if in_range(workload) {
        return Ok(());
    }
    // `tasks` alone (1 to 2^64) cannot leave the range: `oper` does
    Err(RangeError {
        cluster: None,
        machine: None,
        key: format!("{prefix}.oper"),
        message: format!(
            "tasks = {} and oper = {} make the workload (1) {} basic operations; {RANGE}",
            app.tasks,
            show(app.oper),
            show(workload)
        ),
    })
}

fn check_cluster(
    prefix: &str,
    app: &ApplicationParams,
    cluster: &ClusterParams,
    options: crate::params::ClusterOptions,
) -> Result<(), RangeError> {
    // a cluster without workers (a main cluster holding the master alone) takes no part
    if cluster.workers.is_empty() {
        return Ok(());
    }
    let error = |machine: Option<&str>, key: &str, message: String| RangeError {
        cluster: Some(cluster.name.clone()),
        machine: machine.map(str::to_string),
        key: key.to_string(),
        message,
    };
    // one task on each worker
    for worker in &cluster.workers {
        let time = app.oper / worker.perf;
        if !in_range(time) {
            return Err(error(
                Some(&worker.host),
                "perf",
                format!(
                    "perf = {} basic operations per second makes one task ({prefix}.oper = {}) \
                     take {} s on this worker; {RANGE}",
                    show(worker.perf),
                    show(app.oper),
                    show(time)
                ),
            ));
        }
    }
    // (11), the local messages of (18)-(21) and the end, (15)(19), (48)
    let lan = cluster.lan_bytes_per_s;
    let mut transfers = vec![
        (
            "lan_bytes_per_s",
            lan,
            "task_bytes",
            app.task_bytes,
            "a task",
        ),
        (
            "lan_bytes_per_s",
            lan,
            "result_bytes",
            app.result_bytes,
            "a result",
        ),
    ];
    if let Some(link) = &cluster.external {
        let task_key = if app.task_bytes_inter.is_some() {
            "task_bytes_inter"
        } else {
            "task_bytes"
        };
        let result_key = if app.result_bytes_inter.is_some() {
            "result_bytes_inter"
        } else {
            "result_bytes"
        };
        transfers.push((
            "wan_in_bytes_per_s",
            link.wan_in_bytes_per_s,
            task_key,
            app.inter_task_bytes(link.tasks_per_inter_task),
            "an inter-cluster task",
        ));
        transfers.push((
            "wan_out_bytes_per_s",
            link.wan_out_bytes_per_s,
            result_key,
            app.inter_result_bytes(link.results_per_inter_result),
            "an inter-cluster result",
        ));
    }
    for (key, throughput, bytes_key, bytes, what) in transfers {
        let time = bytes / throughput;
        if !at_most_largest(time) {
            return Err(error(
                None,
                key,
                format!(
                    "{key} = {} bytes per second makes sending {what} ({prefix}.{bytes_key}: {} \
                     bytes) take {} s; {RANGE}",
                    show(throughput),
                    show(bytes),
                    show(time)
                ),
            ));
        }
    }
    let all: Vec<f64> = cluster.workers.iter().map(|w| w.perf).collect();
    let Some(slowest) = cluster
        .workers
        .iter()
        .min_by(|a, b| a.perf.total_cmp(&b.perf))
    else {
        return Ok(());
    };
    let cperf = cluster_performance(&all);
    if !cperf.is_finite() {
        return Err(error(
            None,
            "perf",
            format!(
                "the perf values of the cluster's {} workers sum to {} (3); {RANGE}",
                all.len(),
                show(cperf)
            ),
        ));
    }
    let workload = app.workload();
    let models = [
        ClusterModel::new(app, cluster, &all, options),
        ClusterModel::new(app, cluster, &[slowest.perf], options),
    ];
    let [Some(fastest), Some(alone)] = models else {
        return Ok(());
    };
    // (25)(31) at the smallest steady performance any selection has: the slowest worker alone
    let steady_time = workload / alone.perf_ste;
    if !in_range(steady_time) {
        let (machine, key, cause) = match alone.bottleneck {
            Bottleneck::Compute => (
                Some(slowest.host.as_str()),
                "perf",
                format!("perf = {} of its slowest worker", show(slowest.perf)),
            ),
            Bottleneck::Lan => (
                None,
                "lan_bytes_per_s",
                format!(
                    "lan_bytes_per_s = {} with {prefix}.task_bytes + result_bytes = {} bytes per \
                     task",
                    show(lan),
                    show(app.comm_bytes())
                ),
            ),
            Bottleneck::Master | Bottleneck::Cm => {
                let (key, cost) = if alone.bottleneck == Bottleneck::Master {
                    ("master_cpu_per_task_s", cluster.dispatch.master_s)
                } else {
                    ("cm_cpu_per_task_s", cluster.dispatch.cm_s)
                };
                (None, key, format!("{key} = {}", show(cost)))
            }
            Bottleneck::WanIn => (
                None,
                "wan_in_bytes_per_s",
                format!(
                    "wan_in_bytes_per_s = {}",
                    show(
                        cluster
                            .external
                            .as_ref()
                            .map_or(f64::NAN, |l| l.wan_in_bytes_per_s)
                    )
                ),
            ),
            Bottleneck::WanOut => (
                None,
                "wan_out_bytes_per_s",
                format!(
                    "wan_out_bytes_per_s = {}",
                    show(
                        cluster
                            .external
                            .as_ref()
                            .map_or(f64::NAN, |l| l.wan_out_bytes_per_s)
                    )
                ),
            ),
        };
        return Err(error(
            machine,
            key,
            format!(
                "{cause} makes the steady performance ({} limit of (26)/(32)/(36)) {} basic \
                 operations per second, so the steady time of the workload {} on this cluster \
                 is {} s; {RANGE}",
                alone.bottleneck,
                show(alone.perf_ste),
                show(workload),
                show(steady_time)
            ),
        ));
    }
    // the same at the largest steady performance: all the workers
    let steady_time = workload / fastest.perf_ste;
    if !in_range(steady_time) {
        return Err(error(
            None,
            "perf",
            format!(
                "the cluster's {} workers (perf summing to {}) make the steady time of the \
                 workload {} on this cluster {} s; {RANGE}",
                all.len(),
                show(cperf),
                show(workload),
                show(steady_time)
            ),
        ));
    }
    // startup and end with every worker (they grow with the workers)
    for (what, time) in [
        ("startup time (12)/(18)/(21)", fastest.t_up),
        ("best end time (37)/(52)(53)", fastest.t_end_best),
        ("worst end time (39)-(56)", fastest.t_end_worst),
    ] {
        if !at_most_largest(time) {
            return Err(error(
                None,
                "machines",
                format!(
                    "with its {} workers the {what} is {} s (each transfer and task time is in \
                     range; the workers multiply them); {RANGE}",
                    all.len(),
                    show(time)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{
        ExternalLink, GrainCandidate, ModelOptions, SelectionRequest, SystemParams, WorkerParams,
    };

    fn input() -> ModelInput {
        let worker = |host: &str, perf: f64| WorkerParams {
            host: host.into(),
            perf,
            own_comm_bytes_per_s: None,
        };
        ModelInput {
            application: ApplicationParams {
                tasks: 500,
                oper: 1.0,
                task_bytes: 4.0,
                result_bytes: 2_310_244.0,
                task_bytes_inter: None,
                result_bytes_inter: None,
                oper_cv: 0.0,
            },
            grains: vec![],
            system: SystemParams {
                clusters: vec![
                    ClusterParams {
                        name: "argentina".into(),
                        lan_bytes_per_s: 1_068_674.0,
                        workers: vec![worker("pgs-1", 0.7909e-3), worker("pgs-3", 0.7951e-3)],
                        external: None,
                        dispatch: Default::default(),
                        lan_scv: None,
                    },
                    ClusterParams {
                        name: "spain".into(),
                        lan_bytes_per_s: 9_599_164.0,
                        workers: vec![worker("aoquir3", 4.6354e-3), worker("aoquir7", 2.0293e-3)],
                        external: Some(ExternalLink::new(21_802.0, 21_206.0)),
                        dispatch: Default::default(),
                        lan_scv: None,
                    },
                ],
            },
            options: ModelOptions {
                efficiency_threshold: 0.8,
                reassign_last_task: true,
                exhaustive_limit: 65_536,
                selection_budget_s: 5.0,
                worker_buffers: 1,
                terms: Default::default(),
            },
            selection: SelectionRequest::All,
        }
    }

    fn error_of(input: &ModelInput) -> String {
        check_working_range(input).unwrap_err().to_string()
    }

    #[test]
    fn the_first_example_and_large_real_runs_are_in_range() {
        check_working_range(&input()).unwrap();
        // 10,000 tasks of 1e15 flops on 1e9-flop/s machines, results of a gigabyte
        let mut big = input();
        big.application.tasks = 10_000;
        big.application.oper = 1e15;
        big.application.result_bytes = 1e9;
        for cluster in &mut big.system.clusters {
            for w in &mut cluster.workers {
                w.perf = 1e9;
            }
        }
        check_working_range(&big).unwrap();
        // 1e12 tasks
        let mut many = input();
        many.application.tasks = 1_000_000_000_000;
        check_working_range(&many).unwrap();
        // a main cluster without workers is not checked: its LAN carries nothing
        let mut master_alone = input();
        master_alone.system.clusters[0].workers.clear();
        master_alone.system.clusters[0].lan_bytes_per_s = 1e-300;
        check_working_range(&master_alone).unwrap();
    }

    #[test]
    fn a_subnormal_perf_names_the_machine() {
        let mut input = input();
        input.system.clusters[1].workers[0].perf = 1e-320;
        let err = error_of(&input);
        assert!(
            err.starts_with("cluster `spain`, machine `aoquir3`, key `perf`: perf = 1e-320"),
            "{err}"
        );
        assert!(err.contains("take inf s"), "{err}");
    }

    #[test]
    fn a_subnormal_lan_names_the_throughput() {
        let mut input = input();
        input.system.clusters[1].lan_bytes_per_s = 9.56e-320;
        let err = error_of(&input);
        assert!(
            err.starts_with("cluster `spain`, key `lan_bytes_per_s`: lan_bytes_per_s = 9.56e-320"),
            "{err}"
        );
        // a LAN too slow for the steady state but not for one message
        let mut input = self::input();
        input.application.task_bytes = 0.0;
        input.application.result_bytes = 1.0;
        input.application.tasks = 1_000_000_000_000;
        input.system.clusters[0].lan_bytes_per_s = 1e-140;
        let err = error_of(&input);
        assert!(
            err.starts_with("cluster `argentina`, key `lan_bytes_per_s`"),
            "{err}"
        );
        assert!(err.contains("steady performance (lan limit"), "{err}");
    }

    #[test]
    fn an_overflowing_workload_names_the_application_key() {
        let mut input = input();
        input.application.oper = 1e308;
        let err = error_of(&input);
        assert!(
            err.starts_with("key `application.oper`: tasks = 500 and oper = 1e308"),
            "{err}"
        );
        input.application.oper = 1.0;
        input.grains.push(GrainCandidate {
            grain: 7,
            application: ApplicationParams {
                tasks: u64::MAX,
                oper: 1e140,
                ..input.application.clone()
            },
        });
        let err = error_of(&input);
        assert!(
            err.starts_with(
                "key `application.grain[grain = 7].oper`: tasks = 18446744073709551615"
            ),
            "{err}"
        );
    }

    #[test]
    fn slow_wans_and_huge_messages_name_their_keys() {
        let mut input = input();
        if let Some(link) = input.system.clusters[1].external.as_mut() {
            link.wan_out_bytes_per_s = 1e-300;
        }
        let err = error_of(&input);
        assert!(
            err.starts_with(
                "cluster `spain`, key `wan_out_bytes_per_s`: wan_out_bytes_per_s = 1e-300"
            ),
            "{err}"
        );
        assert!(err.contains("an inter-cluster result"), "{err}");
        let mut input = self::input();
        input.application.result_bytes_inter = Some(1e300);
        let err = error_of(&input);
        assert!(
            err.contains("(application.result_bytes_inter: 1e300 bytes)"),
            "{err}"
        );
    }

    #[test]
    fn the_best_time_is_checked_for_every_grain_candidate() {
        // Four workers of perf 1, two per cluster; a grain of one task of 3e-150 operations:
        // each cluster alone takes (LAN-bound) seconds, but all four workers together would
        // take 3e-150 / 4 s, under the range.
        let mut input = input();
        for cluster in &mut input.system.clusters {
            for w in &mut cluster.workers {
                w.perf = 1.0;
            }
        }
        check_working_range(&input).unwrap();
        input.grains.push(GrainCandidate {
            grain: 7,
            application: ApplicationParams {
                tasks: 1,
                oper: 3e-150,
                ..input.application.clone()
            },
        });
        let err = error_of(&input);
        assert_eq!(
            err,
            "key `perf`: the workers' perf values sum to 4 basic operations per second, so the \
             best possible time (6) of the workload 3e-150 (application.grain[grain = 7]) is \
             7.5e-151 s; the model works with workloads (basic operations) and times (seconds) \
             from 1e-150 to 1e150"
        );
    }

    #[test]
    fn tiny_workloads_and_huge_machines_are_out_of_range() {
        let mut input = input();
        input.application.oper = 1e-160;
        let err = error_of(&input);
        assert!(err.starts_with("key `application.oper`"), "{err}");
        let mut input = self::input();
        input.system.clusters[0].workers[0].perf = 1e300;
        let err = error_of(&input);
        assert!(
            err.starts_with("cluster `argentina`, machine `pgs-1`, key `perf`: perf = 1e300"),
            "{err}"
        );
        assert!(err.contains("take 1e-300 s"), "{err}");
    }
}
