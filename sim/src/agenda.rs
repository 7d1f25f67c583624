//! [`Agenda`]: the engine's events by time, earliest first, those of the same time in the
//! order they were scheduled.
//!
//! A run of a million workers keeps millions of events pending, and each is popped once: the
//! heap holds only small keys (time, order, place), the events themselves wait in a slab whose
//! places are reused, so that sifting moves 32 bytes per level rather than the whole event
//! (a message with its bytes and route).

use std::{cmp::Reverse, collections::BinaryHeap, time::Duration};

/// Events of type `E` by time.
pub(crate) struct Agenda<E> {
    /// (time, order scheduled, place in `slab`), earliest first.
    heap: BinaryHeap<Reverse<(Duration, u64, u32)>>,
    slab: Vec<Option<E>>,
    /// Places of `slab` free for the next events.
    free: Vec<u32>,
    scheduled: u64,
}

impl<E> Agenda<E> {
    pub(crate) fn new() -> Self {
        Agenda {
            heap: BinaryHeap::new(),
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
        self.heap.push(Reverse((at, self.scheduled, place)));
    }

    /// The next event and its time, taken off the agenda.
    pub(crate) fn pop(&mut self) -> Option<(Duration, E)> {
        let Reverse((at, _, place)) = self.heap.pop()?;
        self.free.push(place);
        let event = self.slab[place as usize]
            .take()
            .expect("a place in the heap holds its event");
        Some((at, event))
    }

    /// The time of the next event.
    pub(crate) fn next_time(&self) -> Option<Duration> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
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
