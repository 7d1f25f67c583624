//! How the master divides C among the strategies (`docs/model.md` section 7).
//!
//! C is `nb x nb` blocks. A cluster of the row/column strategy receives row/column pairs: its
//! `k`-th pair brings a row of A not yet given to any such cluster (from the top) and the
//! `k`-th column of B, and makes possible the products of the new row by every column it
//! holds and of every row it holds by the new column: `2k - 1` finished C blocks while it has
//! both (only the new column's once rows run out). Everyone else (the master's workers, a
//! cluster of the block-pair strategy) claims whole C blocks from the outer edge of C inwards
//! and computes each as `nb` block pairs. A C block is claimed once, by whoever asks first, so
//! the strategies meet wherever the clusters' speeds make them meet.

use std::collections::{HashMap, VecDeque};

/// One row/column pair handed to a cluster: its rank among the pairs that cluster received
/// (from 1), what it brings, and the C blocks it makes possible that nobody claimed before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairClaim {
    /// `RC`: the pair's rank for its cluster, from 1.
    pub rank: u64,
    /// The new row of A, if rows were left.
    pub row: Option<usize>,
    /// The new column of B, if columns were left.
    pub col: Option<usize>,
    /// The C blocks `(row, col)` this pair makes possible, now claimed by the cluster.
    pub products: Vec<(usize, usize)>,
}

/// What one cluster of the row/column strategy holds.
#[derive(Debug, Default)]
struct Held {
    rows: Vec<usize>,
    cols: usize,
    pairs: u64,
}

/// Who computes which C block.
#[derive(Debug)]
pub struct Division {
    nb: usize,
    claimed: Vec<bool>,
    unclaimed: usize,
    /// C blocks from the outer edge inwards: the order block-pair claimers take them in.
    outer_first: Vec<(usize, usize)>,
    cursor: usize,
    /// Rows of A not given to a row/column cluster yet, top first.
    free_rows: VecDeque<usize>,
    clusters: HashMap<String, Held>,
}

impl Division {
    /// Nothing claimed yet, in a C of `nb x nb` blocks.
    pub fn new(nb: usize) -> Self {
        let mut outer_first: Vec<(usize, usize)> =
            (0..nb).flat_map(|i| (0..nb).map(move |j| (i, j))).collect();
        // The outermost L (max(i, j) = nb - 1) first; inside one L, by position.
        outer_first.sort_by_key(|&(i, j)| (std::cmp::Reverse(i.max(j)), i, j));
        Division {
            nb,
            claimed: vec![false; nb * nb],
            unclaimed: nb * nb,
            outer_first,
            cursor: 0,
            free_rows: (0..nb).collect(),
            clusters: HashMap::new(),
        }
    }

    /// Every C block is claimed.
    pub fn is_divided(&self) -> bool {
        self.unclaimed == 0
    }

    fn claim(&mut self, (i, j): (usize, usize)) -> bool {
        let at = i * self.nb + j;
        let free = !self.claimed[at];
        if free {
            self.claimed[at] = true;
            self.unclaimed -= 1;
        }
        free
    }

    /// The next C block for a block-pair claimer, from the outer edge inwards.
    pub fn next_block(&mut self) -> Option<(usize, usize)> {
        while let Some(&block) = self.outer_first.get(self.cursor) {
            self.cursor += 1;
            if self.claim(block) {
                return Some(block);
            }
        }
        None
    }

    /// The next row/column pair for `cluster`, with the C blocks it makes possible that are
    /// still free (pairs whose blocks were all claimed by others are skipped); `None` when
    /// the cluster has every column and no row is left for it.
    pub fn next_pair(&mut self, cluster: &str) -> Option<PairClaim> {
        loop {
            let held = self.clusters.entry(cluster.to_string()).or_default();
            let col = (held.cols < self.nb).then_some(held.cols);
            let row = match col {
                // Rows only travel with a column: a row alone makes no product.
                Some(_) => self.free_rows.pop_front(),
                None => None,
            };
            col?;
            held.pairs += 1;
            let rank = held.pairs;
            let mut candidates = Vec::new();
            if let Some(c) = col {
                candidates.extend(held.rows.iter().map(|&r| (r, c)));
                held.cols += 1;
            }
            if let Some(r) = row {
                candidates.extend((0..held.cols).map(|c| (r, c)));
                held.rows.push(r);
            }
            let products: Vec<_> = candidates.into_iter().filter(|&b| self.claim(b)).collect();
            if !products.is_empty() {
                return Some(PairClaim {
                    rank,
                    row,
                    col,
                    products,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_k_th_pair_makes_2k_minus_1_products() {
        let mut division = Division::new(8);
        for k in 1..=8u64 {
            let pair = division.next_pair("spain").unwrap();
            assert_eq!(pair.rank, k);
            assert_eq!(pair.products.len() as u64, 2 * k - 1, "{pair:?}");
            let new = (k - 1) as usize;
            assert_eq!((pair.row, pair.col), (Some(new), Some(new)));
            assert!(pair.products.iter().all(|&(i, j)| i.max(j) == new));
        }
        assert!(division.is_divided());
        assert_eq!(division.next_pair("spain"), None);
        assert_eq!(division.next_block(), None);
    }

    #[test]
    fn block_claimers_start_from_the_outer_edge_and_nothing_is_claimed_twice() {
        let nb = 6;
        let mut division = Division::new(nb);
        assert_eq!(division.next_block(), Some((0, 5)));
        let mut seen = vec![(0, 5)];
        // Two row/column clusters and block claimers in turn.
        let mut turn = 0;
        while !division.is_divided() {
            turn += 1;
            let claimed = match turn % 3 {
                0 => division.next_block().into_iter().collect(),
                1 => division
                    .next_pair("spain")
                    .map(|p| p.products)
                    .unwrap_or_default(),
                _ => division
                    .next_pair("brazil")
                    .map(|p| p.products)
                    .unwrap_or_default(),
            };
            seen.extend(claimed);
        }
        seen.sort();
        let all: Vec<_> = (0..nb).flat_map(|i| (0..nb).map(move |j| (i, j))).collect();
        assert_eq!(seen, all);
    }

    #[test]
    fn once_rows_run_out_a_pair_brings_only_a_column() {
        let mut division = Division::new(3);
        // spain takes rows 0 and 2, brazil row 1.
        let first = division.next_pair("spain").unwrap();
        assert_eq!(first.products, vec![(0, 0)]);
        assert_eq!(division.next_pair("brazil").unwrap().products, vec![(1, 0)]);
        let second = division.next_pair("spain").unwrap();
        assert_eq!(second.products, vec![(0, 1), (2, 0), (2, 1)]);
        let third = division.next_pair("spain").unwrap();
        assert_eq!(third.row, None);
        assert_eq!(third.products, vec![(0, 2), (2, 2)]);
        assert_eq!(division.next_pair("spain"), None);
        assert_eq!(division.next_pair("brazil").unwrap().products, vec![(1, 1)]);
        assert_eq!(division.next_pair("brazil").unwrap().products, vec![(1, 2)]);
        assert!(division.is_divided());
    }
}
