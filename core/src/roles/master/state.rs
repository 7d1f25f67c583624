//! The master core's state: the tasks in flight, the account of each fed rank, the phase of
//! the run, and the index of tail copies.

use std::{
    cmp::Reverse,
    collections::{BTreeSet, VecDeque},
    time::Duration,
};

use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::roles::{
    busy_since::BusySince, iterations::IterationTracker, rank_table::RankTable, under_way::UnderWay,
};
use crate::{
    adapt::Adapter,
    app::TaskId,
    config::RunConfig,
    estimator::WorkEstimator,
    protocol::{LinkState, WireTaskRef},
    scheduler::{Scheduler, Waiting},
    spare::SpareBuffers,
    stats::{
        Adaptation, ClusterEvent, ClusterReport, ProgressSample, ResultGaps, RunStats, WorkerStats,
    },
};

/// A task handed out and not yet gathered.
pub(super) struct InFlight {
    pub(super) operations: f64,
    pub(super) body: Vec<u8>,
    /// Ranks holding a copy (more than one after reassignment; inline, so handing a task out
    /// allocates nothing for it).
    pub(super) holders: SmallVec<[usize; 2]>,
    /// Clusters (their CMs) that held it when they were lost: one that comes back may still
    /// hold it and deliver it late, and must not be handed it again.
    pub(super) lost_holders: Vec<usize>,
}

impl InFlight {
    /// Task `id` (this entry's), as a batch carries it.
    pub(super) fn task(&self, id: TaskId) -> WireTaskRef<'_> {
        WireTaskRef {
            id,
            operations: self.operations,
            body: &self.body,
        }
    }
}

/// What a fed rank is.
pub(super) enum Kind {
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
///
/// Laid out for a result's sake (`repr(C)`, fields in this order, from a cache line's start):
/// what every result and every task handed out reads or writes first, the rest after. At
/// 16,384 workers a cluster the tallies are megabytes and each result touches a rank's
/// afresh; spread over the struct as the compiler placed them, its fields took six or seven
/// cache lines a result, here three.
#[repr(C, align(64))]
pub(super) struct Tally {
    /// Tasks handed to this rank whose result has not come back from it.
    pub(super) outstanding: Held,
    /// What its results added up to so far.
    pub(super) counts: Counts,
    /// Since the last progress line: what the live prediction measures.
    pub(super) window: Window,
    /// New tasks handed to it (for a bounded share).
    pub(super) handed: u64,
    pub(super) parked_room: u32,
    /// It has spoken (a worker at once; a CM once its link is up or given up).
    pub(super) heard: bool,
    /// Lost: no more tasks go there.
    pub(super) gone: bool,
    /// Dropped by re-planning: no more tasks go there until re-admitted; the room it offers
    /// meanwhile is kept for then (`parked_room`).
    pub(super) dropped: bool,
    pub(super) kind: Kind,
    /// Its statistics but for `counts`, which are copied in at the end.
    pub(super) stats: WorkerStats,
    /// Times it came back after being lost, and its tasks done when it last did.
    pub(super) rejoins: u64,
    pub(super) done_at_rejoin: u64,
    pub(super) taken_back: u64,
    /// The report that came with its `Bye`.
    pub(super) report: Option<Box<ClusterReport>>,
    /// The interval before `window`, for re-planning.
    pub(super) last_window: Window,
    /// A CM's link, as it last reported it.
    pub(super) link: Option<LinkState>,
    /// When the tasks it is computing began, for the live prediction.
    pub(super) under_way: UnderWay,
    /// A CM's cluster: how busy it has been, for the live prediction.
    pub(super) busy: BusySince,
}

/// What a rank's results add up to: the figures of its [`WorkerStats`] that every result
/// changes, kept beside its outstanding tasks.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    /// Tasks it delivered that were gathered (not discharged).
    pub(super) tasks_done: u64,
    /// Tasks it computed, discharged ones included.
    pub(super) tasks_computed: u64,
    pub(super) busy_s: f64,
    pub(super) busy_sq_s: f64,
    pub(super) decode_s: f64,
    pub(super) encode_s: f64,
    pub(super) operations: f64,
}

impl Counts {
    /// Into `stats`, whose other figures are kept.
    pub(super) fn copy_into(&self, stats: &mut WorkerStats) {
        stats.tasks_done = self.tasks_done;
        stats.tasks_computed = self.tasks_computed;
        stats.busy_s = self.busy_s;
        stats.busy_sq_s = self.busy_sq_s;
        stats.decode_s = self.decode_s;
        stats.encode_s = self.encode_s;
        stats.operations = self.operations;
    }
}

/// The tasks a rank holds: a worker's few buffers inline (so the master touches no other
/// memory for them), a CM's window, which may hold a cluster's tens of thousands of tasks, in
/// a hash set (a removal from the middle of a vector of them moved all that followed: with
/// 64 clusters of 16,384 workers a third of a simulated run went to moving these).
#[derive(Debug)]
pub(super) enum Held {
    Few(SmallVec<[TaskId; 4]>),
    Many(FxHashSet<TaskId>),
}

impl Default for Held {
    fn default() -> Self {
        Held::Few(SmallVec::new())
    }
}

impl Held {
    /// Beyond this many tasks a rank's are hashed.
    const FEW: usize = 16;

    pub(super) fn len(&self) -> usize {
        match self {
            Held::Few(ids) => ids.len(),
            Held::Many(ids) => ids.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn extend(&mut self, new: &[TaskId]) {
        if let Held::Few(ids) = self {
            if ids.len() + new.len() <= Self::FEW {
                // One push each: `SmallVec::extend_from_slice` goes through its general
                // insertion.
                for &id in new {
                    ids.push(id);
                }
                return;
            }
            *self = Held::Many(ids.iter().copied().collect());
        }
        if let Held::Many(ids) = self {
            ids.extend(new.iter().copied());
        }
    }

    /// Forget task `id`, if held.
    pub(super) fn remove(&mut self, id: &TaskId) {
        match self {
            Held::Few(ids) => {
                if let Some(at) = ids.iter().position(|held| held == id) {
                    ids.remove(at);
                }
            }
            Held::Many(ids) => {
                ids.remove(id);
            }
        }
    }

    /// Every task held, oldest first (ids are handed out in order); none is held any more.
    pub(super) fn take_sorted(&mut self) -> Vec<TaskId> {
        let mut ids: Vec<TaskId> = match std::mem::take(self) {
            Held::Few(ids) => ids.into_vec(),
            Held::Many(ids) => ids.into_iter().collect(),
        };
        ids.sort_unstable();
        ids
    }
}

/// What a rank delivered since the last progress line.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Window {
    pub(super) tasks: u64,
    pub(super) operations: f64,
    pub(super) busy_s: f64,
    pub(super) computed: u64,
    pub(super) computed_operations: f64,
    /// Result messages (from a CM, each an inter-cluster result of up to `nr` tasks).
    pub(super) messages: u64,
}

/// Where a master is in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
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
pub(super) const LOST_PATIENCE: Duration = Duration::from_secs(10);

/// What a take of a task gave.
pub(super) enum Take {
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
    pub(super) source: S,
    pub(super) scheduler: Box<dyn Scheduler>,
    pub(super) config: RunConfig,
    pub(super) name: String,
    pub(super) phase: Phase,
    /// Hashed: task ids are looked up on every result, and a hash table finds one in `O(1)`
    /// however many tasks are out.
    pub(super) in_flight: FxHashMap<TaskId, InFlight>,
    /// At the end, the in-flight tasks by holders, newest first, whence idle ranks take
    /// copies: built when the first copy is wanted (no new task is handed out after that), then
    /// kept up to date as holders come and go, so a copy costs `O(log n)`, not a scan of the
    /// table.
    pub(super) tail: Option<BTreeSet<TailKey>>,
    /// In-flight tasks that no rank holds any more: served before new tasks.
    pub(super) retry: VecDeque<TaskId>,
    pub(super) next_id: TaskId,
    /// Ids taken by tasks gathered before the run resumed ([`crate::roles::ResumedSource`]).
    pub(super) skipped: u64,
    pub(super) exhausted: bool,
    /// The requests for work not served yet (one per batch of room).
    pub(super) waiting: Waiting,
    pub(super) tallies: RankTable<Tally>,
    pub(super) gathered: u64,
    /// Basic operations of the tasks this cluster's own workers delivered.
    pub(super) local_operations: f64,
    /// How busy this cluster's own workers have been, for the live prediction.
    pub(super) local_busy: BusySince,
    /// Basic operations of every task gathered.
    pub(super) useful_operations: f64,
    /// The work and rates observed so far, for the live prediction's interval.
    pub(super) estimator: WorkEstimator,
    /// Whether progress lines are made (`statistics_interval` > 0): the live prediction's
    /// trackers (the work estimator, the busy times, the tasks under way) are fed only then.
    /// Nothing else reads them, and feeding them was a tenth of the master's instructions per
    /// task in the dispatch benchmark (callgrind, `docs/benchmarks.md`), and the estimator's
    /// memory grows with every result.
    pub(super) live: bool,
    pub(super) reassigned: u64,
    /// Tasks taken back that the problem replaced by others ([`TaskSource::redivide`]).
    pub(super) redivided: u64,
    /// Copies of in-flight tasks handed to idle ranks at the end (`reassign_last_task`).
    pub(super) tail_copies: u64,
    /// The workers it feeds (not the CMs): what the scheduler shares tasks among.
    pub(super) workers: usize,
    /// Reused by `dispatch`: the ids of the batch being made.
    pub(super) batch: Vec<TaskId>,
    /// The bodies of tasks gathered, to encode batches into: in the steady state a batch
    /// allocates no buffer of its own.
    pub(super) spare: SpareBuffers,
    /// When the clock started, the run ended (every task gathered), links were all up.
    pub(super) started_at: Duration,
    /// The time of the input being handled.
    pub(super) now: Duration,
    pub(super) wall: Duration,
    pub(super) links_up: Option<Duration>,
    /// When the last result came, and the gaps between results so far.
    pub(super) last_result_at: Option<Duration>,
    pub(super) result_gaps: ResultGaps,
    /// Whether to note when every link is up (links join during the run).
    pub(super) feeds_clusters: bool,
    pub(super) next_report: Duration,
    pub(super) progress: Vec<ProgressSample>,
    /// Ranks told to stop that have not said `Bye`.
    pub(super) stopping: BTreeSet<usize>,
    /// Workers and CMs that have not spoken yet (kept as counts, so no message costs a scan).
    pub(super) unheard_workers: usize,
    pub(super) unheard_cms: usize,
    /// An iterative problem's iterations and active workers.
    pub(super) iterations: Option<IterationTracker>,
    /// Re-planning between clusters (`[run] adapt`) and the decisions made.
    pub(super) adapter: Option<Adapter>,
    pub(super) adaptations: Vec<Adaptation>,
    /// Clusters lost and back, for the statistics.
    pub(super) cluster_events: Vec<ClusterEvent>,
    /// What the clusters behind CMs are told of their results (journaled, or not needed).
    pub(super) acknowledgements: super::acknowledgements::Acknowledgements,
    /// The wall-clock time the run started, as the driver read it at [`Output::Started`].
    pub(super) started_unix_s: Option<f64>,
    /// A sub-master's statistics, made when it reported them to its parent cluster.
    pub(super) reported: Option<RunStats>,
}

/// A task in the tail index: its holders, then its id, newest first.
pub(super) type TailKey = (usize, Reverse<TaskId>);

/// Seconds the tasks `tally` computes now have run, as far as the master can tell (nothing
/// while its cluster is lost or its link down).
pub(super) fn under_way_s(tally: &Tally, now: Duration) -> f64 {
    if tally.gone || tally.link.is_some_and(|link| !link.connected) {
        return 0.0;
    }
    tally.under_way.ages(now).map(|age| age.as_secs_f64()).sum()
}

/// The same over this cluster's own workers.
pub(super) fn local_under_way_s(tallies: &RankTable<Tally>, now: Duration) -> f64 {
    tallies
        .values()
        .filter(|tally| matches!(tally.kind, Kind::Worker))
        .map(|tally| under_way_s(tally, now))
        .sum()
}

/// Task `id`'s result is gathered: it leaves the in-flight table and the tail index, and its
/// body is kept to encode a batch into. Whether it was in flight (else a copy's result was
/// gathered before).
pub(super) fn gather_flight(
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
pub(super) fn take_flight(
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

/// Task `id` went from `from` holders to `to` in the tail index, once there is one.
pub(super) fn retarget(tail: &mut Option<BTreeSet<TailKey>>, id: TaskId, from: usize, to: usize) {
    if let Some(tail) = tail {
        if tail.remove(&(from, Reverse(id))) {
            tail.insert((to, Reverse(id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank's tasks, few inline or many hashed: the same counts, removals (of tasks held or
    /// not) and sorted take either way.
    #[test]
    fn held_tasks_count_and_remove_alike_few_or_many() {
        for count in [3u64, Held::FEW as u64, 1_000] {
            let mut held = Held::default();
            let ids: Vec<TaskId> = (0..count).rev().collect();
            for pair in ids.chunks(2) {
                held.extend(pair);
            }
            assert_eq!(held.len() as u64, count);
            assert_eq!(matches!(held, Held::Many(_)), count as usize > Held::FEW);
            held.remove(&1);
            held.remove(&1);
            held.remove(&count);
            assert_eq!(held.len() as u64, count - 1);
            let left = held.take_sorted();
            assert_eq!(left[0], 0);
            assert!(left.windows(2).all(|w| w[0] < w[1]) && !left.contains(&1));
            assert!(held.is_empty());
        }
    }
}
