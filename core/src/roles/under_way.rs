//! When the tasks a fed rank is computing began, as far as its master can tell: what the live
//! prediction needs to count the work already done in tasks whose result is not in (the
//! estimator's censored observations, [`crate::estimator`]).
//!
//! A rank computes at most `slots` tasks at once (a worker one, a cluster behind a CM as many
//! as it has workers) in the order it was handed them, the rest waiting in its buffers. The
//! master sees only hand-outs and results, so it reckons that a task starts when it is handed
//! to a rank with a free slot, or when a result frees one while the rank holds more. For a
//! worker this is exact up to the message's latency; for a cluster behind a WAN a slot freed
//! there is seen when the result has crossed, so the ages are a little short. A cluster whose
//! sub-master joins results shows no task's end (its workers go on while it holds their
//! results back): nothing is reckoned for it.

use std::time::Duration;

use smallvec::SmallVec;

/// The start times of the tasks a rank is computing, oldest first.
#[derive(Debug, Default)]
pub(super) struct UnderWay {
    slots: usize,
    since: SmallVec<[Duration; 2]>,
}

impl UnderWay {
    /// A rank computing at most `slots` tasks at once (0: nothing is known of it).
    pub(super) fn new(slots: usize) -> Self {
        UnderWay {
            slots,
            since: SmallVec::new(),
        }
    }

    /// At `now` the rank holds `holding` tasks (after a hand-out): a free slot takes one.
    pub(super) fn handed(&mut self, now: Duration, holding: usize) {
        while self.since.len() < holding.min(self.slots) {
            self.since.push(now);
        }
    }

    /// At `now` a result for `tasks` tasks came back and the rank holds `holding`: the oldest
    /// it computed end, and the tasks it holds next start in the slots they free. A result
    /// standing for several tasks was joined by a sub-master, which held the first ones back
    /// while its workers went on: when its tasks end is not seen, and from then on nothing is
    /// reckoned for the rank.
    pub(super) fn returned(&mut self, now: Duration, tasks: usize, holding: usize) {
        if tasks > 1 {
            self.slots = 0;
            self.since.clear();
            return;
        }
        // A worker, the common case: its one task ended, the next it holds starts now.
        if self.since.len() == 1 && holding.min(self.slots) <= 1 {
            if holding == 0 {
                self.since.clear();
            } else {
                self.since[0] = now;
            }
            return;
        }
        let ended = tasks.min(self.since.len());
        self.since.drain(..ended);
        self.since.truncate(holding);
        self.handed(now, holding);
    }

    /// The rank holds nothing any more (its tasks were taken back).
    pub(super) fn clear(&mut self) {
        self.since.clear();
    }

    /// How long each task under way has run at `now`, oldest first.
    pub(super) fn ages(&self, now: Duration) -> impl Iterator<Item = Duration> + '_ {
        self.since
            .iter()
            .map(move |&since| now.saturating_sub(since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(seconds: u64) -> Duration {
        Duration::from_secs(seconds)
    }

    fn ages(u: &UnderWay, now: u64) -> Vec<u64> {
        u.ages(s(now)).map(|a| a.as_secs()).collect()
    }

    #[test]
    fn a_worker_starts_its_next_task_when_a_result_comes_back() {
        let mut worker = UnderWay::new(1);
        worker.handed(s(0), 2);
        assert_eq!(ages(&worker, 3), [3]);
        // The first result at 4: the buffered task starts then.
        worker.returned(s(4), 1, 1);
        assert_eq!(ages(&worker, 5), [1]);
        // The last at 6: nothing under way until a task comes.
        worker.returned(s(6), 1, 0);
        assert_eq!(ages(&worker, 7), Vec::<u64>::new());
        worker.handed(s(8), 1);
        assert_eq!(ages(&worker, 9), [1]);
    }

    #[test]
    fn a_cluster_fills_its_slots_until_a_joined_result_hides_them() {
        let mut cluster = UnderWay::new(2);
        cluster.handed(s(0), 1);
        cluster.handed(s(1), 5);
        assert_eq!(ages(&cluster, 2), [2, 1]);
        // A result at 3, four tasks left: the oldest ended, the next started.
        cluster.returned(s(3), 1, 4);
        assert_eq!(ages(&cluster, 4), [3, 1]);
        cluster.clear();
        assert_eq!(ages(&cluster, 5), Vec::<u64>::new());
        // A joined result: the ends are not seen, nothing more is reckoned.
        cluster.handed(s(6), 4);
        cluster.returned(s(7), 4, 4);
        cluster.handed(s(8), 8);
        assert_eq!(ages(&cluster, 9), Vec::<u64>::new());
        // Nothing known of a cluster without workers given.
        let mut unknown = UnderWay::new(0);
        unknown.handed(s(0), 3);
        assert_eq!(ages(&unknown, 1), Vec::<u64>::new());
    }
}
