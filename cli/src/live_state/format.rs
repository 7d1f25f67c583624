//! The live state file's format, version 1 (`docs/guide/watch.md` documents each field).
//!
//! One JSON object, rewritten whole by `hmw launch` at most once a second. Times are seconds:
//! `*_unix_s` since the UNIX epoch, `t_s` since the main master's clock started (its first
//! dispatch, the `t_s` of the statistics' progress timeline). A reader checks `format` and
//! `version` first: a later version may add fields (readers ignore those) but never changes
//! the meaning of one.

use serde::{Deserialize, Serialize};

/// The value of [`LiveState::format`].
pub const FORMAT: &str = "hmw-live-state";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;
/// The file's name in the run's work folder.
pub const FILE_NAME: &str = "live-state.json";

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveState {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The plan's name.
    pub run: String,
    /// The process id of the `hmw launch` that writes the file.
    pub launcher_pid: u32,
    /// When the launcher started, and when it last wrote the file.
    pub launched_unix_s: f64,
    /// See `launched_unix_s`.
    pub updated_unix_s: f64,
    /// When the main master's clock started (absent until its first figures).
    pub started_unix_s: Option<f64>,
    /// Seconds between the masters' figures (`[run] statistics_interval`).
    pub statistics_interval_s: f64,
    /// The live figures come from the masters' feeds (false when the masters run on other
    /// hosts: then only the clusters' processes are followed).
    pub live_figures: bool,
    /// The whole run now.
    pub progress: RunProgress,
    /// The model's prediction made before the run (absent when the plan has none).
    pub prediction: Option<RunPrediction>,
    /// The run's progress at each of the main master's figures, oldest first; thinned to
    /// every other point when it grows past [`limits::HISTORY_POINTS`].
    pub history: Vec<HistoryPoint>,
    /// Each cluster, the main one first, then in plan order.
    pub clusters: Vec<ClusterState>,
    /// Each link between two clusters, as the communication manager on its parent side
    /// last reported it.
    pub links: Vec<LinkState>,
    /// The re-planning decisions (`[run] adapt`), oldest first (the last
    /// [`limits::ADAPTATIONS_KEPT`]).
    pub adaptations: Vec<Adaptation>,
    /// What is wrong now, one sentence each.
    pub warnings: Vec<String>,
    /// What happened, oldest first (the last [`limits::EVENTS_KEPT`]).
    pub events: Vec<Event>,
    /// Present once the run is over.
    pub end: Option<RunEnd>,
}

/// What the file keeps at most (the launcher's writer, behind the `mpi` feature, keeps it so).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub mod limits {
    /// History points kept before thinning.
    pub const HISTORY_POINTS: usize = 600;
    /// Events kept.
    pub const EVENTS_KEPT: usize = 200;
    /// Re-planning decisions kept.
    pub const ADAPTATIONS_KEPT: usize = 100;
    /// The file's largest size, bytes: a state that would be larger loses its oldest history,
    /// events and per-worker rows first.
    pub const MAX_BYTES: usize = 1_000_000;
}

/// The whole run, from the main master's last figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunProgress {
    /// Seconds since the main master's clock started, at its last figures.
    pub t_s: Option<f64>,
    /// Tasks gathered.
    pub tasks_done: u64,
    /// Tasks of the whole run, when known.
    pub tasks_total: Option<u64>,
    /// Tasks per second since the start.
    pub tasks_per_s: f64,
    /// The live prediction of the run's whole time, and its interval (from the spread of the
    /// tasks' work so far).
    pub predicted_total_s: Option<f64>,
    /// See `predicted_total_s`.
    pub predicted_low_s: Option<f64>,
    /// See `predicted_total_s`.
    pub predicted_high_s: Option<f64>,
    /// The live prediction of the run's efficiency (7).
    pub predicted_efficiency: Option<f64>,
}

/// The prediction made before the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunPrediction {
    /// The run's time, best and worst case.
    pub makespan_best_s: f64,
    /// See `makespan_best_s`.
    pub makespan_worst_s: f64,
    /// The run's efficiency, best and worst case.
    pub efficiency_best: f64,
    /// See `efficiency_best`.
    pub efficiency_worst: f64,
    /// The tasks done over time, best and worst case: the band a run on the prediction stays
    /// in (the report's predicted curves, summed over the clusters).
    pub band: Vec<BandPoint>,
}

/// One point of the predicted band.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BandPoint {
    /// Seconds since the start.
    pub t_s: f64,
    /// Tasks done by then, best case.
    pub best: f64,
    /// Tasks done by then, worst case.
    pub worst: f64,
}

/// The run at one of the main master's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistoryPoint {
    /// Seconds since the start.
    pub t_s: f64,
    /// Tasks gathered.
    pub tasks_done: u64,
    /// The live prediction of the whole run's time then, and its interval.
    pub predicted_total_s: Option<f64>,
    /// See `predicted_total_s`.
    pub predicted_low_s: Option<f64>,
    /// See `predicted_total_s`.
    pub predicted_high_s: Option<f64>,
    /// Tasks done by each cluster, in the order of [`LiveState::clusters`].
    pub clusters_done: Vec<u64>,
}

/// Where a cluster is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterPhase {
    /// Its processes started; no task reached it yet.
    Starting,
    /// It computes tasks.
    Computing,
    /// Its link stayed down past the deadline (or its sub-master failed): its tasks were
    /// handed to the others.
    Lost,
    /// It was lost and came back, and takes tasks again.
    Rejoined,
    /// The launcher started it again after it ended.
    Restarted,
    /// Its processes ended well.
    Done,
    /// Its processes ended with an error or were stopped.
    Failed,
}

impl ClusterPhase {
    /// The word for a person (the serialised name).
    pub fn word(self) -> &'static str {
        match self {
            ClusterPhase::Starting => "starting",
            ClusterPhase::Computing => "computing",
            ClusterPhase::Lost => "lost",
            ClusterPhase::Rejoined => "rejoined",
            ClusterPhase::Restarted => "restarted",
            ClusterPhase::Done => "done",
            ClusterPhase::Failed => "failed",
        }
    }
}

/// One cluster now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterState {
    /// Its name.
    pub name: String,
    /// The cluster of the run's master.
    pub main: bool,
    /// The cluster its link leads to (absent for the main cluster).
    pub parent: Option<String>,
    /// Where it is.
    pub phase: ClusterPhase,
    /// Times the launcher started it.
    pub starts: u32,
    /// How its processes ended, once they did (`exit status: 0`, `signal: 9`...).
    pub exit: Option<String>,
    /// Workers taking part.
    pub workers: usize,
    /// Tasks whose result came first from it, as the master that feeds it counts.
    pub tasks_done: u64,
    /// Tasks handed to it whose result has not come back, as the master that feeds it
    /// counts (over the WAN, in its communication managers' buffers, or at its workers).
    pub in_flight: Option<u64>,
    /// Of those, the tasks its own workers hold, as its own master counts.
    pub held: Option<u64>,
    /// Its rate over the last interval, tasks per second.
    pub tasks_per_s: Option<f64>,
    /// Its steady rate as predicted, tasks per second.
    pub predicted_tasks_per_s: Option<f64>,
    /// Its tasks as predicted, best and worst case.
    pub predicted_tasks_best: Option<u64>,
    /// See `predicted_tasks_best`.
    pub predicted_tasks_worst: Option<u64>,
    /// The live balance's share of the tasks left (61)(94).
    pub remaining_tasks: Option<f64>,
    /// The share of its workers' time they were busy over the last interval.
    pub efficiency: Option<f64>,
    /// Its efficiency as predicted, best and worst case.
    pub predicted_efficiency_best: Option<f64>,
    /// See `predicted_efficiency_best`.
    pub predicted_efficiency_worst: Option<f64>,
    /// What holds its rate down (`compute`, `lan`, `wan_in`, `wan_out`, `down`).
    pub bottleneck: Option<String>,
    /// Each of its own workers (empty until its master's first figures, or when they are
    /// not known here).
    pub worker_list: Vec<WorkerState>,
    /// Workers left out of `worker_list` to keep the file under [`limits::MAX_BYTES`].
    pub workers_omitted: usize,
}

/// One worker now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerState {
    /// Its rank in its cluster.
    pub rank: usize,
    /// Its host.
    pub host: String,
    /// Tasks whose result it delivered first.
    pub tasks_done: u64,
    /// Tasks it holds.
    pub held: u64,
    /// Tasks per second of busy time (its available performance), once it returned one.
    pub tasks_per_s: Option<f64>,
    /// The share of the time since the start it was busy.
    pub busy_share: Option<f64>,
    /// Lost: no more tasks go to it.
    pub lost: bool,
}

/// One link now, from its parent side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkState {
    /// The cluster behind it, and the cluster on its parent side.
    pub cluster: String,
    /// See `cluster`.
    pub parent: String,
    /// Reported at least once: the other fields are figures, not defaults.
    pub reported: bool,
    /// It has a connection.
    pub connected: bool,
    /// Round trip, milliseconds (0 before one was measured).
    pub rtt_ms: f64,
    /// Goodput towards the cluster (tasks) and back (results), bytes per second.
    pub out_bytes_per_s: f64,
    /// See `out_bytes_per_s`.
    pub in_bytes_per_s: f64,
    /// Tasks wait on the parent side of it.
    pub tasks_waiting: bool,
    /// Connections that joined again after one was lost, since the start.
    pub reconnections: u64,
    /// Blocks sent again after their connection died, and packets QUIC declared lost.
    pub blocks_resent: u64,
    /// See `blocks_resent`.
    pub packets_lost: u64,
}

/// One re-planning decision: the statistics' record (`t_s`, `cluster`, `action`, `reason`),
/// the same in the statistics file (`adaptations`) and here.
pub use hmw_core::stats::Adaptation;

/// One thing that happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When.
    pub unix_s: f64,
    /// What, one sentence.
    pub text: String,
}

/// How the run ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// `completed`, `failed` or `interrupted`.
    pub outcome: String,
    /// When.
    pub unix_s: f64,
    /// The measured makespan and tasks, from the main master's statistics (absent when it
    /// wrote none).
    pub makespan_s: Option<f64>,
    /// See `makespan_s`.
    pub tasks: Option<u64>,
    /// The statistics file they come from.
    pub stats_file: Option<String>,
}
