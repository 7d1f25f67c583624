//! What comes back: results gathered or discharged, ranks heard from, lost and back, and the
//! tasks a lost rank held taken back.

use std::cmp::Reverse;

use smallvec::SmallVec;

use super::state::{
    gather_flight, local_under_way_s, take_flight, under_way_s, InFlight, Kind, MasterCore,
};
use crate::roles::{busy_since::BusySince, task_source::TaskSource};
use crate::{
    app::TaskId,
    error::CoreError,
    protocol::{ResultRef, ToMaster},
    stats::ClusterEvent,
};

impl<S: TaskSource> MasterCore<S> {
    /// A result from fed rank `from`, which frees `room` batches.
    pub(super) fn on_result(
        &mut self,
        from: usize,
        result: ResultRef<'_>,
        room: u32,
    ) -> Result<(), CoreError> {
        self.hear(from, false)?;
        let tally = self.tallies.get_mut(&from).expect("heard");
        let duplicated = result.ids.len() > 1 && {
            let mut ids = result.ids.clone();
            ids.sort_unstable();
            ids.windows(2).any(|w| w[0] == w[1])
        };
        if result.ids.is_empty() || duplicated {
            return Err(CoreError::Protocol {
                rank: from,
                message: format!(
                    "a result for tasks {:?}: a result stands for one task or more, \
                     each once",
                    result.ids
                ),
            });
        }
        if let Some(last) = self.last_result_at {
            self.result_gaps
                .add(self.now.saturating_sub(last).as_secs_f64());
        }
        self.last_result_at = Some(self.now);
        tally.counts.tasks_computed += result.ids.len() as u64;
        tally.counts.busy_s += result.busy_s;
        let per_task = result.busy_s / result.ids.len() as f64;
        tally.counts.busy_sq_s += result.ids.len() as f64 * per_task * per_task;
        tally.counts.decode_s += result.decode_s;
        tally.counts.encode_s += result.encode_s;
        tally.window.computed += result.ids.len() as u64;
        tally.window.messages += 1;
        tally.window.busy_s += result.busy_s;
        tally.counts.operations += result.operations;
        tally.window.computed_operations += result.operations;
        for id in &result.ids {
            tally.outstanding.remove(id);
        }
        if self.live {
            tally
                .under_way
                .returned(self.now, result.ids.len(), tally.outstanding.len());
        }
        // A CM's result stands for tasks of another cluster: only workers teach the
        // scheduler their task times.
        if result.ids.len() == 1 && matches!(tally.kind, Kind::Worker) {
            self.scheduler.observe(from, result.busy_s);
        }
        if let (Some(tracker), Kind::Worker) = (&mut self.iterations, &tally.kind) {
            tracker.returned(result.ids.len(), result.busy_s, result.body.len());
        }
        let fresh = match result.ids.as_slice() {
            // One task, the common case: one lookup.
            [id] => gather_flight(&mut self.in_flight, &mut self.tail, &mut self.spare, *id),
            ids => {
                ids.iter().all(|id| self.in_flight.contains_key(id))
                    && ids.iter().all(|&id| {
                        gather_flight(&mut self.in_flight, &mut self.tail, &mut self.spare, id)
                    })
            }
        } || {
            // Tasks this master never produced, computed for the master before it (a
            // resumed master, a far cluster that kept working): gathered if the source takes
            // them.
            let next_id = self.next_id;
            result.ids.iter().all(|&id| id >= next_id) && self.source.adopt(&result.ids)
        };
        if fresh {
            tally.counts.tasks_done += result.ids.len() as u64;
            tally.window.tasks += result.ids.len() as u64;
            tally.window.operations += result.operations;
            self.useful_operations += result.operations;
            self.gathered += result.ids.len() as u64;
            let cluster = match &tally.kind {
                Kind::Worker => {
                    self.local_operations += result.operations;
                    &self.name
                }
                Kind::Cm { name, .. } => name,
            };
            let busy_s = result.busy_s;
            let cm = matches!(tally.kind, Kind::Cm { .. }).then_some(from);
            self.acknowledgements
                .gathered(cm, cm.map(|_| result.ids.clone()).unwrap_or_default());
            if self.live {
                self.estimator.observe(
                    cluster,
                    from,
                    result.ids.iter().copied().min().unwrap_or_default(),
                    result.ids.len() as u64,
                    result.operations,
                    busy_s,
                );
            }
            self.source.gather(result)?;
            if self.live {
                self.note_busy(from, busy_s);
            }
        } else {
            // Some of these tasks were gathered from another copy: a joined result
            // cannot be split, so the rest is computed again unless a copy is out.
            tally.stats.discharged += result.ids.len() as u64;
            if matches!(tally.kind, Kind::Cm { .. }) {
                self.acknowledgements.discharged(from, &result.ids);
            }
            for id in &result.ids {
                self.release(*id, from);
            }
        }
        self.holding_changed(from);
        self.request(from, room);
        Ok(())
    }

    /// A useful result of `busy_s` busy seconds from `from`, counted in its cluster's busy time
    /// (107).
    pub(super) fn note_busy(&mut self, from: usize, busy_s: f64) {
        let busy_s = if busy_s.is_finite() && busy_s >= 0.0 {
            busy_s
        } else {
            0.0
        };
        let now = self.now;
        let Some(tally) = self.tallies.get_mut(&from) else {
            return;
        };
        match tally.kind {
            Kind::Worker => {
                let tallies = &self.tallies;
                self.local_busy
                    .add(now, busy_s, || local_under_way_s(tallies, now));
            }
            Kind::Cm { .. } => {
                let ages = under_way_s(tally, now);
                tally.busy.add(now, busy_s, || ages);
            }
        }
    }

    /// Mark `from` heard, an error if this master does not feed it: a CM has spoken once its
    /// link is up or given up, so its link reports (`link`) do not count.
    pub(super) fn hear(&mut self, from: usize, link: bool) -> Result<(), CoreError> {
        let Some(tally) = self.tallies.get_mut(&from) else {
            return Err(CoreError::Protocol {
                rank: from,
                message: "a message from a rank this master does not feed".into(),
            });
        };
        if !tally.heard && !link {
            tally.heard = true;
            match tally.kind {
                Kind::Worker => self.unheard_workers -= 1,
                Kind::Cm { .. } => self.unheard_cms -= 1,
            }
        }
        Ok(())
    }

    /// Take in a message from fed rank `from` (a result read on the hot path goes to
    /// [`on_result`](Self::on_result) directly).
    pub(super) fn handle_message(
        &mut self,
        from: usize,
        message: ToMaster,
    ) -> Result<(), CoreError> {
        self.hear(from, matches!(message, ToMaster::Link(_)))?;
        let tally = self.tallies.get_mut(&from).expect("heard");
        match message {
            ToMaster::Link(state) => tally.link = Some(state),
            ToMaster::Usage(usage) => {
                tally.stats.cpu_s = usage.cpu_s;
                tally.stats.compute_cpu_s = usage.compute_cpu_s;
                tally.stats.tasks_wait = usage.tasks_wait;
                tally.stats.waiting_cpu_s = usage.waiting_cpu_s;
                tally.stats.active_s = usage.active_s;
            }
            ToMaster::Ready { room } => self.request(from, room),
            ToMaster::Result { result, room } => self.on_result(from, result.as_ref(), room)?,
            ToMaster::Lost => {
                tally.gone = true;
                self.note_cluster(from, "lost");
                let tasks = self.take_back(from);
                tracing::warn!(rank = from, tasks, "cluster lost: taking its tasks back");
            }
            ToMaster::Back if tally.gone && matches!(tally.kind, Kind::Cm { .. }) => {
                tally.gone = false;
                tally.rejoins += 1;
                tally.done_at_rejoin = tally.counts.tasks_done;
                tally.busy = BusySince::default();
                self.note_cluster(from, "back");
                tracing::warn!(rank = from, "cluster back: it takes new tasks again");
            }
            ToMaster::Back => {
                return Err(CoreError::Protocol {
                    rank: from,
                    message: "came back without having been lost".into(),
                })
            }
            ToMaster::Failed { message } => {
                return Err(CoreError::Failed {
                    rank: from,
                    host: tally.stats.host.clone(),
                    message,
                })
            }
            ToMaster::Bye { report } => {
                if !self.stopping.remove(&from) {
                    return Err(CoreError::Protocol {
                        rank: from,
                        message: "left before it was told to stop".into(),
                    });
                }
                tally.report = report;
            }
        }
        Ok(())
    }

    /// The cluster behind CM `rank` was lost, or is back: noted for the statistics.
    fn note_cluster(&mut self, rank: usize, event: &str) {
        if let Some(Kind::Cm { name, .. }) = self.tallies.get(&rank).map(|t| &t.kind) {
            self.cluster_events.push(ClusterEvent {
                t_s: self.now.saturating_sub(self.started_at).as_secs_f64(),
                cluster: name.clone(),
                event: event.into(),
            });
        }
    }

    /// Take back the tasks `rank` (a cluster lost or dropped) holds that are still wanted (a
    /// copy of some may have been gathered elsewhere), and its requests: how many tasks.
    /// It is not handed them again (it may still deliver them late).
    pub(super) fn take_back(&mut self, rank: usize) -> usize {
        let Some(tally) = self.tallies.get_mut(&rank) else {
            return 0;
        };
        let in_flight = &self.in_flight;
        let outstanding: Vec<TaskId> = tally
            .outstanding
            .take_sorted()
            .into_iter()
            .filter(|id| in_flight.contains_key(id))
            .collect();
        tally.under_way.clear();
        tally.taken_back += outstanding.len() as u64;
        self.reassigned += outstanding.len() as u64;
        for &id in &outstanding {
            let Some(flight) = self.in_flight.get_mut(&id) else {
                continue;
            };
            flight.lost_holders.push(rank);
            // Nobody else holds a copy: the problem may send other tasks in its place.
            if flight.holders.as_slice() == [rank] {
                if let Some(parts) = self.source.redivide(id, &flight.body) {
                    self.replace(id, parts);
                    continue;
                }
            }
            self.release(id, rank);
        }
        self.waiting.remove(rank);
        self.waiting.set_holding(rank, 0);
        outstanding.len()
    }

    /// Task `id` gives way to `parts` (operations and body of each): they take the next ids
    /// and wait to be retried, and `id` leaves the in-flight table, never to be gathered (a
    /// late result of it is discharged).
    pub(super) fn replace(&mut self, id: TaskId, parts: Vec<(f64, Vec<u8>)>) {
        take_flight(&mut self.in_flight, &mut self.tail, id);
        self.redivided += 1;
        for (operations, body) in parts {
            let part = self.next_id;
            self.next_id += 1;
            self.in_flight.insert(
                part,
                InFlight {
                    operations,
                    body,
                    holders: SmallVec::new(),
                    lost_holders: Vec::new(),
                },
            );
            if let Some(tail) = &mut self.tail {
                tail.insert((0, Reverse(part)));
            }
            self.retry.push_back(part);
        }
        self.waiting.restore_all();
    }
}
