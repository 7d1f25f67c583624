//! Section 3.2 steps 4 to 6 for a fixed set of workers: balance, whole tasks, per-cluster and
//! multi-cluster execution time and efficiency, for the best or the worst end times.

use super::balance::{balance_workload, integer_tasks, ClusterTiming};
use crate::cluster::{Case, ClusterModel};
use crate::execution::{best_time, efficiency, multi_cluster_performance};
use crate::params::ApplicationParams;

/// The prediction of one case (best or worst end times) for the clusters taking part.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseOutcome {
    /// The real-valued balanced time `T` of (61)(94).
    pub balanced_time: f64,
    /// Whole tasks per cluster (step 5); they sum to the problem's tasks.
    pub tasks: Vec<u64>,
    /// `T_ex_c = T_up_c + w_c / perf_ste_c + T_end_c` with the whole tasks (step 6); zero for a
    /// cluster without tasks.
    pub execution_times: Vec<f64>,
    /// The multi-cluster execution time: the largest `T_ex_c`.
    pub makespan: f64,
    /// Per cluster `(w_c / cperf_c) / T_ex_multi` (its machines are held until the run ends).
    pub efficiencies: Vec<f64>,
    /// `(workload / mcperf) / T_ex_multi`, equations (6)(7), with `mcperf` over the clusters
    /// that receive tasks (a cluster without tasks is released).
    pub run_efficiency: f64,
}

/// Section 3.2 steps 4 to 6: balances the application's workload over `models` for `case`
/// ((61)(94)), hands out whole tasks, and predicts each cluster's execution time (5) and
/// efficiency, and the run's (6)(7). Without models the run has no tasks, time or efficiency
/// (zero tasks, makespan and efficiency).
pub fn evaluate_case(
    application: &ApplicationParams,
    models: &[&ClusterModel],
    case: Case,
) -> CaseOutcome {
    let oper = application.oper;
    let timings: Vec<ClusterTiming> = models
        .iter()
        .map(|m| ClusterTiming {
            perf_ste: m.perf_ste,
            t_up: m.t_up,
            t_end: m.end_time(case),
        })
        .collect();
    let units: Vec<u64> = models.iter().map(|m| m.task_unit).collect();
    let balance = balance_workload(application.workload(), &timings);
    let tasks = integer_tasks(
        application.tasks,
        oper,
        &timings,
        &units,
        &balance.workloads,
    );
    let execution_times: Vec<f64> = models
        .iter()
        .zip(&tasks)
        .map(|(m, &t)| m.execution_time(t as f64 * oper, case))
        .collect();
    let makespan = execution_times.iter().copied().fold(0.0, f64::max);
    let efficiencies = models
        .iter()
        .zip(&tasks)
        .map(|(m, &t)| efficiency(best_time(t as f64 * oper, m.cperf), makespan))
        .collect();
    let used_performance: Vec<f64> = models
        .iter()
        .zip(&tasks)
        .filter(|(_, &t)| t > 0)
        .map(|(m, _)| m.cperf)
        .collect();
    let run_efficiency = efficiency(
        best_time(
            application.workload(),
            multi_cluster_performance(&used_performance),
        ),
        makespan,
    );
    CaseOutcome {
        balanced_time: balance.time,
        tasks,
        execution_times,
        makespan,
        efficiencies,
        run_efficiency,
    }
}
