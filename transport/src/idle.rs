//! How a rank waits without burning a core.
//!
//! MPI's blocking receive spins in its progress loop: with more ranks than cores, idle ranks
//! would steal the CPU from the ranks that compute. Instead a waiting rank polls and sleeps with
//! a growing pause: it polls again at once for [`QUICK_POLLING`] first (a message is often just
//! about to arrive while work flows), then sleeps doubling from 20 µs up to [`MAX_PAUSE`]. Any
//! activity resets the pause. The quick polling is bounded in time, not in polls: a poll over
//! TCP costs far more than over shared memory, and a hundred polls at every wake-up, spinning,
//! took the testbed's shared cores from its workers (`docs/benchmarks.md`).
//!
//! A rank whose transport wakes it when a message arrives needs neither: its waits end for
//! the message, so it waits its longest pause at once ([`Idle::woken_on_arrival`]).

use std::time::{Duration, Instant};

/// The longest pause between two polls: bounds the extra latency an idle rank adds, and keeps
/// an idle rank's CPU use near 1% of a core.
pub const MAX_PAUSE: Duration = Duration::from_millis(2);
/// How long a rank polls without pausing after activity.
pub const QUICK_POLLING: Duration = Duration::from_micros(100);
const FIRST_SLEEP: Duration = Duration::from_micros(20);

/// The longest pause of a rank whose transport wakes it when a message arrives
/// ([`crate::Transport::wakes_on_arrival`]): its pauses end early for any message, so they may
/// be long, and an idle rank of a cluster of threads wakes ten times a second, not five
/// hundred (a federation of 64 such clusters on one machine spent cores on the wake-ups).
pub const MAX_PAUSE_WOKEN_ON_ARRIVAL: Duration = Duration::from_millis(100);

/// Backoff state of a waiting loop.
#[derive(Debug)]
pub struct Idle {
    phase: Phase,
    /// Waits end when a message arrives: no polling, no growth.
    woken_on_arrival: bool,
}

impl Default for Idle {
    fn default() -> Self {
        Idle {
            phase: Phase::Fresh,
            woken_on_arrival: false,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
enum Phase {
    /// Just after activity: the quick polling starts at the next poll.
    #[default]
    Fresh,
    /// Polling at once since this instant.
    Quick(Instant),
    /// Sleeping this long before each poll.
    Sleep(Duration),
}

impl Idle {
    /// The backoff of a loop that is woken whenever something arrives for it: no quick
    /// polling and no growth, every pause [`MAX_PAUSE_WOKEN_ON_ARRIVAL`] (the wait ends for
    /// what arrives). Polling and short sleeps after each message woke an idle link's CM
    /// some 300 times a second for 40 tasks, at about 30 µs a wake-up (`docs/benchmarks.md`).
    pub fn woken_on_arrival() -> Self {
        Idle {
            phase: Phase::Fresh,
            woken_on_arrival: true,
        }
    }

    /// The backoff of a loop that waits on `transport` alone: [`woken_on_arrival`]'s when
    /// the transport wakes it as a message arrives, else the default.
    ///
    /// [`woken_on_arrival`]: Self::woken_on_arrival
    pub fn for_transport(transport: &(impl crate::Transport + ?Sized)) -> Self {
        if transport.wakes_on_arrival() {
            Self::woken_on_arrival()
        } else {
            Self::default()
        }
    }

    /// Something happened: the next wait starts short again (a loop woken on arrival waits
    /// its one pause regardless).
    pub fn reset(&mut self) {
        self.phase = Phase::Fresh;
    }

    /// How long to wait before the next poll: zero (poll again at once) for [`QUICK_POLLING`]
    /// after activity, then a pause doubling from 20 µs to [`MAX_PAUSE`]; always
    /// [`MAX_PAUSE_WOKEN_ON_ARRIVAL`] for a loop [woken on arrival](Self::woken_on_arrival).
    pub fn next_pause(&mut self) -> Duration {
        self.next_pause_with(Instant::now)
    }

    /// [`next_pause`](Self::next_pause) at `now`, an instant the caller has just read: a
    /// driver that reads the clock once per message for its core need not read it twice.
    pub fn next_pause_at(&mut self, now: Instant) -> Duration {
        self.next_pause_with(|| now)
    }

    fn next_pause_with(&mut self, now: impl FnOnce() -> Instant) -> Duration {
        if self.woken_on_arrival {
            return MAX_PAUSE_WOKEN_ON_ARRIVAL;
        }
        self.phase = match self.phase {
            Phase::Fresh => Phase::Quick(now()),
            Phase::Quick(since) if now().duration_since(since) < QUICK_POLLING => {
                Phase::Quick(since)
            }
            Phase::Quick(_) => Phase::Sleep(FIRST_SLEEP),
            Phase::Sleep(pause) => Phase::Sleep((pause * 2).min(MAX_PAUSE)),
        };
        match self.phase {
            Phase::Sleep(pause) => pause,
            _ => Duration::ZERO,
        }
    }
}

/// Pause for `pause`: a yield when it is zero, a sleep otherwise.
pub fn pause(pause: Duration) {
    if pause.is_zero() {
        std::thread::yield_now();
    } else {
        std::thread::sleep(pause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_the_bound_after_the_quick_polling_and_reset() {
        let mut idle = Idle::default();
        let start = Instant::now();
        let mut quick = 0;
        while idle.next_pause().is_zero() {
            quick += 1;
        }
        let polling = start.elapsed();
        assert!(
            quick > 1 && polling >= QUICK_POLLING,
            "{quick} polls in {polling:?}"
        );
        let pauses: Vec<Duration> = (0..20).map(|_| idle.next_pause()).collect();
        assert_eq!(pauses[0], 2 * FIRST_SLEEP);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*pauses.last().unwrap(), MAX_PAUSE);
        idle.reset();
        assert!(idle.next_pause().is_zero());
    }

    #[test]
    fn a_loop_woken_on_arrival_waits_its_longest_pause_at_once() {
        let mut idle = Idle::woken_on_arrival();
        assert_eq!(idle.next_pause(), MAX_PAUSE_WOKEN_ON_ARRIVAL);
        idle.reset();
        assert_eq!(idle.next_pause(), MAX_PAUSE_WOKEN_ON_ARRIVAL);
    }
}
