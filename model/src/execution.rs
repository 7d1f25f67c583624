//! The quantities common to every cluster: aggregate performance, the three states of a
//! pipelined execution, and the efficiency (`docs/model.md` sections 1 and 2).

/// Equation (3): `cperf = sum(perf[i])` over the workers of a cluster.
pub fn cluster_performance(perfs: &[f64]) -> f64 {
    perfs.iter().sum()
}

/// Equation (4): `mcperf = sum(cperf)` over the clusters.
pub fn multi_cluster_performance(cluster_performances: &[f64]) -> f64 {
    cluster_performances.iter().sum()
}

/// Equation (5): `T_ex = T_up + T_ste + T_end`.
pub fn execution_time(startup: f64, steady: f64, end: f64) -> f64 {
    startup + steady + end
}

/// Equation (6): `T_best = workload / mcperf`, the time if every machine computed all along.
pub fn best_time(workload: f64, multi_cluster_performance: f64) -> f64 {
    workload / multi_cluster_performance
}

/// Equation (7): `efficiency = T_best / T_ex`.
pub fn efficiency(best_time: f64, execution_time: f64) -> f64 {
    if execution_time > 0.0 {
        best_time / execution_time
    } else {
        0.0
    }
}

/// The computation term of the worst end without reassignment, first term of (39) and (49):
/// `(oper / min(perf)) * (W - 1) / W` — the slowest worker starts the last task just as the
/// others finish. Zero for no workers.
pub fn last_task_tail(oper: f64, perfs: &[f64]) -> f64 {
    let workers = perfs.len();
    if workers == 0 {
        return 0.0;
    }
    let slowest = perfs.iter().copied().fold(f64::INFINITY, f64::min);
    (oper / slowest) * (workers as f64 - 1.0) / workers as f64
}

/// Equation (99): the computation term of the worst end without reassignment when each worker
/// holds up to `b` tasks (`worker_buffers`: one computing, `b - 1` received ahead),
/// `b * (oper / min(perf)) * (W - 1) / W`. A worker asks for work when a buffer frees, so when
/// the last tasks are handed out the slowest worker may have just started one with `b - 1`
/// more queued: it still has `b` tasks to compute, `b * oper / min(perf)`, of which the steady
/// state (25)(31) counted the share its cluster's `W` workers would have done, as in (39).
/// With `b = 1` it is (39)'s term exactly; `b = 0` counts as 1.
pub fn buffered_last_task_tail(oper: f64, perfs: &[f64], worker_buffers: u32) -> f64 {
    worker_buffers.max(1) as f64 * last_task_tail(oper, perfs)
}

/// The computation term of the worst end with reassignment, middle term of (43) and (50):
/// `(1/W) * sum_{i != fastest} oper / perf[i]`, the sum over every worker except one fastest.
/// Zero for no workers.
pub fn reassigned_last_task_tail(oper: f64, perfs: &[f64]) -> f64 {
    let workers = perfs.len();
    if workers == 0 {
        return 0.0;
    }
    let fastest = perfs
        .iter()
        .enumerate()
        .fold(0, |best, (i, &p)| if p > perfs[best] { i } else { best });
    let others: f64 = perfs
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != fastest)
        .map(|(_, &p)| oper / p)
        .sum();
    others / workers as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
    }

    #[test]
    fn cluster_and_multi_cluster_performance_eq3_eq4() {
        let argentina = cluster_performance(&[0.7909e-3, 0.7951e-3]);
        assert!(close(argentina, 1.586e-3));
        let brazil = cluster_performance(&[0.4683e-3, 1.4845e-3, 0.3642e-3, 0.3750e-3, 0.3743e-3]);
        assert!(close(brazil, 3.0663e-3));
        assert!(close(
            multi_cluster_performance(&[argentina, brazil]),
            4.6523e-3
        ));
    }

    #[test]
    fn execution_best_time_and_efficiency_eq5_eq6_eq7() {
        assert_eq!(execution_time(1.0, 100.0, 4.0), 105.0);
        // 500 tasks of one operation on 4.6523e-3 ops/s: 107,473.7 s
        assert!(close(best_time(500.0, 4.6523e-3), 107_473.722_674_806));
        assert!(close(efficiency(80.0, 100.0), 0.8));
        assert_eq!(efficiency(1.0, 0.0), 0.0);
    }

    #[test]
    fn tails_of_the_worst_end() {
        // perf 1, 2, 4 ops/s, one operation per task
        let perfs = [2.0, 1.0, 4.0];
        // (1/1) * 2/3
        assert!(close(last_task_tail(1.0, &perfs), 2.0 / 3.0));
        // (1/3) * (1/2 + 1/1), the fastest (4) excluded
        assert!(close(reassigned_last_task_tail(1.0, &perfs), 0.5));
        assert_eq!(last_task_tail(1.0, &[]), 0.0);
        assert_eq!(reassigned_last_task_tail(1.0, &[]), 0.0);
        // a single worker has no tail in either form
        assert_eq!(last_task_tail(3.0, &[1.0]), 0.0);
        assert_eq!(reassigned_last_task_tail(3.0, &[1.0]), 0.0);
        // ties: exactly one fastest is excluded
        assert!(close(reassigned_last_task_tail(1.0, &[2.0, 2.0]), 0.25));
        // (99): hetero-no-reassign-buffered.toml's workers, 0.1 s of work per task at perf
        // 10, 10, 5, 2.5 and two buffers: 2 * (1/2.5) * 3/4 = 0.6 s (one buffer: 0.3 s)
        let hetero = [10.0, 10.0, 5.0, 2.5];
        assert!(close(buffered_last_task_tail(1.0, &hetero, 2), 0.6));
        assert!(close(buffered_last_task_tail(1.0, &hetero, 1), 0.3));
        assert_eq!(
            buffered_last_task_tail(1.0, &hetero, 0),
            last_task_tail(1.0, &hetero)
        );
    }
}
