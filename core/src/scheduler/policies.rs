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

/// The scheduling policy of a run: `[run] scheduler` (with `chunk_fraction` for the two
/// fraction-based policies, `chunk_overhead_s` for Kruskal and Weiss's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// One task per request.
    #[default]
    OnDemand,
    /// Fixed-size chunking by a fraction of the problem: batches of `floor(f * M)` tasks, one
    /// chunk per worker.
    FixedSize,
    /// Fixed-size chunking with Kruskal and Weiss's optimal chunk, from the measured deviation
    /// of task times and the scheduling overhead per chunk.
    KruskalWeiss,
    /// Factoring (DPF): batch `j` is `f * remaining`, one chunk per worker.
    Factoring,
    /// Adaptive factoring (DAF): batches sized from the measured mean and deviation of task
    /// times.
    AdaptiveFactoring,
    /// Adaptive multi-round: rounds of chunks proportional to each worker's measured speed.
    AdaptiveMultiRound,
}

/// The numbers the chunking policies read (`[run] chunk_fraction`, `chunk_overhead_s`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkSettings {
    /// The `f` of fixed-size chunking by a fraction and of factoring.
    pub fraction: f64,
    /// The scheduling overhead `h` per chunk, in seconds (Kruskal and Weiss).
    pub overhead_s: f64,
}

impl Default for ChunkSettings {
    fn default() -> Self {
        ChunkSettings {
            fraction: 0.5,
            overhead_s: 0.0,
        }
    }
}

impl Policy {
    /// The scheduler of this policy.
    pub fn scheduler(self, settings: ChunkSettings) -> Box<dyn Scheduler> {
        match self {
            Policy::OnDemand => Box::new(OnDemand),
            Policy::FixedSize => Box::new(Batched::new(BatchRule::FixedSize(settings.fraction))),
            Policy::KruskalWeiss => Box::new(KruskalWeiss::new(settings.overhead_s)),
            Policy::Factoring => Box::new(Batched::new(BatchRule::Factoring(settings.fraction))),
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

/// Fixed-size chunking with Kruskal and Weiss's optimal chunk (model page, section 5): one
/// task per worker first (the calibration that measures the deviation of task times), then
/// every chunk `K_opt` for the tasks left then, bounded by an even split of them.
#[derive(Debug)]
struct KruskalWeiss {
    overhead_s: f64,
    times: Vec<f64>,
    chunk: Option<u64>,
}

impl KruskalWeiss {
    fn new(overhead_s: f64) -> Self {
        KruskalWeiss {
            overhead_s,
            times: Vec::new(),
            chunk: None,
        }
    }
}

impl Scheduler for KruskalWeiss {
    fn batch_size(&mut self, demand: &Demand) -> usize {
        let Some(remaining) = demand.remaining.filter(|&r| r > 0) else {
            return 1;
        };
        if self.chunk.is_none() && self.times.len() >= demand.workers.max(2) {
            if let Some((_, deviation)) = mean_and_deviation(&self.times) {
                let workers = demand.workers.max(1);
                let even = remaining.div_ceil(workers as u64);
                let k = hmw_model::chunking::kruskal_weiss_chunk(
                    remaining,
                    workers,
                    self.overhead_s,
                    deviation,
                );
                // `as` saturates an infinite chunk; NaN (no overhead, no deviation) gives 0.
                self.chunk = Some((k.round() as u64).clamp(1, even));
            }
        }
        self.chunk.unwrap_or(1) as usize
    }

    fn observe(&mut self, _worker: usize, busy_s: f64) {
        if self.chunk.is_none() {
            self.times.push(busy_s);
        }
    }
}

/// Adaptive multi-round (model page, section 5), in rounds. Until every worker has a measured
/// per-task time, one task per request (the calibration). Then round `r` gives worker `i`
/// `round(S_r / k * F_i)` tasks: `S_r` the tasks left when the round starts (at the first
/// request for a chunk of round `r`), `F` the fitness from each worker's latest per-task time
/// and `k = ln(S_r)^CV` from the spread of those times, both recomputed each round. A worker
/// gets its chunk of the next round when it asks again (having finished its last), without
/// waiting for the others.
#[derive(Debug, Default)]
struct AdaptiveMultiRound {
    /// Each worker's latest per-task time.
    latest: std::collections::BTreeMap<usize, f64>,
    /// The round each worker's next chunk belongs to.
    next_round: std::collections::BTreeMap<usize, usize>,
    /// Each round's chunk per worker, planned when the round starts.
    rounds: Vec<std::collections::BTreeMap<usize, u64>>,
}

impl AdaptiveMultiRound {
    /// Plans a round for the workers measured, with `remaining` tasks left.
    fn plan_round(&mut self, remaining: u64) {
        use hmw_model::chunking::*;
        let times: Vec<f64> = self.latest.values().copied().collect();
        let k = installment_factor(remaining, &times);
        let plan = self
            .latest
            .keys()
            .zip(fitness(&times))
            .map(|(&worker, f)| (worker, multi_round_chunk(remaining, k, f)))
            .collect();
        self.rounds.push(plan);
    }
}

impl Scheduler for AdaptiveMultiRound {
    fn batch_size(&mut self, demand: &Demand) -> usize {
        let Some(remaining) = demand.remaining.filter(|&r| r > 0) else {
            return 1;
        };
        if self.latest.len() < demand.workers || !self.latest.contains_key(&demand.worker) {
            return 1;
        }
        let round = self.next_round.entry(demand.worker).or_default();
        let r = *round;
        *round += 1;
        if r == self.rounds.len() {
            self.plan_round(remaining);
        }
        self.rounds[r].get(&demand.worker).copied().unwrap_or(1) as usize
    }

    fn observe(&mut self, worker: usize, busy_s: f64) {
        self.latest.insert(worker, busy_s.max(1e-9));
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
        let sizes = hand_out(
            &mut *Policy::Factoring.scheduler(ChunkSettings::default()),
            4,
            64,
        );
        // Batch 1: 32 tasks in 4 chunks of 8; batch 2: 16 in chunks of 4; ...
        assert_eq!(&sizes[..8], &[8, 8, 8, 8, 4, 4, 4, 4]);
        assert_eq!(sizes.iter().sum::<usize>(), 64);
    }

    #[test]
    fn fixed_size_batches_stay_the_same_size() {
        let sizes = hand_out(
            &mut *Policy::FixedSize.scheduler(ChunkSettings {
                fraction: 0.25,
                ..Default::default()
            }),
            4,
            64,
        );
        assert_eq!(sizes, vec![4; 16]);
    }

    #[test]
    fn adaptive_policies_hand_everything_out_and_favour_fast_workers() {
        for policy in [
            Policy::AdaptiveFactoring,
            Policy::AdaptiveMultiRound,
            Policy::KruskalWeiss,
        ] {
            let sizes = hand_out(&mut *policy.scheduler(ChunkSettings::default()), 4, 200);
            assert_eq!(sizes.iter().sum::<usize>(), 200, "{policy:?}");
            assert!(sizes.iter().all(|&s| s >= 1));
        }
        // Multi-round: after one calibration task each, worker 0 (fastest: 0.1 s a task) gets
        // the largest chunk.
        let sizes = hand_out(
            &mut *Policy::AdaptiveMultiRound.scheduler(ChunkSettings::default()),
            4,
            200,
        );
        assert_eq!(&sizes[..4], &[1, 1, 1, 1]);
        assert!(sizes[4] > sizes[5] && sizes[5] > sizes[6] && sizes[6] > sizes[7]);
    }

    #[test]
    fn multi_round_plans_each_round_from_what_is_left_when_it_starts() {
        // Latest times 1, 2, 3, 4 s: F = (0.48, 0.24, 0.16, 0.12); CV = 0.516 and 196 tasks
        // left after the calibration, so k = ln(196)^0.516 = 2.26.
        let mut s = Policy::AdaptiveMultiRound.scheduler(ChunkSettings::default());
        for w in 0..4 {
            assert_eq!(s.batch_size(&demand(w, 4, 200 - w as u64)), 1);
            s.observe(w, (w + 1) as f64);
        }
        let k = hmw_model::chunking::installment_factor(196, &[1.0, 2.0, 3.0, 4.0]);
        let first: Vec<usize> = (0..4).map(|w| s.batch_size(&demand(w, 4, 196))).collect();
        let expected: Vec<usize> = [0.48, 0.24, 0.16, 0.12]
            .iter()
            .map(|f| (196.0 / k * f).round() as usize)
            .collect();
        assert_eq!(first, expected);
        // Worker 0 finishes first and starts round 2, planned from the tasks left then (its
        // own chunk is smaller); worker 3, still in round 1's pace, later gets round 2's chunk
        // for it, not one recomputed from a later count.
        let left = 196 - first.iter().sum::<usize>() as u64;
        let second_0 = s.batch_size(&demand(0, 4, left));
        assert_eq!(
            second_0,
            hmw_model::chunking::multi_round_chunk(
                left,
                hmw_model::chunking::installment_factor(left, &[1.0, 2.0, 3.0, 4.0]),
                0.48
            ) as usize
        );
        assert!(second_0 < first[0]);
        let second_3 = s.batch_size(&demand(3, 4, left - second_0 as u64 - 10));
        assert_eq!(
            second_3,
            hmw_model::chunking::multi_round_chunk(
                left,
                hmw_model::chunking::installment_factor(left, &[1.0, 2.0, 3.0, 4.0]),
                0.12
            ) as usize
        );
    }

    #[test]
    fn kruskal_weiss_calibrates_then_keeps_the_optimal_chunk() {
        // Task times 2 ms apart in deviation, h = 0.5 ms, 8 workers: after one task each,
        // chunks of K_opt for the tasks left (10,000 - 8).
        let mut s = Policy::KruskalWeiss.scheduler(ChunkSettings {
            overhead_s: 0.5e-3,
            ..Default::default()
        });
        let times = [0.010, 0.012, 0.008, 0.014, 0.006, 0.011, 0.009, 0.010];
        for (w, t) in times.iter().enumerate() {
            assert_eq!(s.batch_size(&demand(w, 8, 10_000 - w as u64)), 1);
            s.observe(w, *t);
        }
        let deviation = {
            let mean = times.iter().sum::<f64>() / 8.0;
            (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / 7.0).sqrt()
        };
        let k = hmw_model::chunking::kruskal_weiss_chunk(9_992, 8, 0.5e-3, deviation).round();
        assert_eq!(s.batch_size(&demand(0, 8, 9_992)), k as usize);
        assert_eq!(s.batch_size(&demand(5, 8, 5_000)), k as usize, "fixed size");
        // Without an overhead there is nothing to save: one task at a time.
        let mut free = Policy::KruskalWeiss.scheduler(ChunkSettings::default());
        for (w, t) in times.iter().enumerate() {
            free.batch_size(&demand(w, 8, 100));
            free.observe(w, *t);
        }
        assert_eq!(free.batch_size(&demand(0, 8, 92)), 1);
    }
}
