//! `hmw-wan-router`: the testbed's WAN at packet level.
//!
//! The testbed emulates each host in its own network namespace, each cluster's LAN as a
//! Linux bridge, and joins the clusters through one "router" namespace that has an interface
//! on every bridge. This program runs in the router namespace and makes every packet between
//! clusters cross a TUN device it reads and writes, where each cluster's access link is one
//! [`hmw_wan::Pipe`] per direction (rate, queue, one-way delay, jitter, random loss,
//! outages): ssh, ping and QUIC all see the same WAN.
//!
//! ```text
//! hmw-wan-router --config FILE --control SOCKET_PATH [--log FILE]
//! ```
//!
//! It prints `ready` on standard output once packets flow, runs until SIGTERM, SIGINT,
//! SIGHUP or the control command `stop`, then removes what it set up and exits 0 (1 with a
//! message on standard error on any error before that). The configuration is described in
//! [`config`], the control socket in [`control`].
//!
//! # Path of a packet
//!
//! A packet from cluster A to cluster B crosses A's `from_cluster` pipe, then B's
//! `to_cluster` pipe: between two external clusters the delays add up; a cluster without
//! conditions has an unconditioned access link (its pipes count packets but add nothing).
//! Packets are classified by their IPv4 source and destination addresses against the
//! clusters' subnets.
//!
//! # Routing inside the router namespace
//!
//! - `net.ipv4.ip_forward = 1`; `rp_filter = 0` on `all`, on each cluster's `dev` and on the
//!   TUN device (packets come back from the TUN device with their original source, which
//!   the reverse-path filter would reject); IPv6 disabled on the TUN device. The previous
//!   values are restored on exit.
//! - The TUN device (`tun`, `IFF_TUN | IFF_NO_PI`, MTU the largest of the clusters' devs) up,
//!   without an address.
//! - Table 2131 ([`routing::TABLE_TO_TUN`]): `default dev TUN`; rules at priority 2131
//!   `iif DEV lookup 2131`, one per cluster dev: everything a cluster sends to the router that
//!   is not for the router itself goes into the TUN device.
//! - Table 2130 ([`routing::TABLE_FROM_TUN`]): `SUBNET dev DEV` for each cluster, and
//!   `blackhole default`; rule at priority 2130 `iif TUN lookup 2130`: what the emulator
//!   writes back leaves through the destination cluster's dev, and nothing else leaves.
//! - The main table is not changed. Its connected routes (each subnet via its dev) are never
//!   reached by forwarded packets: the `iif` rules come first (priorities 2130/2131, before
//!   the main table's 32766), and table 2131 has a default route, so no lookup of a packet
//!   from a cluster dev falls through to the main table. At startup the router checks this
//!   with `ip route get DST from SRC iif DEV` (expects the TUN device) and `... iif TUN`
//!   (expects the destination's dev) for every pair of clusters, and refuses to run if another
//!   rule wins.
//! - The local table (priority 0) still comes first: packets to the router's own addresses
//!   are delivered to the router namespace without crossing the emulator, and the router
//!   namespace's own traffic (from `lo`) uses the main table. Only traffic between clusters is
//!   emulated; ICMP errors the router itself sends (host unreachable when a destination does
//!   not answer ARP, TTL exceeded) are the router's own traffic and are not delayed.
//! - Forwarded packets cross the router's IP layer twice (into the TUN device, out of it):
//!   their TTL drops by 2 and traceroute shows the router twice.
//!
//! Rules at priorities 2130/2131 and routes in tables 2130/2131 left by a router that was
//! killed (SIGKILL) in the same namespace are removed at startup; its TUN device went away
//! with its process (its sysctls stay as it set them). A rule whose TUN device still exists
//! belongs to a live router: the second one refuses to start.
//!
//! # What is dropped
//!
//! Only IPv4 is routed into the TUN device; IPv6 between clusters is not forwarded by this
//! router at all (nor does it bypass it). Non-IPv4 packets that appear on the TUN device
//! anyway are dropped and counted (`dropped.not_ipv4`), as are malformed IPv4 headers,
//! packets whose source or destination is outside every cluster's subnet
//! (`dropped.no_cluster`: a host that routes through the router towards anything else gets
//! nothing back), packets within one cluster (`dropped.same_cluster`), and arrivals when
//! [`engine::MAX_IN_FLIGHT_BYTES`] of packets are already waiting.
//!
//! # Timing
//!
//! One thread owns the pipes: it reads the TUN device in passes of up to 64 packets
//! (non-blocking, into pooled buffers: no allocation per packet once warm), offers each packet
//! to its pipes stamped with a monotonic clock, writes those due, and sleeps in `ppoll` (nanosecond timeout, timer slack 1 ns) until the
//! earliest delivery time, a packet, a control request or a signal. While it reads several
//! packets per pass it naps up to [`COALESCE`] instead of waking for each packet.
//!
//! The packet thread runs SCHED_FIFO (`realtime_priority`, default 10; the control thread and
//! the `ip` commands stay normal): it is the network, and on cores kept busy by other work a
//! normal thread was seen waiting tens to hundreds of milliseconds for a core, adding that to
//! the emulated delays. A real-time thread that forwards at full speed can take one core;
//! the kernel's real-time throttling leaves 5 % of it to others.

pub mod config;
pub mod control;
pub mod engine;
pub mod packet;
pub mod routing;
pub mod sys;

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::json;

use crate::config::Config;
use crate::control::{Message, Request, Waker};
use crate::engine::Engine;
use crate::routing::Routing;

/// Packets read from the TUN device before the due packets are written and the clock read
/// again.
pub const READ_BATCH: usize = 64;

/// Packets read in one pass from which the router counts as busy and naps instead of waking
/// up for every packet.
pub const BUSY_READS: usize = 4;

/// Longest nap while busy: packets wait at most this long in the TUN device's queue before
/// being read (and stamped).
pub const COALESCE: Duration = Duration::from_micros(50);

/// The command line.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "hmw-wan-router",
    version,
    about = "The testbed's WAN at packet level: run inside the router network namespace"
)]
pub struct Args {
    /// The configuration (TOML: `tun`, `seed`, `[[cluster]]` tables).
    #[arg(long)]
    pub config: PathBuf,
    /// Path of the control socket (Unix stream, one JSON request per line).
    #[arg(long)]
    pub control: PathBuf,
    /// Append the log here instead of standard error.
    #[arg(long)]
    pub log: Option<PathBuf>,
}

/// Where log lines go.
static LOG: OnceLock<Mutex<Option<File>>> = OnceLock::new();

/// Writes a line to the log (the `--log` file, or standard error).
pub fn log(message: &str) {
    let line = format!("hmw-wan-router[{}] {message}\n", std::process::id());
    let sink = LOG.get_or_init(|| Mutex::new(None));
    let mut guard = sink.lock().unwrap_or_else(|p| p.into_inner());
    match guard.as_mut() {
        Some(file) => {
            let _ = file.write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
    }
}

/// Binds the control socket, replacing a stale one (a socket file nobody listens on).
fn bind_control(path: &Path) -> anyhow::Result<UnixListener> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            bail!(
                "control socket {}: the path exists and is not a socket",
                path.display()
            );
        }
        if UnixStream::connect(path).is_ok() {
            bail!(
                "control socket {}: another process listens on it",
                path.display()
            );
        }
        std::fs::remove_file(path).with_context(|| {
            format!(
                "control socket {}: cannot remove the stale one",
                path.display()
            )
        })?;
    }
    UnixListener::bind(path)
        .with_context(|| format!("control socket {}: cannot bind", path.display()))
}

/// Why the packet loop ended.
enum Exit {
    /// A signal.
    Signal(u32),
    /// The control command `stop` (its reply is written after the teardown).
    Stop(Message),
}

/// Runs the router until a signal or `stop`; everything it set up is removed before it
/// returns, error or not.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(path) = &args.log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("--log {}: cannot open", path.display()))?;
        *LOG.get_or_init(|| Mutex::new(None))
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(file);
    }
    let config = Config::load(&args.config)?;
    // Before any thread starts, so that every thread has these signals blocked.
    let signals = sys::signal_fd().context("cannot block signals for a signalfd")?;
    routing::preflight(&config).map_err(anyhow::Error::msg)?;
    let listener = bind_control(&args.control)?;
    let socket_path = args.control.clone();
    let result = serve(&config, listener, &signals);
    let _ = std::fs::remove_file(&socket_path);
    result
}

fn serve(
    config: &Config,
    listener: UnixListener,
    signals: &std::os::fd::OwnedFd,
) -> anyhow::Result<()> {
    let stale = routing::remove_stale();
    if stale > 0 {
        log(&format!(
            "removed {stale} stale rules of a previous router in this namespace"
        ));
    }
    let mtu = config
        .clusters
        .iter()
        .map(|c| {
            sys::dev_mtu(&c.dev).with_context(|| {
                format!(
                    "cluster `{}`: cannot read the MTU of dev `{}`",
                    c.name, c.dev
                )
            })
        })
        .collect::<anyhow::Result<Vec<usize>>>()?
        .into_iter()
        .max()
        .unwrap_or(1500)
        .clamp(576, 65_535);
    let tun = sys::open_tun(&config.tun).with_context(|| {
        format!(
            "`tun`: cannot create the TUN device `{}` through /dev/net/tun (root or CAP_NET_ADMIN \
             and the tun module are needed)",
            config.tun
        )
    })?;
    let mut routing = Routing::setup(config, mtu).map_err(anyhow::Error::msg)?;
    let event = Arc::new(sys::event_fd().context("cannot create an eventfd")?);
    let (to_engine, from_control) = mpsc::channel();
    let waker = Waker(event.clone());
    std::thread::Builder::new()
        .name("control-accept".into())
        .spawn(move || control::serve(listener, to_engine, waker))
        .context("cannot start the control thread")?;
    let mut engine = Engine::new(config, mtu);
    sys::precise_timers();
    // After the control thread started: only the packet thread is real-time.
    if config.realtime_priority > 0 {
        if let Err(e) = sys::realtime(config.realtime_priority) {
            log(&format!(
                "cannot make the packet thread real-time (SCHED_FIFO {}): {e}; delays will \
                 suffer when the cores are busy",
                config.realtime_priority
            ));
        }
    }
    let origin = Instant::now();
    log(&format!(
        "ready: tun `{}` mtu {mtu}, clusters {}",
        config.tun,
        config
            .clusters
            .iter()
            .map(|c| format!("{} {} via {}", c.name, c.subnet, c.dev))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }
    let exit = packet_loop(
        &mut engine,
        origin,
        tun.as_raw_fd(),
        signals.as_raw_fd(),
        event.as_raw_fd(),
        &from_control,
    );
    let counters = engine.counters(origin.elapsed());
    routing.teardown();
    drop(tun);
    log(&format!("counters at exit: {counters}"));
    match exit {
        Ok(Exit::Signal(signal)) => {
            log(&format!("signal {signal}: stopped, routing removed"));
            Ok(())
        }
        Ok(Exit::Stop(message)) => {
            log("stop: routing removed");
            message.reply(&json!({ "ok": true }));
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn packet_loop(
    engine: &mut Engine,
    origin: Instant,
    tun: i32,
    signals: i32,
    event: i32,
    from_control: &mpsc::Receiver<Message>,
) -> anyhow::Result<Exit> {
    let mut fds = [tun, signals, event].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // `more`: the last pass filled a batch, read again at once. `busy`: it read several
    // packets; then the next wait ignores the TUN descriptor and naps [`COALESCE`] at most, so
    // that a stream of packets costs one wake-up per nap instead of one per packet.
    let mut more = false;
    let mut busy = false;
    loop {
        let now = origin.elapsed();
        let due = engine.next_due().map(|at| at.saturating_sub(now));
        let timeout = if more {
            Some(Duration::ZERO)
        } else if busy {
            Some(due.map_or(COALESCE, |d| d.min(COALESCE)))
        } else {
            due
        };
        fds[0].fd = if busy && !more { -1 } else { tun };
        sys::poll(&mut fds, timeout).context("ppoll")?;
        if fds[1].revents != 0 {
            if let Some(signal) = sys::read_signal(signals) {
                return Ok(Exit::Signal(signal));
            }
        }
        if fds[2].revents != 0 {
            sys::drain_event(event);
            while let Ok(message) = from_control.try_recv() {
                if matches!(message.request, Request::Stop {}) {
                    return Ok(Exit::Stop(message));
                }
                let reply = engine.command(origin.elapsed(), &message.request);
                message.reply(&reply);
            }
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
            bail!("the TUN device reported an error (was it deleted?)");
        }
        if more || busy || fds[0].revents & libc::POLLIN != 0 {
            let mut read = 0;
            while read < READ_BATCH {
                let mut buf = engine.buffer();
                match sys::read_packet(tun, &mut buf) {
                    Ok(Some(n)) => engine.ingress(origin.elapsed(), buf, n),
                    Ok(None) => {
                        engine.recycle(buf);
                        break;
                    }
                    Err(e) => {
                        engine.recycle(buf);
                        return Err(e).context("reading the TUN device");
                    }
                }
                read += 1;
            }
            more = read == READ_BATCH;
            busy = read >= BUSY_READS;
        }
        engine.run_due(origin.elapsed(), &mut |packet| {
            sys::write_packet(tun, packet)
        });
    }
}
