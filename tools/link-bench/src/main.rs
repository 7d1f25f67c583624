//! `hmw-link-bench`: the benchmark of the long-distance link (`hmw-cm`). One side sends continuously, the other
//! measures goodput per interval and in total, plus disconnections and recovery.
//!
//! * `loopback`: the link against raw quinn (one connection, one stream, same TLS, same
//!   windows, same runtime) on 127.0.0.1.
//! * `wan`: the link through `hmw-wanem` for several connection counts.
//! * `outage`: the same WAN with an outage in the middle; checks exactly-once in-order
//!   delivery and measures the time from the link's return to full goodput.
//! * `best`: prints the connection count of the best run of a `wan` report (for scripts).
//! * `summary`: reads the three JSON reports and prints the one-line summary.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::{Parser, Subcommand};
use hmw_cm::keygen::{self, KeygenOutput};
use hmw_cm::tls::TlsMaterial;
use hmw_cm::wanem::{DirectionConfig, Outage, Wanem, WanemConfig};
use hmw_cm::{Congestion, Link, LinkConfig, LinkStats, Role, TlsConfig};
use serde::Serialize;
use serde_json::{json, Value};

#[derive(Parser)]
#[command(about = "Benchmark of the hmw long-distance link (hmw-cm)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct WanArgs {
    /// Link rate each way, Mbit/s.
    #[arg(long, default_value_t = 20.0)]
    rate_mbit: f64,
    /// One-way delay, ms.
    #[arg(long, default_value_t = 50.0)]
    delay_ms: f64,
    /// Random loss probability each way.
    #[arg(long, default_value_t = 0.005)]
    loss: f64,
    /// Streams per connection.
    #[arg(long, default_value_t = 2)]
    streams: usize,
    /// Congestion controller: cubic, bbr or newreno (default: cubic, or with `--defaults`
    /// the link's default).
    #[arg(long)]
    congestion: Option<String>,
    /// Message size in bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    message: usize,
    /// The link with its default settings (connections, streams, memory, windows,
    /// congestion controller, block size: what a configuration that sets none of them gets)
    /// instead of the benchmark's fixed ones; `--connections` and `--streams` are then
    /// ignored, `--congestion` replaces the default controller.
    #[arg(long)]
    defaults: bool,
    /// With `--defaults`: start with this many connections in place of the default.
    #[arg(long, requires = "defaults")]
    start_connections: Option<usize>,
    /// With `--defaults`: the fewest connections the link keeps, in place of the default.
    #[arg(long, requires = "defaults")]
    min_connections: Option<usize>,
}

#[derive(Subcommand)]
enum Command {
    /// Link versus raw quinn on loopback.
    Loopback {
        /// Seconds measured per contender (after one second of warm-up).
        #[arg(long, default_value_t = 8.0)]
        seconds: f64,
        /// Message (and raw write) size in bytes.
        #[arg(long, default_value_t = 1 << 20)]
        message: usize,
        /// Block size of the link in bytes.
        #[arg(long, default_value_t = 2 << 20)]
        block_size: usize,
        /// Rounds (raw quinn, then the link, in turn); the median ratio is reported.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Send with the link's copying `send(&[u8])` instead of the zero-copy `send_bytes`.
        #[arg(long)]
        copying_send: bool,
        /// Write the JSON report here (also printed on stdout).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The link through the WAN emulator, for several connection counts.
    Wan {
        #[command(flatten)]
        wan: WanArgs,
        /// Connection counts to try.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4,6,8,16")]
        connections: Vec<usize>,
        /// Seconds per setting.
        #[arg(long, default_value_t = 15.0)]
        seconds: f64,
        /// Seconds at the start of each run left out of the steady goodput.
        #[arg(long, default_value_t = 3.0)]
        warmup: f64,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// An outage in the middle of a WAN transfer.
    Outage {
        #[command(flatten)]
        wan: WanArgs,
        /// Connections.
        #[arg(long, default_value_t = 8)]
        connections: usize,
        /// When the outage starts, seconds.
        #[arg(long, default_value_t = 15.0)]
        outage_start: f64,
        /// How long it lasts, seconds.
        #[arg(long, default_value_t = 20.0)]
        outage_seconds: f64,
        /// Total sending time, seconds.
        #[arg(long, default_value_t = 55.0)]
        seconds: f64,
        /// Inactivity timeout of the link, ms.
        #[arg(long, default_value_t = 5000)]
        inactivity_ms: u64,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// The emulator's own ceiling: datagrams of 1452 bytes offered at `--offered-mbit`
    /// through an unshaped hmw-wanem on loopback; what comes out per second.
    Ceiling {
        /// Offered rate, Mbit/s.
        #[arg(long, default_value_t = 2000.0)]
        offered_mbit: f64,
        /// Seconds measured (after half a second of warm-up).
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Write the JSON report here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Prints the connection count of the best run (highest fraction of the link) of a `wan`
    /// report.
    Best {
        /// Report of `wan`.
        wan: PathBuf,
    },
    /// Prints the summary line from the reports.
    Summary {
        /// Report of `loopback`.
        loopback: PathBuf,
        /// Report of `wan`.
        wan: PathBuf,
        /// Report of `outage`.
        outage: PathBuf,
        /// Report of `wan --defaults` at 1 Gbit/s, 50 ms, 0.1 % loss.
        #[arg(long)]
        wan1g: Option<PathBuf>,
        /// Report of `wan --defaults` at 200 Mbit/s, 50 ms, 0.5 % loss.
        #[arg(long)]
        lossy200: Option<PathBuf>,
        /// Report of `ceiling`.
        #[arg(long)]
        ceiling: Option<PathBuf>,
    },
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    if let Command::Summary {
        loopback,
        wan,
        outage,
        wan1g,
        lossy200,
        ceiling,
    } = &cli.command
    {
        return summary(
            loopback,
            wan,
            outage,
            wan1g.as_deref(),
            lossy200.as_deref(),
            ceiling.as_deref(),
        );
    }
    if let Command::Best { wan } = &cli.command {
        println!("{}", best_connections(&read_json(wan)?)?);
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The emulator has a runtime of its own (one thread), as it would be a process of its own:
    // the link's two ends do not hold up its relaying, nor it theirs.
    let emulator = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("wanem")
        .enable_all()
        .build()?;
    let _ = EMULATOR.set(emulator.handle().clone());
    let dir = std::env::temp_dir().join(format!("hmw-link-bench-{}", std::process::id()));
    let certs = keygen::generate(
        &dir,
        &["server".into(), "client".into()],
        &["localhost".into(), "127.0.0.1".into()],
    )?;
    let result = runtime.block_on(async {
        match cli.command {
            Command::Loopback {
                seconds,
                message,
                block_size,
                rounds,
                copying_send,
                json,
            } => write_report(
                loopback(&certs, seconds, message, block_size, rounds, !copying_send).await?,
                json,
            ),
            Command::Wan {
                wan,
                connections,
                seconds,
                warmup,
                json,
            } => write_report(
                wan_sweep(&certs, &wan, &connections, seconds, warmup).await?,
                json,
            ),
            Command::Outage {
                wan,
                connections,
                outage_start,
                outage_seconds,
                seconds,
                inactivity_ms,
                json,
            } => {
                let outage = Outage {
                    start_s: outage_start,
                    end_s: outage_start + outage_seconds,
                };
                let report =
                    outage_run(&certs, &wan, connections, outage, seconds, inactivity_ms).await?;
                write_report(report, json)
            }
            Command::Ceiling {
                offered_mbit,
                seconds,
                json,
            } => write_report(ceiling(offered_mbit, seconds).await?, json),
            Command::Summary { .. } | Command::Best { .. } => unreachable!("handled above"),
        }
    });
    emulator.shutdown_background();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The emulator's runtime.
static EMULATOR: OnceLock<tokio::runtime::Handle> = OnceLock::new();

/// Starts an emulator on its own runtime.
async fn start_wanem(config: WanemConfig) -> Result<Wanem> {
    let handle = EMULATOR.get().context("no emulator runtime")?;
    Ok(handle.spawn(Wanem::start(config)).await??)
}

fn write_report(report: Value, path: Option<PathBuf>) -> Result<()> {
    let text = serde_json::to_string_pretty(&report)?;
    if let Some(path) = path {
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

/// Trust settings for a configuration that is only read for its defaults.
fn tls_placeholder() -> TlsConfig {
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

fn link_configs(
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

/// CPU time (user + system) used by this process so far, in seconds (Linux).
fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are the
    // 12th and 13th of them, in clock ticks of 1/100 s.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Bytes received, sampled at a fixed interval.
#[derive(Default)]
struct Meter {
    bytes: AtomicU64,
}

#[derive(Serialize, Clone, Copy)]
struct Sample {
    t_s: f64,
    bytes: u64,
}

async fn sample_meter(
    meter: &Meter,
    clock: impl Fn() -> Duration,
    interval: Duration,
    until: Duration,
) -> Vec<Sample> {
    let mut samples = vec![Sample {
        t_s: clock().as_secs_f64(),
        bytes: meter.bytes.load(Ordering::Relaxed),
    }];
    while clock() < until {
        tokio::time::sleep(interval).await;
        samples.push(Sample {
            t_s: clock().as_secs_f64(),
            bytes: meter.bytes.load(Ordering::Relaxed),
        });
    }
    samples
}

/// Goodput in bytes per second between times `from` and `to` (seconds) of the samples.
fn goodput(samples: &[Sample], from: f64, to: f64) -> f64 {
    let at = |t: f64| {
        samples
            .iter()
            .min_by(|a, b| (a.t_s - t).abs().total_cmp(&(b.t_s - t).abs()))
            .copied()
            .expect("samples")
    };
    let (a, b) = (at(from), at(to));
    if b.t_s <= a.t_s {
        return 0.0;
    }
    (b.bytes - a.bytes) as f64 / (b.t_s - a.t_s)
}

fn per_interval_mbit(samples: &[Sample]) -> Vec<Value> {
    samples
        .windows(2)
        .map(|w| {
            let rate = (w[1].bytes - w[0].bytes) as f64 * 8.0 / 1e6 / (w[1].t_s - w[0].t_s);
            json!({"t_s": (w[1].t_s * 100.0).round() / 100.0, "mbit_s": (rate * 100.0).round() / 100.0})
        })
        .collect()
}

/// Raw quinn: one connection, one stream, writing `chunk`-sized buffers for the duration.
/// Goodput (bytes/s) of raw quinn and the CPU seconds this process used while measuring.
async fn raw_quinn(certs: &KeygenOutput, seconds: f64, chunk: usize) -> Result<(f64, f64)> {
    let (server_cfg, client_cfg) = link_configs(certs, 1, 1, 64 << 20);
    let server_tls = TlsMaterial::load(&server_cfg.tls)?;
    let client_tls = TlsMaterial::load(&client_cfg.tls)?;
    let mut server_config =
        quinn::ServerConfig::with_crypto(Arc::new(server_tls.quic_server_config()?));
    server_config.transport_config(Arc::new(hmw_cm::driver::transport_config(&server_cfg)));
    let server = quinn::Endpoint::server(server_config, "127.0.0.1:0".parse()?)?;
    let addr = server.local_addr()?;
    let mut client_config = quinn::ClientConfig::new(Arc::new(client_tls.quic_client_config()?));
    client_config.transport_config(Arc::new(hmw_cm::driver::transport_config(&client_cfg)));
    let client = quinn::Endpoint::client("127.0.0.1:0".parse()?)?;

    let meter = Arc::new(Meter::default());
    let receiver = {
        let meter = meter.clone();
        let server = server.clone();
        tokio::spawn(async move {
            let conn = server.accept().await.expect("incoming").await?;
            let mut rx = conn.accept_uni().await?;
            while let Some(chunk) = rx.read_chunk(usize::MAX, true).await? {
                meter
                    .bytes
                    .fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
            }
            anyhow::Ok(())
        })
    };
    let conn = client.connect_with(client_config, addr, "server")?.await?;
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let stop = stop.clone();
        let data = Bytes::from(vec![0xA5u8; chunk]);
        tokio::spawn(async move {
            let mut tx = conn.open_uni().await?;
            while !stop.load(Ordering::Relaxed) {
                tx.write_chunk(data.clone()).await?;
            }
            conn.close(0u32.into(), b"done");
            anyhow::Ok(())
        })
    };
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_before = process_cpu_seconds();
    let samples = sample_meter(
        &meter,
        || start.elapsed(),
        Duration::from_millis(250),
        Duration::from_secs_f64(seconds + 1.0),
    )
    .await;
    let cpu = process_cpu_seconds() - cpu_before;
    stop.store(true, Ordering::Relaxed);
    let _ = sender.await;
    receiver.abort();
    client.close(0u32.into(), b"done");
    server.close(0u32.into(), b"done");
    Ok((goodput(&samples, 1.0, seconds + 1.0), cpu))
}

/// What a link transfer measured.
struct Transfer {
    samples: Vec<Sample>,
    /// CPU seconds of this process from `cpu_from_s` to the end of sending.
    cpu_seconds: f64,
    sent: u64,
    received: u64,
    out_of_order: u64,
    corrupt: u64,
    flushed: bool,
    client: LinkStats,
    server: LinkStats,
    wanem: Option<Value>,
    /// The link's sizing every half second.
    sizing: Vec<Value>,
}

/// The client sends numbered messages for `seconds`; the server checks and counts them.
async fn link_transfer(
    server_cfg: LinkConfig,
    mut client_cfg: LinkConfig,
    wan: Option<WanemConfig>,
    seconds: f64,
    message_size: usize,
    cpu_from_s: f64,
    zero_copy: bool,
) -> Result<Transfer> {
    // Zero copy: the sender hands over `Bytes` from a ring of prepared messages (as raw quinn
    // writes one shared buffer); message `seq` is ring entry `seq % RING`.
    const RING: u64 = 96;
    let ring: Option<Arc<Vec<Bytes>>> = zero_copy.then(|| {
        Arc::new(
            (0..RING)
                .map(|k| {
                    let mut m = vec![0xA5u8; message_size];
                    m[..8].copy_from_slice(&k.to_be_bytes());
                    m[message_size - 1] = k as u8;
                    Bytes::from(m)
                })
                .collect(),
        )
    });
    let label = move |seq: u64| if zero_copy { seq % RING } else { seq };
    let server = Arc::new(Link::start(server_cfg).await?);
    let wanem = match wan {
        Some(mut wan) => {
            wan.server = server.local_addr();
            Some(start_wanem(wan).await?)
        }
        None => None,
    };
    client_cfg.port = wanem
        .as_ref()
        .map_or(server.local_addr(), |w| w.local_addr())
        .port();
    let client = Arc::new(Link::start(client_cfg).await?);
    let started = Instant::now();
    let clock = {
        let wan_started = wanem.as_ref().map(|w| Instant::now() - w.elapsed());
        move || wan_started.unwrap_or(started).elapsed()
    };
    let meter = Arc::new(Meter::default());
    let checks = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let receiver = {
        let (server, meter, checks) = (server.clone(), meter.clone(), checks.clone());
        tokio::spawn(async move {
            let mut expected = 0u64;
            while let Ok(message) = server.recv().await {
                let seq = u64::from_be_bytes(message[..8].try_into().expect("8 bytes"));
                if seq != label(expected) {
                    checks[0].fetch_add(1, Ordering::Relaxed);
                }
                if message.len() != message_size || message[message_size - 1] != seq as u8 {
                    checks[1].fetch_add(1, Ordering::Relaxed);
                }
                expected += 1;
                checks[2].fetch_add(1, Ordering::Relaxed);
                meter
                    .bytes
                    .fetch_add(message.len() as u64, Ordering::Relaxed);
            }
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let sender = {
        let (client, stop) = (client.clone(), stop.clone());
        tokio::spawn(async move {
            let mut seq = 0u64;
            let mut message = vec![0u8; message_size];
            while !stop.load(Ordering::Relaxed) {
                let send = async {
                    match &ring {
                        Some(ring) => client.send_bytes(ring[label(seq) as usize].clone()).await,
                        None => {
                            message[..8].copy_from_slice(&seq.to_be_bytes());
                            message[message_size - 1] = seq as u8;
                            client.send(&message).await
                        }
                    }
                };
                // Give up a blocked send now and then to look at the stop flag.
                match tokio::time::timeout(Duration::from_millis(200), send).await {
                    Ok(Ok(())) => seq += 1,
                    Ok(Err(e)) => return Err(anyhow::Error::from(e)),
                    Err(_) => {}
                }
            }
            anyhow::Ok(seq)
        })
    };
    let debug_fill = {
        let client = client.clone();
        tokio::spawn(async move {
            if std::env::var_os("LINK_BENCH_DEBUG").is_none() {
                return;
            }
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let s = client.stats();
                eprintln!("fill {:.2} blocks {} ", s.send_buffer.fill(), s.blocks_sent);
            }
        })
    };
    // The link's sizing over time: connections and windows, every half second.
    let sizing_rows = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sizing = {
        let (client, server, rows) = (client.clone(), server.clone(), sizing_rows.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let (c, s) = (client.stats(), server.stats());
                let mut rows = rows.lock().expect("rows");
                rows.push(json!({
                    "t_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                    "connections_open": c.connections_open,
                    "connections_target": c.connections_target,
                    "client_send_window_total": c.windows.send_window_total,
                    "server_receive_window_total": s.windows.receive_window_total,
                    "server_recv_memory": s.recv_buffer.capacity,
                    "client_send_memory": c.send_buffer.capacity,
                    "rtt_ms": (c.windows.rtt_ms * 10.0).round() / 10.0,
                    "reconnections": c.reconnections,
                }));
                if rows.len() >= 2400 {
                    return;
                }
            }
        })
    };
    let cpu_probe = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs_f64(cpu_from_s)).await;
        process_cpu_seconds()
    });
    let samples = sample_meter(
        &meter,
        &clock,
        Duration::from_millis(500),
        clock() + Duration::from_secs_f64(seconds),
    )
    .await;
    let cpu_seconds = process_cpu_seconds() - cpu_probe.await?;
    debug_fill.abort();
    sizing.abort();
    let sizing = std::mem::take(&mut *sizing_rows.lock().expect("rows"));
    stop.store(true, Ordering::Relaxed);
    let sent = sender.await??;
    let flushed = tokio::time::timeout(Duration::from_secs(60), client.flush())
        .await
        .is_ok();
    // Let the receiver drain what was acknowledged.
    let drain_deadline = Instant::now() + Duration::from_secs(10);
    while checks[2].load(Ordering::Relaxed) < sent && Instant::now() < drain_deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let transfer = Transfer {
        samples,
        cpu_seconds,
        sent,
        received: checks[2].load(Ordering::Relaxed),
        out_of_order: checks[0].load(Ordering::Relaxed),
        corrupt: checks[1].load(Ordering::Relaxed),
        flushed,
        client: client.stats(),
        server: server.stats(),
        wanem: wanem
            .as_ref()
            .map(|w| serde_json::to_value(w.counters()).expect("serialisable")),
        sizing,
    };
    receiver.abort();
    client.close().await;
    server.close().await;
    Ok(transfer)
}

async fn loopback(
    certs: &KeygenOutput,
    seconds: f64,
    message: usize,
    block_size: usize,
    rounds: usize,
    zero_copy: bool,
) -> Result<Value> {
    let mut round_reports = Vec::new();
    let mut ratios = Vec::new();
    let mut cpu_ratios = Vec::new();
    for round in 1..=rounds.max(1) {
        eprintln!("loopback round {round}: raw quinn, 1 connection x 1 stream, {seconds} s ...");
        let (quinn_rate, quinn_cpu) = raw_quinn(certs, seconds, message).await?;
        let quinn_per_cpu = quinn_rate * seconds / quinn_cpu.max(0.01);
        let mut rows = Vec::new();
        for (connections, streams) in [(1, 1), (2, 2)] {
            eprintln!(
                "loopback round {round}: link, {connections} connection(s) x {streams} stream(s), {seconds} s ..."
            );
            let (mut server, mut client) = link_configs(certs, connections, streams, 64 << 20);
            server.block_size = block_size;
            client.block_size = block_size;
            let t =
                link_transfer(server, client, None, seconds + 1.0, message, 1.0, zero_copy).await?;
            let rate = goodput(&t.samples, 1.0, seconds + 1.0);
            if t.out_of_order + t.corrupt > 0 || t.received != t.sent {
                bail!("loopback transfer lost, reordered or corrupted messages");
            }
            let per_cpu = rate * seconds / t.cpu_seconds.max(0.01);
            eprintln!(
                "  raw quinn {:.1} MB/s ({:.0} MB per CPU-second), link {connections}x{streams} {:.1} MB/s ({:.0} MB per CPU-second) = {:.2} of raw quinn ({:.2} per CPU-second)",
                quinn_rate / 1e6,
                quinn_per_cpu / 1e6,
                rate / 1e6,
                per_cpu / 1e6,
                rate / quinn_rate,
                per_cpu / quinn_per_cpu
            );
            rows.push(json!({
                "connections": connections,
                "streams": streams,
                "goodput_mbyte_s": rate / 1e6,
                "ratio_vs_raw_quinn": rate / quinn_rate,
                "mbyte_per_cpu_second": per_cpu / 1e6,
                "cpu_efficiency_vs_raw_quinn": per_cpu / quinn_per_cpu,
                "blocks_sent": t.client.blocks_sent,
                "per_interval_mbit_s": per_interval_mbit(&t.samples),
            }));
        }
        ratios.push(rows[0]["ratio_vs_raw_quinn"].as_f64().unwrap_or(0.0));
        cpu_ratios.push(
            rows[0]["cpu_efficiency_vs_raw_quinn"]
                .as_f64()
                .unwrap_or(0.0),
        );
        round_reports.push(json!({
            "raw_quinn_mbyte_s": quinn_rate / 1e6,
            "raw_quinn_mbyte_per_cpu_second": quinn_per_cpu / 1e6,
            "link": rows,
        }));
    }
    ratios.sort_by(f64::total_cmp);
    cpu_ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let cpu_median = cpu_ratios[cpu_ratios.len() / 2];
    eprintln!(
        "loopback: median link 1x1 / raw quinn = {median:.2} (goodput), {cpu_median:.2} (bytes per CPU-second) over {} round(s)",
        ratios.len()
    );
    Ok(json!({
        "scenario": "loopback",
        "seconds": seconds,
        "message_bytes": message,
        "block_size": block_size,
        "link_send": if zero_copy { "send_bytes (zero copy)" } else { "send (copies)" },
        "rounds": round_reports,
        "loopback_vs_quinn": median,
        "loopback_cpu_efficiency_vs_quinn": cpu_median,
    }))
}

fn wan_config(args: &WanArgs) -> WanemConfig {
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

fn wan_link_configs(
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

async fn wan_sweep(
    certs: &KeygenOutput,
    args: &WanArgs,
    connections: &[usize],
    seconds: f64,
    warmup: f64,
) -> Result<Value> {
    let link_rate = args.rate_mbit * 1e6 / 8.0;
    // Bytes in flight on the path: the rate times the round trip.
    let bdp = link_rate * 2.0 * args.delay_ms / 1e3;
    let mut rows = Vec::new();
    let default_connections = [args
        .start_connections
        .unwrap_or(LinkConfig::new(Role::Client, "x", 1, tls_placeholder()).connections)];
    let connections = if args.defaults {
        &default_connections[..]
    } else {
        connections
    };
    for &n in connections {
        let (server, client) = wan_link_configs(certs, args, n)?;
        if args.defaults {
            eprintln!(
                "wan: default settings ({n} connections at the start, up to {}, {:?}, windows from {} B), {} Mbit/s, {} ms one way, loss {} ...",
                client.connections_max(), client.congestion, client.window, args.rate_mbit, args.delay_ms, args.loss
            );
        } else {
            eprintln!(
                "wan: {n} connection(s) x {} streams, {} Mbit/s, {} ms one way, loss {}, {} ...",
                args.streams,
                args.rate_mbit,
                args.delay_ms,
                args.loss,
                args.congestion.as_deref().unwrap_or("cubic")
            );
        }
        let t = link_transfer(
            server,
            client,
            Some(wan_config(args)),
            seconds,
            args.message,
            0.0,
            false,
        )
        .await?;
        let steady = goodput(&t.samples, warmup, seconds);
        let total = goodput(&t.samples, 0.0, seconds);
        let w = t.server.windows;
        let window_grew = (w.receive_window_initial_total as f64) < bdp
            && w.receive_window_peak_total as f64 >= bdp;
        eprintln!(
            "  goodput {:.2} Mbit/s steady ({:.2} of the link), {:.2} Mbit/s over the whole run; \
             receive windows {} -> peak {} B (path holds {:.0} B), {} reconnection(s), connections {:?}",
            steady * 8.0 / 1e6,
            steady / link_rate,
            total * 8.0 / 1e6,
            w.receive_window_initial_total,
            w.receive_window_peak_total,
            bdp,
            t.client.reconnections,
            t.client
                .connection_counts
                .iter()
                .map(|c| (c.count, c.reason))
                .collect::<Vec<_>>(),
        );
        rows.push(json!({
            "defaults": args.defaults,
            "window_grew": window_grew,
            "bdp_bytes": bdp,
            "reconnections": t.client.reconnections,
            "client_stats": t.client,
            "server_stats": t.server,
            "sizing": t.sizing,
            "connections": n,
            "streams": args.streams,
            "steady_goodput_mbit_s": steady * 8.0 / 1e6,
            "total_goodput_mbit_s": total * 8.0 / 1e6,
            "fraction_of_link": steady / link_rate,
            "messages_sent": t.sent,
            "messages_received": t.received,
            "in_order_and_intact": t.out_of_order == 0 && t.corrupt == 0,
            "connections_lost": t.client.connections_lost,
            "blocks_retransmitted": t.client.blocks_retransmitted,
            "per_interval": per_interval_mbit(&t.samples),
            "wanem": t.wanem,
        }));
    }
    let fraction = |r: &Value| r["fraction_of_link"].as_f64().unwrap_or(0.0);
    let best = rows.iter().map(fraction).fold(0.0, f64::max);
    let best_connections = rows
        .iter()
        .max_by(|a, b| fraction(a).total_cmp(&fraction(b)))
        .map(|r| r["connections"].clone());
    let one = rows
        .iter()
        .find(|r| r["connections"] == 1)
        .map(fraction)
        .unwrap_or(f64::NAN);
    let best_row = rows
        .iter()
        .max_by(|a, b| fraction(a).total_cmp(&fraction(b)))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(json!({
        "scenario": "wan",
        "defaults": args.defaults,
        "best_goodput_mbit_s": best_row["steady_goodput_mbit_s"],
        "reconnections": rows.iter().map(|r| r["reconnections"].as_u64().unwrap_or(0)).sum::<u64>(),
        "window_grew": best_row["window_grew"],
        "rate_mbit": args.rate_mbit,
        "delay_ms": args.delay_ms,
        "loss": args.loss,
        "congestion": args.congestion.as_deref().unwrap_or(if args.defaults { "default" } else { "cubic" }),
        "seconds": seconds,
        "warmup_s": warmup,
        "runs": rows,
        "wan_best_fraction": best,
        "best_connections": best_connections,
        "wan_gain_vs_1conn": best / one,
    }))
}

async fn outage_run(
    certs: &KeygenOutput,
    args: &WanArgs,
    connections: usize,
    outage: Outage,
    seconds: f64,
    inactivity_ms: u64,
) -> Result<Value> {
    eprintln!(
        "outage: {connections} connection(s), link down from {} s to {} s, {seconds} s of sending ...",
        outage.start_s, outage.end_s
    );
    let (mut server, mut client) = wan_link_configs(certs, args, connections)?;
    for c in [&mut server, &mut client] {
        c.inactivity_timeout_ms = inactivity_ms;
        c.reconnect_max_ms = 1000;
    }
    let mut wan = wan_config(args);
    wan.outages = vec![outage];
    let t = link_transfer(server, client, Some(wan), seconds, args.message, 0.0, false).await?;
    let before = goodput(&t.samples, 3.0, outage.start_s);
    // Recovery: from the end of the outage to the first 1 s window at 80 % of the goodput
    // before it.
    let mut recovery = None;
    let mut first_byte = None;
    for s in t.samples.iter().filter(|s| s.t_s >= outage.end_s) {
        if first_byte.is_none() && goodput(&t.samples, s.t_s, s.t_s + 0.5) > 0.0 {
            first_byte = Some(s.t_s - outage.end_s);
        }
        if s.t_s + 1.0 <= seconds && goodput(&t.samples, s.t_s, s.t_s + 1.0) >= 0.8 * before {
            recovery = Some(s.t_s - outage.end_s);
            break;
        }
    }
    let lost = t.sent.saturating_sub(t.received);
    eprintln!(
        "  sent {} received {} lost {lost} out of order {} corrupt {}; goodput before {:.2} Mbit/s; \
         first delivery {:?} s and full goodput {:?} s after the link returned; {} disconnection(s), \
         {:.1} s disconnected",
        t.sent,
        t.received,
        t.out_of_order,
        t.corrupt,
        before * 8.0 / 1e6,
        first_byte,
        recovery,
        t.client.disconnections,
        t.client.time_disconnected_s
    );
    Ok(json!({
        "scenario": "outage",
        "connections": connections,
        "outage": {"start_s": outage.start_s, "end_s": outage.end_s},
        "seconds": seconds,
        "messages_sent": t.sent,
        "messages_received": t.received,
        "outage_lost": lost + t.out_of_order + t.corrupt,
        "out_of_order": t.out_of_order,
        "corrupt": t.corrupt,
        "flushed": t.flushed,
        "goodput_before_mbit_s": before * 8.0 / 1e6,
        "first_delivery_after_return_s": first_byte,
        "outage_recovery_s": recovery,
        "client_stats": t.client,
        "server_stats": t.server,
        "per_interval": per_interval_mbit(&t.samples),
        "wanem": t.wanem,
    }))
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The connection count of the run with the highest fraction of the link.
fn best_connections(wan: &Value) -> Result<u64> {
    let runs = wan["runs"]
        .as_array()
        .context("not a `wan` report: no `runs`")?;
    let fraction = |r: &Value| r["fraction_of_link"].as_f64().unwrap_or(0.0);
    runs.iter()
        .max_by(|a, b| fraction(a).total_cmp(&fraction(b)))
        .and_then(|r| r["connections"].as_u64())
        .context("the `wan` report has no run with a connection count")
}

fn summary(
    loopback: &Path,
    wan: &Path,
    outage: &Path,
    wan1g: Option<&Path>,
    lossy200: Option<&Path>,
    ceiling: Option<&Path>,
) -> Result<()> {
    let (l, w, o) = (read_json(loopback)?, read_json(wan)?, read_json(outage)?);
    let num = |v: &Value| v.as_f64().map_or("NaN".to_string(), |x| format!("{x:.2}"));
    let mut line = format!(
        "lds loopback_vs_quinn={} loopback_cpu_vs_quinn={} wan_best_fraction={} wan_gain_vs_1conn={} outage_lost={} outage_recovery_s={}",
        num(&l["loopback_vs_quinn"]),
        num(&l["loopback_cpu_efficiency_vs_quinn"]),
        num(&w["wan_best_fraction"]),
        num(&w["wan_gain_vs_1conn"]),
        o["outage_lost"],
        num(&o["outage_recovery_s"]),
    );
    if let (Some(d), Some(e), Some(f)) = (wan1g, lossy200, ceiling) {
        let (d, e, f) = (read_json(d)?, read_json(e)?, read_json(f)?);
        let reconnects =
            d["reconnections"].as_u64().unwrap_or(0) + e["reconnections"].as_u64().unwrap_or(0);
        line += &format!(
            " wan1g_100ms_mbit={:.0} lossy200_fraction={} emulator_ceiling_mbit={:.0} reconnects={reconnects} window_grew={}",
            d["best_goodput_mbit_s"].as_f64().unwrap_or(f64::NAN),
            num(&e["wan_best_fraction"]),
            f["emulator_ceiling_mbit"].as_f64().unwrap_or(f64::NAN),
            d["window_grew"].as_bool().unwrap_or(false),
        );
    }
    // The line `scripts/bench-lds.sh` ends with; its format is read by other scripts.
    println!("{line}");
    Ok(())
}

/// The emulator's ceiling: 1452-byte datagrams offered at `offered_mbit` (in trains of up to
/// 44, one system call each, paced every millisecond) through an unshaped emulator on its own
/// runtime to a sink; what reaches the sink per second is the ceiling.
async fn ceiling(offered_mbit: f64, seconds: f64) -> Result<Value> {
    const SIZE: usize = 1452;
    const TRAIN: usize = 44;
    let sink = std::net::UdpSocket::bind("127.0.0.1:0")?;
    let sink_addr = sink.local_addr()?;
    let config = WanemConfig::symmetric(
        "127.0.0.1:0".parse()?,
        sink_addr,
        DirectionConfig::default(),
    );
    let wanem = start_wanem(config).await?;
    let target = wanem.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let sink_thread = {
        let (stop, received) = (stop.clone(), received.clone());
        std::thread::spawn(move || -> Result<()> {
            let state = quinn_udp::UdpSocketState::new((&sink).into())?;
            let _ = state.set_recv_buffer_size((&sink).into(), 32 << 20);
            let mut buf = vec![0u8; 64 * 1024 * quinn_udp::BATCH_SIZE];
            let mut meta = [quinn_udp::RecvMeta::default(); quinn_udp::BATCH_SIZE];
            while !stop.load(Ordering::Relaxed) {
                let mut chunks = buf.chunks_mut(64 * 1024);
                let mut slices: [std::io::IoSliceMut<'_>; quinn_udp::BATCH_SIZE] =
                    std::array::from_fn(|_| std::io::IoSliceMut::new(chunks.next().expect("slot")));
                match state.recv((&sink).into(), &mut slices, &mut meta) {
                    Ok(n) => {
                        let bytes: usize = meta[..n].iter().map(|m| m.len).sum();
                        received.fetch_add(bytes as u64, Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        })
    };
    let blaster = {
        let stop = stop.clone();
        std::thread::spawn(move || -> Result<u64> {
            let socket = std::net::UdpSocket::bind("127.0.0.1:0")?;
            let state = quinn_udp::UdpSocketState::new((&socket).into())?;
            let _ = state.set_send_buffer_size((&socket).into(), 32 << 20);
            let train = state.max_gso_segments().clamp(1, TRAIN);
            let payload = vec![0x5Au8; SIZE * train];
            let rate = offered_mbit * 1e6 / 8.0;
            let started = Instant::now();
            let mut sent = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let due = (started.elapsed().as_secs_f64() * rate) as u64;
                if sent + (SIZE * train) as u64 > due {
                    std::thread::sleep(Duration::from_millis(1));
                    continue;
                }
                let transmit = quinn_udp::Transmit {
                    destination: target,
                    ecn: None,
                    contents: &payload,
                    segment_size: (train > 1).then_some(SIZE),
                    src_ip: None,
                };
                match state.try_send((&socket).into(), &transmit) {
                    Ok(()) => sent += payload.len() as u64,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(sent)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (t0, r0) = (Instant::now(), received.load(Ordering::Relaxed));
    let cpu0 = process_cpu_seconds();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let (elapsed, r1) = (t0.elapsed().as_secs_f64(), received.load(Ordering::Relaxed));
    let cpu = process_cpu_seconds() - cpu0;
    stop.store(true, Ordering::Relaxed);
    let offered = blaster
        .join()
        .map_err(|_| anyhow::anyhow!("blaster panicked"))??;
    sink_thread
        .join()
        .map_err(|_| anyhow::anyhow!("sink panicked"))??;
    let mbit = (r1 - r0) as f64 * 8.0 / 1e6 / elapsed;
    let counters = wanem.counters();
    eprintln!(
        "emulator ceiling: {mbit:.0} Mbit/s out of {offered_mbit} Mbit/s offered (1452-byte datagrams), {cpu:.2} CPU-s of this process in {elapsed:.1} s\n{counters}"
    );
    Ok(json!({
        "scenario": "ceiling",
        "offered_mbit": offered_mbit,
        "offered_bytes": offered,
        "seconds": elapsed,
        "datagram_bytes": SIZE,
        "emulator_ceiling_mbit": mbit,
        "process_cpu_seconds": cpu,
        "wanem": counters,
    }))
}
