//! When a message arrives: the LANs and WANs of a simulated run, in virtual time.
//!
//! - A LAN is one serial link at the cluster's head (rank 0: the master or sub-master, which
//!   every message of the cluster goes to or comes from), shared by tasks and results as the
//!   model's `tput_lan` is (its limit (26) is `oper * tput_lan / (s_task + s_result)`), moving
//!   `lan_bytes_per_s`: a message waits for those before it, then takes `size / rate`.
//! - A WAN direction is a serial link of the plan's rate, less the fraction `loss` (time lost
//!   to retransmissions), then half the round-trip time. Its rate changes during the run as
//!   the spec's `rate_changes` say (a message in transmission moves at each rate in turn).
//!   During an outage nothing moves: a message in transmission resumes when it ends, one in
//!   flight arrives half a round trip after it ends. A link just connected at the start loses
//!   `L` seconds to its ramp (170): its rate rises from nothing to its value over `2 L`, in
//!   [`RAMP_STEPS`] steps that lose as much.

use std::time::Duration;

use crate::spec::WanSpec;

/// A serial link: messages one after another at a rate.
#[derive(Debug, Clone, Default)]
pub struct Serial {
    busy_until: Duration,
}

impl Serial {
    /// A message sent at `now` taking `seconds` on the link: when it has gone through.
    pub fn send(&mut self, now: Duration, seconds: f64) -> Duration {
        let start = self.busy_until.max(now);
        self.busy_until = start.saturating_add(secs(seconds));
        self.busy_until
    }
}

/// One direction of a WAN.
#[derive(Debug, Clone)]
pub struct WanDirection {
    serial: Serial,
    bytes_per_s: Option<f64>,
    half_rtt: Duration,
    /// Sorted, not overlapping.
    outages: Vec<(Duration, Duration)>,
    /// From each time on, the rate is `bytes_per_s` times the factor; sorted.
    rate_changes: Vec<(Duration, f64)>,
    /// The ramp from the start: from each time on, the rate is also times the factor, until
    /// its end (sorted; empty without a ramp).
    ramp: Vec<(Duration, f64)>,
}

/// Steps of a direction's ramp (170): step `k` of `n` moves at `(k + 1/2) / n` of the rate,
/// so that the steps lose what the linear ramp loses, half its length.
pub const RAMP_STEPS: u32 = 8;

/// The steps of a ramp that loses `lag_s` seconds: `(from, factor)`, the last back to 1.
fn ramp_steps(lag_s: f64) -> Vec<(Duration, f64)> {
    if !(lag_s.is_finite() && lag_s > 0.0) {
        return Vec::new();
    }
    let step = 2.0 * lag_s / f64::from(RAMP_STEPS);
    (0..=RAMP_STEPS)
        .map(|k| {
            let factor = if k == RAMP_STEPS {
                1.0
            } else {
                (f64::from(k) + 0.5) / f64::from(RAMP_STEPS)
            };
            (secs(f64::from(k) * step), factor)
        })
        .collect()
}

impl WanDirection {
    /// A direction of `wan` at `bytes_per_s`, losing `ramp_lag_s` to its ramp at the start.
    pub fn new(wan: &WanSpec, bytes_per_s: Option<f64>, ramp_lag_s: f64) -> Self {
        let mut outages: Vec<(Duration, Duration)> = wan
            .outages
            .iter()
            .map(|&(a, b)| (secs(a), secs(b)))
            .filter(|(a, b)| b > a)
            .collect();
        outages.sort();
        let mut merged: Vec<(Duration, Duration)> = Vec::new();
        for (a, b) in outages {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let mut rate_changes: Vec<(Duration, f64)> = wan
            .rate_changes
            .iter()
            .map(|&(at, factor)| (secs(at), factor))
            .collect();
        // Stable: of two changes at the same time, the later written wins.
        rate_changes.sort_by_key(|&(at, _)| at);
        WanDirection {
            serial: Serial::default(),
            bytes_per_s: bytes_per_s.map(|r| r * (1.0 - wan.loss.clamp(0.0, 0.99))),
            half_rtt: secs(wan.rtt_s / 2.0),
            outages: merged,
            rate_changes,
            ramp: ramp_steps(ramp_lag_s),
        }
    }

    /// The rate at `t`, bytes per second (`None`: no limit).
    fn rate_at(&self, t: Duration) -> Option<f64> {
        let factor_at = |changes: &[(Duration, f64)]| {
            changes
                .iter()
                .rev()
                .find(|&&(at, _)| at <= t)
                .map_or(1.0, |&(_, f)| f)
        };
        let factor = factor_at(&self.rate_changes) * factor_at(&self.ramp);
        self.bytes_per_s.map(|r| r * factor)
    }

    /// When a transmission of `size` bytes begun at `start` (the link free) has gone through:
    /// paused by outages, at each rate in turn.
    fn transmitted(&self, start: Duration, size: f64) -> Duration {
        let mut t = start;
        let mut left = size;
        loop {
            if let Some((_, end)) = self.outage_at(t) {
                t = end;
                continue;
            }
            let Some(rate) = self.rate_at(t).filter(|r| *r > 0.0) else {
                return t;
            };
            // The next time something changes: an outage begins or the rate changes.
            let next = self
                .outages
                .iter()
                .map(|&(a, _)| a)
                .chain(self.rate_changes.iter().map(|&(at, _)| at))
                .chain(self.ramp.iter().map(|&(at, _)| at))
                .filter(|&a| a > t)
                .min();
            match next {
                Some(next) if rate * (next - t).as_secs_f64() < left => {
                    left -= rate * (next - t).as_secs_f64();
                    t = next;
                }
                _ => return t.saturating_add(secs(left / rate)),
            }
        }
    }

    /// The outage under way at `t`, if any.
    fn outage_at(&self, t: Duration) -> Option<(Duration, Duration)> {
        self.outages.iter().copied().find(|&(a, b)| a <= t && t < b)
    }

    /// A message of `size` bytes sent at `now`: when it arrives.
    pub fn arrival(&mut self, now: Duration, size: f64) -> Duration {
        let finish = self.transmitted(self.serial.busy_until.max(now), size);
        self.serial.busy_until = finish;
        let mut arrival = finish.saturating_add(self.half_rtt);
        while let Some((_, end)) = self.outage_at(arrival) {
            arrival = end.saturating_add(self.half_rtt);
        }
        arrival
    }

    /// Whether the link is down at `t`.
    pub fn is_down(&self, t: Duration) -> bool {
        self.outage_at(t).is_some()
    }

    /// Whether the link is down at `t` and has been for at least `silence`.
    pub fn is_down_for(&self, t: Duration, silence: Duration) -> bool {
        self.outage_at(t)
            .is_some_and(|(start, _)| start.saturating_add(silence) <= t)
    }

    /// When the link is down, `(start, end)`, sorted and merged (its rate changes are no
    /// event: they act on transmissions as they go).
    pub fn outages(&self) -> impl Iterator<Item = (Duration, Duration)> + '_ {
        self.outages.iter().copied()
    }
}

/// Seconds as a duration; a negative or not finite value is zero, a huge one the largest.
pub fn secs(seconds: f64) -> Duration {
    if seconds.is_nan() || seconds <= 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX / 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1e3
    }

    #[test]
    fn serial_links_queue_messages_one_after_another() {
        let mut lan = Serial::default();
        assert_eq!(ms(lan.send(Duration::ZERO, 0.010)), 10.0);
        assert_eq!(ms(lan.send(Duration::ZERO, 0.010)), 20.0);
        assert_eq!(ms(lan.send(secs(0.1), 0.010)), 110.0);
    }

    #[test]
    fn a_wan_direction_adds_rate_loss_half_the_round_trip_and_outages() {
        let wan = WanSpec {
            down_bytes_per_s: Some(1000.0),
            rtt_s: 0.1,
            loss: 0.5,
            outages: vec![(1.0, 2.0)],
            ..WanSpec::default()
        };
        let mut d = WanDirection::new(&wan, wan.down_bytes_per_s, 0.0);
        // 100 bytes at 500 B/s effective: 0.2 s, then 50 ms.
        assert!((ms(d.arrival(Duration::ZERO, 100.0)) - 250.0).abs() < 1e-6);
        // Sent during the outage: starts when it ends.
        assert!((ms(d.arrival(secs(1.5), 100.0)) - 2250.0).abs() < 1e-6);
        // Transmission from 2.9 s is not paused (no outage after), in flight neither.
        assert!((ms(d.arrival(secs(2.9), 0.0)) - 2950.0).abs() < 1e-6);
        let mut e = WanDirection::new(&wan, wan.down_bytes_per_s, 0.0);
        // Started at 0.9 s, 0.2 s of transmission paused by the 1 s outage.
        assert!((ms(e.arrival(secs(0.9), 100.0)) - 2150.0).abs() < 1e-6);
        assert!(e.is_down(secs(1.0)) && !e.is_down(secs(2.0)));
        assert!(e.is_down_for(secs(1.5), secs(0.5)) && !e.is_down_for(secs(1.4), secs(0.5)));
        // In flight when the outage starts: arrives half a round trip after it.
        let mut f = WanDirection::new(&wan, None, 0.0);
        assert!((ms(f.arrival(secs(0.99), 0.0)) - 2050.0).abs() < 1e-6);
    }

    /// A rate dropped during a transmission: what is left moves at the new rate; an outage
    /// during the lower rate pauses it as before; a later message moves at the new rate.
    #[test]
    fn a_rate_change_acts_on_the_transmission_under_way() {
        let wan = WanSpec {
            down_bytes_per_s: Some(1000.0),
            rate_changes: vec![(0.1, 0.2)],
            outages: vec![(0.3, 0.5)],
            ..WanSpec::default()
        };
        let mut d = WanDirection::new(&wan, wan.down_bytes_per_s, 0.0);
        // 100 bytes from 0: 100 in 0.1 s at 1000 B/s, then nothing left.
        assert!((ms(d.arrival(Duration::ZERO, 100.0)) - 100.0).abs() < 1e-6);
        // 200 bytes from 0.1 s at 200 B/s: 40 bytes by 0.3 s, paused to 0.5 s, 0.8 s more.
        assert!((ms(d.arrival(secs(0.1), 200.0)) - 1300.0).abs() < 1e-6);
        // Starting before the drop: 50 bytes by 0.1 s, 40 more at 200 B/s by the outage at
        // 0.3 s, the last 10 after it ends at 0.5 s.
        let mut e = WanDirection::new(&wan, wan.down_bytes_per_s, 0.0);
        assert!((ms(e.arrival(secs(0.05), 100.0)) - 550.0).abs() < 1e-6);
        // Changes written later win over earlier ones at the same time; a rise restores.
        let back = WanSpec {
            down_bytes_per_s: Some(1000.0),
            rate_changes: vec![(1.0, 0.5), (1.0, 0.25), (2.0, 1.0)],
            ..WanSpec::default()
        };
        let mut g = WanDirection::new(&back, back.down_bytes_per_s, 0.0);
        assert!((ms(g.arrival(secs(1.0), 250.0)) - 2000.0).abs() < 1e-6);
        assert!((ms(g.arrival(secs(3.0), 1000.0)) - 4000.0).abs() < 1e-6);
    }

    /// A link that loses 0.5 s to its ramp (over 1 s) delivers 1,000 bytes at 1,000 B/s
    /// half a second later than one at its rate from the start; a message sent after the
    /// ramp moves at the rate.
    #[test]
    fn a_ramp_delays_what_crosses_at_the_start_by_what_it_loses() {
        let wan = WanSpec {
            down_bytes_per_s: Some(1000.0),
            ..WanSpec::default()
        };
        let mut ramped = WanDirection::new(&wan, wan.down_bytes_per_s, 0.5);
        assert!((ms(ramped.arrival(Duration::ZERO, 1000.0)) - 1500.0).abs() < 1e-6);
        let mut later = WanDirection::new(&wan, wan.down_bytes_per_s, 0.5);
        assert!((ms(later.arrival(secs(2.0), 100.0)) - 2100.0).abs() < 1e-6);
    }
}
