//! What a master measures of an iterative problem's iterations, and which of its workers are
//! active: all of them, `[run] active_workers`, or the [`WorkerTuner`]'s count.

use std::time::Duration;

use hmw_model::iteration_fit::MeasuredIteration;

use crate::{
    config::{RunConfig, TuneWorkers},
    protocol::report::IterationSample,
    tuner::{TunerDecision, TunerSettings, WorkerObjective, WorkerTuner},
};

/// The iterations of one master: the active workers, and each iteration measured.
pub(crate) struct IterationTracker {
    /// The worker ranks, ascending; the first `active` of them take tasks.
    workers: Vec<usize>,
    /// Per rank: whether it is an active worker.
    is_active: Vec<bool>,
    active: usize,
    tuner: Option<WorkerTuner>,
    /// Iterations completed, and when the last one ended (the run's start before the first).
    completed: u64,
    since: Duration,
    /// The current iteration so far.
    worker_time_s: f64,
    bytes: u64,
    tasks: u64,
    samples: Vec<IterationSample>,
}

impl IterationTracker {
    /// The tracker of a master feeding `workers` (their ranks), configured by `config`.
    pub(crate) fn new(config: &RunConfig, mut workers: Vec<usize>) -> Self {
        workers.sort_unstable();
        let most = config
            .active_workers
            .unwrap_or(workers.len())
            .clamp(1, workers.len().max(1));
        let objective = match config.tune_workers {
            TuneWorkers::Off => None,
            TuneWorkers::Time => Some(WorkerObjective::Time),
            TuneWorkers::Pi => Some(WorkerObjective::PerformanceIndex),
        };
        let tuner = objective.map(|objective| {
            let settings = TunerSettings {
                drift: config.tune_drift,
                ..TunerSettings::new(objective)
            };
            WorkerTuner::new(settings, most as u64)
        });
        let mut tracker = IterationTracker {
            is_active: vec![false; workers.iter().max().map_or(0, |&r| r + 1)],
            workers,
            active: 0,
            tuner,
            completed: 0,
            since: Duration::ZERO,
            worker_time_s: 0.0,
            bytes: 0,
            tasks: 0,
            samples: Vec::new(),
        };
        let first = tracker.tuner.as_ref().map_or(most, |t| t.count() as usize);
        tracker.set_active(first);
        tracker
    }

    /// Workers taking tasks now.
    pub(crate) fn active(&self) -> usize {
        self.active
    }

    /// Whether worker `rank` takes tasks now.
    pub(crate) fn is_active(&self, rank: usize) -> bool {
        self.is_active.get(rank).copied().unwrap_or(false)
    }

    /// The run's clock starts at `now`: the first iteration's does too.
    pub(crate) fn start(&mut self, now: Duration) {
        self.since = now;
    }

    /// A task message of `bytes` went to a worker.
    pub(crate) fn sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }

    /// A worker's result of `bytes` came back: `tasks` tasks that took it `busy_s`.
    pub(crate) fn returned(&mut self, tasks: usize, busy_s: f64, bytes: usize) {
        self.bytes += bytes as u64;
        self.worker_time_s += busy_s;
        self.tasks += tasks as u64;
    }

    /// The problem has completed `completed` iterations at `now`: each new one is recorded
    /// and shown to the tuner. The new active count when it changed.
    pub(crate) fn progressed(&mut self, now: Duration, completed: u64) -> Option<usize> {
        let before = self.active;
        while self.completed < completed {
            let sample = IterationSample {
                iteration: self.completed,
                workers: self.active as u64,
                time_s: now.saturating_sub(self.since).as_secs_f64(),
                worker_time_s: std::mem::take(&mut self.worker_time_s),
                bytes: std::mem::take(&mut self.bytes),
                tasks: std::mem::take(&mut self.tasks),
            };
            tracing::debug!(?sample, "iteration done");
            if let Some(tuner) = &mut self.tuner {
                let next = tuner.observe(
                    sample.iteration,
                    MeasuredIteration {
                        workers: sample.workers,
                        time: sample.time_s,
                        worker_time: sample.worker_time_s,
                        volume: sample.bytes as f64,
                    },
                );
                self.set_active(next as usize);
            }
            self.samples.push(sample);
            self.completed += 1;
            self.since = now;
        }
        (self.active != before).then_some(self.active)
    }

    /// The iterations and the tuner's decisions, for the statistics.
    pub(crate) fn report(&self) -> (Vec<IterationSample>, Vec<TunerDecision>) {
        (
            self.samples.clone(),
            self.tuner
                .as_ref()
                .map_or_else(Vec::new, |t| t.decisions().to_vec()),
        )
    }

    fn set_active(&mut self, count: usize) {
        self.active = count
            .clamp(1, self.workers.len().max(1))
            .min(self.workers.len());
        self.is_active.iter_mut().for_each(|a| *a = false);
        for &rank in &self.workers[..self.active] {
            self.is_active[rank] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_count_activates_the_lowest_ranks_and_records_each_iteration() {
        let config = RunConfig {
            active_workers: Some(2),
            ..Default::default()
        };
        let mut t = IterationTracker::new(&config, vec![3, 1, 2]);
        assert_eq!(t.active(), 2);
        assert!(t.is_active(1) && t.is_active(2) && !t.is_active(3) && !t.is_active(0));
        t.start(Duration::from_secs(1));
        t.sent(100);
        t.returned(1, 0.5, 50);
        assert_eq!(t.progressed(Duration::from_secs(3), 1), None);
        assert_eq!(t.progressed(Duration::from_secs(4), 1), None);
        let (samples, decisions) = t.report();
        assert!(decisions.is_empty());
        assert_eq!(
            samples,
            vec![IterationSample {
                iteration: 0,
                workers: 2,
                time_s: 2.0,
                worker_time_s: 0.5,
                bytes: 150,
                tasks: 1,
            }]
        );
    }

    #[test]
    fn the_tuner_sets_the_count_between_iterations() {
        let config = RunConfig {
            tune_workers: TuneWorkers::Time,
            ..Default::default()
        };
        let mut t = IterationTracker::new(&config, (1..=8).collect());
        assert_eq!(t.active(), 8);
        // Warm-up and two probes at 8, then 4.
        let mut now = Duration::ZERO;
        let mut changes = Vec::new();
        for k in 1..=3 {
            now += Duration::from_millis(100);
            changes.push(t.progressed(now, k));
        }
        assert_eq!(changes, vec![None, None, Some(4)]);
        assert!(t.is_active(4) && !t.is_active(5));
        assert_eq!(t.report().1.len(), 2);
    }
}
