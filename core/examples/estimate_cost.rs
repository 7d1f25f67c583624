//! What an estimate of the work left costs a master late in a long run: a million results, a
//! thousand tasks under way, a thousand new results before each of five estimates, with the
//! tasks under way counted and from the results alone. A benchmark, run by hand
//! (`docs/benchmarks.md`):
//!
//! ```text
//! cargo run --release -p hmw-core --example estimate_cost
//! ```

use std::time::Instant;

use hmw_core::estimator::WorkEstimator;

/// SplitMix64 in [low, high): seeded, so every run estimates the same results.
struct Draws(u64);

impl Draws {
    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        low + (high - low) * (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() {
    let mut rng = Draws(1);
    let mut estimator = WorkEstimator::new();
    for id in 0..1_000_000u64 {
        estimator.observe("c", (id % 1000) as usize, id, 1, rng.uniform(1.0, 2.0), 1.0);
    }
    let under_way: Vec<f64> = (0..1000).map(|_| rng.uniform(0.0, 2.0)).collect();
    for round in 0..5u64 {
        for id in 0..1000 {
            let first_id = 1_000_000 + round * 1000 + id;
            estimator.observe("c", 1, first_id, 1, rng.uniform(1.0, 2.0), 1.0);
        }
        let start = Instant::now();
        let alone = estimator.remaining_work(10_000, &[]).expect("results in");
        let alone_s = start.elapsed();
        let start = Instant::now();
        let with = estimator
            .remaining_work(10_000, &under_way)
            .expect("results in");
        let with_s = start.elapsed();
        println!(
            "estimate {round}: results alone {alone_s:?} (work left {:.0}), with the tasks under way {with_s:?} ({:.0})",
            alone.point, with.point
        );
    }
}
