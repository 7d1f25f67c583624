//! A master's live feed: what it knows of its run at each progress line, as one line of JSON
//! appended to the file its binary's `--live-json` names ([`crate::config::RunConfig::live_json`]).
//! `hmw launch` gives each cluster's master one and builds its live state file from them
//! (the main master's for the run, the prediction and the clusters behind it; each
//! sub-master's for its own workers), so nothing is read back from the human progress line.
//!
//! A file format between the `hmw` command and the application binaries of the same build:
//! one [`LiveRecord`] per line, oldest first, each line written whole.

use serde::{Deserialize, Serialize};

use crate::protocol::LinkState;
use crate::stats::{Adaptation, ProgressSample};

/// One line of the feed: a master's view of its run at one progress line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveRecord {
    /// The master's cluster.
    pub cluster: String,
    /// When the master's clock started (`t_s = 0`), seconds since the UNIX epoch.
    pub started_unix_s: Option<f64>,
    /// The tasks of the whole run, when the master knows them (the main master).
    pub total_tasks: Option<u64>,
    /// The progress line's figures: tasks gathered, rates, the live prediction, and each
    /// cluster's live estimate (this master's own workers first).
    pub sample: ProgressSample,
    /// This master's own workers.
    pub workers: Vec<WorkerLive>,
    /// The clusters behind this master's communication managers.
    pub linked: Vec<LinkedLive>,
    /// Re-planning decisions made since the previous record.
    pub adaptations: Vec<Adaptation>,
}

/// One worker of a master, now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerLive {
    /// Its rank.
    pub rank: usize,
    /// Its host, from the machine file.
    pub host: String,
    /// Tasks whose result it delivered first.
    pub tasks_done: u64,
    /// Tasks handed to it whose result has not come back.
    pub held: u64,
    /// Seconds it spent executing tasks so far.
    pub busy_s: f64,
    /// Results it returned, useful or not (what `busy_s` covers).
    pub tasks_computed: u64,
    /// It was lost: no more tasks go to it.
    pub lost: bool,
}

/// A cluster behind one of a master's communication managers, now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkedLive {
    /// The cluster's name.
    pub name: String,
    /// The rank of the communication manager leading to it.
    pub cm_rank: usize,
    /// Its workers (with those of the clusters behind it), when the machine file says.
    pub workers: Option<usize>,
    /// Tasks whose result came first from it.
    pub tasks_done: u64,
    /// Tasks handed to it whose result has not come back.
    pub held: u64,
    /// Lost: its link stayed down past the deadline, or its sub-master failed.
    pub lost: bool,
    /// Dropped by re-planning (`[run] adapt`) until re-admitted.
    pub dropped: bool,
    /// Times it came back after being lost.
    pub rejoins: u64,
    /// Its link, as its communication manager last reported it (absent before the first
    /// report).
    pub link: Option<LinkState>,
}
