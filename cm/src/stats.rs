//! Link statistics: traffic each way, throughput (current and average), retransmissions,
//! packets lost, disconnections, outages with their wall-clock times, time disconnected and
//! reconnection latency.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Fill level of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct BufferUsage {
    /// Bytes in use.
    pub used: usize,
    /// Capacity in bytes.
    pub capacity: usize,
}

impl BufferUsage {
    /// Free bytes.
    pub fn free(&self) -> usize {
        self.capacity - self.used
    }

    /// Fraction in use, 0.0 to 1.0.
    pub fn fill(&self) -> f64 {
        if self.capacity == 0 {
            0.0
        } else {
            self.used as f64 / self.capacity as f64
        }
    }
}

/// Outages kept in [`LinkStats::outages`] (the most recent ones).
pub const MAX_OUTAGES_KEPT: usize = 100;

/// A period when the link had no connection at all, in wall-clock time (seconds since the
/// UNIX epoch): from the moment the link noticed its last connection was gone to the moment a
/// connection joined again.
///
/// The times are the wall clock read once when the link started plus the monotonic time
/// elapsed since: spans never jump or run backwards, and their durations are exact, but after
/// the system clock is stepped (NTP correcting it, an administrator setting it) they are off
/// from the wall clock by that step, as if it had not happened.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct OutageSpan {
    /// When the last connection was declared dead (the network may have failed up to one
    /// inactivity timeout earlier).
    pub start_unix_s: f64,
    /// When a connection joined again (TLS and hello done); `None` while still down.
    pub end_unix_s: Option<f64>,
}

/// The link's own sizing: QUIC flow-control windows and buffer memory, which start small and
/// grow with the traffic (see [`crate::tuning`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct WindowStats {
    /// Receive windows of the connections at the start: `window` x `connections`.
    pub receive_window_initial_total: u64,
    /// Receive windows of the connections open now, summed.
    pub receive_window_total: u64,
    /// The largest `receive_window_total` seen.
    pub receive_window_peak_total: u64,
    /// Largest window of one connection (`max_window`).
    pub receive_window_max: u64,
    /// Send windows of the connections open now, summed.
    pub send_window_total: u64,
    /// Largest round trip among the connections, milliseconds (smoothed; 0 before any).
    pub rtt_ms: f64,
    /// Congestion windows of the connections open now, summed (bytes).
    pub congestion_window_total: u64,
    /// The most this side carried in one round trip over a tuning period (bytes, both
    /// directions apart, the larger): the bandwidth-delay product it measured.
    pub bdp_peak_bytes: u64,
    /// Send and receive buffer capacities at the start, summed.
    pub memory_initial: u64,
    /// Buffer capacities now plus the receive windows: what the bound limits.
    pub memory_used: u64,
    /// The bound (`max_memory`).
    pub memory_limit: u64,
}

/// The connection count the link aimed at from a moment on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ConnectionCount {
    /// Seconds since the link started.
    pub t_s: f64,
    /// Connections wanted from then on.
    pub count: usize,
    /// Why: `start`, `probe` (backlog and loss: more tried), `revert` (they did not raise the
    /// goodput), `probe_fewer` (no loss: one fewer tried), `idle` (the application did not use
    /// them).
    pub reason: &'static str,
}

/// Connection-count changes kept in [`LinkStats::connection_counts`] (the most recent).
pub const MAX_COUNT_CHANGES_KEPT: usize = 100;

/// A snapshot of a link's statistics (serialisable for reports).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LinkStats {
    /// Seconds since the link was started.
    pub elapsed_s: f64,
    /// When its first connection joined, in seconds since the UNIX epoch (none yet: `None`).
    pub first_connected_unix_s: Option<f64>,
    /// Messages accepted into the send buffer (`send`, `send_bytes`, `try_send`...).
    pub messages_sent: u64,
    /// Message bytes accepted into the send buffer: counted when `send` returns, before they
    /// are transmitted or acknowledged (without the 4-byte length prefixes). Messages later
    /// dropped because the peer restarted are included
    /// (see [`bytes_dropped_on_peer_restart`](Self::bytes_dropped_on_peer_restart)).
    pub bytes_sent: u64,
    /// Messages handed to the application by `recv` / `try_recv`.
    pub messages_received: u64,
    /// Message bytes handed to the application by `recv` / `try_recv`.
    pub bytes_received: u64,
    /// Bytes per second accepted by `send` over about the last second.
    pub send_rate_current: f64,
    /// Bytes per second returned by `recv` over about the last second.
    pub recv_rate_current: f64,
    /// Bytes per second accepted by `send` since the start.
    pub send_rate_average: f64,
    /// Bytes per second returned by `recv` since the start.
    pub recv_rate_average: f64,
    /// Block transmissions (first sends and resends).
    pub blocks_sent: u64,
    /// Blocks sent again after the connection carrying them died.
    pub blocks_retransmitted: u64,
    /// Duplicate blocks received and dropped.
    pub duplicate_blocks: u64,
    /// Connections currently joined (handshake and hello done).
    pub connections_open: usize,
    /// Connections joined since the start.
    pub connections_established: u64,
    /// Joined connections that died or were closed.
    pub connections_lost: u64,
    /// Connections that joined again after a connection was lost (not closed on purpose):
    /// what losses cost in reconnections.
    pub reconnections: u64,
    /// Connections closed because the link needed fewer (included in `connections_lost`).
    pub connections_retired: u64,
    /// Connections the link aims at now (a client adapts it; a server counts those open).
    pub connections_target: usize,
    /// When the aimed-at connection count changed (a client's; the last
    /// [`MAX_COUNT_CHANGES_KEPT`], the start first).
    pub connection_counts: Vec<ConnectionCount>,
    /// Flow-control windows and buffer memory as sized so far.
    pub windows: WindowStats,
    /// Connections this side refused in the TLS handshake: on a server, incoming connections
    /// whose client certificate is not trusted, does not carry the expected `peer` name, or
    /// that speak another ALPN; on a client, servers whose certificate it did not accept.
    /// A bad hello is not counted here but in `protocol_errors`.
    pub connections_refused: u64,
    /// Connections this side closed for a protocol violation (a bad hello, a frame that does
    /// not decode, a replayed block, ...).
    pub protocol_errors: u64,
    /// Packets QUIC declared lost (and retransmitted) on the link's connections, summed over
    /// all of them since the start, closed ones included.
    pub packets_lost: u64,
    /// Times the link went from at least one connection to none.
    pub disconnections: u64,
    /// Seconds with no connection since the first connection, including an ongoing outage.
    pub time_disconnected_s: f64,
    /// Seconds since the link last had a connection (or since the start if it never had one);
    /// `None` while connected.
    pub disconnected_for_s: Option<f64>,
    /// Duration of the last completed outage, seconds: from the moment the link noticed it
    /// had no connection left (its last connection declared dead, up to one inactivity
    /// timeout after the network failed) until a connection joined again (QUIC, TLS and hello
    /// done). It spans the whole outage as the link saw it, reconnection backoff included,
    /// not only the final reconnection handshake.
    pub last_reconnect_latency_s: Option<f64>,
    /// Longest completed outage, seconds (measured as `last_reconnect_latency_s`).
    pub max_reconnect_latency_s: Option<f64>,
    /// The last [`MAX_OUTAGES_KEPT`] outages, oldest first (the waiting before the first
    /// connection ever joined is not an outage).
    pub outages: Vec<OutageSpan>,
    /// Times the peer turned out to be a new incarnation.
    pub peer_restarts: u64,
    /// Send-buffer bytes dropped because their addressee restarted.
    pub bytes_dropped_on_peer_restart: u64,
    /// Send buffer fill.
    pub send_buffer: BufferUsage,
    /// Receive buffer fill.
    pub recv_buffer: BufferUsage,
}

/// Connection and outage bookkeeping (the driver's part of the statistics).
#[derive(Debug)]
pub struct ConnectionTimeline {
    started: Instant,
    /// `started` in seconds since the UNIX epoch.
    started_unix_s: f64,
    outages: VecDeque<OutageSpan>,
    joined: usize,
    /// When the first connection joined.
    first_joined: Option<Instant>,
    down_since: Option<Instant>,
    time_disconnected: Duration,
    last_outage: Option<Duration>,
    max_outage: Option<Duration>,
    /// Connections joined since the start.
    pub established: u64,
    /// Joined connections lost.
    pub lost: u64,
    /// Incoming connections refused.
    pub refused: u64,
    /// Connections closed for protocol errors.
    pub protocol_errors: u64,
    /// Link-down events.
    pub disconnections: u64,
    /// Packets lost on connections that have ended.
    pub packets_lost_on_closed: u64,
    /// Packets sent on connections that have ended.
    pub packets_sent_on_closed: u64,
    /// Connections retired.
    pub retired: u64,
    /// Connections joined again after a loss.
    pub reconnections: u64,
    /// Losses not yet made up by a join.
    rejoins_due: u64,
    samples: VecDeque<(Instant, u64, u64)>,
}

impl ConnectionTimeline {
    /// Starts the clock.
    pub fn new(now: Instant) -> Self {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        Self::with_wall_clock(now, unix)
    }

    /// Starts the clock at `now`, which is `unix_s` seconds since the UNIX epoch.
    pub fn with_wall_clock(now: Instant, unix_s: f64) -> Self {
        Self {
            started: now,
            started_unix_s: unix_s,
            outages: VecDeque::new(),
            joined: 0,
            first_joined: None,
            down_since: None,
            time_disconnected: Duration::ZERO,
            last_outage: None,
            max_outage: None,
            established: 0,
            lost: 0,
            refused: 0,
            protocol_errors: 0,
            disconnections: 0,
            packets_lost_on_closed: 0,
            packets_sent_on_closed: 0,
            retired: 0,
            reconnections: 0,
            rejoins_due: 0,
            samples: VecDeque::new(),
        }
    }

    /// A connection joined the session.
    pub fn joined(&mut self, now: Instant) {
        self.joined += 1;
        self.established += 1;
        self.first_joined.get_or_insert(now);
        if self.rejoins_due > 0 {
            self.rejoins_due -= 1;
            self.reconnections += 1;
        }
        if let Some(since) = self.down_since.take() {
            let outage = now - since;
            self.time_disconnected += outage;
            self.last_outage = Some(outage);
            self.max_outage = Some(self.max_outage.map_or(outage, |m| m.max(outage)));
            let end = self.unix_s(now);
            if let Some(span) = self.outages.back_mut() {
                span.end_unix_s = Some(end);
            }
        }
    }

    fn unix_s(&self, t: Instant) -> f64 {
        self.started_unix_s + t.saturating_duration_since(self.started).as_secs_f64()
    }

    /// A joined connection ended; `closing` when the link itself is shutting down, `retired`
    /// when one side closed it because the link needed fewer connections (neither is made up
    /// by a reconnection).
    pub fn left(&mut self, now: Instant, closing: bool, retired: bool) {
        self.joined = self.joined.saturating_sub(1);
        self.lost += 1;
        if retired {
            self.retired += 1;
        } else if !closing {
            self.rejoins_due += 1;
        }
        if self.joined == 0 && !closing {
            self.disconnections += 1;
            self.down_since = Some(now);
            if self.outages.len() == MAX_OUTAGES_KEPT {
                self.outages.pop_front();
            }
            self.outages.push_back(OutageSpan {
                start_unix_s: self.unix_s(now),
                end_unix_s: None,
            });
        }
    }

    /// Time since the link started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Connections currently joined.
    pub fn open(&self) -> usize {
        self.joined
    }

    /// Records cumulative byte counters for the current-rate estimate (call periodically).
    pub fn sample(&mut self, now: Instant, sent: u64, received: u64) {
        self.samples.push_back((now, sent, received));
        while self
            .samples
            .front()
            .is_some_and(|&(t, _, _)| now - t > Duration::from_secs(2))
        {
            self.samples.pop_front();
        }
    }

    /// Rates (sent, received) in bytes per second over about the last second.
    fn current_rates(&self, now: Instant, sent: u64, received: u64) -> (f64, f64) {
        let base = self
            .samples
            .iter()
            .find(|&&(t, _, _)| now - t <= Duration::from_millis(1100))
            .or(self.samples.front());
        match base {
            Some(&(t, s, r)) if now > t => {
                let dt = (now - t).as_secs_f64();
                ((sent - s) as f64 / dt, (received - r) as f64 / dt)
            }
            _ => (0.0, 0.0),
        }
    }

    /// Fills the timing and connection fields of `stats` (which has the byte counters set).
    pub fn fill(&self, now: Instant, stats: &mut LinkStats) {
        let elapsed = (now - self.started).as_secs_f64();
        stats.elapsed_s = elapsed;
        let (send_now, recv_now) = self.current_rates(now, stats.bytes_sent, stats.bytes_received);
        stats.send_rate_current = send_now;
        stats.recv_rate_current = recv_now;
        if elapsed > 0.0 {
            stats.send_rate_average = stats.bytes_sent as f64 / elapsed;
            stats.recv_rate_average = stats.bytes_received as f64 / elapsed;
        }
        stats.connections_open = self.joined;
        stats.connections_established = self.established;
        stats.connections_lost = self.lost;
        stats.connections_retired = self.retired;
        stats.reconnections = self.reconnections;
        stats.connections_refused = self.refused;
        stats.protocol_errors = self.protocol_errors;
        stats.disconnections = self.disconnections;
        let ongoing = self.down_since.map_or(Duration::ZERO, |since| now - since);
        stats.time_disconnected_s = (self.time_disconnected + ongoing).as_secs_f64();
        stats.disconnected_for_s = self.disconnected_for(now).map(|d| d.as_secs_f64());
        stats.last_reconnect_latency_s = self.last_outage.map(|d| d.as_secs_f64());
        stats.max_reconnect_latency_s = self.max_outage.map(|d| d.as_secs_f64());
        stats.outages = self.outages.iter().copied().collect();
        stats.first_connected_unix_s = self.first_joined.map(|t| self.unix_s(t));
    }

    /// How long the link has been without any connection (since the start if it never had
    /// one); `None` while connected.
    pub fn disconnected_for(&self, now: Instant) -> Option<Duration> {
        if self.joined > 0 {
            None
        } else {
            Some(now - self.down_since.unwrap_or(self.started))
        }
    }

    /// Whether any connection ever joined.
    pub fn ever_joined(&self) -> bool {
        self.first_joined.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_timed_from_last_loss_to_next_join() {
        let t0 = Instant::now();
        let mut t = ConnectionTimeline::new(t0);
        assert_eq!(
            t.disconnected_for(t0 + Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
        t.joined(t0);
        t.joined(t0);
        t.left(t0 + Duration::from_secs(1), false, false);
        assert_eq!(t.disconnections, 0);
        t.left(t0 + Duration::from_secs(2), false, false);
        assert_eq!(t.disconnections, 1);
        assert_eq!(
            t.disconnected_for(t0 + Duration::from_secs(4)),
            Some(Duration::from_secs(2))
        );
        t.joined(t0 + Duration::from_secs(5));
        let mut stats = empty_stats();
        t.fill(t0 + Duration::from_secs(6), &mut stats);
        assert_eq!(stats.last_reconnect_latency_s, Some(3.0));
        assert_eq!(
            stats.first_connected_unix_s,
            Some(t.unix_s(t0)),
            "the first join, not the latest"
        );
        assert_eq!(stats.time_disconnected_s, 3.0);
        assert_eq!(stats.disconnected_for_s, None);
        t.left(t0 + Duration::from_secs(7), true, false);
        assert_eq!(t.disconnections, 1, "closing the link is no disconnection");
    }

    #[test]
    fn outages_carry_wall_clock_times_and_only_the_last_hundred_are_kept() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut t = ConnectionTimeline::with_wall_clock(t0, 1_000.0);
        let mut stats = empty_stats();
        // Waiting for the first connection is no outage.
        t.fill(at(3), &mut stats);
        assert!(stats.outages.is_empty());
        t.joined(at(3));
        t.fill(at(4), &mut stats);
        assert!(stats.outages.is_empty());
        t.left(at(10), false, false);
        t.fill(at(11), &mut stats);
        assert_eq!(
            stats.outages,
            vec![OutageSpan {
                start_unix_s: 1_010.0,
                end_unix_s: None
            }]
        );
        t.joined(at(14));
        t.joined(at(15));
        t.fill(at(16), &mut stats);
        assert_eq!(stats.outages[0].end_unix_s, Some(1_014.0));
        assert_eq!(stats.last_reconnect_latency_s, Some(4.0));
        // One connection of two lost is no outage; closing the link is none either.
        t.left(at(20), false, false);
        t.joined(at(21));
        t.left(at(22), true, false);
        t.left(at(23), true, false);
        t.fill(at(24), &mut stats);
        assert_eq!(stats.outages.len(), 1);
        for i in 0..150 {
            t.joined(at(100 + 2 * i));
            t.left(at(101 + 2 * i), false, false);
        }
        t.fill(at(1_000), &mut stats);
        assert_eq!(stats.outages.len(), MAX_OUTAGES_KEPT);
        assert_eq!(stats.disconnections, 151);
        let last = stats.outages.last().unwrap();
        assert_eq!((last.start_unix_s, last.end_unix_s), (1_399.0, None));
        assert_eq!(stats.outages[0].start_unix_s, 1_201.0);
        assert_eq!(stats.outages[0].end_unix_s, Some(1_202.0));
    }

    #[test]
    fn current_rate_uses_the_last_second() {
        let t0 = Instant::now();
        let mut t = ConnectionTimeline::new(t0);
        t.sample(t0, 0, 0);
        t.sample(t0 + Duration::from_secs(1), 1000, 0);
        let mut stats = empty_stats();
        stats.bytes_sent = 3000;
        t.fill(t0 + Duration::from_secs(2), &mut stats);
        assert_eq!(stats.send_rate_current, 2000.0);
        assert_eq!(stats.send_rate_average, 1500.0);
    }

    #[test]
    fn reconnections_count_joins_that_make_up_for_losses_only() {
        let t0 = Instant::now();
        let mut t = ConnectionTimeline::new(t0);
        t.joined(t0);
        t.joined(t0);
        t.left(t0, false, false);
        t.joined(t0);
        t.left(t0, false, true);
        t.joined(t0);
        t.left(t0, true, false);
        let mut stats = empty_stats();
        t.fill(t0, &mut stats);
        assert_eq!(stats.reconnections, 1);
        assert_eq!(stats.connections_retired, 1);
        assert_eq!(stats.connections_lost, 3);
    }

    fn empty_stats() -> LinkStats {
        LinkStats::default()
    }
}
