//! The statistics records of a run: what a master measured of its workers, its links and the
//! clusters behind them, and its progress timeline with the live prediction. A sub-master sends
//! its [`RunStats`] up the tree when it stops (`ToMaster::Bye`), and `--stats-json` writes the
//! main master's, so these are wire and file formats: [`crate::stats`] formats them,
//! [`crate::live`] computes the [`ClusterEstimate`]s.

use serde::{Deserialize, Serialize};

/// What one worker did during a run, as the master saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// The worker's rank.
    pub rank: usize,
    /// Its host.
    pub host: String,
    /// Tasks whose result this worker delivered first (the useful ones).
    pub tasks_done: u64,
    /// Duplicates of reassigned tasks this worker computed (or was computing) for nothing.
    pub discharged: u64,
    /// Results this worker returned, useful or not (the tasks its busy time covers).
    pub tasks_computed: u64,
    /// Seconds spent executing tasks, useful or not.
    pub busy_s: f64,
    /// The sum of the squares of each result's busy seconds per task: with `busy_s`, the
    /// spread of a task's time (`hmw calibrate`'s `oper_cv`); 0 when not counted.
    #[serde(default)]
    pub busy_sq_s: f64,
    /// Seconds spent decoding tasks (reading them) and encoding results (writing them).
    #[serde(default)]
    pub decode_s: f64,
    #[serde(default)]
    /// See `decode_s`.
    pub encode_s: f64,
    /// CPU seconds its process used from its first task to its `Bye` (every thread, the
    /// kernel's work on its behalf included); 0 when unknown.
    #[serde(default)]
    pub cpu_s: f64,
    /// CPU seconds of those its compute thread used (decoding, executing and encoding the
    /// tasks handed to it); 0 when unknown.
    #[serde(default)]
    pub compute_cpu_s: f64,
    /// Some of its tasks wait rather than compute ([`crate::Task::waits`]): its CPU was
    /// free for its communication while they ran.
    #[serde(default)]
    pub tasks_wait: bool,
    /// CPU seconds of those its communication thread spent waiting while its tasks computed
    /// (its pauses while it held every task it asked for, and the polls after them that found
    /// nothing); 0 when unknown.
    #[serde(default)]
    pub waiting_cpu_s: f64,
    /// Wall seconds from its first task's arrival to its last result's sending; 0 when
    /// unknown.
    #[serde(default)]
    pub active_s: f64,
    /// Basic operations of the tasks it completed, useful or not.
    pub operations: f64,
    /// Tasks completed per second of busy time: the worker's measured available performance.
    pub tasks_per_s: f64,
    /// Basic operations per second of busy time.
    pub ops_per_s: f64,
    /// Busy time over the run's wall time.
    pub efficiency: f64,
}

/// A whole cluster's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterStats {
    /// Workers.
    pub workers: usize,
    /// Tasks whose result came first from them.
    pub tasks_done: u64,
    /// Results of theirs that were not needed any more.
    pub discharged: u64,
    /// Useful tasks per second of wall time.
    pub tasks_per_s: f64,
    /// Useful basic operations per second of wall time.
    pub ops_per_s: f64,
    /// Sum of the workers' measured performance (the model's `cperf`), tasks/s.
    pub available_tasks_per_s: f64,
    /// Mean worker efficiency.
    pub efficiency: f64,
}

/// One progress line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressSample {
    /// Seconds since the start.
    pub t_s: f64,
    /// Useful tasks delivered so far.
    pub tasks_done: u64,
    /// Useful tasks per second since the start.
    pub tasks_per_s: f64,
    /// Estimated seconds to the end: the live prediction's when it has one, else the tasks
    /// left at the average rate (when the total is known).
    pub eta_s: Option<f64>,
    /// The live prediction of the whole run's time (elapsed + predicted remaining).
    #[serde(default)]
    pub predicted_total_s: Option<f64>,
    /// The interval of the whole run's time, from the observed distribution of per-task work
    /// ([`crate::estimator::WorkEstimator`]): `(low, high)` seconds.
    #[serde(default)]
    pub predicted_total_interval_s: Option<(f64, f64)>,
    /// The live prediction of the run's efficiency (7).
    #[serde(default)]
    pub predicted_efficiency: Option<f64>,
    /// This cluster's own workers and each cluster behind it, over the last interval.
    #[serde(default)]
    pub clusters: Vec<ClusterEstimate>,
}

/// A communication manager's link, seen from its side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkSummary {
    /// Bytes sent over the link (tasks).
    pub bytes_sent: u64,
    /// Bytes received (results).
    pub bytes_received: u64,
    /// Average throughput each way, bytes per second.
    pub send_bytes_per_s: f64,
    /// See `send_bytes_per_s`.
    pub recv_bytes_per_s: f64,
    /// Times the link lost every connection.
    pub disconnections: u64,
    /// Seconds it spent without one.
    pub disconnected_s: f64,
    /// Blocks sent again after a reconnection.
    pub blocks_retransmitted: u64,
    /// Longest outage the link recovered from, seconds.
    pub max_reconnect_s: Option<f64>,
    /// Connection attempts refused (no accepted certificate).
    #[serde(default)]
    pub refused: u64,
    /// Connections established over the link's life (0: it never connected).
    #[serde(default)]
    pub connections_established: u64,
    /// Packets QUIC declared lost (and retransmitted) on the link's connections.
    #[serde(default)]
    pub packets_lost: u64,
    /// When the link was down: each outage from the moment it was noticed to the moment a
    /// connection came back (`end_unix_s` absent while still down), latest last.
    #[serde(default)]
    pub outages: Vec<Outage>,
    /// When its first connection joined, in seconds since the UNIX epoch (never: `None`).
    #[serde(default)]
    pub first_connected_unix_s: Option<f64>,
}

/// A stretch of time a link had no connection, in seconds since the UNIX epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// When it was noticed.
    pub start_unix_s: f64,
    /// When a connection came back; absent while still down.
    pub end_unix_s: Option<f64>,
}

/// A cluster behind a communication manager, as its parent master saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterReport {
    /// The cluster's name.
    pub name: String,
    /// Rank, in the parent cluster, of the communication manager leading to it.
    pub cm_rank: usize,
    /// Tasks whose result came first from this cluster.
    pub tasks_done: u64,
    /// Results from it that were not needed any more.
    pub discharged: u64,
    /// Fraction of the run's tasks it delivered.
    pub share: f64,
    /// Its link stayed down past the deadline and its tasks were handed to others.
    pub lost: bool,
    /// Tasks taken back from it when it was lost.
    pub taken_back: u64,
    /// Times it came back after being lost (its link returned, its sub-master alive).
    #[serde(default)]
    pub rejoins: u64,
    /// Tasks whose result came first from it after it last came back.
    #[serde(default)]
    pub tasks_done_after_rejoin: u64,
    /// The link, from the parent's communication manager.
    pub link: Option<LinkSummary>,
    /// Bytes of the task bodies its communication manager received from the master, and as
    /// they crossed the WAN (less when the application's splitter leaves out what the far
    /// side already holds).
    #[serde(default)]
    pub task_bytes: u64,
    #[serde(default)]
    /// See `task_bytes`.
    pub task_bytes_sent: u64,
    /// The cluster's own statistics, from its sub-master (absent when it never reported).
    pub stats: Option<Box<RunStats>>,
}

/// Everything the master measured in a run (`--stats-json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunStats {
    /// Cluster name (`main` for the main cluster unless configured).
    pub name: String,
    /// When this master's clock started (the `t_s = 0` of `progress`), seconds since the
    /// UNIX epoch.
    #[serde(default)]
    pub started_unix_s: Option<f64>,
    /// Seconds from the start to the last result.
    pub wall_s: f64,
    /// Useful tasks gathered.
    pub tasks: u64,
    /// This cluster's own workers.
    pub cluster: ClusterStats,
    /// Each worker.
    pub workers: Vec<WorkerStats>,
    /// The clusters behind this cluster's communication managers.
    pub clusters: Vec<ClusterReport>,
    /// Tasks handed out again because the rank holding them was lost.
    pub reassigned: u64,
    /// Of those, tasks the problem replaced by others of a finer grain (`Problem::redivide`).
    #[serde(default)]
    pub redivided: u64,
    /// Copies of in-flight tasks handed to idle workers and clusters at the end (`reassign_last_task`).
    #[serde(default)]
    pub tail_copies: u64,
    /// Seconds after the start when every link to another cluster was up (runs that feed
    /// other clusters without `wait_for_links`).
    #[serde(default)]
    pub links_up_s: Option<f64>,
    /// Seconds this master spent joining results: gathering them into the problem (the main
    /// master), or combining and joining them before they went up (a sub-master).
    #[serde(default)]
    pub join_s: f64,
    /// The progress timeline, one sample per statistics interval.
    pub progress: Vec<ProgressSample>,
    /// Each rank of this cluster: its machine-file line's host and the host it ran on (MPI
    /// runs only; empty in one process).
    #[serde(default)]
    pub placement: Vec<RankPlacement>,
    /// An iterative application's iterations, in order (empty otherwise).
    #[serde(default)]
    pub iterations: Vec<IterationSample>,
    /// The counts the number-of-workers tuner set (`[run] tune_workers`), in order.
    #[serde(default)]
    pub tuner: Vec<crate::tuner::TunerDecision>,
    /// The re-planning decisions made during the run (`[run] adapt`), in order.
    #[serde(default)]
    pub adaptations: Vec<Adaptation>,
    /// A master that split its tasks (`[run] split_tasks`): the parts each task gave, on
    /// average (the figures of `workers` are per part).
    #[serde(default)]
    pub parts_per_task: Option<f64>,
    /// Seconds of its thread's CPU the master spent handling messages (`[run] master_cpu`):
    /// its CPU per task is this over `tasks`; `None` when not measured.
    #[serde(default)]
    pub master_cpu_s: Option<f64>,
    /// The gaps between the results this master received, one after the other: with every
    /// rank replying at once (`hmw calibrate`'s LAN runs), the spread of the LAN's service
    /// (`docs/model.md` (175)); `None` before two results.
    #[serde(default)]
    pub result_gaps: Option<ResultGaps>,
    /// The main master's journal of results, when it kept one (`--journal`).
    #[serde(default)]
    pub journal: Option<JournalStats>,
    /// Clusters behind this master's CMs lost and back, in order (a cluster started again is
    /// lost and back at once).
    #[serde(default)]
    pub cluster_events: Vec<ClusterEvent>,
}

/// A cluster behind a CM lost (its tasks taken back), or back (fed again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterEvent {
    /// Seconds since the start.
    pub t_s: f64,
    /// The cluster.
    pub cluster: String,
    /// `lost` or `back`.
    pub event: String,
}

/// The gaps between consecutive results at a master: their number, sum and sum of squares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultGaps {
    /// Gaps counted (results after the first).
    pub count: u64,
    /// Their sum, seconds.
    pub sum_s: f64,
    /// The sum of their squares, seconds squared.
    pub sum_sq_s: f64,
}

impl ResultGaps {
    /// Count one more gap of `gap_s` seconds.
    pub fn add(&mut self, gap_s: f64) {
        self.count += 1;
        self.sum_s += gap_s;
        self.sum_sq_s += gap_s * gap_s;
    }

    /// Count `other`'s gaps too (another run's).
    pub fn merge(&mut self, other: &ResultGaps) {
        self.count += other.count;
        self.sum_s += other.sum_s;
        self.sum_sq_s += other.sum_sq_s;
    }

    /// Their squared coefficient of variation ([`sample_scv`]).
    pub fn scv(&self) -> Option<f64> {
        sample_scv(self.count, self.sum_s, self.sum_sq_s)
    }
}

/// The squared coefficient of variation of `count` values from their `sum` and the sum of
/// their squares `sum_sq`: the sample variance (`count - 1`) over the squared mean; `None`
/// with fewer than two values or a sum of 0 or less.
pub fn sample_scv(count: u64, sum: f64, sum_sq: f64) -> Option<f64> {
    if count < 2 || sum <= 0.0 {
        return None;
    }
    let n = count as f64;
    let mean = sum / n;
    let variance = (sum_sq / n - mean * mean).max(0.0) * n / (n - 1.0);
    Some(variance / (mean * mean))
}

/// What the main master's journal holds at the end of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JournalStats {
    /// The journal's file.
    pub path: String,
    /// Tasks gathered before this run, replayed from the journal (0 for a run not resumed).
    pub resumed_tasks: u64,
    /// When each run of this job started its clock, from the journal (the first run's
    /// first: a resumed job's makespan runs from it), this run's last.
    pub started_unix_s: Vec<f64>,
    /// Results journaled and synced by this run.
    pub records: u64,
    /// Why the journal stopped, when a write failed (the run went on without it).
    pub failed: Option<String>,
}

/// One iteration of an iterative application, as its master measured it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterationSample {
    /// Its number, from 0.
    pub iteration: u64,
    /// The workers active during it.
    pub workers: u64,
    /// `Tt`: seconds from the previous barrier (the start, for the first) to its own.
    pub time_s: f64,
    /// `Tc`: the computation seconds its workers reported, summed.
    pub worker_time_s: f64,
    /// `V`: bytes of its task and result messages.
    pub bytes: u64,
    /// Its tasks.
    pub tasks: u64,
}

impl IterationSample {
    /// The performance index of the iteration, `n * Tt^2 / Tc` (section 5).
    pub fn performance_index(&self) -> f64 {
        hmw_model::tuning::performance_index(self.workers as f64, self.time_s, self.worker_time_s)
    }
}

/// One re-planning decision ([`crate::adapt`]), as recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Adaptation {
    /// Seconds since the start.
    pub t_s: f64,
    /// The cluster it concerns.
    pub cluster: String,
    /// What was decided: `credit N`, `nt N`, `drop`, `readmit`.
    pub action: String,
    /// Why, with the figures.
    pub reason: String,
}

/// One cluster's live figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterEstimate {
    /// The cluster's name.
    pub name: String,
    /// Useful tasks it delivered so far.
    pub tasks_done: u64,
    /// Over the last interval.
    pub tasks_per_s: f64,
    /// Current steady performance, basic operations per second.
    pub ops_per_s: f64,
    /// Mean share of its workers that were busy.
    pub busy_share: Option<f64>,
    /// `compute` when its workers are busy; else what starves them: `lan` for the master's
    /// own workers; for a cluster behind a link, `wan_in` while tasks wait on this side of
    /// it, `wan_out` otherwise (its results are slow to come back), `down` while it is down.
    /// Absent without results.
    pub bottleneck: Option<String>,
    /// Its workers' available performance (3): basic operations per busy second, summed.
    #[serde(default)]
    pub available_ops_per_s: Option<f64>,
    /// Its balanced share of the remaining tasks (61)(94), and when it would be done.
    #[serde(default)]
    pub remaining_tasks: Option<f64>,
    #[serde(default)]
    /// See `remaining_tasks`.
    pub remaining_s: Option<f64>,
    /// The link to it: throughput each way (tasks out, results in), bytes per second.
    #[serde(default)]
    pub link_out_bytes_per_s: Option<f64>,
    #[serde(default)]
    /// See `link_out_bytes_per_s`.
    pub link_in_bytes_per_s: Option<f64>,
}

/// One rank's place: the host its machine-file line names and the one it ran on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPlacement {
    /// The rank.
    pub rank: usize,
    /// The host of its machine-file line.
    pub line_host: String,
    /// The host name it observed (`gethostname`).
    pub observed_host: String,
}

impl RankPlacement {
    /// Whether it ran on its line's host, by name (the short names agree).
    pub fn matches(&self) -> bool {
        Self::same_host(&self.line_host, &self.observed_host)
    }

    /// Whether two host names name the same host: their short forms agree.
    pub fn same_host(a: &str, b: &str) -> bool {
        a.split('.').next() == b.split('.').next()
    }
}
