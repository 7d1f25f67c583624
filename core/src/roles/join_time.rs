//! The time a source spends joining results (decoding them, gathering or combining them,
//! encoding what goes up), measured on a sample of the joins.
//!
//! This is the one clock a core reads: the time the application's own code takes, which no
//! driver can see from outside a core's `handle`. It is read around one join in
//! [`SAMPLE_EVERY`] (the first, the 17th, ...) and the total scaled by the joins counted: two
//! clock reads per result were 6 % of the main master's time per task in the dispatch
//! benchmark (`docs/benchmarks.md`), where a join is a few tens of nanoseconds.

use std::time::Instant;

/// One join in this many is timed.
pub(super) const SAMPLE_EVERY: u64 = 16;

/// Joins counted and the time of those timed.
#[derive(Debug, Clone, Default)]
pub(super) struct JoinTime {
    joins: u64,
    timed: u64,
    timed_s: f64,
}

impl JoinTime {
    /// Run `join`, timing it if it falls in the sample.
    pub(super) fn measure<T>(&mut self, join: impl FnOnce() -> T) -> T {
        let sampled = self.joins % SAMPLE_EVERY == 0;
        self.joins += 1;
        if !sampled {
            return join();
        }
        let start = Instant::now();
        let output = join();
        self.timed_s += start.elapsed().as_secs_f64();
        self.timed += 1;
        output
    }

    /// Seconds spent in every join: the sample's mean times the joins.
    pub(super) fn total_s(&self) -> f64 {
        if self.timed == 0 {
            return 0.0;
        }
        self.timed_s / self.timed as f64 * self.joins as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_total_scales_the_sample_to_every_join() {
        let mut time = JoinTime::default();
        assert_eq!(time.total_s(), 0.0);
        for _ in 0..2 * SAMPLE_EVERY {
            time.measure(|| std::thread::sleep(Duration::from_millis(1)));
        }
        assert_eq!((time.joins, time.timed), (2 * SAMPLE_EVERY, 2));
        let per_join = time.total_s() / (2 * SAMPLE_EVERY) as f64;
        assert!((0.001..0.1).contains(&per_join), "{per_join} s a join");
        assert_eq!(time.measure(|| 7), 7);
    }
}
