//! [`Agenda`]: the engine's events by time, earliest first, those of the same time in the
//! order they were scheduled.
//!
//! A run of a million workers keeps millions of events pending, and each is popped once: the
//! heap holds only small keys (time, order, place), the events themselves wait in a slab whose
//! places are reused, so that sifting moves 32 bytes per level rather than the whole event
//! (a message with its bytes and route). The heap is 4-ary: half the levels of a binary one,
//! and a node's four children side by side, so a pop from a heap larger than the caches
//! misses them about half as often.

use std::time::Duration;

/// Children per node of the heap.
const ARITY: usize = 4;

/// An event's place in the order: its time, then the order it was scheduled in (unique).
#[derive(Debug, Clone, Copy)]
struct Key {
    at: Duration,
    order: u64,
    /// Where the event waits in the slab.
    place: u32,
}

impl Key {
    fn before(&self, other: &Key) -> bool {
        (self.at, self.order) < (other.at, other.order)
    }
}

/// Events of type `E` by time.
pub(crate) struct Agenda<E> {
    /// A 4-ary min-heap: each key before its children, those of node `i` at `4i + 1..4i + 5`.
    heap: Vec<Key>,
    slab: Vec<Option<E>>,
    /// Places of `slab` free for the next events.
    free: Vec<u32>,
    scheduled: u64,
}

impl<E> Agenda<E> {
    pub(crate) fn new() -> Self {
        Agenda {
            heap: Vec::new(),
            slab: Vec::new(),
            free: Vec::new(),
            scheduled: 0,
        }
    }

    /// `event` happens at `at`, after every event scheduled before it for the same time.
    pub(crate) fn push(&mut self, at: Duration, event: E) {
        let place = match self.free.pop() {
            Some(place) => {
                self.slab[place as usize] = Some(event);
                place
            }
            None => {
                self.slab.push(Some(event));
                u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 events pending")
            }
        };
        self.scheduled += 1;
        let key = Key {
            at,
            order: self.scheduled,
            place,
        };
        // Sift up: move the hole from the end to where the key goes.
        let mut hole = self.heap.len();
        self.heap.push(key);
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if !key.before(&self.heap[parent]) {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = key;
    }

    /// The next event and its time, taken off the agenda.
    pub(crate) fn pop(&mut self) -> Option<(Duration, E)> {
        let top = *self.heap.first()?;
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            // Sift down: move the hole from the root to where the last key goes.
            let len = self.heap.len();
            let mut hole = 0;
            loop {
                let first = ARITY * hole + 1;
                if first >= len {
                    break;
                }
                let mut least = first;
                for child in first + 1..(first + ARITY).min(len) {
                    if self.heap[child].before(&self.heap[least]) {
                        least = child;
                    }
                }
                if !self.heap[least].before(&last) {
                    break;
                }
                self.heap[hole] = self.heap[least];
                hole = least;
            }
            self.heap[hole] = last;
        }
        self.free.push(top.place);
        let event = self.slab[top.place as usize]
            .take()
            .expect("a key in the heap has its event");
        Some((top.at, event))
    }

    /// The time of the next event.
    pub(crate) fn next_time(&self) -> Option<Duration> {
        self.heap.first().map(|key| key.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::{collection::vec, prelude::*};

    proptest! {
        /// Pushes and pops interleaved: events come out by time, those of one time in the
        /// order pushed, and the next time is the earliest pending.
        #[test]
        fn events_come_by_time_then_in_the_order_scheduled(
            steps in vec((0u64..20, any::<bool>()), 0..200)
        ) {
            let mut agenda = Agenda::new();
            // The model: (time, order pushed) of each pending event.
            let mut pending: Vec<(u64, usize)> = Vec::new();
            for (k, &(at, pop)) in steps.iter().enumerate() {
                let earliest = (0..pending.len()).min_by_key(|&i| pending[i]);
                prop_assert_eq!(
                    agenda.next_time(),
                    earliest.map(|i| Duration::from_secs(pending[i].0))
                );
                if pop {
                    let expected = earliest.map(|i| pending.remove(i));
                    let got = agenda.pop().map(|(at, k)| (at.as_secs(), k));
                    prop_assert_eq!(got, expected);
                } else {
                    agenda.push(Duration::from_secs(at), k);
                    pending.push((at, k));
                }
            }
        }
    }
}
