//! The link's BBR: quinn's BBR controller with its congestion window bounded by the
//! bandwidth-delay product the connection was measured to deliver.
//!
//! quinn's BBR (marked experimental) sets its window from a bottleneck rate estimated from the
//! spacing of single acknowledgements, starts from 200 packets (240 kB) and does not back off
//! on loss. On the testbed's WANs (16 and 8 Mbit/s, 40 and 100 ms round trips, 100 ms queues
//! at the bottleneck) with both directions loaded, as in a run, its windows stayed at 240-500 kB
//! per connection against 40-50 kB of bandwidth-delay product per connection: both queues
//! stayed full (round trips of 235 and 330 ms instead of 40 and 100), the bottlenecks dropped
//! 40-55 % of the packets and the goodput was 30-60 % below the rate (quinn's path statistics
//! and the router's counters; `docs/benchmarks.md`).
//!
//! [`DeliveryRate`] measures what the connection delivers over whole round trips (the bytes
//! acknowledged between two acknowledgement batches at least a round trip apart, so bunched
//! acknowledgements do not inflate it) and keeps the largest of the last [`RATE_ROUNDS`];
//! [`window_bound`] is [`WINDOW_GAIN`] x that rate x the minimum round trip. The window of
//! [`BoundedBbr`] is quinn's BBR's, at most that bound: what is in flight beyond the path's
//! own bandwidth-delay product (a queue at the bottleneck, acknowledgements waiting behind the
//! other direction's data) stays within half a minimum round trip of traffic, and the rate can
//! still grow by half each round trip while the path delivers more.
//!
//! A new connection knows nothing of its path, so by default it starts from ten packets and
//! grows by about half each round trip: on a far, fast path that takes seconds (8 MB/s and a
//! 120 ms round trip: about ten round trips to the 1 MB the path holds). With a [`Seed`] (the
//! rate the plan or the calibration expects of the path, [`crate::PathHint`], or the rate a
//! connection of the same link measured last) its window is that rate's bandwidth-delay
//! product ([`start_window`]) until it has measured two round trips under load; from then on
//! quinn's BBR within the bound of what it measured, so a path slower than expected costs two
//! round trips of excess at most. Without a seed quinn's BBR does worse than slow: a link that
//! connects and idles before its run (the handshake, then pings) has its start-up ended by
//! rounds that carried nothing, and grows its window by its probing gain of a quarter every
//! few round trips instead of doubling it each one.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Bbr, BbrConfig, Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;

/// The window allowed over the bandwidth-delay product measured: one round trip in flight plus
/// at most half of one queued (data at the bottleneck, acknowledgements delayed by the receiver
/// or behind the other direction's data), room to grow the rate by half each round trip.
/// BBR's own gain, 2, let a connection that carried most of the testbed's 8 Mbit/s, 100 ms
/// path fill both 100 ms queues (round trips of 230-340 ms, 6-7 % of the packets dropped).
pub const WINDOW_GAIN: f64 = 1.5;

/// Round trips whose rates the bound takes the largest of.
pub const RATE_ROUNDS: usize = 10;

/// Shortest measuring interval: on a path of a fraction of a millisecond (loopback, a LAN) the
/// hosts' scheduling and the receiver's delayed acknowledgements, not the path, make the
/// round trip, and the bound must leave room for them.
pub const MIN_ROUND: Duration = Duration::from_millis(5);

/// Allowance for acknowledgements the receiver delays (QUIC's default `max_ack_delay`) and
/// for the hosts' own delays, added to the bound as that much time at the measured rate: with
/// the gain alone, a 40 ms path whose loaded hosts add 30 ms to the round trip was held to
/// 75-85 % of its rate.
pub const ACK_DELAY: Duration = Duration::from_millis(25);

/// Smallest bound, in packets of the current size (RFC 9002's initial window).
const MIN_WINDOW_PACKETS: u64 = 10;

/// The delivery rate of a connection measured over round trips.
#[derive(Debug, Clone, Default)]
pub struct DeliveryRate {
    /// Bytes acknowledged so far.
    acked: u64,
    /// Where the current round started: when, and `acked` then.
    round_start: Option<(Instant, u64)>,
    /// Whether the sender ran out of data during the current round.
    app_limited: bool,
    /// Rates of the last rounds, bytes per second, the newest last.
    rates: VecDeque<f64>,
    /// Rounds measured with the sender never short of data (counted up to two).
    loaded_rounds: u8,
}

impl DeliveryRate {
    /// `bytes` were acknowledged; `app_limited`: the sender had nothing more to send before.
    pub fn on_ack(&mut self, bytes: u64, app_limited: bool) {
        self.acked += bytes;
        self.app_limited |= app_limited;
    }

    /// A batch of acknowledgements ended at `now`; `round` is the shortest interval a rate is
    /// measured over (the path's minimum round trip, at least [`MIN_ROUND`]).
    pub fn on_end_acks(&mut self, now: Instant, round: Duration) {
        let Some((start, acked)) = self.round_start else {
            self.round_start = Some((now, self.acked));
            return;
        };
        let elapsed = now.saturating_duration_since(start);
        let round = round.max(MIN_ROUND);
        if elapsed < round {
            return;
        }
        // A round that lasted more than two round trips held a silence (the sender had
        // nothing to send and no acknowledgement came, as before a run's start): its bytes over
        // its time would read as a slow path. It measures nothing; the next starts now.
        if elapsed > 2 * round {
            self.round_start = Some((now, self.acked));
            self.app_limited = false;
            return;
        }
        let rate = (self.acked - acked) as f64 / elapsed.as_secs_f64();
        // A round in which the sender ran dry says only that the path carries at least that
        // much: it raises the estimate, it does not age the others out.
        if !self.app_limited || self.rates.iter().all(|&r| r < rate) {
            if self.rates.len() == RATE_ROUNDS {
                self.rates.pop_front();
            }
            self.rates.push_back(rate);
        }
        if !self.app_limited {
            self.loaded_rounds = self.loaded_rounds.saturating_add(1).min(2);
        }
        self.round_start = Some((now, self.acked));
        self.app_limited = false;
    }

    /// The largest rate of the last [`RATE_ROUNDS`] rounds, bytes per second (`None` before
    /// the first round ended).
    pub fn max(&self) -> Option<f64> {
        self.rates.iter().copied().reduce(f64::max)
    }

    /// Whether two rounds were measured with the sender never short of data: the rates are
    /// the path's (before that, they say only that the path carries at least as much; the
    /// first round under load may have begun before the data did, while acknowledgements of
    /// the sender's pings still came).
    pub fn loaded(&self) -> bool {
        self.loaded_rounds >= 2
    }
}

/// Where a connection of a link starts: the rate expected of its path per connection and its
/// round trip, and the rate the link's connections last measured under load, shared by them
/// (a connection opened after a reconnection starts from it).
#[derive(Debug, Clone)]
pub struct Seed {
    /// Bytes per second one connection is expected to carry.
    pub rate: f64,
    /// The path's round trip.
    pub rtt: Duration,
    /// The last rate a connection of the link measured under load, per connection (bytes per
    /// second, as `f64` bits; 0 before any).
    pub measured: Arc<AtomicU64>,
}

impl Seed {
    /// The rate a new connection starts from: the one measured last, else the expected one.
    fn rate(&self) -> f64 {
        match f64::from_bits(self.measured.load(Ordering::Relaxed)) {
            measured if measured > 0.0 => measured,
            _ => self.rate,
        }
    }
}

/// The largest window for a path measured to deliver `rate` bytes per second with a minimum
/// round trip of `min_rtt`: [`WINDOW_GAIN`] x its bandwidth-delay product (the round trip at
/// least [`MIN_ROUND`]) plus [`ACK_DELAY`] of traffic, never below `floor`.
pub fn window_bound(rate: f64, min_rtt: Duration, floor: u64) -> u64 {
    let time = WINDOW_GAIN * min_rtt.max(MIN_ROUND).as_secs_f64() + ACK_DELAY.as_secs_f64();
    ((rate * time).min(u64::MAX as f64) as u64).max(floor)
}

/// The window a seeded connection starts with, before it has measured its path under load:
/// the seed's bandwidth-delay product and [`ACK_DELAY`] of traffic (not the bound's gain: a
/// whole round of excess at once would overflow a shallow-buffered bottleneck), never below
/// `floor`.
pub fn start_window(rate: f64, rtt: Duration, floor: u64) -> u64 {
    let time = rtt.max(MIN_ROUND).as_secs_f64() + ACK_DELAY.as_secs_f64();
    ((rate * time).min(u64::MAX as f64) as u64).max(floor)
}

/// quinn's BBR, its window bounded by [`window_bound`] of the [`DeliveryRate`] it measured.
#[derive(Debug, Clone)]
pub struct BoundedBbr {
    bbr: Bbr,
    rate: DeliveryRate,
    min_rtt: Duration,
    mtu: u64,
    /// The rate and round trip it started from, kept until a round under load is measured.
    seed: Option<(f64, Duration)>,
    /// Where the rates it measures under load go, for the link's next connections.
    measured: Option<Arc<AtomicU64>>,
}

impl BoundedBbr {
    /// The bound on the window now: [`window_bound`] of the rate measured. Before a round
    /// under load was measured, with a seed, the bound of the seed's rate (or of the rate
    /// measured, if more); without one, the bound of the rate measured, and before any round
    /// trip the smallest bound (RFC 9002's initial window rather than quinn's BBR's 200
    /// packets, which a connection opened on a loaded shallow-buffered path would send into a
    /// full queue).
    fn bound(&self) -> u64 {
        let floor = MIN_WINDOW_PACKETS * self.mtu;
        let measured = self.rate.max();
        match self.seed {
            Some((rate, rtt)) if !self.rate.loaded() => {
                let rtt = if self.min_rtt.is_zero() {
                    rtt
                } else {
                    self.min_rtt
                };
                window_bound(measured.map_or(rate, |m| m.max(rate)), rtt, floor)
            }
            _ => measured.map_or(floor, |rate| window_bound(rate, self.min_rtt, floor)),
        }
    }
}

impl Controller for BoundedBbr {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.bbr.on_sent(now, bytes, last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &RttEstimator,
    ) {
        self.min_rtt = rtt.min();
        self.rate.on_ack(bytes, app_limited);
        self.bbr.on_ack(now, sent, bytes, app_limited, rtt);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.rate.on_end_acks(now, self.min_rtt);
        if let (Some(shared), true, Some(rate)) =
            (&self.measured, self.rate.loaded(), self.rate.max())
        {
            shared.store(rate.to_bits(), Ordering::Relaxed);
        }
        self.bbr
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.bbr
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = u64::from(new_mtu);
        self.bbr.on_mtu_update(new_mtu);
    }

    fn window(&self) -> u64 {
        match self.seed {
            // quinn's BBR takes a link idle before its run for a path that carries nothing:
            // it leaves its start-up on the rounds of the handshake and the pings, at their
            // rate. Until it has measured the path under load, the seed decides.
            Some((rate, rtt)) if !self.rate.loaded() => {
                let rtt = if self.min_rtt.is_zero() {
                    rtt
                } else {
                    self.min_rtt
                };
                start_window(rate, rtt, MIN_WINDOW_PACKETS * self.mtu)
            }
            _ => self.bbr.window().min(self.bound()),
        }
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = self.bbr.metrics();
        metrics.congestion_window = self.window();
        metrics
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.bbr.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Builds a [`BoundedBbr`] for each connection, from a [`Seed`] when the link has one.
#[derive(Debug, Clone, Default)]
pub struct BoundedBbrConfig {
    bbr: Arc<BbrConfig>,
    seed: Option<Seed>,
}

impl BoundedBbrConfig {
    /// Connections that start from `seed` (see the module's documentation).
    pub fn seeded(seed: Seed) -> Self {
        BoundedBbrConfig {
            bbr: Arc::default(),
            seed: Some(seed),
        }
    }
}

impl ControllerFactory for BoundedBbrConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let mtu = u64::from(current_mtu);
        let seed = self.seed.as_ref().map(|seed| (seed.rate(), seed.rtt));
        let bbr = match seed {
            // quinn's BBR starts from the seed's window too (it decides once the seed is
            // left).
            Some((rate, rtt)) => {
                let mut config = BbrConfig::default();
                config.initial_window(start_window(rate, rtt, MIN_WINDOW_PACKETS * mtu));
                Arc::new(config)
            }
            None => self.bbr.clone(),
        };
        Box::new(BoundedBbr {
            bbr: Bbr::new(bbr, current_mtu),
            rate: DeliveryRate::default(),
            min_rtt: Duration::ZERO,
            mtu,
            seed,
            measured: self.seed.as_ref().map(|seed| seed.measured.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PACKET: u64 = 1200;

    /// The rate [`DeliveryRate`] measures for a bottleneck delivering a packet every
    /// `PACKET / rate` s, whose acknowledgements reach the sender in batches released every
    /// `batch` (delayed acknowledgements, a congested reverse path, the receiving host's
    /// batched reads), over `seconds`; and the largest rate of a single acknowledgement over
    /// the time since the previous batch (what quinn's BBR estimates from).
    fn measure(rate: f64, batch: Duration, round: Duration, seconds: f64) -> (f64, f64) {
        let start = Instant::now();
        let mut meter = DeliveryRate::default();
        let gap = PACKET as f64 / rate;
        let mut delivered = 0.0;
        let mut released = Duration::ZERO;
        let mut per_ack_max: f64 = 0.0;
        while released.as_secs_f64() < seconds {
            let previous = released;
            released += batch;
            let mut acked = 0;
            while delivered + gap <= released.as_secs_f64() {
                delivered += gap;
                meter.on_ack(PACKET, false);
                acked += 1;
            }
            if acked > 1 {
                // The second acknowledgement of a batch: same instant, a microsecond apart at most.
                per_ack_max = per_ack_max.max(PACKET as f64 / 1e-6);
            } else if acked == 1 {
                per_ack_max = per_ack_max.max(PACKET as f64 / (released - previous).as_secs_f64());
            }
            meter.on_end_acks(start + released, round);
        }
        (meter.max().expect("rounds measured"), per_ack_max)
    }

    proptest! {
        /// Whatever the batching of acknowledgements (up to a quarter of the round trip), the
        /// rate measured over round trips is the bottleneck's within a packet per round.
        #[test]
        fn the_delivery_rate_is_the_bottlenecks_whatever_the_ack_batching(
            rate_kb in 100u64..200_000,
            rtt_ms in 1u64..300,
            batch_share in 0.001f64..0.25,
        ) {
            let rate = rate_kb as f64 * 1e3;
            let rtt = Duration::from_millis(rtt_ms);
            let round = rtt.max(MIN_ROUND);
            let batch = round.mul_f64(batch_share).max(Duration::from_micros(10));
            let (measured, _) = measure(rate, batch, rtt, 12.0 * round.as_secs_f64());
            // The round closes at the first batch at least a round after it opened.
            let tolerance = PACKET as f64 / round.as_secs_f64() + rate * batch_share;
            prop_assert!((measured - rate).abs() <= tolerance, "measured {measured} of {rate}");
        }

        #[test]
        fn the_bound_is_the_gain_times_the_bdp_never_below_the_floor(
            rate in 0.0f64..1e10,
            rtt_us in 0u64..1_000_000,
            floor in 0u64..1_000_000,
        ) {
            let rtt = Duration::from_micros(rtt_us);
            let bound = window_bound(rate, rtt, floor);
            prop_assert!(bound >= floor);
            let bdp = rate * rtt.max(MIN_ROUND).as_secs_f64();
            let want = WINDOW_GAIN * bdp + rate * ACK_DELAY.as_secs_f64();
            prop_assert!(bound == floor || (bound as f64 - want).abs() <= 1.0 + want * 1e-12);
        }
    }

    /// With acknowledgements bunched as behind the testbed's congested reverse direction
    /// (16 Mbit/s, 40 ms round trip, batches every 5 ms), the bound stays within 1.5 times the
    /// bandwidth-delay product and 25 ms of traffic, plus a packet: 45 ms queued at most, well
    /// under the bottleneck's 100 ms queue.
    #[test]
    fn bunched_acknowledgements_do_not_inflate_the_bound() {
        let rate = 2e6;
        let rtt = Duration::from_millis(40);
        let (measured, per_ack) = measure(rate, Duration::from_millis(5), rtt, 3.0);
        let bound = window_bound(measured, rtt, 4 * PACKET);
        let want = rate * (WINDOW_GAIN * rtt.as_secs_f64() + ACK_DELAY.as_secs_f64());
        assert!(bound as f64 <= want + PACKET as f64, "{bound}");
        assert!(bound as f64 >= want - 2.0 * PACKET as f64, "{bound}");
        // Per acknowledgement, the same traffic looks like a path 600 times as fast.
        assert!(per_ack > 500.0 * rate, "{per_ack}");
    }

    #[test]
    fn rounds_the_sender_ran_dry_raise_the_rate_but_do_not_age_it_out() {
        let start = Instant::now();
        let mut meter = DeliveryRate::default();
        let round = Duration::from_millis(100);
        let mut at = Duration::ZERO;
        let mut tick = |meter: &mut DeliveryRate, bytes: u64, app_limited: bool| {
            meter.on_ack(bytes, app_limited);
            at += round;
            meter.on_end_acks(start + at, round);
        };
        tick(&mut meter, 0, false);
        assert_eq!(meter.max(), None);
        tick(&mut meter, 100_000, false);
        assert_eq!(meter.max(), Some(1e6));
        // Many idle rounds (pings only): the rate measured under load stays.
        for _ in 0..3 * RATE_ROUNDS {
            tick(&mut meter, 100, true);
        }
        assert_eq!(meter.max(), Some(1e6));
        tick(&mut meter, 200_000, true);
        assert_eq!(meter.max(), Some(2e6));
        // Loaded rounds age it out.
        for _ in 0..RATE_ROUNDS {
            tick(&mut meter, 50_000, false);
        }
        assert_eq!(meter.max(), Some(5e5));
    }

    /// quinn's BBR starts with 200 packets in flight; the link's sends ten before it has
    /// measured what the path delivers, then what it measured allows.
    #[test]
    fn a_new_connection_starts_with_ten_packets_then_follows_what_it_measured() {
        let now = Instant::now();
        let mtu = 1200;
        let bbr = Arc::new(BbrConfig::default()).build(now, mtu);
        assert_eq!(bbr.window(), 240_000);
        let mut bounded = BoundedBbr {
            bbr: Bbr::new(Arc::new(BbrConfig::default()), mtu),
            rate: DeliveryRate::default(),
            min_rtt: Duration::from_millis(100),
            mtu: u64::from(mtu),
            seed: None,
            measured: None,
        };
        assert_eq!(bounded.window(), 12_000);
        bounded.on_sent(now, 12_000, 10);
        // Two rounds of 100 ms delivering 1 MB/s: 1.5 times 100 kB, and 25 ms of it.
        for (round, bytes) in [(0, 0), (1, 100_000), (2, 100_000)] {
            bounded.rate.on_ack(bytes, false);
            bounded.on_end_acks(now + round * Duration::from_millis(100), 0, false, None);
        }
        assert!(
            (174_999..=175_000).contains(&bounded.window()),
            "{}",
            bounded.window()
        );
    }

    /// A seeded connection starts at the bound of the expected rate (quinn's BBR as wide),
    /// keeps it through rounds it was short of data in (a link idle before its run starts)
    /// and through a silence, falls to what it measured after one round under load on a
    /// slower path, and leaves that rate to the link's next connection.
    #[test]
    fn a_seeded_connection_starts_at_the_expected_rate_and_follows_what_it_measures() {
        let now = Instant::now();
        let rtt = Duration::from_millis(120);
        let seed = Seed {
            rate: 8e6,
            rtt,
            measured: Arc::new(AtomicU64::new(0)),
        };
        let factory = Arc::new(BoundedBbrConfig::seeded(seed.clone()));
        let build = |factory: &Arc<BoundedBbrConfig>| -> BoundedBbr {
            *factory
                .clone()
                .build(now, 1200)
                .into_any()
                .downcast()
                .expect("a BoundedBbr")
        };
        let expected = window_bound(8e6, rtt, 12_000);
        assert_eq!(expected, 1_640_000);
        let mut first = build(&factory);
        // It starts at the bandwidth-delay product and 25 ms of traffic, within the bound.
        let start = start_window(8e6, rtt, 12_000);
        assert_eq!(start, 1_160_000);
        assert_eq!(first.window(), start);
        assert_eq!(first.bound(), expected);
        first.min_rtt = rtt;
        let mut at = Duration::ZERO;
        let mut round = |c: &mut BoundedBbr, after: Duration, bytes: u64, app_limited: bool| {
            at += after;
            c.rate.on_ack(bytes, app_limited);
            c.on_end_acks(now + at, 0, app_limited, None);
        };
        // Idle rounds, pings only, then a silence before the data starts: still the expected
        // rate's bound.
        for _ in 0..5 {
            round(&mut first, rtt, 100, true);
        }
        round(&mut first, 5 * rtt, 50_000, false);
        assert_eq!((first.window(), first.bound()), (start, expected));
        // Two rounds under load on a path of 2 MB/s (the first began before the data did, as
        // it may): the bound of 2 MB/s.
        round(&mut first, rtt, 120_000, false);
        assert_eq!(first.bound(), expected);
        round(&mut first, rtt, 240_000, false);
        let slower = window_bound(2e6, rtt, 12_000);
        assert_eq!(first.bound(), slower);
        assert!(first.window() <= slower);
        assert_eq!(f64::from_bits(seed.measured.load(Ordering::Relaxed)), 2e6);
        // The link's next connection (after a reconnection) starts from what was measured:
        // its bandwidth-delay product in flight, within its bound.
        let next = build(&factory);
        assert_eq!(next.window(), start_window(2e6, rtt, 12_000));
    }
}
