//! Configuration of the WAN emulator (TOML or built from command-line flags), and the limits
//! every value must respect (the emulator never panics on a value it accepted).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Limits of the emulator's settings, shared by the TOML keys and the command-line flags.
pub mod limits {
    use super::Outage;

    /// Slowest rate limit, Mbit/s (1 kbit/s); 0 means unlimited.
    pub const MIN_RATE_MBIT: f64 = 0.001;
    /// Fastest rate limit, Mbit/s (1 Tbit/s).
    pub const MAX_RATE_MBIT: f64 = 1e6;
    /// Longest one-way delay (and jitter), ms (10 minutes).
    pub const MAX_DELAY_MS: f64 = 600_000.0;
    /// Longest queue, in ms of traffic at the rate (10 minutes).
    pub const MAX_QUEUE_MS: f64 = 600_000.0;
    /// Smallest token bucket, bytes (one full-size Ethernet frame).
    pub const MIN_BURST_BYTES: usize = 1500;
    /// Largest token bucket, bytes (1 GiB).
    pub const MAX_BURST_BYTES: usize = 1 << 30;
    /// Shortest report interval, s (0 = no reports).
    pub const MIN_REPORT_INTERVAL_S: f64 = 0.1;
    /// Longest report interval, s (a day).
    pub const MAX_REPORT_INTERVAL_S: f64 = 86_400.0;
    /// Latest time in an outage schedule or a run duration, s (about 31 years).
    pub const MAX_TIME_S: f64 = 1e9;

    fn finite(v: f64) -> Result<f64, String> {
        if v.is_finite() {
            Ok(v)
        } else {
            Err("must be a finite number".into())
        }
    }

    /// Rate limit, Mbit/s.
    pub fn rate_mbit(v: f64) -> Result<(), String> {
        let v = finite(v)?;
        if v == 0.0 || (MIN_RATE_MBIT..=MAX_RATE_MBIT).contains(&v) {
            Ok(())
        } else {
            Err(format!(
                "must be 0 (unlimited) or {MIN_RATE_MBIT}..={MAX_RATE_MBIT} Mbit/s"
            ))
        }
    }

    /// One-way delay, ms.
    pub fn delay_ms(v: f64) -> Result<(), String> {
        if (0.0..=MAX_DELAY_MS).contains(&finite(v)?) {
            Ok(())
        } else {
            Err(format!("must be 0..={MAX_DELAY_MS} ms"))
        }
    }

    /// Jitter, ms, for a one-way delay of `delay_ms`.
    pub fn jitter_ms(v: f64, delay_ms: f64) -> Result<(), String> {
        if (0.0..=delay_ms).contains(&finite(v)?) {
            Ok(())
        } else {
            Err(format!("must be 0..=the delay ({delay_ms} ms)"))
        }
    }

    /// Loss probability.
    pub fn loss(v: f64) -> Result<(), String> {
        if (0.0..=1.0).contains(&finite(v)?) {
            Ok(())
        } else {
            Err("must be a probability 0..=1".into())
        }
    }

    /// Queue length, ms of traffic at the rate.
    pub fn queue_ms(v: f64) -> Result<(), String> {
        let v = finite(v)?;
        if v > 0.0 && v <= MAX_QUEUE_MS {
            Ok(())
        } else {
            Err(format!("must be more than 0 and at most {MAX_QUEUE_MS} ms"))
        }
    }

    /// Token-bucket depth, bytes.
    pub fn burst_bytes(v: usize) -> Result<(), String> {
        if (MIN_BURST_BYTES..=MAX_BURST_BYTES).contains(&v) {
            Ok(())
        } else {
            Err(format!(
                "must be {MIN_BURST_BYTES}..={MAX_BURST_BYTES} bytes"
            ))
        }
    }

    /// Seconds between counter reports.
    pub fn report_interval_s(v: f64) -> Result<(), String> {
        let v = finite(v)?;
        if v == 0.0 || (MIN_REPORT_INTERVAL_S..=MAX_REPORT_INTERVAL_S).contains(&v) {
            Ok(())
        } else {
            Err(format!(
                "must be 0 (no reports) or {MIN_REPORT_INTERVAL_S}..={MAX_REPORT_INTERVAL_S} s"
            ))
        }
    }

    /// A run duration, s.
    pub fn duration_s(v: f64) -> Result<(), String> {
        let v = finite(v)?;
        if v > 0.0 && v <= MAX_TIME_S {
            Ok(())
        } else {
            Err(format!("must be more than 0 and at most {MAX_TIME_S} s"))
        }
    }

    /// An outage.
    pub fn outage(o: &Outage) -> Result<(), String> {
        finite(o.start_s)?;
        finite(o.end_s)?;
        if o.start_s >= 0.0 && o.end_s > o.start_s && o.end_s <= MAX_TIME_S {
            Ok(())
        } else {
            Err(format!(
                "must start at or after 0 and end after it starts, by {MAX_TIME_S} s"
            ))
        }
    }
}

/// A period when the link is down, in seconds since the emulator started.
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
        limits::outage(&outage).map_err(|reason| format!("outage `{text}` {reason}"))?;
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

    fn validate(&self, direction: &'static str) -> Result<(), WanemConfigError> {
        let check = |key: &str, value: String, result: Result<(), String>| {
            result.map_err(|reason| WanemConfigError::Invalid {
                key: format!("{direction}.{key}"),
                reason: format!("is {value} but {reason}"),
                file: None,
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
                limits::outage(o),
            )?;
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
    /// Periods when the link is down both ways (a direction's own `outages` add to these).
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

impl WanemConfigError {
    fn in_file(self, path: &Path) -> Self {
        match self {
            WanemConfigError::Invalid { key, reason, .. } => WanemConfigError::Invalid {
                key,
                reason,
                file: Some(path.to_owned()),
            },
            other => other,
        }
    }
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
    #[error("invalid WAN emulator configuration{}: `{key}` {reason}", .file.as_ref().map(|f| format!(" {}", f.display())).unwrap_or_default())]
    Invalid {
        /// Key.
        key: String,
        /// Why.
        reason: String,
        /// The file, when read from one.
        file: Option<PathBuf>,
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
        config.validate().map_err(|e| e.in_file(path))?;
        Ok(config)
    }

    /// Checks every value (see [`limits`]).
    pub fn validate(&self) -> Result<(), WanemConfigError> {
        self.client_to_server.validate("client_to_server")?;
        self.server_to_client.validate("server_to_client")?;
        let invalid = |key: String, reason: String| WanemConfigError::Invalid {
            key,
            reason,
            file: None,
        };
        // Only replies from exactly `server` are relayed: an unspecified address never
        // answers (the server replies from one of its real addresses), nor does port 0.
        if self.server.ip().is_unspecified() || self.server.port() == 0 {
            return Err(invalid(
                "server".into(),
                format!(
                    "is {} but must be the address and port the server answers from",
                    self.server
                ),
            ));
        }
        for (i, o) in self.outages.iter().enumerate() {
            limits::outage(o).map_err(|reason| {
                invalid(
                    format!("outages[{i}]"),
                    format!("is {:?}-{:?} but {reason}", o.start_s, o.end_s),
                )
            })?;
        }
        limits::report_interval_s(self.report_interval_s).map_err(|reason| {
            invalid(
                "report_interval_s".into(),
                format!("is {:?} but {reason}", self.report_interval_s),
            )
        })?;
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
        c.server_to_client.loss = 0.0;
        for server in ["0.0.0.0:7000", "[::]:7000", "127.0.0.1:0"] {
            c.server = server.parse().unwrap();
            let err = c.validate().unwrap_err().to_string();
            assert!(err.contains("`server`"), "{server}: {err}");
        }
        assert_eq!(
            "30+20".parse::<Outage>().unwrap(),
            "30-50".parse::<Outage>().unwrap()
        );
        assert!("50-30".parse::<Outage>().is_err());
        assert!("soon".parse::<Outage>().is_err());
    }

    #[test]
    fn every_value_must_be_finite_and_within_its_limits() {
        let base = || {
            WanemConfig::symmetric(
                "127.0.0.1:1".parse().unwrap(),
                "127.0.0.1:2".parse().unwrap(),
                DirectionConfig::default(),
            )
        };
        type Edit = fn(&mut WanemConfig);
        let cases: [(Edit, &str); 12] = [
            (
                |c| c.client_to_server.rate_mbit = 1e-30,
                "client_to_server.rate_mbit",
            ),
            (
                |c| c.client_to_server.rate_mbit = f64::INFINITY,
                "client_to_server.rate_mbit",
            ),
            (
                |c| c.server_to_client.rate_mbit = f64::NAN,
                "server_to_client.rate_mbit",
            ),
            (
                |c| c.server_to_client.delay_ms = f64::INFINITY,
                "server_to_client.delay_ms",
            ),
            (
                |c| c.server_to_client.jitter_ms = f64::NAN,
                "server_to_client.jitter_ms",
            ),
            (
                |c| c.client_to_server.loss = f64::NAN,
                "client_to_server.loss",
            ),
            (
                |c| c.client_to_server.queue_ms = f64::INFINITY,
                "client_to_server.queue_ms",
            ),
            (
                |c| c.client_to_server.burst_bytes = usize::MAX,
                "client_to_server.burst_bytes",
            ),
            (|c| c.report_interval_s = f64::INFINITY, "report_interval_s"),
            (|c| c.report_interval_s = 1e-9, "report_interval_s"),
            (
                |c| {
                    c.outages = vec![Outage {
                        start_s: 1.0,
                        end_s: f64::INFINITY,
                    }]
                },
                "outages[0]",
            ),
            (
                |c| {
                    c.server_to_client.outages = vec![Outage {
                        start_s: 5.0,
                        end_s: 1.0,
                    }]
                },
                "server_to_client.outages[0]",
            ),
        ];
        for (edit, key) in cases {
            let mut c = base();
            edit(&mut c);
            let err = c.validate().unwrap_err().to_string();
            assert!(err.contains(&format!("`{key}`")), "{key}: {err}");
        }
        let mut c = base();
        c.client_to_server.rate_mbit = limits::MIN_RATE_MBIT;
        c.report_interval_s = 0.0;
        c.validate().unwrap();
        assert!("30-inf".parse::<Outage>().is_err());
        assert!("nan+1".parse::<Outage>().is_err());
    }

    #[test]
    fn file_errors_name_the_file_and_directions_have_their_own_outages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wan.toml");
        let text = r#"
listen = "127.0.0.1:7001"
server = "127.0.0.1:7000"
outages = [{ start_s = 1, end_s = 2 }]
[server_to_client]
outages = [{ start_s = 5, end_s = 6 }]
"#;
        std::fs::write(&path, text).unwrap();
        let c = WanemConfig::from_file(&path).unwrap();
        assert_eq!(c.server_to_client.outages.len(), 1);
        assert!(c.client_to_server.outages.is_empty());
        std::fs::write(&path, format!("{text}rate_mbit = inf\n")).unwrap();
        let err = WanemConfig::from_file(&path).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("`server_to_client.rate_mbit` is inf"), "{err}");
    }
}
