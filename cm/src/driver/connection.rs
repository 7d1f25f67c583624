//! One QUIC connection of the link: hello exchange, then the control stream (acknowledgements,
//! both ways) and the data streams (blocks, one reader per incoming stream, `streams` writers),
//! until the connection dies, misbehaves or the link closes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use quinn::{ConnectionError, ReadError, RecvStream, SendStream, WriteError};
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use super::shared::{close_code, printable, wait_for, Shared};
use hmw_cm_proto::{
    decode, encode_data_header, BlockOutcome, ConnId, Frame, FrameEffect, ProtocolError,
};

/// Pause after sending an acknowledgement, so that a burst of arrivals costs one ack.
const ACK_COALESCE: Duration = Duration::from_millis(2);

/// Which end opened the connection.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Side {
    /// We connected; this is connection number `index` of the link.
    Client { index: u32 },
    /// We accepted it.
    Server,
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The peer closed the link deliberately.
    PeerClosed,
    /// This link is closing.
    Closing,
    /// It died or was closed for an error; reconnect. `joined`: it had completed the hello.
    Lost {
        /// Whether the connection had joined the link.
        joined: bool,
    },
    /// This side retired it (the link needs fewer connections).
    Retired,
}

#[derive(Debug)]
enum Failure {
    Protocol(ProtocolError),
    Connection(ConnectionError),
    Stream(String),
    Timeout(&'static str),
    /// Retired by this side once its blocks were acknowledged.
    Retired,
}

impl From<ProtocolError> for Failure {
    fn from(e: ProtocolError) -> Self {
        Failure::Protocol(e)
    }
}

impl From<hmw_cm_proto::FrameError> for Failure {
    fn from(e: hmw_cm_proto::FrameError) -> Self {
        Failure::Protocol(e.into())
    }
}

impl From<ConnectionError> for Failure {
    fn from(e: ConnectionError) -> Self {
        Failure::Connection(e)
    }
}

impl From<WriteError> for Failure {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::ConnectionLost(e) => Failure::Connection(e),
            other => Failure::Stream(format!("write: {other}")),
        }
    }
}

impl From<ReadError> for Failure {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::ConnectionLost(e) => Failure::Connection(e),
            other => Failure::Stream(format!("read: {other}")),
        }
    }
}

/// Runs `conn` as part of the link until it ends; always leaves the core and the statistics
/// consistent (its unacknowledged blocks queued for resending).
/// `retire` (a client's): once set, the connection takes no new blocks and is closed when
/// those it carries are acknowledged.
pub(crate) async fn run_connection(
    shared: &Arc<Shared>,
    conn: quinn::Connection,
    side: Side,
    retire: Option<Arc<AtomicBool>>,
) -> Ended {
    let id = shared.new_conn_id();
    let remote = conn.remote_address();
    shared.core().connection_opened(id);
    shared
        .connections
        .lock()
        .expect("connections lock")
        .insert(id, conn.clone());
    let mut joined = false;
    let result = drive(
        shared,
        &conn,
        id,
        side,
        remote,
        &mut joined,
        retire.as_deref(),
    )
    .await;
    {
        // Under the connections lock, so that statistics never count the connection's lost
        // packets twice or not at all.
        let mut connections = shared.connections.lock().expect("connections lock");
        connections.remove(&id);
        let path = conn.stats().path;
        let mut timeline = shared.timeline();
        timeline.packets_lost_on_closed += path.lost_packets;
        timeline.packets_sent_on_closed += path.sent_packets;
    }
    shared.core().connection_lost(id);
    let closing = shared.is_closing();
    let retired = match &result {
        Err(Failure::Retired) => true,
        Err(Failure::Connection(ConnectionError::ApplicationClosed(close))) => {
            close.error_code == close_code::RETIRED.into()
        }
        _ => false,
    };
    if joined {
        shared.timeline().left(Instant::now(), closing, retired);
    }
    let ended = match result {
        Ok(()) => {
            conn.close(close_code::LINK_CLOSED.into(), b"link closed");
            Ended::Closing
        }
        Err(Failure::Connection(ConnectionError::ApplicationClosed(close)))
            if close.error_code == close_code::LINK_CLOSED.into() =>
        {
            info!(%remote, connection = id, "peer closed the link");
            shared.peer_closed.store(true, Ordering::Release);
            Ended::PeerClosed
        }
        Err(Failure::Connection(ConnectionError::LocallyClosed)) if closing => Ended::Closing,
        Err(Failure::Retired) => {
            info!(%remote, connection = id, "connection retired: the link needs fewer");
            conn.close(close_code::RETIRED.into(), b"retired");
            Ended::Retired
        }
        Err(Failure::Connection(ConnectionError::ApplicationClosed(close)))
            if close.error_code == close_code::RETIRED.into() =>
        {
            info!(%remote, connection = id, "peer retired the connection");
            Ended::Lost { joined }
        }
        Err(Failure::Connection(ConnectionError::ApplicationClosed(close)))
            if close.error_code == close_code::TOO_MANY_CONNECTIONS.into() =>
        {
            warn!(%remote, connection = id, "the server refused the connection: it serves its max_connections already");
            Ended::Lost { joined }
        }
        Err(Failure::Connection(ConnectionError::ApplicationClosed(close)))
            if close.error_code == close_code::PROTOCOL_ERROR.into() =>
        {
            warn!(
                %remote,
                connection = id,
                "peer closed the connection for a protocol violation: {}",
                printable(&String::from_utf8_lossy(&close.reason))
            );
            Ended::Lost { joined }
        }
        // An honest race, not a violation: a connection the peer opened before it restarted.
        Err(Failure::Protocol(e @ ProtocolError::StaleSession { .. })) => {
            info!(%remote, connection = id, "closing connection from {remote}: {e} (it restarted since)");
            conn.close(close_code::STALE_SESSION.into(), e.to_string().as_bytes());
            Ended::Lost { joined }
        }
        Err(Failure::Protocol(e)) => {
            warn!(%remote, connection = id, "closing connection from {remote}: protocol violation: {e}");
            shared.timeline().protocol_errors += 1;
            conn.close(close_code::PROTOCOL_ERROR.into(), e.to_string().as_bytes());
            Ended::Lost { joined }
        }
        Err(other) => {
            let reason = match other {
                // May hold the peer's close reason: its text, escaped for the log.
                Failure::Connection(e) => printable(&e.to_string()).into_owned(),
                Failure::Stream(e) => e,
                Failure::Timeout(what) => format!("timed out waiting for {what}"),
                Failure::Protocol(_) | Failure::Retired => unreachable!("handled above"),
            };
            if joined {
                info!(%remote, connection = id, "connection lost: {reason}");
            } else {
                debug!(%remote, connection = id, "connection failed before joining: {reason}");
            }
            conn.close(close_code::PROTOCOL_ERROR.into(), reason.as_bytes());
            Ended::Lost { joined }
        }
    };
    // Blocks of this connection are queued again; waiters re-check the link state.
    shared.wake_all();
    ended
}

async fn write_frame(tx: &mut SendStream, frame: &Frame) -> Result<(), Failure> {
    tx.write_all(&frame.to_bytes()).await?;
    Ok(())
}

/// Chunks taken from quinn per read call (one call per received packet would cost more
/// than the copy).
const CHUNKS_PER_READ: usize = 32;

/// Reads the next frame; `None` when the stream ended cleanly between frames.
async fn read_frame(rx: &mut RecvStream, buf: &mut BytesMut) -> Result<Option<Frame>, Failure> {
    let mut chunks: [Bytes; CHUNKS_PER_READ] = Default::default();
    loop {
        if let Some(frame) = decode(buf)? {
            return Ok(Some(frame));
        }
        match rx.read_chunks(&mut chunks).await? {
            Some(n) => {
                for chunk in &mut chunks[..n] {
                    buf.extend_from_slice(chunk);
                    *chunk = Bytes::new();
                }
            }
            None if buf.is_empty() => return Ok(None),
            None => return Err(Failure::Stream("stream ended inside a frame".into())),
        }
    }
}

async fn drive(
    shared: &Arc<Shared>,
    conn: &quinn::Connection,
    id: ConnId,
    side: Side,
    remote: SocketAddr,
    joined: &mut bool,
    retire: Option<&AtomicBool>,
) -> Result<(), Failure> {
    let hello_timeout = shared.config.inactivity_timeout();
    let (mut ctl_tx, mut ctl_rx) = match side {
        Side::Client { .. } => conn.open_bi().await?,
        Side::Server => tokio::time::timeout(hello_timeout, conn.accept_bi())
            .await
            .map_err(|_| Failure::Timeout("the peer's control stream"))??,
    };
    let index = match side {
        Side::Client { index } => index,
        Side::Server => 0,
    };
    let our_hello = Frame::Hello(shared.core().hello(index));
    if let Side::Client { .. } = side {
        write_frame(&mut ctl_tx, &our_hello).await?;
    }
    let mut ctl_buf = BytesMut::new();
    let peer_hello = tokio::time::timeout(hello_timeout, read_frame(&mut ctl_rx, &mut ctl_buf))
        .await
        .map_err(|_| Failure::Timeout("the peer's hello"))??;
    let Some(hello @ Frame::Hello(_)) = peer_hello else {
        return Err(ProtocolError::NotHandshaken("frame").into());
    };
    let effect = shared.core().on_frame(id, hello)?;
    if let FrameEffect::Handshake(handshake) = effect {
        if handshake.peer_restarted {
            warn!(%remote, "peer restarted (new session): buffered messages to its previous incarnation were dropped");
            let connections = shared.connections.lock().expect("connections lock");
            for stale in &handshake.stale_connections {
                if let Some(c) = connections.get(stale) {
                    c.close(close_code::STALE_SESSION.into(), b"peer restarted");
                }
            }
        }
    }
    if let Side::Server = side {
        write_frame(&mut ctl_tx, &our_hello).await?;
    }
    *joined = true;
    shared.timeline().joined(Instant::now());
    shared.peer_closed.store(false, Ordering::Release);
    info!(%remote, connection = id, "connection joined the link");
    shared.wake_all();
    let first_ack = Frame::Ack(shared.core().ack());
    write_frame(&mut ctl_tx, &first_ack).await?;

    let retiring = Arc::new(AtomicBool::new(false));
    tokio::select! {
        r = control_reader(shared, id, ctl_rx, ctl_buf) => r,
        r = control_writer(shared, ctl_tx) => r,
        r = data_writers(shared, conn, id, retiring.clone()) => r,
        r = retired(shared, id, retire, &retiring) => r,
        r = data_readers(shared, conn, id) => r,
        () = wait_for(&shared.shutdown, || shared.is_closing().then_some(())) => Ok(()),
    }
}

async fn control_reader(
    shared: &Shared,
    id: ConnId,
    mut rx: RecvStream,
    mut buf: BytesMut,
) -> Result<(), Failure> {
    loop {
        match read_frame(&mut rx, &mut buf).await? {
            Some(frame @ Frame::Ack(_)) => {
                let effect = shared.core().on_frame(id, frame)?;
                if effect != FrameEffect::Acked(0) {
                    shared.space.notify_waiters();
                }
                shared.transmit.notify_waiters();
            }
            Some(Frame::Hello(_)) => return Err(ProtocolError::DuplicateHello.into()),
            Some(Frame::Data(_)) => {
                return Err(ProtocolError::UnexpectedFrame {
                    frame: "data",
                    stream: "control",
                }
                .into())
            }
            None => return Err(Failure::Stream("peer finished its control stream".into())),
        }
    }
}

async fn control_writer(shared: &Shared, mut tx: SendStream) -> Result<(), Failure> {
    let period = shared.config.keepalive_interval();
    loop {
        let due = tokio::time::timeout(
            period,
            wait_for(&shared.ack_due, || shared.core().take_ack()),
        );
        // Without news, the full state is repeated every keep-alive period: it repairs an
        // acknowledgement lost with a dead connection and shows the peer we are alive.
        let ack = match due.await {
            Ok(ack) => ack,
            Err(_) => shared.core().ack(),
        };
        write_frame(&mut tx, &Frame::Ack(ack)).await?;
        tokio::time::sleep(ACK_COALESCE).await;
    }
}

/// Pause between checks of the retire flag.
const RETIRE_POLL: Duration = Duration::from_millis(50);

/// Ends with [`Failure::Retired`] once `retire` is set and the blocks this connection carries
/// are acknowledged (or after an inactivity timeout: those left are then sent again on the
/// others); sets `retiring` first, so that the writers take no more blocks.
async fn retired(
    shared: &Shared,
    id: ConnId,
    retire: Option<&AtomicBool>,
    retiring: &AtomicBool,
) -> Result<(), Failure> {
    let Some(retire) = retire else {
        return std::future::pending().await;
    };
    while !retire.load(Ordering::Acquire) {
        tokio::time::sleep(RETIRE_POLL).await;
    }
    retiring.store(true, Ordering::Release);
    let deadline = Instant::now() + shared.config.inactivity_timeout();
    while shared.core().sender().in_flight(id) > 0 && Instant::now() < deadline {
        tokio::time::sleep(RETIRE_POLL).await;
    }
    Err(Failure::Retired)
}

async fn data_writers(
    shared: &Arc<Shared>,
    conn: &quinn::Connection,
    id: ConnId,
    retiring: Arc<AtomicBool>,
) -> Result<(), Failure> {
    let mut writers = JoinSet::new();
    for _ in 0..shared.config.streams {
        let tx = conn.open_uni().await?;
        writers.spawn(data_writer(
            shared.clone(),
            conn.clone(),
            tx,
            id,
            retiring.clone(),
        ));
    }
    match writers.join_next().await {
        Some(Ok(result)) => result,
        Some(Err(join)) => Err(Failure::Stream(format!("writer task: {join}"))),
        None => Ok(()),
    }
}

async fn data_writer(
    shared: Arc<Shared>,
    conn: quinn::Connection,
    mut tx: SendStream,
    id: ConnId,
    retiring: Arc<AtomicBool>,
) -> Result<(), Failure> {
    loop {
        let block = wait_for(&shared.transmit, || {
            if retiring.load(Ordering::Acquire) {
                return None;
            }
            let limit = in_flight_limit(&conn);
            shared.core().next_block(id, limit)
        })
        .await;
        let mut chunks: [Bytes; 2] = [encode_data_header(&block), block.payload];
        tx.write_all_chunks(&mut chunks).await?;
    }
}

/// Time an acknowledgement of the link layer takes beyond the path's round trip (coalescing
/// and task scheduling on both sides).
const ACK_ALLOWANCE: Duration = Duration::from_millis(5);

/// The share beyond its congestion window a connection may hold unacknowledged at the link's
/// level: room for the link's acknowledgements to lag QUIC's a little. It was 2: a link that
/// starts warm (its windows at the path's bandwidth-delay product from the first byte) then
/// handed a connection twice its window at once, so the first 1 MiB message of a two-connection
/// link over 8 MB/s and 120 ms rode one connection at half the rate and arrived after
/// 0.36-0.42 s; at 1.25 its blocks spread over both, 0.30-0.32 s, with the same steady
/// goodput (`docs/benchmarks.md`).
const IN_FLIGHT_WINDOWS: f64 = 1.25;

/// How many unacknowledged bytes connection `conn` may hold: [`IN_FLIGHT_WINDOWS`] times what
/// its congestion window lets it send during one link-level acknowledgement round trip (the
/// path's round trip plus [`ACK_ALLOWANCE`]). Blocks then go to the connections that can send
/// them now, instead of queueing behind a slow connection and holding up in-order delivery;
/// on a short path the allowance dominates and keeps the pipe full despite a small window.
fn in_flight_limit(conn: &quinn::Connection) -> usize {
    let path = conn.stats().path;
    let rtt = path.rtt.max(Duration::from_micros(50)).as_secs_f64();
    let scale = (rtt + ACK_ALLOWANCE.as_secs_f64()) / rtt;
    (IN_FLIGHT_WINDOWS * path.cwnd as f64 * scale).min(usize::MAX as f64 / 2.0) as usize
}

async fn data_readers(
    shared: &Arc<Shared>,
    conn: &quinn::Connection,
    id: ConnId,
) -> Result<(), Failure> {
    let mut readers: JoinSet<Result<(), Failure>> = JoinSet::new();
    loop {
        tokio::select! {
            stream = conn.accept_uni() => {
                readers.spawn(data_reader(shared.clone(), stream?, id));
            }
            Some(done) = readers.join_next() => match done {
                Ok(Ok(())) => {}
                Ok(Err(failure)) => return Err(failure),
                Err(join) => return Err(Failure::Stream(format!("reader task: {join}"))),
            },
        }
    }
}

async fn data_reader(shared: Arc<Shared>, mut rx: RecvStream, id: ConnId) -> Result<(), Failure> {
    let mut buf = BytesMut::new();
    loop {
        let Some(frame) = read_frame(&mut rx, &mut buf).await? else {
            return Ok(());
        };
        let Frame::Data(_) = frame else {
            return Err(ProtocolError::UnexpectedFrame {
                frame: if matches!(frame, Frame::Hello(_)) {
                    "hello"
                } else {
                    "ack"
                },
                stream: "data",
            }
            .into());
        };
        let (effect, ready) = {
            let mut core = shared.core();
            let effect = core.on_frame(id, frame)?;
            (effect, core.ready_messages())
        };
        if effect == FrameEffect::Block(BlockOutcome::Stored) && ready > 0 {
            shared.arrived.notify_waiters();
        }
        shared.ack_due.notify_waiters();
    }
}
