//! One direction of the emulated WAN as a pure model (no I/O, virtual time): outages, random
//! loss, a token-bucket rate limit with a bounded queue that drops on overflow, then a one-way
//! delay with optional jitter. Packets stay in order.

use std::collections::VecDeque;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::config::{DirectionConfig, Outage};

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
    rng: StdRng,
    tokens: f64,
    tokens_at: Duration,
    last_departure: Duration,
    last_delivery: Duration,
    queue: VecDeque<(Duration, usize)>,
    queued_bytes: usize,
    counters: DirectionCounters,
}

impl Pipe {
    /// A pipe with `config`, link `outages` and a random seed.
    pub fn new(config: &DirectionConfig, outages: &[Outage], seed: u64) -> Self {
        let rate = config.bytes_per_second();
        Self {
            rate,
            burst: config.burst_bytes as f64,
            queue_limit: config.queue_bytes(),
            delay: Duration::from_secs_f64(config.delay_ms / 1e3),
            jitter: Duration::from_secs_f64(config.jitter_ms / 1e3),
            loss: config.loss,
            outages: outages.to_vec(),
            rng: StdRng::seed_from_u64(seed),
            tokens: config.burst_bytes as f64,
            tokens_at: Duration::ZERO,
            last_departure: Duration::ZERO,
            last_delivery: Duration::ZERO,
            queue: VecDeque::new(),
            queued_bytes: 0,
            counters: DirectionCounters::default(),
        }
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
        if self.loss > 0.0 && self.rng.gen::<f64>() < self.loss {
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
                    self.tokens = 0.0;
                    start + Duration::from_secs_f64((size as f64 - tokens) / rate)
                };
                self.tokens_at = departure;
                self.last_departure = departure;
                self.queue.push_back((departure, size));
                self.queued_bytes += size;
                departure
            }
        };
        let mut delivery = departure + self.delay;
        if !self.jitter.is_zero() {
            let j = self.jitter.as_secs_f64();
            let offset = self.rng.gen_range(-j..=j);
            delivery = Duration::from_secs_f64(
                (delivery.as_secs_f64() + offset).max(departure.as_secs_f64()),
            );
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
}
