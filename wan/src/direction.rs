//! One direction of a WAN link: rate, delay, jitter, loss, queue, burst and its own outages.

use serde::{Deserialize, Serialize};

use crate::limits::{self, InvalidValue};
use crate::outage::Outage;

/// One direction of the link.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// Rate limit in Mbit/s (0 = unlimited).
    #[serde(default)]
    pub rate_mbit: f64,
    /// One-way delay in milliseconds.
    #[serde(default)]
    pub delay_ms: f64,
    /// Jitter: each packet's delay varies uniformly by up to this much (order is kept).
    #[serde(default)]
    pub jitter_ms: f64,
    /// Probability of losing each packet, 0.0 to 1.0.
    #[serde(default)]
    pub loss: f64,
    /// Queue in front of the rate limiter, as milliseconds of traffic at the rate.
    #[serde(default = "default_queue_ms")]
    pub queue_ms: f64,
    /// Token-bucket depth in bytes (how much may leave back to back).
    #[serde(default = "default_burst_bytes")]
    pub burst_bytes: usize,
    /// Periods when this direction only is down (in addition to the link's `outages`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<Outage>,
}

fn default_queue_ms() -> f64 {
    100.0
}

fn default_burst_bytes() -> usize {
    16 * 1024
}

impl Default for DirectionConfig {
    fn default() -> Self {
        Self {
            rate_mbit: 0.0,
            delay_ms: 0.0,
            jitter_ms: 0.0,
            loss: 0.0,
            queue_ms: default_queue_ms(),
            burst_bytes: default_burst_bytes(),
            outages: Vec::new(),
        }
    }
}

impl DirectionConfig {
    /// Rate in bytes per second, `None` when unlimited.
    pub fn bytes_per_second(&self) -> Option<f64> {
        (self.rate_mbit > 0.0).then(|| self.rate_mbit * 1e6 / 8.0)
    }

    /// Queue capacity in bytes (at least two full-size datagrams).
    pub fn queue_bytes(&self) -> usize {
        let bytes = self
            .bytes_per_second()
            .map_or(usize::MAX, |rate| (rate * self.queue_ms / 1e3) as usize);
        bytes.max(2 * 65_536)
    }

    /// Checks every value against [`limits`]; `direction` prefixes the key in the error.
    pub fn validate(&self, direction: &str) -> Result<(), InvalidValue> {
        let check = |key: &str, value: String, result: Result<(), String>| {
            result.map_err(|reason| InvalidValue {
                key: format!("{direction}.{key}"),
                reason: format!("is {value} but {reason}"),
            })
        };
        check(
            "rate_mbit",
            format!("{:?}", self.rate_mbit),
            limits::rate_mbit(self.rate_mbit),
        )?;
        check(
            "delay_ms",
            format!("{:?}", self.delay_ms),
            limits::delay_ms(self.delay_ms),
        )?;
        check(
            "jitter_ms",
            format!("{:?}", self.jitter_ms),
            limits::jitter_ms(self.jitter_ms, self.delay_ms),
        )?;
        check("loss", format!("{:?}", self.loss), limits::loss(self.loss))?;
        check(
            "queue_ms",
            format!("{:?}", self.queue_ms),
            limits::queue_ms(self.queue_ms),
        )?;
        check(
            "burst_bytes",
            format!("{:?}", self.burst_bytes),
            limits::burst_bytes(self.burst_bytes),
        )?;
        for (i, o) in self.outages.iter().enumerate() {
            check(
                &format!("outages[{i}]"),
                format!("{:?}-{:?}", o.start_s, o.end_s),
                limits::outage(o.start_s, o.end_s),
            )?;
        }
        Ok(())
    }
}
