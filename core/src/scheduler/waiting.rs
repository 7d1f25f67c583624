//! [`Waiting`]: the requests for work a master has not served yet, indexed so that a
//! scheduler picks in `O(log W)`.

use std::collections::VecDeque;

use super::requests::Requester;

/// One fed rank, as the index knows it.
#[derive(Debug, Default)]
struct Slot {
    /// Its waiting requests (one per batch of room), oldest first, by arrival number: served
    /// from the front, offered at the back (a worker's result offers one at every task).
    requests: VecDeque<u64>,
    holding: usize,
    worker: bool,
    /// Set aside by the master for this round (or until it can be served): out of the
    /// indexes, its requests kept.
    aside: bool,
    /// Its requests counted in [`Waiting::len`]: none while set aside.
    counted: usize,
}

impl Slot {
    /// Its oldest request, while it waits (has requests and is not set aside).
    fn oldest_waiting(&self) -> Option<u64> {
        self.requests.front().copied().filter(|_| !self.aside)
    }
}

/// The requests waiting at a master, one per batch of room a rank offered, indexed by tasks
/// held, by arrival and by rank. Each rank appears in the indexes once, under its oldest
/// request: all its requests share its holding, so the oldest is always the first of them.
///
/// A rank that waits alone is not filed: every order puts it first. A master in its steady
/// state has one rank waiting at a time (the one whose result just came in, served at once),
/// and leaving it unfiled saved the master 150 of its 4,070 instructions per task (callgrind,
/// `docs/benchmarks.md`). Once a second rank waits, the first is filed and the indexes serve
/// until no rank waits.
#[derive(Debug, Default)]
pub struct Waiting {
    slots: Vec<Slot>,
    /// The only rank waiting, when it waits alone: then the indexes are empty.
    alone: Option<usize>,
    /// (holding, oldest request) of each rank with requests, least first (ties: lowest rank).
    by_holding: RankHeap<(usize, u64)>,
    /// Oldest request of each rank with requests.
    by_arrival: RankHeap<u64>,
    /// Ranks with requests.
    by_rank: RankSet,
    /// Ranks set aside, and possibly some restored since (their slot says which): restoring
    /// one does not search this list.
    aside: Vec<usize>,
    next_request: u64,
    len: usize,
}

impl Waiting {
    /// No request waits (setting aside counts as not waiting).
    pub fn is_empty(&self) -> bool {
        self.alone.is_none() && self.by_rank.is_empty()
    }

    /// Requests waiting (batches of room), not counting the ranks set aside.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The rank holding the fewest tasks, the one whose request is oldest among those.
    pub fn fewest_held(&self) -> Option<usize> {
        self.alone.or_else(|| self.by_holding.least())
    }

    /// The rank whose request is the oldest.
    pub fn oldest(&self) -> Option<usize> {
        self.alone.or_else(|| self.by_arrival.least())
    }

    /// The highest rank waiting.
    pub fn highest_rank(&self) -> Option<usize> {
        self.alone.or_else(|| self.by_rank.last())
    }

    /// The lowest rank waiting.
    pub fn lowest_rank(&self) -> Option<usize> {
        self.alone.or_else(|| self.by_rank.first())
    }

    /// `rank` as a requester, if it waits.
    pub fn get(&self, rank: usize) -> Option<Requester> {
        let slot = self.slots.get(rank)?;
        slot.oldest_waiting().map(|_| Requester {
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
        self.alone
            .into_iter()
            .chain(self.by_rank.iter())
            .filter_map(|rank| self.get(rank))
    }

    fn slot(&mut self, rank: usize) -> &mut Slot {
        if rank >= self.slots.len() {
            self.slots.resize_with(rank + 1, Slot::default);
        }
        &mut self.slots[rank]
    }

    /// Bring `rank`'s entries in the indexes (and the count of requests) in line with its
    /// slot: filed under its holding and oldest request while it has requests and is not set
    /// aside, out otherwise. A key that did not change costs a comparison; one that did, a
    /// sift, rather than a removal and an insertion in each index.
    fn refile(&mut self, rank: usize) {
        let slot = &mut self.slots[rank];
        let counted = if slot.aside { 0 } else { slot.requests.len() };
        self.len = self.len + counted - slot.counted;
        slot.counted = counted;
        let waits = slot.oldest_waiting().is_some();
        if self.alone == Some(rank) {
            if !waits {
                self.alone = None;
            }
            return;
        }
        if waits && self.alone.is_none() && self.by_rank.is_empty() {
            self.alone = Some(rank);
            return;
        }
        if let Some(alone) = self.alone.take() {
            // A second rank waits: the first is filed too.
            self.file(alone);
        }
        self.file(rank);
    }

    /// File `rank` in the indexes under its holding and oldest request while it waits, or take
    /// it out.
    fn file(&mut self, rank: usize) {
        let slot = &self.slots[rank];
        match slot.oldest_waiting() {
            Some(oldest) => {
                self.by_holding.set(rank, (slot.holding, oldest));
                self.by_arrival.set(rank, oldest);
                self.by_rank.insert(rank);
            }
            None => {
                self.by_holding.remove(rank);
                self.by_arrival.remove(rank);
                self.by_rank.remove(rank);
            }
        }
    }

    /// Room for ranks below `ranks`, reserved at once rather than by doubling.
    pub(crate) fn reserve_ranks(&mut self, ranks: usize) {
        self.slots
            .reserve_exact(ranks.saturating_sub(self.slots.len()));
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
        let (first, end) = (self.next_request, self.next_request + count as u64);
        self.next_request = end;
        let requests = &mut self.slot(rank).requests;
        for request in first..end {
            requests.push_back(request);
        }
        self.refile(rank);
    }

    /// `rank` was served: its oldest request is used.
    pub(crate) fn serve(&mut self, rank: usize) {
        if self.slots.get(rank).is_none_or(|s| s.requests.is_empty()) {
            return;
        }
        self.slots[rank].requests.pop_front();
        self.refile(rank);
    }

    /// `rank` now holds `holding` tasks.
    pub(crate) fn set_holding(&mut self, rank: usize, holding: usize) {
        let slot = self.slot(rank);
        if slot.holding == holding {
            return;
        }
        slot.holding = holding;
        // A rank that does not wait is filed nowhere: nothing to refile (as when a worker's
        // result comes in, before it offers room again, and once it is served).
        if slot.oldest_waiting().is_some() {
            self.refile(rank);
        }
    }

    /// `rank` is gone: its requests are dropped.
    pub(crate) fn remove(&mut self, rank: usize) {
        if rank < self.slots.len() {
            self.slots[rank].requests.clear();
            self.slots[rank].aside = false;
            self.refile(rank);
        }
    }

    /// Keep `rank`'s requests out of the picks until [`restore`](Self::restore) or
    /// [`restore_all`](Self::restore_all).
    pub(crate) fn set_aside(&mut self, rank: usize) {
        if self.slots.get(rank).is_none_or(|s| s.aside) {
            return;
        }
        self.slots[rank].aside = true;
        self.refile(rank);
        if self.aside.len() >= 2 * self.slots.len() {
            // Mostly ranks restored since: keep those still aside, once each.
            let slots = &self.slots;
            self.aside.retain(|&r| slots[r].aside);
            self.aside.sort_unstable();
            self.aside.dedup();
        }
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
        self.refile(rank);
    }

    /// Put every rank set aside back.
    pub(crate) fn restore_all(&mut self) {
        // The list keeps its buffer: a sub-master sets its ranks aside and restores them at
        // every batch its CM brings.
        let mut aside = std::mem::take(&mut self.aside);
        for rank in aside.drain(..) {
            if self.slots[rank].aside {
                self.slots[rank].aside = false;
                self.refile(rank);
            }
        }
        self.aside = aside;
    }
}

/// Ranks, each under a key, the least key (then the lowest rank) first: a binary heap with
/// each rank's place in it, so that a rank's entry is found, changed or removed in
/// `O(log W)` without a search and without allocating once it has grown to the ranks fed
/// (ordered sets allocate and free a node as a set of one or two ranks empties and fills,
/// which a master's waiting ranks do at every task).
#[derive(Debug)]
struct RankHeap<K> {
    /// (key, rank), a heap: each entry's key and rank no greater than its children's.
    heap: Vec<(K, usize)>,
    /// By rank: its index in `heap`, `ABSENT` if none.
    place: Vec<usize>,
}

const ABSENT: usize = usize::MAX;

impl<K> Default for RankHeap<K> {
    fn default() -> Self {
        RankHeap {
            heap: Vec::new(),
            place: Vec::new(),
        }
    }
}

impl<K: Ord + Copy> RankHeap<K> {
    /// The rank with the least key, the lowest rank among equal keys.
    fn least(&self) -> Option<usize> {
        self.heap.first().map(|&(_, rank)| rank)
    }

    /// File `rank` under `key` (it must not be filed).
    fn insert(&mut self, rank: usize, key: K) {
        if rank >= self.place.len() {
            self.place.resize(rank + 1, ABSENT);
        }
        debug_assert_eq!(self.place[rank], ABSENT, "rank {rank} filed twice");
        self.heap.push((key, rank));
        self.place[rank] = self.heap.len() - 1;
        self.sift_up(self.heap.len() - 1);
    }

    /// File `rank` under `key`, or move it there if it is filed under another.
    fn set(&mut self, rank: usize, key: K) {
        let Some(&at) = self.place.get(rank).filter(|&&at| at != ABSENT) else {
            return self.insert(rank, key);
        };
        let before = std::mem::replace(&mut self.heap[at].0, key);
        if key < before {
            self.sift_up(at);
        } else if key > before {
            self.sift_down(at);
        }
    }

    /// Take `rank` out, if filed.
    fn remove(&mut self, rank: usize) {
        let Some(&at) = self.place.get(rank).filter(|&&at| at != ABSENT) else {
            return;
        };
        self.place[rank] = ABSENT;
        let last = self.heap.pop().expect("a filed rank is in the heap");
        if at < self.heap.len() {
            self.heap[at] = last;
            self.place[last.1] = at;
            self.sift_down(at);
            self.sift_up(at);
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.place[self.heap[a].1] = a;
        self.place[self.heap[b].1] = b;
    }

    fn sift_up(&mut self, mut at: usize) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.heap[parent] <= self.heap[at] {
                break;
            }
            self.swap(parent, at);
            at = parent;
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let (left, right) = (2 * at + 1, 2 * at + 2);
            let mut least = at;
            if left < self.heap.len() && self.heap[left] < self.heap[least] {
                least = left;
            }
            if right < self.heap.len() && self.heap[right] < self.heap[least] {
                least = right;
            }
            if least == at {
                return;
            }
            self.swap(least, at);
            at = least;
        }
    }
}

/// A set of ranks as bits: ranks are small dense integers, so membership costs a bit flip and
/// the first or last a scan of `W / 64` words.
#[derive(Debug, Default)]
struct RankSet {
    words: Vec<u64>,
    len: usize,
}

impl RankSet {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn insert(&mut self, rank: usize) {
        let (word, bit) = (rank / 64, 1u64 << (rank % 64));
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        if self.words[word] & bit == 0 {
            self.words[word] |= bit;
            self.len += 1;
        }
    }

    fn remove(&mut self, rank: usize) {
        let (word, bit) = (rank / 64, 1u64 << (rank % 64));
        if let Some(w) = self.words.get_mut(word) {
            if *w & bit != 0 {
                *w &= !bit;
                self.len -= 1;
            }
        }
    }

    fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    fn last(&self) -> Option<usize> {
        let (word, &bits) = self
            .words
            .iter()
            .enumerate()
            .rev()
            .find(|(_, w)| **w != 0)?;
        Some(word * 64 + 63 - bits.leading_zeros() as usize)
    }

    /// The ranks, in increasing order.
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(word, &bits)| {
            let mut rest = bits;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    word * 64 + bit
                })
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

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

    /// What [`Waiting`] answers, computed by a scan of plain per-rank state.
    #[derive(Default)]
    struct Model {
        /// By rank: requests (arrival numbers), holding, set aside.
        ranks: std::collections::BTreeMap<usize, (Vec<u64>, usize, bool)>,
        next: u64,
    }

    impl Model {
        fn waiting(&self) -> impl Iterator<Item = (usize, &(Vec<u64>, usize, bool))> {
            self.ranks
                .iter()
                .filter(|(_, (requests, _, aside))| !requests.is_empty() && !aside)
                .map(|(&rank, state)| (rank, state))
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(usize, usize),
        Serve(usize),
        Hold(usize, usize),
        Aside(usize),
        Restore(usize),
        RestoreAll,
        Remove(usize),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0usize..6, 0usize..3).prop_map(|(r, n)| Op::Push(r, n)),
            (0usize..6).prop_map(Op::Serve),
            (0usize..6, 0usize..4).prop_map(|(r, h)| Op::Hold(r, h)),
            (0usize..6).prop_map(Op::Aside),
            (0usize..6).prop_map(Op::Restore),
            Just(Op::RestoreAll),
            (0usize..6).prop_map(Op::Remove),
        ]
    }

    proptest::proptest! {
        /// The indexes answer every query as a scan of the ranks would, after any sequence of
        /// changes (queries between them or not).
        #[test]
        fn the_indexes_answer_as_a_scan_does(
            ops in proptest::collection::vec((op(), proptest::bool::ANY), 0..120),
        ) {
            let mut waiting = Waiting::default();
            let mut model = Model::default();
            for rank in 0..6 {
                waiting.register(rank, rank % 2 == 0);
                model.ranks.insert(rank, (Vec::new(), 0, false));
            }
            for (op, query) in ops {
                match op {
                    Op::Push(rank, n) => {
                        waiting.push(rank, n);
                        for _ in 0..n {
                            model.ranks.get_mut(&rank).unwrap().0.push(model.next);
                            model.next += 1;
                        }
                    }
                    Op::Serve(rank) => {
                        waiting.serve(rank);
                        let requests = &mut model.ranks.get_mut(&rank).unwrap().0;
                        if !requests.is_empty() {
                            requests.remove(0);
                        }
                    }
                    Op::Hold(rank, holding) => {
                        waiting.set_holding(rank, holding);
                        model.ranks.get_mut(&rank).unwrap().1 = holding;
                    }
                    Op::Aside(rank) => {
                        waiting.set_aside(rank);
                        model.ranks.get_mut(&rank).unwrap().2 = true;
                    }
                    Op::Restore(rank) => {
                        waiting.restore(rank);
                        model.ranks.get_mut(&rank).unwrap().2 = false;
                    }
                    Op::RestoreAll => {
                        waiting.restore_all();
                        for state in model.ranks.values_mut() {
                            state.2 = false;
                        }
                    }
                    Op::Remove(rank) => {
                        waiting.remove(rank);
                        let state = model.ranks.get_mut(&rank).unwrap();
                        state.0.clear();
                        state.2 = false;
                    }
                }
                if !query {
                    continue;
                }
                let fewest = model
                    .waiting()
                    .min_by_key(|(rank, (requests, holding, _))| (*holding, requests[0], *rank))
                    .map(|(rank, _)| rank);
                let oldest = model
                    .waiting()
                    .min_by_key(|(rank, (requests, _, _))| (requests[0], *rank))
                    .map(|(rank, _)| rank);
                proptest::prop_assert_eq!(waiting.fewest_held(), fewest);
                proptest::prop_assert_eq!(waiting.oldest(), oldest);
                proptest::prop_assert_eq!(waiting.lowest_rank(), model.waiting().map(|(r, _)| r).next());
                proptest::prop_assert_eq!(waiting.highest_rank(), model.waiting().map(|(r, _)| r).last());
                proptest::prop_assert_eq!(
                    waiting.len(),
                    model.waiting().map(|(_, (requests, _, _))| requests.len()).sum::<usize>()
                );
                proptest::prop_assert_eq!(waiting.is_empty(), model.waiting().next().is_none());
                proptest::prop_assert_eq!(
                    waiting.iter().map(|r| (r.rank, r.holding)).collect::<Vec<_>>(),
                    model.waiting().map(|(rank, (_, holding, _))| (rank, *holding)).collect::<Vec<_>>()
                );
                for rank in 0..6 {
                    let (requests, _, aside) = &model.ranks[&rank];
                    proptest::prop_assert_eq!(
                        waiting.requests(rank),
                        if *aside { 0 } else { requests.len() }
                    );
                }
            }
        }

        #[test]
        fn rank_heap_gives_the_least_key_then_the_lowest_rank(
            ops in proptest::collection::vec((0usize..40, proptest::option::of(0u8..8)), 0..300),
        ) {
            let mut heap = RankHeap::default();
            let mut model = std::collections::BTreeMap::new();
            for (rank, key) in ops {
                heap.remove(rank);
                model.remove(&rank);
                if let Some(key) = key {
                    heap.insert(rank, key);
                    model.insert(rank, key);
                }
                let least = model.iter().min_by_key(|(&rank, &key)| (key, rank)).map(|(&rank, _)| rank);
                proptest::prop_assert_eq!(heap.least(), least);
            }
        }

        #[test]
        fn rank_set_is_an_ordered_set(ops in proptest::collection::vec((0usize..300, proptest::bool::ANY), 0..200)) {
            let mut set = RankSet::default();
            let mut model = BTreeSet::new();
            for (rank, add) in ops {
                if add {
                    set.insert(rank);
                    model.insert(rank);
                } else {
                    set.remove(rank);
                    model.remove(&rank);
                }
                proptest::prop_assert_eq!(set.is_empty(), model.is_empty());
                proptest::prop_assert_eq!(set.first(), model.first().copied());
                proptest::prop_assert_eq!(set.last(), model.last().copied());
            }
            proptest::prop_assert_eq!(set.iter().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
        }
    }
}
