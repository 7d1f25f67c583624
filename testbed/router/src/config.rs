//! The router's configuration file (TOML): the TUN device, the seed and one `[[cluster]]`
//! table per cluster, validated with errors that name the key and the cluster.
//!
//! ```toml
//! tun = "wan0"              # TUN device name (<= 15 bytes), created by the router
//! seed = 1                  # random loss and jitter (default 0)
//! [[cluster]]               # one per cluster (at least two); the main one has no conditions
//! name = "lyon"
//! subnet = "10.213.1.0/24"  # the cluster's LAN addresses (no host bits, no overlap)
//! dev = "rt-c1"             # the router's interface on that LAN (must exist, with its address)
//! [[cluster]]
//! name = "spain"
//! subnet = "10.213.2.0/24"
//! dev = "rt-c2"
//! [cluster.to_cluster]      # hmw_wan::DirectionConfig towards the cluster
//! rate_mbit = 16.0
//! delay_ms = 20.0
//! [cluster.from_cluster]    # from the cluster towards the others
//! rate_mbit = 16.0
//! delay_ms = 20.0
//! loss = 0.0
//! outages = [{ start_s = 30.0, end_s = 50.0 }]  # seconds from the `start` command
//! ```
//!
//! An optional `realtime_priority` (default 10, 0 = none, up to 99) makes the packet thread
//! a SCHED_FIFO thread: on a machine whose cores are busy with other work, a normal thread
//! can wait tens of milliseconds for a core, which would add to every emulated delay.
//!
//! A missing `to_cluster` or `from_cluster` is an unconditioned direction (no delay, no rate
//! limit, no loss). Every key of a direction is optional (see [`DirectionConfig`]: `rate_mbit`
//! 0 = unlimited, `delay_ms`, `jitter_ms`, `loss`, `queue_ms` 100, `burst_bytes` 16384,
//! `outages`).

use std::path::Path;

use hmw_wan::DirectionConfig;
use serde::Deserialize;

use crate::packet::Subnet;

/// Longest network device name (`IFNAMSIZ` - 1).
pub const MAX_DEV_NAME: usize = 15;

/// The configuration as written in the file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// TUN device name.
    pub tun: String,
    /// Seed of random loss and jitter.
    #[serde(default)]
    pub seed: u64,
    /// Real-time (SCHED_FIFO) priority of the packet thread, 1 to 99; 0 leaves it a normal
    /// thread.
    #[serde(default = "default_realtime_priority")]
    pub realtime_priority: u8,
    /// The clusters, `[[cluster]]`.
    #[serde(rename = "cluster", default)]
    pub clusters: Vec<RawCluster>,
}

/// The packet thread's default real-time priority: above every normal thread, below the
/// kernel's own real-time threads (50 and up).
pub const DEFAULT_REALTIME_PRIORITY: u8 = 10;

fn default_realtime_priority() -> u8 {
    DEFAULT_REALTIME_PRIORITY
}

/// One `[[cluster]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    /// Cluster name.
    pub name: String,
    /// Its LAN's addresses, `A.B.C.D/N`.
    pub subnet: String,
    /// The router's interface on that LAN.
    pub dev: String,
    /// Conditions towards the cluster (none: unconditioned).
    pub to_cluster: Option<DirectionConfig>,
    /// Conditions from the cluster towards the others (none: unconditioned).
    pub from_cluster: Option<DirectionConfig>,
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// TUN device name.
    pub tun: String,
    /// Seed of random loss and jitter.
    pub seed: u64,
    /// Real-time priority of the packet thread (0: none).
    pub realtime_priority: u8,
    /// The clusters, in file order.
    pub clusters: Vec<Cluster>,
}

/// A validated cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Name.
    pub name: String,
    /// Its LAN's addresses.
    pub subnet: Subnet,
    /// The router's interface on that LAN.
    pub dev: String,
    /// Towards the cluster (default: unconditioned).
    pub to_cluster: DirectionConfig,
    /// From the cluster (default: unconditioned).
    pub from_cluster: DirectionConfig,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read the configuration {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not TOML, or a key of the wrong type or unknown.
    #[error("configuration {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (line, column, key).
        message: String,
    },
    /// A value outside its limits.
    #[error("configuration: {0}")]
    Invalid(String),
}

/// Checks a network device name: 1 to 15 bytes, no `/`, `:`, whitespace or control
/// characters, not `.` or `..`.
pub fn check_dev_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_DEV_NAME {
        return Err(format!(
            "`{name}` must be 1 to {MAX_DEV_NAME} bytes long (it is {})",
            name.len()
        ));
    }
    if name == "." || name == ".." {
        return Err(format!("`{name}` is not a device name"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| *c == '/' || *c == ':' || c.is_whitespace() || c.is_control() || *c == '%')
    {
        return Err(format!(
            "`{name}` contains {c:?}, not allowed in a device name"
        ));
    }
    Ok(())
}

impl Config {
    /// Reads and validates the file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text).map_err(|e| match e {
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                path: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// Parses and validates TOML text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| {
            let message = e.to_string().trim_end().to_string();
            let message = match e.span().and_then(|span| cluster_at(text, span.start)) {
                Some(cluster) => format!("{cluster}: {message}"),
                None => message,
            };
            ConfigError::Parse {
                path: "<text>".into(),
                message,
            }
        })?;
        raw.validate().map_err(ConfigError::Invalid)
    }
}

/// The `[[cluster]]` table that holds byte `offset` of `text`, as `cluster[i] \`name\``
/// (the name when the text parses as TOML at all), for errors of the TOML parser.
fn cluster_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let index = before
        .lines()
        .filter(|line| line.trim_start().starts_with("[[cluster]]"))
        .count()
        .checked_sub(1)?;
    let name = toml::from_str::<toml::Table>(text).ok().and_then(|table| {
        table
            .get("cluster")?
            .as_array()?
            .get(index)?
            .get("name")?
            .as_str()
            .map(str::to_string)
    });
    Some(match name {
        Some(name) => format!("cluster[{index}] `{name}`"),
        None => format!("cluster[{index}]"),
    })
}

impl RawConfig {
    /// Checks every value; the error names the key and the cluster.
    pub fn validate(self) -> Result<Config, String> {
        check_dev_name(&self.tun).map_err(|e| format!("`tun`: {e}"))?;
        if self.realtime_priority > 99 {
            return Err(format!(
                "`realtime_priority` is {} but must be 0 (none) or 1..=99",
                self.realtime_priority
            ));
        }
        if self.clusters.len() < 2 {
            return Err(format!(
                "at least two [[cluster]] tables are needed (found {}): the router joins clusters",
                self.clusters.len()
            ));
        }
        let mut clusters: Vec<Cluster> = Vec::with_capacity(self.clusters.len());
        for (i, raw) in self.clusters.into_iter().enumerate() {
            let here = format!("cluster[{i}] `{}`", raw.name);
            if raw.name.trim().is_empty() {
                return Err(format!("cluster[{i}]: `name` is empty"));
            }
            if raw.name.chars().any(|c| c.is_control()) {
                return Err(format!("{here}: `name` contains a control character"));
            }
            let subnet: Subnet = raw
                .subnet
                .parse()
                .map_err(|e| format!("{here}: `subnet` {e}"))?;
            check_dev_name(&raw.dev).map_err(|e| format!("{here}: `dev` {e}"))?;
            if raw.dev == self.tun {
                return Err(format!(
                    "{here}: `dev` `{}` is the TUN device (`tun`); give the router's interface on \
                     the cluster's bridge",
                    raw.dev
                ));
            }
            for (key, direction) in [
                ("to_cluster", &raw.to_cluster),
                ("from_cluster", &raw.from_cluster),
            ] {
                if let Some(d) = direction {
                    d.validate(key).map_err(|e| format!("{here}: {e}"))?;
                }
            }
            for other in &clusters {
                if other.name == raw.name {
                    return Err(format!("{here}: `name` `{}` appears twice", raw.name));
                }
                if other.dev == raw.dev {
                    return Err(format!(
                        "{here}: `dev` `{}` is also the dev of cluster `{}`",
                        raw.dev, other.name
                    ));
                }
                if other.subnet.overlaps(&subnet) {
                    return Err(format!(
                        "{here}: `subnet` {subnet} overlaps {} of cluster `{}`",
                        other.subnet, other.name
                    ));
                }
            }
            clusters.push(Cluster {
                name: raw.name,
                subnet,
                dev: raw.dev,
                to_cluster: raw.to_cluster.unwrap_or_default(),
                from_cluster: raw.from_cluster.unwrap_or_default(),
            });
        }
        Ok(Config {
            tun: self.tun,
            seed: self.seed,
            realtime_priority: self.realtime_priority,
            clusters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
tun = "wan0"
seed = 1
[[cluster]]
name = "lyon"
subnet = "10.213.1.0/24"
dev = "rt-c1"
[[cluster]]
name = "spain"
subnet = "10.213.2.0/24"
dev = "rt-c2"
[cluster.to_cluster]
rate_mbit = 16.0
delay_ms = 20.0
[cluster.from_cluster]
rate_mbit = 16.0
delay_ms = 20.0
loss = 0.0
outages = [{ start_s = 5.0, end_s = 7.0 }]
"#;

    fn error(text: &str) -> String {
        Config::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn the_example_parses_and_the_main_cluster_is_unconditioned() {
        let c = Config::parse(GOOD).unwrap();
        assert_eq!(c.tun, "wan0");
        assert_eq!(c.seed, 1);
        assert_eq!(c.realtime_priority, DEFAULT_REALTIME_PRIORITY);
        let none =
            Config::parse(&GOOD.replace("seed = 1", "seed = 1\nrealtime_priority = 0")).unwrap();
        assert_eq!(none.realtime_priority, 0);
        let e = error(&GOOD.replace("seed = 1", "seed = 1\nrealtime_priority = 100"));
        assert!(e.contains("`realtime_priority`"), "{e}");
        assert_eq!(c.clusters.len(), 2);
        assert_eq!(c.clusters[0].to_cluster, DirectionConfig::default());
        assert_eq!(c.clusters[1].subnet.to_string(), "10.213.2.0/24");
        assert_eq!(c.clusters[1].to_cluster.rate_mbit, 16.0);
        assert_eq!(c.clusters[1].from_cluster.outages.len(), 1);
        assert_eq!(c.clusters[1].from_cluster.queue_ms, 100.0, "defaults apply");
    }

    #[test]
    fn bad_values_name_the_key_and_the_cluster() {
        let e = error(&GOOD.replace(
            "rate_mbit = 16.0\ndelay_ms = 20.0\n[",
            "rate_mbit = -1.0\ndelay_ms = 20.0\n[",
        ));
        assert!(
            e.contains("`spain`") && e.contains("to_cluster.rate_mbit"),
            "{e}"
        );
        let e = error(&GOOD.replace("loss = 0.0", "loss = 1.5"));
        assert!(
            e.contains("`spain`") && e.contains("from_cluster.loss"),
            "{e}"
        );
        let e = error(&GOOD.replace("10.213.2.0/24", "10.213.2.7/24"));
        assert!(
            e.contains("`spain`") && e.contains("`subnet`") && e.contains("10.213.2.0/24"),
            "{e}"
        );
        let e = error(&GOOD.replace("10.213.2.0/24", "10.213.0.0/16"));
        assert!(e.contains("overlaps") && e.contains("`lyon`"), "{e}");
        let e = error(&GOOD.replace("10.213.2.0/24", "10.213.2.0/33"));
        assert!(e.contains("`subnet`"), "{e}");
        let e = error(&GOOD.replace("\"rt-c2\"", "\"rt-c1\""));
        assert!(e.contains("`dev` `rt-c1`") && e.contains("`lyon`"), "{e}");
        let e = error(&GOOD.replace("\"spain\"", "\"lyon\""));
        assert!(e.contains("appears twice"), "{e}");
        let e = error(&GOOD.replace("\"wan0\"", "\"a-very-long-tun-name\""));
        assert!(e.contains("`tun`") && e.contains("15"), "{e}");
        let e = error(&GOOD.replace("\"rt-c2\"", "\"wan0\""));
        assert!(e.contains("TUN"), "{e}");
        let e = error(&GOOD.replace("\"rt-c2\"", "\"rt c2\""));
        assert!(e.contains("`dev`") && e.contains("`spain`"), "{e}");
        let e = error(&GOOD.replace("start_s = 5.0, end_s = 7.0", "start_s = 5.0, end_s = 1.0"));
        assert!(
            e.contains("from_cluster.outages[0]") && e.contains("`spain`"),
            "{e}"
        );
        let e = error(&GOOD.replace(
            "delay_ms = 20.0\nloss",
            "delay_ms = 20.0\njitter_ms = 30.0\nloss",
        ));
        assert!(e.contains("from_cluster.jitter_ms"), "{e}");
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_errors_with_their_line() {
        let e = error(&GOOD.replace("loss = 0.0", "los = 0.0"));
        assert!(e.contains("los") && e.contains("line"), "{e}");
        assert!(e.contains("cluster[1] `spain`"), "{e}");
        let e = error(&GOOD.replace(
            "rate_mbit = 16.0\ndelay_ms = 20.0\nloss",
            "rate_mbit = \"fast\"\ndelay_ms = 20.0\nloss",
        ));
        assert!(
            e.contains("cluster[1] `spain`") && e.contains("rate_mbit"),
            "{e}"
        );
        let e = error(&GOOD.replace("dev = \"rt-c1\"", "dev = \"rt-c1\"\nmtu = 9000"));
        assert!(e.contains("mtu"), "{e}");
        let e = error(&GOOD.replace("seed = 1", "seed = \"one\""));
        assert!(e.contains("seed"), "{e}");
        let e = error("seed = 1\n");
        assert!(e.contains("tun"), "{e}");
    }

    #[test]
    fn one_cluster_is_not_enough() {
        let one = GOOD.split("[[cluster]]\nname = \"spain\"").next().unwrap();
        assert!(error(one).contains("at least two"));
    }

    #[test]
    fn dev_names() {
        assert!(check_dev_name("wan0").is_ok());
        assert!(check_dev_name("123456789012345").is_ok());
        assert!(check_dev_name("1234567890123456").is_err());
        for bad in ["", ".", "..", "a/b", "a:b", "a b", "a\tb"] {
            assert!(check_dev_name(bad).is_err(), "{bad:?}");
        }
    }
}
