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
//! 16 workers in all). Beyond it a greedy local search runs from two starting points (every
//! worker; per cluster the fastest workers whose sum stays within the steady efficiency bound
//! (60)) and repeatedly takes the best single change (add, remove or swap one worker; swaps only
//! in clusters of at most 64 workers) until no change improves the selection, at most four moves
//! per worker. The outcome says which search ran.

use super::error::ModelError;
use super::evaluation::evaluate_case;
use crate::cluster::{Case, ClusterModel};
use crate::params::{ModelInput, SelectionRequest};

/// How the selection was made.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Greedy local search, because the combinations exceed the limit.
    Greedy {
        /// Combinations an exhaustive search would have needed (`None` beyond `u64`).
        combinations: Option<u64>,
        /// The size limit in force.
        limit: u64,
        /// Selections evaluated by the local search.
        evaluated: u64,
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

/// How good a selection is, in the order that decides: threshold shortfall, worst-case
/// makespan, number of machines.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score {
    /// `sum over clusters and run of max(0, E - efficiency_worst)`; zero when feasible.
    shortfall: f64,
    /// Worst-case multi-cluster execution time.
    makespan: f64,
    /// Workers used.
    machines: usize,
    /// The smallest worst-case efficiency (clusters and run).
    min_efficiency: f64,
}

impl Score {
    fn feasible(&self) -> bool {
        self.shortfall == 0.0
    }

    fn better_than(&self, other: &Score) -> bool {
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
/// The best selection a search found (per-cluster worker indices) and its score.
type Found = Option<(Vec<Vec<usize>>, Score)>;

fn score(input: &ModelInput, models: &[Option<&ClusterModel>]) -> Option<Score> {
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

fn model_of(input: &ModelInput, cluster: usize, workers: &[usize]) -> Option<ClusterModel> {
    let params = &input.system.clusters[cluster];
    ClusterModel::new(
        &input.application,
        params,
        &params.perfs_of(workers),
        input.options.reassign_last_task,
    )
}

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
                    let (best, evaluated) = greedy_search(input);
                    (
                        best,
                        SelectionMethod::Greedy {
                            combinations,
                            limit,
                            evaluated,
                        },
                    )
                }
            };
            let (workers, score) = best.ok_or_else(|| {
                ModelError::InvalidInput("the plan has no worker to select".into())
            })?;
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

/// Greedy local search from two starting points; see the module documentation.
fn greedy_search(input: &ModelInput) -> (Found, u64) {
    let clusters = &input.system.clusters;
    let all: Vec<Vec<usize>> = clusters
        .iter()
        .map(|c| (0..c.workers.len()).collect())
        .collect();
    let mut evaluated = 0;
    let mut best: Found = None;
    for start in [all.clone(), steady_bound_start(input)] {
        if let Some((workers, s)) = local_search(input, start, &mut evaluated) {
            if best.as_ref().is_none_or(|(_, b)| s.better_than(b)) {
                best = Some((workers, s));
            }
        }
    }
    (best, evaluated)
}

/// Per cluster, the fastest workers whose `cperf` stays within `limit / E`, where `limit` is the
/// smallest communication limit: the largest steady efficiency bound (60) reachable by keeping
/// fast machines. A cluster where even one worker exceeds it keeps its slowest worker.
fn steady_bound_start(input: &ModelInput) -> Vec<Vec<usize>> {
    let threshold = input.options.efficiency_threshold;
    input
        .system
        .clusters
        .iter()
        .enumerate()
        .map(|(c, params)| {
            let all: Vec<usize> = (0..params.workers.len()).collect();
            let Some(model) = model_of(input, c, &all) else {
                return Vec::new();
            };
            let l = model.limits;
            let ceiling = l.lan.min(l.wan_in).min(l.wan_out) / threshold;
            let mut by_speed = all;
            by_speed.sort_by(|&a, &b| params.workers[b].perf.total_cmp(&params.workers[a].perf));
            let mut chosen = Vec::new();
            let mut cperf = 0.0;
            for &i in &by_speed {
                if cperf + params.workers[i].perf <= ceiling {
                    cperf += params.workers[i].perf;
                    chosen.push(i);
                }
            }
            if chosen.is_empty() {
                chosen.extend(by_speed.last());
            }
            chosen.sort_unstable();
            chosen
        })
        .collect()
}

fn local_search(input: &ModelInput, start: Vec<Vec<usize>>, evaluated: &mut u64) -> Found {
    let clusters = &input.system.clusters;
    let mut current = start;
    let mut models: Vec<Option<ClusterModel>> = current
        .iter()
        .enumerate()
        .map(|(c, w)| model_of(input, c, w))
        .collect();
    let mut current_score = score(
        input,
        &models.iter().map(Option::as_ref).collect::<Vec<_>>(),
    );
    *evaluated += 1;
    let total_workers: usize = clusters.iter().map(|c| c.workers.len()).sum();
    // Each move strictly improves (shortfall, makespan, machines); the cap only bounds the time.
    for _ in 0..4 * total_workers.max(1) {
        let mut best_move: Option<(usize, Vec<usize>, Option<ClusterModel>, Score)> = None;
        for (c, params) in clusters.iter().enumerate() {
            for workers in neighbours(&current[c], params.workers.len()) {
                let model = model_of(input, c, &workers);
                let candidate: Vec<Option<&ClusterModel>> = models
                    .iter()
                    .enumerate()
                    .map(|(k, m)| if k == c { model.as_ref() } else { m.as_ref() })
                    .collect();
                let Some(s) = score(input, &candidate) else {
                    continue;
                };
                *evaluated += 1;
                let beats_current = current_score.is_none_or(|cs| s.better_than(&cs));
                let beats_best_move = best_move
                    .as_ref()
                    .is_none_or(|(_, _, _, b)| s.better_than(b));
                if beats_current && beats_best_move {
                    best_move = Some((c, workers, model, s));
                }
            }
        }
        let Some((c, workers, model, s)) = best_move else {
            break;
        };
        current[c] = workers;
        models[c] = model;
        current_score = Some(s);
    }
    current_score.map(|s| (current, s))
}

/// Largest cluster whose swaps the greedy search tries (swaps grow with the square of the
/// cluster's size); larger clusters get additions and removals only.
const MAX_SWAP_CLUSTER: usize = 64;

/// The selections one change away from `selected` (indices into `0..workers`): one worker
/// removed, one added, or (in clusters of at most [`MAX_SWAP_CLUSTER`] workers) one swapped for
/// an unselected one.
fn neighbours(selected: &[usize], workers: usize) -> Vec<Vec<usize>> {
    let unselected: Vec<usize> = (0..workers).filter(|i| !selected.contains(i)).collect();
    let without = |out: usize| selected.iter().copied().filter(move |&j| j != out);
    let sorted = |mut v: Vec<usize>| {
        v.sort_unstable();
        v
    };
    let removals = selected.iter().map(|&out| without(out).collect());
    let additions = unselected
        .iter()
        .map(|&inn| sorted(selected.iter().copied().chain([inn]).collect()));
    let swap_candidates = if workers <= MAX_SWAP_CLUSTER {
        &unselected[..]
    } else {
        &[]
    };
    let swaps = selected.iter().flat_map(|&out| {
        swap_candidates
            .iter()
            .map(move |&inn| sorted(without(out).chain([inn]).collect()))
    });
    removals.chain(additions).chain(swaps).collect()
}
