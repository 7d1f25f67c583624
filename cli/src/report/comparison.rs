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
    pub tasks_best: u64,
    pub tasks_worst: u64,
    pub tasks: u64,
    pub efficiency_best: f64,
    pub efficiency_worst: f64,
    /// `(tasks * oper / cperf) / makespan`: the model's definition with the measured share
    /// and makespan.
    pub efficiency: f64,
    pub efficiency_within: bool,
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
    let (low, high) = makespan_tolerance(best, worst);
    measured >= low && measured <= high
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
            efficiency_best: predicted.efficiency_best,
            efficiency_worst: predicted.efficiency_worst,
            efficiency,
            efficiency_within: efficiency_within(
                efficiency,
                predicted.efficiency_best,
                predicted.efficiency_worst,
            ),
        };
        let clusters = predicted
            .clusters
            .iter()
            .map(|c| {
                let seen = observed.clusters.iter().find(|o| o.name == c.name);
                let tasks = seen.map_or(0, ObservedCluster::tasks_done);
                let efficiency = if c.cperf > 0.0 {
                    per_second(tasks as f64 * predicted.oper / c.cperf)
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
                    efficiency_best: c.efficiency_best,
                    efficiency_worst: c.efficiency_worst,
                    efficiency,
                    efficiency_within: efficiency_within(
                        efficiency,
                        c.efficiency_best,
                        c.efficiency_worst,
                    ),
                }
            })
            .collect();
        Comparison {
            name: name.to_owned(),
            run,
            clusters,
        }
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
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<12} {:<10} {:>21} {:>20} {:>25}  within",
            "cluster",
            "bottleneck",
            "steady tasks/s p / m",
            "tasks p best/worst/m",
            "efficiency p best/worst/m",
        );
        for c in &self.clusters {
            let measured_rate = c
                .measured_steady_tasks_per_s
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"));
            let _ = writeln!(
                out,
                "{:<12} {:<10} {:>21} {:>20} {:>25}  {}",
                c.name,
                c.bottleneck,
                format!("{:.2} / {measured_rate}", c.steady_tasks_per_s),
                format!("{}/{}/{}", c.tasks_best, c.tasks_worst, c.tasks),
                format!(
                    "{:.3}/{:.3}/{:.3}",
                    c.efficiency_best, c.efficiency_worst, c.efficiency
                ),
                yes_no(c.efficiency_within)
            );
        }
        let _ = writeln!(out, "verdict {}", self.verdict());
        out
    }

    /// One `key=value` line for scripts.
    pub fn summary_line(&self) -> String {
        let r = &self.run;
        let within = self.clusters.iter().filter(|c| c.efficiency_within).count();
        let bottlenecks: Vec<String> = self
            .clusters
            .iter()
            .map(|c| format!("{}:{}", c.name, c.bottleneck))
            .collect();
        format!(
            "report name={} tasks={} makespan_s={:.3} best_s={:.3} worst_s={:.3} err={:.4} \
             inside={} efficiency={:.3} eff_best={:.3} eff_worst={:.3} eff_within={} \
             clusters_eff_within={within}/{} bottlenecks={}",
            self.name,
            r.tasks,
            r.makespan_s,
            r.makespan_best_s,
            r.makespan_worst_s,
            r.error,
            r.inside,
            r.efficiency,
            r.efficiency_best,
            r.efficiency_worst,
            r.efficiency_within,
            self.clusters.len(),
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
        let observed = Observed::from_stats(&two_cluster_stats());
        let comparison = Comparison::new("two", 80, &two_cluster_prediction(), &observed);
        let r = &comparison.run;
        assert_eq!(r.makespan_s, 6.5);
        assert!((r.error - (6.5 - 6.35) / 6.35).abs() < 1e-12);
        assert!(r.inside);
        // 80 tasks over mcperf 18 tasks/s = 4.444 s best possible, over 6.5 s.
        assert!((r.efficiency - 80.0 / 18.0 / 6.5).abs() < 1e-12);
        assert!(r.efficiency_within);
        let main = &comparison.clusters[0];
        assert_eq!(main.tasks, 65);
        assert!((main.efficiency - 6.5 / 6.5).abs() < 1e-12);
        assert!(!main.efficiency_within); // 1.0 > 0.90 + 0.05
                                          // main: 10 % of 65 = 6.5 -> the sample at 0 s (0 done); 90 % = 58.5 -> 6 s (60 done).
        assert_eq!(main.measured_steady_tasks_per_s, Some(10.0));
        let spain = &comparison.clusters[1];
        assert_eq!(
            (spain.tasks_best, spain.tasks_worst, spain.tasks),
            (18, 19, 15)
        );
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
            line.ends_with("clusters_eff_within=1/2 bottlenecks=main:compute,spain:wan_out"),
            "{line}"
        );
    }
}
