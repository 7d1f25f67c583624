//! Load balancing between clusters (`design/model.md` section 3.2 steps 4 and 5, equations
//! (61) and (94)): workloads with equal execution times, then whole tasks.

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
    /// `T_up + T_end`: the time a cluster spends outside its steady state.
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
}

/// Workloads with equal execution times.
#[derive(Debug, Clone, PartialEq)]
pub struct Balance {
    /// The common execution time `T` of the clusters that take part.
    pub time: f64,
    /// `w_c` per cluster, in basic operations; zero for a dropped cluster.
    pub workloads: Vec<f64>,
}

/// Equations (61)(94), closed form over the clusters that take part:
/// `T = (workload + sum_c perf_ste_c * (T_up_c + T_end_c)) / sum_c perf_ste_c`.
pub fn balanced_time<'a>(workload: f64, clusters: impl Iterator<Item = &'a ClusterTiming>) -> f64 {
    let (performance, weighted_overhead) = clusters.fold((0.0, 0.0), |(p, o), c| {
        (p + c.perf_ste, o + c.perf_ste * c.overhead())
    });
    (workload + weighted_overhead) / performance
}

/// Equations (61)(94): `w_c = perf_ste_c * (T - T_up_c - T_end_c)`, so that every cluster ends at
/// the same time and `sum w_c = workload`. A cluster whose overhead alone reaches `T` (`w_c <= 0`)
/// is dropped and `T` recomputed; dropping one only lowers `T`, so all such clusters are dropped
/// together.
pub fn balance_workload(workload: f64, clusters: &[ClusterTiming]) -> Balance {
    let mut active = vec![true; clusters.len()];
    loop {
        let time = balanced_time(
            workload,
            clusters
                .iter()
                .zip(&active)
                .filter(|(_, &a)| a)
                .map(|(c, _)| c),
        );
        let mut dropped_any = false;
        for (cluster, active) in clusters.iter().zip(active.iter_mut()) {
            if *active && cluster.perf_ste * (time - cluster.overhead()) <= 0.0 {
                *active = false;
                dropped_any = true;
            }
        }
        if !dropped_any || !active.iter().any(|&a| a) {
            let workloads = clusters
                .iter()
                .zip(&active)
                .map(|(c, &a)| {
                    if a {
                        c.perf_ste * (time - c.overhead())
                    } else {
                        0.0
                    }
                })
                .collect();
            return Balance { time, workloads };
        }
    }
}

/// Section 3.2 step 5: whole tasks. Each `w_c / oper` is floored to a multiple of the cluster's
/// task unit (`nt` for an external cluster, 1 for the main one); the remaining tasks are then
/// handed out one unit at a time (the last one possibly partial), each to the cluster whose
/// execution time after receiving it is smallest (ties to the first cluster). The result always
/// sums to `tasks`.
pub fn integer_tasks(
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
    if clusters.is_empty() {
        return assigned;
    }
    let time_with =
        |cluster: usize, count: u64| clusters[cluster].execution_time(count as f64 * oper);
    // Floating-point rounding may overshoot by a task; take it back from the cluster ending last.
    let mut total: u64 = assigned.iter().sum();
    while total > tasks {
        let latest = (0..clusters.len())
            .filter(|&c| assigned[c] > 0)
            .max_by(|&a, &b| time_with(a, assigned[a]).total_cmp(&time_with(b, assigned[b])))
            .expect("a positive total has a cluster with tasks");
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
            .expect("clusters is not empty");
        assigned[cluster] += give;
        remaining -= give;
    }
    assigned
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn timing(perf_ste: f64, t_up: f64, t_end: f64) -> ClusterTiming {
        ClusterTiming {
            perf_ste,
            t_up,
            t_end,
        }
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
    }
}
