//! The live prediction (model page, section 4): every statistics interval the master
//! re-evaluates the model with what it measured over the last interval — each cluster's steady
//! performance, its workers' available performance and task time, how busy they were, and the
//! state of each link to another cluster — and predicts the remaining and total time by
//! balancing the remaining work over the clusters (equations (61)(94), with the clusters
//! already past their startup: `T_up = 0`), and the run's efficiency (6)(7).

use hmw_model::methodology::balance::{balance_workload, ClusterTiming};

use crate::protocol::{report::ClusterEstimate, LinkState};

/// Share of busy workers above which a cluster is computation bound.
pub const COMPUTE_BOUND_SHARE: f64 = 0.9;

/// What the master measured of one cluster over the last interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterWindow {
    /// The cluster's name.
    pub name: String,
    /// Its own workers (`true`) or a cluster behind a communication manager.
    pub local: bool,
    /// Workers of the cluster (with those of the clusters behind it), when known.
    pub workers: Option<usize>,
    /// Useful tasks delivered since the start.
    pub tasks_done: u64,
    /// Useful tasks and their basic operations delivered during the interval.
    pub window_tasks: u64,
    /// Basic operations of those tasks.
    pub window_operations: f64,
    /// Worker busy time of every result received during the interval, how many tasks those
    /// results stand for, and their basic operations (useful or not).
    pub window_busy_s: f64,
    /// Tasks those results stand for.
    pub window_computed: u64,
    /// Their basic operations.
    pub window_computed_operations: f64,
    /// The link to the cluster, as its communication manager last reported it.
    pub link: Option<LinkState>,
    /// The cluster's rate for the balance, its steady performance measured since its first
    /// result (107), when known (else the interval's delivered rate): over an interval shorter
    /// than a few tasks the delivered rate swings between nothing and several times the
    /// steady one.
    pub steady_ops_per_s: Option<f64>,
    /// Its workers' mean busy seconds per task over the whole run so far, when known (else
    /// the interval's): an interval shorter than a task often holds no result at all.
    pub steady_task_s: Option<f64>,
}

/// The live prediction of the whole run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// Each cluster: this master's own workers first, then those behind its CMs.
    pub clusters: Vec<ClusterEstimate>,
    /// Predicted seconds to the end, when the rates measured allow a prediction.
    pub remaining_s: Option<f64>,
    /// Predicted efficiency of the run (7), from the measured available performance.
    pub efficiency: Option<f64>,
}

/// The live figures of every cluster and the prediction, over an interval of `window_s`
/// seconds, `elapsed_s` seconds into the run, with `done_operations` delivered and
/// `remaining_operations` left (NaN when unknown).
pub fn estimate(
    window_s: f64,
    elapsed_s: f64,
    clusters: &[ClusterWindow],
    done_operations: f64,
    remaining_operations: f64,
) -> Estimate {
    let mut estimates: Vec<ClusterEstimate> = clusters
        .iter()
        .map(|c| {
            let busy_share = c
                .workers
                .filter(|&w| w > 0 && window_s > 0.0)
                .map(|w| (c.window_busy_s / window_s / w as f64).min(1.0));
            let available_ops_per_s = c
                .workers
                .filter(|_| c.window_busy_s > 0.0)
                .map(|w| w as f64 * c.window_computed_operations / c.window_busy_s);
            ClusterEstimate {
                name: c.name.clone(),
                tasks_done: c.tasks_done,
                tasks_per_s: per_second(c.window_tasks as f64, window_s),
                ops_per_s: per_second(c.window_operations, window_s),
                busy_share,
                bottleneck: bottleneck(c, busy_share).map(str::to_owned),
                available_ops_per_s,
                link_out_bytes_per_s: c.link.map(|l| l.send_bytes_per_s),
                link_in_bytes_per_s: c.link.map(|l| l.recv_bytes_per_s),
                ..Default::default()
            }
        })
        .collect();
    let steady = |i: usize| {
        clusters[i]
            .steady_ops_per_s
            .filter(|r| *r > 0.0)
            .unwrap_or(estimates[i].ops_per_s)
    };
    let measured: Vec<usize> = (0..clusters.len()).filter(|&i| steady(i) > 0.0).collect();
    let timings: Vec<ClusterTiming> = measured
        .iter()
        .map(|&i| ClusterTiming {
            perf_ste: steady(i),
            t_up: 0.0,
            // The last task under way ends, on average, one task time after the balance says.
            t_end: clusters[i]
                .steady_task_s
                .unwrap_or(clusters[i].window_busy_s / clusters[i].window_computed.max(1) as f64),
        })
        .collect();
    let remaining_s = if remaining_operations <= 0.0 {
        Some(0.0)
    } else if timings.is_empty() || remaining_operations.is_nan() {
        None
    } else {
        let balance = balance_workload(remaining_operations, &timings);
        let per_task =
            done_operations / clusters.iter().map(|c| c.tasks_done).sum::<u64>().max(1) as f64;
        for (&i, workload) in measured.iter().zip(&balance.workloads) {
            estimates[i].remaining_tasks = Some(workload / per_task.max(f64::MIN_POSITIVE));
            estimates[i].remaining_s = Some(if *workload > 0.0 { balance.time } else { 0.0 });
        }
        Some(balance.time)
    };
    // (6)(7): the whole workload over the clusters' available performance, against the
    // predicted makespan.
    let mcperf: f64 = estimates.iter().filter_map(|e| e.available_ops_per_s).sum();
    let efficiency = remaining_s
        .filter(|_| mcperf > 0.0 && !remaining_operations.is_nan())
        .map(|r| ((done_operations + remaining_operations) / mcperf / (elapsed_s + r)).min(1.0));
    Estimate {
        clusters: estimates,
        remaining_s,
        efficiency,
    }
}

/// What holds a cluster's rate down over the interval, if it delivered anything.
fn bottleneck(cluster: &ClusterWindow, busy_share: Option<f64>) -> Option<&'static str> {
    if cluster.window_computed == 0 {
        return cluster.link.filter(|l| !l.connected).map(|_| "down");
    }
    Some(match (busy_share, cluster.link) {
        (Some(share), _) if share >= COMPUTE_BOUND_SHARE => "compute",
        (_, None) => "lan",
        (_, Some(link)) if !link.connected => "down",
        (_, Some(link)) if link.tasks_waiting => "wan_in",
        (_, Some(_)) => "wan_out",
    })
}

fn per_second(amount: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        amount / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(
        name: &str,
        link: Option<LinkState>,
        workers: usize,
        tasks: u64,
        busy_s: f64,
    ) -> ClusterWindow {
        ClusterWindow {
            name: name.into(),
            local: link.is_none(),
            workers: Some(workers),
            tasks_done: tasks,
            window_tasks: tasks,
            window_operations: tasks as f64,
            window_busy_s: busy_s,
            window_computed: tasks,
            window_computed_operations: tasks as f64,
            link,
            steady_ops_per_s: None,
            steady_task_s: None,
        }
    }

    fn link(tasks_waiting: bool) -> Option<LinkState> {
        Some(LinkState {
            connected: true,
            tasks_waiting,
            send_bytes_per_s: 1000.0,
            recv_bytes_per_s: 5000.0,
            rtt_s: 0.0,
            ..LinkState::default()
        })
    }

    #[test]
    fn bottlenecks_remaining_time_and_efficiency() {
        // Over 2 s: the main cluster's 2 workers did 40 tasks of 0.1 s (busy all along); the
        // far cluster's 4 workers did 40 tasks too but were busy half of the time, its tasks
        // not waiting on this side of the link: its results are slow to come back.
        let clusters = [
            window("main", None, 2, 40, 4.0),
            window("far", link(false), 4, 40, 4.0),
        ];
        let estimate = estimate(2.0, 2.0, &clusters, 80.0, 100.0);
        let [main, far] = &estimate.clusters[..] else {
            panic!("two clusters")
        };
        assert_eq!(main.bottleneck.as_deref(), Some("compute"));
        assert_eq!(far.bottleneck.as_deref(), Some("wan_out"));
        assert_eq!(main.tasks_per_s, 20.0);
        assert_eq!(far.busy_share, Some(0.5));
        assert_eq!(far.link_in_bytes_per_s, Some(5000.0));
        // Available performance (3): 10 operations per busy second per worker.
        assert_eq!(main.available_ops_per_s, Some(20.0));
        assert_eq!(far.available_ops_per_s, Some(40.0));
        // 100 operations at 40 per second, plus one task time (0.1 s) to finish: 2.6 s, the
        // two clusters taking 50 tasks each.
        let remaining = estimate.remaining_s.unwrap();
        assert!((remaining - 2.6).abs() < 1e-9, "{remaining}");
        for c in [main, far] {
            assert!((c.remaining_tasks.unwrap() - 50.0).abs() < 1e-9, "{c:?}");
            assert_eq!(c.remaining_s, Some(remaining));
        }
        // (7): 180 operations over 60 ops/s of available performance (3 s) in 4.6 s.
        let efficiency = estimate.efficiency.unwrap();
        assert!((efficiency - 3.0 / 4.6).abs() < 1e-9, "{efficiency}");

        // Tasks queuing on this side of the link: the link towards the cluster holds it back.
        let waiting = [window("far", link(true), 4, 40, 4.0)];
        assert_eq!(
            super::estimate(2.0, 2.0, &waiting, 40.0, 10.0).clusters[0]
                .bottleneck
                .as_deref(),
            Some("wan_in")
        );
        let down = [ClusterWindow {
            window_computed: 0,
            link: Some(LinkState {
                connected: false,
                ..link(false).unwrap()
            }),
            ..window("far", None, 4, 0, 0.0)
        }];
        assert_eq!(
            super::estimate(2.0, 2.0, &down, 0.0, 10.0).clusters[0]
                .bottleneck
                .as_deref(),
            Some("down")
        );
    }

    /// An interval in which no result came back still predicts from the rate and the task
    /// time measured over the run, and those, not the interval's, set the balance and its end.
    #[test]
    fn the_steady_rate_sets_the_balance() {
        let quiet = ClusterWindow {
            window_tasks: 0,
            window_operations: 0.0,
            window_busy_s: 0.0,
            window_computed: 0,
            steady_ops_per_s: Some(50.0),
            ..window("main", None, 2, 0, 0.0)
        };
        assert_eq!(
            estimate(1.0, 1.0, std::slice::from_ref(&quiet), 0.0, 100.0).remaining_s,
            Some(2.0)
        );
        // The last task ends one task time (0.5 s) after the balance.
        let with_task_time = ClusterWindow {
            steady_task_s: Some(0.5),
            ..quiet
        };
        assert_eq!(
            estimate(1.0, 1.0, &[with_task_time], 0.0, 100.0).remaining_s,
            Some(2.5)
        );
        let busy = ClusterWindow {
            steady_ops_per_s: Some(10.0),
            ..window("main", None, 2, 40, 0.0)
        };
        assert_eq!(
            estimate(2.0, 2.0, &[busy], 40.0, 100.0).remaining_s,
            Some(10.0)
        );
    }

    #[test]
    fn nothing_measured_yet_predicts_nothing() {
        let quiet = ClusterWindow {
            window_tasks: 0,
            window_operations: 0.0,
            window_busy_s: 0.0,
            window_computed: 0,
            ..window("main", None, 2, 0, 0.0)
        };
        let estimate = estimate(1.0, 1.0, &[quiet], 0.0, 10.0);
        assert_eq!(estimate.clusters[0].bottleneck, None);
        assert_eq!(estimate.remaining_s, None);
        assert_eq!(
            super::estimate(1.0, 1.0, &[], 0.0, 0.0).remaining_s,
            Some(0.0)
        );
    }
}
