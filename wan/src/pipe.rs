//! One direction of the emulated WAN as a pure model (no I/O, virtual time): outages, random
//! loss, a token-bucket rate limit with a bounded queue that drops on overflow, then a one-way
//! delay with optional jitter. Packets stay in order. Loss and jitter draw from separate
//! random streams of the seed, so enabling jitter does not change which packets are lost.

use std::collections::VecDeque;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::direction::DirectionConfig;
use crate::outage::Outage;

/// Counters of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DirectionCounters {
    /// Packets offered to the pipe.
    pub packets_in: u64,
    /// Bytes offered.
    pub bytes_in: u64,
    /// Packets delivered.
    pub packets_out: u64,
    /// Bytes delivered.
    pub bytes_out: u64,
    /// Packets dropped by random loss.
    pub dropped_loss: u64,
    /// Packets dropped because the queue was full.
    pub dropped_queue: u64,
    /// Packets dropped because the link was down.
    pub dropped_outage: u64,
}

/// Why a packet did not make it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// Random loss.
    Loss,
    /// Queue overflow.
    Queue,
    /// Link down.
    Outage,
}

/// The state of one direction.
#[derive(Debug)]
pub struct Pipe {
    rate: Option<f64>,
    burst: f64,
    queue_limit: usize,
    delay: Duration,
    jitter: Duration,
    loss: f64,
    outages: Vec<Outage>,
    loss_rng: StdRng,
    jitter_rng: StdRng,
    tokens: f64,
    tokens_at: Duration,
    last_departure: Duration,
    last_delivery: Duration,
    queue: VecDeque<(Duration, usize)>,
    queued_bytes: usize,
    counters: DirectionCounters,
}

/// Seed offset of the jitter stream (the loss stream uses the seed itself).
const JITTER_STREAM: u64 = 0x6A09_E667_F3BC_C909;

/// Milliseconds as a duration; a value no duration can hold (negative, not finite, too
/// large) becomes zero. Validated configurations never have one.
fn millis(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1e3).unwrap_or(Duration::ZERO)
}

/// The rate in bytes per second of `config`, clamped to the slowest accepted one.
fn rate_of(config: &DirectionConfig) -> Option<f64> {
    config
        .bytes_per_second()
        .filter(|r| r.is_finite())
        .map(|r| r.max(crate::limits::MIN_RATE_MBIT * 1e6 / 8.0))
}

impl Pipe {
    /// A pipe with `config`, the link's `outages` (both directions; the direction's own
    /// `config.outages` add to them) and a random seed. Validate the configuration first
    /// ([`DirectionConfig::validate`]); values outside its limits do
    /// not panic but are clamped.
    pub fn new(config: &DirectionConfig, outages: &[Outage], seed: u64) -> Self {
        Self {
            rate: rate_of(config),
            burst: config.burst_bytes as f64,
            queue_limit: config.queue_bytes(),
            delay: millis(config.delay_ms),
            jitter: millis(config.jitter_ms),
            loss: config.loss,
            outages: outages.iter().chain(&config.outages).copied().collect(),
            loss_rng: StdRng::seed_from_u64(seed),
            jitter_rng: StdRng::seed_from_u64(seed ^ JITTER_STREAM),
            tokens: config.burst_bytes as f64,
            tokens_at: Duration::ZERO,
            last_departure: Duration::ZERO,
            last_delivery: Duration::ZERO,
            queue: VecDeque::new(),
            queued_bytes: 0,
            counters: DirectionCounters::default(),
        }
    }

    /// Changes the rate, burst, queue, delay, jitter and loss to those of `config` while the
    /// pipe runs: packets already accepted keep their times, later ones queue behind them at
    /// the new rate, and the order is still kept (a shorter delay never overtakes). The outage
    /// schedule and the random streams are unchanged (`config.outages` is ignored: see
    /// [`Pipe::add_outage`]).
    pub fn reconfigure(&mut self, config: &DirectionConfig) {
        self.rate = rate_of(config);
        self.burst = config.burst_bytes as f64;
        self.tokens = self.tokens.min(self.burst);
        self.queue_limit = config.queue_bytes();
        self.delay = millis(config.delay_ms);
        self.jitter = millis(config.jitter_ms);
        self.loss = config.loss;
    }

    /// Adds a period when this direction is down, in the pipe's time (the `now` of
    /// [`Pipe::offer`]): an outage that starts "now" or a schedule shifted to a start signal.
    pub fn add_outage(&mut self, outage: Outage) {
        self.outages.push(outage);
    }

    /// Whether the link is down at time `t` (since the emulator started).
    pub fn is_down(&self, t: Duration) -> bool {
        let s = t.as_secs_f64();
        self.outages.iter().any(|o| s >= o.start_s && s < o.end_s)
    }

    /// A packet of `size` bytes arrives at time `now`: when it is delivered, or why not.
    pub fn offer(&mut self, now: Duration, size: usize) -> Result<Duration, Drop> {
        self.counters.packets_in += 1;
        self.counters.bytes_in += size as u64;
        while self
            .queue
            .front()
            .is_some_and(|&(departure, _)| departure <= now)
        {
            let (_, bytes) = self.queue.pop_front().expect("front exists");
            self.queued_bytes -= bytes;
        }
        if self.is_down(now) {
            self.counters.dropped_outage += 1;
            return Err(Drop::Outage);
        }
        if self.loss > 0.0 && self.loss_rng.gen::<f64>() < self.loss {
            self.counters.dropped_loss += 1;
            return Err(Drop::Loss);
        }
        let departure = match self.rate {
            None => now,
            Some(rate) => {
                if self.queued_bytes + size > self.queue_limit {
                    self.counters.dropped_queue += 1;
                    return Err(Drop::Queue);
                }
                let start = now.max(self.last_departure);
                let refill = (start - self.tokens_at).as_secs_f64() * rate;
                let tokens = (self.tokens + refill).min(self.burst);
                let departure = if tokens >= size as f64 {
                    self.tokens = tokens - size as f64;
                    start
                } else {
                    // Bounded by the slowest rate and the largest datagram (minutes), but a
                    // time no duration can hold is a full queue, never a panic.
                    let wait = Duration::try_from_secs_f64((size as f64 - tokens) / rate)
                        .ok()
                        .and_then(|wait| start.checked_add(wait));
                    let Some(departure) = wait else {
                        self.counters.dropped_queue += 1;
                        return Err(Drop::Queue);
                    };
                    self.tokens = 0.0;
                    departure
                };
                self.tokens_at = departure;
                self.last_departure = departure;
                self.queue.push_back((departure, size));
                self.queued_bytes += size;
                departure
            }
        };
        let mut delivery = departure.saturating_add(self.delay);
        if !self.jitter.is_zero() {
            let j = self.jitter.as_secs_f64();
            let offset = self.jitter_rng.gen_range(-j..=j);
            delivery = Duration::try_from_secs_f64(delivery.as_secs_f64() + offset)
                .unwrap_or(delivery)
                .max(departure);
        }
        delivery = delivery.max(self.last_delivery);
        self.last_delivery = delivery;
        Ok(delivery)
    }

    /// The packet scheduled for `at` is about to leave: false (and counted) if the link is
    /// down by then, true (and counted as delivered) otherwise.
    pub fn deliver(&mut self, at: Duration, size: usize) -> bool {
        if self.is_down(at) {
            self.counters.dropped_outage += 1;
            false
        } else {
            self.counters.packets_out += 1;
            self.counters.bytes_out += size as u64;
            true
        }
    }

    /// Counters so far.
    pub fn counters(&self) -> DirectionCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rate_mbit: f64, delay_ms: f64, loss: f64) -> DirectionConfig {
        DirectionConfig {
            rate_mbit,
            delay_ms,
            jitter_ms: 0.0,
            loss,
            queue_ms: 100.0,
            burst_bytes: 1500,
            outages: Vec::new(),
        }
    }

    #[test]
    fn rate_limit_spaces_packets_and_adds_delay() {
        // 8 Mbit/s = 1 MB/s: a 1000-byte packet takes 1 ms on the wire.
        let mut pipe = Pipe::new(&config(8.0, 50.0, 0.0), &[], 1);
        let first = pipe.offer(Duration::ZERO, 1000).unwrap();
        assert_eq!(
            first,
            Duration::from_millis(50),
            "the burst lets the first packet go at once"
        );
        let second = pipe.offer(Duration::ZERO, 1000).unwrap();
        let third = pipe.offer(Duration::ZERO, 1000).unwrap();
        let ms = |d: Duration| (d.as_secs_f64() * 1e3 * 1000.0).round() / 1000.0;
        assert_eq!(ms(second), 50.5, "500 tokens left, 500 bytes to wait for");
        assert_eq!(ms(third), 51.5);
    }

    #[test]
    fn sustained_throughput_matches_the_rate_and_the_queue_overflows() {
        let mut pipe = Pipe::new(&config(8.0, 0.0, 0.0), &[], 1);
        // Offer 2 MB/s for one second at 1 MB/s: what passes is one second of the rate plus
        // the queue (its floor of 128 KiB here) plus the burst; the rest overflows.
        let mut last = Duration::ZERO;
        for i in 0..2000u64 {
            if let Ok(at) = pipe.offer(Duration::from_micros(i * 500), 1000) {
                last = at;
            }
        }
        let c = pipe.counters();
        let accepted = c.packets_in - c.dropped_queue;
        assert!((1125..=1140).contains(&accepted), "accepted {accepted}");
        assert!(c.dropped_queue > 800);
        assert!(
            last.as_secs_f64() < 1.14 && last.as_secs_f64() > 1.12,
            "{last:?}"
        );
    }

    #[test]
    fn loss_is_seeded_and_close_to_the_configured_probability() {
        let run = |seed| {
            let mut pipe = Pipe::new(&config(0.0, 0.0, 0.05), &[], seed);
            (0..20_000)
                .filter(|_| pipe.offer(Duration::ZERO, 100).is_err())
                .count()
        };
        assert_eq!(run(7), run(7));
        let lost = run(7);
        assert!((800..1200).contains(&lost), "lost {lost}");
    }

    #[test]
    fn outages_drop_arrivals_and_packets_in_flight() {
        let outage = Outage {
            start_s: 1.0,
            end_s: 2.0,
        };
        let mut pipe = Pipe::new(&config(0.0, 100.0, 0.0), &[outage], 1);
        let at = pipe.offer(Duration::from_millis(950), 10).unwrap();
        assert!(!pipe.deliver(at, 10), "in flight when the link went down");
        assert_eq!(
            pipe.offer(Duration::from_millis(1500), 10),
            Err(Drop::Outage)
        );
        let at = pipe.offer(Duration::from_millis(2000), 10).unwrap();
        assert!(pipe.deliver(at, 10));
        assert_eq!(pipe.counters().dropped_outage, 2);
    }

    #[test]
    fn jitter_does_not_change_which_packets_are_lost() {
        let lost = |jitter_ms: f64| {
            let mut c = config(0.0, 20.0, 0.1);
            c.jitter_ms = jitter_ms;
            let mut pipe = Pipe::new(&c, &[], 11);
            (0..5_000u64)
                .map(|i| pipe.offer(Duration::from_millis(i), 100).is_err())
                .collect::<Vec<bool>>()
        };
        let without = lost(0.0);
        assert!(without.iter().filter(|&&l| l).count() > 300);
        assert_eq!(without, lost(5.0));
        assert_eq!(without, lost(20.0));
    }

    #[test]
    fn extreme_values_never_panic() {
        // Slower than any accepted rate (clamped to the minimum), huge packets, far times.
        let mut c = config(1e-30, 0.0, 0.0);
        c.queue_ms = 600_000.0;
        let mut pipe = Pipe::new(&c, &[], 1);
        for i in 0..50 {
            let _ = pipe.offer(Duration::from_secs(i), 65_536);
        }
        let far = Duration::from_secs(u64::MAX / 2);
        let _ = pipe.offer(far, 65_536);
        let _ = pipe.offer(Duration::MAX, 1);
        let mut c = config(f64::INFINITY, f64::INFINITY, f64::NAN);
        c.jitter_ms = f64::INFINITY;
        let mut pipe = Pipe::new(&c, &[], 1);
        let _ = pipe.offer(Duration::MAX, 1);
        let _ = pipe.offer(Duration::ZERO, 1);
    }

    #[test]
    fn reconfigure_changes_later_packets_and_keeps_the_order() {
        let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
        // 8 Mbit/s: 1000 bytes take 1 ms; the burst of 1500 lets the first one go at once.
        let mut pipe = Pipe::new(&config(8.0, 50.0, 0.0), &[], 1);
        assert_eq!(ms(pipe.offer(Duration::ZERO, 1000).unwrap()), 50.0);
        assert_eq!(ms(pipe.offer(Duration::ZERO, 1000).unwrap()), 50.5);
        // Twice the rate, a shorter delay: the next packet waits for the one queued (it
        // leaves at 0.5 ms), then takes 0.5 ms at the new rate; it may not overtake.
        pipe.reconfigure(&config(16.0, 10.0, 0.0));
        let third = pipe.offer(Duration::ZERO, 1000).unwrap();
        assert_eq!(ms(third), 50.5, "kept behind the packet before it");
        let later = pipe.offer(Duration::from_millis(100), 1000).unwrap();
        assert_eq!(ms(later), 110.0, "the new delay once the queue is empty");
        // Unlimited and lossy: packets no longer queue; loss applies.
        let mut lossy = config(0.0, 0.0, 1.0);
        lossy.queue_ms = 50.0;
        pipe.reconfigure(&lossy);
        assert_eq!(
            pipe.offer(Duration::from_millis(200), 1000),
            Err(Drop::Loss)
        );
        pipe.reconfigure(&config(0.0, 0.0, 0.0));
        let at = pipe.offer(Duration::from_millis(300), 1000).unwrap();
        assert_eq!(ms(at), 300.0);
        let c = pipe.counters();
        assert_eq!((c.packets_in, c.dropped_loss), (6, 1));
    }

    #[test]
    fn an_outage_added_while_running_drops_arrivals_and_packets_in_flight() {
        let mut pipe = Pipe::new(&config(0.0, 100.0, 0.0), &[], 1);
        let in_flight = pipe.offer(Duration::from_millis(950), 10).unwrap();
        pipe.add_outage(Outage {
            start_s: 1.0,
            end_s: 1.5,
        });
        assert!(!pipe.deliver(in_flight, 10));
        assert_eq!(
            pipe.offer(Duration::from_millis(1200), 10),
            Err(Drop::Outage)
        );
        let after = pipe.offer(Duration::from_millis(1500), 10).unwrap();
        assert!(pipe.deliver(after, 10));
        assert!(!pipe.is_down(Duration::from_millis(999)));
    }

    #[test]
    fn a_direction_has_its_own_outages_besides_the_links() {
        let both = Outage {
            start_s: 1.0,
            end_s: 2.0,
        };
        let mut c = config(0.0, 0.0, 0.0);
        c.outages = vec![Outage {
            start_s: 5.0,
            end_s: 6.0,
        }];
        let pipe = Pipe::new(&c, &[both], 1);
        let down = |s: f64| pipe.is_down(Duration::from_secs_f64(s));
        assert!(!down(0.5) && down(1.5) && !down(3.0) && down(5.5) && !down(6.0));
    }
}
