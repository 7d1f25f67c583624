//! Resource selection (`docs/model.md` section 3.2 step 2): which workers of which clusters
//! take part.
//!
//! `auto` chooses, over all clusters together, the selection with the smallest predicted
//! worst-case makespan whose every cluster and the whole run stay at or above the efficiency
//! threshold in the worst case; ties (makespans within a relative 1e-12) go to fewer machines.
//! Every subset of every cluster's workers is a candidate, the empty one included (the cluster
//! then takes no part), as long as at least one worker remains.
//!
//! Exhaustive search evaluates all `prod_c 2^W_c` combinations when that number is at most
//! [`ModelOptions::exhaustive_limit`](crate::params::ModelOptions) (default 65,536, that is
//! 16 workers in all). Beyond it a branch and bound over the same selections
//! (`methodology::branch_bound`) finds the same optimum and proves it, or, when its time budget
//! ([`ModelOptions::selection_budget_s`](crate::params::ModelOptions)) runs out first, reports
//! the best selection found and the remaining gap to its lower bound. The outcome says which
//! search ran.

use super::branch_bound::{branch_and_bound, Budget};
use super::error::ModelError;
use super::score::{model_of, score, Score};
use crate::cluster::ClusterModel;
use crate::params::{ModelInput, SelectionRequest};

/// How the selection was made.
#[derive(Debug, Clone, PartialEq)]
pub enum SelectionMethod {
    /// `selection = "all"`: every worker.
    All,
    /// `selection = "pinned"`: the user's workers.
    Pinned,
    /// Every combination was evaluated.
    Exhaustive {
        /// Combinations evaluated (`prod_c 2^W_c - 1`, the empty selection excluded).
        evaluated: u64,
        /// The size limit in force.
        limit: u64,
    },
    /// Branch and bound, because the combinations exceed the limit.
    BranchAndBound {
        /// Combinations an exhaustive search would have needed (`None` beyond `u64`).
        combinations: Option<u64>,
        /// The size limit in force.
        limit: u64,
        /// Selections evaluated exactly (leaves of the tree).
        evaluated: u64,
        /// Nodes of the tree visited.
        nodes: u64,
        /// Whether the whole tree was searched: the selection is optimal.
        proved_optimal: bool,
        /// `(best - bound) / best`, with `best` the worst-case makespan of the selection and
        /// `bound` a lower bound on that of every feasible selection: 0 when proved optimal;
        /// `None` when the budget ran out before any feasible selection was found.
        gap: Option<f64>,
        /// The budget in force, seconds.
        budget_s: f64,
    },
}

/// The chosen workers: per cluster the indices into its worker list (empty: the cluster takes
/// no part).
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionOutcome {
    /// Per cluster, the chosen worker indices, in increasing order.
    pub workers: Vec<Vec<usize>>,
    /// How they were chosen.
    pub method: SelectionMethod,
}

/// The best selection a search found (per-cluster worker indices) and its score.
type Found = Option<(Vec<Vec<usize>>, Score)>;

/// Section 3.2 step 2: the workers of the run, as requested (`all`, `pinned`) or searched
/// (`auto`). Fails when `auto` finds no selection that reaches the threshold.
pub fn select_workers(input: &ModelInput) -> Result<SelectionOutcome, ModelError> {
    let clusters = &input.system.clusters;
    match &input.selection {
        SelectionRequest::All => Ok(SelectionOutcome {
            workers: clusters
                .iter()
                .map(|c| (0..c.workers.len()).collect())
                .collect(),
            method: SelectionMethod::All,
        }),
        SelectionRequest::Pinned(pinned) => {
            let mut workers = pinned.clone();
            for w in &mut workers {
                w.sort_unstable();
            }
            Ok(SelectionOutcome {
                workers,
                method: SelectionMethod::Pinned,
            })
        }
        SelectionRequest::Auto => {
            let limit = input.options.exhaustive_limit;
            let combinations = clusters.iter().try_fold(1u64, |product, c| {
                u32::try_from(c.workers.len())
                    .ok()
                    .and_then(|n| 1u64.checked_shl(n).filter(|_| n < 64))
                    .and_then(|subsets| product.checked_mul(subsets))
            });
            let (best, method) = match combinations {
                Some(count) if count <= limit => {
                    let (best, evaluated) = exhaustive_search(input);
                    (best, SelectionMethod::Exhaustive { evaluated, limit })
                }
                _ => {
                    let budget_s = input.options.selection_budget_s;
                    let outcome = branch_and_bound(
                        input,
                        Budget {
                            seconds: budget_s,
                            nodes: None,
                        },
                    );
                    let gap = outcome
                        .best
                        .as_ref()
                        .filter(|(_, s)| s.feasible())
                        .map(|(_, s)| {
                            if outcome.complete {
                                0.0
                            } else {
                                ((s.makespan - outcome.bound) / s.makespan).max(0.0)
                            }
                        });
                    (
                        outcome.best,
                        SelectionMethod::BranchAndBound {
                            combinations,
                            limit,
                            evaluated: outcome.evaluated,
                            nodes: outcome.nodes,
                            proved_optimal: outcome.complete,
                            gap,
                            budget_s,
                        },
                    )
                }
            };
            let (workers, score) = best.ok_or_else(|| {
                ModelError::InvalidInput("the plan has no worker to select".into())
            })?;
            let stopped = matches!(
                method,
                SelectionMethod::BranchAndBound {
                    proved_optimal: false,
                    ..
                }
            );
            if !score.feasible() && stopped {
                return Err(ModelError::SelectionBudgetExhausted {
                    threshold: input.options.efficiency_threshold,
                    budget_s: input.options.selection_budget_s,
                    best_efficiency: score.min_efficiency,
                });
            }
            if !score.feasible() {
                return Err(ModelError::NoSelectionReachesThreshold {
                    threshold: input.options.efficiency_threshold,
                    best_efficiency: score.min_efficiency,
                });
            }
            Ok(SelectionOutcome { workers, method })
        }
    }
}

/// Every combination of per-cluster subsets; per-cluster models are computed once per subset.
fn exhaustive_search(input: &ModelInput) -> (Found, u64) {
    let clusters = &input.system.clusters;
    let subsets: Vec<Vec<(Vec<usize>, Option<ClusterModel>)>> = clusters
        .iter()
        .enumerate()
        .map(|(c, params)| {
            let n = params.workers.len();
            (0u64..1 << n)
                .map(|mask| {
                    let workers: Vec<usize> = (0..n).filter(|i| mask >> i & 1 == 1).collect();
                    let model = model_of(input, c, &workers);
                    (workers, model)
                })
                .collect()
        })
        .collect();
    let mut odometer = vec![0usize; clusters.len()];
    let mut best: Option<(Vec<usize>, Score)> = None;
    let mut evaluated = 0;
    loop {
        let models: Vec<Option<&ClusterModel>> = odometer
            .iter()
            .zip(&subsets)
            .map(|(&i, s)| s[i].1.as_ref())
            .collect();
        if let Some(s) = score(input, &models) {
            evaluated += 1;
            if best.as_ref().is_none_or(|(_, b)| s.better_than(b)) {
                best = Some((odometer.clone(), s));
            }
        }
        // advance the odometer
        let mut digit = 0;
        loop {
            if digit == odometer.len() {
                let best = best.map(|(choice, s)| {
                    let workers = choice
                        .iter()
                        .zip(&subsets)
                        .map(|(&i, s)| s[i].0.clone())
                        .collect();
                    (workers, s)
                });
                return (best, evaluated);
            }
            odometer[digit] += 1;
            if odometer[digit] < subsets[digit].len() {
                break;
            }
            odometer[digit] = 0;
            digit += 1;
        }
    }
}
