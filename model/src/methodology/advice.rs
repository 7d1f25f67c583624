//! Application tuning advice (`docs/model.md` section 3.3): for each cluster held back by a
//! link or by its startup and end, what would lift it, as concrete numbers.
//!
//! Rules, per cluster taking part:
//! - bottleneck `wan_out`: `results_per_inter_result`, the smallest `nr` with
//!   `oper * nr * tput_out / s_result_inter >= cperf`, where `s_result_inter` stays the plan's
//!   `result_bytes_inter` or, when absent, the size of one result (results summed, as in a
//!   reduction);
//! - bottleneck `wan_in`: `tasks_per_inter_task`, likewise with `tput_in`, `nt` and the plan's
//!   `task_bytes_inter` or one task's size;
//! - any communication bottleneck, with grain candidates: `granularity`, the smallest candidate
//!   `G` whose `perf_ste(G) >= cperf`, with its startup and end times;
//! - computation bound but below the threshold in the worst case (startup and end hold it down),
//!   with grain candidates: `granularity`, the largest candidate `G` whose minimum workload (58)
//!   still fits the cluster's share of the problem at that grain;
//! - an external cluster below the threshold (or without tasks) that no rule above lifts:
//!   `drop_cluster`, valued at the run's worst-case execution time without it.
//!
//! A required `nr` or `nt` above [`MAX_TASKS_PER_UNIT`], the most a plan accepts (or beyond any
//! integer), is no advice but a [`Remark::OutOfReach`]; a communication-bound cluster that no
//! advice lifts gets a [`Remark::LinkNeeds`]: for each link below `cperf`, the throughput that
//! would make it computation bound and the basic operations per byte a grain would have to
//! carry instead.

use super::evaluation::{evaluate_case, CaseOutcome};
use super::threshold::{minimum_tasks, minimum_workload};
use crate::cluster::{Case, ClusterModel};
use crate::limits::Bottleneck;
use crate::params::MAX_TASKS_PER_UNIT;
use crate::params::{ApplicationParams, ClusterParams, ModelInput};

/// What an advice changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdviceKind {
    /// Join `nr` local results into one inter-cluster result.
    ResultsPerInterResult,
    /// Carry `nt` local tasks in one inter-cluster task.
    TasksPerInterTask,
    /// Use grain `G`.
    Granularity,
    /// Release the cluster.
    DropCluster,
}

impl AdviceKind {
    /// The name in the output (section 3.3): `results_per_inter_result`,
    /// `tasks_per_inter_task`, `granularity`, `drop_cluster`.
    pub fn name(self) -> &'static str {
        match self {
            AdviceKind::ResultsPerInterResult => "results_per_inter_result",
            AdviceKind::TasksPerInterTask => "tasks_per_inter_task",
            AdviceKind::Granularity => "granularity",
            AdviceKind::DropCluster => "drop_cluster",
        }
    }
}

/// The advised value: a count (`nr`, `nt`, `G`) or, for `drop_cluster`, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AdviceValue {
    /// `nr`, `nt` or the grain `G`.
    Count(u64),
    /// The run's worst-case execution time without the cluster.
    Seconds(f64),
}

/// Why a grain is advised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrainReason {
    /// The smallest candidate whose steady state is computation bound.
    ComputationBound,
    /// The largest candidate whose minimum workload fits the cluster's share.
    FitsShare,
}

/// The model of one cluster (with its selected workers) at one candidate grain.
#[derive(Debug, Clone, PartialEq)]
pub struct GrainRow {
    /// Cluster name.
    pub cluster: String,
    /// The grain `G`.
    pub grain: u64,
    /// `tasks(G)`: the problem's tasks at that grain.
    pub tasks: u64,
    /// `cperf`.
    pub cperf: f64,
    /// `perf_ste(G)`.
    pub perf_ste: f64,
    /// What limits `perf_ste(G)`.
    pub bottleneck: Bottleneck,
    /// `T_up(G)`.
    pub t_up: f64,
    /// Best end time at `G`.
    pub t_end_best: f64,
    /// Worst end time at `G`.
    pub t_end_worst: f64,
    /// Minimum tasks at `G` for the threshold (58); `None` when unreachable.
    pub min_tasks: Option<u64>,
}

/// What following an advice does, for the report.
#[derive(Debug, Clone, PartialEq)]
pub enum AdviceEffect {
    /// `nr` or `nt`: the link's limit rises from `from` to `to` (at least `cperf`), assuming an
    /// inter-cluster message of `inter_bytes`.
    LiftsLimit {
        /// The limit now, basic operations per second.
        from: f64,
        /// The limit with the advised value.
        to: f64,
        /// `cperf` of the cluster.
        cperf: f64,
        /// Size of one inter-cluster message the computation assumes.
        inter_bytes: f64,
    },
    /// `granularity`: the cluster at the advised grain.
    Grain {
        /// Why this grain.
        reason: GrainReason,
        /// The cluster's model at that grain.
        row: GrainRow,
    },
    /// `drop_cluster`: the run without the cluster.
    RunWithout {
        /// Worst-case multi-cluster execution time without it.
        t_ex_worst: f64,
        /// Worst-case run efficiency without it.
        efficiency_worst: f64,
    },
}

/// What would stop one link limiting a cluster (section 3.3, "compute what would lift it"):
/// the link's term of (26)/(32)/(36), `oper * m * tput / bytes` with `m` the local tasks or
/// results one message carries (`nt`, `nr`, 1 on a LAN), brought up to `cperf`.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkNeed {
    /// The link: [`Bottleneck::Lan`], [`Bottleneck::WanIn`] or [`Bottleneck::WanOut`].
    pub link: Bottleneck,
    /// Its limit now, basic operations per second (below `cperf`).
    pub limit: f64,
    /// Its throughput now, bytes per second.
    pub throughput: f64,
    /// The throughput at which its limit equals `cperf`: `cperf * bytes / (oper * m)`.
    pub throughput_needed: f64,
    /// Basic operations per byte crossing it now: `oper * m / bytes`.
    pub operations_per_byte: f64,
    /// Basic operations per byte a grain must carry for the limit to reach `cperf` at the
    /// present throughput: `cperf / tput`.
    pub operations_per_byte_needed: f64,
}

/// Tuning information that is not one of the four kinds of advice (section 3.3).
#[derive(Debug, Clone, PartialEq)]
pub enum Remark {
    /// The smallest `nr` (or `nt`) that would lift the WAN limit is more than a plan accepts.
    OutOfReach {
        /// The cluster.
        cluster: String,
        /// Its bottleneck.
        bottleneck: Bottleneck,
        /// [`AdviceKind::ResultsPerInterResult`] or [`AdviceKind::TasksPerInterTask`].
        kind: AdviceKind,
        /// The value needed; `None` beyond any integer (`u64`).
        needed: Option<u64>,
        /// The largest value a plan accepts ([`MAX_TASKS_PER_UNIT`]).
        largest: u64,
    },
    /// A communication-bound cluster no advice lifts: what each limiting link would need.
    LinkNeeds {
        /// The cluster.
        cluster: String,
        /// Its bottleneck.
        bottleneck: Bottleneck,
        /// Its `cperf`, the performance each link must carry.
        cperf: f64,
        /// One entry per link whose limit is below `cperf`, LAN first.
        needs: Vec<LinkNeed>,
    },
}

/// The advice and the remarks of section 3.3.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tuning {
    /// Advice of the four kinds.
    pub advice: Vec<Advice>,
    /// Everything else worth saying, as numbers.
    pub remarks: Vec<Remark>,
}

/// One piece of advice.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// The cluster it concerns.
    pub cluster: String,
    /// The cluster's bottleneck in the prediction.
    pub bottleneck: Bottleneck,
    /// What to change.
    pub kind: AdviceKind,
    /// To what.
    pub value: AdviceValue,
    /// With what effect.
    pub effect: AdviceEffect,
}

/// Section 3.3: the smallest integer `n >= 1` with `n * per_unit_limit >= target`; `None`
/// when no integer up to `u64::MAX` reaches it (or the numbers are not positive).
pub fn smallest_multiplier(per_unit_limit: f64, target: f64) -> Option<u64> {
    if per_unit_limit >= target || per_unit_limit.is_infinite() {
        return Some(1);
    }
    let ratio = (target / per_unit_limit).ceil();
    // 2^64 is the first float beyond u64::MAX
    if !(per_unit_limit > 0.0 && ratio < 18_446_744_073_709_551_616.0) {
        return None;
    }
    let mut n = (ratio as u64).max(1);
    if n > 1 && (n - 1) as f64 * per_unit_limit >= target {
        n -= 1;
    }
    if (n as f64) * per_unit_limit < target {
        n = n.checked_add(1)?;
    }
    Some(n)
}

/// Section 3.3: the smallest `nr` with `oper * nr * tput_out / s_result_inter >= cperf`
/// (`None`: beyond any integer).
pub fn results_per_inter_result_needed(
    cluster_performance: f64,
    oper: f64,
    wan_out_bytes_per_s: f64,
    inter_result_bytes: f64,
) -> Option<u64> {
    smallest_multiplier(
        oper * wan_out_bytes_per_s / inter_result_bytes,
        cluster_performance,
    )
}

/// Section 3.3: the smallest `nt` with `oper * nt * tput_in / s_task_inter >= cperf`
/// (`None`: beyond any integer).
pub fn tasks_per_inter_task_needed(
    cluster_performance: f64,
    oper: f64,
    wan_in_bytes_per_s: f64,
    inter_task_bytes: f64,
) -> Option<u64> {
    smallest_multiplier(
        oper * wan_in_bytes_per_s / inter_task_bytes,
        cluster_performance,
    )
}

/// Section 3.3, "compute what would lift it": for each link of `model` whose limit in (26),
/// (32) or (36) is below `cperf`, the throughput and the basic operations per byte that would
/// bring it up to `cperf` (empty for a computation-bound cluster).
pub fn link_needs(
    application: &ApplicationParams,
    cluster: &ClusterParams,
    model: &ClusterModel,
) -> Vec<LinkNeed> {
    let cperf = model.cperf;
    let oper = application.oper;
    let mut links = vec![(
        Bottleneck::Lan,
        model.limits.lan,
        cluster.lan_bytes_per_s,
        application.comm_bytes(),
        1u64,
    )];
    if let Some(link) = &cluster.external {
        let nt = link.tasks_per_inter_task;
        let nr = link.results_per_inter_result;
        links.push((
            Bottleneck::WanIn,
            model.limits.wan_in,
            link.wan_in_bytes_per_s,
            application.inter_task_bytes(nt),
            nt,
        ));
        links.push((
            Bottleneck::WanOut,
            model.limits.wan_out,
            link.wan_out_bytes_per_s,
            application.inter_result_bytes(nr),
            nr,
        ));
    }
    links
        .into_iter()
        .filter(|&(_, limit, ..)| limit < cperf)
        .map(|(link, limit, throughput, bytes, per_message)| {
            let operations = oper * per_message as f64;
            LinkNeed {
                link,
                limit,
                throughput,
                throughput_needed: cperf * bytes / operations,
                operations_per_byte: operations / bytes,
                operations_per_byte_needed: cperf / throughput,
            }
        })
        .collect()
}

/// Section 3.3, granularity: the model of cluster `cluster` with the workers `workers` at every
/// candidate grain of the input, smallest grain first — its steady state (26)/(32)/(36), startup
/// and end times and the minimum tasks (58) at that grain.
pub fn grain_table(input: &ModelInput, cluster: usize, workers: &[usize]) -> Vec<GrainRow> {
    let params = &input.system.clusters[cluster];
    let mut rows: Vec<GrainRow> = input
        .grains
        .iter()
        .filter_map(|candidate| {
            let model = ClusterModel::new(
                &candidate.application,
                params,
                &params.perfs_of(workers, &candidate.application, &input.options.terms),
                input.options.cluster_options(),
            )?;
            Some(GrainRow {
                cluster: params.name.clone(),
                grain: candidate.grain,
                tasks: candidate.application.tasks,
                cperf: model.cperf,
                perf_ste: model.perf_ste,
                bottleneck: model.bottleneck,
                t_up: model.t_up,
                t_end_best: model.t_end_best,
                t_end_worst: model.t_end_worst,
                min_tasks: minimum_workload(
                    model.t_up,
                    model.t_end_worst,
                    model.perf_ste,
                    model.cperf,
                    input.options.efficiency_threshold,
                )
                .and_then(|w| minimum_tasks(w, candidate.application.oper)),
            })
        })
        .collect();
    rows.sort_by_key(|r| r.grain);
    rows
}

/// The application parameters of the candidate with grain `grain`.
fn candidate_application(input: &ModelInput, grain: u64) -> Option<&ApplicationParams> {
    input
        .grains
        .iter()
        .find(|g| g.grain == grain)
        .map(|g| &g.application)
}

/// Section 3.3 for the clusters taking part: `active[k]` is the index in the system of the
/// cluster whose model is `models[k]` and whose worst-case outcome is entry `k` of `worst`.
pub fn advise(
    input: &ModelInput,
    selected: &[Vec<usize>],
    active: &[usize],
    models: &[&ClusterModel],
    worst: &CaseOutcome,
) -> Tuning {
    let threshold = input.options.efficiency_threshold;
    let app = &input.application;
    let mut tuning = Tuning::default();
    for (k, (&c, model)) in active.iter().zip(models).enumerate() {
        let params = &input.system.clusters[c];
        let mut lifted = false;
        let advice = &mut tuning.advice;
        let remarks = &mut tuning.remarks;
        let mut push = |kind, value, effect| {
            advice.push(Advice {
                cluster: params.name.clone(),
                bottleneck: model.bottleneck,
                kind,
                value,
                effect,
            })
        };
        if let Some(link) = &params.external {
            // (kind, needed, current limit, WAN throughput, size of one inter-cluster message)
            let multiplier = match model.bottleneck {
                Bottleneck::WanOut => {
                    let bytes = app.result_bytes_inter.unwrap_or(app.result_bytes);
                    let throughput = link.wan_out_bytes_per_s;
                    Some((
                        AdviceKind::ResultsPerInterResult,
                        results_per_inter_result_needed(model.cperf, app.oper, throughput, bytes),
                        model.limits.wan_out,
                        throughput,
                        bytes,
                    ))
                }
                Bottleneck::WanIn => {
                    let bytes = app.task_bytes_inter.unwrap_or(app.task_bytes);
                    let throughput = link.wan_in_bytes_per_s;
                    Some((
                        AdviceKind::TasksPerInterTask,
                        tasks_per_inter_task_needed(model.cperf, app.oper, throughput, bytes),
                        model.limits.wan_in,
                        throughput,
                        bytes,
                    ))
                }
                Bottleneck::Compute | Bottleneck::Lan | Bottleneck::Master | Bottleneck::Cm => None,
            };
            if let Some((kind, needed, from, throughput, bytes)) = multiplier {
                match needed {
                    Some(n) if n <= MAX_TASKS_PER_UNIT => {
                        push(
                            kind,
                            AdviceValue::Count(n),
                            AdviceEffect::LiftsLimit {
                                from,
                                to: app.oper * n as f64 * throughput / bytes,
                                cperf: model.cperf,
                                inter_bytes: bytes,
                            },
                        );
                        lifted = true;
                    }
                    _ => remarks.push(Remark::OutOfReach {
                        cluster: params.name.clone(),
                        bottleneck: model.bottleneck,
                        kind,
                        needed,
                        largest: MAX_TASKS_PER_UNIT,
                    }),
                }
            }
        }
        let rows = grain_table(input, c, &selected[c]);
        let below_threshold = worst.efficiencies[k] < threshold || worst.tasks[k] == 0;
        if !model.is_computation_bound() {
            if let Some(row) = rows.iter().find(|r| r.bottleneck == Bottleneck::Compute) {
                push(
                    AdviceKind::Granularity,
                    AdviceValue::Count(row.grain),
                    AdviceEffect::Grain {
                        reason: GrainReason::ComputationBound,
                        row: row.clone(),
                    },
                );
                lifted = true;
            }
        } else if below_threshold {
            let share = worst.tasks[k] as f64 / app.tasks as f64;
            let fits = |row: &&GrainRow| {
                let Some(candidate) = candidate_application(input, row.grain) else {
                    return false;
                };
                let share_workload = share * candidate.workload();
                minimum_workload(
                    row.t_up,
                    row.t_end_worst,
                    row.perf_ste,
                    row.cperf,
                    threshold,
                )
                .is_some_and(|minimum| minimum <= share_workload)
            };
            if let Some(row) = rows.iter().rev().find(fits) {
                push(
                    AdviceKind::Granularity,
                    AdviceValue::Count(row.grain),
                    AdviceEffect::Grain {
                        reason: GrainReason::FitsShare,
                        row: row.clone(),
                    },
                );
                lifted = true;
            }
        }
        if !model.is_computation_bound() && !lifted {
            remarks.push(Remark::LinkNeeds {
                cluster: params.name.clone(),
                bottleneck: model.bottleneck,
                cperf: model.cperf,
                needs: link_needs(app, params, model),
            });
        }
        if params.external.is_some() && below_threshold && !lifted && models.len() > 1 {
            let others: Vec<&ClusterModel> = models
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, m)| *m)
                .collect();
            let without = evaluate_case(app, &others, Case::Worst);
            push(
                AdviceKind::DropCluster,
                AdviceValue::Seconds(without.makespan),
                AdviceEffect::RunWithout {
                    t_ex_worst: without.makespan,
                    efficiency_worst: without.run_efficiency,
                },
            );
        }
    }
    tuning
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_multiplier_is_the_smallest_that_reaches() {
        assert_eq!(smallest_multiplier(2.0, 1.0), Some(1));
        assert_eq!(smallest_multiplier(2.0, 2.0), Some(1));
        assert_eq!(smallest_multiplier(2.0, 4.0), Some(2));
        assert_eq!(smallest_multiplier(2.0, 4.1), Some(3));
        assert_eq!(smallest_multiplier(f64::INFINITY, 4.1), Some(1));
    }

    #[test]
    fn smallest_multiplier_beyond_any_integer_is_unreachable() {
        // 1e300 / 1e-300: no u64 reaches it (it used to saturate to 18446744073709551615)
        assert_eq!(smallest_multiplier(1e-300, 1e300), None);
        assert_eq!(smallest_multiplier(0.0, 1.0), None);
        assert_eq!(smallest_multiplier(f64::NAN, 1.0), None);
        assert_eq!(smallest_multiplier(1.0, f64::INFINITY), None);
        // 1e15 still is an integer
        assert_eq!(smallest_multiplier(1e-3, 1e12), Some(1_000_000_000_000_000));
        assert_eq!(
            results_per_inter_result_needed(1e300, 1.0, 1e-300, 1.0),
            None
        );
    }

    #[test]
    fn results_to_join_for_all_spanish_workers() {
        // cperf 21.7125e-3 tasks/s against 21,206 / 2,310,244 = 9.179e-3 per result: nr = 3
        assert_eq!(
            results_per_inter_result_needed(21.7125e-3, 1.0, 21_206.0, 2_310_244.0),
            Some(3)
        );
    }

    #[test]
    fn tasks_to_group_for_the_matrix_product() {
        // G = 400: oper = 2*400^3 - 400^2, task = 8 * 400^2 bytes, WAN in 55,245 B/s:
        // 5.5176e6 flop/s per task against 56,939,364 flop/s: nt = 11
        let oper = 2.0 * 400f64.powi(3) - 400f64.powi(2);
        assert_eq!(
            tasks_per_inter_task_needed(56_939_364.0, oper, 55_245.0, 8.0 * 400f64.powi(2)),
            Some(11)
        );
    }
}
