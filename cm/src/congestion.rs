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

use std::any::Any;
use std::collections::VecDeque;
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
        if elapsed < round.max(MIN_ROUND) {
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
        self.round_start = Some((now, self.acked));
        self.app_limited = false;
    }

    /// The largest rate of the last [`RATE_ROUNDS`] rounds, bytes per second (`None` before
    /// the first round ended).
    pub fn max(&self) -> Option<f64> {
        self.rates.iter().copied().reduce(f64::max)
    }
}

/// The largest window for a path measured to deliver `rate` bytes per second with a minimum
/// round trip of `min_rtt`: [`WINDOW_GAIN`] x its bandwidth-delay product (the round trip at
/// least [`MIN_ROUND`]) plus [`ACK_DELAY`] of traffic, never below `floor`.
pub fn window_bound(rate: f64, min_rtt: Duration, floor: u64) -> u64 {
    let time = WINDOW_GAIN * min_rtt.max(MIN_ROUND).as_secs_f64() + ACK_DELAY.as_secs_f64();
    ((rate * time).min(u64::MAX as f64) as u64).max(floor)
}

/// quinn's BBR, its window bounded by [`window_bound`] of the [`DeliveryRate`] it measured.
#[derive(Debug, Clone)]
pub struct BoundedBbr {
    bbr: Bbr,
    rate: DeliveryRate,
    min_rtt: Duration,
    mtu: u64,
}

impl BoundedBbr {
    /// The bound on the window now: [`window_bound`] of the rate measured, and before a
    /// round trip was measured the smallest bound (RFC 9002's initial window rather than
    /// quinn's BBR's 200 packets, which a connection opened on a loaded shallow-buffered path
    /// would send into a full queue).
    fn bound(&self) -> u64 {
        let floor = MIN_WINDOW_PACKETS * self.mtu;
        self.rate
            .max()
            .map_or(floor, |rate| window_bound(rate, self.min_rtt, floor))
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
        self.bbr.window().min(self.bound())
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

/// Builds a [`BoundedBbr`] for each connection.
#[derive(Debug, Clone, Default)]
pub struct BoundedBbrConfig {
    bbr: Arc<BbrConfig>,
}

impl ControllerFactory for BoundedBbrConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(BoundedBbr {
            bbr: Bbr::new(self.bbr.clone(), current_mtu),
            rate: DeliveryRate::default(),
            min_rtt: Duration::ZERO,
            mtu: u64::from(current_mtu),
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
}
