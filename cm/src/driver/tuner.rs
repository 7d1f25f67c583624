//! The link sizing itself while it runs: every [`TICK`], each connection's QUIC windows and
//! the link's buffers are grown from what the connections carried and their round trips,
//! following [`crate::tuning`], within `max_memory`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::VarInt;
use tracing::{debug, trace};

use super::shared::Shared;
use crate::tuning::{next_memory, per_round_trip, WindowPolicy};
use hmw_cm_proto::ConnId;

/// Period of the window and memory decisions.
pub(crate) const TICK: Duration = Duration::from_millis(100);

/// Share of `max_memory` the QUIC receive windows may take together (the rest is for the
/// link's buffers).
const WINDOWS_SHARE: u64 = 4;

/// What the tuner remembers of a connection.
struct Tracked {
    rx_bytes: u64,
    tx_bytes: u64,
    receive_window: u64,
    send_window: u64,
}

/// Runs until the link ends (the task is aborted with it).
pub(crate) async fn tune(shared: Arc<Shared>) {
    let config = &shared.config;
    let policy = WindowPolicy {
        initial: config.window as u64,
        max: config.max_window as u64,
    };
    let limit = config.max_memory() as u64;
    // Connections this side expects at most (a server: its own `connections_max`; one
    // serving more adds `window` for each beyond).
    let most = config.connections_max() as u64;
    let windows_limit = (limit / WINDOWS_SHARE).max(policy.initial * most);
    let memory_initial = (config.send_memory + config.recv_memory) as u64;
    {
        let mut sizing = shared.sizing();
        sizing.windows.receive_window_initial_total = policy.initial * config.connections as u64;
        sizing.windows.receive_window_max = policy.max;
        sizing.windows.memory_initial = memory_initial;
        sizing.windows.memory_limit = limit;
        sizing.windows.memory_used = memory_initial;
    }
    let mut tracked: HashMap<ConnId, Tracked> = HashMap::new();
    let mut last = Instant::now();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = Instant::now();
        let interval = now - last;
        last = now;
        let connections: Vec<(ConnId, quinn::Connection)> = shared
            .connections
            .lock()
            .expect("connections lock")
            .iter()
            .map(|(&id, conn)| (id, conn.clone()))
            .collect();
        tracked.retain(|id, _| connections.iter().any(|(c, _)| c == id));
        let (send_capacity, recv_capacity) = {
            let core = shared.core();
            (
                core.sender().capacity() as u64,
                core.receiver().capacity() as u64,
            )
        };
        let mut windows: u64 = tracked.values().map(|t| t.receive_window).sum();
        // The starting windows of connections that may still open are kept free, so that
        // opening them keeps within the bound.
        let reserve = most.saturating_sub(connections.len() as u64) * policy.initial;
        let mut send_windows = 0;
        let mut congestion_windows = 0;
        let (mut rx_total, mut tx_total) = (0u64, 0u64);
        let mut rtt_max = Duration::ZERO;
        for (id, conn) in &connections {
            let stats = conn.stats();
            let rtt = stats.path.rtt;
            congestion_windows += stats.path.cwnd;
            trace!(
                connection = id,
                cwnd = stats.path.cwnd,
                ?rtt,
                sent_packets = stats.path.sent_packets,
                lost_packets = stats.path.lost_packets,
                congestion_events = stats.path.congestion_events,
                "path"
            );
            let state = tracked.entry(*id).or_insert_with(|| {
                windows += policy.initial;
                Tracked {
                    rx_bytes: stats.udp_rx.bytes,
                    tx_bytes: stats.udp_tx.bytes,
                    receive_window: policy.initial,
                    send_window: policy.initial,
                }
            });
            let rx = stats.udp_rx.bytes.saturating_sub(state.rx_bytes);
            let tx = stats.udp_tx.bytes.saturating_sub(state.tx_bytes);
            state.rx_bytes = stats.udp_rx.bytes;
            state.tx_bytes = stats.udp_tx.bytes;
            rx_total += rx;
            tx_total += tx;
            if rx + tx > 0 {
                rtt_max = rtt_max.max(rtt);
            }
            let used = send_capacity + recv_capacity + windows + reserve;
            let room = windows_limit
                .saturating_sub(windows + reserve)
                .min(limit.saturating_sub(used));
            let grown = policy.next(state.receive_window, rx, interval, rtt, room);
            if grown > state.receive_window {
                if let Ok(window) = VarInt::from_u64(grown) {
                    debug!(
                        connection = id,
                        from = state.receive_window,
                        to = grown,
                        ?rtt,
                        "receive window grown"
                    );
                    conn.set_receive_window(window);
                    windows += grown - state.receive_window;
                    state.receive_window = grown;
                }
            }
            // The send window bounds what quinn holds unacknowledged; the blocks it holds are
            // the send buffer's own (shared, not copied), so it costs no memory of its own.
            let grown = policy.next(state.send_window, tx, interval, rtt, u64::MAX);
            if grown > state.send_window {
                conn.set_send_window(grown);
                state.send_window = grown;
            }
            send_windows += state.send_window;
        }
        // The buffers: a few round trips of what the link carries each way.
        let used = send_capacity + recv_capacity + windows + reserve;
        let room = limit.saturating_sub(used);
        let send =
            next_memory(send_capacity, tx_total, interval, rtt_max, room / 2).min(u32::MAX as u64);
        let recv =
            next_memory(recv_capacity, rx_total, interval, rtt_max, room / 2).min(u32::MAX as u64);
        if send > send_capacity || recv > recv_capacity {
            debug!(send, recv, "buffer memory grown");
            let recv_grew = shared.core().grow_memory(send as usize, recv as usize);
            if recv_grew {
                shared.ack_due.notify_waiters();
            }
            shared.space.notify_waiters();
        }
        let mut sizing = shared.sizing();
        let w = &mut sizing.windows;
        w.receive_window_total = windows;
        w.receive_window_peak_total = w.receive_window_peak_total.max(windows);
        w.send_window_total = send_windows;
        w.congestion_window_total = congestion_windows;
        w.rtt_ms = rtt_max.as_secs_f64() * 1e3;
        w.bdp_peak_bytes = w.bdp_peak_bytes.max(
            per_round_trip(rx_total, interval, rtt_max)
                .max(per_round_trip(tx_total, interval, rtt_max)),
        );
        w.memory_used = send.max(send_capacity) + recv.max(recv_capacity) + windows;
    }
}
