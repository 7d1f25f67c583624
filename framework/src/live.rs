//! The live prediction (model page, section 4): every statistics interval the master
//! re-evaluates the model with what it measured over the last interval — each cluster's steady
//! performance and task time, how busy its workers were — and predicts the remaining and total
//! time by balancing the remaining work over the clusters (equations (61)(94), with the
//! clusters already past their startup: `T_up = 0`).

use serde::{Deserialize, Serialize};

use crate::model::methodology::balance::{balance_workload, ClusterTiming};

/// Share of busy workers above which a cluster is computation bound.
pub const COMPUTE_BOUND_SHARE: f64 = 0.9;

/// What the master measured of one cluster over the last interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterWindow {
    pub name: String,
    /// Its own workers (`true`) or a cluster behind a communication manager.
    pub local: bool,
    /// Workers of the cluster (with those of the clusters behind it), when known.
    pub workers: Option<usize>,
    /// Useful tasks delivered since the start.
    pub tasks_done: u64,
    /// Useful tasks and their basic operations delivered during the interval.
    pub window_tasks: u64,
    pub window_operations: f64,
    /// Worker busy time of every result received during the interval, and how many tasks
    /// those results stand for.
    pub window_busy_s: f64,
    pub window_computed: u64,
}

/// One cluster's live figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterEstimate {
    pub name: String,
    pub tasks_done: u64,
    /// Over the last interval.
    pub tasks_per_s: f64,
    /// Current steady performance, basic operations per second.
    pub ops_per_s: f64,
    /// Mean share of its workers that were busy.
    pub busy_share: Option<f64>,
    /// `compute` when its workers are busy, else the path that starves them (`lan` for the
    /// master's own workers, `wan` for a cluster behind a CM); absent without results.
    pub bottleneck: Option<String>,
}

/// The live figures of every cluster and the predicted remaining time.
pub fn estimate(
    window_s: f64,
    clusters: &[ClusterWindow],
    remaining_operations: f64,
) -> (Vec<ClusterEstimate>, Option<f64>) {
    let estimates: Vec<ClusterEstimate> = clusters
        .iter()
        .map(|c| {
            let busy_share = c
                .workers
                .filter(|&w| w > 0 && window_s > 0.0)
                .map(|w| (c.window_busy_s / window_s / w as f64).min(1.0));
            let bottleneck = (c.window_computed > 0).then(|| {
                match busy_share {
                    Some(share) if share >= COMPUTE_BOUND_SHARE => "compute",
                    _ if c.local => "lan",
                    _ => "wan",
                }
                .to_owned()
            });
            ClusterEstimate {
                name: c.name.clone(),
                tasks_done: c.tasks_done,
                tasks_per_s: per_second(c.window_tasks as f64, window_s),
                ops_per_s: per_second(c.window_operations, window_s),
                busy_share,
                bottleneck,
            }
        })
        .collect();
    let timings: Vec<ClusterTiming> = clusters
        .iter()
        .zip(&estimates)
        .filter(|(_, e)| e.ops_per_s > 0.0)
        .map(|(c, e)| ClusterTiming {
            perf_ste: e.ops_per_s,
            t_up: 0.0,
            // The last task under way ends, on average, one task time after the balance says.
            t_end: c.window_busy_s / c.window_computed.max(1) as f64,
        })
        .collect();
    let remaining = if remaining_operations <= 0.0 {
        Some(0.0)
    } else if timings.is_empty() {
        None
    } else {
        Some(balance_workload(remaining_operations, &timings).time)
    };
    (estimates, remaining)
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

    fn window(name: &str, local: bool, workers: usize, tasks: u64, busy_s: f64) -> ClusterWindow {
        ClusterWindow {
            name: name.into(),
            local,
            workers: Some(workers),
            tasks_done: tasks,
            window_tasks: tasks,
            window_operations: tasks as f64,
            window_busy_s: busy_s,
            window_computed: tasks,
        }
    }

    #[test]
    fn bottlenecks_and_remaining_time() {
        // Over 2 s: the main cluster's 2 workers did 40 tasks of 0.1 s (busy all along);
        // the far cluster's 4 workers did 40 tasks too but were busy half of the time.
        let clusters = [
            window("main", true, 2, 40, 4.0),
            window("far", false, 4, 40, 4.0),
        ];
        let (estimates, remaining) = estimate(2.0, &clusters, 100.0);
        assert_eq!(estimates[0].bottleneck.as_deref(), Some("compute"));
        assert_eq!(estimates[1].bottleneck.as_deref(), Some("wan"));
        assert_eq!(estimates[0].tasks_per_s, 20.0);
        assert_eq!(estimates[1].busy_share, Some(0.5));
        // 100 operations at 40 per second, plus one task time (0.1 s) to finish: 2.6 s.
        assert!((remaining.unwrap() - 2.6).abs() < 1e-9, "{remaining:?}");
    }

    #[test]
    fn nothing_measured_yet_predicts_nothing() {
        let quiet = ClusterWindow {
            window_tasks: 0,
            window_operations: 0.0,
            window_busy_s: 0.0,
            window_computed: 0,
            ..window("main", true, 2, 0, 0.0)
        };
        let (estimates, remaining) = estimate(1.0, &[quiet], 10.0);
        assert_eq!(estimates[0].bottleneck, None);
        assert_eq!(remaining, None);
        assert_eq!(estimate(1.0, &[], 0.0).1, Some(0.0));
    }
}
