//! Predicted against measured: makespan, efficiency of the run and of each cluster, the error,
//! and whether the run met the validation targets (`docs/validation.md`).

use std::fmt::Write as _;

use serde::Serialize;

use super::{
    observed::{Observed, ObservedCluster},
    predicted::Predicted,
};

/// A measured makespan counts as inside the prediction in `[(1 - s) best, (1 + s) worst]`.
pub const MAKESPAN_SLACK: f64 = 0.05;
/// The gate of `scripts/test.sh`: a makespan outside `[(1 - g) best, (1 + g) worst]` fails it.
pub const GATE_SLACK: f64 = 0.10;
/// A cluster's measured share of the tasks counts as within the prediction when it is at most
/// this far (a fraction of the run's tasks) from the middle of its predicted range.
pub const SHARE_POINTS: f64 = 0.05;
/// A measured efficiency counts as within the prediction inside
/// `[worst - p, best + p]` (efficiencies as fractions).
pub const EFFICIENCY_POINTS: f64 = 0.05;

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunComparison {
    /// Tasks the plan predicts for.
    pub tasks_planned: u64,
    /// Tasks the run did.
    pub tasks: u64,
    pub makespan_best_s: f64,
    pub makespan_worst_s: f64,
    /// The master's wall time, from its first dispatch.
    pub makespan_s: f64,
    /// `(measured - mid) / mid`, `mid` the middle of the predicted range.
    pub error: f64,
    /// Measured makespan in `[(1 - MAKESPAN_SLACK) best, (1 + MAKESPAN_SLACK) worst]`.
    pub inside: bool,
    /// Measured makespan in `[(1 - GATE_SLACK) best, (1 + GATE_SLACK) worst]`.
    pub gate_inside: bool,
    /// The band's width, `worst / best - 1`.
    pub band_width: f64,
    pub efficiency_best: f64,
    pub efficiency_worst: f64,
    /// `(tasks * oper / mcperf) / makespan` (6)(7), with the plan's `mcperf`.
    pub efficiency: f64,
    /// Measured efficiency in `[worst - EFFICIENCY_POINTS, best + EFFICIENCY_POINTS]`.
    pub efficiency_within: bool,
}

/// One cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterComparison {
    pub name: String,
    pub bottleneck: &'static str,
    /// Predicted steady rate `perf_ste / oper`, tasks per second.
    pub steady_tasks_per_s: f64,
    /// Measured rate between the samples where the cluster had done 10 % and 90 % of its
    /// tasks (its whole-run rate when the samples are too few); `None` without tasks.
    pub measured_steady_tasks_per_s: Option<f64>,
    /// Predicted tasks, best and worst case (with the clusters counted in this one).
    pub tasks_best: u64,
    pub tasks_worst: u64,
    /// Tasks the master saw this cluster deliver (a cluster further down a tree included).
    pub tasks: u64,
    /// The middle of the predicted share, `(tasks_best + tasks_worst) / 2` over the planned
    /// tasks.
    pub share_predicted: f64,
    /// `tasks` over the run's tasks.
    pub share: f64,
    /// `|share - share_predicted| <= SHARE_POINTS`.
    pub share_within: bool,
    pub efficiency_best: f64,
    pub efficiency_worst: f64,
    /// From its workers' busy time: their summed busy seconds over `W * makespan` (the busy
    /// share its (sub-)master reports, times that master's wall time, over the main master's
    /// wall time); `None` when its statistics never came back.
    pub efficiency: Option<f64>,
    /// `efficiency` in `[worst - EFFICIENCY_POINTS, best + EFFICIENCY_POINTS]`.
    pub efficiency_within: bool,
    /// The cluster whose line counts this one (a cluster further down a tree, which the
    /// master sees through the cluster it hangs from): not compared on its own.
    pub counted_in: Option<String>,
}

/// Predicted against measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub name: String,
    pub run: RunComparison,
    pub clusters: Vec<ClusterComparison>,
}

/// `(measured - mid) / mid` with `mid = (best + worst) / 2`.
pub fn makespan_error(measured: f64, best: f64, worst: f64) -> f64 {
    let mid = 0.5 * (best + worst);
    if mid > 0.0 {
        (measured - mid) / mid
    } else {
        0.0
    }
}

/// The tolerance on the makespan: `[(1 - MAKESPAN_SLACK) best, (1 + MAKESPAN_SLACK) worst]`.
pub fn makespan_tolerance(best: f64, worst: f64) -> (f64, f64) {
    (
        (1.0 - MAKESPAN_SLACK) * best,
        (1.0 + MAKESPAN_SLACK) * worst,
    )
}

/// Whether `measured` lies in `[(1 - MAKESPAN_SLACK) best, (1 + MAKESPAN_SLACK) worst]`.
pub fn makespan_inside(measured: f64, best: f64, worst: f64) -> bool {
    within_slack(measured, best, worst, MAKESPAN_SLACK)
}

/// Whether `measured` lies in `[(1 - slack) best, (1 + slack) worst]`.
pub fn within_slack(measured: f64, best: f64, worst: f64, slack: f64) -> bool {
    measured >= (1.0 - slack) * best && measured <= (1.0 + slack) * worst
}

/// The width of a predicted band, `worst / best - 1` (0 for an empty one).
pub fn band_width(best: f64, worst: f64) -> f64 {
    if best > 0.0 {
        worst / best - 1.0
    } else {
        0.0
    }
}

/// Whether a measured share (a fraction of the run's tasks) is within `SHARE_POINTS` of the
/// middle of the predicted one.
pub fn share_within(measured: f64, predicted: f64) -> bool {
    (measured - predicted).abs() <= SHARE_POINTS + 1e-12
}

/// Whether `measured` lies in `[worst - EFFICIENCY_POINTS, best + EFFICIENCY_POINTS]`.
pub fn efficiency_within(measured: f64, best: f64, worst: f64) -> bool {
    let (low, high) = (best.min(worst), best.max(worst));
    measured >= low - EFFICIENCY_POINTS - 1e-12 && measured <= high + EFFICIENCY_POINTS + 1e-12
}

/// The rate of a cluster between the samples where it had done 10 % and 90 % of its tasks.
pub fn steady_rate(cluster: &ObservedCluster) -> Option<f64> {
    let total = cluster.tasks_done();
    if total == 0 {
        return None;
    }
    let low = cluster
        .done
        .iter()
        .rev()
        .find(|&&(_, d)| d as f64 <= 0.1 * total as f64);
    let high = cluster
        .done
        .iter()
        .find(|&&(_, d)| d as f64 >= 0.9 * total as f64);
    match (low, high) {
        (Some(&(t0, d0)), Some(&(t1, d1))) if t1 > t0 && d1 > d0 => {
            Some((d1 - d0) as f64 / (t1 - t0))
        }
        _ => {
            let end = cluster.done.last().map_or(0.0, |&(t, _)| t);
            (end > 0.0).then(|| total as f64 / end)
        }
    }
}

impl Comparison {
    /// Compare a prediction for `tasks_planned` tasks with the run observed.
    pub fn new(
        name: &str,
        tasks_planned: u64,
        predicted: &Predicted,
        observed: &Observed,
    ) -> Comparison {
        let wall = observed.wall_s;
        let per_second = |x: f64| if wall > 0.0 { x / wall } else { 0.0 };
        let mcperf: f64 = predicted.clusters.iter().map(|c| c.cperf).sum();
        let efficiency = if mcperf > 0.0 {
            per_second(observed.tasks as f64 * predicted.oper / mcperf)
        } else {
            0.0
        };
        let run = RunComparison {
            tasks_planned,
            tasks: observed.tasks,
            makespan_best_s: predicted.t_ex_best,
            makespan_worst_s: predicted.t_ex_worst,
            makespan_s: wall,
            error: makespan_error(wall, predicted.t_ex_best, predicted.t_ex_worst),
            inside: makespan_inside(wall, predicted.t_ex_best, predicted.t_ex_worst),
            gate_inside: within_slack(wall, predicted.t_ex_best, predicted.t_ex_worst, GATE_SLACK),
            band_width: band_width(predicted.t_ex_best, predicted.t_ex_worst),
            efficiency_best: predicted.efficiency_best,
            efficiency_worst: predicted.efficiency_worst,
            efficiency,
            efficiency_within: efficiency_within(
                efficiency,
                predicted.efficiency_best,
                predicted.efficiency_worst,
            ),
        };
        let share_of = |tasks: f64| {
            if tasks_planned > 0 {
                tasks / tasks_planned as f64
            } else {
                0.0
            }
        };
        let clusters = predicted
            .clusters
            .iter()
            .map(|c| {
                let seen = observed.clusters.iter().find(|o| o.name == c.name);
                let tasks = seen.map_or(0, ObservedCluster::tasks_done);
                let efficiency = seen
                    .and_then(|o| o.workers)
                    .and_then(|w| (wall > 0.0).then(|| w.busy_share * w.wall_s / wall));
                let share_predicted = share_of(0.5 * (c.best.tasks + c.worst.tasks) as f64);
                let share = if observed.tasks > 0 {
                    tasks as f64 / observed.tasks as f64
                } else {
                    0.0
                };
                ClusterComparison {
                    name: c.name.clone(),
                    bottleneck: c.bottleneck.name(),
                    steady_tasks_per_s: c.best.tasks_per_s,
                    measured_steady_tasks_per_s: seen.and_then(steady_rate),
                    tasks_best: c.best.tasks,
                    tasks_worst: c.worst.tasks,
                    tasks,
                    share_predicted,
                    share,
                    share_within: share_within(share, share_predicted),
                    efficiency_best: c.efficiency_best,
                    efficiency_worst: c.efficiency_worst,
                    efficiency,
                    efficiency_within: efficiency.is_some_and(|e| {
                        efficiency_within(e, c.efficiency_best, c.efficiency_worst)
                    }),
                    counted_in: None,
                }
            })
            .collect();
        Comparison {
            name: name.to_owned(),
            run,
            clusters,
        }
    }

    /// Clusters further down a tree: `ancestors` maps each cluster to the one under the main
    /// cluster its path goes through (itself for a cluster under the main one). The master
    /// sees such a cluster's tasks in its ancestor's line, so its predicted tasks are added to
    /// the ancestor's, the share is compared for the whole subtree, and the cluster is marked
    /// `counted_in` (the ancestor's efficiency stays its own workers').
    pub fn fold_subtrees(&mut self, ancestors: &[(String, String)], tasks_planned: u64) {
        let mut added: Vec<(String, u64, u64)> = Vec::new();
        for c in &mut self.clusters {
            let Some((_, top)) = ancestors
                .iter()
                .find(|(name, top)| *name == c.name && *top != c.name)
            else {
                continue;
            };
            c.counted_in = Some(top.clone());
            c.share_within = false;
            c.efficiency_within = false;
            added.push((top.clone(), c.tasks_best, c.tasks_worst));
        }
        for (top, best, worst) in added {
            if let Some(t) = self.clusters.iter_mut().find(|c| c.name == top) {
                t.tasks_best += best;
                t.tasks_worst += worst;
                if tasks_planned > 0 {
                    t.share_predicted =
                        0.5 * (t.tasks_best + t.tasks_worst) as f64 / tasks_planned as f64;
                }
                t.share_within = share_within(t.share, t.share_predicted);
            }
        }
    }

    /// The clusters compared on their own (not counted in another's line).
    pub fn compared_clusters(&self) -> impl Iterator<Item = &ClusterComparison> {
        self.clusters.iter().filter(|c| c.counted_in.is_none())
    }

    /// The tolerance on the makespan, seconds: `[(1 - MAKESPAN_SLACK) best, (1 +
    /// MAKESPAN_SLACK) worst]`.
    pub fn tolerance(&self) -> (f64, f64) {
        makespan_tolerance(self.run.makespan_best_s, self.run.makespan_worst_s)
    }

    /// `PASS` or `FAIL` and why: whether the measured makespan is inside the tolerance. The
    /// table and the chart's title both say this, so they cannot disagree.
    pub fn verdict(&self) -> String {
        let (low, high) = self.tolerance();
        format!(
            "{}: measured makespan {:.3} s {} the tolerance {:.3} to {:.3} s",
            if self.run.inside { "PASS" } else { "FAIL" },
            self.run.makespan_s,
            if self.run.inside { "inside" } else { "outside" },
            low,
            high
        )
    }

    /// The table printed by `hmw report`.
    pub fn to_text(&self) -> String {
        let r = &self.run;
        let mut out = String::new();
        if r.tasks != r.tasks_planned {
            let _ = writeln!(
                out,
                "warning: the plan predicts {} tasks, the run did {}",
                r.tasks_planned, r.tasks
            );
        }
        let _ = writeln!(
            out,
            "{:<11} {:>10} {:>10} {:>10} {:>9}  target",
            "", "best", "worst", "measured", "error"
        );
        let _ = writeln!(
            out,
            "{:<11} {:>10.3} {:>10.3} {:>10.3} {:>+8.1}%  inside [{:.2} best, {:.2} worst]: {}",
            "makespan s",
            r.makespan_best_s,
            r.makespan_worst_s,
            r.makespan_s,
            100.0 * r.error,
            1.0 - MAKESPAN_SLACK,
            1.0 + MAKESPAN_SLACK,
            yes_no(r.inside)
        );
        let _ = writeln!(
            out,
            "{:<11} {:>10.3} {:>10.3} {:>10.3} {:>9}  within {:.0} points: {}",
            "efficiency",
            r.efficiency_best,
            r.efficiency_worst,
            r.efficiency,
            "",
            100.0 * EFFICIENCY_POINTS,
            yes_no(r.efficiency_within)
        );
        let _ = writeln!(
            out,
            "{:<11} {:>10.3}  worst / best - 1",
            "band width", r.band_width
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<12} {:<10} {:>21} {:>20} {:>17} {:>27}  within",
            "cluster",
            "bottleneck",
            "steady tasks/s p / m",
            "tasks p best/worst/m",
            "share p / m",
            "efficiency (busy) p b/w/m",
        );
        for c in &self.clusters {
            let measured_rate = c
                .measured_steady_tasks_per_s
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"));
            let efficiency = c
                .efficiency
                .map_or_else(|| "-".to_owned(), |e| format!("{e:.3}"));
            let within = match &c.counted_in {
                Some(top) => format!("counted in {top}"),
                None => format!(
                    "share {}, efficiency {}",
                    yes_no(c.share_within),
                    yes_no(c.efficiency_within)
                ),
            };
            let _ = writeln!(
                out,
                "{:<12} {:<10} {:>21} {:>20} {:>17} {:>27}  {within}",
                c.name,
                c.bottleneck,
                format!("{:.2} / {measured_rate}", c.steady_tasks_per_s),
                format!("{}/{}/{}", c.tasks_best, c.tasks_worst, c.tasks),
                format!(
                    "{:.1}% / {:.1}%",
                    100.0 * c.share_predicted,
                    100.0 * c.share
                ),
                format!(
                    "{:.3}/{:.3}/{efficiency}",
                    c.efficiency_best, c.efficiency_worst
                ),
            );
        }
        let _ = writeln!(out, "verdict {}", self.verdict());
        out
    }

    /// One `key=value` line for scripts. `clusters_eff_within` and `shares_within` count the
    /// clusters compared on their own (see [`Comparison::fold_subtrees`]).
    pub fn summary_line(&self) -> String {
        let r = &self.run;
        let compared = self.compared_clusters().count();
        let within = self
            .compared_clusters()
            .filter(|c| c.efficiency_within)
            .count();
        let shares = self.compared_clusters().filter(|c| c.share_within).count();
        let bottlenecks: Vec<String> = self
            .clusters
            .iter()
            .map(|c| format!("{}:{}", c.name, c.bottleneck))
            .collect();
        format!(
            "report name={} tasks={} makespan_s={:.3} best_s={:.3} worst_s={:.3} err={:.4} \
             inside={} gate_inside={} band_width={:.4} efficiency={:.3} eff_best={:.3} \
             eff_worst={:.3} eff_within={} clusters_eff_within={within}/{compared} \
             shares_within={shares}/{compared} bottlenecks={}",
            self.name,
            r.tasks,
            r.makespan_s,
            r.makespan_best_s,
            r.makespan_worst_s,
            r.error,
            r.inside,
            r.gate_inside,
            r.band_width,
            r.efficiency,
            r.efficiency_best,
            r.efficiency_worst,
            r.efficiency_within,
            bottlenecks.join(",")
        )
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hmw_model::Bottleneck;

    use crate::report::{
        observed::tests::two_cluster_stats,
        predicted::{PredictedCluster, Profile},
    };

    pub(crate) fn two_cluster_prediction() -> Predicted {
        let profile = |tasks, rate, t_end| Profile {
            tasks,
            t_up: 0.1,
            t_end,
            tasks_per_s: rate,
        };
        Predicted {
            clusters: vec![
                PredictedCluster {
                    name: "main".into(),
                    bottleneck: Bottleneck::Compute,
                    cperf: 10.0,
                    best: profile(62, 10.0, 0.05),
                    worst: profile(61, 10.0, 0.2),
                    efficiency_best: 0.90,
                    efficiency_worst: 0.88,
                },
                PredictedCluster {
                    name: "spain".into(),
                    bottleneck: Bottleneck::WanOut,
                    cperf: 8.0,
                    best: profile(18, 5.0, 0.3),
                    worst: profile(19, 5.0, 0.6),
                    efficiency_best: 0.30,
                    efficiency_worst: 0.29,
                },
            ],
            oper: 1.0,
            t_best: 80.0 / 18.0,
            t_ex_best: 6.3,
            t_ex_worst: 6.4,
            efficiency_best: 0.71,
            efficiency_worst: 0.69,
        }
    }

    #[test]
    fn error_and_targets() {
        assert!((makespan_error(10.5, 9.0, 11.0) - 0.05).abs() < 1e-12);
        assert!(makespan_inside(8.6, 9.0, 11.0));
        assert!(!makespan_inside(8.5, 9.0, 11.0));
        assert!(makespan_inside(11.5, 9.0, 11.0));
        assert!(!makespan_inside(11.6, 9.0, 11.0));
        assert!(efficiency_within(0.85, 0.95, 0.9));
        assert!(!efficiency_within(0.84, 0.95, 0.9));
        assert!(efficiency_within(1.0, 0.95, 0.9));
        assert!(!efficiency_within(1.01, 0.95, 0.9));
    }

    #[test]
    fn compares_run_and_clusters() {
        let mut stats = two_cluster_stats();
        // main's two workers busy 90 % of its 6.5 s; spain's statistics never came back
        stats.cluster.efficiency = 0.9;
        let observed = Observed::from_stats(&stats);
        let comparison = Comparison::new("two", 80, &two_cluster_prediction(), &observed);
        let r = &comparison.run;
        assert_eq!(r.makespan_s, 6.5);
        assert!((r.error - (6.5 - 6.35) / 6.35).abs() < 1e-12);
        assert!(r.inside);
        // 80 tasks over mcperf 18 tasks/s = 4.444 s best possible, over 6.5 s.
        assert!((r.efficiency - 80.0 / 18.0 / 6.5).abs() < 1e-12);
        assert!(r.efficiency_within);
        assert!(r.gate_inside);
        assert!((r.band_width - (6.4 / 6.3 - 1.0)).abs() < 1e-12);
        let main = &comparison.clusters[0];
        assert_eq!(main.tasks, 65);
        // from busy time, not the makespan: 0.9 in [0.88 - 0.05, 0.90 + 0.05]
        assert!((main.efficiency.unwrap() - 0.9).abs() < 1e-12);
        assert!(main.efficiency_within);
        // share 65/80 = 0.8125 against the middle of 62 and 61 of 80, 0.76875: 4.4 points
        assert!((main.share - 0.8125).abs() < 1e-12);
        assert!((main.share_predicted - 0.76875).abs() < 1e-12);
        assert!(main.share_within);
        // main: 10 % of 65 = 6.5 -> the sample at 0 s (0 done); 90 % = 58.5 -> 6 s (60 done).
        assert_eq!(main.measured_steady_tasks_per_s, Some(10.0));
        let spain = &comparison.clusters[1];
        assert_eq!(
            (spain.tasks_best, spain.tasks_worst, spain.tasks),
            (18, 19, 15)
        );
        assert_eq!(spain.efficiency, None);
        assert!(!spain.efficiency_within);
        let text = comparison.to_text();
        assert!(text.contains("makespan s"), "{text}");
        assert!(text.contains("spain"), "{text}");
        assert!(text.contains("wan_out"), "{text}");
        // 6.5 s in [0.95 * 6.3, 1.05 * 6.4] = [5.985, 6.72].
        assert_eq!(comparison.tolerance(), (0.95 * 6.3, 1.05 * 6.4));
        assert!(
            text.ends_with(
                "verdict PASS: measured makespan 6.500 s inside the tolerance 5.985 to 6.720 s\n"
            ),
            "{text}"
        );
        let line = comparison.summary_line();
        assert!(line.starts_with("report name=two tasks=80 makespan_s=6.500 best_s=6.300"));
        assert!(line.contains("inside=true"), "{line}");
        assert!(
            line.ends_with(
                "clusters_eff_within=1/2 shares_within=2/2 \
                 bottlenecks=main:compute,spain:wan_out"
            ),
            "{line}"
        );
        assert!(
            line.contains(" gate_inside=true band_width=0.0159 "),
            "{line}"
        );
    }

    #[test]
    fn shares_and_gate_can_fail_both_ways() {
        assert!(share_within(0.30, 0.25));
        assert!(!share_within(0.31, 0.25));
        assert!(!share_within(0.19, 0.25));
        // [0.90 best, 1.10 worst]
        assert!(within_slack(9.0, 10.0, 11.0, GATE_SLACK));
        assert!(!within_slack(8.99, 10.0, 11.0, GATE_SLACK));
        assert!(within_slack(12.1, 10.0, 11.0, GATE_SLACK));
        assert!(!within_slack(12.11, 10.0, 11.0, GATE_SLACK));
        assert_eq!(band_width(0.0, 1.0), 0.0);
    }

    #[test]
    fn a_cluster_down_a_tree_is_compared_in_its_ancestors_line() {
        let mut prediction = two_cluster_prediction();
        let mut brazil = prediction.clusters[1].clone();
        brazil.name = "brazil".into();
        prediction.clusters[0].best.tasks = 44;
        prediction.clusters[0].worst.tasks = 42;
        prediction.clusters.push(brazil);
        let observed = Observed::from_stats(&two_cluster_stats());
        let mut comparison = Comparison::new("tree", 80, &prediction, &observed);
        // before folding, spain's 15 tasks are compared with its own share, 18.5 of 80
        assert!(comparison.clusters[1].share_within);
        comparison.fold_subtrees(
            &[
                ("spain".into(), "spain".into()),
                ("brazil".into(), "spain".into()),
            ],
            80,
        );
        let spain = &comparison.clusters[1];
        assert_eq!((spain.tasks_best, spain.tasks_worst), (36, 38));
        // 15 of 80 against the middle of 36 and 38: 0.1875 against 0.4625
        assert!((spain.share_predicted - 0.4625).abs() < 1e-12);
        assert!(!spain.share_within);
        assert_eq!(comparison.clusters[2].counted_in.as_deref(), Some("spain"));
        assert_eq!(comparison.compared_clusters().count(), 2);
        assert!(comparison.summary_line().contains("shares_within=0/2"));
    }
}
