//! Chunk sizes for the scheduler (`docs/model.md` section 5): how many tasks one message to a
//! worker carries. Pure computations over the counts and times the scheduler keeps; a
//! `Scheduler` calls them on each request.
//!
//! Every size is at least 1 while tasks remain and never more than the tasks remaining.

/// Section 5, on demand (the default): one task per request.
pub fn on_demand_chunk(remaining: u64) -> u64 {
    remaining.min(1)
}

/// Section 5, fixed-size chunking: every batch holds `floor(f * M)` tasks (at least 1), `M` being the
/// problem's tasks; the scheduler splits each batch into one chunk per worker
/// ([`split_batch`]).
pub fn fixed_size_batch(fraction: f64, total_tasks: u64, remaining: u64) -> u64 {
    bounded((fraction * total_tasks as f64).floor(), remaining)
}

/// Section 5, fixed-size chunking with the optimal chunk (Kruskal and Weiss): for `N` tasks,
/// `P` workers, a scheduling overhead `h` per chunk and a standard deviation `sigma` of the
/// task time, `K_opt = (sqrt(2) * N * h / (sigma * P * sqrt(ln P)))^(2/3)` tasks per chunk.
/// Unbounded (infinite) when nothing varies (`sigma = 0`) or one worker has nothing to balance
/// against (`P = 1`); the caller bounds it by the tasks at hand.
pub fn kruskal_weiss_chunk(tasks: u64, workers: usize, overhead_s: f64, deviation_s: f64) -> f64 {
    let p = workers as f64;
    let denominator = deviation_s * p * p.ln().sqrt();
    (2f64.sqrt() * tasks as f64 * overhead_s / denominator).powf(2.0 / 3.0)
}

/// Section 5, factoring (DPF): batch `j` holds `floor(f * remaining)` tasks (at least 1).
pub fn factoring_batch(fraction: f64, remaining: u64) -> u64 {
    bounded((fraction * remaining as f64).floor(), remaining)
}

/// Section 5, adaptive factoring (DAF), first batch factor `x0 = (mu + sigma * sqrt(N/2)) / mu`, with `mu`
/// and `sigma` the measured mean and deviation of the per-task time and `N` workers.
pub fn adaptive_factoring_first_factor(mean: f64, deviation: f64, workers: usize) -> f64 {
    (mean + deviation * (workers as f64 / 2.0).sqrt()) / mean
}

/// Section 5, adaptive factoring (DAF), later batch factor `xj = (2 * mu + sigma * sqrt(N/2)) / mu`.
pub fn adaptive_factoring_factor(mean: f64, deviation: f64, workers: usize) -> f64 {
    (2.0 * mean + deviation * (workers as f64 / 2.0).sqrt()) / mean
}

/// Section 5, adaptive factoring (DAF): batch `j` holds `floor(remaining / xj)` tasks (at least 1), in `N`
/// chunks ([`split_batch`]).
pub fn adaptive_factoring_batch(remaining: u64, factor: f64) -> u64 {
    bounded((remaining as f64 / factor).floor(), remaining)
}

/// Section 5, fixed-size chunking and DAF: a batch split into one chunk per worker, as equal as possible (the first chunks one larger);
/// chunks of zero tasks are left out.
pub fn split_batch(batch: u64, workers: usize) -> Vec<u64> {
    let workers = workers.max(1) as u64;
    let base = batch / workers;
    let extra = batch % workers;
    (0..workers)
        .map(|i| base + u64::from(i < extra))
        .filter(|&c| c > 0)
        .collect()
}

/// Section 5, adaptive multi-round (heterogeneous): fitness `F_i = (1/t_i) / sum_j (1/t_j)` from each
/// worker's latest per-task time `t_i`.
pub fn fitness(per_task_times: &[f64]) -> Vec<f64> {
    let total: f64 = per_task_times.iter().map(|t| 1.0 / t).sum();
    per_task_times.iter().map(|t| (1.0 / t) / total).collect()
}

/// Section 5, adaptive multi-round: `CV`, the coefficient of variation — sample standard
/// deviation over mean (0 for fewer than two
/// samples).
pub fn coefficient_of_variation(samples: &[f64]) -> f64 {
    let n = samples.len();
    if n < 2 {
        return 0.0;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
    variance.sqrt() / mean
}

/// Section 5, adaptive multi-round: the installment factor `k = ln(S)^CV`, `S` the number of tasks and `CV`
/// the coefficient of variation of the calibration times; at least 1, so that an installment
/// never exceeds the remaining work.
pub fn installment_factor(tasks: u64, calibration_times: &[f64]) -> f64 {
    let k = (tasks as f64)
        .ln()
        .powf(coefficient_of_variation(calibration_times));
    if k.is_finite() {
        k.max(1.0)
    } else {
        1.0
    }
}

/// Section 5, adaptive multi-round: the chunk for worker `i`, `round((S_remaining / k) * F_i)`, at least 1.
pub fn multi_round_chunk(remaining: u64, installment_factor: f64, fitness: f64) -> u64 {
    bounded(
        (remaining as f64 / installment_factor * fitness).round(),
        remaining,
    )
}

/// Section 5: the successive batch sizes of a policy until `total` tasks are handed out; `next_batch`
/// receives the tasks remaining.
pub fn batch_sequence(total: u64, mut next_batch: impl FnMut(u64) -> u64) -> Vec<u64> {
    let mut remaining = total;
    let mut batches = Vec::new();
    while remaining > 0 {
        let batch = next_batch(remaining).clamp(1, remaining);
        batches.push(batch);
        remaining -= batch;
    }
    batches
}

/// `size` as a whole number of tasks in `1..=remaining` (0 when nothing remains).
fn bounded(size: f64, remaining: u64) -> u64 {
    if remaining == 0 {
        return 0;
    }
    // `as` saturates, and NaN becomes 0, which the clamp lifts to 1.
    (size as u64).clamp(1, remaining)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn on_demand_is_one_task() {
        assert_eq!(on_demand_chunk(10), 1);
        assert_eq!(on_demand_chunk(0), 0);
    }

    #[test]
    fn fixed_size_batches_split_per_worker() {
        // M = 100, f = 0.25: batches of 25, four workers -> 7, 6, 6, 6
        assert_eq!(fixed_size_batch(0.25, 100, 100), 25);
        assert_eq!(split_batch(25, 4), vec![7, 6, 6, 6]);
        assert_eq!(
            batch_sequence(100, |r| fixed_size_batch(0.25, 100, r)),
            vec![25; 4]
        );
        assert_eq!(fixed_size_batch(0.25, 100, 10), 10);
        assert_eq!(split_batch(2, 4), vec![1, 1]);
    }

    #[test]
    fn kruskal_weiss_matches_the_test_vector() {
        // N = 10000, P = 8, h = 0.5 ms, sigma = 2 ms -> K_opt = 45.456
        let k = kruskal_weiss_chunk(10_000, 8, 0.5e-3, 2e-3);
        assert!((k - 45.456).abs() < 5e-4, "{k}");
        assert!(kruskal_weiss_chunk(100, 8, 1e-3, 0.0).is_infinite());
        assert!(kruskal_weiss_chunk(100, 1, 1e-3, 1e-3).is_infinite());
    }

    #[test]
    fn factoring_halves_the_remainder() {
        assert_eq!(
            batch_sequence(100, |r| factoring_batch(0.5, r)),
            vec![50, 25, 12, 6, 3, 2, 1, 1]
        );
    }

    #[test]
    fn adaptive_factoring_matches_the_test_vector() {
        // mu = 2, sigma = 1.6, N = 10 -> x0 = 2.78885, xj = 3.78885
        let x0 = adaptive_factoring_first_factor(2.0, 1.6, 10);
        let xj = adaptive_factoring_factor(2.0, 1.6, 10);
        assert!((x0 - 2.78885).abs() < 1e-5, "{x0}");
        assert!((xj - 3.78885).abs() < 1e-5, "{xj}");
        // 1000 tasks: first batch floor(1000 / 2.78885) = 358 in ten chunks
        let first = adaptive_factoring_batch(1000, x0);
        assert_eq!(first, 358);
        assert_eq!(
            split_batch(first, 10),
            vec![36, 36, 36, 36, 36, 36, 36, 36, 35, 35]
        );
        assert_eq!(adaptive_factoring_batch(642, xj), 169);
    }

    #[test]
    fn multi_round_matches_the_test_vector() {
        // calibration times 1, 2, 3, 4 -> F = 0.48, 0.24, 0.16, 0.12
        let f = fitness(&[1.0, 2.0, 3.0, 4.0]);
        for (got, expected) in f.iter().zip([0.48, 0.24, 0.16, 0.12]) {
            assert!((got - expected).abs() < 1e-12, "{f:?}");
        }
        // S = 64, k = 2 -> 15, 8, 5, 4
        let chunks: Vec<u64> = f.iter().map(|&fi| multi_round_chunk(64, 2.0, fi)).collect();
        assert_eq!(chunks, vec![15, 8, 5, 4]);
        // CV of 1, 2, 3, 4: s = 1.29099, mean 2.5 -> 0.516398; k = ln(64)^0.516398 = 2.5196
        let cv = coefficient_of_variation(&[1.0, 2.0, 3.0, 4.0]);
        assert!((cv - 0.516_397_779_494_322).abs() < 1e-12, "{cv}");
        let k = installment_factor(64, &[1.0, 2.0, 3.0, 4.0]);
        assert!((k - 64f64.ln().powf(cv)).abs() < 1e-12);
        assert_eq!(installment_factor(1, &[1.0, 3.0]), 1.0);
        assert_eq!(multi_round_chunk(64, 2.0, 0.001), 1);
    }

    proptest! {
        #[test]
        fn policies_hand_out_exactly_the_problem(
            total in 1u64..5_000,
            fraction in 0.001f64..1.0,
            mean in 0.01f64..100.0,
            deviation in 0.0f64..100.0,
            workers in 1usize..64,
        ) {
            let x0 = adaptive_factoring_first_factor(mean, deviation, workers);
            let xj = adaptive_factoring_factor(mean, deviation, workers);
            let mut first = true;
            let daf = batch_sequence(total, |r| {
                let x = if std::mem::take(&mut first) { x0 } else { xj };
                adaptive_factoring_batch(r, x)
            });
            let sequences = [
                batch_sequence(total, |r| fixed_size_batch(fraction, total, r)),
                batch_sequence(total, |r| factoring_batch(fraction, r)),
                daf,
            ];
            for batches in sequences {
                prop_assert_eq!(batches.iter().sum::<u64>(), total);
                for &b in &batches {
                    let chunks = split_batch(b, workers);
                    prop_assert_eq!(chunks.iter().sum::<u64>(), b);
                    prop_assert!(chunks.len() <= workers && chunks.iter().all(|&c| c >= 1));
                }
            }
        }

        #[test]
        fn multi_round_chunks_stay_within_the_remaining_work(
            remaining in 0u64..10_000,
            times in prop::collection::vec(0.001f64..1000.0, 1..16),
        ) {
            let k = installment_factor(remaining.max(1), &times);
            let f = fitness(&times);
            prop_assert!((f.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            for fi in f {
                let chunk = multi_round_chunk(remaining, k, fi);
                prop_assert!(chunk <= remaining);
                prop_assert!(remaining == 0 || chunk >= 1);
            }
        }
    }
}
