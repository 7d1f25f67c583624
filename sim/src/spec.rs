//! What a simulated run is made of: the clusters as laid out for a run (machine files), each
//! worker's performance, each LAN's and WAN's figures, the application's tasks and sizes, and
//! the run's configuration. `hmw simulate` builds one from a plan; tests build their own.

use hmw::{config::ConfigFile, machinefile::MachineFile};

use crate::problem::TaskCost;

/// A cluster of the tree.
pub struct ClusterSetup {
    /// Its name.
    pub name: String,
    /// Its machine file (as `hmw launch` writes it).
    pub machines: MachineFile,
    /// The index of its parent cluster (`None` for the main cluster, which is the first).
    pub parent: Option<usize>,
}

/// Message sizes, bytes, as the plan gives them (`[application]`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sizes {
    /// A task (`task_bytes`).
    pub task_bytes: f64,
    /// A result (`result_bytes`).
    pub result_bytes: f64,
    /// An inter-cluster task of `nt` tasks (`task_bytes_inter`; default `nt * task_bytes`).
    pub task_bytes_inter: Option<f64>,
    /// A joined result (`result_bytes_inter`; default one `result_bytes` per task).
    pub result_bytes_inter: Option<f64>,
}

/// The WAN between a cluster and its parent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WanSpec {
    /// Parent to child (tasks), bytes per second; `None`: no limit.
    pub down_bytes_per_s: Option<f64>,
    /// Child to parent (results), bytes per second.
    pub up_bytes_per_s: Option<f64>,
    /// Round-trip time, seconds: each message arrives half of it after it is sent.
    pub rtt_s: f64,
    /// Fraction of packets lost, each way: counted as time lost, so a direction moves
    /// `(1 - loss)` of its rate.
    pub loss: f64,
    /// When the link is down, seconds from the start: `(start, end)`.
    pub outages: Vec<(f64, f64)>,
}

/// One cluster.
pub struct ClusterSpec {
    /// Its machine file and place in the tree.
    pub setup: ClusterSetup,
    /// Basic operations per second of each rank's worker (by rank; read for workers only).
    pub perf: Vec<f64>,
    /// Its LAN, bytes per second (each way, at its head).
    pub lan_bytes_per_s: f64,
    /// Its WAN to its parent (`None` for the main cluster).
    pub wan: Option<WanSpec>,
    /// Changes of its workers' speed during the run: from `at_s` seconds on, they compute
    /// at `factor` times their `perf` (a task computes at the speed of its start).
    pub speed_changes: Vec<(f64, f64)>,
}

impl ClusterSpec {
    /// The factor of its workers' speed at `at_s` seconds.
    pub fn speed_at(&self, at_s: f64) -> f64 {
        self.speed_changes
            .iter()
            .filter(|(from, _)| *from <= at_s)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map_or(1.0, |&(_, factor)| factor)
    }
}

/// A simulated run.
pub struct Spec {
    /// The clusters, the main one first.
    pub clusters: Vec<ClusterSpec>,
    /// The run's configuration (`[run]`, `[cm]`).
    pub config: ConfigFile,
    /// Tasks of the problem.
    pub tasks: u64,
    /// Their basic operations.
    pub cost: TaskCost,
    /// Their sizes.
    pub sizes: Sizes,
}
