//! The model's prediction as curves over time: for each cluster, its completion rate through
//! the three states of a pipelined execution (startup, steady state, end; `design/model.md`
//! section 2) and the tasks done so far, for the best and the worst case.
//!
//! The model gives durations, not shapes; the shapes drawn here are the simplest that keep
//! its figures:
//! - startup: workers receive their first task one after another, so the rate climbs
//!   linearly from 0 to the steady level; the model's `T_up` (12)(18)(21) is the mean wait,
//!   so the climb lasts `2 T_up`;
//! - steady state: `perf_ste / oper` tasks per second (26)(32)(36);
//! - end: workers fall idle one after another, so the rate falls linearly to 0 at the
//!   cluster's `T_ex_c` (5); the fall is centred on the end of the steady state, so it
//!   lasts `2 T_end`.
//!
//! With these, the area under the curve (the tasks done) is exactly the cluster's share
//! `level * T_ste`, and the curve ends at `T_up + T_ste + T_end`. A run too short for a
//! steady state (`T_ste < T_up + T_end`) gets a triangle of the same area and end.

use hmw_model::{Bottleneck, ClusterPrediction, Prediction};

/// One case (best or worst) of one cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// Tasks of the cluster's balanced share.
    pub tasks: u64,
    /// Startup time `T_up`, seconds.
    pub t_up: f64,
    /// End time `T_end`, seconds.
    pub t_end: f64,
    /// Steady rate, tasks per second.
    pub tasks_per_s: f64,
}

/// A cluster's prediction, drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictedCluster {
    pub name: String,
    pub bottleneck: Bottleneck,
    /// `cperf` (3), basic operations per second.
    pub cperf: f64,
    pub best: Profile,
    pub worst: Profile,
    pub efficiency_best: f64,
    pub efficiency_worst: f64,
}

/// The whole prediction, drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub clusters: Vec<PredictedCluster>,
    /// Basic operations per task.
    pub oper: f64,
    /// Best possible time (6), seconds.
    pub t_best: f64,
    pub t_ex_best: f64,
    pub t_ex_worst: f64,
    pub efficiency_best: f64,
    pub efficiency_worst: f64,
}

impl Profile {
    /// `T_ste = tasks / level` (25)(31), seconds.
    pub fn steady_time(&self) -> f64 {
        if self.tasks_per_s > 0.0 {
            self.tasks as f64 / self.tasks_per_s
        } else {
            0.0
        }
    }

    /// `T_ex_c = T_up + T_ste + T_end` (5); zero for a cluster without tasks.
    pub fn execution_time(&self) -> f64 {
        if self.tasks == 0 {
            0.0
        } else {
            self.t_up + self.steady_time() + self.t_end
        }
    }

    /// The corners of the rate curve `(seconds, tasks per second)`, from `(0, 0)` to
    /// `(T_ex_c, 0)` (see the module documentation for the shape).
    pub fn rate_points(&self) -> Vec<(f64, f64)> {
        let t_ex = self.execution_time();
        if t_ex <= 0.0 {
            return vec![(0.0, 0.0)];
        }
        let level = self.tasks_per_s;
        let climbed = 2.0 * self.t_up;
        let falls_from = self.t_up + self.steady_time() - self.t_end;
        if falls_from >= climbed {
            let mut points = vec![(0.0, 0.0)];
            if climbed > 0.0 {
                points.push((climbed, level));
            } else {
                points.push((0.0, level));
            }
            points.push((falls_from, level));
            points.push((t_ex, 0.0));
            points
        } else {
            // Too short for a steady state: a triangle of the same area and end, its peak
            // splitting the run as startup and end split it.
            let area = self.tasks as f64;
            let peak = 2.0 * area / t_ex;
            let split = if self.t_up + self.t_end > 0.0 {
                self.t_up / (self.t_up + self.t_end)
            } else {
                0.5
            };
            vec![(0.0, 0.0), (t_ex * split, peak), (t_ex, 0.0)]
        }
    }

    /// When the rate starts falling towards the end (0 for a run too short for a steady
    /// state).
    pub fn end_starts(&self) -> f64 {
        let falls_from = self.t_up + self.steady_time() - self.t_end;
        if falls_from >= 2.0 * self.t_up {
            falls_from
        } else {
            0.0
        }
    }

    /// Tasks done at time `t` (the area under the rate curve up to `t`).
    pub fn done_at(&self, t: f64) -> f64 {
        let points = self.rate_points();
        let mut area = 0.0;
        for w in points.windows(2) {
            let ((t0, r0), (t1, r1)) = (w[0], w[1]);
            if t <= t0 {
                break;
            }
            let end = t.min(t1);
            if t1 > t0 {
                let r_end = r0 + (r1 - r0) * (end - t0) / (t1 - t0);
                area += 0.5 * (r0 + r_end) * (end - t0);
            }
        }
        area
    }

    /// Rate at time `t` (0 outside the run).
    pub fn rate_at(&self, t: f64) -> f64 {
        let points = self.rate_points();
        for w in points.windows(2) {
            let ((t0, r0), (t1, r1)) = (w[0], w[1]);
            if t >= t0 && t <= t1 && t1 > t0 {
                return r0 + (r1 - r0) * (t - t0) / (t1 - t0);
            }
        }
        0.0
    }
}

impl PredictedCluster {
    fn from_prediction(c: &ClusterPrediction, oper: f64) -> PredictedCluster {
        let tasks_per_s = c.perf_ste / oper;
        PredictedCluster {
            name: c.name.clone(),
            bottleneck: c.bottleneck,
            cperf: c.cperf,
            best: Profile {
                tasks: c.tasks_best,
                t_up: c.t_up,
                t_end: c.t_end_best,
                tasks_per_s,
            },
            worst: Profile {
                tasks: c.tasks_worst,
                t_up: c.t_up,
                t_end: c.t_end_worst,
                tasks_per_s,
            },
            efficiency_best: c.efficiency_best,
            efficiency_worst: c.efficiency_worst,
        }
    }
}

impl Predicted {
    /// The curves of a prediction for an application of `oper` basic operations per task.
    pub fn new(prediction: &Prediction, oper: f64) -> Predicted {
        Predicted {
            clusters: prediction
                .clusters
                .iter()
                .map(|c| PredictedCluster::from_prediction(c, oper))
                .collect(),
            oper,
            t_best: prediction.run.t_best,
            t_ex_best: prediction.run.t_ex_best,
            t_ex_worst: prediction.run.t_ex_worst,
            efficiency_best: prediction.run.efficiency_best,
            efficiency_worst: prediction.run.efficiency_worst,
        }
    }

    /// The largest steady rate of a cluster or of the whole run, tasks per second.
    pub fn peak_rate(&self) -> f64 {
        let each = self
            .clusters
            .iter()
            .flat_map(|c| [c.best, c.worst])
            .flat_map(|p| p.rate_points())
            .map(|(_, r)| r)
            .fold(0.0, f64::max);
        let sum: f64 = self.clusters.iter().map(|c| c.best.tasks_per_s).sum();
        each.max(sum)
    }
}

/// `n + 1` evenly spaced times from 0 to `end`, plus the `corners`, sorted.
pub fn sample_times(end: f64, n: usize, corners: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut times: Vec<f64> = (0..=n).map(|i| end * i as f64 / n as f64).collect();
    times.extend(corners.into_iter().filter(|t| *t >= 0.0 && *t <= end));
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn startup_steady_end() {
        // 100 tasks at 10 tasks/s: T_ste = 10 s; T_up = 0.5 s, T_end = 0.25 s.
        let p = Profile {
            tasks: 100,
            t_up: 0.5,
            t_end: 0.25,
            tasks_per_s: 10.0,
        };
        assert!(close(p.execution_time(), 10.75));
        assert!(close(p.end_starts(), 10.25));
        assert_eq!(
            p.rate_points(),
            [(0.0, 0.0), (1.0, 10.0), (10.25, 10.0), (10.75, 0.0)]
        );
        assert!(close(p.done_at(1.0), 5.0)); // the climb: half the level for 2 T_up
        assert!(close(p.done_at(f64::INFINITY), 100.0));
        assert!(close(p.rate_at(5.0), 10.0));
        assert!(close(p.rate_at(10.5), 5.0));
        assert_eq!(p.rate_at(11.0), 0.0);
    }

    #[test]
    fn no_startup_nor_end_is_a_rectangle() {
        let p = Profile {
            tasks: 40,
            t_up: 0.0,
            t_end: 0.0,
            tasks_per_s: 4.0,
        };
        assert_eq!(
            p.rate_points(),
            [(0.0, 0.0), (0.0, 4.0), (10.0, 4.0), (10.0, 0.0)]
        );
        assert!(close(p.done_at(5.0), 20.0));
        assert!(close(p.done_at(10.0), 40.0));
    }

    #[test]
    fn a_cluster_without_tasks_draws_nothing() {
        let p = Profile {
            tasks: 0,
            t_up: 1.0,
            t_end: 1.0,
            tasks_per_s: 4.0,
        };
        assert_eq!(p.execution_time(), 0.0);
        assert_eq!(p.done_at(10.0), 0.0);
    }

    proptest! {
        /// Whatever the durations, the curve ends at T_ex_c with the cluster's tasks done,
        /// never goes down in tasks done and never exceeds the steady level outside the
        /// short-run triangle.
        #[test]
        fn area_is_the_share_and_end_is_t_ex(
            tasks in 1u64..10_000,
            t_up in 0.0f64..50.0,
            t_end in 0.0f64..50.0,
            rate in 0.01f64..1000.0,
        ) {
            let p = Profile { tasks, t_up, t_end, tasks_per_s: rate };
            let t_ex = p.execution_time();
            let points = p.rate_points();
            prop_assert!(close(points.last().unwrap().0, t_ex));
            prop_assert!(close(p.done_at(t_ex), tasks as f64));
            let mut previous = 0.0;
            for t in sample_times(t_ex, 50, points.iter().map(|p| p.0)) {
                let done = p.done_at(t);
                prop_assert!(done + 1e-9 >= previous);
                previous = done;
            }
            if p.steady_time() >= t_up + t_end {
                prop_assert!(points.iter().all(|&(_, r)| r <= rate * (1.0 + 1e-12)));
            }
        }
    }
}
