//! The stage managers of one rank: for each group of the mapping it manages (its cluster's
//! groups with several replicas), the items waiting and the room each replica has. A replica
//! holds at most `buffers` items from its manager and says when it is done with one; the
//! manager hands the oldest item waiting to the replica with the most room (the first of
//! equals), so the replicas take items as fast as they compute them.

use std::collections::{BTreeMap, VecDeque};

use super::{output::PipeOutput, routes::Routes};
use crate::{
    error::CoreError,
    protocol::pipeline::{Address, Assignment, Item, PipeMessage},
};

/// One managed group.
#[derive(Debug, Default)]
struct Managed {
    waiting: VecDeque<Item>,
    /// Each replica and the items it may still take.
    room: Vec<(Address, u64)>,
}

/// The groups one rank manages.
#[derive(Debug, Default)]
pub struct Managers {
    /// The mapping managed.
    epoch: u32,
    groups: BTreeMap<u32, Managed>,
    /// Items handed to replicas in all.
    pub handed: u64,
}

impl Managers {
    /// Manage the groups of `assignment` whose manager is `me`, each replica holding up to
    /// `buffers` items. Items of an earlier mapping must all have left (the run drains before
    /// it remaps).
    pub fn assign(
        &mut self,
        assignment: &Assignment,
        me: Address,
        buffers: u64,
    ) -> Result<(), CoreError> {
        if let Some((group, _)) = self.groups.iter().find(|(_, m)| !m.waiting.is_empty()) {
            return Err(CoreError::Protocol {
                rank: me.rank(),
                message: format!("a new mapping while group {group}'s manager holds items"),
            });
        }
        self.epoch = assignment.epoch;
        self.groups = assignment
            .groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.manager == Some(me))
            .map(|(i, g)| {
                let room = g.replicas.iter().map(|&r| (r, buffers.max(1))).collect();
                (
                    i as u32,
                    Managed {
                        waiting: VecDeque::new(),
                        room,
                    },
                )
            })
            .collect();
        Ok(())
    }

    /// Whether this rank manages group `group`.
    pub fn manages(&self, group: u32) -> bool {
        self.groups.contains_key(&group)
    }

    /// An item for a managed group.
    pub fn on_item(
        &mut self,
        item: Item,
        routes: &Routes,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let group = item.group;
        let managed = self
            .groups
            .get_mut(&group)
            .ok_or_else(|| CoreError::Protocol {
                rank: routes.me().rank(),
                message: format!(
                    "item {} for group {group}, which this rank does not manage",
                    item.seq
                ),
            })?;
        managed.waiting.push_back(item);
        self.dispatch(group, routes, out)
    }

    /// A replica of `group` finished an item of mapping `epoch`.
    pub fn on_done(
        &mut self,
        epoch: u32,
        group: u32,
        replica: Address,
        routes: &Routes,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        if epoch != self.epoch {
            // The room of a mapping this rank no longer follows.
            return Ok(());
        }
        let slot = self
            .groups
            .get_mut(&group)
            .and_then(|m| m.room.iter_mut().find(|(r, _)| *r == replica));
        match slot {
            Some((_, room)) => *room += 1,
            // A replica of a mapping this rank no longer follows: nothing waits for it.
            None => return Ok(()),
        }
        self.dispatch(group, routes, out)
    }

    fn dispatch(
        &mut self,
        group: u32,
        routes: &Routes,
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let Some(managed) = self.groups.get_mut(&group) else {
            return Ok(());
        };
        while !managed.waiting.is_empty() {
            let Some(slot) = managed
                .room
                .iter_mut()
                .filter(|(_, room)| *room > 0)
                .reduce(|best, next| if next.1 > best.1 { next } else { best })
            else {
                break;
            };
            slot.1 -= 1;
            let to = slot.0;
            let item = managed.waiting.pop_front().expect("not empty");
            self.handed += 1;
            routes.send(to, &PipeMessage::Item(item), out)?;
        }
        Ok(())
    }
}
