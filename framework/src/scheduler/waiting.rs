//! [`Waiting`]: the requests for work a master has not served yet, indexed so that a
//! scheduler picks in `O(log W)`.

use std::collections::{BTreeSet, VecDeque};

use super::requests::Requester;

/// One fed rank, as the index knows it.
#[derive(Debug, Default)]
struct Slot {
    /// Its waiting requests (one per batch of room), oldest first, by arrival number.
    requests: VecDeque<u64>,
    holding: usize,
    worker: bool,
    /// Set aside by the master for this round (or until it can be served): out of the
    /// indexes, its requests kept.
    aside: bool,
}

/// The requests waiting at a master, one per batch of room a rank offered, indexed by tasks
/// held, by arrival and by rank. Each rank appears in the indexes once, under its oldest
/// request: all its requests share its holding, so the oldest is always the first of them.
#[derive(Debug, Default)]
pub struct Waiting {
    slots: Vec<Slot>,
    /// (holding, oldest request, rank) of each rank with requests.
    by_holding: BTreeSet<(usize, u64, usize)>,
    /// (oldest request, rank).
    by_arrival: BTreeSet<(u64, usize)>,
    /// Ranks with requests.
    by_rank: BTreeSet<usize>,
    /// Ranks set aside.
    aside: Vec<usize>,
    next_request: u64,
    len: usize,
}

impl Waiting {
    /// No request waits (setting aside counts as not waiting).
    pub fn is_empty(&self) -> bool {
        self.by_rank.is_empty()
    }

    /// Requests waiting (batches of room), not counting the ranks set aside.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The rank holding the fewest tasks, the one whose request is oldest among those.
    pub fn fewest_held(&self) -> Option<usize> {
        self.by_holding.first().map(|&(_, _, rank)| rank)
    }

    /// The rank whose request is the oldest.
    pub fn oldest(&self) -> Option<usize> {
        self.by_arrival.first().map(|&(_, rank)| rank)
    }

    /// The highest rank waiting.
    pub fn highest_rank(&self) -> Option<usize> {
        self.by_rank.last().copied()
    }

    /// The lowest rank waiting.
    pub fn lowest_rank(&self) -> Option<usize> {
        self.by_rank.first().copied()
    }

    /// `rank` as a requester, if it waits.
    pub fn get(&self, rank: usize) -> Option<Requester> {
        let slot = self.slots.get(rank)?;
        (!slot.aside && !slot.requests.is_empty()).then_some(Requester {
            rank,
            holding: slot.holding,
            worker: slot.worker,
        })
    }

    /// Requests `rank` has waiting (batches of room).
    pub fn requests(&self, rank: usize) -> usize {
        self.slots
            .get(rank)
            .filter(|s| !s.aside)
            .map_or(0, |s| s.requests.len())
    }

    /// Every rank waiting, by rank (`O(W)`: for policies that must see them all).
    pub fn iter(&self) -> impl Iterator<Item = Requester> + '_ {
        self.by_rank.iter().filter_map(|&rank| self.get(rank))
    }

    fn slot(&mut self, rank: usize) -> &mut Slot {
        if rank >= self.slots.len() {
            self.slots.resize_with(rank + 1, Slot::default);
        }
        &mut self.slots[rank]
    }

    fn unindex(&mut self, rank: usize) {
        let slot = &self.slots[rank];
        if let (Some(&oldest), false) = (slot.requests.front(), slot.aside) {
            self.by_holding.remove(&(slot.holding, oldest, rank));
            self.by_arrival.remove(&(oldest, rank));
            self.by_rank.remove(&rank);
            self.len -= slot.requests.len();
        }
    }

    fn index(&mut self, rank: usize) {
        let slot = &self.slots[rank];
        if let (Some(&oldest), false) = (slot.requests.front(), slot.aside) {
            self.by_holding.insert((slot.holding, oldest, rank));
            self.by_arrival.insert((oldest, rank));
            self.by_rank.insert(rank);
            self.len += slot.requests.len();
        }
    }

    /// Rank `rank` is fed: a worker or not.
    pub(crate) fn register(&mut self, rank: usize, worker: bool) {
        self.slot(rank).worker = worker;
    }

    /// `rank` offers room for `count` more batches.
    pub(crate) fn push(&mut self, rank: usize, count: usize) {
        if count == 0 {
            return;
        }
        self.slot(rank);
        self.unindex(rank);
        for _ in 0..count {
            let request = self.next_request;
            self.next_request += 1;
            self.slots[rank].requests.push_back(request);
        }
        self.index(rank);
    }

    /// `rank` was served: its oldest request is used.
    pub(crate) fn serve(&mut self, rank: usize) {
        if self.slots.get(rank).is_none_or(|s| s.requests.is_empty()) {
            return;
        }
        self.unindex(rank);
        self.slots[rank].requests.pop_front();
        self.index(rank);
    }

    /// `rank` now holds `holding` tasks.
    pub(crate) fn set_holding(&mut self, rank: usize, holding: usize) {
        self.slot(rank);
        if self.slots[rank].holding == holding {
            return;
        }
        self.unindex(rank);
        self.slots[rank].holding = holding;
        self.index(rank);
    }

    /// `rank` is gone: its requests are dropped.
    pub(crate) fn remove(&mut self, rank: usize) {
        if rank < self.slots.len() {
            self.unindex(rank);
            self.slots[rank].requests.clear();
            self.slots[rank].aside = false;
            self.aside.retain(|&r| r != rank);
        }
    }

    /// Keep `rank`'s requests out of the picks until [`restore`](Self::restore) or
    /// [`restore_all`](Self::restore_all).
    pub(crate) fn set_aside(&mut self, rank: usize) {
        if self.slots.get(rank).is_none_or(|s| s.aside) {
            return;
        }
        self.unindex(rank);
        self.slots[rank].aside = true;
        self.aside.push(rank);
    }

    /// Whether `rank` is set aside.
    pub(crate) fn is_aside(&self, rank: usize) -> bool {
        self.slots.get(rank).is_some_and(|s| s.aside)
    }

    /// Put `rank`'s requests back among the picks, in their place.
    pub(crate) fn restore(&mut self, rank: usize) {
        if !self.is_aside(rank) {
            return;
        }
        self.slots[rank].aside = false;
        self.aside.retain(|&r| r != rank);
        self.index(rank);
    }

    /// Put every rank set aside back.
    pub(crate) fn restore_all(&mut self) {
        for rank in std::mem::take(&mut self.aside) {
            self.slots[rank].aside = false;
            self.index(rank);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewest_held_then_oldest_and_aside_keeps_its_place() {
        let mut waiting = Waiting::default();
        for rank in 1..=3 {
            waiting.register(rank, true);
        }
        waiting.push(2, 2);
        waiting.push(1, 1);
        waiting.push(3, 1);
        assert_eq!(waiting.len(), 4);
        assert_eq!(waiting.fewest_held(), Some(2));
        waiting.serve(2);
        waiting.set_holding(2, 1);
        assert_eq!(waiting.fewest_held(), Some(1));
        assert_eq!(waiting.oldest(), Some(2));
        assert_eq!(waiting.highest_rank(), Some(3));
        waiting.set_aside(1);
        assert_eq!(waiting.fewest_held(), Some(3));
        waiting.restore_all();
        assert_eq!(waiting.fewest_held(), Some(1));
        waiting.remove(1);
        assert_eq!(waiting.len(), 2);
        assert_eq!(
            waiting.iter().map(|r| r.rank).collect::<Vec<_>>(),
            vec![2, 3]
        );
    }
}
