//! Exact resource selection by branch and bound (`docs/model.md`, section 3, "Selection by
//! branch and bound"): the same objective as the exhaustive search — the smallest worst-case
//! makespan whose every cluster and the whole run keep the threshold, ties to fewer machines —
//! over every subset of every cluster's workers, with subtrees cut only by lower bounds that
//! hold for every selection inside them.
//!
//! The tree: clusters one after the other; inside a cluster the workers from the fastest to the
//! slowest, each kept (first) or left out. A leaf is evaluated exactly as the exhaustive search
//! does (`evaluate_case`, worst case). A node is cut when a lower bound on the worst-case
//! makespan of every selection below it shows none can beat the best feasible one found
//! (makespan lower by more than a relative 1e-12, or within it with fewer machines), or when
//! one of its clusters can no longer reach the threshold.
//!
//! The bounds (each proved next to its code). At a node, each cluster's completions are grouped
//! by their final number of workers `k`, one optimistic point per `k`: `perf_ste` at most, `T_up`
//! exactly, `T_end` at least, `cperf / perf_ste` at least what any completion has.
//! - **B3, threshold as a time** ([`threshold_time`]). A cluster taking part with efficiency at
//!   least `E` needs `w_c >= E * M * cperf_c` while `w_c <= perf_ste_c * (M - T_up_c -
//!   T_end_c)`, so `M >= (T_up + T_end) / (1 - E * cperf / perf_ste)` (the minimum workload
//!   (58) as a time), and no completion is feasible once `E * cperf >= perf_ste` (60).
//! - **B1, whole tasks by a makespan** ([`envelope_time`]). A cluster given `n_c` tasks that
//!   ends by `M` has `n_c <= floor(perf_ste * (M - T_up - T_end) / oper)` ((5), (31)); the `n_c`
//!   sum to `tasks`, so `M` is at least the smallest `M` at which the clusters' best points
//!   (those whose B3 time is at most `M`) can finish every task. Without the floor it is the
//!   balanced time (61)(94) of the points; with exact points it is the smallest whole-task
//!   makespan, so equal selections give equal bounds (ties are exact).
//! - **B4, machines for a tie** ([`Search::machines_needed`]). A selection that beats the best
//!   ends by `M* = best * (1 + 2e-12)`; the fewest workers whose capacities at `M*` reach
//!   `tasks` bound its machines, so a node tying the best with no fewer machines is cut.
//!
//! Workers of equal perf are interchangeable, so only prefixes of each run of equal workers
//! are searched.

use std::time::Instant;

use super::score::{model_of, score, Score};
use crate::cluster::ClusterModel;
use crate::external;
use crate::local;
use crate::params::ModelInput;

/// Relative slack applied to the bounds, far above the rounding of the sums they are computed
/// from (in another order than the model's) and far below the 1e-12 tie tolerance.
const SLACK: f64 = 1e-13;

/// When the search stops early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Budget {
    /// Wall-clock seconds.
    pub(super) seconds: f64,
    /// Nodes of the tree (`None`: no limit).
    pub(super) nodes: Option<u64>,
}

/// What the search found.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    /// The best selection (per cluster, worker indices in increasing order) and its score:
    /// the best feasible one, or without any the one closest to the threshold that was seen.
    pub(super) best: Option<(Vec<Vec<usize>>, Score)>,
    /// Leaves evaluated exactly.
    pub(super) evaluated: u64,
    /// Nodes visited.
    pub(super) nodes: u64,
    /// Whether the whole tree was searched (the result is optimal).
    pub(super) complete: bool,
    /// A lower bound on the worst-case makespan of every feasible selection (the best's own
    /// makespan when complete).
    pub(super) bound: f64,
}

/// One optimistic point of a cluster: `perf_ste` at most `p`, `T_up` at least `t_up`, `T_end`
/// at least `t_end`, and, taking part in a feasible selection, a makespan at least `m_min`
/// (B3).
#[derive(Debug, Clone, Copy)]
struct Point {
    p: f64,
    t_up: f64,
    t_end: f64,
    m_min: f64,
}

/// B3 for a cluster with overhead `T_up + T_end >= overhead` and `cperf / perf_ste >= ratio`:
/// taking part with efficiency at least `threshold`, its makespan is at least
/// `overhead / (1 - threshold * ratio)`, and it cannot take part once `threshold * ratio >= 1`.
///
/// Proof: efficiency `(w_c / cperf_c) / M >= E > 0` needs `w_c >= E * M * cperf_c > 0`, and a
/// cluster with `w_c > 0` ends by the makespan: `T_up + w_c / perf_ste + T_end <= M` ((5),
/// (31)), so `w_c <= perf_ste * (M - T_up - T_end)`. Together: `M * (1 - E * cperf /
/// perf_ste) >= T_up + T_end` — the minimum workload (58) as a time; with `E * cperf >=
/// perf_ste` (the steady bound (60) below `E`) no `M` qualifies.
fn threshold_time(threshold: f64, overhead: f64, ratio: f64) -> f64 {
    if threshold <= 0.0 {
        return 0.0;
    }
    let share = threshold * ratio * (1.0 - SLACK);
    if share >= 1.0 {
        f64::INFINITY
    } else {
        overhead / (1.0 - threshold * ratio) * (1.0 - SLACK)
    }
}

/// A cluster's data, workers sorted from the fastest.
struct Cluster {
    order: Vec<usize>,
    perf: Vec<f64>,
    /// `prefix_perf[i] = perf[0] + ... + perf[i-1]`.
    prefix_perf: Vec<f64>,
    /// `prefix_inv[i] = oper/perf[0] + ... + oper/perf[i-1]`.
    prefix_inv: Vec<f64>,
    /// The smallest communication limit of (26)/(32)/(36): `perf_ste = min(cperf, limit)`.
    limit: f64,
    /// `T_up` with `k` workers, (12)/(18)/(21) (index 0 unused).
    t_up: Vec<f64>,
    /// Communication-bound worst end with `k` workers, (44)/(51)/(56).
    comm_end: Vec<f64>,
    external: bool,
    /// `s_result / tput_lan` (local) or `tc_result_sc` (external).
    tc_sc: f64,
    /// `tc_result_smm` (external; 0 for the main cluster).
    tc_smm: f64,
    /// The WAN's round trip (96)(97) (external, when counted; 0 for the main cluster).
    rtt: f64,
    /// Whether the worst end is (43)/(50): with reassignment, the main cluster, or an external
    /// one when the sub-master's tail (49) is not counted (`ClusterModel::external`).
    reassign: bool,
    /// Tasks a worker holds, (99).
    worker_buffers: u32,
    oper: f64,
    threshold: f64,
    /// Optimistic points of the cluster before any decision: `free_by_count[k - 1]` for `k`
    /// workers.
    free_by_count: Vec<Point>,
}

impl Cluster {
    /// The computation-bound worst end (39)/(43)/(49)/(50) and (97) for a tail term `tail` (the
    /// `(oper/min perf)(W-1)/W` or `(1/W) sum_{i != fastest} oper/perf_i` part), with the same
    /// operations in the same order as the model, so that a smaller tail gives a smaller or
    /// equal end (floating-point addition is monotone).
    fn comp_end(&self, tail: f64) -> f64 {
        match (self.external, self.reassign) {
            (false, true) => self.tc_sc + tail,
            (false, false) => tail + self.tc_sc,
            (true, true) => {
                external::end_time_with_latency(self.tc_sc + tail + self.tc_smm, self.rtt)
            }
            (true, false) => {
                external::end_time_with_latency(tail + self.tc_sc + self.tc_smm, self.rtt)
            }
        }
    }

    /// The optimistic points of the completions of a partial choice: `m` workers chosen among
    /// the `j` fastest, with `cperf` their sum, `inv_rest` the sum of `oper/perf` over them but
    /// the fastest, `slowest` the slowest chosen perf. One point per number `a` of workers
    /// still to add from positions `j..` (a completion adding `a` workers has `perf_ste <= p`,
    /// `T_up = t_up`, `T_end >= t_end`).
    fn points(&self, j: usize, m: usize, cperf: f64, inv_rest: f64, slowest: f64) -> Vec<Point> {
        let n = self.perf.len();
        let mut points = Vec::with_capacity(n - j + 1);
        for a in 0..=n - j {
            let k = m + a;
            if k == 0 {
                continue;
            }
            // The `a` added workers come from positions j..n (sorted by decreasing perf): their
            // perf sum is at most the `a` fastest ones' and at least the `a` slowest ones'.
            let most = cperf + (self.prefix_perf[j + a] - self.prefix_perf[j]);
            let least = cperf + (self.prefix_perf[n] - self.prefix_perf[n - a]);
            let p = self.limit.min(most * (1.0 + SLACK));
            let tail = if self.reassign {
                // (43)/(50): (1/k) sum over all but the fastest of oper/perf. With m >= 1 the
                // fastest is the first chosen (every later one is no faster); the added terms
                // are at least the a smallest oper/perf among positions j.. . With m == 0 the
                // fastest is the first added; the other a-1 are at positions j+1.. at best.
                let added = if m >= 1 {
                    self.prefix_inv[j + a] - self.prefix_inv[j]
                } else {
                    self.prefix_inv[j + a] - self.prefix_inv[j + 1]
                };
                (inv_rest + added) / k as f64
            } else {
                // (39)/(49) with the buffers (99): b (oper/min perf)(W-1)/W. The slowest added
                // worker sits at position j+a-1 or later, so its perf is at most perf[j+a-1].
                let min_perf = if a == 0 {
                    slowest
                } else {
                    slowest.min(self.perf[j + a - 1])
                };
                self.worker_buffers.max(1) as f64
                    * ((self.oper / min_perf) * (k as f64 - 1.0) / k as f64)
            };
            let mut t_end = self.comp_end(tail * (1.0 - SLACK));
            // A completion whose cperf exceeds the limit is communication bound and uses the
            // larger of the two worst ends (section 2, "worst end used").
            if least * (1.0 - SLACK) > self.limit {
                t_end = t_end.max(self.comm_end[k]);
            }
            // every completion here has cperf >= least and perf_ste <= min(cperf, limit)
            let ratio = (least * (1.0 - SLACK) / self.limit).max(1.0);
            points.push(Point {
                p,
                t_up: self.t_up[k],
                t_end,
                m_min: threshold_time(self.threshold, self.t_up[k] + t_end, ratio),
            });
        }
        points
    }
}

fn build_cluster(input: &ModelInput, c: usize) -> Cluster {
    let params = &input.system.clusters[c];
    let app = &input.application;
    let oper = app.oper;
    let n = params.workers.len();
    let mut order: Vec<usize> = (0..n).collect();
    // Each worker's performance as the model reads it: in a run (100), when counted.
    let options = input.options.cluster_options();
    let terms = &options.terms;
    let run_perf: Vec<f64> = params
        .workers
        .iter()
        .map(|w| w.perf_in_model(app, terms))
        .collect();
    order.sort_by(|&a, &b| run_perf[b].total_cmp(&run_perf[a]).then(a.cmp(&b)));
    let perf: Vec<f64> = order.iter().map(|&i| run_perf[i]).collect();
    let mut prefix_perf = vec![0.0; n + 1];
    let mut prefix_inv = vec![0.0; n + 1];
    for i in 0..n {
        prefix_perf[i + 1] = prefix_perf[i] + perf[i];
        prefix_inv[i + 1] = prefix_inv[i] + oper / perf[i];
    }
    let mut t_up = vec![0.0; n + 1];
    let mut comm_end = vec![0.0; n + 1];
    let mut limit = f64::INFINITY;
    let lan = params.lan_bytes_per_s;
    let (external, tc_sc, tc_smm, rtt) = match &params.external {
        None => (false, app.result_bytes / lan, 0.0, 0.0),
        Some(link) => (
            true,
            external::sub_cluster_transfer_time(app.result_bytes, lan),
            external::inter_result_transfer_time(
                app.inter_result_bytes(link.results_per_inter_result),
                link.wan_out_bytes_per_s,
            ),
            if terms.wan_latency {
                link.wan_rtt_s
            } else {
                0.0
            },
        ),
    };
    for k in 1..=n {
        // T_up depends on k only: the model's own value with the k fastest workers.
        if let Some(model) = model_of(input, c, &order[..k]) {
            t_up[k] = model.t_up;
            let l = model.limits;
            limit = l.lan.min(l.master).min(l.cm).min(l.wan_in).min(l.wan_out);
        }
        comm_end[k] = match &params.external {
            None => local::worst_end_time_communication_bound(app.result_bytes, lan, k),
            Some(link) => external::end_time_with_latency(
                external::worst_end_time_communication_bound(
                    tc_sc,
                    tc_smm,
                    k,
                    link.results_per_inter_result,
                ),
                rtt,
            ),
        };
    }
    let mut cluster = Cluster {
        order,
        perf,
        prefix_perf,
        prefix_inv,
        limit,
        t_up,
        comm_end,
        external,
        tc_sc,
        tc_smm,
        rtt,
        reassign: options.reassign_last_task && (!external || !terms.submaster_tail),
        worker_buffers: options.end_buffers(),
        oper,
        threshold: input.options.efficiency_threshold,
        free_by_count: Vec::new(),
    };
    cluster.free_by_count = cluster.points(0, 0, 0.0, 0.0, f64::INFINITY);
    cluster
}

/// At most how many tasks a cluster at point `q` finishes by `t`: `floor(p (t - T_up - T_end) /
/// oper)`, and none when that is negative ((5), (31)); a relative 1e-13 more time covers the
/// rounding of the model's own sums.
fn tasks_by(q: &Point, t: f64, oper: f64) -> f64 {
    if q.m_min > t * (1.0 + SLACK) {
        return 0.0;
    }
    (q.p * (t * (1.0 + SLACK) - q.t_up - q.t_end) / oper)
        .floor()
        .max(0.0)
}

/// The capacity of B1 at time `t`: `sum_c max_{points q of c} floor(q.p * (t - q.t_up -
/// q.t_end) / oper)^+`.
fn capacity(oper: f64, groups: &[&[Point]], t: f64) -> f64 {
    let mut total = 0.0;
    for g in groups {
        // the floor of the largest is the largest floor
        let most = g
            .iter()
            .filter(|q| q.m_min <= t)
            .map(|q| q.p * (t - q.t_up - q.t_end))
            .fold(0.0, f64::max);
        total += (most / oper).floor();
    }
    total
}

/// B1: the smallest `M` with `sum_c max_{points q of c} floor(q.p * (M - q.t_up - q.t_end) /
/// oper)^+ >= tasks`, a lower bound on the worst-case makespan of every selection whose
/// clusters each have a point dominating them.
///
/// Proof: in the selection's whole-task assignment (step 5) with makespan `M`, a cluster given
/// `n_c > 0` tasks ends at `T_c = T_up_c + n_c * oper / perf_ste_c + T_end_c <= M` ((5), (31)),
/// so `n_c <= floor(perf_ste_c * (M - T_up_c - T_end_c) / oper)`, and that is at most the same
/// expression at the cluster's dominating point; the `n_c` sum to `tasks`. So the capacity at
/// `M` reaches `tasks`, and since it does not decrease with `M`, `M` is at least the smallest
/// such `M`. (With one point per cluster equal to the cluster's own values this is the
/// smallest makespan of any whole-task assignment, so equal selections give equal bounds.)
/// Without the floor it is the balanced time (61)(94) of the points, which the floor only
/// raises.
fn envelope_time(tasks: f64, oper: f64, groups: &[&[Point]]) -> f64 {
    let capacity = |t: f64| capacity(oper, groups, t);
    // An upper end: any single point's time to do it all, once it counts (from `m_min`).
    let mut high = f64::INFINITY;
    for g in groups {
        for q in g.iter() {
            high = high.min((q.t_up + q.t_end + tasks * oper / q.p).max(q.m_min));
        }
    }
    // The floor may leave that a task short by rounding: step up, doubling the step, so that
    // even a far-off end is reached in a few dozen steps.
    let mut step = 1e-9;
    while high.is_finite() && capacity(high) < tasks {
        high *= 1.0 + step;
        step *= 2.0;
    }
    if !high.is_finite() {
        return high;
    }
    let mut low = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (low + high);
        if mid <= low || mid >= high || high - low <= 1e-15 * high {
            break;
        }
        if capacity(mid) >= tasks {
            high = mid;
        } else {
            low = mid;
        }
    }
    low
}

struct Search<'a> {
    input: &'a ModelInput,
    clusters: Vec<Cluster>,
    threshold: f64,
    started: Instant,
    budget: Budget,
    aborted: bool,
    nodes: u64,
    evaluated: u64,
    /// Best feasible: chosen sorted positions per cluster and score.
    best: Option<(Vec<Vec<usize>>, Score)>,
    /// Closest infeasible seen (for the error message when nothing is feasible).
    closest: Option<(Vec<Vec<usize>>, Score)>,
    /// Smallest lower bound over the subtrees left unexplored after the budget ran out.
    open_bound: f64,
    /// `M*`: the largest makespan that can still beat the best (see [`Search::set_best`]).
    star: f64,
    /// `suffix[c][K]`: at most how many tasks clusters `c..` can finish by `star` with `K`
    /// workers in all (from their points; B4).
    suffix: Vec<Vec<f64>>,
    /// Decided clusters' models.
    models: Vec<Option<ClusterModel>>,
    /// Chosen positions (into `order`) of every cluster so far.
    chosen: Vec<Vec<usize>>,
}

/// The state of the cluster being decided.
#[derive(Clone, Copy)]
struct Partial {
    c: usize,
    j: usize,
    cperf: f64,
    inv_rest: f64,
    slowest: f64,
}

impl Search<'_> {
    fn machines_so_far(&self, partial: &Partial) -> usize {
        self.chosen[..=partial.c].iter().map(Vec::len).sum()
    }

    /// A lower bound on the worst-case makespan of every feasible completion of `partial`
    /// (infinite when none is feasible).
    ///
    /// With `exact` false and a best found, B1 is only probed at the two makespans the cut
    /// tests (a tie with the best and strictly above it, [`Search::cut`]): the value returned
    /// is then the largest probe below B1 (0 when none), still a lower bound, and enough to
    /// decide the cut.
    fn lower_bound(&self, partial: &Partial, exact: bool) -> f64 {
        let current = &self.clusters[partial.c];
        let m = self.chosen[partial.c].len();
        let current_points = current.points(
            partial.j,
            m,
            partial.cperf,
            partial.inv_rest,
            partial.slowest,
        );
        // B3 for the clusters surely taking part.
        let mut bound: f64 = 0.0;
        if self.threshold > 0.0 {
            for model in self.models.iter().flatten() {
                let ratio = self.threshold * model.cperf / model.perf_ste;
                if ratio * (1.0 - SLACK) >= 1.0 {
                    return f64::INFINITY;
                }
                bound = bound.max((model.t_up + model.t_end_worst) / (1.0 - ratio) * (1.0 - SLACK));
            }
            if m > 0 {
                // Every completion has cperf >= partial.cperf and perf_ste <= limit, cperf:
                // cperf / perf_ste >= max(1, partial.cperf / limit).
                let ratio = self.threshold * (partial.cperf / current.limit).max(1.0);
                if ratio * (1.0 - SLACK) >= 1.0 {
                    return f64::INFINITY;
                }
                let overhead = current_points
                    .iter()
                    .map(|q| q.t_up + q.t_end)
                    .fold(f64::INFINITY, f64::min);
                bound = bound.max(overhead / (1.0 - ratio) * (1.0 - SLACK));
            }
        }
        // B1.
        let decided: Vec<[Point; 1]> = self
            .models
            .iter()
            .flatten()
            .map(|m| {
                [Point {
                    p: m.perf_ste,
                    t_up: m.t_up,
                    t_end: m.t_end_worst,
                    m_min: threshold_time(
                        self.threshold,
                        m.t_up + m.t_end_worst,
                        m.cperf / m.perf_ste,
                    ),
                }]
            })
            .collect();
        let mut groups: Vec<&[Point]> = decided.iter().map(|d| &d[..]).collect();
        groups.push(&current_points);
        for later in &self.clusters[partial.c + 1..] {
            groups.push(&later.free_by_count);
        }
        let app = &self.input.application;
        let (tasks, oper) = (app.tasks as f64, app.oper);
        let b1 = match &self.best {
            Some((_, best)) if !exact => {
                // B1 > x when the capacity at x / (1 - SLACK) falls short of the tasks
                let above = |x: f64| capacity(oper, &groups, x / (1.0 - SLACK)) < tasks;
                let tie = best.makespan * (1.0 - 1e-12);
                let strict = best.makespan * (1.0 + 2e-12);
                if bound >= strict || !above(tie) {
                    0.0
                } else if above(strict) {
                    strict
                } else {
                    tie
                }
            }
            _ => envelope_time(tasks, oper, &groups) * (1.0 - SLACK),
        };
        bound.max(b1)
    }

    /// Whether no completion with makespan at least `bound` and at least `machines` machines
    /// can beat the best found (`Score::better_than`: makespan lower by more than a relative
    /// 1e-12, or within it and fewer machines).
    fn cut(&mut self, bound: f64, partial: &Partial) -> bool {
        let Some((_, best)) = &self.best else {
            return bound.is_infinite();
        };
        let (makespan, machines) = (best.makespan, best.machines);
        if bound > makespan + 1e-12 * bound.max(makespan) {
            return true;
        }
        bound >= makespan - 1e-12 * makespan
            && (self.machines_so_far(partial) >= machines
                || self.machines_needed(partial) >= machines)
    }

    /// The best selection changed: `M* = best * (1 + 2e-12)` (a selection that beats it ends
    /// by then: `Score::better_than` tolerates a relative 1e-12) and the suffix tables of B4.
    fn set_best(&mut self, workers: Vec<Vec<usize>>, s: Score) {
        self.best = Some((workers, s));
        self.star = s.makespan * (1.0 + 2e-12);
        self.suffix.clear();
    }

    /// The suffix tables of B4 for the best in force (computed when first needed).
    fn fill_suffix(&mut self) {
        let Some((_, best)) = &self.best else {
            return;
        };
        let most = best.machines;
        let n = self.clusters.len();
        let mut suffix = vec![vec![0.0; most + 1]; n + 1];
        for c in (0..n).rev() {
            // cap[k]: at most how many tasks cluster c finishes by M* with at most k workers.
            let mut cap = vec![0.0f64; most + 1];
            for k in 1..=most {
                let with_k = self.clusters[c]
                    .free_by_count
                    .get(k - 1)
                    .map_or(0.0, |q| tasks_by(q, self.star, self.input.application.oper));
                cap[k] = cap[k - 1].max(with_k);
            }
            for budget in 0..=most {
                suffix[c][budget] = (0..=budget)
                    .map(|k| cap[k] + suffix[c + 1][budget - k])
                    .fold(0.0, f64::max);
            }
        }
        self.suffix = suffix;
    }

    /// B4: the fewest workers any completion of `partial` needs to finish every task by `M*`.
    ///
    /// Proof: as in B1, a cluster given `n_c` tasks that ends by `M*` has `n_c` at most
    /// `floor(perf_ste * (M* - T_up - T_end) / oper)`, at most the same at a point dominating
    /// it (its own values once decided; for the current and later clusters the point of its
    /// number of workers). The `n_c` sum to `tasks`, so the workers used must be among the
    /// counts whose capacities reach `tasks`; the suffix table is the largest capacity of the
    /// later clusters for each number of workers.
    fn machines_needed(&mut self, partial: &Partial) -> usize {
        if self.suffix.is_empty() {
            self.fill_suffix();
        }
        let oper = self.input.application.oper;
        let tasks = self.input.application.tasks as f64;
        let decided: f64 = self
            .models
            .iter()
            .flatten()
            .map(|m| {
                tasks_by(
                    &Point {
                        p: m.perf_ste,
                        t_up: m.t_up,
                        t_end: m.t_end_worst,
                        m_min: threshold_time(
                            self.threshold,
                            m.t_up + m.t_end_worst,
                            m.cperf / m.perf_ste,
                        ),
                    },
                    self.star,
                    oper,
                )
            })
            .sum();
        let cluster = &self.clusters[partial.c];
        let m = self.chosen[partial.c].len();
        let points = cluster.points(
            partial.j,
            m,
            partial.cperf,
            partial.inv_rest,
            partial.slowest,
        );
        let base = self.machines_so_far(partial) - m;
        let later = &self.suffix[partial.c + 1];
        // (workers of the current cluster, tasks it can finish); the empty choice when m = 0
        let options = points
            .iter()
            .enumerate()
            .map(|(i, q)| {
                (
                    if m == 0 { i + 1 } else { m + i },
                    tasks_by(q, self.star, oper),
                )
            })
            .chain((m == 0).then_some((0, 0.0)));
        let mut fewest = usize::MAX;
        for (k, finished) in options {
            let missing = tasks - decided - finished;
            let extra = if missing <= 0.0 {
                Some(0)
            } else {
                later.iter().position(|&cap| cap >= missing)
            };
            if let Some(extra) = extra {
                fewest = fewest.min(base + k + extra);
            }
        }
        fewest
    }

    fn out_of_budget(&mut self) -> bool {
        if !self.aborted {
            let nodes_over = self.budget.nodes.is_some_and(|n| self.nodes >= n);
            if nodes_over
                || (self.nodes % 64 == 1
                    && self.started.elapsed().as_secs_f64() >= self.budget.seconds)
            {
                self.aborted = true;
            }
        }
        self.aborted
    }

    fn visit(&mut self, partial: Partial) {
        self.nodes += 1;
        let bound = self.lower_bound(&partial, false);
        if self.cut(bound, &partial) {
            return;
        }
        if self.out_of_budget() {
            let exact = self.lower_bound(&partial, true);
            self.open_bound = self.open_bound.min(exact);
            return;
        }
        let cluster = &self.clusters[partial.c];
        if partial.j == cluster.perf.len() {
            self.close_cluster(partial.c);
            return;
        }
        let perf = cluster.perf[partial.j];
        let inv = self.input.application.oper / perf;
        // Workers of equal perf are interchangeable (the model reads a cluster's perfs only
        // through their sum, their sum of oper/perf, their minimum and maximum, and their
        // count: (3), (39)/(43), (49)/(50)), so of a run of equal ones only the selections
        // keeping a prefix of the run are searched: worker j is kept only if its equal
        // predecessor is.
        let equal_to_skipped = partial.j > 0
            && cluster.perf[partial.j - 1] == perf
            && self.chosen[partial.c].last() != Some(&(partial.j - 1));
        if equal_to_skipped {
            self.visit(Partial {
                j: partial.j + 1,
                ..partial
            });
            return;
        }
        // keep worker j
        let first = self.chosen[partial.c].is_empty();
        self.chosen[partial.c].push(partial.j);
        self.visit(Partial {
            c: partial.c,
            j: partial.j + 1,
            cperf: partial.cperf + perf,
            inv_rest: if first {
                partial.inv_rest
            } else {
                partial.inv_rest + inv
            },
            slowest: partial.slowest.min(perf),
        });
        self.chosen[partial.c].pop();
        // leave it out
        self.visit(Partial {
            j: partial.j + 1,
            ..partial
        });
    }

    /// Every worker of cluster `c` decided: its model, then the next cluster or the leaf.
    fn close_cluster(&mut self, c: usize) {
        let workers = self.workers_of(c);
        self.models.push(model_of(self.input, c, &workers));
        if c + 1 < self.clusters.len() {
            self.visit(Partial {
                c: c + 1,
                j: 0,
                cperf: 0.0,
                inv_rest: 0.0,
                slowest: f64::INFINITY,
            });
        } else {
            self.leaf();
        }
        self.models.pop();
    }

    fn workers_of(&self, c: usize) -> Vec<usize> {
        let mut workers: Vec<usize> = self.chosen[c]
            .iter()
            .map(|&pos| self.clusters[c].order[pos])
            .collect();
        workers.sort_unstable();
        workers
    }

    /// A first incumbent, so that the tree is cut from the start: per cluster the `k_c` fastest
    /// workers, improving one `k_c` at a time (every value from 0 to all, the others fixed)
    /// while the score improves, from every worker and from the fastest workers whose `cperf`
    /// stays within `limit / E` (the steady bound (60) at the threshold), each also with one
    /// cluster left out.
    fn start_from_prefixes(&mut self) {
        let n = self.clusters.len();
        let within_bound: Vec<usize> = self
            .clusters
            .iter()
            .map(|cl| {
                let ceiling = cl.limit / self.threshold.max(f64::MIN_POSITIVE);
                (1..=cl.perf.len())
                    .take_while(|&k| cl.prefix_perf[k] <= ceiling)
                    .last()
                    .unwrap_or(cl.perf.len().min(1))
            })
            .collect();
        let all: Vec<usize> = self.clusters.iter().map(|cl| cl.perf.len()).collect();
        // also each start with one cluster left out: leaving a cluster out and growing
        // another are two moves, which one move at a time cannot make when either alone
        // loses (a faster run lowers the other clusters' efficiency)
        let mut starts = vec![all.clone(), within_bound.clone()];
        for c in 0..n {
            for start in [&all, &within_bound] {
                let mut s = start.clone();
                s[c] = 0;
                if s.iter().any(|&k| k > 0) {
                    starts.push(s);
                }
            }
        }
        for start in starts {
            let mut counts = start;
            let mut models: Vec<Option<ClusterModel>> =
                (0..n).map(|c| self.prefix_model(c, counts[c])).collect();
            let mut current = self.evaluate_prefixes(&counts, &models);
            for _sweep in 0..8 {
                let mut changed = false;
                for c in 0..n {
                    for k in 0..=self.clusters[c].perf.len() {
                        if k == counts[c] {
                            continue;
                        }
                        let model = self.prefix_model(c, k);
                        let saved = std::mem::replace(&mut models[c], model);
                        let mut trial = counts.clone();
                        trial[c] = k;
                        let s = self.evaluate_prefixes(&trial, &models);
                        let better = match (&s, &current) {
                            (Some(s), Some(cur)) => s.better_than(cur),
                            (Some(_), None) => true,
                            _ => false,
                        };
                        if better {
                            counts = trial;
                            current = s;
                            changed = true;
                        } else {
                            models[c] = saved;
                        }
                    }
                }
                if !changed {
                    break;
                }
            }
        }
    }

    fn prefix_model(&self, c: usize, k: usize) -> Option<ClusterModel> {
        let mut workers = self.clusters[c].order[..k].to_vec();
        workers.sort_unstable();
        model_of(self.input, c, &workers)
    }

    /// Scores the selection of the `counts[c]` fastest workers per cluster (models given) and
    /// keeps it when it beats the best.
    fn evaluate_prefixes(
        &mut self,
        counts: &[usize],
        models: &[Option<ClusterModel>],
    ) -> Option<Score> {
        let refs: Vec<Option<&ClusterModel>> = models.iter().map(Option::as_ref).collect();
        let s = score(self.input, &refs)?;
        self.evaluated += 1;
        let workers = || {
            counts
                .iter()
                .enumerate()
                .map(|(c, &k)| {
                    let mut w = self.clusters[c].order[..k].to_vec();
                    w.sort_unstable();
                    w
                })
                .collect()
        };
        if s.feasible() {
            if self.best.as_ref().is_none_or(|(_, b)| s.better_than(b)) {
                let w = workers();
                self.set_best(w, s);
            }
        } else if self.closest.as_ref().is_none_or(|(_, b)| s.better_than(b)) {
            self.closest = Some((workers(), s));
        }
        Some(s)
    }

    fn leaf(&mut self) {
        let refs: Vec<Option<&ClusterModel>> = self.models.iter().map(Option::as_ref).collect();
        let Some(s) = score(self.input, &refs) else {
            return;
        };
        self.evaluated += 1;
        let workers = || {
            (0..self.clusters.len())
                .map(|c| self.workers_of(c))
                .collect()
        };
        if s.feasible() {
            if self.best.as_ref().is_none_or(|(_, b)| s.better_than(b)) {
                let w = workers();
                self.set_best(w, s);
            }
        } else if self.closest.as_ref().is_none_or(|(_, b)| s.better_than(b)) {
            self.closest = Some((workers(), s));
        }
    }
}

/// Branch and bound over every selection of `input` (see the module documentation); stops
/// when `budget` runs out and then reports the best selection found and a lower bound.
pub(super) fn branch_and_bound(input: &ModelInput, budget: Budget) -> Outcome {
    let clusters: Vec<Cluster> = (0..input.system.clusters.len())
        .map(|c| build_cluster(input, c))
        .collect();
    let mut search = Search {
        input,
        threshold: input.options.efficiency_threshold,
        started: Instant::now(),
        budget,
        aborted: false,
        nodes: 0,
        evaluated: 0,
        best: None,
        closest: None,
        open_bound: f64::INFINITY,
        star: f64::INFINITY,
        suffix: Vec::new(),
        models: Vec::new(),
        chosen: vec![Vec::new(); clusters.len()],
        clusters,
    };
    search.start_from_prefixes();
    search.visit(Partial {
        c: 0,
        j: 0,
        cperf: 0.0,
        inv_rest: 0.0,
        slowest: f64::INFINITY,
    });
    let complete = !search.aborted;
    let best = search.best.clone().or(search.closest.clone());
    let bound = match &search.best {
        Some((_, s)) if complete => s.makespan,
        Some((_, s)) => s.makespan.min(search.open_bound),
        None if complete => f64::INFINITY,
        None => search.open_bound,
    };
    Outcome {
        best,
        evaluated: search.evaluated,
        nodes: search.nodes,
        complete,
        bound,
    }
}
