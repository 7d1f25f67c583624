//! The master's core: hands tasks out on demand, tracks each until its result is gathered, and
//! measures the run. No I/O: the driver (`hmw::drivers::master`, or a test, or a simulator)
//! passes each message in with the time, and performs the [`Output`]s.
//!
//! The master feeds *ranks*: workers, and communication managers that lead to other clusters
//! (a CM is fed like a worker with a deep window; each batch it gets is one inter-cluster task
//! of `nt` tasks). It works on serialised tasks through a [`TaskSource`], so the same core
//! serves a typed [`crate::Problem`] (the main master) and a sub-master, whose tasks arrive
//! from its own communication manager (see [`super::submaster`]).
//!
//! No task is lost: each stays in the in-flight table, with the ranks holding a copy, until a
//! result for it is gathered. A rank that is lost gives its tasks back to a retry queue served
//! before new tasks.
//!
//! Dispatch costs `O(log W)` per task for `W` ranks fed: the requests wait in a
//! [`Waiting`] index the [`Scheduler`] picks from, and a round of dispatch ends as soon as
//! nothing is left to hand out. A rank that cannot be served while others might (a bounded
//! share used up; at the end, a rank still computing while idle ones take copies) is set
//! aside until something changes for it: a task to retry, or (for tail copies) it becomes
//! idle.

use std::{
    cmp::Reverse,
    collections::{BTreeSet, VecDeque},
    fmt::Write as _,
    time::Duration,
};

use rustc_hash::FxHashMap;
use smallvec::{smallvec, SmallVec};

use super::{
    busy_since::BusySince,
    iterations::IterationTracker,
    output::Output,
    rank_table::RankTable,
    task_source::{Next, TaskSource},
    under_way::UnderWay,
};
use crate::{
    adapt::{Action, Adapter, ClusterSample, Decision, Presence, Sample},
    app::{Recipient, TaskId},
    config::RunConfig,
    error::CoreError,
    estimator::WorkEstimator,
    live::{self, ClusterWindow},
    machinefile::{Facing, MachineFile},
    protocol::{
        encode, BatchWriter, LinkState, ResultRef, ToMaster, ToMasterRef, ToWorker, WireTaskRef,
    },
    scheduler::{Demand, Requester, Scheduler, Waiting},
    spare::SpareBuffers,
    stats::{Adaptation, ClusterReport, ClusterStats, ProgressSample, RunStats, WorkerStats},
};

/// A task handed out and not yet gathered.
struct InFlight {
    operations: f64,
    body: Vec<u8>,
    /// Ranks holding a copy (more than one after reassignment; inline, so handing a task out
    /// allocates nothing for it).
    holders: SmallVec<[usize; 2]>,
    /// Clusters (their CMs) that held it when they were lost: one that comes back may still
    /// hold it and deliver it late, and must not be handed it again.
    lost_holders: Vec<usize>,
}

impl InFlight {
    /// Task `id` (this entry's), as a batch carries it.
    fn task(&self, id: TaskId) -> WireTaskRef<'_> {
        WireTaskRef {
            id,
            operations: self.operations,
            body: &self.body,
        }
    }
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
        /// At most this many tasks held at once (set by re-planning).
        credit: Option<u64>,
    },
}

/// The master's running account of one fed rank.
struct Tally {
    kind: Kind,
    stats: WorkerStats,
    /// Tasks handed to this rank whose result has not come back from it.
    outstanding: Held,
    /// New tasks handed to it (for a bounded share).
    handed: u64,
    /// Lost: no more tasks go there.
    gone: bool,
    /// Dropped by re-planning: no more tasks go there until re-admitted; the room it offers
    /// meanwhile is kept for then.
    dropped: bool,
    parked_room: u32,
    /// Times it came back after being lost, and its tasks done when it last did.
    rejoins: u64,
    done_at_rejoin: u64,
    /// It has spoken (a worker at once; a CM once its link is up or given up).
    heard: bool,
    taken_back: u64,
    /// The report that came with its `Bye`.
    report: Option<Box<ClusterReport>>,
    /// Since the last progress line: what the live prediction measures; and the interval
    /// before it, for re-planning.
    window: Window,
    last_window: Window,
    /// A CM's link, as it last reported it.
    link: Option<LinkState>,
    /// When the tasks it is computing began, for the live prediction.
    under_way: UnderWay,
    /// A CM's cluster: how busy it has been, for the live prediction.
    busy: BusySince,
}

/// The tasks a rank holds, in the order handed: a worker's few buffers (inline, so the master
/// touches no other memory for them), a CM's window. Results come back mostly oldest first, so
/// a removal finds its task near the front.
#[derive(Debug, Default)]
struct Held(SmallVec<[TaskId; 4]>);

impl Held {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn extend(&mut self, ids: &[TaskId]) {
        // One push each: `SmallVec::extend_from_slice` goes through its general insertion.
        for &id in ids {
            self.0.push(id);
        }
    }

    /// Forget task `id`, if held.
    fn remove(&mut self, id: &TaskId) {
        if let Some(at) = self.0.iter().position(|held| held == id) {
            self.0.remove(at);
        }
    }

    /// Every task held, oldest first; none is held any more.
    fn take_sorted(&mut self) -> Vec<TaskId> {
        let mut ids = std::mem::take(&mut self.0).into_vec();
        ids.sort_unstable();
        ids
    }
}

/// What a rank delivered since the last progress line.
#[derive(Debug, Default, Clone, Copy)]
struct Window {
    tasks: u64,
    operations: f64,
    busy_s: f64,
    computed: u64,
    computed_operations: f64,
    /// Result messages (from a CM, each an inter-cluster result of up to `nr` tasks).
    messages: u64,
}

/// Where a master is in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for every worker (and with `wait_for_links` every CM) to speak.
    Gathering,
    /// Handing tasks out; the clock runs.
    Running,
    /// Every fed rank was told to stop; waiting for each `Bye`.
    Stopping,
    /// The run cannot go on: a sub-master has told its parent cluster it is lost and waits,
    /// until this time at most, for its CM's word that the message left.
    Failing(Duration),
    /// Every fed rank said `Bye` (a sub-master then reported to its parent), or the run
    /// failed.
    Done,
}

/// How long a failing sub-master waits for its CM to have passed its `Lost` on.
const LOST_PATIENCE: Duration = Duration::from_secs(10);

/// What a take of a task gave.
enum Take {
    /// A task; whether it is new (else a retry).
    Task(TaskId, bool),
    /// This rank may take no new task (its bounded share is used up, or the source withholds
    /// tasks from it, or there is none) and no task waiting to be retried (none waits, or
    /// those that do were taken back from it), while others may.
    NotAllowed,
    /// Nothing now (a sub-master waiting on its upstream, or the source is exhausted).
    Nothing,
}

/// The master of one cluster, as a state machine: [`start`](Self::start), then
/// [`handle`](Self::handle) each message and [`on_timer`](Self::on_timer) now and then, until
/// [`is_done`](Self::is_done); then [`finish`](Self::finish). Times are durations since any
/// fixed origin the driver chooses (virtual time in a simulator).
pub struct MasterCore<S> {
    source: S,
    scheduler: Box<dyn Scheduler>,
    config: RunConfig,
    name: String,
    phase: Phase,
    /// Hashed: task ids are looked up on every result, and a hash table finds one in `O(1)`
    /// however many tasks are out.
    in_flight: FxHashMap<TaskId, InFlight>,
    /// At the end, the in-flight tasks by holders, newest first, whence idle ranks take
    /// copies: built when the first copy is wanted (no new task is handed out after that), then
    /// kept up to date as holders come and go, so a copy costs `O(log n)`, not a scan of the
    /// table.
    tail: Option<BTreeSet<TailKey>>,
    /// In-flight tasks that no rank holds any more: served before new tasks.
    retry: VecDeque<TaskId>,
    next_id: TaskId,
    exhausted: bool,
    /// The requests for work not served yet (one per batch of room).
    waiting: Waiting,
    tallies: RankTable<Tally>,
    gathered: u64,
    /// Basic operations of the tasks this cluster's own workers delivered.
    local_operations: f64,
    /// How busy this cluster's own workers have been, for the live prediction.
    local_busy: BusySince,
    /// Basic operations of every task gathered.
    useful_operations: f64,
    /// The work and rates observed so far, for the live prediction's interval.
    estimator: WorkEstimator,
    /// Whether progress lines are made (`statistics_interval` > 0): the live prediction's
    /// trackers (the work estimator, the busy times, the tasks under way) are fed only then.
    /// Nothing else reads them, and feeding them was a tenth of the master's instructions per
    /// task in the dispatch benchmark (callgrind, `docs/benchmarks.md`), and the estimator's
    /// memory grows with every result.
    live: bool,
    reassigned: u64,
    /// Tasks taken back that the problem replaced by others ([`TaskSource::redivide`]).
    redivided: u64,
    /// Copies of in-flight tasks handed to idle ranks at the end (`reassign_last_task`).
    tail_copies: u64,
    /// The workers it feeds (not the CMs): what the scheduler shares tasks among.
    workers: usize,
    /// Reused by `dispatch`: the ids of the batch being made.
    batch: Vec<TaskId>,
    /// The bodies of tasks gathered, to encode batches into: in the steady state a batch
    /// allocates no buffer of its own.
    spare: SpareBuffers,
    /// When the clock started, the run ended (every task gathered), links were all up.
    started_at: Duration,
    /// The time of the input being handled.
    now: Duration,
    wall: Duration,
    links_up: Option<Duration>,
    /// Whether to note when every link is up (links join during the run).
    feeds_clusters: bool,
    next_report: Duration,
    progress: Vec<ProgressSample>,
    /// Ranks told to stop that have not said `Bye`.
    stopping: BTreeSet<usize>,
    /// Workers and CMs that have not spoken yet (kept as counts, so no message costs a scan).
    unheard_workers: usize,
    unheard_cms: usize,
    /// An iterative problem's iterations and active workers.
    iterations: Option<IterationTracker>,
    /// Re-planning between clusters (`[run] adapt`) and the decisions made.
    adapter: Option<Adapter>,
    adaptations: Vec<Adaptation>,
    /// The wall-clock time the run started, as the driver read it at [`Output::Started`].
    started_unix_s: Option<f64>,
    /// A sub-master's statistics, made when it reported them to its parent cluster.
    reported: Option<RunStats>,
}

impl<S: TaskSource> MasterCore<S> {
    /// A master feeding the workers and master-facing communication managers of `machines`,
    /// its tasks from `source`, its dispatch decided by `scheduler`.
    pub fn new(
        machines: &MachineFile,
        config: RunConfig,
        scheduler: Box<dyn Scheduler>,
        mut source: S,
    ) -> Self {
        let mut tallies = RankTable::default();
        let mut waiting = Waiting::default();
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
                    credit: None,
                },
                Some(_) => continue, // the upstream CM of a sub-master
            };
            waiting.register(rank, matches!(kind, Kind::Worker));
            let under_way = UnderWay::new(match &kind {
                Kind::Worker => 1,
                Kind::Cm { workers, .. } => workers.unwrap_or(0),
            });
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
                    outstanding: Held::default(),
                    handed: 0,
                    gone: false,
                    dropped: false,
                    parked_room: 0,
                    rejoins: 0,
                    done_at_rejoin: 0,
                    heard: false,
                    taken_back: 0,
                    report: None,
                    window: Window::default(),
                    last_window: Window::default(),
                    link: None,
                    under_way,
                    busy: BusySince::default(),
                },
            );
        }
        let workers = tallies
            .values()
            .filter(|t| matches!(t.kind, Kind::Worker))
            .count();
        let cms = tallies.len() - workers;
        let feeds_clusters = !config.wait_for_links && cms > 0;
        let iterations = source.iterations_completed().map(|_| {
            let ranks = tallies
                .iter()
                .filter(|(_, t)| matches!(t.kind, Kind::Worker))
                .map(|(rank, _)| rank)
                .collect();
            let tracker = IterationTracker::new(&config, ranks);
            source.set_active_workers(tracker.active());
            tracker
        });
        let adapter = config
            .adapt_settings()
            .filter(|_| cms > 0)
            .map(Adapter::new);
        let estimator =
            WorkEstimator::new().later_tasks_may_do_less(source.later_tasks_may_do_less());
        let live = config.statistics_interval > 0.0;
        MasterCore {
            source,
            scheduler,
            config,
            name: machines.ranks[0]
                .annotations
                .cluster
                .clone()
                .unwrap_or_else(|| "main".to_owned()),
            phase: Phase::Gathering,
            in_flight: FxHashMap::default(),
            tail: None,
            retry: VecDeque::new(),
            next_id: 0,
            exhausted: false,
            waiting,
            tallies,
            gathered: 0,
            local_operations: 0.0,
            local_busy: BusySince::default(),
            useful_operations: 0.0,
            estimator,
            live,
            reassigned: 0,
            redivided: 0,
            tail_copies: 0,
            workers,
            batch: Vec::new(),
            spare: SpareBuffers::default(),
            started_at: Duration::ZERO,
            now: Duration::ZERO,
            wall: Duration::ZERO,
            links_up: None,
            feeds_clusters,
            next_report: Duration::MAX,
            progress: Vec::new(),
            stopping: BTreeSet::new(),
            unheard_workers: workers,
            unheard_cms: cms,
            iterations,
            adapter,
            adaptations: Vec::new(),
            started_unix_s: None,
            reported: None,
        }
    }

    /// Begin at time `now`: a sub-master asks its upstream for work. The run itself starts
    /// once every worker has asked for work (they do at once), so the first tasks are shared
    /// fairly; with `wait_for_links` also once every link to another cluster is up (its CM
    /// offered room) or given up (its CM reported the cluster lost), so the time to connect
    /// is not the run's. Otherwise each cluster joins when its link is up.
    pub fn start(&mut self, now: Duration, out: &mut Vec<Output>) -> Result<(), CoreError> {
        self.now = now;
        self.transmit_upstream(out);
        self.step(now, out)
    }

    /// Take in the message `bytes` from rank `from` at time `now`.
    pub fn handle(
        &mut self,
        now: Duration,
        from: usize,
        bytes: &[u8],
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        self.now = now;
        if let Phase::Failing(_) = self.phase {
            // Only the CM's word that the `Lost` left matters now.
            if Some(from) == self.source.upstream()
                && matches!(ToWorker::decode(bytes, ""), Ok(ToWorker::Stop))
            {
                self.phase = Phase::Done;
            }
            return Ok(());
        }
        if Some(from) == self.source.upstream() {
            // Once stopping, upstream has nothing more to say that matters.
            if matches!(self.phase, Phase::Gathering | Phase::Running) {
                let message: ToWorker = ToWorker::decode(bytes, "message from upstream")
                    .map_err(CoreError::decoding(from))?;
                self.source.on_upstream(message)?;
            }
        } else {
            match ToMaster::read(bytes, "message to the master")
                .map_err(CoreError::decoding(from))?
            {
                ToMasterRef::Result { result, room } => self.on_result(from, result, room)?,
                ToMasterRef::Owned(message) => self.handle_message(from, message)?,
            }
        }
        self.step(now, out)
    }

    /// Time `now` has come: a progress line when one is due.
    pub fn on_timer(&mut self, now: Duration, out: &mut Vec<Output>) {
        if let Phase::Failing(until) = self.phase {
            if now >= until {
                self.phase = Phase::Done;
            }
            return;
        }
        if self.phase != Phase::Running || self.config.statistics_interval <= 0.0 {
            return;
        }
        self.now = now;
        if now >= self.next_report {
            let interval = self.config.statistics_interval;
            let sample = self.progress(now.saturating_sub(self.started_at), interval);
            let mut line = sample.line(self.source.task_count());
            for decision in self.replan(&sample) {
                let _ = write!(line, " | adapt {decision}");
                self.adapt(now, &decision, out);
            }
            out.push(Output::Progress(line));
            self.progress.push(sample);
            self.next_report += Duration::from_secs_f64(interval);
        }
    }

    /// When [`on_timer`](Self::on_timer) next has something to do, if ever.
    pub fn poll_timeout(&self) -> Option<Duration> {
        match self.phase {
            Phase::Failing(until) => Some(until),
            Phase::Running if self.config.statistics_interval > 0.0 => Some(self.next_report),
            _ => None,
        }
    }

    /// Every fed rank has said `Bye` (a sub-master has then sent its statistics to its
    /// parent cluster), or the run failed ([`fail`](Self::fail)): the run is over.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The run's clock started at this wall-clock time (seconds since the Unix epoch), as
    /// the driver read it when it performed [`Output::Started`]: the statistics record it.
    pub fn started_at_unix_s(&mut self, unix_s: f64) {
        self.started_unix_s = Some(unix_s);
    }

    /// The run cannot go on (a message broke the protocol, a rank failed, the driver cannot
    /// send). A sub-master tells its parent cluster at once, through its CM, that it is lost,
    /// so that the parent takes its tasks back now rather than after the link's deadline; it
    /// is done once its CM answers that the message left (its `Stop`), or at the deadline
    /// [`poll_timeout`](Self::poll_timeout) gives. A main master is done at once.
    pub fn fail(&mut self, now: Duration, out: &mut Vec<Output>) {
        self.now = now;
        match self.source.upstream() {
            Some(upstream) if !matches!(self.phase, Phase::Done | Phase::Failing(_)) => {
                out.push(Output::Send {
                    to: upstream,
                    bytes: encode(&ToMaster::Lost),
                });
                self.phase = Phase::Failing(now.saturating_add(LOST_PATIENCE));
            }
            _ => self.phase = Phase::Done,
        }
    }

    /// The run's statistics and the task source (which holds the gathered results), once
    /// [`is_done`](Self::is_done).
    pub fn finish(mut self) -> (RunStats, S) {
        let stats = match self.reported.take() {
            Some(stats) => stats,
            None => self.statistics(),
        };
        (stats, self.source)
    }

    /// The task source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Tasks gathered so far.
    pub fn gathered(&self) -> u64 {
        self.gathered
    }

    /// After each input: start the run, hand tasks out, end the run, as due.
    fn step(&mut self, now: Duration, out: &mut Vec<Output>) -> Result<(), CoreError> {
        if self.phase == Phase::Gathering {
            let waiting_for_someone =
                self.unheard_workers > 0 || (self.config.wait_for_links && self.unheard_cms > 0);
            if self.source.stopped() || !waiting_for_someone {
                self.phase = Phase::Running;
                self.started_at = now;
                self.next_report =
                    now.saturating_add(Duration::from_secs_f64(self.config.statistics_interval));
                if let Some(tracker) = &mut self.iterations {
                    tracker.start(now);
                }
                out.push(Output::Started);
            }
        }
        match self.phase {
            Phase::Gathering | Phase::Failing(_) | Phase::Done => {}
            Phase::Running => {
                if self.feeds_clusters
                    && self.links_up.is_none()
                    && self.unheard_workers + self.unheard_cms == 0
                {
                    self.links_up = Some(now.saturating_sub(self.started_at));
                }
                self.track_iterations(now);
                if !self.source.stopped() {
                    self.dispatch(out);
                }
                self.transmit_upstream(out);
                if self.finished() {
                    // Results that still arrive are handled as usual: at the main master
                    // every task is gathered by then, so they are discharged; a stopping
                    // sub-master takes them in but sends nothing more up.
                    self.wall = now.saturating_sub(self.started_at);
                    self.phase = Phase::Stopping;
                    for rank in self.tallies.keys() {
                        out.push(Output::Send {
                            to: rank,
                            bytes: encode(&ToWorker::Stop),
                        });
                        self.stopping.insert(rank);
                    }
                    self.transmit_upstream(out);
                }
            }
            Phase::Stopping => self.transmit_upstream(out),
        }
        if self.phase == Phase::Stopping && self.stopping.is_empty() {
            self.phase = Phase::Done;
            self.report_upstream(out);
        }
        Ok(())
    }

    /// A sub-master whose run is over sends its cluster's statistics to its parent cluster,
    /// after its last results.
    fn report_upstream(&mut self, out: &mut Vec<Output>) {
        let Some(upstream) = self.source.upstream() else {
            return;
        };
        let stats = self.statistics();
        let report = ClusterReport {
            name: stats.name.clone(),
            stats: Some(Box::new(stats.clone())),
            ..Default::default()
        };
        out.push(Output::Send {
            to: upstream,
            bytes: encode(&ToMaster::Bye {
                report: Some(Box::new(report)),
            }),
        });
        self.reported = Some(stats);
    }

    /// An iterative problem passed a barrier: record the iteration; when the tuner changed
    /// the active count, the problem divides its next iteration for it and every rank set
    /// aside is looked at again.
    fn track_iterations(&mut self, now: Duration) {
        let (Some(tracker), Some(completed)) =
            (&mut self.iterations, self.source.iterations_completed())
        else {
            return;
        };
        if let Some(active) = tracker.progressed(now, completed) {
            self.source.set_active_workers(active);
            self.waiting.restore_all();
        }
    }

    /// Upstream said stop, or every task is gathered.
    fn finished(&self) -> bool {
        self.source.stopped() || (self.exhausted && self.in_flight.is_empty())
    }

    fn transmit_upstream(&mut self, out: &mut Vec<Output>) {
        if let Some(upstream) = self.source.upstream() {
            while let Some(bytes) = self.source.poll_transmit() {
                out.push(Output::Send {
                    to: upstream,
                    bytes,
                });
            }
        }
    }

    /// A buffer of a message sent, which the transport no longer reads: the task source may
    /// encode a task into it ([`TaskSource::recycle`]).
    pub fn recycle(&mut self, buffer: Vec<u8>) {
        self.source.recycle(buffer);
    }

    /// `rank` holds what its outstanding set says: tell the index, and at the end a rank
    /// set aside that has become idle may take a copy again.
    fn holding_changed(&mut self, rank: usize) {
        let holding = self.tallies.get(&rank).map_or(0, |t| t.outstanding.len());
        self.waiting.set_holding(rank, holding);
        if holding == 0 {
            self.waiting.restore(rank);
        }
    }

    /// `rank` offers room for `room` more batches.
    fn request(&mut self, rank: usize, room: u32) {
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
        // Each cluster's busy share since its first result (107), beside `clusters`.
        let mut shares = Vec::new();
        let now = self.now;
        for tally in self.tallies.values_mut() {
            tally.last_window = std::mem::take(&mut tally.window);
            let w = tally.last_window;
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
                Kind::Cm { name, workers, .. } if !tally.gone => {
                    shares.push(tally.busy.share(
                        now,
                        workers.unwrap_or(0),
                        under_way_s(tally, now),
                    ));
                    clusters.push(ClusterWindow {
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
                        steady_ops_per_s: None,
                        steady_task_s: None,
                    })
                }
                Kind::Cm { .. } => {}
            }
        }
        if let Some(workers) = local.workers.filter(|&w| w > 0) {
            shares.insert(
                0,
                self.local_busy
                    .share(now, workers, local_under_way_s(&self.tallies, now)),
            );
            clusters.insert(0, local);
        }
        // The balance's rate of each cluster: its steady performance (107), its available
        // performance (3) over every result so far (its workers' basic operations per busy
        // second times their number) times the share of their time they were busy since its
        // first result (all of it until a second result). Its end time: their busy seconds
        // per task.
        for (cluster, share) in clusters.iter_mut().zip(shares) {
            let rate = self.estimator.cluster(&cluster.name);
            cluster.steady_ops_per_s = cluster.workers.zip(rate).and_then(|(workers, rate)| {
                Some(workers as f64 * rate.per_busy_s()? * share.unwrap_or(1.0))
            });
            cluster.steady_task_s = rate
                .filter(|rate| rate.tasks > 0)
                .map(|rate| rate.busy_s / rate.tasks as f64);
        }
        // Tasks still to do, from the work of those gathered and of those under way (within
        // its sampling error and any drift along the dispatch order).
        let total = self.source.task_count();
        let under_way = self.work_under_way();
        let remaining = total.and_then(|total| {
            self.estimator
                .remaining_work(total.saturating_sub(self.gathered), &under_way)
        });
        let estimate = live::estimate(
            window_s,
            elapsed.as_secs_f64(),
            &clusters,
            self.useful_operations,
            remaining.map_or(f64::NAN, |work| work.point),
        );
        // The time left scales with the work left: the interval of the work, on the time.
        let interval = remaining
            .zip(estimate.remaining_s)
            .filter(|(work, _)| work.point > 0.0)
            .map(|(work, left_s)| {
                let total = work.scaled(left_s / work.point, elapsed.as_secs_f64());
                (total.low, total.high)
            });
        let mut sample = ProgressSample::new(elapsed, self.gathered, total, estimate);
        sample.predicted_total_interval_s = interval;
        sample
    }

    /// The basic operations each task under way has done so far: how long it has run times its
    /// worker's rate (for a cluster behind a CM, its workers' mean rate), where one is known.
    /// A cluster whose link is down says nothing of its tasks' progress: it is left out.
    fn work_under_way(&self) -> Vec<f64> {
        let mut done = Vec::new();
        for (rank, tally) in self.tallies.iter() {
            if tally.gone || tally.link.is_some_and(|link| !link.connected) {
                continue;
            }
            let rate = match &tally.kind {
                Kind::Worker => self.estimator.worker(rank),
                Kind::Cm { name, .. } => self.estimator.cluster(name),
            };
            let Some(per_s) = rate.and_then(|r| r.per_busy_s()) else {
                continue;
            };
            done.extend(
                tally
                    .under_way
                    .ages(self.now)
                    .map(|age| age.as_secs_f64() * per_s),
            );
        }
        done
    }

    /// The next task for `rank`, written into `batch`: a task to retry first, else (when
    /// `new_allowed`) a new one from the source, which then joins the in-flight table. `rank`
    /// holds it from now on.
    fn take_task(&mut self, rank: usize, new_allowed: bool, batch: &mut BatchWriter) -> Take {
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
        match self.source.next_task_for(self.next_id, to) {
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
        }
    }

    /// A result from fed rank `from`, which frees `room` batches.
    fn on_result(
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
        tally.stats.tasks_computed += result.ids.len() as u64;
        tally.stats.busy_s += result.busy_s;
        tally.stats.decode_s += result.decode_s;
        tally.stats.encode_s += result.encode_s;
        tally.window.computed += result.ids.len() as u64;
        tally.window.messages += 1;
        tally.window.busy_s += result.busy_s;
        tally.stats.operations += result.operations;
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
        };
        if fresh {
            tally.stats.tasks_done += result.ids.len() as u64;
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
    fn note_busy(&mut self, from: usize, busy_s: f64) {
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
    fn hear(&mut self, from: usize, link: bool) -> Result<(), CoreError> {
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
    fn handle_message(&mut self, from: usize, message: ToMaster) -> Result<(), CoreError> {
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
                let tasks = self.take_back(from);
                tracing::warn!(rank = from, tasks, "cluster lost: taking its tasks back");
            }
            ToMaster::Back if tally.gone && matches!(tally.kind, Kind::Cm { .. }) => {
                tally.gone = false;
                tally.rejoins += 1;
                tally.done_at_rejoin = tally.stats.tasks_done;
                tally.busy = BusySince::default();
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

    /// Take back the tasks `rank` (a cluster lost or dropped) holds that are still wanted (a
    /// copy of some may have been gathered elsewhere), and its requests: how many tasks.
    /// It is not handed them again (it may still deliver them late).
    fn take_back(&mut self, rank: usize) -> usize {
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
    fn replace(&mut self, id: TaskId, parts: Vec<(f64, Vec<u8>)>) {
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

    /// Apply a re-planning decision ([`crate::adapt`]) at time `now` to the cluster whose CM
    /// is rank `decision.rank`, then serve whoever may be served. A credit or `nt` holds
    /// from the next batch on; a dropped cluster's tasks go back (its late results are
    /// gathered or discharged as a lost cluster's) and the room it offers is kept for its
    /// re-admission. No task is lost or gathered twice whatever the decisions and their
    /// order; a decision for a rank that is not a CM is ignored.
    pub fn adapt(&mut self, now: Duration, decision: &Decision, out: &mut Vec<Output>) {
        let rank = decision.rank;
        let Some(tally) = self.tallies.get_mut(&rank) else {
            return;
        };
        let Kind::Cm { nt, credit, .. } = &mut tally.kind else {
            return;
        };
        match decision.action {
            Action::Credit(tasks) => *credit = Some(tasks.max(1)),
            Action::Nt(tasks) => *nt = tasks.max(1),
            Action::Nr(results) => out.push(Output::Send {
                to: rank,
                bytes: encode(&ToWorker::Join(results.max(1) as u32)),
            }),
            Action::Drop if !tally.dropped => {
                tally.dropped = true;
                tally.parked_room = self.waiting.requests(rank) as u32;
                self.take_back(rank);
            }
            Action::Readmit if tally.dropped => {
                tally.dropped = false;
                let room = std::mem::take(&mut tally.parked_room);
                self.request(rank, room);
            }
            Action::Drop | Action::Readmit => {}
        }
        // A credit raised or a rank re-admitted may be served now.
        self.waiting.restore(rank);
        self.adaptations.push(Adaptation {
            t_s: now.saturating_sub(self.started_at).as_secs_f64(),
            cluster: decision.cluster.clone(),
            action: decision.action.to_string(),
            reason: decision.reason.clone(),
        });
        if self.phase == Phase::Running && !self.source.stopped() {
            self.dispatch(out);
        }
    }

    /// The decisions of re-planning over the progress `sample` just taken, if it is on.
    fn replan(&mut self, sample: &ProgressSample) -> Vec<Decision> {
        let Some(adapter) = &mut self.adapter else {
            return Vec::new();
        };
        let per_task = self.useful_operations / self.gathered.max(1) as f64;
        let mut clusters = Vec::new();
        for (rank, tally) in self.tallies.iter() {
            let Kind::Cm {
                name, nt, workers, ..
            } = &tally.kind
            else {
                continue;
            };
            // Lost clusters are not in the live figures.
            let estimate = sample.clusters.iter().find(|c| &c.name == name);
            let window = &tally.last_window;
            clusters.push(ClusterSample {
                rank,
                name: name.clone(),
                presence: match (estimate, tally.gone, tally.dropped) {
                    (None, _, _) | (_, true, _) => Presence::Lost,
                    (_, false, true) => Presence::Dropped,
                    (_, false, false) => Presence::Active,
                },
                tasks_done: tally.stats.tasks_done,
                tasks_per_s: estimate.map_or(0.0, |e| e.tasks_per_s),
                capacity_tasks_per_s: estimate
                    .and_then(|e| e.available_ops_per_s)
                    .filter(|_| per_task > 0.0)
                    .map(|ops| ops / per_task),
                link_bound: estimate.is_some_and(|e| e.bottleneck.as_deref() == Some("wan_in")),
                results_bound: estimate.is_some_and(|e| e.bottleneck.as_deref() == Some("wan_out")),
                nr: estimate
                    .filter(|_| window.messages > 0)
                    .map(|_| window.computed as f64 / window.messages as f64),
                held: estimate.map_or(0, |_| tally.outstanding.len() as u64),
                nt: *nt,
                workers: *workers,
                rtt_s: tally.link.map_or(0.0, |link| link.rtt_s),
            });
        }
        let local_tasks_per_s = sample
            .clusters
            .first()
            .filter(|c| c.name == self.name)
            .map_or(0.0, |local| local.tasks_per_s);
        adapter.decide(&Sample {
            now_s: sample.t_s,
            remaining_tasks: self
                .source
                .task_count()
                .map(|total| total.saturating_sub(self.gathered)),
            local_tasks_per_s,
            clusters,
        })
    }

    /// `rank` no longer holds task `id`: if nobody else does, it goes to the retry queue (once:
    /// only a rank that held it can release it).
    fn release(&mut self, id: TaskId, rank: usize) {
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
    fn dispatch(&mut self, out: &mut Vec<Output>) {
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
                            .map(|total| total.saturating_sub(self.next_id)),
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
    /// ahead: in a run of task-pruning TSP on the testbed (2026-11-25) the main cluster's
    /// copies of brazil's oldest tasks beat each of brazil's 21 last results, all discharged,
    /// while the holder and the copies, working from both ends, would have met half way.
    fn duplicate_for(&mut self, rank: usize) -> Option<TaskId> {
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

    fn statistics(&mut self) -> RunStats {
        let wall = self.wall;
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
                        rejoins: tally.rejoins,
                        tasks_done_after_rejoin: if tally.rejoins > 0 {
                            tally.stats.tasks_done - tally.done_at_rejoin
                        } else {
                            0
                        },
                        ..*report
                    })
                }
            }
        }
        let (iterations, tuner) = self
            .iterations
            .as_ref()
            .map(IterationTracker::report)
            .unwrap_or_default();
        RunStats {
            name: self.name.clone(),
            started_unix_s: self.started_unix_s,
            wall_s: wall.as_secs_f64(),
            tasks: self.gathered,
            cluster: ClusterStats::from_workers(&workers, wall, self.local_operations),
            workers,
            clusters,
            reassigned: self.reassigned,
            redivided: self.redivided,
            tail_copies: self.tail_copies,
            links_up_s: self.links_up.map(|d| d.as_secs_f64()),
            join_s: self.source.join_s(),
            progress: std::mem::take(&mut self.progress),
            placement: Vec::new(),
            iterations,
            tuner,
            adaptations: std::mem::take(&mut self.adaptations),
            parts_per_task: self.source.parts_per_task(),
        }
    }
}

/// A task in the tail index: its holders, then its id, newest first.
type TailKey = (usize, Reverse<TaskId>);

/// Task `id` went from `from` holders to `to` in the tail index, once there is one.
/// Seconds the tasks `tally` computes now have run, as far as the master can tell (nothing
/// while its cluster is lost or its link down).
fn under_way_s(tally: &Tally, now: Duration) -> f64 {
    if tally.gone || tally.link.is_some_and(|link| !link.connected) {
        return 0.0;
    }
    tally.under_way.ages(now).map(|age| age.as_secs_f64()).sum()
}

/// The same over this cluster's own workers.
fn local_under_way_s(tallies: &RankTable<Tally>, now: Duration) -> f64 {
    tallies
        .values()
        .filter(|tally| matches!(tally.kind, Kind::Worker))
        .map(|tally| under_way_s(tally, now))
        .sum()
}

/// Task `id`'s result is gathered: it leaves the in-flight table and the tail index, and its
/// body is kept to encode a batch into. Whether it was in flight (else a copy's result was
/// gathered before).
fn gather_flight(
    in_flight: &mut FxHashMap<TaskId, InFlight>,
    tail: &mut Option<BTreeSet<TailKey>>,
    spare: &mut SpareBuffers,
    id: TaskId,
) -> bool {
    let Some(flight) = take_flight(in_flight, tail, id) else {
        return false;
    };
    spare.keep(flight.body);
    true
}

/// Task `id` leaves the in-flight table and the tail index: its entry, if it was in flight.
fn take_flight(
    in_flight: &mut FxHashMap<TaskId, InFlight>,
    tail: &mut Option<BTreeSet<TailKey>>,
    id: TaskId,
) -> Option<InFlight> {
    let flight = in_flight.remove(&id)?;
    if let Some(tail) = tail {
        tail.remove(&(flight.holders.len(), Reverse(id)));
    }
    Some(flight)
}

fn retarget(tail: &mut Option<BTreeSet<TailKey>>, id: TaskId, from: usize, to: usize) {
    if let Some(tail) = tail {
        if tail.remove(&(from, Reverse(id))) {
            tail.insert((to, Reverse(id)));
        }
    }
}
