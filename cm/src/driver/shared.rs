//! What the API handles and the connection tasks share: the protocol core behind a lock, the
//! notifications between them, and small helpers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use crate::config::LinkConfig;
use crate::stats::{ConnectionCount, ConnectionTimeline, WindowStats};
use hmw_cm_proto::{ConnId, Core};

/// QUIC application close codes used by the link.
pub(crate) mod close_code {
    /// The link was closed deliberately by its owner.
    pub(crate) const LINK_CLOSED: u32 = 0;
    /// The peer violated the protocol.
    pub(crate) const PROTOCOL_ERROR: u32 = 1;
    /// The connection belongs to a previous incarnation of the peer.
    pub(crate) const STALE_SESSION: u32 = 2;
    /// The server serves `max_connections` already.
    pub(crate) const TOO_MANY_CONNECTIONS: u32 = 3;
    /// The client needs fewer connections: this one is closed after its blocks were
    /// acknowledged (not a failure, not made up by a reconnection).
    pub(crate) const RETIRED: u32 = 4;
    /// The link's owner reset its connections (`Link::reset_connections`): a failure to
    /// recover from by reconnecting.
    pub(crate) const RESET: u32 = 5;
}

/// State shared by the API handles and the connection tasks.
pub(crate) struct Shared {
    pub config: LinkConfig,
    core: Mutex<Core>,
    /// Send-buffer space was freed (or the link state changed).
    pub space: Notify,
    /// Messages arrived (or the link state changed).
    pub arrived: Notify,
    /// Blocks may have become sendable.
    pub transmit: Notify,
    /// The receive state changed: an acknowledgement is due.
    pub ack_due: Notify,
    /// A connection joined (for `wait_connected`).
    pub joined: Notify,
    /// The link is closing.
    pub closing: AtomicBool,
    pub shutdown: Notify,
    /// The peer closed the link deliberately and no connection has joined since.
    pub peer_closed: AtomicBool,
    pub timeline: Mutex<ConnectionTimeline>,
    pub connections: Mutex<HashMap<ConnId, quinn::Connection>>,
    /// The link's own sizing, for the statistics (written by the tuner).
    pub sizing: Mutex<Sizing>,
    next_conn_id: AtomicU64,
}

/// What the tuner and the connection-count supervisor show in the statistics.
#[derive(Debug, Default)]
pub(crate) struct Sizing {
    pub windows: WindowStats,
    /// Connections aimed at (client); `None` on a server.
    pub target: Option<usize>,
    pub counts: std::collections::VecDeque<ConnectionCount>,
}

impl Shared {
    fn new(config: LinkConfig, session: u64) -> Self {
        Self {
            core: Mutex::new(Core::new(config.core_config(), session)),
            config,
            space: Notify::new(),
            arrived: Notify::new(),
            transmit: Notify::new(),
            ack_due: Notify::new(),
            joined: Notify::new(),
            closing: AtomicBool::new(false),
            shutdown: Notify::new(),
            peer_closed: AtomicBool::new(false),
            timeline: Mutex::new(ConnectionTimeline::new(Instant::now())),
            connections: Mutex::new(HashMap::new()),
            sizing: Mutex::new(Sizing::default()),
            next_conn_id: AtomicU64::new(1),
        }
    }

    /// The protocol core (held briefly, never across an await).
    pub(crate) fn core(&self) -> MutexGuard<'_, Core> {
        self.core
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn timeline(&self) -> MutexGuard<'_, ConnectionTimeline> {
        self.timeline
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn sizing(&self) -> MutexGuard<'_, Sizing> {
        self.sizing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn new_conn_id(&self) -> ConnId {
        self.next_conn_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Wakes every waiter (state changed in a way anyone may care about).
    pub(crate) fn wake_all(&self) {
        self.space.notify_waiters();
        self.arrived.notify_waiters();
        self.transmit.notify_waiters();
        self.ack_due.notify_waiters();
        self.joined.notify_waiters();
        self.shutdown.notify_waiters();
    }
}

/// `text` with its control characters escaped (`\n`, `\u{1b}`...): text from the peer
/// (its certificate's names, its close reasons) put in a log line can neither start a line of
/// its own nor steer a terminal.
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// Waits until `check` returns a value, re-checking whenever `notify` fires. Registration
/// happens before each check, so no wake-up between check and wait is lost.
pub(crate) async fn wait_for<T>(notify: &Notify, mut check: impl FnMut() -> Option<T>) -> T {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(value) = check() {
            return value;
        }
        notified.await;
    }
}

pub(crate) fn shared_arc(config: LinkConfig, session: u64) -> Arc<Shared> {
    Arc::new(Shared::new(config, session))
}

#[cfg(test)]
mod tests {
    #[test]
    fn peer_text_in_log_lines_is_escaped() {
        assert_eq!(
            super::printable("plain: \"quoted\" \\"),
            "plain: \"quoted\" \\"
        );
        assert_eq!(
            super::printable("x\nWARN forged\r\u{1b}[31m\u{7f}é"),
            "x\\nWARN forged\\r\\u{1b}[31m\\u{7f}é"
        );
    }
}
