//! The master role: hands tasks out on demand, tracks each until its result is gathered, and
//! measures the run.
//!
//! The master feeds *ranks*: workers, and communication managers that lead to other clusters
//! (a CM is fed like a worker with a deep window; each batch it gets is one inter-cluster task
//! of `nt` tasks). It works on serialised tasks through a [`TaskSource`], so the same loop
//! serves a typed [`Problem`] (the main master) and a sub-master, whose tasks arrive from its
//! own communication manager (see [`crate::roles::submaster`]).
//!
//! No task is lost: each stays in the in-flight table, with the ranks holding a copy, until a
//! result for it is gathered. A rank that is lost gives its tasks back to a retry queue served
//! before new tasks.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    time::{Duration, Instant},
};

use crate::{
    app::{Problem, Task, TaskId},
    config::RunConfig,
    error::RunError,
    idle::Idle,
    live::{self, ClusterWindow},
    machinefile::{Facing, MachineFile},
    protocol::{
        decode, encode, encode_with_capacity, LinkState, TasksRef, ToMaster, ToWorker, WireResult,
        WireTaskRef,
    },
    scheduler::{Demand, Requester, Scheduler},
    stats::{ClusterReport, ClusterStats, ProgressSample, RunStats, WorkerStats},
    transport::{Envelope, Transport},
};

/// What a [`TaskSource`] has to offer now.
#[derive(Debug)]
pub enum Next {
    /// A task: its basic operations and serialised body.
    Task {
        /// Basic operations.
        operations: f64,
        /// The task, bincode-encoded.
        body: Vec<u8>,
    },
    /// Nothing now; more may come (a sub-master waiting on its upstream).
    Later,
    /// No task will come any more.
    Finished,
}

/// Where a master's serialised tasks come from and where their results go.
pub trait TaskSource {
    /// The next task, which the master will call `id`.
    fn next_task(&mut self, id: TaskId) -> Next;
    /// Gather a result (for one task, or for several joined); called once per task.
    fn gather(&mut self, result: WireResult) -> Result<(), RunError>;
    /// Total number of tasks, when known.
    fn task_count(&self) -> Option<u64>;
    /// The rank this source's tasks arrive from, if any: its messages go to
    /// [`on_upstream`](Self::on_upstream).
    fn upstream(&self) -> Option<usize> {
        None
    }
    /// A message from the upstream rank.
    fn on_upstream(&mut self, message: ToWorker) -> Result<(), RunError> {
        Err(RunError::Setup(format!(
            "unexpected message from upstream: {message:?}"
        )))
    }
    /// A message the source wants sent to its upstream rank.
    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// Upstream asked to stop: the run ends now, whatever is still in flight.
    fn stopped(&self) -> bool {
        false
    }
    /// Seconds spent joining results: gathering them into the problem, or combining and
    /// joining them before they go upstream.
    fn join_s(&self) -> f64 {
        0.0
    }
}

/// A typed [`Problem`] seen as a [`TaskSource`].
pub struct ProblemSource<P> {
    problem: P,
    /// Seconds spent decoding results and gathering them into the problem.
    join_s: f64,
}

impl<P> ProblemSource<P> {
    /// The source of `problem`'s tasks.
    pub fn new(problem: P) -> Self {
        ProblemSource {
            problem,
            join_s: 0.0,
        }
    }

    /// The problem, with what was gathered into it.
    pub fn into_problem(self) -> P {
        self.problem
    }
}

impl<P: Problem> TaskSource for ProblemSource<P> {
    fn next_task(&mut self, _id: TaskId) -> Next {
        match self.problem.next_task() {
            Some(task) => Next::Task {
                operations: task.operations(),
                body: encode(&task),
            },
            None => Next::Finished,
        }
    }

    fn gather(&mut self, result: WireResult) -> Result<(), RunError> {
        let start = Instant::now();
        let decoded = decode(&result.body, "result").map_err(RunError::decoding(0))?;
        match result.ids.as_slice() {
            [id] => self.problem.gather(*id, decoded),
            ids => self.problem.gather_joined(ids, decoded),
        }
        self.join_s += start.elapsed().as_secs_f64();
        Ok(())
    }

    fn task_count(&self) -> Option<u64> {
        self.problem.task_count()
    }

    fn join_s(&self) -> f64 {
        self.join_s
    }
}

/// A task handed out and not yet gathered.
struct InFlight {
    operations: f64,
    body: Vec<u8>,
    /// Ranks holding a copy (more than one after reassignment).
    holders: Vec<usize>,
}

/// What a fed rank is.
enum Kind {
    Worker,
    /// A communication manager leading to cluster `name`; batches of `nt` tasks; at most
    /// `max_tasks` new tasks in all when the share is bounded.
    Cm {
        name: String,
        nt: usize,
        max_tasks: Option<u64>,
        /// Workers behind it (`workers=`), for the live prediction.
        workers: Option<usize>,
    },
}

/// The master's running account of one fed rank.
struct Tally {
    kind: Kind,
    stats: WorkerStats,
    /// Tasks handed to this rank whose result has not come back from it.
    outstanding: BTreeSet<TaskId>,
    /// New tasks handed to it (for a bounded share).
    handed: u64,
    /// Lost: no more tasks go there.
    gone: bool,
    /// It has spoken (a worker at once; a CM once its link is up or given up).
    heard: bool,
    taken_back: u64,
    /// The report that came with its `Bye`.
    report: Option<Box<ClusterReport>>,
    /// Since the last progress line: what the live prediction measures.
    window: Window,
    /// A CM's link, as it last reported it.
    link: Option<LinkState>,
}

/// What a rank delivered since the last progress line.
#[derive(Debug, Default, Clone, Copy)]
struct Window {
    tasks: u64,
    operations: f64,
    busy_s: f64,
    computed: u64,
    computed_operations: f64,
}

/// The master of one cluster.
pub struct Master<'a, S> {
    transport: &'a mut dyn Transport,
    source: S,
    scheduler: Box<dyn Scheduler>,
    config: RunConfig,
    name: String,
    in_flight: BTreeMap<TaskId, InFlight>,
    /// In-flight tasks that no rank holds any more: served before new tasks.
    retry: VecDeque<TaskId>,
    next_id: TaskId,
    exhausted: bool,
    /// One entry per batch of room a rank has, in the order the room was offered.
    waiting: VecDeque<usize>,
    tallies: BTreeMap<usize, Tally>,
    gathered: u64,
    /// Basic operations of the tasks this cluster's own workers delivered.
    local_operations: f64,
    /// Basic operations of every task gathered.
    useful_operations: f64,
    reassigned: u64,
    /// Copies of in-flight tasks handed to idle workers at the end (`reassign_last_task`).
    tail_copies: u64,
    /// The workers it feeds (not the CMs): what the scheduler shares tasks among.
    workers: usize,
    /// Reused by `dispatch`: the requests waiting, as the scheduler sees them, and the ids of
    /// the batch being made.
    requesters: Vec<Requester>,
    batch: Vec<TaskId>,
}

/// Seconds since the UNIX epoch.
fn unix_seconds(time: std::time::SystemTime) -> Option<f64> {
    time.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

impl<'a, S: TaskSource> Master<'a, S> {
    /// A master feeding the workers and master-facing communication managers of `machines`.
    pub fn new(
        transport: &'a mut dyn Transport,
        machines: &MachineFile,
        config: RunConfig,
        scheduler: Box<dyn Scheduler>,
        source: S,
    ) -> Result<Self, RunError> {
        let mut tallies = BTreeMap::new();
        for (rank, line) in machines.ranks.iter().enumerate().skip(1) {
            let kind = match &line.cm {
                None => Kind::Worker,
                Some(cm) if cm.facing == Facing::Master => Kind::Cm {
                    name: line
                        .annotations
                        .cluster
                        .clone()
                        .unwrap_or_else(|| format!("cm{rank}")),
                    nt: line.annotations.nt.unwrap_or(1),
                    max_tasks: line.annotations.max_tasks,
                    workers: line.annotations.workers,
                },
                Some(_) => continue, // the upstream CM of a sub-master
            };
            let stats = WorkerStats {
                rank,
                host: line.host.clone(),
                ..Default::default()
            };
            tallies.insert(
                rank,
                Tally {
                    kind,
                    stats,
                    outstanding: BTreeSet::new(),
                    handed: 0,
                    gone: false,
                    heard: false,
                    taken_back: 0,
                    report: None,
                    window: Window::default(),
                    link: None,
                },
            );
        }
        let workers = tallies
            .values()
            .filter(|t| matches!(t.kind, Kind::Worker))
            .count();
        Ok(Master {
            transport,
            source,
            scheduler,
            config,
            name: machines.ranks[0]
                .annotations
                .cluster
                .clone()
                .unwrap_or_else(|| "main".to_owned()),
            in_flight: BTreeMap::new(),
            retry: VecDeque::new(),
            next_id: 0,
            exhausted: false,
            waiting: VecDeque::new(),
            tallies,
            gathered: 0,
            local_operations: 0.0,
            useful_operations: 0.0,
            reassigned: 0,
            tail_copies: 0,
            workers,
            requesters: Vec::new(),
            batch: Vec::new(),
        })
    }

    /// Run until every task is gathered (or upstream says stop), then stop the fed ranks.
    /// Returns the statistics and the task source (which now holds the gathered results).
    pub fn run(mut self) -> Result<(RunStats, S), RunError> {
        // The run starts once every worker has asked for work (they do at once), so the first
        // tasks are shared fairly. With `wait_for_links` it also waits until every link to
        // another cluster is up (its CM offered room) or given up (its CM reported the cluster
        // lost), so the time to connect is not the run's; otherwise each cluster joins when
        // its link is up.
        let mut idle = Idle::default();
        self.transmit_upstream()?;
        let wait_for_links = self.config.wait_for_links;
        while !self.source.stopped()
            && self
                .tallies
                .values()
                .any(|t| !t.heard && (wait_for_links || matches!(t.kind, Kind::Worker)))
        {
            if let Some(envelope) = self.transport.wait(idle.next_pause())? {
                idle.reset();
                self.accept(envelope)?;
            }
        }
        let start = Instant::now();
        let started_unix_s = unix_seconds(std::time::SystemTime::now());
        let interval = Duration::from_secs_f64(self.config.statistics_interval);
        let mut next_report = start + interval;
        let mut progress = Vec::new();
        // When links come up during the run (without `wait_for_links`), note when.
        let feeds_clusters = !wait_for_links
            && self
                .tallies
                .values()
                .any(|t| matches!(t.kind, Kind::Cm { .. }));
        let mut links_up = None;
        self.dispatch()?;
        self.transmit_upstream()?;
        while !self.finished() {
            if feeds_clusters && links_up.is_none() && self.tallies.values().all(|t| t.heard) {
                links_up = Some(start.elapsed().as_secs_f64());
            }
            if !interval.is_zero() && Instant::now() >= next_report {
                let sample = self.progress(start.elapsed(), interval.as_secs_f64());
                println!("{}", sample.line(self.source.task_count()));
                progress.push(sample);
                next_report += interval;
            }
            if let Some(envelope) = self.transport.wait(idle.next_pause())? {
                idle.reset();
                self.accept(envelope)?;
                self.dispatch()?;
                self.transmit_upstream()?;
            }
        }
        let wall = start.elapsed();
        self.stop_ranks()?;
        self.transmit_upstream()?;
        let stats = self.statistics(started_unix_s, links_up, wall, progress);
        Ok((stats, self.source))
    }

    /// Upstream said stop, or every task is gathered.
    fn finished(&self) -> bool {
        self.source.stopped() || (self.exhausted && self.in_flight.is_empty())
    }

    /// Take in a message: from upstream (a sub-master's CM) or from a fed rank.
    fn accept(&mut self, envelope: Envelope) -> Result<(), RunError> {
        if Some(envelope.from) == self.source.upstream() {
            let message = decode(&envelope.bytes, "message from upstream")
                .map_err(RunError::decoding(envelope.from))?;
            self.source.on_upstream(message)
        } else {
            let message = self.decode_from(envelope.from, &envelope.bytes)?;
            self.handle(envelope.from, message)
        }
    }

    fn decode_from(&self, from: usize, bytes: &[u8]) -> Result<ToMaster, RunError> {
        decode(bytes, "message to the master").map_err(RunError::decoding(from))
    }

    fn transmit_upstream(&mut self) -> Result<(), RunError> {
        if let Some(upstream) = self.source.upstream() {
            while let Some(bytes) = self.source.poll_transmit() {
                self.transport.send(upstream, bytes)?;
            }
        }
        Ok(())
    }

    /// The progress line, with the live prediction over the interval of `window_s` seconds
    /// that just ended.
    fn progress(&mut self, elapsed: Duration, window_s: f64) -> ProgressSample {
        let mut local = ClusterWindow {
            name: self.name.clone(),
            local: true,
            workers: Some(0),
            ..Default::default()
        };
        let mut clusters = Vec::new();
        for tally in self.tallies.values_mut() {
            let w = std::mem::take(&mut tally.window);
            match &tally.kind {
                Kind::Worker => {
                    local.workers = local.workers.map(|n| n + 1);
                    local.tasks_done += tally.stats.tasks_done;
                    local.window_tasks += w.tasks;
                    local.window_operations += w.operations;
                    local.window_busy_s += w.busy_s;
                    local.window_computed += w.computed;
                    local.window_computed_operations += w.computed_operations;
                }
                Kind::Cm { name, workers, .. } if !tally.gone => clusters.push(ClusterWindow {
                    name: name.clone(),
                    local: false,
                    workers: *workers,
                    tasks_done: tally.stats.tasks_done,
                    window_tasks: w.tasks,
                    window_operations: w.operations,
                    window_busy_s: w.busy_s,
                    window_computed: w.computed,
                    window_computed_operations: w.computed_operations,
                    link: tally.link,
                }),
                Kind::Cm { .. } => {}
            }
        }
        if local.workers != Some(0) {
            clusters.insert(0, local);
        }
        // Tasks still to do, at the mean basic operations of those gathered so far.
        let total = self.source.task_count();
        let remaining_operations = match total {
            Some(total) if self.gathered > 0 => {
                total.saturating_sub(self.gathered) as f64 * self.useful_operations
                    / self.gathered as f64
            }
            _ => f64::NAN,
        };
        let estimate = live::estimate(
            window_s,
            elapsed.as_secs_f64(),
            &clusters,
            self.useful_operations,
            remaining_operations,
        );
        ProgressSample::new(elapsed, self.gathered, total, estimate)
    }

    /// The next task for `rank`: a task to retry first, else (when `new_allowed`) a new one
    /// from the source, which then joins the in-flight table. `rank` holds it from now on.
    /// Gives the task and whether it is new.
    fn take_task(&mut self, rank: usize, new_allowed: bool) -> Option<(TaskId, bool)> {
        while let Some(id) = self.retry.pop_front() {
            // Gathered meanwhile, or held again by someone: skip it.
            if let Some(flight) = self.in_flight.get_mut(&id) {
                if flight.holders.is_empty() {
                    flight.holders.push(rank);
                    return Some((id, false));
                }
            }
        }
        if self.config.max_tasks.is_some_and(|max| self.next_id >= max) {
            self.exhausted = true;
        }
        if self.exhausted || !new_allowed {
            return None;
        }
        match self.source.next_task(self.next_id) {
            Next::Task { operations, body } => {
                let id = self.next_id;
                self.next_id += 1;
                if let Some(tally) = self.tallies.get_mut(&rank) {
                    tally.handed += 1;
                }
                self.in_flight.insert(
                    id,
                    InFlight {
                        operations,
                        body,
                        holders: vec![rank],
                    },
                );
                Some((id, true))
            }
            Next::Later => None,
            Next::Finished => {
                self.exhausted = true;
                None
            }
        }
    }

    fn handle(&mut self, from: usize, message: ToMaster) -> Result<(), RunError> {
        let Some(tally) = self.tallies.get_mut(&from) else {
            return Err(RunError::Protocol {
                rank: from,
                message: "a message from a rank this master does not feed".into(),
            });
        };
        // A CM has spoken once its link is up or given up; its link reports do not count.
        tally.heard |= !matches!(message, ToMaster::Link(_));
        match message {
            ToMaster::Link(state) => tally.link = Some(state),
            ToMaster::Ready { room } => {
                self.waiting
                    .extend(std::iter::repeat_n(from, room as usize));
            }
            ToMaster::Result { result, room } => {
                let duplicated = result.ids.len() > 1 && {
                    let mut ids = result.ids.clone();
                    ids.sort_unstable();
                    ids.windows(2).any(|w| w[0] == w[1])
                };
                if result.ids.is_empty() || duplicated {
                    return Err(RunError::Protocol {
                        rank: from,
                        message: format!(
                            "a result for tasks {:?}: a result stands for one task or more, \
                             each once",
                            result.ids
                        ),
                    });
                }
                tally.stats.tasks_computed += result.ids.len() as u64;
                tally.stats.busy_s += result.busy_s;
                tally.stats.decode_s += result.decode_s;
                tally.stats.encode_s += result.encode_s;
                tally.window.computed += result.ids.len() as u64;
                tally.window.busy_s += result.busy_s;
                tally.stats.operations += result.operations;
                tally.window.computed_operations += result.operations;
                for id in &result.ids {
                    tally.outstanding.remove(id);
                }
                // A CM's result stands for tasks of another cluster: only workers teach the
                // scheduler their task times.
                if result.ids.len() == 1 && matches!(tally.kind, Kind::Worker) {
                    self.scheduler.observe(from, result.busy_s);
                }
                let fresh = result.ids.iter().all(|id| self.in_flight.contains_key(id));
                if fresh {
                    for id in &result.ids {
                        self.in_flight.remove(id);
                    }
                    tally.stats.tasks_done += result.ids.len() as u64;
                    tally.window.tasks += result.ids.len() as u64;
                    tally.window.operations += result.operations;
                    self.useful_operations += result.operations;
                    self.gathered += result.ids.len() as u64;
                    if matches!(tally.kind, Kind::Worker) {
                        self.local_operations += result.operations;
                    }
                    self.source.gather(result)?;
                } else {
                    // Some of these tasks were gathered from another copy: a joined result
                    // cannot be split, so the rest is computed again unless a copy is out.
                    tally.stats.discharged += result.ids.len() as u64;
                    for id in &result.ids {
                        self.release(*id, from);
                    }
                }
                self.waiting
                    .extend(std::iter::repeat_n(from, room as usize));
            }
            ToMaster::Lost => {
                tally.gone = true;
                // Its tasks still wanted (a copy of some may have been gathered elsewhere).
                let in_flight = &self.in_flight;
                let outstanding: Vec<TaskId> = std::mem::take(&mut tally.outstanding)
                    .into_iter()
                    .filter(|id| in_flight.contains_key(id))
                    .collect();
                tally.taken_back += outstanding.len() as u64;
                self.reassigned += outstanding.len() as u64;
                tracing::warn!(
                    rank = from,
                    tasks = outstanding.len(),
                    "cluster lost: taking its tasks back"
                );
                for id in outstanding {
                    self.release(id, from);
                }
                self.waiting.retain(|&rank| rank != from);
            }
            ToMaster::Failed { message } => {
                return Err(RunError::Failed {
                    rank: from,
                    host: tally.stats.host.clone(),
                    message,
                })
            }
            ToMaster::Bye { .. } => {
                return Err(RunError::Protocol {
                    rank: from,
                    message: "left before it was told to stop".into(),
                })
            }
        }
        Ok(())
    }

    /// `rank` no longer holds task `id`: if nobody else does, it goes to the retry queue (once:
    /// only a rank that held it can release it).
    fn release(&mut self, id: TaskId, rank: usize) {
        if let Some(flight) = self.in_flight.get_mut(&id) {
            let Some(at) = flight.holders.iter().position(|&h| h == rank) else {
                return;
            };
            flight.holders.swap_remove(at);
            if flight.holders.is_empty() {
                self.retry.push_back(id);
            }
        }
    }

    /// Serve the waiting ranks, in the order the scheduler picks: tasks to retry and new tasks
    /// while there are some, then (if enabled) copies of tasks still in flight elsewhere for
    /// idle workers.
    fn dispatch(&mut self) -> Result<(), RunError> {
        let mut unserved = VecDeque::new();
        let mut batch = std::mem::take(&mut self.batch);
        while !self.waiting.is_empty() {
            let pick = if self.waiting.len() == 1 {
                0
            } else {
                self.requesters.clear();
                self.requesters.extend(self.waiting.iter().map(|&rank| {
                    let tally = &self.tallies[&rank];
                    Requester {
                        rank,
                        holding: tally.outstanding.len(),
                        worker: matches!(tally.kind, Kind::Worker),
                    }
                }));
                self.scheduler
                    .next_rank(&self.requesters)
                    .min(self.waiting.len() - 1)
            };
            let rank = self.waiting.remove(pick).expect("pick is in range");
            let tally = &self.tallies[&rank];
            if tally.gone {
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
                            .map(|total| total.saturating_sub(self.next_id)),
                    };
                    (self.scheduler.batch_size(&demand).max(1), u64::MAX, true)
                }
                Kind::Cm { nt, max_tasks, .. } => (
                    *nt,
                    max_tasks.map_or(u64::MAX, |m| m.saturating_sub(tally.handed)),
                    false,
                ),
            };
            batch.clear();
            let mut new_tasks = 0;
            while batch.len() < size {
                match self.take_task(rank, new_tasks < room_for_new) {
                    Some((id, new)) => {
                        new_tasks += u64::from(new);
                        batch.push(id);
                    }
                    None => break,
                }
            }
            // At the end (no task left to hand out), a worker with nothing left to compute
            // (a free second buffer is not enough) gets a copy of a task still in flight.
            if batch.is_empty()
                && idle
                && is_worker
                && self.exhausted
                && self.config.reassign_last_task
            {
                if let Some(id) = self.duplicate_for(rank) {
                    self.tail_copies += 1;
                    batch.push(id);
                }
            }
            if batch.is_empty() {
                unserved.push_back(rank);
                continue;
            }
            let tally = self.tallies.get_mut(&rank).expect("waiting ranks are fed");
            tally.outstanding.extend(batch.iter().copied());
            let in_flight = &self.in_flight;
            // The bodies, and a few bytes of framing each.
            let size = batch
                .iter()
                .map(|id| in_flight[id].body.len() + 24)
                .sum::<usize>()
                + 8;
            let tasks = TasksRef {
                ids: &batch,
                task: |id| {
                    let flight = &in_flight[&id];
                    WireTaskRef {
                        id,
                        operations: flight.operations,
                        body: &flight.body,
                    }
                },
            };
            let message = encode_with_capacity(&tasks, size);
            self.transport.send(rank, message)?;
        }
        self.waiting = unserved;
        self.batch = batch;
        Ok(())
    }

    /// A copy of the in-flight task with the fewest holders (oldest first) that `rank` does not
    /// already hold; `rank` holds it from now on.
    fn duplicate_for(&mut self, rank: usize) -> Option<TaskId> {
        let (&id, flight) = self
            .in_flight
            .iter_mut()
            .filter(|(_, f)| !f.holders.contains(&rank))
            .min_by_key(|(id, f)| (f.holders.len(), **id))?;
        flight.holders.push(rank);
        Some(id)
    }

    /// Tell every fed rank to stop and wait for each to acknowledge. Results that still arrive
    /// are handled as usual: at the main master every task is gathered by then, so they are
    /// discharged; a stopping sub-master takes them in but sends nothing more up.
    fn stop_ranks(&mut self) -> Result<(), RunError> {
        let ranks: Vec<usize> = self.tallies.keys().copied().collect();
        for &rank in &ranks {
            self.transport.send(rank, encode(&ToWorker::Stop))?;
        }
        let mut remaining: BTreeSet<usize> = ranks.into_iter().collect();
        let mut idle = Idle::default();
        while !remaining.is_empty() {
            let Some(envelope) = self.transport.wait(idle.next_pause())? else {
                continue;
            };
            idle.reset();
            if Some(envelope.from) == self.source.upstream() {
                continue; // upstream has nothing more to say that matters now
            }
            match self.decode_from(envelope.from, &envelope.bytes)? {
                ToMaster::Bye { report } => {
                    remaining.remove(&envelope.from);
                    if let Some(tally) = self.tallies.get_mut(&envelope.from) {
                        tally.report = report;
                    }
                }
                other => self.handle(envelope.from, other)?,
            }
        }
        self.transport.flush()?;
        Ok(())
    }

    fn statistics(
        &mut self,
        started_unix_s: Option<f64>,
        links_up_s: Option<f64>,
        wall: Duration,
        progress: Vec<ProgressSample>,
    ) -> RunStats {
        let total = self.gathered.max(1) as f64;
        let mut workers = Vec::new();
        let mut clusters = Vec::new();
        for tally in self.tallies.values_mut() {
            // Copies still out when the run ended were computed for nothing.
            tally.stats.discharged += tally.outstanding.len() as u64;
            tally.stats.derive(wall);
            match &tally.kind {
                Kind::Worker => workers.push(tally.stats.clone()),
                Kind::Cm { name, .. } => {
                    // The CM's report carries its link and the far cluster's statistics.
                    let report = tally.report.take().unwrap_or_default();
                    clusters.push(ClusterReport {
                        name: name.clone(),
                        cm_rank: tally.stats.rank,
                        tasks_done: tally.stats.tasks_done,
                        discharged: tally.stats.discharged,
                        share: tally.stats.tasks_done as f64 / total,
                        lost: tally.gone,
                        taken_back: tally.taken_back,
                        ..*report
                    })
                }
            }
        }
        RunStats {
            name: self.name.clone(),
            started_unix_s,
            wall_s: wall.as_secs_f64(),
            tasks: self.gathered,
            cluster: ClusterStats::from_workers(&workers, wall, self.local_operations),
            workers,
            clusters,
            reassigned: self.reassigned,
            tail_copies: self.tail_copies,
            links_up_s,
            join_s: self.source.join_s(),
            progress,
        }
    }
}
