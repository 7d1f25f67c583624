//! The estimator of work and rates for tasks of unpredictable length (issue 14), reusable by
//! run-time adaptation.
//!
//! A task's `operations()` is fixed when it is sent; for a search that prunes it is only a
//! bound, and the work a task really does is known when its result comes back
//! ([`crate::TaskResult::operations`]). The estimator takes in every result gathered — who
//! computed it, how many tasks it stands for, the basic operations they really did and the
//! worker seconds they took — and re-estimates from all it has seen so far:
//! - each worker's and each cluster's rate, basic operations per busy second ([`Rate`]);
//! - the work of a task, as the observed distribution of per-task work: its mean, and the
//!   [`LOW_QUANTILE`] and [`HIGH_QUANTILE`] quantiles;
//! - the work left in `R` tasks not yet gathered, as a point (`R` times the mean) and an
//!   interval: the tasks left could all be like the lower or like the upper part of those
//!   seen (`R` times each quantile, widened to hold the point). The interval is for a work
//!   distribution that drifts along the run (a global bound that tightens makes later tasks
//!   cheaper), which a confidence interval of the mean of independent draws would ignore.

use std::collections::BTreeMap;

/// The lower quantile of per-task work that bounds the work left from below.
pub const LOW_QUANTILE: f64 = 0.1;
/// The upper quantile of per-task work that bounds the work left from above.
pub const HIGH_QUANTILE: f64 = 0.9;

/// Basic operations over busy seconds, as observed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rate {
    /// Tasks observed.
    pub tasks: u64,
    /// Their basic operations.
    pub operations: f64,
    /// The worker seconds they took.
    pub busy_s: f64,
}

impl Rate {
    /// Basic operations per busy second, once some busy time was observed.
    pub fn per_busy_s(&self) -> Option<f64> {
        (self.busy_s > 0.0).then(|| self.operations / self.busy_s)
    }

    fn add(&mut self, tasks: u64, operations: f64, busy_s: f64) {
        self.tasks += tasks;
        self.operations += operations;
        self.busy_s += busy_s;
    }
}

/// An estimate with its interval: `low <= point <= high`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The lower end.
    pub low: f64,
    /// The point estimate.
    pub point: f64,
    /// The upper end.
    pub high: f64,
}

impl Interval {
    /// The interval's width over its midpoint (0 for a point).
    pub fn relative_width(&self) -> f64 {
        let mid = (self.low + self.high) / 2.0;
        if mid > 0.0 {
            (self.high - self.low) / mid
        } else {
            0.0
        }
    }

    /// Every end multiplied by `factor` (>= 0), plus `offset`.
    pub fn scaled(&self, factor: f64, offset: f64) -> Interval {
        Interval {
            low: self.low * factor + offset,
            point: self.point * factor + offset,
            high: self.high * factor + offset,
        }
    }
}

/// The estimator: every result gathered so far, by worker and by cluster.
#[derive(Debug, Clone, Default)]
pub struct WorkEstimator {
    /// Per-task work of every result gathered (a joined result gives its mean per task, once
    /// per task).
    task_work: Vec<f64>,
    /// Whether `task_work` is sorted.
    sorted: bool,
    /// By rank (ranks are small dense integers: a vector finds one without a search).
    workers: Vec<Rate>,
    clusters: BTreeMap<String, Rate>,
}

impl WorkEstimator {
    /// Nothing observed yet.
    pub fn new() -> Self {
        WorkEstimator::default()
    }

    /// A result from rank `rank` of cluster `cluster`, standing for `tasks` tasks that did
    /// `operations` basic operations in `busy_s` worker seconds. Non-finite or negative
    /// figures are ignored (a result cannot teach anything with them).
    pub fn observe(
        &mut self,
        cluster: &str,
        rank: usize,
        tasks: u64,
        operations: f64,
        busy_s: f64,
    ) {
        if tasks == 0 || !(operations >= 0.0 && operations.is_finite()) {
            return;
        }
        let busy_s = if busy_s.is_finite() && busy_s >= 0.0 {
            busy_s
        } else {
            0.0
        };
        let per_task = operations / tasks as f64;
        self.task_work
            .extend(std::iter::repeat_n(per_task, tasks.min(1 << 20) as usize));
        self.sorted = false;
        if rank >= self.workers.len() {
            self.workers.resize(rank + 1, Rate::default());
        }
        self.workers[rank].add(tasks, operations, busy_s);
        match self.clusters.get_mut(cluster) {
            Some(rate) => rate.add(tasks, operations, busy_s),
            None => {
                let mut rate = Rate::default();
                rate.add(tasks, operations, busy_s);
                self.clusters.insert(cluster.to_string(), rate);
            }
        }
    }

    /// What rank `rank` delivered so far.
    pub fn worker(&self, rank: usize) -> Option<Rate> {
        self.workers
            .get(rank)
            .copied()
            .filter(|rate| rate.tasks > 0)
    }

    /// What cluster `name` delivered so far.
    pub fn cluster(&self, name: &str) -> Option<Rate> {
        self.clusters.get(name).copied()
    }

    /// Tasks observed.
    pub fn tasks(&self) -> usize {
        self.task_work.len()
    }

    fn sort(&mut self) {
        if !self.sorted {
            self.task_work.sort_by(f64::total_cmp);
            self.sorted = true;
        }
    }

    /// The `q`-quantile (0..=1) of per-task work, by linear interpolation between the
    /// observed values; `None` before any.
    pub fn quantile(&mut self, q: f64) -> Option<f64> {
        self.sort();
        let n = self.task_work.len();
        if n == 0 {
            return None;
        }
        let at = q.clamp(0.0, 1.0) * (n - 1) as f64;
        let (below, above) = (at.floor() as usize, at.ceil() as usize);
        let fraction = at - below as f64;
        Some(self.task_work[below] * (1.0 - fraction) + self.task_work[above] * fraction)
    }

    /// The mean per-task work observed.
    pub fn mean(&self) -> Option<f64> {
        let n = self.task_work.len();
        (n > 0).then(|| self.task_work.iter().sum::<f64>() / n as f64)
    }

    /// The work left in `tasks` tasks not yet gathered: `tasks` times the mean, within
    /// `tasks` times the [`LOW_QUANTILE`] and [`HIGH_QUANTILE`] quantiles (widened to hold the
    /// point); `None` before any result.
    pub fn remaining_work(&mut self, tasks: u64) -> Option<Interval> {
        let mean = self.mean()?;
        let low = self.quantile(LOW_QUANTILE)?;
        let high = self.quantile(HIGH_QUANTILE)?;
        let r = tasks as f64;
        Some(Interval {
            low: r * low.min(mean),
            point: r * mean,
            high: r * high.max(mean),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rates_and_quantiles_of_what_was_observed() {
        let mut e = WorkEstimator::new();
        assert_eq!(e.remaining_work(10), None);
        for i in 1..=10 {
            e.observe("lyon", 1 + i % 2, 1, i as f64 * 100.0, 1.0);
        }
        e.observe("spain", 7, 2, 1000.0, 4.0);
        assert_eq!(e.tasks(), 12);
        assert_eq!(e.worker(7).unwrap().per_busy_s(), Some(250.0));
        let lyon = e.cluster("lyon").unwrap();
        assert_eq!(
            (lyon.tasks, lyon.operations, lyon.busy_s),
            (10, 5500.0, 10.0)
        );
        assert_eq!(e.quantile(0.0), Some(100.0));
        assert_eq!(e.quantile(1.0), Some(1000.0));
        let mean = 6500.0 / 12.0;
        let left = e.remaining_work(3).unwrap();
        assert!((left.point - 3.0 * mean).abs() < 1e-9);
        assert!(left.low < left.point && left.point < left.high);
        assert_eq!(e.worker(3), None);
    }

    #[test]
    fn bad_figures_teach_nothing() {
        let mut e = WorkEstimator::new();
        e.observe("lyon", 1, 1, f64::NAN, 1.0);
        e.observe("lyon", 1, 0, 10.0, 1.0);
        e.observe("lyon", 1, 1, -1.0, 1.0);
        assert_eq!(e.tasks(), 0);
        e.observe("lyon", 1, 1, 10.0, f64::INFINITY);
        assert_eq!(e.worker(1).unwrap().per_busy_s(), None);
    }

    proptest! {
        /// The interval holds its point; scales with the tasks left; collapses when every
        /// task did the same work; and holds the work left whenever the tasks left are drawn
        /// from between the quantiles of those seen.
        #[test]
        fn the_interval_holds_its_point_and_scales(
            work in prop::collection::vec(0.0f64..1e9, 1..200),
            left in 0u64..10_000,
        ) {
            let mut e = WorkEstimator::new();
            for (i, w) in work.iter().enumerate() {
                e.observe("c", i % 3, 1, *w, 1.0);
            }
            let interval = e.remaining_work(left).unwrap();
            prop_assert!(interval.low <= interval.point * (1.0 + 1e-12));
            prop_assert!(interval.point <= interval.high * (1.0 + 1e-12));
            let one = e.remaining_work(1).unwrap();
            prop_assert!((interval.high - one.high * left as f64).abs() <= 1e-9 * interval.high.max(1.0));
            let low = e.quantile(LOW_QUANTILE).unwrap();
            let high = e.quantile(HIGH_QUANTILE).unwrap();
            prop_assert!(low <= high);
            let between = (low + high) / 2.0 * left as f64;
            prop_assert!(interval.low <= between * (1.0 + 1e-12) && between <= interval.high * (1.0 + 1e-12));
        }

        #[test]
        fn equal_tasks_give_a_point(w in 1.0f64..1e9, n in 1usize..100, left in 1u64..1000) {
            let mut e = WorkEstimator::new();
            for _ in 0..n {
                e.observe("c", 1, 1, w, 0.5);
            }
            let interval = e.remaining_work(left).unwrap();
            prop_assert!(interval.relative_width() < 1e-9);
            prop_assert!((e.cluster("c").unwrap().per_busy_s().unwrap() - 2.0 * w).abs() < 1e-6 * w);
        }
    }
}
