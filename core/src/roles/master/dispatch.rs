//! Handing tasks out: the requests for work, which task a rank takes next (a retry, a new
//! task, a tail copy), and rounds of dispatch in the scheduler's order.

use std::cmp::Reverse;

use smallvec::smallvec;

use super::state::{retarget, InFlight, Kind, MasterCore, Take};
use crate::roles::{
    output::Output,
    task_source::{Next, TaskSource},
};
use crate::{
    app::{Recipient, TaskId},
    protocol::{BatchWriter, WireTaskRef},
    scheduler::{Demand, Requester},
};

impl<S: TaskSource> MasterCore<S> {
    /// `rank` holds what its outstanding set says: tell the index, and at the end a rank
    /// set aside that has become idle may take a copy again.
    pub(super) fn holding_changed(&mut self, rank: usize) {
        let holding = self.tallies.get(&rank).map_or(0, |t| t.outstanding.len());
        self.waiting.set_holding(rank, holding);
        if holding == 0 {
            self.waiting.restore(rank);
        }
    }

    /// `rank` offers room for `room` more batches.
    pub(super) fn request(&mut self, rank: usize, room: u32) {
        let Some(tally) = self.tallies.get(&rank) else {
            return;
        };
        if tally.gone || room == 0 {
            return;
        }
        if tally.dropped {
            let tally = self.tallies.get_mut(&rank).expect("fed");
            tally.parked_room = tally.parked_room.saturating_add(room);
            return;
        }
        let requester = Requester {
            rank,
            holding: tally.outstanding.len(),
            worker: matches!(tally.kind, Kind::Worker),
        };
        self.scheduler.on_request(requester, room);
        self.waiting.push(rank, room as usize);
    }

    /// The next task for `rank`, written into `batch`: a task to retry first, else (when
    /// `new_allowed`) a new one from the source, which then joins the in-flight table. `rank`
    /// holds it from now on.
    pub(super) fn take_task(
        &mut self,
        rank: usize,
        new_allowed: bool,
        batch: &mut BatchWriter,
    ) -> Take {
        // Tasks `rank` held when its cluster was lost stay queued for the others.
        let mut kept = Vec::new();
        let mut retried = None;
        while let Some(id) = self.retry.pop_front() {
            // Gathered meanwhile, or held again by someone: skip it.
            if let Some(flight) = self.in_flight.get_mut(&id) {
                if flight.holders.is_empty() {
                    if flight.lost_holders.contains(&rank) {
                        kept.push(id);
                        continue;
                    }
                    flight.holders.push(rank);
                    batch.push(flight.task(id));
                    retarget(&mut self.tail, id, 0, 1);
                    retried = Some(id);
                    break;
                }
            }
        }
        // Tasks kept from `rank` are for others: with nothing else for it, it is set aside
        // for this round rather than ending the round for everyone.
        let nothing = if kept.is_empty() {
            Take::Nothing
        } else {
            Take::NotAllowed
        };
        for id in kept.into_iter().rev() {
            self.retry.push_front(id);
        }
        if let Some(id) = retried {
            return Take::Task(id, false);
        }
        if self.config.max_tasks.is_some_and(|max| self.next_id >= max) {
            self.exhausted = true;
        }
        if self.exhausted {
            return nothing;
        }
        if !new_allowed {
            return Take::NotAllowed;
        }
        let to = match &self.tallies[&rank].kind {
            Kind::Worker => Recipient::Worker,
            Kind::Cm { name, .. } => Recipient::Cluster(name),
        };
        let next = loop {
            match self.source.next_task_for(self.next_id, to) {
                // Gathered before the run resumed: its id is taken, the next is asked for.
                Next::Skip => {
                    self.next_id += 1;
                    self.skipped += 1;
                }
                next => break next,
            }
        };
        match next {
            Next::Task { operations, body } => {
                let id = self.next_id;
                self.next_id += 1;
                if let Some(tally) = self.tallies.get_mut(&rank) {
                    tally.handed += 1;
                }
                batch.push(WireTaskRef {
                    id,
                    operations,
                    body: &body,
                });
                self.in_flight.insert(
                    id,
                    InFlight {
                        operations,
                        body,
                        holders: smallvec![rank],
                        lost_holders: Vec::new(),
                    },
                );
                Take::Task(id, true)
            }
            Next::Later => nothing,
            // Like a share used up: set aside for this round while others are served.
            Next::Withheld => Take::NotAllowed,
            Next::Finished => {
                self.exhausted = true;
                nothing
            }
            Next::Skip => unreachable!("skipped above"),
        }
    }

    /// `rank` no longer holds task `id`: if nobody else does, it goes to the retry queue (once:
    /// only a rank that held it can release it).
    pub(super) fn release(&mut self, id: TaskId, rank: usize) {
        if let Some(flight) = self.in_flight.get_mut(&id) {
            let Some(at) = flight.holders.iter().position(|&h| h == rank) else {
                return;
            };
            flight.holders.swap_remove(at);
            let holders = flight.holders.len();
            retarget(&mut self.tail, id, holders + 1, holders);
            if holders == 0 {
                self.retry.push_back(id);
                // A task to retry: ranks set aside may take it.
                self.waiting.restore_all();
            }
        }
    }

    /// Serve the waiting ranks, in the order the scheduler picks: tasks to retry and new tasks
    /// while there are some, then (if enabled) copies of tasks still in flight elsewhere for
    /// idle ranks. Ends as soon as nothing is left to hand out, so a round costs
    /// `O(log W)` per batch sent, not `O(W)`.
    pub(super) fn dispatch(&mut self, out: &mut Vec<Output>) {
        let mut batch = std::mem::take(&mut self.batch);
        // Ranks set aside in this round only (a bounded share used up, while the source may
        // still have tasks for others): they wait in their place for the next round.
        let mut aside_for_round = Vec::new();
        while !self.waiting.is_empty() {
            let Some(rank) = self.scheduler.pick(&self.waiting) else {
                break;
            };
            if self.waiting.requests(rank) == 0 {
                tracing::warn!(rank, "the scheduler picked a rank that does not wait");
                break;
            }
            let tally = &self.tallies[&rank];
            if matches!(tally.kind, Kind::Worker)
                && self.iterations.as_ref().is_some_and(|t| !t.is_active(rank))
            {
                // An idle worker of an iterative problem: aside until the active count changes.
                self.waiting.set_aside(rank);
                continue;
            }
            let idle = tally.outstanding.is_empty();
            let (size, room_for_new, is_worker) = match &tally.kind {
                Kind::Worker => {
                    let demand = Demand {
                        worker: rank,
                        workers: self.workers,
                        remaining: self
                            .source
                            .task_count()
                            .map(|total| total.saturating_sub(self.next_id - self.skipped)),
                    };
                    (self.scheduler.batch_size(&demand).max(1), u64::MAX, true)
                }
                Kind::Cm {
                    nt,
                    max_tasks,
                    credit,
                    ..
                } => (
                    (*nt).max(1),
                    max_tasks
                        .map_or(u64::MAX, |m| m.saturating_sub(tally.handed))
                        .min(credit.map_or(u64::MAX, |c| {
                            c.saturating_sub(tally.outstanding.len() as u64)
                        })),
                    false,
                ),
            };
            batch.clear();
            let mut writer = BatchWriter::new(self.spare.take());
            let mut new_tasks = 0;
            let mut stopped_by = Take::Nothing;
            while batch.len() < size {
                match self.take_task(rank, new_tasks < room_for_new, &mut writer) {
                    Take::Task(id, new) => {
                        new_tasks += u64::from(new);
                        batch.push(id);
                    }
                    other => {
                        stopped_by = other;
                        break;
                    }
                }
            }
            // At the end (no task left to hand out), a rank with nothing left to compute (a
            // worker: a free second buffer is not enough; a CM: every result of its cluster
            // in) gets a copy of a task still in flight. A cluster that holds nothing would
            // otherwise wait, across its WAN, while the last tasks are computed elsewhere.
            let end = self.exhausted && self.retry.is_empty();
            if batch.is_empty() && end && self.config.reassign_last_task && idle {
                if let Some(id) = self.duplicate_for(rank) {
                    self.tail_copies += 1;
                    batch.push(id);
                    writer.push(self.in_flight[&id].task(id));
                }
            }
            if batch.is_empty() {
                self.spare.keep(writer.into_buffer());
                match stopped_by {
                    // Others may still take new tasks: this one waits for the next round.
                    Take::NotAllowed => {
                        self.waiting.set_aside(rank);
                        aside_for_round.push(rank);
                        continue;
                    }
                    // At the end with copies to hand out, only idle ranks take them: this
                    // rank waits until it is idle, or a task comes back to retry.
                    _ if end && self.config.reassign_last_task => {
                        self.waiting.set_aside(rank);
                        continue;
                    }
                    // Nothing to hand out to anyone now.
                    _ => break,
                }
            }
            self.waiting.serve(rank);
            let tally = self.tallies.get_mut(&rank).expect("waiting ranks are fed");
            tally.outstanding.extend(&batch);
            if self.live {
                tally.under_way.handed(self.now, tally.outstanding.len());
            }
            let bytes = writer.finish();
            if let (Some(tracker), true) = (&mut self.iterations, is_worker) {
                tracker.sent(bytes.len());
            }
            out.push(Output::Send { to: rank, bytes });
            self.holding_changed(rank);
        }
        for rank in aside_for_round {
            self.waiting.restore(rank);
        }
        self.batch = batch;
    }

    /// A copy of the in-flight task with the fewest holders that `rank` does not already hold,
    /// the newest first; `rank` holds it from now on.
    ///
    /// Newest first: a holder computes its tasks in the order it received them (a worker its
    /// buffers, a cluster its window's batches), so its newest is the one it reaches last and
    /// a copy of it saves the most. A copy of its oldest races the holder where it is furthest
    /// ahead: in a run of task-pruning TSP on the testbed the main cluster's
    /// copies of brazil's oldest tasks beat each of brazil's 21 last results, all discharged,
    /// while the holder and the copies, working from both ends, would have met half way.
    pub(super) fn duplicate_for(&mut self, rank: usize) -> Option<TaskId> {
        let in_flight = &mut self.in_flight;
        let tail = self.tail.get_or_insert_with(|| {
            in_flight
                .iter()
                .map(|(&id, flight)| (flight.holders.len(), Reverse(id)))
                .collect()
        });
        let &(holders, Reverse(id)) = tail.iter().find(|(_, Reverse(id))| {
            let flight = &in_flight[id];
            !flight.holders.contains(&rank) && !flight.lost_holders.contains(&rank)
        })?;
        in_flight
            .get_mut(&id)
            .expect("the tail index holds tasks in flight")
            .holders
            .push(rank);
        retarget(&mut self.tail, id, holders, holders + 1);
        Some(id)
    }
}
