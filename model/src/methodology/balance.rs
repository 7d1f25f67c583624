//! Load balancing between clusters (`docs/model.md` section 3.2 steps 4 and 5, equations
//! (61) and (94)): workloads with equal execution times, then whole tasks.
//!
//! Both steps accept any numbers without panicking: a cluster whose steady performance is not
//! positive and finite, or whose startup or end time is not finite, takes no part in the
//! balance; whole tasks are counted without overflow.
//!
//! Their cost: [`balance_workload`] evaluates the closed form at most `clusters + 1` times
//! (each evaluation but the last drops a cluster). [`integer_tasks`] takes an overshoot back
//! in at most `clusters` steps, then hands out the `r` tasks left after flooring in single
//! steps of at least one task each, and past 64 of them in bulk rounds whose cost does not
//! depend on the number of tasks (`O(clusters^2 * 64^2 + clusters^3 * 64)` time evaluations);
//! at least 8 single steps separate two rounds, so there are at most `r` single steps and
//! `r / 8 + 1` rounds. With workloads from [`balance_workload`], `r` is below the sum of
//! the clusters' task units (up to rounding); otherwise it can be every task, and only the
//! bound above holds.

/// A cluster as the balance sees it: `T_c(w) = T_up + w / perf_ste + T_end`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterTiming {
    /// `perf_ste`, basic operations per second.
    pub perf_ste: f64,
    /// `T_up`, seconds.
    pub t_up: f64,
    /// `T_end` (best or worst), seconds.
    pub t_end: f64,
}

impl ClusterTiming {
    /// `T_up + T_end` (section 2): the time a cluster spends outside its steady state.
    pub fn overhead(&self) -> f64 {
        self.t_up + self.t_end
    }

    /// Equation (5) with (31): `T_up + w / perf_ste + T_end`; zero for no workload.
    pub fn execution_time(&self, workload: f64) -> f64 {
        if workload <= 0.0 {
            0.0
        } else {
            self.t_up + workload / self.perf_ste + self.t_end
        }
    }

    /// Whether (61)(94) can use the cluster: `perf_ste` positive and finite, `T_up` and `T_end`
    /// finite. Any other cluster is dropped from the balance (section 3.2 step 4).
    pub fn is_usable(&self) -> bool {
        self.perf_ste.is_finite()
            && self.perf_ste > 0.0
            && self.t_up.is_finite()
            && self.t_end.is_finite()
    }
}

/// Workloads with equal execution times.
#[derive(Debug, Clone, PartialEq)]
pub struct Balance {
    /// The common execution time `T` of the clusters that take part (infinite when no cluster
    /// can take part).
    pub time: f64,
    /// `w_c` per cluster, in basic operations; zero for a dropped cluster.
    pub workloads: Vec<f64>,
}

/// Equations (61)(94), closed form over the clusters that take part:
/// `T = (workload + sum_c perf_ste_c * (T_up_c + T_end_c)) / sum_c perf_ste_c`.
///
/// When that form overflows (performances and overheads so large that a product or a sum is
/// infinite) the same `T` is computed as `(workload / p) / Q + sum_c (q_c / Q) * (T_up_c +
/// T_end_c)` with `p` the largest `perf_ste`, `q_c = perf_ste_c / p` and `Q = sum_c q_c`.
pub fn balanced_time<'a>(workload: f64, clusters: impl Iterator<Item = &'a ClusterTiming>) -> f64 {
    let clusters: Vec<&ClusterTiming> = clusters.collect();
    let (performance, weighted_overhead) = clusters.iter().fold((0.0, 0.0), |(p, o), c| {
        (p + c.perf_ste, o + c.perf_ste * c.overhead())
    });
    let time = (workload + weighted_overhead) / performance;
    if time.is_finite() || clusters.is_empty() {
        return time;
    }
    let largest = clusters.iter().map(|c| c.perf_ste).fold(0.0, f64::max);
    let scaled: f64 = clusters.iter().map(|c| c.perf_ste / largest).sum();
    let steady = workload / largest / scaled;
    clusters.iter().fold(steady, |t, c| {
        t + c.perf_ste / largest / scaled * c.overhead()
    })
}

/// Equations (61)(94): `w_c = perf_ste_c * (T - T_up_c - T_end_c)`, so that every cluster ends at
/// the same time and `sum w_c = workload`. A cluster whose overhead alone reaches `T` (`w_c <= 0`)
/// is dropped and `T` recomputed; dropping one only lowers `T`, so all such clusters are dropped
/// together. A cluster the balance cannot use ([`ClusterTiming::is_usable`]), or whose `w_c` is
/// not a finite number, is dropped too.
pub fn balance_workload(workload: f64, clusters: &[ClusterTiming]) -> Balance {
    let mut active: Vec<bool> = clusters.iter().map(ClusterTiming::is_usable).collect();
    if !active.iter().any(|&a| a) {
        return Balance {
            time: f64::INFINITY,
            workloads: vec![0.0; clusters.len()],
        };
    }
    loop {
        let time = balanced_time(
            workload,
            clusters
                .iter()
                .zip(&active)
                .filter(|(_, &a)| a)
                .map(|(c, _)| c),
        );
        let share = |c: &ClusterTiming| c.perf_ste * (time - c.overhead());
        let mut dropped_any = false;
        for (cluster, active) in clusters.iter().zip(active.iter_mut()) {
            let w = share(cluster);
            if *active && !(w > 0.0 && w.is_finite()) {
                *active = false;
                dropped_any = true;
            }
        }
        if !dropped_any || !active.iter().any(|&a| a) {
            let workloads = clusters
                .iter()
                .zip(&active)
                .map(|(c, &a)| if a { share(c) } else { 0.0 })
                .collect();
            return Balance { time, workloads };
        }
    }
}

/// Greedy steps taken one at a time before [`integer_tasks`] switches to bulk rounds (a normal
/// balance leaves fewer whole units than this to hand out).
const SINGLE_STEPS: usize = 64;

/// Section 3.2 step 5: whole tasks. Each `w_c / oper` is floored to a multiple of the cluster's
/// task unit (`nt` for an external cluster, 1 for the main one; never more than `tasks`); the
/// remaining tasks are then handed out one unit at a time (the last one possibly partial), each
/// to the cluster whose execution time after receiving it is smallest (ties to the first
/// cluster). The result always sums to `tasks`.
///
/// The hand-out gives the same result as taking those steps one by one, but after
/// `SINGLE_STEPS` (64) single steps it takes them in bulk: every cluster's execution time grows
/// with its tasks, so the steps up to a threshold time are, together, the units whose time is
/// at most that threshold, counted per cluster by bisection. The threshold is the largest that
/// keeps every unit whole and lets no other cluster's (possibly partial) unit end earlier; it
/// is found by bisection too. A round costs `O(clusters^2 * 64^2 + clusters^3 * 64)` time
/// evaluations, whatever the number of tasks. Missing units count as 1 and missing workloads as 0; a workload that is
/// not a positive number gives no tasks before the hand-out.
pub fn integer_tasks(
    tasks: u64,
    oper: f64,
    clusters: &[ClusterTiming],
    task_units: &[u64],
    workloads: &[f64],
) -> Vec<u64> {
    let n = clusters.len();
    let units: Vec<u64> = (0..n)
        .map(|c| task_units.get(c).copied().unwrap_or(1).max(1))
        .collect();
    let mut assigned: Vec<u64> = (0..n)
        .map(|c| {
            let whole = workloads.get(c).copied().unwrap_or(0.0) / oper;
            // `as` saturates; NaN and non-positive values fail the test and give nothing.
            let whole = if whole > 0.0 {
                (whole.floor() as u64).min(tasks)
            } else {
                0
            };
            whole - whole % units[c]
        })
        .collect();
    if n == 0 {
        return assigned;
    }
    let time_with = |c: usize, count: u64| clusters[c].execution_time(count as f64 * oper);
    // Floating-point rounding may overshoot by a task; take it back from the cluster ending last.
    let mut total: u128 = assigned.iter().map(|&a| u128::from(a)).sum();
    while total > u128::from(tasks) {
        let Some(latest) = (0..n)
            .filter(|&c| assigned[c] > 0)
            .max_by(|&a, &b| time_with(a, assigned[a]).total_cmp(&time_with(b, assigned[b])))
        else {
            break;
        };
        // both operands fit in u64: `take <= assigned[latest]`
        let take = (total - u128::from(tasks)).min(u128::from(assigned[latest])) as u64;
        assigned[latest] -= take;
        total -= u128::from(take);
    }
    let mut remaining = tasks.saturating_sub(u64::try_from(total).unwrap_or(u64::MAX));
    let mut single_steps = 0;
    while remaining > 0 {
        if single_steps >= SINGLE_STEPS {
            bulk_round(&time_with, &units, &mut assigned, &mut remaining);
            single_steps = SINGLE_STEPS - 8;
            if remaining == 0 {
                break;
            }
        }
        let Some((cluster, give)) =
            (0..n)
                .map(|c| (c, units[c].min(remaining)))
                .min_by(|&(a, ga), &(b, gb)| {
                    time_with(a, assigned[a] + ga).total_cmp(&time_with(b, assigned[b] + gb))
                })
        else {
            break;
        };
        assigned[cluster] += give;
        remaining -= give;
        single_steps += 1;
    }
    assigned
}

/// The key under which `f64::total_cmp` orders `x`, as an integer.
fn total_order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// One bulk round of [`integer_tasks`]: hands out at once the single steps up to a threshold
/// time, when it can prove they are exactly the steps the one-by-one rule would take.
///
/// With `r` tasks remaining, pick `rho` among the task units and let `U` be the clusters whose
/// unit is at most `rho`. For a threshold key `tau`, let `N_c` be the whole units cluster `c` in
/// `U` can take with every execution time (after each unit) at most `tau`, `consumed = sum
/// u_c * N_c` and `r_end = r - consumed`. If `r_end >= rho`, every cluster of `U` is offered a
/// whole unit at each of those steps; if every cluster outside `U` would end later than `tau`
/// even when offered `min(u_c, r_end)` tasks, none of them is chosen. The one-by-one rule then
/// takes exactly those `N_c` units, whatever their order (ties included). Both conditions only
/// get harder as `tau` grows, so the largest `tau` is found by bisection; the `rho` handing out
/// most wins.
fn bulk_round(
    time_with: &impl Fn(usize, u64) -> f64,
    units: &[u64],
    assigned: &mut [u64],
    remaining: &mut u64,
) {
    let r = *remaining;
    let n = units.len();
    let key = |c: usize, count: u64| total_order_key(time_with(c, count));
    // Whole units of cluster `c` (at most `r / u_c`) whose execution time stays within `tau`.
    let units_within = |c: usize, tau: i64| -> u64 {
        let (mut low, mut high) = (0u64, r / units[c]);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            // assigned[c] + r <= tasks: no overflow
            if key(c, assigned[c] + mid * units[c]) <= tau {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        low
    };
    // The tasks `counts` hand out, if they keep every unit of the clusters within `rho` whole
    // and let no other cluster end at or before `tau` (see above) — or, while the units tied at
    // `tau` of cluster `tied` are taken, end at `tau` with a smaller index than `tied`.
    let consumed_if_feasible =
        |rho: u64, tau: i64, tied: Option<usize>, counts: &[u64]| -> Option<u64> {
            let consumed: u128 = (0..n)
                .map(|c| u128::from(counts[c]) * u128::from(units[c]))
                .sum();
            let r_end = u128::from(r).checked_sub(consumed)?;
            if r_end < u128::from(rho) {
                return None;
            }
            let r_end = r_end as u64; // <= r
            let outside_later = (0..n).all(|c| {
                if units[c] <= rho {
                    return true;
                }
                let end = key(c, assigned[c] + units[c].min(r_end));
                end > tau || (end == tau && tied.is_some_and(|t| c > t))
            });
            outside_later.then_some(r - r_end)
        };
    let counts_within = |rho: u64, tau: i64| -> Vec<u64> {
        (0..n)
            .map(|c| {
                if units[c] <= rho {
                    units_within(c, tau)
                } else {
                    0
                }
            })
            .collect()
    };
    let mut rhos: Vec<u64> = units.iter().copied().filter(|&u| u <= r).collect();
    rhos.sort_unstable();
    rhos.dedup();
    let mut best: Option<(u64, Vec<u64>)> = None;
    for rho in rhos {
        let feasible =
            |tau: i64| consumed_if_feasible(rho, tau, None, &counts_within(rho, tau)).is_some();
        if !feasible(i64::MIN) {
            continue;
        }
        let (mut low, mut high) = (i64::MIN, i64::MAX);
        while low < high {
            let mid = (i128::from(low) + (i128::from(high) - i128::from(low) + 1) / 2) as i64;
            if feasible(mid) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        let mut counts = counts_within(rho, low);
        // The units tied at the next key: the one-by-one rule takes them cluster by cluster in
        // index order, so take each cluster's in turn, as many as stay feasible.
        if let Some(tie) = low.checked_add(1) {
            let tied = counts_within(rho, tie);
            for c in 0..n {
                let extra = tied[c].saturating_sub(counts[c]);
                let with = |m: u64| {
                    let mut trial = counts.clone();
                    trial[c] += m;
                    consumed_if_feasible(rho, tie, Some(c), &trial).is_some()
                };
                let (mut low_m, mut high_m) = (0, extra);
                while low_m < high_m {
                    let mid = low_m + (high_m - low_m).div_ceil(2);
                    if with(mid) {
                        low_m = mid;
                    } else {
                        high_m = mid - 1;
                    }
                }
                counts[c] += low_m;
                if low_m < extra {
                    break;
                }
            }
        }
        // feasible by construction: at most `r` tasks
        let consumed: u64 = (0..n).map(|c| counts[c] * units[c]).sum();
        if best.as_ref().is_none_or(|(b, _)| consumed > *b) {
            best = Some((consumed, counts));
        }
    }
    if let Some((consumed, counts)) = best {
        for c in 0..n {
            assigned[c] += counts[c] * units[c];
        }
        *remaining -= consumed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::{Duration, Instant};

    fn timing(perf_ste: f64, t_up: f64, t_end: f64) -> ClusterTiming {
        ClusterTiming {
            perf_ste,
            t_up,
            t_end,
        }
    }

    /// The one-by-one hand-out as it was before the bulk rounds, kept to check that
    /// [`integer_tasks`] gives the same result (normal inputs only: it sums in `u64`).
    fn one_by_one(
        tasks: u64,
        oper: f64,
        clusters: &[ClusterTiming],
        task_units: &[u64],
        workloads: &[f64],
    ) -> Vec<u64> {
        let mut assigned: Vec<u64> = workloads
            .iter()
            .zip(task_units)
            .map(|(&w, &unit)| {
                let whole = (w / oper).max(0.0).floor() as u64;
                whole - whole % unit.max(1)
            })
            .collect();
        let time_with =
            |cluster: usize, count: u64| clusters[cluster].execution_time(count as f64 * oper);
        let mut total: u64 = assigned.iter().sum();
        while total > tasks {
            let latest = (0..clusters.len())
                .filter(|&c| assigned[c] > 0)
                .max_by(|&a, &b| time_with(a, assigned[a]).total_cmp(&time_with(b, assigned[b])))
                .unwrap();
            let take = (total - tasks).min(assigned[latest]);
            assigned[latest] -= take;
            total -= take;
        }
        let mut remaining = tasks - total;
        while remaining > 0 {
            let (cluster, give) = (0..clusters.len())
                .map(|c| (c, task_units[c].max(1).min(remaining)))
                .min_by(|&(a, ga), &(b, gb)| {
                    time_with(a, assigned[a] + ga).total_cmp(&time_with(b, assigned[b] + gb))
                })
                .unwrap();
            assigned[cluster] += give;
            remaining -= give;
        }
        assigned
    }

    #[test]
    fn closed_form_eq61_eq94() {
        // perf 1 and 3 ops/s, overheads 10 and 2 s, workload 100:
        // T = (100 + 1*10 + 3*2) / 4 = 29; w = 1*(29-10) = 19 and 3*(29-2) = 81.
        let clusters = [timing(1.0, 4.0, 6.0), timing(3.0, 0.5, 1.5)];
        let balance = balance_workload(100.0, &clusters);
        assert_eq!(balance.time, 29.0);
        assert_eq!(balance.workloads, vec![19.0, 81.0]);
        for (c, w) in clusters.iter().zip(&balance.workloads) {
            assert_eq!(c.execution_time(*w), 29.0);
        }
    }

    #[test]
    fn a_cluster_whose_overhead_exceeds_the_time_is_dropped() {
        // overhead 50 s against T = (10 + 1*50 + 1*1)/2 = 30.5 -> dropped, T = 10 + 1 = 11
        let clusters = [timing(1.0, 0.0, 50.0), timing(1.0, 0.0, 1.0)];
        let balance = balance_workload(10.0, &clusters);
        assert_eq!(balance.workloads, vec![0.0, 10.0]);
        assert_eq!(balance.time, 11.0);
    }

    #[test]
    fn clusters_the_balance_cannot_use_are_dropped() {
        // NaN, infinite, zero and subnormal-derived steady performances, infinite overheads:
        // only the last cluster is usable, so it takes the whole workload: T = 1 + 100/2 = 51.
        let clusters = [
            timing(f64::NAN, 0.0, 0.0),
            timing(f64::INFINITY, 0.0, 0.0),
            timing(0.0, 0.0, 0.0),
            timing(-1.0, 0.0, 0.0),
            timing(1.0, f64::INFINITY, 0.0),
            timing(1.0, 0.0, f64::NAN),
            timing(2.0, 0.5, 0.5),
        ];
        let balance = balance_workload(100.0, &clusters);
        assert_eq!(balance.workloads, vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0]);
        assert_eq!(balance.time, 51.0);
        // nothing usable: no time, no workload
        let none = balance_workload(100.0, &clusters[..6]);
        assert_eq!(none.time, f64::INFINITY);
        assert!(none.workloads.iter().all(|&w| w == 0.0));
    }

    #[test]
    fn the_balance_survives_products_that_overflow() {
        // perf_ste * overhead = 1e300 * 1e200 overflows; T = 1e-290 s + 1e200 s = 1e200 s
        let clusters = [timing(1e300, 1e200, 0.0), timing(1e300, 1e200, 0.0)];
        let balance = balance_workload(2e10, &clusters);
        assert!(balance.time.is_finite());
        assert!((balance.time - 1e200).abs() <= 1e-12 * 1e200);
        let sum: f64 = balance.workloads.iter().sum();
        assert!(sum.is_finite() && sum >= 0.0, "{balance:?}");
        // a workload handed out by the fallback form still sums to the problem
        let clusters = [timing(1e300, 1.0, 0.0), timing(2e300, 3.0, 0.0)];
        let balance = balance_workload(1e305, &clusters);
        let expected = (1e305 / 1e300 + 1.0 + 2.0 * 3.0) / 3.0;
        assert!(
            (balance.time - expected).abs() <= 1e-12 * expected,
            "{balance:?}"
        );
        let sum: f64 = balance.workloads.iter().sum();
        assert!((sum - 1e305).abs() <= 1e-9 * 1e305, "{sum}");
    }

    #[test]
    fn integer_tasks_floor_then_hand_out_to_the_earliest_end() {
        let clusters = [timing(1.0, 4.0, 6.0), timing(3.0, 0.5, 1.5)];
        // w = 19.5 and 80.5 tasks of one operation: floors 19 and 80, one task left;
        // cluster 0 would end at 30, cluster 1 at 2 + 81/3 = 29 -> cluster 1.
        let tasks = integer_tasks(100, 1.0, &clusters, &[1, 1], &[19.5, 80.5]);
        assert_eq!(tasks, vec![19, 81]);
    }

    #[test]
    fn integer_tasks_respect_the_inter_cluster_unit() {
        // 80.5 tasks floor to 78 in units of 3; the 3 left go to cluster 1 as one unit.
        let clusters = [timing(1.0, 4.0, 6.0), timing(3.0, 0.5, 1.5)];
        let tasks = integer_tasks(100, 1.0, &clusters, &[1, 3], &[19.5, 80.5]);
        assert_eq!(tasks.iter().sum::<u64>(), 100);
        assert_eq!(tasks[1] % 3, 0, "{tasks:?}");
    }

    #[test]
    fn integer_tasks_hand_out_a_whole_problem_in_bulk() {
        // No workload at all (a balance that dropped everything): 3,000 tasks handed out from
        // zero. Cluster 0 ends at 1 + k/1, cluster 1 at 1 + k/2 with k tasks: the earliest-end
        // rule gives cluster 1 twice the tasks, ties to cluster 0: 1,000 and 2,000.
        let clusters = [timing(1.0, 1.0, 0.0), timing(2.0, 0.5, 0.5)];
        let tasks = integer_tasks(3000, 1.0, &clusters, &[1, 1], &[0.0, 0.0]);
        assert_eq!(tasks, vec![1000, 2000]);
        assert_eq!(
            tasks,
            one_by_one(3000, 1.0, &clusters, &[1, 1], &[0.0, 0.0])
        );
        // the same with units of 7 in cluster 1 and a partial last unit
        let tasks = integer_tasks(3001, 1.0, &clusters, &[1, 7], &[0.0, 0.0]);
        assert_eq!(
            tasks,
            one_by_one(3001, 1.0, &clusters, &[1, 7], &[0.0, 0.0])
        );
        assert_eq!(tasks.iter().sum::<u64>(), 3001);
    }

    #[test]
    fn integer_tasks_never_overflow_or_crawl() {
        let clusters = [
            timing(1e-3, 1.0, 2.0),
            timing(5e-4, 3.0, 0.0),
            timing(2e-3, 0.0, 9.0),
        ];
        let units = [1, 3, 100_000];
        let cases: [(u64, [f64; 3]); 6] = [
            // infinite and NaN workloads (the audit's case: `inf as u64` summed and wrapped)
            (500, [f64::INFINITY, f64::INFINITY, 1.0]),
            (1 << 53, [f64::NAN, f64::NAN, f64::NAN]),
            // everything left for the hand-out, up to the largest count
            (1_000_000_000, [0.0; 3]),
            (1 << 53, [0.0; 3]),
            (u64::MAX, [0.0; 3]),
            (u64::MAX, [f64::INFINITY, f64::MAX, 1e300]),
        ];
        for (tasks, workloads) in cases {
            let start = Instant::now();
            let assigned = integer_tasks(tasks, 1.0, &clusters, &units, &workloads);
            let elapsed = start.elapsed();
            let sum = assigned.iter().map(|&a| u128::from(a)).sum::<u128>();
            assert_eq!(
                sum,
                u128::from(tasks),
                "{tasks} {workloads:?}: {assigned:?}"
            );
            // A guard against stepping through the tasks (a hang), not a speed test: room
            // for a loaded CI machine.
            assert!(
                elapsed < Duration::from_secs(10),
                "{tasks} tasks took {elapsed:?}"
            );
        }
        // inputs of mismatched lengths, zero units, bad oper: no panic, the tasks all handed out
        for oper in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-320] {
            let assigned = integer_tasks(10, oper, &clusters, &[0], &[5.0]);
            assert_eq!(assigned.iter().sum::<u64>(), 10, "oper {oper}");
        }
        assert!(integer_tasks(10, 1.0, &[], &[1], &[5.0]).is_empty());
    }

    fn timings() -> impl Strategy<Value = Vec<ClusterTiming>> {
        prop::collection::vec(
            (1e-4f64..1e3, 0.0f64..1e3, 0.0f64..1e4).prop_map(|(p, u, e)| timing(p, u, e)),
            1..6,
        )
    }

    proptest! {
        #[test]
        fn balanced_times_are_equal_and_workloads_sum(clusters in timings(), workload in 1.0f64..1e7) {
            let balance = balance_workload(workload, &clusters);
            let sum: f64 = balance.workloads.iter().sum();
            prop_assert!((sum - workload).abs() <= 1e-9 * workload.max(1.0));
            for (c, &w) in clusters.iter().zip(&balance.workloads) {
                if w > 0.0 {
                    let t = c.execution_time(w);
                    prop_assert!((t - balance.time).abs() <= 1e-9 * balance.time, "{t} vs {}", balance.time);
                } else {
                    prop_assert!(c.overhead() >= balance.time * (1.0 - 1e-12));
                }
            }
            prop_assert!(balance.workloads.iter().any(|&w| w > 0.0));
        }

        #[test]
        fn integer_workloads_sum_to_the_problem(
            clusters in timings(),
            tasks in 1u64..100_000,
            oper in 1e-3f64..1e6,
            unit_seed in prop::collection::vec(1u64..8, 6),
        ) {
            let units: Vec<u64> = (0..clusters.len()).map(|i| if i == 0 { 1 } else { unit_seed[i] }).collect();
            let balance = balance_workload(tasks as f64 * oper, &clusters);
            let assigned = integer_tasks(tasks, oper, &clusters, &units, &balance.workloads);
            prop_assert_eq!(assigned.iter().sum::<u64>(), tasks);
        }

        /// The bulk hand-out gives exactly what the one-by-one rule gives, on balanced
        /// workloads and on workloads cut short (so that thousands of units are left to hand
        /// out, through the bulk rounds), with units up to 1,000.
        #[test]
        fn bulk_hand_out_equals_the_one_by_one_rule(
            clusters in timings(),
            tasks in 1u64..60_000,
            oper in 1e-3f64..1e6,
            unit_seed in prop::collection::vec(prop_oneof![1u64..8, 1u64..1000], 6),
            cut in prop::collection::vec(prop_oneof![Just(1.0f64), 0.0f64..1.0], 6),
        ) {
            let units: Vec<u64> = (0..clusters.len()).map(|i| if i == 0 { 1 } else { unit_seed[i] }).collect();
            let balance = balance_workload(tasks as f64 * oper, &clusters);
            let workloads: Vec<f64> = balance.workloads.iter().zip(&cut).map(|(w, f)| w * f).collect();
            let fast = integer_tasks(tasks, oper, &clusters, &units, &workloads);
            let slow = one_by_one(tasks, oper, &clusters, &units, &workloads);
            prop_assert_eq!(fast, slow);
        }

        /// The same with ties everywhere: identical clusters, and startup times so long that
        /// thousands of tasks leave an execution time unchanged in floating point.
        #[test]
        fn bulk_hand_out_equals_the_one_by_one_rule_with_ties(
            raw in prop::collection::vec((0usize..3, 0usize..2, 0usize..2, prop_oneof![Just(1u64), 1u64..4, 1u64..300]), 1..6),
            tasks in 1u64..20_000,
            oper in prop_oneof![Just(1.0f64), Just(0.5), Just(3.0), Just(1e-9)],
            cut in prop::collection::vec(prop_oneof![Just(0.0f64), Just(1.0f64), 0.0f64..1.0], 6),
        ) {
            let perfs = [1.0, 2.0, 0.5];
            let clusters: Vec<ClusterTiming> = raw.iter().map(|&(p, u, e, _)| timing(perfs[p], u as f64 * 1e12, e as f64 * 2.0)).collect();
            let units: Vec<u64> = raw.iter().map(|r| r.3).collect();
            let balance = balance_workload(tasks as f64 * oper, &clusters);
            let workloads: Vec<f64> = balance.workloads.iter().zip(&cut).map(|(w, f)| w * f).collect();
            let fast = integer_tasks(tasks, oper, &clusters, &units, &workloads);
            let slow = one_by_one(tasks, oper, &clusters, &units, &workloads);
            prop_assert_eq!(fast, slow);
        }
    }
}
