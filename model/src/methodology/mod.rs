//! The methodology (`docs/model.md` section 3): local cluster analysis, multi-cluster analysis
//! (selection, balance, whole tasks, execution times and efficiencies) and tuning advice.
//!
//! [`predict`] runs it all on a [`ModelInput`] and returns a [`Prediction`].

pub mod advice;
pub mod balance;
mod branch_bound;
pub mod error;
pub mod evaluation;
mod score;
pub mod selection;
pub mod threshold;

pub use self::error::ModelError;
pub use crate::params::MAX_TASKS_PER_UNIT;

use self::advice::{advise, grain_table, link_needs, Advice, GrainRow, LinkNeed, Remark};
use self::evaluation::{evaluate_case, CaseOutcome};
use self::selection::{select_workers, SelectionOutcome};
use self::threshold::{minimum_tasks, minimum_workload};
use super::cluster::{Case, ClusterModel};
use super::execution::{best_time, multi_cluster_performance};
use super::limits::{Bottleneck, PerformanceLimits};
use super::main_path::{with_main_path, MainPathLoad};
use super::params::{
    ApplicationParams, ClusterParams, ModelInput, SelectionRequest, MAX_EXHAUSTIVE_LIMIT,
};
use super::range::check_working_range;

/// The prediction for one cluster taking part (the `clusters` entries of `hmw predict --json`).
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterPrediction {
    /// Cluster name.
    pub name: String,
    /// Hosts of the workers used.
    pub workers: Vec<String>,
    /// `cperf` (3).
    pub cperf: f64,
    /// `perf_ste` (26)/(32)/(36)(125), or the network's (127)(128) with `contention = "mva"`.
    pub perf_ste: f64,
    /// The closed network's steady performance (127)(128), shown beside the bottleneck's
    /// (`limits.steady_performance()`); `None` when the terms leave it out (the thesis's
    /// form).
    pub network: Option<f64>,
    /// The argument attaining `perf_ste`.
    pub bottleneck: Bottleneck,
    /// All arguments of the steady-performance `min`.
    pub limits: PerformanceLimits,
    /// `T_up`.
    pub t_up: f64,
    /// Best end time.
    pub t_end_best: f64,
    /// Worst end time.
    pub t_end_worst: f64,
    /// Minimum tasks for the threshold (58); `None` when no workload reaches it (or no number
    /// of tasks up to `u64::MAX`).
    pub min_tasks: Option<u64>,
    /// Whole tasks, best-case balance.
    pub tasks_best: u64,
    /// Whole tasks, worst-case balance.
    pub tasks_worst: u64,
    /// `T_ex_c`, best case (zero without tasks).
    pub t_ex_best: f64,
    /// `T_ex_c`, worst case (zero without tasks).
    pub t_ex_worst: f64,
    /// `(w_c / cperf_c) / T_ex_multi`, best case.
    pub efficiency_best: f64,
    /// `(w_c / cperf_c) / T_ex_multi`, worst case.
    pub efficiency_worst: f64,
    /// For a communication-bound cluster, what each link below `cperf` would need to stop
    /// limiting it (section 3.3); empty when computation bound.
    pub needs: Vec<LinkNeed>,
}

/// The prediction for the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPrediction {
    /// `T_best` (6) over the clusters taking part: the time if every worker computed all along.
    pub t_best: f64,
    /// Multi-cluster execution time, best case.
    pub t_ex_best: f64,
    /// Multi-cluster execution time, worst case.
    pub t_ex_worst: f64,
    /// `(workload / mcperf) / T_ex_multi`, best case.
    pub efficiency_best: f64,
    /// `(workload / mcperf) / T_ex_multi`, worst case.
    pub efficiency_worst: f64,
    /// Main cluster alone (all its workers) over this run, best case; `None` without main workers.
    pub speedup_best: Option<f64>,
    /// Main cluster alone (all its workers) over this run, worst case; `None` without main workers.
    pub speedup_worst: Option<f64>,
}

/// Everything `hmw predict` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// Local cluster analysis (3.1): the main cluster alone with all its workers running the
    /// whole problem; `None` when the main cluster has no workers.
    pub local: Option<ClusterPrediction>,
    /// The workers chosen and how.
    pub selection: SelectionOutcome,
    /// Names of the clusters with workers of which the selection keeps none.
    pub left_out: Vec<String>,
    /// Per cluster taking part, in plan order.
    pub clusters: Vec<ClusterPrediction>,
    /// The whole run.
    pub run: RunPrediction,
    /// Tuning advice (3.3), of the four kinds.
    pub advice: Vec<Advice>,
    /// Tuning remarks (3.3) that are no advice of those kinds: a multiplier out of reach, what
    /// the links of a communication-bound cluster no advice lifts would need.
    pub remarks: Vec<Remark>,
    /// The clusters taking part at every candidate grain (empty without candidates).
    pub grains: Vec<GrainRow>,
    /// What every cluster asks of the main master and the main cluster's CMs (177)(178);
    /// `None` when their costs are not known or the term is off.
    pub main_path: Option<MainPathLoad>,
}

/// Section 3, the whole methodology on `input`: resource selection (3.2 step 2), balance and
/// whole tasks (3.2 steps 4-5, (61)(94)), per-cluster and run predictions (3.2 step 6, (5)-(7)),
/// the local cluster analysis (3.1, (58)(59)) and tuning advice (3.3), every step on the
/// links' rates a tree's shared links leave each cluster ((173)-(174),
/// [`crate::shared_links::with_shared_links`]) and with each cluster's share of the main
/// cluster's path ((177)-(178), [`crate::main_path::with_main_path`]). Fails on an input that
/// breaks the model's invariants or leaves its working range ([`check_working_range`]), or when
/// `auto` finds no selection that reaches the threshold.
pub fn predict(input: &ModelInput) -> Result<Prediction, ModelError> {
    validate(input)?;
    check_working_range(input)?;
    let shared = crate::shared_links::with_shared_links(input);
    let (path_shared, main_path) =
        with_main_path(shared.as_ref()).map_err(|e| ModelError::InvalidInput(e.to_string()))?;
    let input = path_shared.as_ref();
    let threshold = input.options.efficiency_threshold;
    let reassign = input.options.cluster_options();
    let app = &input.application;
    let clusters = &input.system.clusters;

    let selection = select_workers(input)?;
    let mut active = Vec::new();
    let mut models = Vec::new();
    let mut left_out = Vec::new();
    for (c, params) in clusters.iter().enumerate() {
        let perfs = params.perfs_of(&selection.workers[c], app, &input.options.terms);
        match ClusterModel::new(app, params, &perfs, reassign) {
            Some(model) => {
                let model = model.with_network(app, params, &perfs, reassign);
                active.push(c);
                models.push(model);
            }
            None if !params.workers.is_empty() => left_out.push(params.name.clone()),
            None => {}
        }
    }
    let model_refs: Vec<&ClusterModel> = models.iter().collect();
    let best = evaluate_case(app, &model_refs, Case::Best);
    let worst = evaluate_case(app, &model_refs, Case::Worst);
    let cluster_predictions: Vec<ClusterPrediction> = active
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let hosts = selection.workers[c]
                .iter()
                .map(|&i| clusters[c].workers[i].host.clone())
                .collect();
            cluster_prediction(
                &clusters[c],
                hosts,
                &models[k],
                app,
                threshold,
                k,
                &best,
                &worst,
            )
        })
        .collect();

    let main = &clusters[0];
    let all_main: Vec<usize> = (0..main.workers.len()).collect();
    let main_perfs = main.perfs_of(&all_main, app, &input.options.terms);
    let local = ClusterModel::new(app, main, &main_perfs, reassign).map(|model| {
        let model = model.with_network(app, main, &main_perfs, reassign);
        let alone_best = evaluate_case(app, &[&model], Case::Best);
        let alone_worst = evaluate_case(app, &[&model], Case::Worst);
        let hosts = main.workers.iter().map(|w| w.host.clone()).collect();
        cluster_prediction(
            main,
            hosts,
            &model,
            app,
            threshold,
            0,
            &alone_best,
            &alone_worst,
        )
    });
    let performances: Vec<f64> = models.iter().map(|m| m.cperf).collect();
    let run = RunPrediction {
        t_best: best_time(app.workload(), multi_cluster_performance(&performances)),
        t_ex_best: best.makespan,
        t_ex_worst: worst.makespan,
        efficiency_best: best.run_efficiency,
        efficiency_worst: worst.run_efficiency,
        speedup_best: local.as_ref().map(|l| l.t_ex_best / best.makespan),
        speedup_worst: local.as_ref().map(|l| l.t_ex_worst / worst.makespan),
    };
    let tuning = advise(input, &selection.workers, &active, &model_refs, &worst);
    let grains = active
        .iter()
        .flat_map(|&c| grain_table(input, c, &selection.workers[c]))
        .collect();
    Ok(Prediction {
        local,
        selection,
        left_out,
        clusters: cluster_predictions,
        run,
        advice: tuning.advice,
        remarks: tuning.remarks,
        grains,
        main_path,
    })
}

#[allow(clippy::too_many_arguments)]
fn cluster_prediction(
    params: &ClusterParams,
    workers: Vec<String>,
    model: &ClusterModel,
    app: &ApplicationParams,
    threshold: f64,
    k: usize,
    best: &CaseOutcome,
    worst: &CaseOutcome,
) -> ClusterPrediction {
    ClusterPrediction {
        name: params.name.clone(),
        workers,
        cperf: model.cperf,
        perf_ste: model.perf_ste,
        network: model.network,
        bottleneck: model.bottleneck,
        limits: model.limits,
        t_up: model.t_up,
        t_end_best: model.t_end_best,
        t_end_worst: model.t_end_worst,
        min_tasks: minimum_workload(
            model.t_up,
            model.t_end_worst,
            model.perf_ste,
            model.cperf,
            threshold,
        )
        .and_then(|w| minimum_tasks(w, app.oper)),
        tasks_best: best.tasks[k],
        tasks_worst: worst.tasks[k],
        t_ex_best: best.execution_times[k],
        t_ex_worst: worst.execution_times[k],
        efficiency_best: best.efficiencies[k],
        efficiency_worst: worst.efficiencies[k],
        needs: link_needs(app, params, model),
    }
}

fn positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

fn non_negative(value: f64) -> bool {
    value.is_finite() && value >= 0.0
}

/// Checks the invariants the model relies on; the plan loader guarantees them with messages
/// that name the plan's keys, this catches other callers' mistakes.
fn validate(input: &ModelInput) -> Result<(), ModelError> {
    let invalid = |m: String| Err(ModelError::InvalidInput(m));
    let threshold = input.options.efficiency_threshold;
    if !(0.0..1.0).contains(&threshold) {
        return invalid(format!("efficiency threshold {threshold} is not in [0, 1)"));
    }
    if !(1..=MAX_EXHAUSTIVE_LIMIT).contains(&input.options.exhaustive_limit) {
        return invalid(format!(
            "exhaustive limit {} is not between 1 and {MAX_EXHAUSTIVE_LIMIT}",
            input.options.exhaustive_limit
        ));
    }
    let budget = input.options.selection_budget_s;
    if !(budget.is_finite() && budget > 0.0) {
        return invalid(format!(
            "selection budget {budget} s is not positive and finite"
        ));
    }
    let applications = std::iter::once(("the application".to_string(), &input.application)).chain(
        input
            .grains
            .iter()
            .map(|g| (format!("grain {}", g.grain), &g.application)),
    );
    for (what, app) in applications {
        if app.tasks == 0 || !positive(app.oper) {
            return invalid(format!("{what} needs at least one task and oper > 0"));
        }
        let sizes = [
            Some(app.task_bytes),
            Some(app.result_bytes),
            app.task_bytes_inter,
            app.result_bytes_inter,
        ];
        if !sizes.iter().flatten().all(|&s| non_negative(s)) {
            return invalid(format!("{what} has a negative or non-finite size"));
        }
    }
    let clusters = &input.system.clusters;
    if clusters.is_empty() {
        return invalid("no cluster".into());
    }
    for (c, cluster) in clusters.iter().enumerate() {
        let name = &cluster.name;
        if (c == 0) != cluster.external.is_none() {
            return invalid(format!(
                "cluster `{name}`: the first cluster must be the main one and only it has no WAN link"
            ));
        }
        if !positive(cluster.lan_bytes_per_s) {
            return invalid(format!("cluster `{name}`: LAN throughput must be positive"));
        }
        if let Some(link) = &cluster.external {
            if !positive(link.wan_in_bytes_per_s) || !positive(link.wan_out_bytes_per_s) {
                return invalid(format!(
                    "cluster `{name}`: WAN throughputs must be positive"
                ));
            }
            let units = [link.tasks_per_inter_task, link.results_per_inter_result];
            if !units.iter().all(|u| (1..=MAX_TASKS_PER_UNIT).contains(u)) {
                return invalid(format!(
                    "cluster `{name}`: nt and nr must be between 1 and {MAX_TASKS_PER_UNIT}"
                ));
            }
        }
        if cluster.workers.iter().any(|w| !positive(w.perf)) {
            return invalid(format!(
                "cluster `{name}`: worker performance must be positive"
            ));
        }
    }
    if clusters.iter().all(|c| c.workers.is_empty()) {
        return invalid("no worker in any cluster".into());
    }
    if let SelectionRequest::Pinned(pinned) = &input.selection {
        if pinned.len() != clusters.len() {
            return invalid("pinned selection: one worker list per cluster expected".into());
        }
        for (workers, cluster) in pinned.iter().zip(clusters) {
            let mut seen = vec![false; cluster.workers.len()];
            for &i in workers {
                if i >= seen.len() || std::mem::replace(&mut seen[i], true) {
                    return invalid(format!(
                        "cluster `{}`: pinned worker index {i} is out of range or repeated",
                        cluster.name
                    ));
                }
            }
        }
        if pinned.iter().all(Vec::is_empty) {
            return invalid("pinned selection has no worker".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
