//! [`BusySince`]: how busy a cluster's workers have been since its first result, for the live
//! prediction's steady performance (`docs/model.md`, (107)).

use std::time::Duration;

/// How busy a cluster's workers have been since its first result (or since it came back after
/// being lost): with their basic operations per busy second, its steady performance as the
/// live prediction measures it (107).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BusySince {
    /// When its first result came, once one has.
    since: Option<Duration>,
    /// Busy seconds of its useful results since, less what its tasks under way at the first
    /// result had run before it.
    busy_s: f64,
    /// Useful results since the first.
    results: u64,
}

impl BusySince {
    /// A useful result of `busy_s` busy seconds came at `now`; `under_way_s` gives the ages
    /// of the cluster's tasks still under way, read at its first result.
    pub(super) fn add(&mut self, now: Duration, busy_s: f64, under_way_s: impl FnOnce() -> f64) {
        if self.since.is_some() {
            self.busy_s += busy_s;
            self.results += 1;
        } else {
            self.since = Some(now);
            self.busy_s = -under_way_s();
        }
    }

    /// (107): the share of the time of its `workers` they were busy since the first result,
    /// counting `under_way_s`, the ages now of its tasks under way; `None` before a second
    /// result.
    pub(super) fn share(&self, now: Duration, workers: usize, under_way_s: f64) -> Option<f64> {
        let seconds = now.checked_sub(self.since?)?.as_secs_f64();
        (self.results > 0 && seconds > 0.0 && workers > 0)
            .then(|| ((self.busy_s + under_way_s) / (workers as f64 * seconds)).clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Two workers busy half the time, a task of 1 s then 1 s of waiting, one half a second
    /// behind the other: A computes over [0, 1], [2, 3], [4, 5], B over [0.5, 1.5],
    /// [2.5, 3.5], [4.5, 5.5]. At A's first result B's task has run 0.5 s; at 5.25 s B's third
    /// has run 0.75 s. Busy inside [1, 5.25]: 4.25 s of the workers' 8.5 s.
    #[test]
    fn the_share_counts_the_tasks_under_way_at_both_ends() {
        let mut busy = BusySince::default();
        busy.add(ms(1000), 1.0, || 0.5);
        assert_eq!(
            busy.share(ms(1200), 2, 0.2),
            None,
            "one result: not known yet"
        );
        for at in [1500, 3000, 3500, 5000] {
            busy.add(ms(at), 1.0, || {
                unreachable!("read at the first result only")
            });
        }
        let share = busy.share(ms(5250), 2, 0.75).unwrap();
        assert!((share - 0.5).abs() < 1e-12, "{share}");
    }

    #[test]
    fn the_share_stays_within_zero_and_one() {
        let mut busy = BusySince::default();
        busy.add(ms(1000), 1.0, || 0.0);
        busy.add(ms(1100), 5.0, || 0.0);
        assert_eq!(busy.share(ms(2000), 1, 3.0), Some(1.0));
        let mut idle = BusySince::default();
        idle.add(ms(1000), 1.0, || 4.0);
        idle.add(ms(1100), 1.0, || 0.0);
        assert_eq!(idle.share(ms(2000), 2, 0.0), Some(0.0));
    }
}
