//! [`HeldGroups`]: the results a sub-master holds to join, up to `nr` into one, before they go
//! up to its parent cluster ([`super::submaster`] says when a group goes).
//!
//! A sub-master of many workers has many batches under way at once (16,384 workers with two
//! buffers each and batches of 16 tasks: some 2,000), each with a group filling. The groups are
//! kept in the order they were held and indexed by batch, so that a result finds the groups it
//! may join among its own batch's, and a call finds what became due among the groups it changed
//! rather than by a scan of every group: `O(log g)` per result for `g` groups held, where a scan
//! made a sub-master's cost per task grow with its workers.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use smallvec::SmallVec;

use crate::{
    app::TaskResult,
    protocol::{ResultRef, TaskIds},
};

/// What computing some tasks cost, summed over the workers that computed them.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Cost {
    pub(super) operations: f64,
    pub(super) busy_s: f64,
    pub(super) decode_s: f64,
    pub(super) encode_s: f64,
}

impl Cost {
    pub(super) fn of(result: &ResultRef) -> Self {
        Cost {
            operations: result.operations,
            busy_s: result.busy_s,
            decode_s: result.decode_s,
            encode_s: result.encode_s,
        }
    }

    pub(super) fn add(&mut self, other: Cost) {
        self.operations += other.operations;
        self.busy_s += other.busy_s;
        self.decode_s += other.decode_s;
        self.encode_s += other.encode_s;
    }
}

/// A result held to be joined with others before it goes up.
pub(super) struct Group<R> {
    /// SubMasterSource ids of the inter-cluster tasks it stands for.
    pub(super) ids: TaskIds,
    /// The batch of its first task (only results of one batch join when `nr` is at most
    /// the largest batch).
    pub(super) batch: u64,
    pub(super) cost: Cost,
    pub(super) result: R,
}

/// How groups join and when they go, as the sub-master sets it now.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rule {
    /// At most this many tasks per group.
    pub(super) nr: usize,
    /// Groups of different batches may join (`nr` above the largest batch).
    pub(super) across: bool,
}

/// The groups held, in the order held.
pub(super) struct HeldGroups<R> {
    /// By the order they were held.
    groups: BTreeMap<u64, Group<R>>,
    next: u64,
    /// The groups of each batch, in the order held.
    by_batch: FxHashMap<u64, SmallVec<[u64; 2]>>,
}

impl<R: TaskResult> HeldGroups<R> {
    pub(super) fn new() -> Self {
        HeldGroups {
            groups: BTreeMap::new(),
            next: 0,
            by_batch: FxHashMap::default(),
        }
    }

    /// Join `group` into the first held group that accepts it (room for its tasks, of its
    /// batch unless groups join across batches, and a [`TaskResult::join`] that takes it), or
    /// hold it alone. Returns the place of the group that holds it.
    pub(super) fn join_or_hold(&mut self, group: Group<R>, rule: Rule) -> u64 {
        let mut candidate = group;
        if rule.across {
            for (&place, held) in &mut self.groups {
                match join(held, candidate, rule.nr) {
                    Ok(()) => return place,
                    Err(back) => candidate = back,
                }
            }
        } else if let Some(places) = self.by_batch.get(&candidate.batch) {
            for &place in places {
                let held = self
                    .groups
                    .get_mut(&place)
                    .expect("indexed groups are held");
                match join(held, candidate, rule.nr) {
                    Ok(()) => return place,
                    Err(back) => candidate = back,
                }
            }
        }
        let place = self.next;
        self.next += 1;
        self.by_batch
            .entry(candidate.batch)
            .or_default()
            .push(place);
        self.groups.insert(place, candidate);
        place
    }

    /// What is due after the group at `touched` changed and `completed` batches completed:
    /// in the order held, that group if full and, unless groups join across batches, the
    /// groups of the completed batches; then, across batches, the oldest groups beyond `nr`.
    /// The same as [`Self::take_due`] would find, when nothing else changed since it last ran.
    pub(super) fn take_due_after(
        &mut self,
        touched: Option<u64>,
        completed: &[u64],
        rule: Rule,
    ) -> Vec<Group<R>> {
        let mut due: SmallVec<[u64; 4]> = touched
            .filter(|place| {
                self.groups
                    .get(place)
                    .is_some_and(|g| g.ids.len() >= rule.nr)
            })
            .into_iter()
            .collect();
        if !rule.across {
            for batch in completed {
                due.extend(self.by_batch.get(batch).into_iter().flatten().copied());
            }
        }
        due.sort_unstable();
        due.dedup();
        let mut groups: Vec<Group<R>> = due.into_iter().filter_map(|p| self.take(p)).collect();
        if rule.across {
            while self.groups.len() > rule.nr {
                let oldest = *self.groups.keys().next().expect("more than nr held");
                groups.extend(self.take(oldest));
            }
        }
        groups
    }

    /// Every group due, in the order held: full ones, those whose batch is complete (unless
    /// groups join across batches), all of them when `idle`; then, across batches, the oldest
    /// beyond `nr`.
    pub(super) fn take_due(
        &mut self,
        rule: Rule,
        idle: bool,
        batch_complete: impl Fn(u64) -> bool,
    ) -> Vec<Group<R>> {
        let due: Vec<u64> = self
            .groups
            .iter()
            .filter(|(_, g)| {
                g.ids.len() >= rule.nr || idle || (!rule.across && batch_complete(g.batch))
            })
            .map(|(&place, _)| place)
            .collect();
        let mut groups: Vec<Group<R>> = due.into_iter().filter_map(|p| self.take(p)).collect();
        while rule.across && self.groups.len() > rule.nr {
            let oldest = *self.groups.keys().next().expect("more than nr held");
            groups.extend(self.take(oldest));
        }
        groups
    }

    /// Forget every group.
    pub(super) fn clear(&mut self) {
        self.groups.clear();
        self.by_batch.clear();
    }

    fn take(&mut self, place: u64) -> Option<Group<R>> {
        let group = self.groups.remove(&place)?;
        if let Some(places) = self.by_batch.get_mut(&group.batch) {
            places.retain(|p| *p != place);
            if places.is_empty() {
                self.by_batch.remove(&group.batch);
            }
        }
        Some(group)
    }
}

/// Join `group` into `held` if it has room for its tasks (at most `nr` in all) and the
/// application's join takes it; else `group` back.
fn join<R: TaskResult>(held: &mut Group<R>, group: Group<R>, nr: usize) -> Result<(), Group<R>> {
    if held.ids.len() + group.ids.len() > nr {
        return Err(group);
    }
    match held.result.join(group.result) {
        Ok(()) => {
            held.ids.extend(group.ids);
            held.cost.add(group.cost);
            Ok(())
        }
        Err(back) => Err(Group {
            result: back,
            ..group
        }),
    }
}

#[cfg(test)]
mod tests {
    use proptest::{collection::vec, prelude::*};
    use serde::{Deserialize, Serialize};

    use std::collections::HashMap;

    use super::*;

    /// Task ids joined; two results that each stand for an odd number of tasks refuse to join
    /// (an application's join may refuse).
    #[derive(Debug, Serialize, Deserialize)]
    struct Ids(Vec<u64>);

    impl TaskResult for Ids {
        fn join(&mut self, other: Ids) -> Result<(), Ids> {
            if self.0.len() % 2 == 1 && other.0.len() % 2 == 1 {
                return Err(other);
            }
            self.0.extend(other.0);
            Ok(())
        }
    }

    fn group(id: u64, batch: u64) -> Group<Ids> {
        Group {
            ids: TaskIds::from_slice(&[id]),
            batch,
            cost: Cost::default(),
            result: Ids(vec![id]),
        }
    }

    fn ids(groups: Vec<Group<Ids>>) -> Vec<Vec<u64>> {
        groups.into_iter().map(|g| g.result.0).collect()
    }

    proptest! {
        /// Results of batches of `size` tasks come in any order: what the groups changed make
        /// due is what a look at every group finds, group for group and in the same order,
        /// with results joining within batches and across them.
        #[test]
        fn what_changed_makes_due_what_a_full_look_finds(
            size in 1u64..6,
            nr in 1usize..8,
            order in vec(any::<u64>(), 1..60),
        ) {
            let rule = Rule { nr, across: nr as u64 > size };
            let tasks = order.len() as u64;
            let mut order: Vec<u64> = (0..tasks).zip(order).map(|(k, _)| k).collect();
            // A deterministic shuffle by the drawn keys.
            order.sort_by_key(|&k| (k.wrapping_mul(0x9e37_79b9_7f4a_7c15), k));
            let mut left: HashMap<u64, u64> = HashMap::new();
            for k in 0..tasks {
                *left.entry(k / size).or_default() += 1;
            }
            let (mut changed, mut looked) = (HeldGroups::new(), HeldGroups::new());
            for k in order {
                let batch = k / size;
                let count = left.get_mut(&batch).expect("a batch of the run");
                *count -= 1;
                let completed: Vec<u64> = (*count == 0).then_some(batch).into_iter().collect();
                let place = changed.join_or_hold(group(k, batch), rule);
                looked.join_or_hold(group(k, batch), rule);
                let fast = ids(changed.take_due_after(Some(place), &completed, rule));
                let full = ids(looked.take_due(rule, false, |b| left.get(&b) == Some(&0)));
                prop_assert_eq!(fast, full);
            }
            let rest = |held: &mut HeldGroups<Ids>| ids(held.take_due(rule, true, |_| true));
            prop_assert_eq!(rest(&mut changed), rest(&mut looked));
        }
    }
}
