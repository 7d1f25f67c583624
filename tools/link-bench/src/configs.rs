//! The configurations of a run: the emulated WAN's arguments, the two ends of the link (the
//! benchmark's fixed settings or the link's defaults), the emulator's.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Result};
use hmw_cm::keygen::KeygenOutput;
use hmw_cm::wanem::{DirectionConfig, WanemConfig};
use hmw_cm::{Congestion, LinkConfig, Role, TlsConfig};

#[derive(clap::Args, Clone)]
pub(crate) struct WanArgs {
    /// Link rate each way, Mbit/s.
    #[arg(long, default_value_t = 20.0)]
    pub(crate) rate_mbit: f64,
    /// One-way delay, ms.
    #[arg(long, default_value_t = 50.0)]
    pub(crate) delay_ms: f64,
    /// Random loss probability each way.
    #[arg(long, default_value_t = 0.005)]
    pub(crate) loss: f64,
    /// Streams per connection.
    #[arg(long, default_value_t = 2)]
    pub(crate) streams: usize,
    /// Congestion controller: cubic, bbr or newreno (default: cubic, or with `--defaults`
    /// the link's default).
    #[arg(long)]
    pub(crate) congestion: Option<String>,
    /// Message size in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub(crate) message: usize,
    /// The link with its default settings (connections, streams, memory, windows,
    /// congestion controller, block size: what a configuration that sets none of them gets)
    /// instead of the benchmark's fixed ones; `--connections` and `--streams` are then
    /// ignored, `--congestion` replaces the default controller.
    #[arg(long)]
    pub(crate) defaults: bool,
    /// With `--defaults`: start with this many connections in place of the default.
    #[arg(long, requires = "defaults")]
    pub(crate) start_connections: Option<usize>,
    /// With `--defaults`: the fewest connections the link keeps, in place of the default.
    #[arg(long, requires = "defaults")]
    pub(crate) min_connections: Option<usize>,
}

/// Trust settings for a configuration that is only read for its defaults.
pub(crate) fn tls_placeholder() -> TlsConfig {
    TlsConfig {
        cert: PathBuf::new(),
        key: PathBuf::new(),
        ca: None,
        pinned_peer: None,
    }
}

fn tls(certs: &KeygenOutput, name: &str) -> TlsConfig {
    let cm = certs
        .cms
        .iter()
        .find(|c| c.name == name)
        .expect("generated");
    TlsConfig {
        cert: cm.cert.clone(),
        key: cm.key.clone(),
        ca: Some(certs.ca_cert.clone()),
        pinned_peer: None,
    }
}

pub(crate) fn link_configs(
    certs: &KeygenOutput,
    connections: usize,
    streams: usize,
    memory: usize,
) -> (LinkConfig, LinkConfig) {
    let mut server = LinkConfig::new(Role::Server, "127.0.0.1", 0, tls(certs, "server"));
    server.connections = connections;
    // A fixed count: these runs compare counts.
    server.connections_min = Some(connections);
    server.connections_max = Some(connections);
    server.streams = streams;
    server.send_memory = memory;
    server.recv_memory = memory;
    server.max_message = Some(4 << 20);
    // The transport of the benchmark's history (and of raw quinn next to the link): 16 MiB
    // windows from the start, Cubic. `wan --defaults` uses the link's defaults instead.
    server.window = 16 << 20;
    server.max_window = 16 << 20;
    server.congestion = Congestion::Cubic;
    let mut client = server.clone();
    client.role = Role::Client;
    client.server_name = Some("server".into());
    client.tls = tls(certs, "client");
    (server, client)
}

pub(crate) fn wan_config(args: &WanArgs) -> WanemConfig {
    WanemConfig::symmetric(
        "127.0.0.1:0".parse::<SocketAddr>().expect("address"),
        "127.0.0.1:9".parse::<SocketAddr>().expect("address"),
        DirectionConfig {
            rate_mbit: args.rate_mbit,
            delay_ms: args.delay_ms,
            loss: args.loss,
            ..DirectionConfig::default()
        },
    )
}

fn congestion(name: &str) -> Result<Congestion> {
    Ok(match name {
        "cubic" => Congestion::Cubic,
        "bbr" => Congestion::Bbr,
        "newreno" => Congestion::NewReno,
        other => bail!("unknown congestion controller `{other}` (cubic, bbr, newreno)"),
    })
}

pub(crate) fn wan_link_configs(
    certs: &KeygenOutput,
    args: &WanArgs,
    connections: usize,
) -> Result<(LinkConfig, LinkConfig)> {
    if args.defaults {
        let mut server = LinkConfig::new(Role::Server, "127.0.0.1", 0, tls(certs, "server"));
        if let Some(name) = &args.congestion {
            server.congestion = congestion(name)?;
        }
        if let Some(start) = args.start_connections {
            server.connections = start;
        }
        if let Some(min) = args.min_connections {
            server.connections_min = Some(min);
        }
        let mut client = server.clone();
        client.role = Role::Client;
        client.server_name = Some("server".into());
        client.tls = tls(certs, "client");
        return Ok((server, client));
    }
    let (mut server, mut client) = link_configs(certs, connections, args.streams, 8 << 20);
    for c in [&mut server, &mut client] {
        c.congestion = congestion(args.congestion.as_deref().unwrap_or("cubic"))?;
        c.block_size = 64 << 10;
        c.max_message = Some(1 << 20);
    }
    Ok((server, client))
}
