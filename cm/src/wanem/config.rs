//! Configuration of the WAN emulator (TOML or built from command-line flags), and the limits
//! every value must respect (the emulator never panics on a value it accepted).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use hmw_wan::{limits, DirectionConfig, Outage};

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
        for (direction, config) in [
            ("client_to_server", &self.client_to_server),
            ("server_to_client", &self.server_to_client),
        ] {
            config
                .validate(direction)
                .map_err(|e| WanemConfigError::Invalid {
                    key: e.key,
                    reason: e.reason,
                    file: None,
                })?;
        }
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
            limits::outage(o.start_s, o.end_s).map_err(|reason| {
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
