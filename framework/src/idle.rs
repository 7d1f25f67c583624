//! How a rank waits without burning a core.
//!
//! MPI's blocking receive spins in its progress loop: with more ranks than cores, idle ranks
//! would steal the CPU from the ranks that compute. Instead a waiting rank polls and sleeps with
//! a growing pause: a few polls in a row first (a message is often just about to arrive while
//! work flows; over MPI each probe gives the progress engine its turn, which yields the CPU
//! when ranks outnumber cores), then sleeps doubling up to [`MAX_PAUSE`]. Any activity resets
//! the pause.

use std::time::Duration;

/// The longest pause between two polls: bounds the extra latency an idle rank adds, and keeps
/// an idle rank's CPU use near 1% of a core.
pub const MAX_PAUSE: Duration = Duration::from_millis(2);
const FIRST_SLEEP: Duration = Duration::from_micros(20);
const QUICK_POLLS: u32 = 100;

/// Backoff state of a waiting loop.
#[derive(Debug, Default)]
pub struct Idle {
    polls: u32,
    sleep: Duration,
}

impl Idle {
    /// Something happened: the next wait starts short again.
    pub fn reset(&mut self) {
        self.polls = 0;
        self.sleep = Duration::ZERO;
    }

    /// How long to wait before the next poll: zero (poll again at once) for the first polls after
    /// activity, then a pause doubling from 20 µs to [`MAX_PAUSE`].
    pub fn next_pause(&mut self) -> Duration {
        if self.polls < QUICK_POLLS {
            self.polls += 1;
            return Duration::ZERO;
        }
        self.sleep = if self.sleep.is_zero() {
            FIRST_SLEEP
        } else {
            (self.sleep * 2).min(MAX_PAUSE)
        };
        self.sleep
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
    fn pauses_grow_to_the_bound_and_reset() {
        let mut idle = Idle::default();
        let pauses: Vec<Duration> = (0..QUICK_POLLS + 20).map(|_| idle.next_pause()).collect();
        assert!(pauses[..QUICK_POLLS as usize].iter().all(|p| p.is_zero()));
        assert_eq!(pauses[QUICK_POLLS as usize], FIRST_SLEEP);
        assert!(pauses.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*pauses.last().unwrap(), MAX_PAUSE);
        idle.reset();
        assert!(idle.next_pause().is_zero());
    }
}
