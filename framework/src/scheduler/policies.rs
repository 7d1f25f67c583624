//! The built-in scheduling policies (`[run] scheduler`).
//!
//! By default ranks are served by the fewest tasks held, then in the order they asked: every
//! worker gets its first task before any gets a second (with `worker_buffers = 2` each worker
//! asks for two at once). The default batch, [`OnDemand`], is one task per request, which
//! balances load best when tasks are large enough to hide the per-message cost. Chunking
//! policies trade balance for fewer messages when tasks are tiny.

use super::{requests::Demand, traits::Scheduler};

/// One task per request: the default.
#[derive(Debug, Default, Clone, Copy)]
pub struct OnDemand;

impl Scheduler for OnDemand {
    fn batch_size(&mut self, _demand: &Demand) -> usize {
        1
    }
}

/// The scheduling policy of a run: `[run] scheduler` (and `chunk_fraction` for the two
/// fraction-based policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// One task per request.
    #[default]
    OnDemand,
    /// Batches of `floor(f * M)` tasks, one chunk per worker.
    FixedSize,
    /// Factoring (DPF): batch `j` is `f * remaining`, one chunk per worker.
    Factoring,
    /// Adaptive factoring (DAF): batches sized from the measured mean and deviation of task
    /// times.
    AdaptiveFactoring,
    /// Adaptive multi-round: chunks proportional to each worker's measured speed.
    AdaptiveMultiRound,
}

impl Policy {
    /// The scheduler of this policy; `fraction` is the `f` of fixed-size and factoring.
    pub fn scheduler(self, fraction: f64) -> Box<dyn Scheduler> {
        match self {
            Policy::OnDemand => Box::new(OnDemand),
            Policy::FixedSize => Box::new(Batched::new(BatchRule::FixedSize(fraction))),
            Policy::Factoring => Box::new(Batched::new(BatchRule::Factoring(fraction))),
            Policy::AdaptiveFactoring => Box::new(Batched::new(BatchRule::AdaptiveFactoring)),
            Policy::AdaptiveMultiRound => Box::new(AdaptiveMultiRound::default()),
        }
    }
}

/// How a [`Batched`] scheduler sizes its next batch.
#[derive(Debug, Clone, Copy)]
enum BatchRule {
    FixedSize(f64),
    Factoring(f64),
    AdaptiveFactoring,
}

/// Batch policies (model page, section 5): a batch is computed from what remains, then split
/// into one chunk per worker; requests take the chunks in turn.
#[derive(Debug)]
struct Batched {
    rule: BatchRule,
    chunks: std::collections::VecDeque<u64>,
    total: Option<u64>,
    batches: u64,
    times: Vec<f64>,
}

impl Batched {
    fn new(rule: BatchRule) -> Self {
        Batched {
            rule,
            chunks: Default::default(),
            total: None,
            batches: 0,
            times: Vec::new(),
        }
    }

    fn next_batch(&mut self, remaining: u64, workers: usize) -> u64 {
        use hmw_model::chunking::*;
        let batch = match self.rule {
            BatchRule::FixedSize(f) => {
                fixed_size_batch(f, *self.total.get_or_insert(remaining), remaining)
            }
            BatchRule::Factoring(f) => factoring_batch(f, remaining),
            BatchRule::AdaptiveFactoring => match mean_and_deviation(&self.times) {
                // Until task times are known, hand out one task per worker.
                None => workers as u64,
                Some((mean, deviation)) => {
                    let factor = if self.batches == 0 {
                        adaptive_factoring_first_factor(mean, deviation, workers)
                    } else {
                        adaptive_factoring_factor(mean, deviation, workers)
                    };
                    adaptive_factoring_batch(remaining, factor)
                }
            },
        };
        self.batches += 1;
        batch
    }
}

/// Mean and sample deviation of `samples` (`None` for fewer than two, or a zero mean).
fn mean_and_deviation(samples: &[f64]) -> Option<(f64, f64)> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
    (mean > 0.0).then(|| (mean, variance.sqrt()))
}

impl Scheduler for Batched {
    fn batch_size(&mut self, demand: &Demand) -> usize {
        let Some(remaining) = demand.remaining.filter(|&r| r > 0) else {
            return 1;
        };
        if self.chunks.is_empty() {
            let batch = self.next_batch(remaining, demand.workers);
            self.chunks = hmw_model::chunking::split_batch(batch, demand.workers).into();
        }
        self.chunks.pop_front().unwrap_or(1).max(1) as usize
    }

    fn observe(&mut self, _worker: usize, busy_s: f64) {
        self.times.push(busy_s);
    }
}

/// Adaptive multi-round (model page, section 5): each worker's chunk follows its fitness (its
/// share of the cluster's speed, from its latest per-task time); the installment factor comes
/// from the spread of the first time measured on each worker.
#[derive(Debug, Default)]
struct AdaptiveMultiRound {
    latest: std::collections::BTreeMap<usize, f64>,
    calibration: std::collections::BTreeMap<usize, f64>,
    total: Option<u64>,
}

impl Scheduler for AdaptiveMultiRound {
    fn batch_size(&mut self, demand: &Demand) -> usize {
        use hmw_model::chunking::*;
        let Some(remaining) = demand.remaining.filter(|&r| r > 0) else {
            return 1;
        };
        let total = *self.total.get_or_insert(remaining);
        // Until every worker has a measured time, one task each: that is the calibration.
        if self.latest.len() < demand.workers || !self.latest.contains_key(&demand.worker) {
            return 1;
        }
        let workers: Vec<usize> = self.latest.keys().copied().collect();
        let times: Vec<f64> = self.latest.values().copied().collect();
        let calibration: Vec<f64> = self.calibration.values().copied().collect();
        let index = workers
            .iter()
            .position(|&w| w == demand.worker)
            .expect("checked above");
        let share = fitness(&times)[index];
        multi_round_chunk(remaining, installment_factor(total, &calibration), share) as usize
    }

    fn observe(&mut self, worker: usize, busy_s: f64) {
        let time = busy_s.max(1e-9);
        self.latest.insert(worker, time);
        self.calibration.entry(worker).or_insert(time);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(worker: usize, workers: usize, remaining: u64) -> Demand {
        Demand {
            worker,
            workers,
            remaining: Some(remaining),
        }
    }

    /// Hand out `total` tasks to `workers` in turn; the chunk sizes in order.
    fn hand_out(scheduler: &mut dyn Scheduler, workers: usize, total: u64) -> Vec<usize> {
        let mut remaining = total;
        let mut sizes = Vec::new();
        let mut worker = 0;
        while remaining > 0 {
            let size = scheduler
                .batch_size(&demand(worker, workers, remaining))
                .min(remaining as usize);
            sizes.push(size);
            remaining -= size as u64;
            scheduler.observe(worker, 0.1 * (worker + 1) as f64);
            worker = (worker + 1) % workers;
        }
        sizes
    }

    #[test]
    fn factoring_halves_what_remains_in_one_chunk_per_worker() {
        let sizes = hand_out(&mut *Policy::Factoring.scheduler(0.5), 4, 64);
        // Batch 1: 32 tasks in 4 chunks of 8; batch 2: 16 in chunks of 4; ...
        assert_eq!(&sizes[..8], &[8, 8, 8, 8, 4, 4, 4, 4]);
        assert_eq!(sizes.iter().sum::<usize>(), 64);
    }

    #[test]
    fn fixed_size_batches_stay_the_same_size() {
        let sizes = hand_out(&mut *Policy::FixedSize.scheduler(0.25), 4, 64);
        assert_eq!(sizes, vec![4; 16]);
    }

    #[test]
    fn adaptive_policies_hand_everything_out_and_favour_fast_workers() {
        for policy in [Policy::AdaptiveFactoring, Policy::AdaptiveMultiRound] {
            let sizes = hand_out(&mut *policy.scheduler(0.5), 4, 200);
            assert_eq!(sizes.iter().sum::<usize>(), 200, "{policy:?}");
            assert!(sizes.iter().all(|&s| s >= 1));
        }
        // Multi-round: after one calibration task each, worker 0 (fastest: 0.1 s a task) gets
        // the largest chunk.
        let sizes = hand_out(&mut *Policy::AdaptiveMultiRound.scheduler(0.5), 4, 200);
        assert_eq!(&sizes[..4], &[1, 1, 1, 1]);
        assert!(sizes[4] > sizes[5] && sizes[5] > sizes[6] && sizes[6] > sizes[7]);
    }
}
