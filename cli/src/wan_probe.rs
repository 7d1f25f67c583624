//! How `hmw calibrate` measures a WAN: one end of a link, configured exactly as the
//! communication manager of its machine-file line configures its own, measures the round-trip
//! time (the client end pings, the server end echoes) and then the goodput of each direction
//! in turn, the server's end sending first: each end measures what it receives while the
//! other sends. One direction at a time, because with both at once each direction's
//! acknowledgements queue behind the other's data (in the emulator's queue as in a real
//! router's): that read wan-out's 1 MB/s link at 0.61 MB/s, where the run's
//! results, with little against them, carried 0.95 MB/s. On one machine both ends run in
//! `hmw calibrate` itself; on real hosts each end is `hmw wan-probe` (a command hidden from
//! the help) on its CM's host, started by the cluster's launcher, which prints one
//! `hmw-wan-probe {JSON}` line ([`ProbeResult`]).

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context as _, Result};
use hmw_cm::{BlockingLink, LinkConfig, Role, TrySendError};
use hmw_core::{
    config::{CmConfig, ConfigFile},
    machinefile::MachineFile,
};
use serde::{Deserialize, Serialize};

use crate::processes::interrupted;

/// Round trips timed, after [`SKIPPED`] that set the connections up.
const ROUNDS: usize = 18;
const SKIPPED: usize = 3;

/// The prefix of the line `hmw wan-probe` prints its result on.
pub(crate) const RESULT_PREFIX: &str = "hmw-wan-probe ";

/// What one end of a link measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProbeResult {
    /// The CM's name (its certificate's).
    pub(crate) cm: String,
    /// The host it ran on.
    pub(crate) host: String,
    /// The median round trip, seconds (the client end only).
    pub(crate) rtt_s: Option<f64>,
    /// Message bytes per second received while the other end sent.
    pub(crate) received_bytes_per_s: f64,
    /// Seconds the link, idle before the other end began to send, lost to its ramp against
    /// that rate (170); absent from older probes.
    #[serde(default)]
    pub(crate) received_ramp_s: Option<f64>,
}

/// What one end of a link received in its turn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Received {
    /// Message bytes per second, over the timed window.
    pub(crate) bytes_per_s: f64,
    /// Seconds lost to the link's ramp (170): from the first bytes received to the window's
    /// opening, less what the bytes received by then would have taken at `bytes_per_s`.
    pub(crate) ramp_s: f64,
}

#[derive(Debug, clap::Args)]
pub struct WanProbeArgs {
    /// The cluster's machine file, as its CMs read it.
    #[arg(short = 'm', long)]
    machinefile: PathBuf,
    /// The run configuration (its `[cm]` table, certs included).
    #[arg(short = 'c', long)]
    config: PathBuf,
    /// NAME=BYTES: the CM whose link end this is and the size of the messages it sends;
    /// several: the process of MPI rank i (OMPI_COMM_WORLD_RANK) takes the i-th.
    #[arg(long = "cm", required = true, value_name = "NAME=BYTES")]
    cms: Vec<String>,
    /// Seconds of traffic before the timed window, at least (30 round trips when longer).
    #[arg(long, value_parser = crate::seconds, default_value = "1")]
    warmup: Duration,
    /// Seconds timed.
    #[arg(long, value_parser = crate::positive_seconds, default_value = "6")]
    seconds: Duration,
    /// Seconds to wait for the link to come up.
    #[arg(long, value_parser = crate::positive_seconds, default_value = "60")]
    connect_timeout: Duration,
}

/// `hmw wan-probe`: one link end, its result printed as one line.
pub fn run(args: WanProbeArgs) -> Result<()> {
    let rank: usize = std::env::var("OMPI_COMM_WORLD_RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let spec = args.cms.get(rank).with_context(|| {
        format!(
            "rank {rank}: only {} --cm given (one per rank)",
            args.cms.len()
        )
    })?;
    let (name, bytes) = spec
        .split_once('=')
        .and_then(|(n, b)| Some((n, b.parse::<usize>().ok()?)))
        .with_context(|| format!("--cm {spec}: expected NAME=BYTES"))?;
    let host = hostname();
    let context = || format!("CM {name} on {host}");
    let machines = MachineFile::load(&args.machinefile)?;
    let cm = ConfigFile::load(&args.config)?.cm;
    let config = cm_config(&machines, name, &cm).with_context(context)?;
    let role = config.role;
    let link = BlockingLink::start(config).map_err(|e| anyhow!("{}: {e}", context()))?;
    let measured = (|| -> Result<ProbeResult> {
        wait_connected(&link, args.connect_timeout)?;
        let (rtt_s, warmup) = match role {
            Role::Client => {
                let (rtt, warmup) = ping(&link, args.warmup)?;
                (Some(rtt), warmup)
            }
            Role::Server => (None, echo(&link)?),
        };
        let received = exchange(&link, role, bytes, warmup, args.seconds)?;
        Ok(ProbeResult {
            cm: name.to_owned(),
            host: host.clone(),
            rtt_s,
            received_bytes_per_s: received.bytes_per_s,
            received_ramp_s: Some(received.ramp_s),
        })
    })()
    .with_context(context);
    // The peer may still be in its window (it started up to a round trip later): drain a
    // little before closing, so that its sending does not fail.
    linger(&link, Duration::from_secs(2));
    link.close();
    let result = measured?;
    println!("{RESULT_PREFIX}{}", serde_json::to_string(&result)?);
    Ok(())
}

/// This host's name.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown host".to_owned())
}

/// The link configuration of CM `name` from its line of `machines`, as the CM builds it.
pub(crate) fn cm_config(machines: &MachineFile, name: &str, cm: &CmConfig) -> Result<LinkConfig> {
    let rank = (0..machines.ranks.len())
        .find(|&r| {
            machines.ranks[r].cm.is_some()
                && machines.ranks[r].annotations.name.as_deref() == Some(name)
        })
        .with_context(|| format!("{}: no CM named {name}", machines.path.display()))?;
    hmw_cm::cm_line::link_config(machines, rank, cm).map_err(|e| anyhow!("{e}"))
}

/// Wait until the link is up, at most `timeout` (or until interrupted).
pub(crate) fn wait_connected(link: &BlockingLink, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if interrupted() {
            bail!("interrupted");
        }
        match link.wait_connected(Duration::from_millis(100)) {
            Ok(()) => return Ok(()),
            Err(hmw_cm::LinkError::Timeout) if Instant::now() < deadline => {}
            Err(hmw_cm::LinkError::Timeout) => {
                bail!(
                    "the link did not come up within {} s",
                    timeout.as_secs_f64()
                )
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The server end of the round trips: echo [`ROUNDS`] messages. Returns the warm-up the
/// client then chose ([`ping`]), for both ends' turns.
pub(crate) fn echo(link: &BlockingLink) -> Result<Duration> {
    for _ in 0..ROUNDS {
        let message = link
            .recv_timeout(Duration::from_secs(10))?
            .context("no ping within 10 s")?;
        link.send(&message)?;
    }
    let warmup = link
        .recv_timeout(Duration::from_secs(10))?
        .context("no warm-up from the client within 10 s")?;
    let millis: [u8; 8] = warmup[..]
        .try_into()
        .map_err(|_| anyhow!("a warm-up of {} bytes, not 8", warmup.len()))?;
    Ok(Duration::from_millis(u64::from_le_bytes(millis)))
}

/// The client end of the round trips: the median of the one-byte messages echoed after
/// [`SKIPPED`] not counted (which set the connections up), seconds; and the warm-up both
/// ends then use (at least `warmup`, [`warmup_for`]), sent to the server.
pub(crate) fn ping(link: &BlockingLink, warmup: Duration) -> Result<(f64, Duration)> {
    let mut times = Vec::new();
    for round in 0..ROUNDS {
        let sent = Instant::now();
        link.send(&[round as u8])?;
        link.recv_timeout(Duration::from_secs(10))?
            .context("no echo within 10 s")?;
        if round >= SKIPPED {
            times.push(sent.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    let rtt = times[times.len() / 2];
    let warmup = warmup_for(warmup, rtt);
    link.send(&(warmup.as_millis() as u64).to_le_bytes())?;
    Ok((rtt, warmup))
}

/// Round trips of warm-up before a direction's window at least: a sender that starts its
/// turn idle ramps up over round trips, not seconds (a 1 MB/s link with a 100 ms round trip
/// and 0.5 % loss measured 0.54-0.88 of its rate after 1 s, 0.94-0.99 after 3 s).
const WARMUP_ROUND_TRIPS: f64 = 30.0;

/// The warm-up before each direction's window: `warmup`, or [`WARMUP_ROUND_TRIPS`] round
/// trips when longer.
fn warmup_for(warmup: Duration, rtt_s: f64) -> Duration {
    warmup.max(Duration::from_secs_f64(WARMUP_ROUND_TRIPS * rtt_s))
}

/// Margin of each turn of [`exchange`] beyond its warm-up and window: the two ends start
/// their turns up to a round trip apart, and the receiver's window must fall inside the
/// sender's turn.
const TURN_MARGIN: Duration = Duration::from_secs(1);

/// What this end receives in a two-turn exchange: the server's end sends `size`-byte
/// messages for a turn while the client's end receives, then the other way round. A turn
/// lasts `warmup + window + TURN_MARGIN`; the receiving end counts the message bytes that
/// reached it during `window`, after `warmup`, and what the link, idle before the turn, lost
/// to its ramp during the warm-up.
pub(crate) fn exchange(
    link: &BlockingLink,
    role: Role,
    size: usize,
    warmup: Duration,
    window: Duration,
) -> Result<Received> {
    let message = vec![0x5A; size.clamp(1, link.max_message())];
    let turn = warmup + window + TURN_MARGIN;
    match role {
        Role::Server => {
            send_for(link, &message, warmup + window, turn)?;
            receive(link, warmup, window, turn)
        }
        Role::Client => {
            let received = receive(link, warmup, window, turn)?;
            send_for(link, &message, warmup + window, turn)?;
            Ok(received)
        }
    }
}

/// The most this end keeps queued in its link's send buffer while sending: half a second of
/// what the link took over the last second, and at least [`SEND_BACKLOG_FLOOR`] bytes and
/// two messages. Enough to keep the link busy (the buffer holds what is in flight too: a
/// fixed 1 MiB held a 50 MB/s link with a 43 ms round trip to 23 MB/s), and little enough
/// that the backlog left when the sender stops queueing drains within the turn's margin
/// instead of running into the other direction's turn, where its data would delay that
/// direction's acknowledgements. (On the testbed's lossy 1 MB/s link this alone did not lift
/// the slow direction: the warm-up in round trips, [`WARMUP_ROUND_TRIPS`], did.)
const SEND_BACKLOG_S: f64 = 0.5;
const SEND_BACKLOG_FLOOR: usize = 512 << 10;

/// Send `message` as fast as the link takes it, within the backlog above, until `queueing`
/// has passed (the receiver's window has closed: what is queued then keeps the link busy
/// for the half second of skew between the ends); then let the backlog drain until `turn`
/// has passed. Whatever arrives meanwhile is taken and dropped.
fn send_for(link: &BlockingLink, message: &[u8], queueing: Duration, turn: Duration) -> Result<()> {
    // At least what the path is expected to hold twice (its hint, as a CM's link has it), so
    // that the backlog leaves the link's ramp its own, as a CM with its window of tasks does.
    let path_floor = link
        .inner()
        .config()
        .path
        .map_or(0, |path| (2.0 * path.bdp_bytes()) as usize);
    let start = Instant::now();
    let until = start + turn;
    while Instant::now() < until && !interrupted() {
        while link.try_recv()?.is_some() {}
        if Instant::now() >= start + queueing {
            link.recv_timeout(Duration::from_millis(20))?;
            continue;
        }
        let backlog = SEND_BACKLOG_FLOOR
            .max(2 * message.len())
            .max(path_floor)
            .max((SEND_BACKLOG_S * link.stats().send_rate_current) as usize);
        if link.send_buffer().used + message.len() > backlog {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        match link.try_send(message) {
            Ok(()) => {}
            Err(TrySendError::Full { .. }) => {
                link.wait_for_space(message.len(), Duration::from_millis(20))?;
            }
            Err(TrySendError::Link(e)) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Receive for `turn`: the message bytes that reached the link during `window`, after
/// `warmup`, per second. Deliveries come in bursts (a lost packet holds back what follows it
/// until it is repaired), so the window should span several: a ratio from the first to the
/// last message, or a slope, would swing with where the bursts fall.
fn receive(
    link: &BlockingLink,
    warmup: Duration,
    window: Duration,
    turn: Duration,
) -> Result<Received> {
    let start = Instant::now();
    let base = link.stats().bytes_received;
    let mut first_arrival = None;
    let (opens, closes, ends) = (start + warmup, start + warmup + window, start + turn);
    // Message bytes that reached the link, at a window's edge: first take every message
    // already delivered, so that this thread's own pace does not count (a reader that fell
    // behind and caught up inside the window would count the backlog in it).
    let arrived = || -> Result<(Instant, u64), hmw_cm::LinkError> {
        while link.try_recv()?.is_some() {}
        Ok((Instant::now(), link.stats().bytes_received))
    };
    let mut window_open = None;
    let mut window_closed = None;
    while Instant::now() < ends {
        if interrupted() {
            bail!("interrupted");
        }
        let now = Instant::now();
        if first_arrival.is_none() {
            let (at, bytes) = arrived()?;
            if bytes > base {
                first_arrival = Some(at);
            }
        }
        if window_open.is_none() && now >= opens {
            window_open = Some(arrived()?);
        }
        if window_closed.is_none() && now >= closes {
            window_closed = Some(arrived()?);
        }
        link.recv_timeout(Duration::from_millis(20))?;
    }
    let (opened_at, before) = window_open.context("the timed window never opened")?;
    let (closed_at, after) = window_closed.context("the timed window never closed")?;
    if after <= before {
        bail!("no message crossed the WAN in the {window:?} timed");
    }
    let bytes_per_s = (after - before) as f64 / (closed_at - opened_at).as_secs_f64();
    let first = first_arrival.context("nothing arrived before the timed window")?;
    let ramp_s = ramp_lag(
        opened_at.saturating_duration_since(first).as_secs_f64(),
        (before - base) as f64,
        bytes_per_s,
    );
    Ok(Received {
        bytes_per_s,
        ramp_s,
    })
}

/// Equation (170), what a link lost to its ramp: `L = t - D / R`, with `t` the seconds from
/// its first bytes received to a time past its ramp, `D` the bytes received by then and `R`
/// its steady rate. A link at its rate from its first byte loses nothing; the one-way delay
/// before the first byte is not counted here ((96) counts it).
pub(crate) fn ramp_lag(elapsed_s: f64, received_bytes: f64, bytes_per_s: f64) -> f64 {
    if bytes_per_s > 0.0 {
        (elapsed_s - received_bytes / bytes_per_s).max(0.0)
    } else {
        0.0
    }
}

/// Take what arrives for `time` (or until the peer closed the link).
fn linger(link: &BlockingLink, time: Duration) {
    let until = Instant::now() + time;
    while Instant::now() < until {
        if link.recv_timeout(Duration::from_millis(50)).is_err() {
            return;
        }
    }
}

/// The `hmw-wan-probe` results in a run's output.
pub(crate) fn results_in(output: &str) -> Result<Vec<ProbeResult>> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix(RESULT_PREFIX))
        .map(|json| {
            serde_json::from_str(json).with_context(|| format!("not a probe result: {json}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link at 1 MB/s from its first byte loses nothing; one that delivered 0.5 MB in its
    /// first second lost half a second.
    #[test]
    fn the_ramp_lag_is_the_time_not_delivered_at_the_rate() {
        assert_eq!(ramp_lag(1.0, 1e6, 1e6), 0.0);
        assert!((ramp_lag(1.0, 5e5, 1e6) - 0.5).abs() < 1e-12);
        assert_eq!(ramp_lag(1.0, 2e6, 1e6), 0.0);
        assert_eq!(ramp_lag(1.0, 5e5, 0.0), 0.0);
    }

    #[test]
    fn warmup_is_thirty_round_trips_at_least() {
        let one = Duration::from_secs(1);
        assert_eq!(warmup_for(one, 0.001), one);
        assert_eq!(warmup_for(one, 0.1), Duration::from_secs(3));
        assert_eq!(
            warmup_for(Duration::from_secs(5), 0.1),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn results_are_read_back_from_a_runs_output() {
        let result = ProbeResult {
            cm: "spain-lyon".into(),
            host: "spain-cm".into(),
            rtt_s: Some(0.04),
            received_bytes_per_s: 1.9e6,
            received_ramp_s: Some(0.05),
        };
        let output = format!(
            "some mpirun line\n{RESULT_PREFIX}{}\nother\n",
            serde_json::to_string(&result).unwrap()
        );
        assert_eq!(results_in(&output).unwrap(), [result]);
        assert!(results_in(&format!("{RESULT_PREFIX}{{bad")).is_err());
        assert!(results_in("nothing").unwrap().is_empty());
    }
}
