//! What a simulated run is made of: the clusters as laid out for a run (machine files), each
//! worker's performance, each LAN's and WAN's figures, the application's tasks and sizes, and
//! the run's configuration. `hmw simulate` builds one from a plan; tests build their own.

use hmw_core::{config::ConfigFile, machinefile::MachineFile};

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
    /// Changes of its rates during the run: from `at_s` seconds on, both ways move `factor`
    /// times the rates above (as `hmw-testbed set-rate` changes an emulated WAN's rate).
    pub rate_changes: Vec<(f64, f64)>,
    /// What each direction (down, up), just connected at the start, loses to its ramp,
    /// seconds (170): its rate rises linearly from nothing to its value over twice that.
    pub ramp_s: (f64, f64),
}

/// A change of workers' speed during the run, as `hmw-testbed set-perf` makes one: from
/// `at_s` seconds on, the workers on `host` (every host of the cluster when `None`) compute
/// at `factor` times their `perf`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedChange {
    /// Seconds from the start.
    pub at_s: f64,
    /// The host whose workers change; `None`: every host of the cluster.
    pub host: Option<String>,
    /// Their speed over their `perf` from then on.
    pub factor: f64,
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
    /// Changes of its workers' speed during the run; a later change of a host replaces an
    /// earlier one (each factor is over the plan's `perf`).
    pub speed_changes: Vec<SpeedChange>,
}

impl ClusterSpec {
    /// The factor of the speed of `host`'s workers at `at_s` seconds.
    pub fn speed_at(&self, host: &str, at_s: f64) -> f64 {
        self.speed_changes
            .iter()
            .filter(|c| c.at_s <= at_s && c.host.as_deref().is_none_or(|h| h == host))
            .max_by(|a, b| a.at_s.total_cmp(&b.at_s))
            .map_or(1.0, |c| c.factor)
    }

    /// Seconds a worker on `host` of `perf` takes for `operations` started at `start_s`: its
    /// speed changes during the task (the testbed's CPU quota acts on a running task too).
    pub fn compute_time(&self, host: &str, perf: f64, start_s: f64, operations: f64) -> f64 {
        let mut left = operations;
        let mut t = start_s;
        loop {
            let rate = perf * self.speed_at(host, t);
            let next = self
                .speed_changes
                .iter()
                .map(|c| c.at_s)
                .filter(|&a| a > t)
                .fold(f64::INFINITY, f64::min);
            let can = if next.is_finite() {
                rate * (next - t)
            } else {
                f64::INFINITY
            };
            let usable = rate.is_finite() && rate > 0.0;
            if !usable || left <= can {
                return t + left / rate - start_s;
            }
            left -= can;
            t = next;
        }
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
    /// An iterative problem: its tasks run in this many iterations with a barrier between
    /// them, each iteration's work (`tasks / iterations` tasks of `cost`) divided among the
    /// workers active then (`[run] tune_workers`).
    pub iterations: Option<u64>,
    /// Their basic operations.
    pub cost: TaskCost,
    /// Their sizes.
    pub sizes: Sizes,
}
