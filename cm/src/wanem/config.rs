//! Configuration of the WAN emulator (TOML or built from command-line flags).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A period when the link is down in both directions, in seconds since the emulator started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// Start (inclusive).
    pub start_s: f64,
    /// End (exclusive).
    pub end_s: f64,
}

impl std::str::FromStr for Outage {
    type Err = String;

    /// `START-END` or `START+DURATION`, in seconds: `30-50` and `30+20` are the same outage.
    fn from_str(text: &str) -> Result<Self, String> {
        let parse = |s: &str| {
            s.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{text}` is not an outage such as 30-50 or 30+20 (seconds)"))
        };
        let outage = if let Some((a, b)) = text.split_once('+') {
            let start = parse(a)?;
            Outage {
                start_s: start,
                end_s: start + parse(b)?,
            }
        } else if let Some((a, b)) = text.split_once('-') {
            Outage {
                start_s: parse(a)?,
                end_s: parse(b)?,
            }
        } else {
            return Err(format!(
                "`{text}` is not an outage such as 30-50 or 30+20 (seconds)"
            ));
        };
        if !(outage.start_s >= 0.0 && outage.end_s > outage.start_s) {
            return Err(format!(
                "outage `{text}` must start at or after 0 and end after it starts"
            ));
        }
        Ok(outage)
    }
}

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

    fn validate(&self, direction: &'static str) -> Result<(), WanemConfigError> {
        let invalid = |key: &'static str, reason: String| {
            Err(WanemConfigError::Invalid {
                key: format!("{direction}.{key}"),
                reason,
            })
        };
        if !(self.rate_mbit >= 0.0 && self.rate_mbit.is_finite()) {
            return invalid(
                "rate_mbit",
                format!("is {} but must be >= 0", self.rate_mbit),
            );
        }
        if !(self.delay_ms >= 0.0 && self.delay_ms < 600_000.0) {
            return invalid(
                "delay_ms",
                format!("is {} but must be 0..600000", self.delay_ms),
            );
        }
        if !(self.jitter_ms >= 0.0 && self.jitter_ms <= self.delay_ms) {
            return invalid(
                "jitter_ms",
                format!("is {} but must be 0..=delay_ms", self.jitter_ms),
            );
        }
        if !(0.0..=1.0).contains(&self.loss) {
            return invalid(
                "loss",
                format!("is {} but must be a probability 0..=1", self.loss),
            );
        }
        if !(self.queue_ms > 0.0 && self.queue_ms.is_finite()) {
            return invalid("queue_ms", format!("is {} but must be > 0", self.queue_ms));
        }
        if self.burst_bytes < 1500 {
            return invalid(
                "burst_bytes",
                format!("is {} but must be >= 1500", self.burst_bytes),
            );
        }
        Ok(())
    }
}

/// The emulator: where clients send, where the server is, and the two directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WanemConfig {
    /// Address the clients send to (loopback in tests; port 0 picks one).
    pub listen: SocketAddr,
    /// The server the traffic is relayed to.
    pub server: SocketAddr,
    /// Seed of the random loss and jitter.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Seconds between counter reports on standard error (0 = none).
    #[serde(default)]
    pub report_interval_s: f64,
    /// Periods when the link is down both ways.
    #[serde(default)]
    pub outages: Vec<Outage>,
    /// Client to server direction.
    #[serde(default)]
    pub client_to_server: DirectionConfig,
    /// Server to client direction.
    #[serde(default)]
    pub server_to_client: DirectionConfig,
}

fn default_seed() -> u64 {
    1
}

/// An unusable emulator configuration.
#[derive(Debug, Error)]
pub enum WanemConfigError {
    /// The file could not be read.
    #[error("cannot read WAN emulator configuration {path}: {cause}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause.
        cause: std::io::Error,
    },
    /// Not valid TOML for this configuration (the message has line and column).
    #[error("invalid WAN emulator configuration {path}: {cause}")]
    Parse {
        /// File.
        path: PathBuf,
        /// Cause.
        cause: toml::de::Error,
    },
    /// A value out of range.
    #[error("invalid WAN emulator configuration: `{key}` {reason}")]
    Invalid {
        /// Key.
        key: String,
        /// Why.
        reason: String,
    },
}

impl WanemConfig {
    /// A symmetric link: the same settings both ways.
    pub fn symmetric(listen: SocketAddr, server: SocketAddr, direction: DirectionConfig) -> Self {
        Self {
            listen,
            server,
            seed: default_seed(),
            report_interval_s: 0.0,
            outages: Vec::new(),
            client_to_server: direction.clone(),
            server_to_client: direction,
        }
    }

    /// Reads and validates a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, WanemConfigError> {
        let text = std::fs::read_to_string(path).map_err(|cause| WanemConfigError::Read {
            path: path.to_owned(),
            cause,
        })?;
        let config: Self = toml::from_str(&text).map_err(|cause| WanemConfigError::Parse {
            path: path.to_owned(),
            cause,
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value.
    pub fn validate(&self) -> Result<(), WanemConfigError> {
        self.client_to_server.validate("client_to_server")?;
        self.server_to_client.validate("server_to_client")?;
        for (i, o) in self.outages.iter().enumerate() {
            if !(o.start_s >= 0.0 && o.end_s > o.start_s) {
                return Err(WanemConfigError::Invalid {
                    key: format!("outages[{i}]"),
                    reason: "must start at or after 0 and end after it starts".into(),
                });
            }
        }
        if self.report_interval_s.is_nan() || self.report_interval_s < 0.0 {
            return Err(WanemConfigError::Invalid {
                key: "report_interval_s".into(),
                reason: "must be >= 0".into(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_file_with_directions_and_outages() {
        let text = r#"
listen = "127.0.0.1:7001"
server = "127.0.0.1:7000"
seed = 42
outages = [{ start_s = 30, end_s = 50 }]
[client_to_server]
rate_mbit = 20
delay_ms = 50
loss = 0.005
"#;
        let c: WanemConfig = toml::from_str(text).unwrap();
        c.validate().unwrap();
        assert_eq!(c.client_to_server.bytes_per_second(), Some(2.5e6));
        assert_eq!(c.server_to_client.bytes_per_second(), None);
        assert_eq!(c.outages[0].end_s, 50.0);
    }

    #[test]
    fn bad_values_name_their_key_and_outages_parse_from_flags() {
        let mut c = WanemConfig::symmetric(
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
            DirectionConfig::default(),
        );
        c.server_to_client.loss = 1.5;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("server_to_client.loss"));
        assert_eq!(
            "30+20".parse::<Outage>().unwrap(),
            "30-50".parse::<Outage>().unwrap()
        );
        assert!("50-30".parse::<Outage>().is_err());
        assert!("soon".parse::<Outage>().is_err());
    }
}
