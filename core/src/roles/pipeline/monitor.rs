//! What the controller reads from the times that travel with the items: per group and
//! replica, the last `k` times one item took there; per group, the median of each replica's
//! combined as replicas working side by side combine (`docs/model.md`, (157)(158)).

use std::collections::{BTreeMap, VecDeque};

use hmw_model::pipeline::flow::side_by_side_s;

use crate::protocol::pipeline::{Address, Assignment, Item};

/// The recent times of every group of one mapping.
#[derive(Debug, Default)]
pub struct Monitor {
    /// `k`: times kept per replica.
    keep: usize,
    /// Each stage's group.
    group_of_stage: Vec<usize>,
    /// Each group's replicas.
    replicas: Vec<Vec<Address>>,
    recent: BTreeMap<(usize, Address), VecDeque<f64>>,
}

impl Monitor {
    /// A monitor of `assignment` keeping the last `keep` times of each replica.
    pub fn new(assignment: &Assignment, keep: u64) -> Self {
        let mut group_of_stage = Vec::new();
        for (g, group) in assignment.groups.iter().enumerate() {
            for _ in group.first..=group.last {
                group_of_stage.push(g);
            }
        }
        Monitor {
            keep: keep.max(1) as usize,
            group_of_stage,
            replicas: assignment
                .groups
                .iter()
                .map(|g| g.replicas.clone())
                .collect(),
            recent: BTreeMap::new(),
        }
    }

    /// The times `item` carries: each group's, on the replica that computed it.
    pub fn record(&mut self, item: &Item) {
        let mut per_group: BTreeMap<(usize, Address), f64> = BTreeMap::new();
        for t in &item.times {
            if let Some(&g) = self.group_of_stage.get(t.stage as usize) {
                *per_group.entry((g, t.node)).or_default() += t.seconds;
            }
        }
        for (key, seconds) in per_group {
            let window = self.recent.entry(key).or_default();
            window.push_back(seconds);
            if window.len() > self.keep {
                window.pop_front();
            }
        }
    }

    /// The slowest group whose every replica has more than half of its `k` times, and its
    /// time per item: the medians of its replicas side by side.
    pub fn slowest(&self) -> Option<(usize, f64)> {
        let enough = self.keep / 2 + 1;
        let mut slowest: Option<(usize, f64)> = None;
        for (g, replicas) in self.replicas.iter().enumerate() {
            let mut medians = Vec::with_capacity(replicas.len());
            for &r in replicas {
                match self.recent.get(&(g, r)) {
                    Some(times) if times.len() >= enough => medians.push(median(times)),
                    _ => break,
                }
            }
            if medians.len() < replicas.len() {
                continue;
            }
            let time = side_by_side_s(&medians);
            if slowest.is_none_or(|(_, t)| time > t) {
                slowest = Some((g, time));
            }
        }
        slowest
    }
}

fn median(times: &VecDeque<f64>) -> f64 {
    let mut sorted: Vec<f64> = times.iter().copied().collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::pipeline::{GroupRanks, StageTime};

    fn item(times: &[(u32, Address, f64)]) -> Item {
        Item {
            seq: 0,
            epoch: 1,
            group: 2,
            body: Vec::new(),
            times: times
                .iter()
                .map(|&(stage, node, seconds)| StageTime {
                    stage,
                    node,
                    seconds,
                })
                .collect(),
        }
    }

    #[test]
    fn the_median_of_each_replica_side_by_side() {
        let (a, b, c) = (Address::new(0, 1), Address::new(0, 2), Address::new(0, 3));
        let assignment = Assignment {
            epoch: 1,
            groups: vec![
                GroupRanks {
                    first: 0,
                    last: 1,
                    replicas: vec![a],
                    manager: None,
                },
                GroupRanks {
                    first: 2,
                    last: 2,
                    replicas: vec![b, c],
                    manager: Some(Address::CONTROLLER),
                },
            ],
        };
        let mut monitor = Monitor::new(&assignment, 4);
        assert_eq!(monitor.slowest(), None);
        for t in [1.0, 1.0, 9.0] {
            monitor.record(&item(&[(0, a, t / 2.0), (1, a, t / 2.0), (2, b, 4.0)]));
        }
        // Group 1 has times of b only: group 0 alone counts, its median 1 s.
        assert_eq!(monitor.slowest(), Some((0, 1.0)));
        for _ in 0..3 {
            monitor.record(&item(&[(0, a, 0.5), (1, a, 0.5), (2, c, 4.0)]));
        }
        // b and c at 4 s each: an item every 2 s.
        assert_eq!(monitor.slowest(), Some((1, 2.0)));
        // Only the last 4 times count.
        for _ in 0..4 {
            monitor.record(&item(&[(0, a, 5.0), (1, a, 5.0), (2, c, 4.0)]));
        }
        assert_eq!(monitor.slowest(), Some((0, 10.0)));
    }
}
