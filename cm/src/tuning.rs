//! How the link sizes itself while it runs, as pure decisions over measurements (no I/O, no
//! clock: the driver passes what it measured and applies what comes back).
//!
//! * [`WindowPolicy`]: a connection's QUIC flow-control window (and the link's buffer memory,
//!   through [`memory_target`]) grows from a small start towards a few times what the path
//!   carries in one round trip, whenever the window is what holds the connection back, within
//!   a memory bound. Windows never shrink (credit granted stays granted).
//! * [`StripeState`]: the number of connections the blocks are striped over. Connections are
//!   added while the link has more to send than it carries, loses packets (so each
//!   connection's congestion window may be held down by loss) and the last addition raised
//!   the goodput; an addition that did not pay is undone and not retried for a while (longer
//!   after each failure; a change is judged on the mean goodput of two epochs after one of
//!   settling). Connections are removed when the application stops using them, when the
//!   path no longer loses packets and one fewer carries as much, and after an addition that
//!   did not pay: the path then carries all it can, the loss is the connections' own (their
//!   queue overflowing at the bottleneck), and fewer are tried, one at a time, while they
//!   carry as much.

use std::time::Duration;

/// How much larger than one round trip of traffic a window (or the buffer memory) is made:
/// one round trip in flight, one more while a lost packet is repaired (the data behind the
/// hole waits in the receiver's buffer), and room to double the rate in the next round trip.
pub const HEADROOM: u64 = 4;

/// Growth of a connection's flow-control window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPolicy {
    /// Window a connection starts with.
    pub initial: u64,
    /// Largest window of one connection.
    pub max: u64,
}

impl WindowPolicy {
    /// The window after a period of `interval` in which `carried` bytes went through the
    /// connection, whose round trip is `rtt` and window `current`; `room` is what the memory
    /// bound still allows the window to add.
    ///
    /// The window grows when the traffic of one round trip reached half of it (the window may
    /// be what limits the connection): to [`HEADROOM`] round trips of traffic, at least double,
    /// at most `max` and `current + room`. It never shrinks.
    pub fn next(
        &self,
        current: u64,
        carried: u64,
        interval: Duration,
        rtt: Duration,
        room: u64,
    ) -> u64 {
        if interval.is_zero() {
            return current;
        }
        let per_rtt = per_round_trip(carried, interval, rtt);
        if per_rtt.saturating_mul(2) < current {
            return current;
        }
        let target = per_rtt
            .saturating_mul(HEADROOM)
            .max(current.saturating_mul(2));
        target
            .min(self.max)
            .min(current.saturating_add(room))
            .max(current)
    }
}

/// Bytes carried in one round trip `rtt` at the rate of `carried` bytes per `interval`.
pub fn per_round_trip(carried: u64, interval: Duration, rtt: Duration) -> u64 {
    if interval.is_zero() {
        return 0;
    }
    let bytes = carried as f64 * rtt.as_secs_f64() / interval.as_secs_f64();
    bytes.min(u64::MAX as f64 / 2.0) as u64
}

/// The buffer memory a link carrying `carried` bytes per `interval` over round trip `rtt` needs:
/// [`HEADROOM`] round trips of traffic (blocks stay in the send buffer until the peer's
/// acknowledgement, a round trip and more; the receiver holds blocks that arrived ahead of a
/// lost one).
pub fn memory_target(carried: u64, interval: Duration, rtt: Duration) -> u64 {
    per_round_trip(carried, interval, rtt).saturating_mul(HEADROOM)
}

/// The memory (send or receive buffer) after a period: `current` raised to the target for the
/// traffic measured, within `room` more, never lowered.
pub fn next_memory(
    current: u64,
    carried: u64,
    interval: Duration,
    rtt: Duration,
    room: u64,
) -> u64 {
    memory_target(carried, interval, rtt)
        .min(current.saturating_add(room))
        .max(current)
}

/// How the number of connections adapts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StripePolicy {
    /// Fewest connections.
    pub min: usize,
    /// Most connections.
    pub max: usize,
    /// Relative goodput gain an addition must bring to be kept (0.1: 10 %).
    pub gain: f64,
    /// Epochs without a backlog after which one connection is removed, and epochs without
    /// loss after which one fewer is tried.
    pub idle_epochs: u32,
}

impl StripePolicy {
    /// Between `min` and `max` connections (in that order even if given the other way round),
    /// a 10 % gain required, 8 epochs of patience.
    pub fn new(min: usize, max: usize) -> Self {
        let min = min.max(1);
        Self {
            min: min.min(max.max(1)),
            max: max.max(min),
            gain: 0.1,
            idle_epochs: 8,
        }
    }
}

/// What the link measured over one epoch (a second or a few round trips).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StripeSample {
    /// Bytes per second the peer acknowledged.
    pub goodput: f64,
    /// The sender had more to send than the connections took during (most of) the epoch.
    pub backlogged: bool,
    /// The connections lost packets during the epoch: loss, not the path's rate, may be what
    /// holds each one down.
    pub lossy: bool,
}

/// Epochs a change is measured over before it is judged (after one epoch of settling): the
/// goodput of one epoch swings with the in-order delivery of blocks held up by a lost one.
pub const JUDGED_EPOCHS: u32 = 2;

/// A change of the connection count being tried.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Probe {
    /// The count before the change.
    from: usize,
    /// Goodput before the change (the mean of the two epochs before it, when there were).
    before: f64,
    /// Epochs still to wait before measuring (new connections need a few round trips to
    /// open their windows).
    settle: u32,
    /// Goodput summed over the epochs measured so far, and their number.
    sum: f64,
    measured: u32,
}

/// Why the connection count changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StripeReason {
    /// Backlog and loss: more connections tried.
    Probe,
    /// The connections tried brought too little: back to the count before.
    Revert,
    /// One fewer tried: no loss for a while, or the last addition did not pay (and each
    /// removal since kept the goodput).
    ProbeFewer,
    /// The application did not use the link: one fewer.
    Idle,
}

/// The connection-count state machine: feed it one [`StripeSample`] per epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct StripeState {
    policy: StripePolicy,
    target: usize,
    probe: Option<Probe>,
    holdoff: u32,
    failures: u32,
    idle: u32,
    quiet: u32,
    /// Goodput of the previous epoch.
    previous: Option<f64>,
    /// The last addition did not pay, or the last removal kept the goodput: one fewer is
    /// tried after this many epochs (the goodput before it measured at the count it leaves).
    descend: Option<u32>,
}

impl StripeState {
    /// Starts at `start` connections (clamped into the policy's range).
    pub fn new(policy: StripePolicy, start: usize) -> Self {
        Self {
            policy,
            target: start.clamp(policy.min, policy.max),
            probe: None,
            holdoff: 0,
            failures: 0,
            idle: 0,
            quiet: 0,
            previous: None,
            descend: None,
        }
    }

    /// The number of connections wanted now.
    pub fn target(&self) -> usize {
        self.target
    }

    /// Takes the measurements of the epoch that just ended; returns the new count and why
    /// it changed, if it did.
    pub fn on_epoch(&mut self, sample: StripeSample) -> Option<(usize, StripeReason)> {
        let before = self.target;
        let reason = self.decide(sample);
        self.previous = Some(sample.goodput);
        debug_assert!((self.policy.min..=self.policy.max).contains(&self.target));
        reason
            .filter(|_| self.target != before)
            .map(|reason| (self.target, reason))
    }

    fn decide(&mut self, sample: StripeSample) -> Option<StripeReason> {
        let policy = self.policy;
        if let Some(probe) = &mut self.probe {
            if probe.settle > 0 {
                probe.settle -= 1;
                return None;
            }
            probe.sum += sample.goodput;
            probe.measured += 1;
            if probe.measured < JUDGED_EPOCHS {
                return None;
            }
            let probe = self.probe.take().expect("probe");
            let after = probe.sum / f64::from(probe.measured);
            let adding = self.target > probe.from;
            let kept = if adding {
                after >= probe.before * (1.0 + policy.gain)
            } else {
                after >= probe.before * (1.0 - policy.gain / 2.0)
            };
            self.quiet = 0;
            // An addition that did not pay starts a descent, once two epochs measured the
            // count restored; a removal that kept the goodput goes on at once. A removal
            // that cost, or an addition that paid, ends it.
            self.descend = match (adding, kept) {
                (true, false) => Some(2),
                (false, true) => Some(0),
                _ => None,
            };
            if kept {
                self.failures = 0;
                return None;
            }
            self.target = probe.from;
            self.failures = (self.failures + 1).min(5);
            self.holdoff = 2 << self.failures;
            return Some(StripeReason::Revert);
        }
        if !sample.backlogged {
            self.idle += 1;
            if self.idle >= policy.idle_epochs && self.target > policy.min {
                self.idle = 0;
                self.target -= 1;
                return Some(StripeReason::Idle);
            }
            return None;
        }
        self.idle = 0;
        if let Some(wait) = self.descend {
            if wait > 0 {
                self.descend = Some(wait - 1);
                return None;
            }
            self.descend = None;
            if self.target > policy.min {
                return Some(self.try_fewer(sample.goodput));
            }
        }
        if self.holdoff > 0 {
            self.holdoff -= 1;
            return None;
        }
        if sample.lossy {
            self.quiet = 0;
            if self.target < policy.max {
                self.probe = Some(self.probe_from(sample.goodput));
                self.target = (self.target + (self.target / 2).max(1)).min(policy.max);
                return Some(StripeReason::Probe);
            }
            return None;
        }
        self.quiet += 1;
        if self.quiet >= policy.idle_epochs && self.target > policy.min {
            self.quiet = 0;
            return Some(self.try_fewer(sample.goodput));
        }
        None
    }
}

impl StripeState {
    /// One fewer connection tried (the count is above the policy's fewest), the goodput
    /// before it `goodput`'s epoch and the previous one.
    fn try_fewer(&mut self, goodput: f64) -> StripeReason {
        self.probe = Some(self.probe_from(goodput));
        self.target -= 1;
        StripeReason::ProbeFewer
    }

    /// A change from the current count, the goodput before it being that of this epoch and
    /// the previous one.
    fn probe_from(&self, goodput: f64) -> Probe {
        Probe {
            from: self.target,
            before: self
                .previous
                .map_or(goodput, |previous| (previous + goodput) / 2.0),
            settle: 1,
            sum: 0.0,
            measured: 0,
        }
    }
}

/// The epoch of the connection-count decisions for a path of round trip `rtt`: ten round
/// trips, at least 1 s and at most 5 s.
pub fn stripe_epoch(rtt: Duration) -> Duration {
    (rtt * 10).clamp(Duration::from_secs(1), Duration::from_secs(5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_window_limited_connection_grows_to_four_round_trips_of_traffic() {
        let policy = WindowPolicy {
            initial: 1 << 20,
            max: 64 << 20,
        };
        // 1 MiB window, 100 ms path, 1 MiB carried in 100 ms: limited by the window.
        let w = policy.next(1 << 20, 1 << 20, 100 * MS, 100 * MS, u64::MAX);
        assert_eq!(w, 4 << 20);
        // Carrying a quarter of the window per round trip: not limited, unchanged.
        assert_eq!(
            policy.next(4 << 20, 1 << 20, 100 * MS, 100 * MS, u64::MAX),
            4 << 20
        );
        // Just at half: doubles at least.
        assert_eq!(
            policy.next(4 << 20, 2 << 20, 100 * MS, 100 * MS, u64::MAX),
            8 << 20
        );
        // Bounded by max and by the room left.
        assert_eq!(
            policy.next(32 << 20, 32 << 20, 100 * MS, 100 * MS, u64::MAX),
            64 << 20
        );
        assert_eq!(
            policy.next(4 << 20, 4 << 20, 100 * MS, 100 * MS, 1 << 20),
            5 << 20
        );
        // A loopback path (100 µs): 1 GB/s needs no more than the start.
        let us100 = Duration::from_micros(100);
        assert_eq!(
            policy.next(1 << 20, 1_000_000_000 / 10, 100 * MS, us100, u64::MAX),
            1 << 20
        );
    }

    #[test]
    fn a_1_gbit_100_ms_path_reaches_its_bandwidth_delay_product_in_a_few_steps() {
        // The path carries min(window per round trip, rate): each 100 ms step measures that.
        let policy = WindowPolicy {
            initial: 1 << 20,
            max: 64 << 20,
        };
        let rate = 125_000_000u64; // bytes per second
        let rtt = 100 * MS;
        let bdp = rate / 10;
        let mut window = policy.initial;
        let mut steps = 0;
        while window < bdp {
            let carried = window.min(bdp);
            window = policy.next(window, carried, rtt, rtt, u64::MAX);
            steps += 1;
            assert!(steps < 10, "window {window}");
        }
        assert!(steps <= 3, "{steps} steps");
        // Once there it stays (the path, not the window, limits now).
        let settled = policy.next(window, bdp, rtt, rtt, u64::MAX);
        assert!(settled <= HEADROOM * bdp, "{settled}");
        assert_eq!(policy.next(settled, bdp, rtt, rtt, u64::MAX), settled);
    }

    #[test]
    fn memory_follows_four_round_trips_of_traffic_within_the_room() {
        let rtt = 100 * MS;
        assert_eq!(memory_target(12_500_000, rtt, rtt), 50_000_000);
        assert_eq!(
            next_memory(32 << 20, 12_500_000, rtt, rtt, u64::MAX),
            50_000_000
        );
        assert_eq!(
            next_memory(32 << 20, 12_500_000, rtt, rtt, 1 << 20),
            33 << 20
        );
        assert_eq!(
            next_memory(64 << 20, 12_500_000, rtt, rtt, u64::MAX),
            64 << 20
        );
        assert_eq!(
            next_memory(64 << 20, 0, Duration::ZERO, rtt, u64::MAX),
            64 << 20
        );
    }

    proptest! {
        #[test]
        fn windows_never_shrink_nor_pass_their_bounds(
            current in 1u64..(1 << 32),
            carried in 0u64..(1 << 34),
            interval_ms in 0u64..10_000,
            rtt_us in 0u64..2_000_000,
            room in 0u64..(1 << 33),
            max in 1u64..(1 << 33),
        ) {
            let policy = WindowPolicy { initial: 1, max };
            let next = policy.next(
                current,
                carried,
                Duration::from_millis(interval_ms),
                Duration::from_micros(rtt_us),
                room,
            );
            prop_assert!(next >= current);
            prop_assert!(next == current || next <= max);
            prop_assert!(next <= current.saturating_add(room));
            let memory = next_memory(
                current,
                carried,
                Duration::from_millis(interval_ms),
                Duration::from_micros(rtt_us),
                room,
            );
            prop_assert!(memory >= current && memory <= current.saturating_add(room));
        }

        #[test]
        fn the_connection_count_stays_within_its_bounds_and_changes_only_for_a_reason(
            min in 1usize..8,
            span in 0usize..20,
            start in 0usize..40,
            samples in proptest::collection::vec((0.0f64..1e9, any::<bool>(), any::<bool>()), 0..200),
        ) {
            let policy = StripePolicy::new(min, min + span);
            let mut state = StripeState::new(policy, start);
            prop_assert!((policy.min..=policy.max).contains(&state.target()));
            for (goodput, backlogged, lossy) in samples {
                let before = state.target();
                let change = state.on_epoch(StripeSample { goodput, backlogged, lossy });
                let after = state.target();
                prop_assert!((policy.min..=policy.max).contains(&after));
                match change {
                    None => prop_assert_eq!(before, after),
                    Some((n, reason)) => {
                        prop_assert_eq!(n, after);
                        prop_assert_ne!(before, after);
                        match reason {
                            StripeReason::Probe => prop_assert!(after > before && backlogged && lossy),
                            StripeReason::Idle => prop_assert!(after == before - 1 && !backlogged),
                            StripeReason::ProbeFewer => prop_assert!(after == before - 1 && backlogged),
                            StripeReason::Revert => {}
                        }
                    }
                }
            }
        }
    }

    fn sample(goodput: f64, backlogged: bool, lossy: bool) -> StripeSample {
        StripeSample {
            goodput,
            backlogged,
            lossy,
        }
    }

    /// A lossy path where each connection carries 2 units whatever the count, up to a link
    /// of 20: the count climbs to 13 and stays there.
    #[test]
    fn connections_are_added_while_they_pay_and_an_addition_that_does_not_is_undone() {
        let mut state = StripeState::new(StripePolicy::new(4, 16), 4);
        let goodput = |n: usize| (2.0 * n as f64).min(20.0);
        let mut history = vec![state.target()];
        for _ in 0..80 {
            let n = state.target();
            state.on_epoch(sample(goodput(n), true, true));
            history.push(state.target());
        }
        // Each change is judged over two epochs after one of settling.
        assert_eq!(history[..6], [4, 6, 6, 6, 6, 9]);
        assert!(history.iter().all(|&n| n <= 16));
        // 9 (18) to 13 (20, 11 % more: kept), then 16 (still 20: undone); from 13 one fewer
        // at a time while each carries as much (12, 11, 10: 20), until 9 (18) costs. It
        // settles on the fewest that carry the path, 10, probing 9 and 15 less and less often.
        assert!(
            history.contains(&13) && history.contains(&16),
            "{history:?}"
        );
        let end = &history[50..];
        assert!(end.iter().all(|&n| [9, 10, 15].contains(&n)), "{history:?}");
        let at_10 = end.iter().filter(|&&n| n == 10).count();
        assert!(at_10 * 3 >= end.len() * 2, "{history:?}");
        // Probes that fail back off: fewer changes late than early.
        let changes = |h: &[usize]| h.windows(2).filter(|w| w[0] != w[1]).count();
        assert!(changes(&history[50..]) <= 4, "{history:?}");
    }

    /// A path that the connections' own bursts overflow: it loses packets whatever their
    /// count, and each one more carries a little less. The addition does not pay, so the
    /// count descends to one and stays there but for rarer and rarer probes.
    #[test]
    fn on_a_path_the_connections_saturate_an_addition_that_does_not_pay_leads_to_fewer() {
        let mut state = StripeState::new(StripePolicy::new(1, 16), 4);
        let goodput = |n: usize| 20.0 - 0.2 * n as f64;
        let mut history = vec![state.target()];
        for _ in 0..80 {
            let n = state.target();
            state.on_epoch(sample(goodput(n), true, true));
            history.push(state.target());
        }
        // 4, then 6 tried and undone, then 3, 2 and 1, each kept.
        let mut changes: Vec<usize> = history.clone();
        changes.dedup();
        assert_eq!(changes[..6], [4, 6, 4, 3, 2, 1], "{history:?}");
        let end = &history[40..];
        assert!(end.iter().all(|&n| n <= 2), "{history:?}");
        assert!(end.iter().filter(|&&n| n == 1).count() * 4 >= end.len() * 3);
    }

    #[test]
    fn without_backlog_surplus_connections_go_one_by_one() {
        let mut state = StripeState::new(StripePolicy::new(2, 16), 8);
        for epoch in 1..=7 {
            assert_eq!(
                state.on_epoch(sample(1.0, false, true)),
                None,
                "epoch {epoch}"
            );
        }
        assert_eq!(
            state.on_epoch(sample(1.0, false, true)),
            Some((7, StripeReason::Idle))
        );
        for _ in 0..100 {
            state.on_epoch(sample(1.0, false, false));
        }
        assert_eq!(state.target(), 2);
    }

    #[test]
    fn without_loss_one_fewer_is_tried_and_kept_if_it_carries_as_much() {
        let mut state = StripeState::new(StripePolicy::new(1, 16), 4);
        for _ in 0..7 {
            assert_eq!(state.on_epoch(sample(100.0, true, false)), None);
        }
        assert_eq!(
            state.on_epoch(sample(100.0, true, false)),
            Some((3, StripeReason::ProbeFewer))
        );
        assert_eq!(state.on_epoch(sample(99.0, true, false)), None); // settling
        assert_eq!(state.on_epoch(sample(99.0, true, false)), None); // measured
        assert_eq!(state.on_epoch(sample(99.0, true, false)), None); // measured: kept
        assert_eq!(state.target(), 3);
        // A removal kept: one fewer again at once, but now it costs: back to 3.
        assert_eq!(
            state.on_epoch(sample(99.0, true, false)),
            Some((2, StripeReason::ProbeFewer))
        );
        state.on_epoch(sample(60.0, true, false));
        state.on_epoch(sample(60.0, true, false));
        assert_eq!(
            state.on_epoch(sample(60.0, true, false)),
            Some((3, StripeReason::Revert))
        );
    }

    #[test]
    fn the_epoch_is_ten_round_trips_within_one_to_five_seconds() {
        assert_eq!(
            stripe_epoch(Duration::from_micros(100)),
            Duration::from_secs(1)
        );
        assert_eq!(stripe_epoch(200 * MS), Duration::from_secs(2));
        assert_eq!(stripe_epoch(Duration::from_secs(3)), Duration::from_secs(5));
    }
}
