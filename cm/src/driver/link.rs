//! The async link API.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{debug, info, warn};

use super::connection::{run_connection, Ended, Side};
use super::endpoint::{client_endpoint, server_endpoint, Reach};
use super::error::{LinkError, TrySendError};
use super::shared::{close_code, printable, shared_arc, wait_for, Shared};
use super::tuner::{tune, TICK};
use crate::config::{ConfigError, LinkConfig, Role};
use crate::stats::{BufferUsage, ConnectionCount, LinkStats, MAX_COUNT_CHANGES_KEPT};
use crate::tls::{check_server_name, TlsMaterial};
use crate::tuning::{stripe_epoch, StripePolicy, StripeSample, StripeState};
use hmw_cm_proto::PushError;

/// A reliable, ordered, buffered message link to one peer, striped over several QUIC
/// connections and streams, surviving disconnections of any length.
///
/// Messages are delivered exactly once and in send order. `send` returns as soon as the
/// message is in the send buffer; the receive side keeps receiving into its buffer whether
/// or not the application reads. Create it from within a tokio runtime (or use
/// [`BlockingLink`](super::BlockingLink) from plain threads).
pub struct Link {
    shared: Arc<Shared>,
    endpoint: quinn::Endpoint,
    local_addr: SocketAddr,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("role", &self.shared.config.role)
            .field("local_addr", &self.local_addr)
            .field("session", &self.session())
            .finish()
    }
}

impl Link {
    /// Starts the link: a server listens on `host:port`, a client connects `connections`
    /// connections to it and keeps reconnecting with backoff. Returns at once; messages sent
    /// before the peer is reached wait in the send buffer.
    pub async fn start(config: LinkConfig) -> Result<Self, LinkError> {
        config.validate()?;
        let config = config.warmed();
        for warning in config.warnings() {
            warn!("link configuration: {warning}");
        }
        let tls = TlsMaterial::load(&config.tls)?;
        let session = rand::random::<u64>() | 1;
        let role = config.role;
        let shared = shared_arc(config, session);
        let mut tasks = Vec::new();
        let endpoint = match role {
            Role::Server => {
                // Resolved without blocking the runtime (an IP address is taken as it is).
                let addr = lookup(&shared.config)
                    .await
                    .map_err(|reason| ConfigError::Resolve {
                        host: shared.config.host.clone(),
                        port: shared.config.port,
                        reason,
                    })?[0];
                let endpoint = server_endpoint(&shared.config, &tls, addr)?;
                tasks.push(tokio::spawn(accept_loop(shared.clone(), endpoint.clone())));
                endpoint
            }
            Role::Client => {
                check_server_name(shared.config.server_name())?;
                // Nothing is resolved here: a server name that does not resolve now may
                // resolve later (or only on the real cluster), and a slow resolver must not
                // hold up the start. The connection slots resolve it at every attempt.
                let (endpoint, client, reach) = client_endpoint(&shared.config, &tls)?;
                tasks.push(tokio::spawn(stripes(
                    shared.clone(),
                    endpoint.clone(),
                    client,
                    reach,
                )));
                endpoint
            }
        };
        tasks.push(tokio::spawn(sample_rates(shared.clone())));
        tasks.push(tokio::spawn(tune(shared.clone())));
        let local_addr = endpoint.local_addr().map_err(|cause| LinkError::Bind {
            addr: ([0, 0, 0, 0], 0).into(),
            cause,
        })?;
        info!(?role, %local_addr, session = format_args!("{session:016x}"), "link started");
        Ok(Self {
            shared,
            endpoint,
            local_addr,
            tasks: Mutex::new(tasks),
        })
    }

    /// The local UDP address (a server's actual port when configured with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// This side's session identity (random per start; a peer seeing it change knows we
    /// restarted).
    pub fn session(&self) -> u64 {
        self.shared.core().session()
    }

    /// The peer's session identity, once a connection joined.
    pub fn peer_session(&self) -> Option<u64> {
        self.shared.core().peer_session()
    }

    /// The configuration in use (its windows as warmed from its path hint).
    pub fn config(&self) -> &LinkConfig {
        &self.shared.config
    }

    /// Queues a message, waiting while the send buffer lacks room for it.
    pub async fn send(&self, message: &[u8]) -> Result<(), LinkError> {
        wait_for(&self.shared.space, || match self.try_send(message) {
            Ok(()) => Some(Ok(())),
            Err(TrySendError::Full { .. }) => None,
            Err(TrySendError::Link(e)) => Some(Err(e)),
        })
        .await
    }

    /// Queues a message without copying it (messages of at least 16 KiB are kept as they
    /// are until acknowledged), waiting while the send buffer lacks room for it.
    pub async fn send_bytes(&self, message: Bytes) -> Result<(), LinkError> {
        wait_for(&self.shared.space, || {
            match self.try_send_bytes(message.clone()) {
                Ok(()) => Some(Ok(())),
                Err(TrySendError::Full { .. }) => None,
                Err(TrySendError::Link(e)) => Some(Err(e)),
            }
        })
        .await
    }

    /// Queues a message without copying it, if the send buffer has room for it now.
    pub fn try_send_bytes(&self, message: Bytes) -> Result<(), TrySendError> {
        self.try_push(|core| core.push_message_bytes(message))
    }

    /// Queues a message if the send buffer has room for it now.
    pub fn try_send(&self, message: &[u8]) -> Result<(), TrySendError> {
        self.try_push(|core| core.push_message(message))
    }

    fn try_push(
        &self,
        push: impl FnOnce(&mut hmw_cm_proto::Core) -> Result<(), PushError>,
    ) -> Result<(), TrySendError> {
        if self.shared.is_closing() {
            return Err(LinkError::Closed.into());
        }
        match push(&mut self.shared.core()) {
            Ok(()) => {}
            Err(PushError::Full { needed, free }) => {
                return Err(TrySendError::Full { needed, free })
            }
            Err(PushError::TooLarge { size, max }) => {
                return Err(LinkError::MessageTooLarge { size, max }.into())
            }
        }
        self.shared.transmit.notify_waiters();
        Ok(())
    }

    /// The next message, in send order, waiting for one to arrive. Fails with
    /// [`LinkError::PeerClosed`] once the peer closed the link and everything it sent was
    /// received.
    pub async fn recv(&self) -> Result<Bytes, LinkError> {
        wait_for(&self.shared.arrived, || self.try_recv().transpose()).await
    }

    /// The next message if one is waiting.
    pub fn try_recv(&self) -> Result<Option<Bytes>, LinkError> {
        if self.shared.is_closing() {
            return Err(LinkError::Closed);
        }
        let mut core = self.shared.core();
        if let Some(message) = core.pop_message() {
            drop(core);
            self.shared.ack_due.notify_waiters();
            return Ok(Some(message));
        }
        if let Some(failure) = core.receiver().failure() {
            return Err(LinkError::Failed(failure.to_string()));
        }
        if self.shared.peer_closed.load(Ordering::Acquire) && core.joined_connections() == 0 {
            return Err(LinkError::PeerClosed);
        }
        Ok(None)
    }

    /// Waits until every message sent so far is acknowledged by the peer (held in its
    /// receive buffer).
    pub async fn flush(&self) -> Result<(), LinkError> {
        wait_for(&self.shared.space, || {
            if self.shared.is_closing() {
                Some(Err(LinkError::Closed))
            } else if self.shared.core().sender().is_drained() {
                Some(Ok(()))
            } else {
                None
            }
        })
        .await
    }

    /// Waits until at least one connection has joined.
    pub async fn wait_connected(&self) -> Result<(), LinkError> {
        wait_for(&self.shared.joined, || {
            if self.shared.is_closing() {
                Some(Err(LinkError::Closed))
            } else if self.shared.timeline().open() > 0 {
                Some(Ok(()))
            } else {
                None
            }
        })
        .await
    }

    /// Waits until the send buffer has at least `bytes` free (at once if it has): the
    /// master-side CM asks for the next task when this returns.
    pub async fn wait_for_space(&self, bytes: usize) -> Result<(), LinkError> {
        wait_for(&self.shared.space, || {
            if self.shared.is_closing() {
                Some(Err(LinkError::Closed))
            } else if self.shared.core().sender().free() >= bytes {
                Some(Ok(()))
            } else {
                None
            }
        })
        .await
    }

    /// How long the link has been without any connection (since the start if it never had
    /// one); `None` while connected. A CM gives up on a peer when this passes its deadline.
    pub fn disconnected_for(&self) -> Option<Duration> {
        self.shared.timeline().disconnected_for(Instant::now())
    }

    /// Whether at least one connection is joined now.
    pub fn is_connected(&self) -> bool {
        self.shared.timeline().open() > 0
    }

    /// Send buffer fill: the CM keeps requesting tasks while `free()` has room.
    pub fn send_buffer(&self) -> BufferUsage {
        let core = self.shared.core();
        BufferUsage {
            used: core.sender().used(),
            capacity: core.sender().capacity(),
        }
    }

    /// Receive buffer fill.
    pub fn recv_buffer(&self) -> BufferUsage {
        let core = self.shared.core();
        BufferUsage {
            used: core.receiver().buffered(),
            capacity: core.receiver().capacity(),
        }
    }

    /// Largest message `send` accepts.
    pub fn max_message(&self) -> usize {
        self.shared.config.max_message()
    }

    /// A snapshot of the statistics.
    pub fn stats(&self) -> LinkStats {
        let mut stats = {
            let core = self.shared.core();
            let counters = core.counters();
            LinkStats {
                messages_sent: counters.messages_pushed,
                bytes_sent: counters.bytes_pushed,
                messages_received: counters.messages_popped,
                bytes_received: counters.bytes_popped,
                blocks_sent: core.sender().blocks_sent(),
                blocks_retransmitted: core.sender().blocks_retransmitted(),
                duplicate_blocks: core.receiver().duplicates(),
                peer_restarts: counters.peer_restarts,
                bytes_dropped_on_peer_restart: counters.bytes_dropped_on_peer_restart,
                send_buffer: BufferUsage {
                    used: core.sender().used(),
                    capacity: core.sender().capacity(),
                },
                recv_buffer: BufferUsage {
                    used: core.receiver().buffered(),
                    capacity: core.receiver().capacity(),
                },
                ..LinkStats::default()
            }
        };
        {
            let sizing = self.shared.sizing();
            stats.windows = sizing.windows;
            stats.connection_counts = sizing.counts.iter().copied().collect();
            stats.connections_target = sizing.target.unwrap_or(0);
        }
        let connections = self.shared.connections.lock().expect("connections lock");
        let lost_on_live: u64 = connections
            .values()
            .map(|conn| conn.stats().path.lost_packets)
            .sum();
        let timeline = self.shared.timeline();
        timeline.fill(Instant::now(), &mut stats);
        stats.packets_lost = timeline.packets_lost_on_closed + lost_on_live;
        if self.shared.config.role == Role::Server {
            stats.connections_target = stats.connections_open;
        }
        stats
    }

    /// Closes every connection at once as if it had failed: their unacknowledged blocks are
    /// sent again on the connections that replace them (a client reconnects at once; a
    /// server's peer does). Nothing is lost; it costs a reconnection and a resend, as a
    /// connection dying under load does. For tests and for an operator who wants fresh
    /// connections (new addresses of the server's name, say).
    pub fn reset_connections(&self) {
        self.close_connections(close_code::RESET, b"connections reset");
    }

    /// Closes every open connection with `code` and `reason`.
    fn close_connections(&self, code: u32, reason: &[u8]) {
        for conn in self
            .shared
            .connections
            .lock()
            .expect("connections lock")
            .values()
        {
            conn.close(code.into(), reason);
        }
    }

    /// Closes the link: connections are closed (the peer sees a deliberate close and stops
    /// reconnecting), pending operations fail with [`LinkError::Closed`]. Unacknowledged
    /// messages are dropped: call [`flush`](Self::flush) first to deliver them.
    pub async fn close(&self) {
        self.begin_close();
        let _ = tokio::time::timeout(Duration::from_secs(1), self.endpoint.wait_idle()).await;
        self.abort_tasks();
    }

    fn begin_close(&self) {
        if self.shared.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shared.wake_all();
        self.close_connections(close_code::LINK_CLOSED, b"link closed");
        self.endpoint
            .close(close_code::LINK_CLOSED.into(), b"link closed");
    }

    fn abort_tasks(&self) {
        for task in self.tasks.lock().expect("tasks lock").drain(..) {
            task.abort();
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.begin_close();
        self.abort_tasks();
    }
}

/// Whether a handshake ended because this side's TLS refused the peer (untrusted or
/// unexpected certificate, wrong ALPN): quinn reports a local TLS alert as a transport error
/// with a crypto error code.
fn refused_by_us(error: &quinn::ConnectionError) -> bool {
    matches!(error, quinn::ConnectionError::TransportError(e)
        if (0x100..0x200).contains(&u64::from(e.code)))
}

/// A connection counted against `max_connections` until dropped.
struct Admitted(Arc<AtomicUsize>);

impl Admitted {
    /// A place among at most `max` connections, if one is free.
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(count.clone()))
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Server: accepts connections; a peer whose certificate is refused is logged with its
/// address and never reaches the protocol. At most `max_connections` certified connections
/// are served at once (a client of this link opens `connections` of them; clients of another
/// session are taken for a restart of the peer, which is what the expected `peer` name guards
/// against); one more is closed at once, logged and counted as refused.
async fn accept_loop(shared: Arc<Shared>, endpoint: quinn::Endpoint) {
    let admitted = Arc::new(AtomicUsize::new(0));
    let max = shared.config.max_connections();
    while let Some(incoming) = endpoint.accept().await {
        let shared = shared.clone();
        let admitted = admitted.clone();
        tokio::spawn(async move {
            let remote = incoming.remote_address();
            match incoming.await {
                Ok(conn) => {
                    let Some(_place) = Admitted::take(&admitted, max) else {
                        if !shared.is_closing() {
                            warn!(peer = %remote, "refused connection from {remote}: {max} connections served already (max_connections)");
                            shared.timeline().refused += 1;
                        }
                        conn.close(
                            close_code::TOO_MANY_CONNECTIONS.into(),
                            b"too many connections (max_connections)",
                        );
                        return;
                    };
                    run_connection(&shared, conn, Side::Server, None).await;
                }
                Err(e) if refused_by_us(&e) && !shared.is_closing() => {
                    let e = printable(&e.to_string()).into_owned();
                    warn!(peer = %remote, "refused connection from {remote}: {e}");
                    shared.timeline().refused += 1;
                }
                Err(e) => {
                    let e = printable(&e.to_string()).into_owned();
                    debug!(peer = %remote, "handshake with {remote} did not complete: {e}");
                }
            }
        });
    }
}

/// Why a connection attempt failed.
enum AttemptError {
    /// The server's host name does not resolve (now).
    Resolve(String),
    /// quinn refused to start the attempt.
    Connect(SocketAddr, String),
    /// The handshake failed.
    Handshake(SocketAddr, quinn::ConnectionError),
}

/// Which of the server's addresses a connection slot tries: the one it used last while that
/// works, the next one in the resolver's list after a failure (a name with an address that
/// does not answer, an IPv6 one on a host without an IPv6 route say, is not retried forever).
#[derive(Debug, Default)]
struct Rotation {
    current: Option<SocketAddr>,
    advance: bool,
}

impl Rotation {
    /// The address to try now among `addresses` (as just resolved), skipping those of a
    /// family the client socket cannot reach.
    fn pick(&mut self, addresses: &[SocketAddr], reach: Reach) -> Result<SocketAddr, String> {
        let usable: Vec<SocketAddr> = addresses
            .iter()
            .copied()
            .filter(|a| reach.reaches(a))
            .collect();
        if usable.is_empty() {
            return Err(format!(
                "no address of a family the client socket reaches ({reach:?}) among {addresses:?}"
            ));
        }
        let position = self
            .current
            .and_then(|current| usable.iter().position(|&a| a == current));
        let chosen = match position {
            Some(i) if self.advance => usable[(i + 1) % usable.len()],
            Some(i) => usable[i],
            None => usable[0],
        };
        self.current = Some(chosen);
        self.advance = false;
        Ok(chosen)
    }

    /// The last address picked failed: the next pick moves on.
    fn failed(&mut self) {
        self.advance = true;
    }
}

/// The addresses of `host:port` (an IP address as it is; a name through the system's
/// resolver, without blocking the runtime); never empty.
async fn lookup(config: &LinkConfig) -> Result<Vec<SocketAddr>, String> {
    if let Ok(ip) = config.host.parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, config.port)]);
    }
    let addresses: Vec<SocketAddr> = tokio::net::lookup_host((config.host.as_str(), config.port))
        .await
        .map_err(|e| e.to_string())?
        .collect();
    if addresses.is_empty() {
        return Err("no address".into());
    }
    Ok(addresses)
}

/// Client: keeps connection number `index` up, reconnecting with exponential backoff, until
/// `retire` is set (then its connection is closed once its blocks are acknowledged).
async fn client_slot(
    shared: Arc<Shared>,
    endpoint: quinn::Endpoint,
    client: quinn::ClientConfig,
    reach: Reach,
    index: u32,
    retire: Arc<AtomicBool>,
) {
    let initial = Duration::from_millis(shared.config.reconnect_initial_ms);
    let max = Duration::from_millis(shared.config.reconnect_max_ms);
    let attempt_timeout = shared.config.inactivity_timeout() * 2;
    let host = shared.config.host.clone();
    let mut backoff = initial;
    let mut failures = 0u64;
    let mut rotation = Rotation::default();
    while !shared.is_closing() && !retire.load(Ordering::Acquire) {
        let attempt = async {
            let addresses = lookup(&shared.config)
                .await
                .map_err(AttemptError::Resolve)?;
            let server = rotation
                .pick(&addresses, reach)
                .map_err(AttemptError::Resolve)?;
            let connecting = endpoint
                .connect_with(client.clone(), server, shared.config.server_name())
                .map_err(|e| AttemptError::Connect(server, e.to_string()))?;
            connecting
                .await
                .map_err(|e| AttemptError::Handshake(server, e))
        };
        let result = tokio::time::timeout(attempt_timeout, attempt).await;
        if shared.is_closing() {
            // An attempt cut short by the link's end is no failure to report.
            return;
        }
        match result {
            Ok(Ok(conn)) => {
                let began = Instant::now();
                match run_connection(&shared, conn, Side::Client { index }, Some(retire.clone()))
                    .await
                {
                    Ended::PeerClosed | Ended::Closing | Ended::Retired => return,
                    // A connection that served a while earns an immediate retry; one refused
                    // at once (incompatible peer, protocol error) keeps backing off.
                    Ended::Lost { joined } => {
                        if joined && began.elapsed() >= Duration::from_secs(1) {
                            backoff = initial;
                            failures = 0;
                        }
                        if !joined {
                            rotation.failed();
                        }
                    }
                }
            }
            Ok(Err(AttemptError::Resolve(reason))) => {
                failures += 1;
                // Every failure is logged (by the first slot; the others would repeat it).
                if index == 0 {
                    warn!(%host, "cannot resolve the server `{host}`: {reason}; retrying in {backoff:?}");
                } else {
                    debug!(%host, connection = index, "cannot resolve the server `{host}`: {reason}");
                }
            }
            Ok(Err(AttemptError::Handshake(server, e))) if refused_by_us(&e) => {
                failures += 1;
                rotation.failed();
                // The names of the server's certificate are in the message, as it wrote them.
                let e = printable(&e.to_string()).into_owned();
                if !shared.is_closing() {
                    shared.timeline().refused += 1;
                    warn!(%server, connection = index, "refused server {server}: {e}; retrying");
                }
            }
            Ok(Err(AttemptError::Connect(server, reason))) => {
                failures += 1;
                rotation.failed();
                warn!(%server, connection = index, "cannot connect: {reason}; retrying");
            }
            Ok(Err(AttemptError::Handshake(server, e))) => {
                failures += 1;
                rotation.failed();
                let e = printable(&e.to_string()).into_owned();
                if failures == 1 {
                    warn!(%server, connection = index, "cannot connect: {e}; retrying");
                } else {
                    debug!(%server, connection = index, "cannot connect: {e}");
                }
            }
            Err(_) => {
                failures += 1;
                rotation.failed();
                debug!(%host, connection = index, "connection attempt timed out");
            }
        }
        let _ = tokio::time::timeout(
            backoff,
            wait_for(&shared.shutdown, || shared.is_closing().then_some(())),
        )
        .await;
        backoff = (backoff * 2).min(max);
    }
}

/// Records a change of the connection count for the statistics.
fn record_count(shared: &Shared, count: usize, reason: &'static str) {
    let t_s = shared.timeline().elapsed().as_secs_f64();
    let mut sizing = shared.sizing();
    sizing.target = Some(count);
    if sizing.counts.len() == MAX_COUNT_CHANGES_KEPT {
        sizing.counts.pop_front();
    }
    sizing
        .counts
        .push_back(ConnectionCount { t_s, count, reason });
}

/// Packets (lost, sent) on all the link's connections so far, closed ones included.
fn packet_totals(shared: &Shared) -> (u64, u64) {
    let connections = shared.connections.lock().expect("connections lock");
    let (mut lost, mut sent) = connections.values().fold((0, 0), |(l, s), conn| {
        let path = conn.stats().path;
        (l + path.lost_packets, s + path.sent_packets)
    });
    let timeline = shared.timeline();
    lost += timeline.packets_lost_on_closed;
    sent += timeline.packets_sent_on_closed;
    (lost, sent)
}

/// Loss rate from which a connection counts as held down by loss (a tenth of a per mille).
const LOSSY: f64 = 1e-4;

/// Client: runs the connection slots, as many as [`StripeState`] wants: one more slot is
/// started, or the newest one retired, at the end of an epoch as measured.
async fn stripes(
    shared: Arc<Shared>,
    endpoint: quinn::Endpoint,
    client: quinn::ClientConfig,
    reach: Reach,
) {
    let config = &shared.config;
    let policy = StripePolicy::new(config.connections_min(), config.connections_max());
    let mut state = StripeState::new(policy, config.connections);
    // Dropped with this task (the link's end): the slots end with it.
    let mut running = JoinSet::new();
    let mut slots: Vec<Arc<AtomicBool>> = Vec::new();
    let mut next_index = 0u32;
    let mut resize = |running: &mut JoinSet<()>, slots: &mut Vec<Arc<AtomicBool>>, n: usize| {
        while slots.len() < n {
            let retire = Arc::new(AtomicBool::new(false));
            running.spawn(client_slot(
                shared.clone(),
                endpoint.clone(),
                client.clone(),
                reach,
                next_index,
                retire.clone(),
            ));
            next_index += 1;
            slots.push(retire);
        }
        while slots.len() > n {
            let retire = slots.pop().expect("a slot");
            retire.store(true, Ordering::Release);
        }
    };
    resize(&mut running, &mut slots, state.target());
    record_count(&shared, state.target(), "start");
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut epoch_start: Option<(Instant, u64, (u64, u64))> = None;
    let (mut ticks, mut backlogged) = (0u32, 0u32);
    loop {
        tick.tick().await;
        while running.try_join_next().is_some() {}
        if policy.min == policy.max {
            continue;
        }
        let now = Instant::now();
        if shared.timeline().open() == 0 {
            // Nothing to judge during an outage: start the epoch again when connected.
            epoch_start = None;
            continue;
        }
        let (acked, unsent) = {
            let core = shared.core();
            (core.sender().acked_bytes(), core.sender().has_unsent())
        };
        let Some((started, acked_before, (lost_before, sent_before))) = epoch_start else {
            epoch_start = Some((now, acked, packet_totals(&shared)));
            (ticks, backlogged) = (0, 0);
            continue;
        };
        ticks += 1;
        backlogged += u32::from(unsent);
        let rtt = Duration::from_secs_f64(shared.sizing().windows.rtt_ms / 1e3);
        let elapsed = now - started;
        if elapsed < stripe_epoch(rtt) {
            continue;
        }
        let (lost, sent) = packet_totals(&shared);
        let (lost, sent) = (lost - lost_before, sent.saturating_sub(sent_before));
        let sample = StripeSample {
            goodput: (acked - acked_before) as f64 / elapsed.as_secs_f64(),
            backlogged: backlogged * 2 >= ticks,
            lossy: lost > 0 && lost as f64 >= LOSSY * sent as f64,
        };
        if let Some((count, reason)) = state.on_epoch(sample) {
            let reason = match reason {
                crate::tuning::StripeReason::Probe => "probe",
                crate::tuning::StripeReason::Revert => "revert",
                crate::tuning::StripeReason::ProbeFewer => "probe_fewer",
                crate::tuning::StripeReason::Idle => "idle",
            };
            info!(
                connections = count,
                reason,
                goodput_mbit = sample.goodput * 8e-6,
                "connection count changed"
            );
            resize(&mut running, &mut slots, count);
            record_count(&shared, count, reason);
        }
        epoch_start = Some((now, acked, packet_totals(&shared)));
        (ticks, backlogged) = (0, 0);
    }
}

/// Feeds the current-rate estimate.
async fn sample_rates(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        let counters = shared.core().counters();
        shared
            .timeline()
            .sample(Instant::now(), counters.bytes_pushed, counters.bytes_popped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_moves_to_the_next_address_after_a_failure_and_stays_on_one_that_works() {
        let dead: SocketAddr = "[::1]:7000".parse().unwrap();
        let good: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        let third: SocketAddr = "127.0.0.2:7000".parse().unwrap();
        let addresses = [dead, good, third];
        let mut rotation = Rotation::default();
        assert_eq!(rotation.pick(&addresses, Reach::Both), Ok(dead));
        rotation.failed();
        assert_eq!(rotation.pick(&addresses, Reach::Both), Ok(good));
        // It works: the slot keeps it, reconnection after reconnection.
        for _ in 0..3 {
            assert_eq!(rotation.pick(&addresses, Reach::Both), Ok(good));
        }
        // Failures go round the list, whatever order the next lookup gives.
        rotation.failed();
        assert_eq!(rotation.pick(&addresses, Reach::Both), Ok(third));
        rotation.failed();
        assert_eq!(rotation.pick(&addresses, Reach::Both), Ok(dead));
        rotation.failed();
        assert_eq!(rotation.pick(&[third, dead, good], Reach::Both), Ok(good));
        // An address gone from the list: back to the first.
        assert_eq!(rotation.pick(&[third, dead], Reach::Both), Ok(third));
        // Only the addresses the socket reaches.
        let mut rotation = Rotation::default();
        assert_eq!(rotation.pick(&addresses, Reach::V4), Ok(good));
        rotation.failed();
        assert_eq!(rotation.pick(&addresses, Reach::V4), Ok(third));
        rotation.failed();
        assert_eq!(rotation.pick(&addresses, Reach::V4), Ok(good));
        assert!(rotation.pick(&[dead], Reach::V4).is_err());
        assert_eq!(Rotation::default().pick(&addresses, Reach::V6), Ok(dead));
    }
}
