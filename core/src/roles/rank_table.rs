//! [`RankTable`]: what a core keeps per fed rank, in a vector indexed by rank.
//!
//! A master looks its ranks up on every message; ranks are small dense integers (an MPI
//! communicator's), so a vector finds one in `O(1)` where an ordered map costs `O(log W)` and
//! a cache miss per level. Iteration is by rank, as an ordered map's would be.

use std::ops::{Index, IndexMut};

/// Values by rank; ranks without one (the master itself, an upstream CM) are `None`.
#[derive(Debug)]
pub(crate) struct RankTable<T> {
    slots: Vec<Option<T>>,
    len: usize,
}

impl<T> RankTable<T> {
    /// An empty table with room for ranks below `ranks` (a cluster of a million workers
    /// would otherwise grow it by doubling, up to twice the memory it needs).
    pub(crate) fn with_ranks(ranks: usize) -> Self {
        let mut slots = Vec::with_capacity(ranks);
        slots.resize_with(ranks, || None);
        RankTable { slots, len: 0 }
    }

    /// Set `rank`'s value (replacing any).
    pub(crate) fn insert(&mut self, rank: usize, value: T) {
        if rank >= self.slots.len() {
            self.slots.resize_with(rank + 1, || None);
        }
        if self.slots[rank].replace(value).is_none() {
            self.len += 1;
        }
    }

    /// `rank`'s value, if it has one.
    pub(crate) fn get(&self, rank: &usize) -> Option<&T> {
        self.slots.get(*rank).and_then(Option::as_ref)
    }

    /// `rank`'s value, if it has one.
    pub(crate) fn get_mut(&mut self, rank: &usize) -> Option<&mut T> {
        self.slots.get_mut(*rank).and_then(Option::as_mut)
    }

    /// Ranks with a value.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The ranks with a value, in increasing order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = usize> + '_ {
        self.iter().map(|(rank, _)| rank)
    }

    /// The values, by rank.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    /// The values, by rank.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().flatten()
    }

    /// (rank, value) pairs, by rank.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(rank, v)| v.as_ref().map(|v| (rank, v)))
    }
}

impl<T> Index<&usize> for RankTable<T> {
    type Output = T;

    /// # Panics
    /// If `rank` has no value: for ranks the caller knows are in the table.
    fn index(&self, rank: &usize) -> &T {
        self.get(rank)
            .unwrap_or_else(|| panic!("rank {rank} is not in the table"))
    }
}

impl<T> IndexMut<&usize> for RankTable<T> {
    fn index_mut(&mut self, rank: &usize) -> &mut T {
        self.get_mut(rank)
            .unwrap_or_else(|| panic!("rank {rank} is not in the table"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_map_ordered_by_rank() {
        let mut table = RankTable::with_ranks(3);
        assert_eq!((table.len(), table.get(&2)), (0, None));
        assert_eq!(table.len(), 0);
        table.insert(5, "e");
        table.insert(2, "b");
        table.insert(5, "E");
        assert_eq!(table.len(), 2);
        assert_eq!(table.get(&2), Some(&"b"));
        assert_eq!(table.get(&3), None);
        assert_eq!(table.get(&100), None);
        assert_eq!(table[&5], "E");
        *table.get_mut(&2).unwrap() = "B";
        assert_eq!(table.keys().collect::<Vec<_>>(), vec![2, 5]);
        assert_eq!(table.values().copied().collect::<Vec<_>>(), vec!["B", "E"]);
        for v in table.values_mut() {
            *v = "x";
        }
        assert_eq!(table.iter().collect::<Vec<_>>(), vec![(2, &"x"), (5, &"x")]);
    }
}
