//! `hmw-wanem`: a user-space WAN emulator (the kernel here has no netem).
//!
//! A UDP relay between clients and one server: clients send to [`Wanem::local_addr`], each
//! client address gets its own upstream socket towards the server, and every datagram goes
//! through the [`Pipe`] of its direction (outages, loss, rate limit with a bounded queue,
//! delay with jitter). Used by the tests, the benchmark and the multi-cluster launcher.

pub mod config;
mod udp;

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use thiserror::Error;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

pub use config::{DirectionConfig, Outage, WanemConfig, WanemConfigError};
pub use hmw_wan::pipe::{self, DirectionCounters, Pipe};
use udp::{Arena, BatchSocket, RecvScratch};

/// Counters of both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WanemCounters {
    /// Client to server.
    pub client_to_server: DirectionCounters,
    /// Server to client.
    pub server_to_client: DirectionCounters,
}

impl std::fmt::Display for WanemCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (name, c) in [
            ("client->server", &self.client_to_server),
            ("server->client", &self.server_to_client),
        ] {
            writeln!(
                f,
                "{name}: in {} pkts / {} B, out {} pkts / {} B, dropped loss {} queue {} outage {}",
                c.packets_in,
                c.bytes_in,
                c.packets_out,
                c.bytes_out,
                c.dropped_loss,
                c.dropped_queue,
                c.dropped_outage
            )?;
        }
        Ok(())
    }
}

/// The emulator could not start.
#[derive(Debug, Error)]
pub enum WanemError {
    /// Invalid configuration.
    #[error(transparent)]
    Config(#[from] WanemConfigError),
    /// A socket could not be bound.
    #[error("cannot bind UDP socket {addr}: {cause}")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        cause: std::io::Error,
    },
}

struct Pipes {
    client_to_server: Mutex<Pipe>,
    server_to_client: Mutex<Pipe>,
}

/// The pipe behind `mutex` (the pipe never panics while locked; should it, its state is still
/// consistent counters and queues, so the relay goes on).
fn lock(mutex: &Mutex<Pipe>) -> std::sync::MutexGuard<'_, Pipe> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Pipes {
    fn counters(&self) -> WanemCounters {
        WanemCounters {
            client_to_server: lock(&self.client_to_server).counters(),
            server_to_client: lock(&self.server_to_client).counters(),
        }
    }
}

/// A datagram waiting for its delivery time.
struct Scheduled {
    at: Duration,
    socket: Arc<BatchSocket>,
    to: SocketAddr,
    payload: Bytes,
}

/// A running emulator; stops when dropped.
pub struct Wanem {
    local_addr: SocketAddr,
    pipes: Arc<Pipes>,
    started: Instant,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Wanem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wanem")
            .field("local_addr", &self.local_addr)
            .finish()
    }
}

impl Wanem {
    /// Binds the listening socket and starts relaying (call from within a tokio runtime).
    /// Outage times count from this call.
    pub async fn start(config: WanemConfig) -> Result<Self, WanemError> {
        config.validate()?;
        let front = BatchSocket::bind(config.listen).map_err(|cause| WanemError::Bind {
            addr: config.listen,
            cause,
        })?;
        let local_addr = front.local_addr().map_err(|cause| WanemError::Bind {
            addr: config.listen,
            cause,
        })?;
        let front = Arc::new(front);
        let pipes = Arc::new(Pipes {
            client_to_server: Mutex::new(Pipe::new(
                &config.client_to_server,
                &config.outages,
                config.seed,
            )),
            server_to_client: Mutex::new(Pipe::new(
                &config.server_to_client,
                &config.outages,
                config.seed.wrapping_add(0x9E37_79B9_7F4A_7C15),
            )),
        });
        let started = Instant::now();
        let (to_server, to_server_rx) = mpsc::unbounded_channel();
        let (to_client, to_client_rx) = mpsc::unbounded_channel();
        let mut tasks = vec![
            tokio::spawn(deliver(to_server_rx, pipes.clone(), true, started)),
            tokio::spawn(deliver(to_client_rx, pipes.clone(), false, started)),
            tokio::spawn(relay_from_clients(
                front,
                config.server,
                pipes.clone(),
                started,
                to_server,
                to_client,
            )),
        ];
        let report = Duration::try_from_secs_f64(config.report_interval_s)
            .ok()
            .filter(|period| !period.is_zero());
        if let Some(period) = report {
            let pipes = pipes.clone();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(period);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    eprint!(
                        "hmw-wanem t={:.1}s\n{}",
                        started.elapsed().as_secs_f64(),
                        pipes.counters()
                    );
                }
            }));
        }
        Ok(Self {
            local_addr,
            pipes,
            started,
            tasks,
        })
    }

    /// Where clients send.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Counters of both directions.
    pub fn counters(&self) -> WanemCounters {
        self.pipes.counters()
    }

    /// Time since start (the clock of the outage schedule).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Stops relaying.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }
}

impl Drop for Wanem {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn relay_from_clients(
    front: Arc<BatchSocket>,
    server: SocketAddr,
    pipes: Arc<Pipes>,
    started: Instant,
    to_server: mpsc::UnboundedSender<Vec<Scheduled>>,
    to_client: mpsc::UnboundedSender<Vec<Scheduled>>,
) {
    let mut upstreams: HashMap<SocketAddr, Arc<BatchSocket>> = HashMap::new();
    let mut readers: Vec<JoinHandle<()>> = Vec::new();
    let foreign_warned = Arc::new(AtomicBool::new(false));
    let mut scratch = RecvScratch::default();
    let mut arena = Arena::default();
    loop {
        let entries = match front.recv(&mut scratch).await {
            Ok(entries) => entries,
            Err(e) => {
                // ICMP errors (a port unreachable) surface here on some systems; keep going.
                debug!("wanem: receive from clients: {e}");
                continue;
            }
        };
        let now = started.elapsed();
        let mut batch = Vec::new();
        for i in 0..entries {
            let (client, datagrams) = scratch.datagrams(i);
            let upstream = match upstreams.get(&client) {
                Some(socket) => socket.clone(),
                None => {
                    // Any interface of the server's family: the kernel picks the source
                    // address that routes to the server, loopback or not.
                    let local: SocketAddr = if server.is_ipv4() {
                        (Ipv4Addr::UNSPECIFIED, 0).into()
                    } else {
                        (Ipv6Addr::UNSPECIFIED, 0).into()
                    };
                    let socket = match BatchSocket::bind(local) {
                        Ok(socket) => Arc::new(socket),
                        Err(e) => {
                            debug!("wanem: cannot bind upstream socket: {e}");
                            continue;
                        }
                    };
                    readers.push(tokio::spawn(relay_from_server(
                        socket.clone(),
                        front.clone(),
                        server,
                        client,
                        pipes.clone(),
                        started,
                        to_client.clone(),
                        foreign_warned.clone(),
                    )));
                    upstreams.insert(client, socket.clone());
                    socket
                }
            };
            let mut pipe = lock(&pipes.client_to_server);
            for datagram in datagrams {
                if let Ok(at) = pipe.offer(now, datagram.len()) {
                    batch.push(Scheduled {
                        at,
                        socket: upstream.clone(),
                        to: server,
                        payload: arena.copy(datagram),
                    });
                }
            }
        }
        if !batch.is_empty() && to_server.send(batch).is_err() {
            break;
        }
    }
    for reader in readers {
        reader.abort();
    }
}

#[allow(clippy::too_many_arguments)]
async fn relay_from_server(
    upstream: Arc<BatchSocket>,
    front: Arc<BatchSocket>,
    server: SocketAddr,
    client: SocketAddr,
    pipes: Arc<Pipes>,
    started: Instant,
    to_client: mpsc::UnboundedSender<Vec<Scheduled>>,
    foreign_warned: Arc<AtomicBool>,
) {
    let mut scratch = RecvScratch::default();
    let mut arena = Arena::default();
    loop {
        let entries = match upstream.recv(&mut scratch).await {
            Ok(entries) => entries,
            Err(e) => {
                debug!("wanem: receive from server: {e}");
                continue;
            }
        };
        let now = started.elapsed();
        let mut batch = Vec::new();
        for i in 0..entries {
            let (from, datagrams) = scratch.datagrams(i);
            // The upstream socket listens on every interface: only the server is relayed.
            // A server that answers from another address than the one configured (one given
            // as 0.0.0.0, a multi-homed host) would lose all its traffic here: said once.
            if from != server {
                if !foreign_warned.swap(true, Ordering::Relaxed) {
                    warn!(
                        "wanem: datagrams from {from} dropped: only replies from the configured \
                         server {server} (exactly that address and port) are relayed; if that is \
                         the server answering, configure `server` as {from}"
                    );
                } else {
                    debug!("wanem: datagram from {from} on the upstream socket ignored");
                }
                continue;
            }
            let mut pipe = lock(&pipes.server_to_client);
            for datagram in datagrams {
                if let Ok(at) = pipe.offer(now, datagram.len()) {
                    batch.push(Scheduled {
                        at,
                        socket: front.clone(),
                        to: client,
                        payload: arena.copy(datagram),
                    });
                }
            }
        }
        if !batch.is_empty() && to_client.send(batch).is_err() {
            return;
        }
    }
}

/// Sends the datagrams of one direction at their delivery times. Delivery times never
/// decrease (the pipe keeps order), so the queue is first in, first out: the task sleeps
/// until the first is due, then sends every datagram due by then, same-size datagrams to one
/// address together in one system call.
async fn deliver(
    mut queue: mpsc::UnboundedReceiver<Vec<Scheduled>>,
    pipes: Arc<Pipes>,
    client_to_server: bool,
    started: Instant,
) {
    let pipe = if client_to_server {
        &pipes.client_to_server
    } else {
        &pipes.server_to_client
    };
    let mut waiting: VecDeque<Scheduled> = VecDeque::new();
    let mut due: Vec<Scheduled> = Vec::new();
    let mut train: Vec<u8> = Vec::with_capacity(65_536);
    loop {
        while let Ok(batch) = queue.try_recv() {
            waiting.extend(batch);
        }
        let Some(first) = waiting.front() else {
            match queue.recv().await {
                Some(batch) => {
                    waiting.extend(batch);
                    continue;
                }
                None => return,
            }
        };
        // Delivery times are minutes ahead at most (validated limits); one beyond what the
        // clock can hold is dropped, never a panic.
        let Some(at) = started.checked_add(first.at) else {
            waiting.pop_front();
            continue;
        };
        if Instant::now() < at {
            tokio::time::sleep_until(at.into()).await;
            continue;
        }
        let now = started.elapsed();
        {
            let mut pipe = lock(pipe);
            while waiting.front().is_some_and(|p| p.at <= now) {
                let packet = waiting.pop_front().expect("front exists");
                if pipe.deliver(packet.at, packet.payload.len()) {
                    due.push(packet);
                }
            }
        }
        // Trains: consecutive datagrams to the same address through the same socket, all of
        // the first one's size but the last, which may be shorter.
        let mut i = 0;
        while i < due.len() {
            let head = &due[i];
            let size = head.payload.len();
            let max = head.socket.train_len(size);
            let mut j = i + 1;
            while j < due.len()
                && j - i < max
                && Arc::ptr_eq(&due[j].socket, &head.socket)
                && due[j].to == head.to
                && due[j - 1].payload.len() == size
                && due[j].payload.len() <= size
            {
                j += 1;
            }
            let result = if j - i == 1 {
                head.socket.send(head.to, &head.payload, size).await
            } else {
                train.clear();
                for packet in &due[i..j] {
                    train.extend_from_slice(&packet.payload);
                }
                head.socket.send(head.to, &train, size).await
            };
            if let Err(e) = result {
                debug!("wanem: send to {}: {e}", head.to);
            }
            i = j;
        }
        due.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::UdpSocket;

    /// A log written into memory.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Log {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A server answering from another address than the configured one loses its replies,
    /// and the emulator says so once, naming the address, instead of only at debug level.
    #[tokio::test]
    async fn replies_from_another_address_are_dropped_with_one_warning() {
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        // This runtime has one thread: the relay's tasks log to this subscriber.
        let _guard = tracing::subscriber::set_default(subscriber);
        let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let elsewhere = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let wanem = Wanem::start(WanemConfig::symmetric(
            "127.0.0.1:0".parse().unwrap(),
            server.local_addr().unwrap(),
            DirectionConfig::default(),
        ))
        .await
        .unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        client
            .send_to(b"request", wanem.local_addr())
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let (_, upstream) =
            tokio::time::timeout(Duration::from_secs(5), server.recv_from(&mut buf))
                .await
                .expect("relayed to the server")
                .unwrap();
        for _ in 0..3 {
            elsewhere.send_to(b"foreign", upstream).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.send_to(b"reply", upstream).await.unwrap();
        let (len, _) = tokio::time::timeout(Duration::from_secs(5), client.recv_from(&mut buf))
            .await
            .expect("the server's reply is relayed")
            .unwrap();
        assert_eq!(
            &buf[..len],
            b"reply",
            "only the server's reply reaches the client"
        );
        let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
        let warnings: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
        assert_eq!(warnings.len(), 1, "{text}");
        let foreign = elsewhere.local_addr().unwrap().to_string();
        assert!(
            warnings[0].contains(&format!("datagrams from {foreign} dropped")),
            "{text}"
        );
        assert_eq!(wanem.counters().server_to_client.packets_in, 1);
        wanem.shutdown();
    }

    /// The slowest accepted rate with large datagrams: delivery times minutes ahead, yet the
    /// relay keeps counting every datagram (it once panicked on the first one and left a
    /// poisoned lock behind).
    #[tokio::test]
    async fn slowest_rate_and_large_datagrams_keep_the_relay_alive() {
        let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let config = WanemConfig::symmetric(
            "127.0.0.1:0".parse().unwrap(),
            server.local_addr().unwrap(),
            DirectionConfig {
                rate_mbit: config::limits::MIN_RATE_MBIT,
                queue_ms: config::limits::MAX_QUEUE_MS,
                ..DirectionConfig::default()
            },
        );
        let wanem = Wanem::start(config).await.unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        for _ in 0..20 {
            client
                .send_to(&[7u8; 10_000], wanem.local_addr())
                .await
                .unwrap();
            // Paced: the test is about the emulator, not the kernel's socket buffer.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while wanem.counters().client_to_server.packets_in < 20 {
            assert!(Instant::now() < deadline, "{}", wanem.counters());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let c = wanem.counters().client_to_server;
        // The bucket lets the first packet through at once; the rest wait or overflow.
        assert_eq!(c.packets_in, 20);
        assert!(c.dropped_queue > 0, "{c:?}");
        let mut buf = [0u8; 65_536];
        let (len, _) = tokio::time::timeout(Duration::from_secs(5), server.recv_from(&mut buf))
            .await
            .expect("the burst's packet arrives")
            .unwrap();
        assert_eq!(len, 10_000);
        wanem.shutdown();
    }
}
