//! How good a selection of workers is: the order every search ranks selections by (threshold
//! shortfall, worst-case makespan, machines), shared by the exhaustive search and the branch
//! and bound.

use super::evaluation::evaluate_case;
use crate::cluster::{Case, ClusterModel};
use crate::params::ModelInput;

/// How good a selection is, in the order that decides: threshold shortfall, worst-case
/// makespan, number of machines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Score {
    /// `sum over clusters and run of max(0, E - efficiency_worst)`; zero when feasible.
    pub(super) shortfall: f64,
    /// Worst-case multi-cluster execution time.
    pub(super) makespan: f64,
    /// Workers used.
    pub(super) machines: usize,
    /// The smallest worst-case efficiency (clusters and run).
    pub(super) min_efficiency: f64,
}

impl Score {
    pub(super) fn feasible(&self) -> bool {
        self.shortfall == 0.0
    }

    pub(super) fn better_than(&self, other: &Score) -> bool {
        if self.shortfall != other.shortfall {
            return self.shortfall < other.shortfall;
        }
        let tolerance = 1e-12 * self.makespan.max(other.makespan);
        if (self.makespan - other.makespan).abs() > tolerance {
            return self.makespan < other.makespan;
        }
        self.machines < other.machines
    }
}

/// Scores a selection given its per-cluster models (`None`: the cluster takes no part).
pub(super) fn score(input: &ModelInput, models: &[Option<&ClusterModel>]) -> Option<Score> {
    let active: Vec<&ClusterModel> = models.iter().flatten().copied().collect();
    if active.is_empty() {
        return None;
    }
    let threshold = input.options.efficiency_threshold;
    let outcome = evaluate_case(&input.application, &active, Case::Worst);
    let efficiencies = outcome
        .efficiencies
        .iter()
        .chain(std::iter::once(&outcome.run_efficiency));
    let shortfall = efficiencies
        .clone()
        .map(|&e| (threshold - e).max(0.0))
        .sum();
    let min_efficiency = efficiencies.copied().fold(f64::INFINITY, f64::min);
    Some(Score {
        shortfall,
        makespan: outcome.makespan,
        machines: active.iter().map(|m| m.workers).sum(),
        min_efficiency,
    })
}

pub(super) fn model_of(
    input: &ModelInput,
    cluster: usize,
    workers: &[usize],
) -> Option<ClusterModel> {
    let params = &input.system.clusters[cluster];
    ClusterModel::new(
        &input.application,
        params,
        &params.perfs_of(workers, &input.application, &input.options.terms),
        input.options.cluster_options(),
    )
}
