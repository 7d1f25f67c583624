//! The sub-master's core: a [`MasterCore`] whose task source ([`SubMasterSource`]) brings
//! inter-cluster tasks from its communication manager.
//!
//! Towards its communication manager (the *upstream* rank) a sub-master behaves like a worker
//! with a deep buffer: it offers room for batches of inter-cluster tasks, receives them, and
//! returns results. Towards its own workers it is a master ([`MasterCore`] with this source:
//! [`SubMasterCore`]).
//!
//! Each inter-cluster task becomes local tasks: itself, or, when the application gives a
//! [`Splitter`], the parts the splitter divides it into (of a finer grain, say); the parts'
//! results are combined back into the task's result. Complete results are then joined, up to
//! `nr` into one, with [`TaskResult::join`] (two partial products of different matrix blocks
//! do not join) before they cross the WAN:
//! - when `nr` is at most the batch size (`nt`), only results of one batch join, and a batch's
//!   results go up as soon as the batch is complete;
//! - when `nr` is larger, results of several batches join: a group goes up once it stands for
//!   `nr` tasks, at most `nr` groups wait, and everything waiting goes up as soon as nothing
//!   is left to compute here.

use std::collections::{HashSet, VecDeque};

use rustc_hash::FxHashMap;

use smallvec::smallvec;

use super::{
    held_groups::{Cost, Group, HeldGroups, Rule},
    join_time::JoinTime,
    master::MasterCore,
    task_source::{Next, TaskSource},
};
use crate::{
    app::{Split, Splitter, Task, TaskId},
    config::ConfigFile,
    error::CoreError,
    machinefile::MachineFile,
    protocol::{decode, encode, ResultRef, TaskIds, ToMaster, ToWorker, WireResult, WireTask},
    scheduler::Scheduler,
};

/// The core of a sub-master: the master's core, its tasks from its communication manager.
pub type SubMasterCore<T> = MasterCore<SubMasterSource<T>>;

impl<T: Task> SubMasterCore<T> {
    /// The core of the sub-master of `machines` (whose upstream CM is `upstream`), as its
    /// drivers and a simulator build it: joining `nr` results (the upstream CM's `nr=`),
    /// keeping queued what its CMs to further clusters send ahead.
    pub fn for_cluster(
        machines: &MachineFile,
        config: &ConfigFile,
        upstream: usize,
        scheduler: Box<dyn Scheduler>,
        splitter: Option<Box<dyn Splitter<T>>>,
    ) -> Self {
        let nr = machines.ranks[upstream].annotations.nr.unwrap_or(1);
        // Tasks to keep queued: what each CM to a further cluster sends ahead (its window of
        // batches of nt tasks). The workers' own buffers are not queued again here: they fill
        // from the batches the upstream CM's window keeps on their way, and every task queued
        // beyond them is one more this cluster still holds when the run's last task is handed
        // out, computed while the other clusters wait.
        let depth = machines
            .master_facing_cms()
            .into_iter()
            .map(|rank| {
                let cm = &machines.ranks[rank].annotations;
                cm.window.map_or(config.cm.tasks_window, |w| w as usize) * cm.nt.unwrap_or(1)
            })
            .sum::<usize>();
        let source = SubMasterSource::<T>::new(upstream, nr, depth, splitter);
        MasterCore::new(machines, config.run.clone(), scheduler, source)
    }
}

/// An inter-cluster task whose local tasks are not all done.
struct Parent<R> {
    batch: u64,
    /// Its local tasks whose results have not come back.
    pending: usize,
    /// With a splitter: the result its parts combine into.
    whole: Option<R>,
    cost: Cost,
}

/// Inter-cluster tasks from the upstream communication manager, as a sub-master's source.
pub struct SubMasterSource<T: Task> {
    rank: usize,
    /// Results joined into one inter-cluster result.
    nr: usize,
    /// Local tasks the sub-master wants queued or on their way (at least one).
    depth: usize,
    /// Room (batches) offered upstream and not used yet.
    offered: usize,
    /// Size of the largest batch received (the `nt` of the link): converts room into
    /// inter-cluster tasks; 0 before the first.
    batch_size: usize,
    /// Local tasks per inter-cluster task so far (parts of a split): converts them into
    /// local tasks.
    inter_tasks: u64,
    local_tasks: u64,
    splitter: Option<Box<dyn Splitter<T>>>,
    /// Local tasks not handed out yet: basic operations, body, and the inter-cluster task.
    queue: VecDeque<(f64, Vec<u8>, TaskId)>,
    next_batch: u64,
    /// Per batch, its inter-cluster tasks not complete yet.
    batches: FxHashMap<u64, usize>,
    parents: FxHashMap<TaskId, Parent<T::Output>>,
    /// Local id -> the inter-cluster task it belongs to.
    local: FxHashMap<TaskId, TaskId>,
    held: HeldGroups<T::Output>,
    /// Batches completed since what is due was last looked at.
    completed: Vec<u64>,
    /// The rule of joining changed (`nr`, or the largest batch): look at every group held.
    rescan: bool,
    outbox: VecDeque<Vec<u8>>,
    /// Results sent up that the master has not acknowledged as journaled
    /// ([`ToWorker::Journaled`]): sent again to a master started again ([`ToWorker::Resend`]).
    unacknowledged: Vec<WireResult>,
    stopped: bool,
    /// The time spent on results here, each step sampled over its own calls: decoding them,
    /// combining parts into their whole, joining groups, encoding what goes up.
    decoding: JoinTime,
    combining: JoinTime,
    joining: JoinTime,
    encoding: JoinTime,
}

impl<T: Task> SubMasterSource<T> {
    /// A source fed by upstream rank `rank`, joining `nr` results, keeping about `depth` local
    /// tasks queued or requested, re-splitting tasks with `splitter` when given.
    pub fn new(
        rank: usize,
        nr: usize,
        depth: usize,
        splitter: Option<Box<dyn Splitter<T>>>,
    ) -> Self {
        let mut upstream = SubMasterSource {
            rank,
            nr: nr.max(1),
            depth: depth.max(1),
            offered: 0,
            batch_size: 0,
            inter_tasks: 0,
            local_tasks: 0,
            splitter,
            queue: VecDeque::new(),
            next_batch: 0,
            batches: FxHashMap::default(),
            parents: FxHashMap::default(),
            local: FxHashMap::default(),
            held: HeldGroups::new(),
            completed: Vec::new(),
            rescan: false,
            outbox: VecDeque::new(),
            unacknowledged: Vec::new(),
            stopped: false,
            decoding: JoinTime::default(),
            combining: JoinTime::default(),
            joining: JoinTime::default(),
            encoding: JoinTime::default(),
        };
        upstream.top_up();
        upstream
    }

    fn protocol(&self, message: impl Into<String>) -> CoreError {
        CoreError::Protocol {
            rank: self.rank,
            message: message.into(),
        }
    }

    /// Offer upstream enough room to keep `depth` local tasks queued or on their way; until a
    /// first batch shows how many tasks a batch carries, room for one.
    fn top_up(&mut self) {
        if self.stopped {
            return;
        }
        let wanted = if self.batch_size == 0 {
            1
        } else {
            // Local tasks a batch brings: its tasks, each split into this many parts so far.
            let parts = self.local_tasks as f64 / self.inter_tasks.max(1) as f64;
            let per_batch = (self.batch_size as f64 * parts).max(1.0);
            let missing = self.depth.saturating_sub(self.queue.len()) as f64;
            (missing / per_batch).ceil() as usize
        };
        let room = wanted.saturating_sub(self.offered).min(u32::MAX as usize) as u32;
        if room > 0 {
            self.offered += room as usize;
            self.outbox.push_back(encode(&ToMaster::Ready { room }));
        }
    }

    /// Queue the local tasks of inter-cluster task `task` of batch `batch` (a split into no
    /// parts leaves a task complete at once: see `on_upstream`).
    fn accept_task(&mut self, task: WireTask, batch: u64) -> Result<(), CoreError> {
        if self.parents.contains_key(&task.id) {
            return Err(self.protocol(format!("inter-cluster task {} arrived twice", task.id)));
        }
        let (parts, whole) = match &mut self.splitter {
            None => (vec![(task.operations, task.body)], None),
            Some(splitter) => {
                let decoded: T = decode(&task.body, "inter-cluster task")
                    .map_err(CoreError::decoding(self.rank))?;
                let Split { parts, whole } = splitter.split(decoded).map_err(|e| {
                    CoreError::Setup(format!(
                        "cannot split inter-cluster task {}: {e:#}",
                        task.id
                    ))
                })?;
                let parts = parts.iter().map(|p| (p.operations(), encode(p))).collect();
                (parts, Some(whole))
            }
        };
        self.inter_tasks += 1;
        self.local_tasks += parts.len() as u64;
        let parent = Parent {
            batch,
            pending: parts.len(),
            whole,
            cost: Cost::default(),
        };
        self.parents.insert(task.id, parent);
        self.queue.extend(
            parts
                .into_iter()
                .map(|(operations, body)| (operations, body, task.id)),
        );
        Ok(())
    }

    /// Inter-cluster task `id` has all its results: hold its result to join with others.
    fn complete(&mut self, id: TaskId) -> Result<(), CoreError> {
        let parent = self
            .parents
            .remove(&id)
            .ok_or_else(|| self.protocol(format!("no inter-cluster task {id}")))?;
        let result = parent
            .whole
            .ok_or_else(|| self.protocol(format!("inter-cluster task {id} has no result")))?;
        self.batch_done(parent.batch)?;
        self.hold(Group {
            ids: smallvec![id],
            batch: parent.batch,
            cost: parent.cost,
            result,
        });
        Ok(())
    }

    /// One more inter-cluster task of `batch` is complete.
    fn batch_done(&mut self, batch: u64) -> Result<(), CoreError> {
        match self.batches.get_mut(&batch) {
            Some(left) if *left > 0 => {
                *left -= 1;
                if *left == 0 {
                    self.batches.remove(&batch);
                    self.completed.push(batch);
                }
                Ok(())
            }
            _ => Err(self.protocol(format!("batch {batch} completed more than once"))),
        }
    }

    /// How groups join now: results of several batches join when `nr` is larger than the
    /// largest batch (see the module's doc).
    fn rule(&self) -> Rule {
        Rule {
            nr: self.nr,
            across: self.nr > self.batch_size,
        }
    }

    /// Nothing is left to compute here: every group held may go.
    fn idle(&self) -> bool {
        self.queue.is_empty() && self.local.is_empty()
    }

    /// Join `group` into a held group that accepts it, or hold it alone; then send what is
    /// due.
    fn hold(&mut self, group: Group<T::Output>) {
        let rule = self.rule();
        let held = &mut self.held;
        let place = self.joining.measure(|| held.join_or_hold(group, rule));
        self.send_due(Some(place));
    }

    /// Send the groups that are full, and those that have nothing more to wait for: among
    /// those that changed (the group at `touched`, the batches just completed), or all of
    /// them when nothing is left to compute or the rule of joining changed.
    fn send_due(&mut self, touched: Option<u64>) {
        let rule = self.rule();
        let due = if self.idle() || self.rescan {
            self.rescan = false;
            let batches = &self.batches;
            let complete = |batch| batches.get(&batch).is_none_or(|&left| left == 0);
            self.held.take_due(rule, self.idle(), complete)
        } else {
            self.held.take_due_after(touched, &self.completed, rule)
        };
        self.completed.clear();
        for group in due {
            self.send(group);
        }
    }

    fn send(&mut self, group: Group<T::Output>) {
        if self.stopped {
            return; // upstream has every result it needs
        }
        let body = self.encoding.measure(|| encode(&group.result));
        let result = WireResult {
            ids: group.ids,
            operations: group.cost.operations,
            busy_s: group.cost.busy_s,
            decode_s: group.cost.decode_s,
            encode_s: group.cost.encode_s,
            body,
        };
        self.outbox.push_back(encode(&ToMaster::Result {
            result: result.clone(),
            room: 0,
        }));
        self.unacknowledged.push(result);
    }
}

impl<T: Task> TaskSource for SubMasterSource<T> {
    fn next_task(&mut self, id: TaskId) -> Next {
        match self.queue.pop_front() {
            Some((operations, body, parent)) => {
                self.local.insert(id, parent);
                self.top_up();
                Next::Task { operations, body }
            }
            None if self.stopped => Next::Finished,
            None => Next::Later,
        }
    }

    fn gather(&mut self, result: ResultRef<'_>) -> Result<(), CoreError> {
        let mut parents: Vec<TaskId> = Vec::new();
        for id in &result.ids {
            let parent = self
                .local
                .remove(id)
                .ok_or_else(|| self.protocol(format!("a result for unknown local task {id}")))?;
            if !parents.contains(&parent) {
                parents.push(parent);
            }
        }
        let decoded: T::Output = self
            .decoding
            .measure(|| decode(result.body, "result"))
            .map_err(CoreError::decoding(self.rank))?;
        let cost = Cost::of(&result);
        match parents.as_slice() {
            &[id] => {
                let parent = self
                    .parents
                    .get_mut(&id)
                    .ok_or_else(|| CoreError::Protocol {
                        rank: self.rank,
                        message: format!("a result for finished inter-cluster task {id}"),
                    })?;
                parent.cost.add(cost);
                match &mut self.splitter {
                    // One part (or several joined below) of a split task: into its whole.
                    Some(splitter) => {
                        self.combining.measure(|| {
                            splitter.combine(
                                parent.whole.as_mut().expect("split tasks have a whole"),
                                decoded,
                            )
                        });
                        parent.pending = parent.pending.checked_sub(result.ids.len()).ok_or(
                            CoreError::Protocol {
                                rank: self.rank,
                                message: format!(
                                    "more results than parts for inter-cluster task {id}"
                                ),
                            },
                        )?;
                    }
                    None => {
                        parent.whole = Some(decoded);
                        parent.pending = 0;
                    }
                }
                if parent.pending == 0 {
                    self.complete(id)?;
                }
            }
            _ if self.splitter.is_some() => {
                return Err(self.protocol(format!(
                    "a result joined below stands for parts of {} different split tasks; \
                     use nr=1 in the clusters behind a sub-master whose application splits \
                     tasks",
                    parents.len()
                )))
            }
            ids => {
                // Joined further down across several of these tasks: it stands for them all.
                let mut batch = None;
                for id in ids {
                    let parent = self.parents.remove(id).ok_or_else(|| {
                        self.protocol(format!("a result for finished inter-cluster task {id}"))
                    })?;
                    batch.get_or_insert(parent.batch);
                    self.batch_done(parent.batch)?;
                }
                self.hold(Group {
                    ids: TaskIds::from_slice(ids),
                    batch: batch.expect("a result stands for one task or more"),
                    cost,
                    result: decoded,
                });
            }
        }
        // The last local task done may leave groups with nothing more to wait for.
        self.send_due(None);
        Ok(())
    }

    fn task_count(&self) -> Option<u64> {
        None
    }

    fn upstream(&self) -> Option<usize> {
        Some(self.rank)
    }

    fn on_upstream(&mut self, message: ToWorker) -> Result<(), CoreError> {
        match message {
            ToWorker::Tasks(tasks) => {
                let batch = self.next_batch;
                self.next_batch += 1;
                self.offered = self.offered.saturating_sub(1);
                if tasks.len() > self.batch_size {
                    self.batch_size = tasks.len();
                    self.rescan = true;
                }
                self.batches.insert(batch, tasks.len());
                let ids: Vec<TaskId> = tasks.iter().map(|t| t.id).collect();
                for task in tasks {
                    self.accept_task(task, batch)?;
                }
                // Tasks split into nothing are complete already, once the whole batch is in.
                for id in ids {
                    if self.parents.get(&id).is_some_and(|p| p.pending == 0) {
                        self.complete(id)?;
                    }
                }
                self.top_up();
            }
            ToWorker::Join(nr) => {
                tracing::info!(nr, "re-planning: joining up to nr results from now on");
                self.nr = (nr as usize).max(1);
                self.rescan = true;
            }
            ToWorker::Stop => {
                // SubMasterSource has every result it needs: what is queued or held is not.
                self.stopped = true;
                self.queue.clear();
                self.held.clear();
                self.unacknowledged.clear();
            }
            ToWorker::Journaled(ids) => {
                let journaled: HashSet<TaskId> = ids.into_iter().collect();
                self.unacknowledged
                    .retain(|result| !result.ids.iter().all(|id| journaled.contains(id)));
            }
            ToWorker::Resend => {
                tracing::warn!(
                    results = self.unacknowledged.len(),
                    "the master's side started again: the results it had not journaled go again"
                );
                for result in &self.unacknowledged {
                    self.outbox.push_back(encode(&ToMaster::Result {
                        result: result.clone(),
                        room: 0,
                    }));
                }
            }
        }
        Ok(())
    }

    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }

    fn stopped(&self) -> bool {
        self.stopped
    }

    fn join_s(&self) -> f64 {
        [
            &self.decoding,
            &self.combining,
            &self.joining,
            &self.encoding,
        ]
        .iter()
        .map(|time| time.total_s())
        .sum()
    }
}

#[cfg(test)]
mod tests {
    use std::{path::Path, time::Duration};

    use super::*;
    use crate::{
        config::ConfigFile, machinefile::MachineFile, protocol::WireTask, roles::Output, TaskResult,
    };

    #[derive(serde::Serialize, serde::Deserialize)]
    struct One;
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Done;
    impl Task for One {
        type Output = Done;
        fn execute(self, _: &crate::WorkerContext) -> Done {
            Done
        }
    }
    impl TaskResult for Done {
        fn join(&mut self, _: Self) -> Result<(), Self> {
            Ok(())
        }
    }

    /// Room for batches that `out` offers rank `to`.
    fn room_to(out: &[Output], to: usize) -> u32 {
        out.iter()
            .filter_map(|o| match o {
                Output::Send { to: t, bytes } if *t == to => match decode(bytes, "") {
                    Ok(ToMaster::Ready { room }) => Some(room),
                    _ => None,
                },
                _ => None,
            })
            .sum()
    }

    /// Two workers of two buffers, no further cluster: the sub-master asks upstream for its
    /// workers' four tasks and one to queue, not for another four queued behind them (each
    /// of those would be a task this cluster still holds at the end of the run).
    #[test]
    fn a_sub_master_queues_one_task_beyond_its_workers_buffers() {
        let machines = MachineFile::parse(
            Path::new("a.hosts"),
            "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=1\nw\nw\n",
        )
        .unwrap();
        let mut config = ConfigFile::defaults();
        config.run.worker_buffers = 2;
        config.run.wait_for_links = false;
        let upstream = 1;
        let mut core = SubMasterCore::<One>::for_cluster(
            &machines,
            &config,
            upstream,
            config.run.configured_scheduler(),
            None,
        );
        let now = Duration::ZERO;
        let mut out = Vec::new();
        core.start(now, &mut out).unwrap();
        for worker in [2, 3] {
            core.handle(now, worker, &encode(&ToMaster::Ready { room: 2 }), &mut out)
                .unwrap();
        }
        // Upstream answers every room offered, one task per batch, until no more is asked.
        let mut offered = room_to(&out, upstream);
        let mut sent = 0;
        while sent < offered && sent < 100 {
            out.clear();
            let task = WireTask {
                id: sent as u64,
                operations: 1.0,
                body: encode(&One),
            };
            core.handle(
                now,
                upstream,
                &encode(&ToWorker::Tasks(vec![task])),
                &mut out,
            )
            .unwrap();
            sent += 1;
            offered += room_to(&out, upstream);
        }
        assert_eq!(sent, 5, "4 in the workers' buffers and 1 queued");
    }

    /// What `out` sends to rank `to`, decoded as a message to a master.
    fn sent_up(out: &[Output], to: usize) -> Vec<ToMaster> {
        out.iter()
            .filter_map(|o| match o {
                Output::Send { to: t, bytes } if *t == to => decode(bytes, "").ok(),
                _ => None,
            })
            .collect()
    }

    fn one_worker_sub_master() -> (SubMasterCore<One>, usize) {
        let machines = MachineFile::parse(
            Path::new("a.hosts"),
            "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=1\nw\n",
        )
        .unwrap();
        let mut config = ConfigFile::defaults();
        config.run.statistics_interval = 0.0;
        let scheduler = config.run.configured_scheduler();
        (
            SubMasterCore::<One>::for_cluster(&machines, &config, 1, scheduler, None),
            1,
        )
    }

    /// The end of a sub-master's run is its core's: once its workers said `Bye` it sends its
    /// last result, then its statistics, up to its CM.
    #[test]
    fn a_sub_master_reports_its_cluster_up_when_its_run_ends() {
        let (mut core, upstream) = one_worker_sub_master();
        let now = Duration::ZERO;
        let mut out = Vec::new();
        core.start(now, &mut out).unwrap();
        core.handle(now, 2, &encode(&ToMaster::Ready { room: 1 }), &mut out)
            .unwrap();
        let task = WireTask {
            id: 7,
            operations: 1.0,
            body: encode(&One),
        };
        out.clear();
        core.handle(
            now,
            upstream,
            &encode(&ToWorker::Tasks(vec![task])),
            &mut out,
        )
        .unwrap();
        // The worker computes the local task it was handed.
        let local = out
            .iter()
            .find_map(|o| match o {
                Output::Send { to: 2, bytes } => match decode(bytes, "") {
                    Ok(ToWorker::Tasks(tasks)) => Some(tasks[0].id),
                    _ => None,
                },
                _ => None,
            })
            .expect("a task for the worker");
        let result = WireResult {
            ids: TaskIds::from_slice(&[local]),
            operations: 1.0,
            busy_s: 0.5,
            decode_s: 0.0,
            encode_s: 0.0,
            body: encode(&Done),
        };
        out.clear();
        let message = ToMaster::Result { result, room: 1 };
        core.handle(now, 2, &encode(&message), &mut out).unwrap();
        core.handle(now, upstream, &encode(&ToWorker::Stop), &mut out)
            .unwrap();
        assert!(!core.is_done(), "its worker has not said Bye");
        core.handle(now, 2, &encode(&ToMaster::Bye { report: None }), &mut out)
            .unwrap();
        assert!(core.is_done());
        let up = sent_up(&out, upstream);
        assert!(
            matches!(up.first(), Some(ToMaster::Result { .. })),
            "{up:?}"
        );
        let Some(ToMaster::Bye {
            report: Some(report),
        }) = up.last()
        else {
            panic!("no report up: {up:?}");
        };
        let stats = report.stats.as_ref().expect("the cluster's statistics");
        assert_eq!(stats.tasks, 1);
        assert_eq!(
            core.finish().0.tasks,
            1,
            "the statistics reported are the run's"
        );
    }

    /// A sub-master keeps each result it sent up until the master says it journaled it, and
    /// sends those it still keeps again when its CM says the master's side started again.
    #[test]
    fn results_not_journaled_go_again_to_a_master_started_again() {
        let (mut core, upstream) = one_worker_sub_master();
        let now = Duration::ZERO;
        let mut out = Vec::new();
        core.start(now, &mut out).unwrap();
        core.handle(now, 2, &encode(&ToMaster::Ready { room: 2 }), &mut out)
            .unwrap();
        let tasks: Vec<WireTask> = [7, 8]
            .map(|id| WireTask {
                id,
                operations: 1.0,
                body: encode(&One),
            })
            .into();
        out.clear();
        for task in tasks {
            core.handle(
                now,
                upstream,
                &encode(&ToWorker::Tasks(vec![task])),
                &mut out,
            )
            .unwrap();
        }
        let locals: Vec<TaskId> = out
            .iter()
            .filter_map(|o| match o {
                Output::Send { to: 2, bytes } => match decode(bytes, "") {
                    Ok(ToWorker::Tasks(tasks)) => Some(tasks[0].id),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert_eq!(locals.len(), 2, "{out:?}");
        out.clear();
        for local in locals {
            let result = WireResult {
                ids: TaskIds::from_slice(&[local]),
                operations: 1.0,
                busy_s: 0.5,
                decode_s: 0.0,
                encode_s: 0.0,
                body: encode(&Done),
            };
            core.handle(
                now,
                2,
                &encode(&ToMaster::Result { result, room: 1 }),
                &mut out,
            )
            .unwrap();
        }
        let results = |out: &[Output]| -> Vec<Vec<TaskId>> {
            sent_up(out, upstream)
                .into_iter()
                .filter_map(|m| match m {
                    ToMaster::Result { result, room } => {
                        assert_eq!(room, 0);
                        Some(result.ids.to_vec())
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(results(&out), [vec![7], vec![8]]);
        // The master journaled task 7's result, then its side started again.
        out.clear();
        core.handle(
            now,
            upstream,
            &encode(&ToWorker::Journaled(vec![7])),
            &mut out,
        )
        .unwrap();
        core.handle(now, upstream, &encode(&ToWorker::Resend), &mut out)
            .unwrap();
        assert_eq!(
            results(&out),
            [vec![8]],
            "only what was not journaled goes again"
        );
    }

    /// A sub-master that fails tells its parent cluster through its CM, and is done when the
    /// CM answers that the word left, or at its deadline if the CM never does.
    #[test]
    fn a_failing_sub_master_reports_itself_lost_and_waits_for_its_cm() {
        for answered in [true, false] {
            let (mut core, upstream) = one_worker_sub_master();
            let mut out = Vec::new();
            core.start(Duration::ZERO, &mut out).unwrap();
            out.clear();
            let at = Duration::from_secs(3);
            core.fail(at, &mut out);
            assert!(matches!(sent_up(&out, upstream)[..], [ToMaster::Lost]));
            assert!(!core.is_done());
            let deadline = core.poll_timeout().expect("a deadline");
            assert!(deadline > at);
            // Its workers' messages no longer matter.
            core.handle(at, 2, &encode(&ToMaster::Ready { room: 1 }), &mut out)
                .unwrap();
            assert!(!core.is_done());
            if answered {
                core.handle(at, upstream, &encode(&ToWorker::Stop), &mut out)
                    .unwrap();
            } else {
                core.on_timer(deadline - Duration::from_millis(1), &mut out);
                assert!(!core.is_done());
                core.on_timer(deadline, &mut out);
            }
            assert!(core.is_done());
        }
    }
}
