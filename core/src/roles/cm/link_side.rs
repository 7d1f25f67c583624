//! What both sides of a CM keep of their link: how long it has been down, and the messages
//! for it that wait for room in it (a CM core's [`LinkOutbox`](super::LinkOutbox)).

use std::{collections::VecDeque, time::Duration};

use super::output::LinkView;

/// A CM core's side of its link.
#[derive(Debug, Default)]
pub(super) struct LinkSide {
    /// Since when the link has been down, as the core was told at its ticks.
    down_since: Option<Duration>,
    /// Messages for the link, oldest first.
    outbox: VecDeque<Vec<u8>>,
    /// The peer's restarts seen so far.
    peer_restarts: u64,
}

impl LinkSide {
    /// How long the link, as `link` shows it at `now`, has been down (zero while it is up).
    pub(super) fn down_for(&mut self, now: Duration, link: &LinkView) -> Duration {
        if link.connected {
            self.down_since = None;
            Duration::ZERO
        } else {
            now.saturating_sub(*self.down_since.get_or_insert(now))
        }
    }

    /// Whether the peer restarted since the last call (its new session joined the link).
    pub(super) fn peer_restarted(&mut self, link: &LinkView) -> bool {
        let restarted = link.peer_restarts > self.peer_restarts;
        self.peer_restarts = self.peer_restarts.max(link.peer_restarts);
        restarted
    }

    /// Keeps only the messages waiting for the link that `keep` accepts.
    pub(super) fn retain(&mut self, keep: impl FnMut(&Vec<u8>) -> bool) {
        self.outbox.retain(keep);
    }

    /// `bytes` go to the peer CM once the link has room.
    pub(super) fn send(&mut self, bytes: Vec<u8>) {
        self.outbox.push_back(bytes);
    }

    /// Messages wait for room in the link.
    pub(super) fn waiting(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// The oldest message waiting.
    pub(super) fn next(&self) -> Option<&[u8]> {
        self.outbox.front().map(Vec::as_slice)
    }

    /// The oldest message waiting, taken out.
    pub(super) fn pop(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }
}
