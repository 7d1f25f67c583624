//! Link configuration: TOML file or code, validated with errors that name the key.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::names::without_trailing_dot;
use hmw_cm_proto::frame::MAX_BLOCK_SIZE;
use hmw_cm_proto::sender::MESSAGE_PREFIX_LEN;
use hmw_cm_proto::CoreConfig;

pub use hmw_wan::Congestion;

/// Default largest message.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Largest accepted `max_connections`.
pub const MAX_CONNECTIONS_LIMIT: usize = 4096;

/// What a link's path is expected to carry, from the plan or the calibration: the rates this
/// side sends and receives at and the round trip. A link that knows it starts warm: each new
/// connection (at the start and after every reconnection) begins with the congestion window
/// the path's bandwidth-delay product needs (`hmw_cm::congestion`) and flow-control windows
/// of twice it ([`LinkConfig::warmed`]), instead of ten packets and the default windows, from
/// which a far, fast path takes many round trips to reach its rate. It still follows what it
/// measures: after its first round trip under load, on a path slower than expected, its
/// window falls to what that path delivers; after a reconnection it starts from the rate it
/// last measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathHint {
    /// Bytes per second this side is expected to send at.
    pub send_bytes_per_s: f64,
    /// Bytes per second this side is expected to receive at.
    pub recv_bytes_per_s: f64,
    /// The path's round trip, milliseconds.
    pub rtt_ms: f64,
}

impl PathHint {
    /// The round trip.
    pub fn rtt(&self) -> Duration {
        Duration::from_secs_f64(self.rtt_ms.max(0.0) / 1e3)
    }

    /// Bytes in flight on the path at the larger of its two rates: the larger direction's
    /// bandwidth-delay product.
    pub fn bdp_bytes(&self) -> f64 {
        self.send_bytes_per_s.max(self.recv_bytes_per_s) * self.rtt_ms / 1e3
    }
}

/// Which end of the link this side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Listens for the peer.
    Server,
    /// Connects to the peer (and reconnects).
    Client,
}

/// Certificates and trust.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// This CM's certificate chain (PEM).
    pub cert: PathBuf,
    /// This CM's private key (PEM).
    pub key: PathBuf,
    /// CA certificate(s) (PEM) that the peer's certificate must chain to.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// The peer's exact certificate (PEM), as an alternative to a CA.
    #[serde(default)]
    pub pinned_peer: Option<PathBuf>,
}

/// Everything a link end needs. Sizes accept integers (bytes) or strings such as `"64MiB"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Server or client.
    pub role: Role,
    /// Server: address to bind. Client: the server's host name or address.
    pub host: String,
    /// Server: port to listen on (0 picks one). Client: the server's port.
    pub port: u16,
    /// Client: the name the server's certificate must carry (default: `peer`, then `host`).
    #[serde(default)]
    pub server_name: Option<String>,
    /// The name the peer's certificate must carry among its DNS subject alternative names
    /// (the peer CM's name given to `hmw-cm keygen`). Server: a client certificate without it
    /// is refused even if the CA signed it (or it is the pinned one). Client: the same as
    /// `server_name` (not compared with a pinned certificate, which is exact already).
    #[serde(default)]
    pub peer: Option<String>,
    /// Largest block the message stream is cut into.
    #[serde(
        default = "defaults::block_size",
        deserialize_with = "sizes::block_size"
    )]
    pub block_size: usize,
    /// Send buffer at the start: `send` blocks when this much is waiting or unacknowledged. It
    /// grows with the traffic (see [`max_memory`](Self::max_memory)).
    #[serde(default = "defaults::memory", deserialize_with = "sizes::send_memory")]
    pub send_memory: usize,
    /// Receive buffer at the start: how much the peer may send ahead of the application
    /// reading. It grows with the traffic (see [`max_memory`](Self::max_memory)).
    #[serde(default = "defaults::memory", deserialize_with = "sizes::recv_memory")]
    pub recv_memory: usize,
    /// Bound of the memory the link may size itself to: send and receive buffers plus the
    /// QUIC receive windows of all connections (default: 256 MiB, or what the starting sizes
    /// take if more). Set it to `send_memory + recv_memory + connections_max x window` to
    /// keep the starting sizes.
    #[serde(default, deserialize_with = "sizes::max_memory")]
    pub max_memory: Option<usize>,
    /// Largest message (default: 16 MiB, or the smaller memory less 4 bytes if that is less).
    /// Both ends must agree: a peer that accepts less than this side may send is refused.
    #[serde(default, deserialize_with = "sizes::max_message")]
    pub max_message: Option<usize>,
    /// QUIC connections the blocks are striped over at the start (a client opens them).
    #[serde(default = "defaults::connections")]
    pub connections: usize,
    /// Client: fewest connections the link keeps when it removes those that do not help
    /// (default: 1; equal to `connections` and `connections_max`: a fixed count).
    #[serde(default)]
    pub connections_min: Option<usize>,
    /// Client: most connections the link opens when more of them raise the goodput on a lossy
    /// path (default: 16, or `connections` if more).
    #[serde(default)]
    pub connections_max: Option<usize>,
    /// Data streams per connection and direction.
    #[serde(default = "defaults::streams")]
    pub streams: usize,
    /// Server: most connections served at once (default: 4 x `connections`, room for a
    /// client's connections plus those of a dead incarnation not timed out yet); a
    /// certified client's connection beyond it is refused.
    #[serde(default)]
    pub max_connections: Option<usize>,
    /// A connection silent for this long is declared dead.
    #[serde(default = "defaults::inactivity_timeout_ms")]
    pub inactivity_timeout_ms: u64,
    /// Keep-alive period (default: a third of the inactivity timeout).
    #[serde(default)]
    pub keepalive_interval_ms: Option<u64>,
    /// First reconnection delay; doubles up to `reconnect_max_ms`.
    #[serde(default = "defaults::reconnect_initial_ms")]
    pub reconnect_initial_ms: u64,
    /// Longest reconnection delay.
    #[serde(default = "defaults::reconnect_max_ms")]
    pub reconnect_max_ms: u64,
    /// Per-connection QUIC flow-control window at the start (bytes in flight per
    /// connection); it grows while it limits the connection, up to `max_window`.
    #[serde(default = "defaults::window", deserialize_with = "sizes::window")]
    pub window: usize,
    /// Largest flow-control window of one connection (also each stream's window).
    #[serde(
        default = "defaults::max_window",
        deserialize_with = "sizes::max_window"
    )]
    pub max_window: usize,
    /// Congestion controller.
    #[serde(default)]
    pub congestion: Congestion,
    /// What the path is expected to carry, from the plan or the calibration: given, the link
    /// starts warm (see [`PathHint`]).
    #[serde(default)]
    pub path: Option<PathHint>,
    /// Runtime threads of the blocking facade.
    #[serde(default = "defaults::threads")]
    pub threads: usize,
    /// Certificates.
    pub tls: TlsConfig,
}

mod defaults {
    pub(super) fn block_size() -> usize {
        64 * 1024
    }
    pub(super) fn memory() -> usize {
        hmw_cm_proto::DEFAULT_LINK_MEMORY
    }
    pub(super) fn max_memory() -> usize {
        256 * 1024 * 1024
    }
    pub(super) fn connections_max() -> usize {
        16
    }
    pub(super) fn connections() -> usize {
        2
    }
    pub(super) fn streams() -> usize {
        2
    }
    pub(super) fn inactivity_timeout_ms() -> u64 {
        hmw_cm_proto::DEFAULT_INACTIVITY_TIMEOUT_MS
    }
    pub(super) fn reconnect_initial_ms() -> u64 {
        100
    }
    pub(super) fn reconnect_max_ms() -> u64 {
        2_000
    }
    pub(super) fn window() -> usize {
        2 * 1024 * 1024
    }
    pub(super) fn max_window() -> usize {
        32 * 1024 * 1024
    }
    pub(super) fn threads() -> usize {
        super::LINK_THREADS
    }
}

/// The threads of a blocking link's runtime ([`LinkConfig::threads`]'s default).
pub const LINK_THREADS: usize = 2;

/// A configuration that cannot be used.
///
/// Each message is complete (it includes its cause), so none of these errors reports a
/// separate `source`: printing the chain would repeat it.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read link configuration {path}: {cause}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause.
        cause: std::io::Error,
    },
    /// The file is not valid TOML for a link configuration (the message has line and column).
    #[error("invalid link configuration {path}: {cause}")]
    Parse {
        /// File.
        path: PathBuf,
        /// Cause.
        cause: toml::de::Error,
    },
    /// A value is out of range or inconsistent.
    #[error("invalid link configuration{}: `{key}` {reason}", location(.file, .line))]
    Invalid {
        /// Offending key.
        key: &'static str,
        /// Why.
        reason: String,
        /// The file, when read from one.
        file: Option<PathBuf>,
        /// The key's line in the file (1-based), when found.
        line: Option<usize>,
    },
    /// The host does not resolve.
    #[error("cannot resolve `{host}:{port}`: {reason}")]
    Resolve {
        /// Host.
        host: String,
        /// Port.
        port: u16,
        /// Why.
        reason: String,
    },
}

fn location(file: &Option<PathBuf>, line: &Option<usize>) -> String {
    match (file, line) {
        (Some(file), Some(line)) => format!(" {}, line {line}", file.display()),
        (Some(file), None) => format!(" {}", file.display()),
        _ => String::new(),
    }
}

/// The line (1-based) where `key` is set in TOML `text` (for `tls`, its table header).
fn line_of(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            if key == "tls" && line.starts_with("[tls]") {
                return true;
            }
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size such as 65536, \"256KiB\" or \"64MiB\""))?;
    let factor = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "k" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}` (use B, KiB, MiB or GiB)"
            ))
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("size `{text}` overflows"))
}

/// Deserialisers of the size keys: a whole number of bytes or a string with a unit; anything
/// else is an error naming the key and the accepted forms.
mod sizes {
    use serde::de::{self, Deserializer, Visitor};

    const FORMS: &str =
        "a whole number of bytes (65536) or a string with a unit B, KiB, MiB or GiB (\"64KiB\")";

    struct Size(&'static str);

    impl Visitor<'_> for Size {
        type Value = usize;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "`{}` as {FORMS}", self.0)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<usize, E> {
            usize::try_from(v).map_err(|_| E::custom(format!("`{}` = {v} is too large", self.0)))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<usize, E> {
            u64::try_from(v)
                .map_err(|_| E::custom(format!("`{}` = {v} is negative: use {FORMS}", self.0)))
                .and_then(|v| self.visit_u64(v))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<usize, E> {
            Err(E::custom(format!(
                "`{}` = {v} is not a whole number of bytes: use {FORMS}",
                self.0
            )))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
            super::parse_size(v).map_err(|reason| E::custom(format!("`{}`: {reason}", self.0)))
        }
    }

    fn size<'de, D: Deserializer<'de>>(d: D, key: &'static str) -> Result<usize, D::Error> {
        d.deserialize_any(Size(key))
    }

    pub(super) fn block_size<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        size(d, "block_size")
    }
    pub(super) fn send_memory<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        size(d, "send_memory")
    }
    pub(super) fn recv_memory<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        size(d, "recv_memory")
    }
    pub(super) fn window<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        size(d, "window")
    }
    pub(super) fn max_window<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
        size(d, "max_window")
    }
    pub(super) fn max_memory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
        size(d, "max_memory").map(Some)
    }
    pub(super) fn max_message<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
        size(d, "max_message").map(Some)
    }
}

impl LinkConfig {
    /// A configuration with default sizes and timeouts.
    pub fn new(role: Role, host: impl Into<String>, port: u16, tls: TlsConfig) -> Self {
        Self {
            role,
            host: host.into(),
            port,
            server_name: None,
            peer: None,
            block_size: defaults::block_size(),
            send_memory: defaults::memory(),
            recv_memory: defaults::memory(),
            max_memory: None,
            max_message: None,
            connections: defaults::connections(),
            connections_min: None,
            connections_max: None,
            streams: defaults::streams(),
            max_connections: None,
            inactivity_timeout_ms: defaults::inactivity_timeout_ms(),
            keepalive_interval_ms: None,
            reconnect_initial_ms: defaults::reconnect_initial_ms(),
            reconnect_max_ms: defaults::reconnect_max_ms(),
            window: defaults::window(),
            max_window: defaults::max_window(),
            congestion: Congestion::default(),
            path: None,
            threads: defaults::threads(),
            tls,
        }
    }

    /// This configuration with its flow-control windows started at what the expected path
    /// needs (see [`PathHint`]): each connection's `window` at least its share of twice the
    /// bandwidth-delay product, the larger direction's, within `max_window` (and within
    /// `max_memory` when it is set). Without a hint, or on a path the default windows already
    /// cover, unchanged.
    pub fn warmed(mut self) -> Self {
        if let Some(path) = &self.path {
            let share = 2.0 * path.bdp_bytes() / self.connections.max(1) as f64;
            let mut most = self.max_window;
            if let Some(max) = self.max_memory {
                let buffers = self.send_memory.saturating_add(self.recv_memory);
                most = most.min(max.saturating_sub(buffers) / self.connections_max());
            }
            self.window = (share.min(most as f64) as usize).max(self.window);
        }
        self
    }

    /// Reads and validates a TOML file; relative certificate paths are taken relative to the
    /// file's folder.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
            path: path.to_owned(),
            cause,
        })?;
        let mut config: Self = toml::from_str(&text).map_err(|cause| ConfigError::Parse {
            path: path.to_owned(),
            cause,
        })?;
        if let Some(dir) = path.parent() {
            config.tls.resolve_relative_to(dir);
        }
        config.validate().map_err(|e| match e {
            ConfigError::Invalid { key, reason, .. } => ConfigError::Invalid {
                key,
                reason,
                file: Some(path.to_owned()),
                line: line_of(&text, key),
            },
            other => other,
        })?;
        Ok(config)
    }

    /// Parses and validates TOML text (paths are used as written).
    pub fn from_toml_str(text: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|cause| ConfigError::Parse {
            path: PathBuf::from("<string>"),
            cause,
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value; the error names the offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, reason: String| {
            Err(ConfigError::Invalid {
                key,
                reason,
                file: None,
                line: None,
            })
        };
        if self.host.trim().is_empty() {
            return invalid("host", "must not be empty".into());
        }
        if self.role == Role::Client && self.port == 0 {
            return invalid("port", "must be the server's port, not 0".into());
        }
        if let Some(peer) = &self.peer {
            let dns = matches!(
                rustls_pki_types::ServerName::try_from(peer.as_str()),
                Ok(rustls_pki_types::ServerName::DnsName(_))
            );
            if !dns {
                return invalid(
                    "peer",
                    format!(
                        "is `{peer}` but must be a DNS name: the peer CM's name its certificate was made for"
                    ),
                );
            }
            if let Some(server_name) = &self.server_name {
                let same = without_trailing_dot(server_name)
                    .eq_ignore_ascii_case(without_trailing_dot(peer));
                if self.role == Role::Client && !same {
                    return invalid(
                        "peer",
                        format!("is `{peer}` but `server_name` is `{server_name}`: on a client both name the server; set one"),
                    );
                }
            }
        }
        if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
            return invalid(
                "block_size",
                format!("is {} but must be 1..={MAX_BLOCK_SIZE}", self.block_size),
            );
        }
        for (key, value) in [
            ("send_memory", self.send_memory),
            ("recv_memory", self.recv_memory),
        ] {
            if value < self.block_size + MESSAGE_PREFIX_LEN || value > u32::MAX as usize {
                return invalid(
                    key,
                    format!(
                        "is {value} but must be at least block_size + 4 ({}) and at most 4 GiB",
                        self.block_size + MESSAGE_PREFIX_LEN
                    ),
                );
            }
        }
        let max_message = self.max_message();
        let limit = self.send_memory.min(self.recv_memory) - MESSAGE_PREFIX_LEN;
        if max_message == 0 || max_message > limit {
            return invalid(
                "max_message",
                format!("is {max_message} but must be 1..={limit} (the smaller memory less 4)"),
            );
        }
        if !(1..=64).contains(&self.connections) {
            return invalid(
                "connections",
                format!("is {} but must be 1..=64", self.connections),
            );
        }
        if let Some(min) = self.connections_min {
            if !(1..=self.connections).contains(&min) {
                return invalid(
                    "connections_min",
                    format!(
                        "is {min} but must be 1..=connections ({})",
                        self.connections
                    ),
                );
            }
        }
        if let Some(max) = self.connections_max {
            if !(self.connections..=64).contains(&max) {
                return invalid(
                    "connections_max",
                    format!(
                        "is {max} but must be connections ({})..=64",
                        self.connections
                    ),
                );
            }
        }
        if !(1..=64).contains(&self.streams) {
            return invalid("streams", format!("is {} but must be 1..=64", self.streams));
        }
        if let Some(max) = self.max_connections {
            if !(1..=MAX_CONNECTIONS_LIMIT).contains(&max) {
                return invalid(
                    "max_connections",
                    format!("is {max} but must be 1..={MAX_CONNECTIONS_LIMIT}"),
                );
            }
        }
        if !(100..=86_400_000).contains(&self.inactivity_timeout_ms) {
            return invalid(
                "inactivity_timeout_ms",
                format!(
                    "is {} but must be 100..=86400000 (100 ms to a day)",
                    self.inactivity_timeout_ms
                ),
            );
        }
        if let Some(keepalive) = self.keepalive_interval_ms {
            if keepalive == 0 || keepalive >= self.inactivity_timeout_ms {
                return invalid(
                    "keepalive_interval_ms",
                    format!("is {keepalive} but must be between 1 and inactivity_timeout_ms"),
                );
            }
        }
        if self.reconnect_initial_ms == 0 || self.reconnect_max_ms < self.reconnect_initial_ms {
            return invalid(
                "reconnect_max_ms",
                "must be at least reconnect_initial_ms, which must be positive".into(),
            );
        }
        if self.window < 64 * 1024 || self.window > u32::MAX as usize {
            return invalid(
                "window",
                format!("is {} but must be 64KiB..4GiB", self.window),
            );
        }
        if self.max_window < self.window || self.max_window > u32::MAX as usize {
            return invalid(
                "max_window",
                format!(
                    "is {} but must be window ({})..4GiB",
                    self.max_window, self.window
                ),
            );
        }
        if let Some(path) = &self.path {
            let rates = [path.send_bytes_per_s, path.recv_bytes_per_s];
            if !rates.iter().all(|r| r.is_finite() && *r > 0.0) {
                return invalid(
                    "path",
                    format!("rates must be bytes per second above 0, got {rates:?}"),
                );
            }
            if !(path.rtt_ms.is_finite() && path.rtt_ms >= 0.0) {
                return invalid(
                    "path.rtt_ms",
                    format!("must be milliseconds, 0 or more, got {}", path.rtt_ms),
                );
            }
        }
        if let Some(max) = self.max_memory {
            let start = self.starting_memory();
            if max < start {
                return invalid(
                    "max_memory",
                    format!(
                        "is {max} but must be at least what the link may take without growing \
                         anything: send_memory + recv_memory + connections_max x window = {start}"
                    ),
                );
            }
        }
        if self.threads == 0 {
            return invalid("threads", "must be at least 1".into());
        }
        match (&self.tls.ca, &self.tls.pinned_peer) {
            (Some(_), Some(_)) => invalid(
                "tls",
                "sets both `ca` and `pinned_peer`: choose one trust model".into(),
            ),
            (None, None) => invalid(
                "tls",
                "needs `ca` (trust a CA) or `pinned_peer` (trust one certificate)".into(),
            ),
            _ => Ok(()),
        }
    }

    /// Largest message, explicit or derived.
    pub fn max_message(&self) -> usize {
        self.max_message.unwrap_or(
            DEFAULT_MAX_MESSAGE.min(
                self.send_memory
                    .min(self.recv_memory)
                    .saturating_sub(MESSAGE_PREFIX_LEN),
            ),
        )
    }

    /// Most connections a server serves at once: `max_connections`, else 4 x the most
    /// connections a client opens (`connections_max`).
    pub fn max_connections(&self) -> usize {
        self.max_connections.unwrap_or(4 * self.connections_max())
    }

    /// Fewest connections a client keeps: `connections_min`, else 1.
    pub fn connections_min(&self) -> usize {
        self.connections_min.unwrap_or(1)
    }

    /// Most connections a client opens: `connections_max`, else 16 or `connections` if more.
    pub fn connections_max(&self) -> usize {
        self.connections_max
            .unwrap_or(defaults::connections_max().max(self.connections))
    }

    /// Memory the link may take without growing anything: both buffers and the starting
    /// window of each connection it may open (`connections_max`).
    pub fn starting_memory(&self) -> usize {
        self.send_memory
            .saturating_add(self.recv_memory)
            .saturating_add(self.connections_max().saturating_mul(self.window))
    }

    /// Bound of the link's memory: `max_memory`, else 256 MiB or the starting memory if more.
    pub fn max_memory(&self) -> usize {
        self.max_memory
            .unwrap_or(defaults::max_memory().max(self.starting_memory()))
    }

    /// Sizes for the protocol core.
    pub fn core_config(&self) -> CoreConfig {
        CoreConfig {
            block_size: self.block_size,
            send_memory: self.send_memory,
            recv_memory: self.recv_memory,
            max_message: self.max_message(),
        }
    }

    /// Inactivity timeout.
    pub fn inactivity_timeout(&self) -> Duration {
        Duration::from_millis(self.inactivity_timeout_ms)
    }

    /// Keep-alive period.
    pub fn keepalive_interval(&self) -> Duration {
        Duration::from_millis(
            self.keepalive_interval_ms
                .unwrap_or(self.inactivity_timeout_ms / 3),
        )
    }

    /// Name expected in the server's certificate (client): `server_name`, else `peer`, else
    /// `host`, without the trailing dot of an absolute name.
    pub fn server_name(&self) -> &str {
        without_trailing_dot(
            self.server_name
                .as_deref()
                .or(self.peer.as_deref())
                .unwrap_or(&self.host),
        )
    }

    /// Settings that are valid but probably not what was meant (a server's `server_name`,
    /// which checks nothing), one sentence each. `hmw-cm check` prints them and
    /// [`Link::start`](crate::Link::start) logs them.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.role == Role::Client && self.max_connections.is_some() {
            warnings.push(
                "`max_connections` is a server setting and has no effect on a client (`connections` is how many it opens)".into(),
            );
        }
        if self.role == Role::Server && self.connections_min.is_some() {
            warnings.push(
                "`connections_min` is a client setting and has no effect on a server (the client decides how many connections it keeps)".into(),
            );
        }
        if self.role == Role::Server {
            match (&self.server_name, &self.peer) {
                (Some(name), None) => warnings.push(format!(
                    "`server_name` = {name:?} is a client setting: this server checks no client name \
                     and accepts any client its trust accepts; set `peer` to the expected client's name"
                )),
                (Some(name), Some(_)) => warnings.push(format!(
                    "`server_name` = {name:?} is a client setting and has no effect on a server (`peer` names the expected client)"
                )),
                _ => {}
            }
        }
        warnings
    }

    /// The socket address: where to bind (server) or connect (client).
    pub fn socket_addr(&self) -> Result<SocketAddr, ConfigError> {
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, self.port));
        }
        let resolve_error = |reason: String| ConfigError::Resolve {
            host: self.host.clone(),
            port: self.port,
            reason,
        };
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| resolve_error(e.to_string()))?
            .next()
            .ok_or_else(|| resolve_error("no address".into()))
    }
}

impl TlsConfig {
    fn resolve_relative_to(&mut self, dir: &Path) {
        for path in [
            Some(&mut self.cert),
            Some(&mut self.key),
            self.ca.as_mut(),
            self.pinned_peer.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
    }
}

#[cfg(test)]
mod tests;
