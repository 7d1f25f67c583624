//! The validated plan: [`Plan`], its clusters ([`ClusterPlan`]) and machines ([`Machine`]),
//! their roles, and what they tell beyond the values written.

use serde::Deserialize;

use super::error::{invalid, PlanError};
use crate::params::{
    ApplicationParams, GrainCandidate, MeasuredSystem, ModelForm, ModelTerms,
    RUNTIME_WORKER_BUFFERS,
};

/// What a machine entry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The master (main cluster).
    Master,
    /// The sub-master (external cluster).
    Submaster,
    /// A communication manager.
    Cm,
    /// A worker process.
    Worker,
}

impl Role {
    pub(super) fn name(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Submaster => "submaster",
            Role::Cm => "cm",
            Role::Worker => "worker",
        }
    }
}

/// How `hmw predict` chooses workers (`[model] selection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SelectionMode {
    /// Search the best selection that keeps the threshold.
    Auto,
    /// Each cluster's `use_workers` (all its workers where absent).
    Pinned,
    /// Every worker.
    All,
}

impl SelectionMode {
    /// `auto`, `pinned` or `all`.
    pub fn name(self) -> &'static str {
        match self {
            SelectionMode::Auto => "auto",
            SelectionMode::Pinned => "pinned",
            SelectionMode::All => "all",
        }
    }
}

/// A validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `[application] name`.
    pub name: String,
    /// The application at its current granularity.
    pub application: ApplicationParams,
    /// `[application] iterations`: an iterative application's tasks run in this many
    /// iterations with a barrier between them; `hmw simulate` divides each iteration's
    /// `tasks / iterations` tasks' operations among the workers active then (`[run]
    /// tune_workers`). `None`: not iterative. The closed-form model does not read it.
    pub iterations: Option<u64>,
    /// `[[application.grain]]` candidates, smallest grain first.
    pub grains: Vec<GrainCandidate>,
    /// `[model] efficiency_threshold`.
    pub efficiency_threshold: f64,
    /// `[model] reassign_last_task`.
    pub reassign_last_task: bool,
    /// `[model] selection`.
    pub selection: SelectionMode,
    /// `[model] exhaustive_limit`.
    pub exhaustive_limit: u64,
    /// `[model] selection_budget_s`: seconds the branch-and-bound selection may take.
    pub selection_budget_s: f64,
    /// `[model] form`: the thesis's model alone, or with this project's terms (the default).
    pub form: ModelForm,
    /// The terms beyond the thesis's model counted: the form's, each changed by its `[model]`
    /// key (`wan_latency`, `buffered_workers`, `submaster_tail`, `own_communication`,
    /// `capacity`, `link_ramp`) where the plan gives it.
    pub terms: ModelTerms,
    /// The clusters, the main one first, then the others in plan order.
    pub clusters: Vec<ClusterPlan>,
    /// `[launch]`, reserved for the command that runs a plan ([`launch`](super::launch)).
    pub launch: Option<toml::Table>,
    /// `[testbed]`, reserved for the testbed that emulates the plan's hosts on one machine.
    pub testbed: Option<toml::Table>,
    /// `[run]`, reserved for the command that runs a plan.
    pub run: Option<toml::Table>,
    /// `[pipeline]`: the plan is a pipeline's ([`super::PipelinePlan`]).
    pub pipeline: Option<super::PipelinePlan>,
}

/// One `[[cluster]]` of a validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterPlan {
    /// `name`.
    pub name: String,
    /// `main = true`.
    pub main: bool,
    /// `lan_bytes_per_s` (may come from a measured system instead).
    pub lan_bytes_per_s: Option<f64>,
    /// `wan_in_bytes_per_s` (external clusters; may come from a measured system instead).
    pub wan_in_bytes_per_s: Option<f64>,
    /// `wan_out_bytes_per_s` (external clusters; may come from a measured system instead).
    pub wan_out_bytes_per_s: Option<f64>,
    /// `wan_rtt_s`: the WAN's round-trip time to the parent cluster, seconds (external
    /// clusters; may come from a measured system instead). See [`ClusterPlan::wan_rtt_s`]
    /// for its default.
    pub wan_rtt_s: Option<f64>,
    /// `master_cpu_per_task_s`: seconds of its master's (an external cluster's sub-master's)
    /// CPU per task (125); may come from a measured system instead.
    pub master_cpu_per_task_s: Option<f64>,
    /// `cm_cpu_per_task_s`: seconds of its CM's CPU per task it relays (125); on the main
    /// cluster, its CMs' per task of an external cluster (177).
    pub cm_cpu_per_task_s: Option<f64>,
    /// `cm_idle_cpu_per_link`: on the main cluster, the share of a core its CMs spend per
    /// link while no task crosses it (177).
    pub cm_idle_cpu_per_link: Option<f64>,
    /// `tasks_per_inter_task` (`nt`, default 1).
    pub tasks_per_inter_task: u64,
    /// `results_per_inter_result` (`nr`, default 1).
    pub results_per_inter_result: u64,
    /// `use_workers`, read when `selection = "pinned"`.
    pub use_workers: Option<Vec<String>>,
    /// `machines`, in plan order.
    pub machines: Vec<Machine>,
    /// The cluster's `launch` table, reserved for the command that runs a plan.
    pub launch: Option<toml::Table>,
}

impl Plan {
    /// Tasks a worker holds at once: `[run] worker_buffers` (what the runtime reads), else
    /// the runtime's default ([`RUNTIME_WORKER_BUFFERS`]); read by (99).
    pub fn worker_buffers(&self) -> Result<u32, PlanError> {
        let Some(value) = self.run.as_ref().and_then(|run| run.get("worker_buffers")) else {
            return Ok(RUNTIME_WORKER_BUFFERS);
        };
        value
            .as_integer()
            .and_then(|b| u32::try_from(b).ok())
            .filter(|&b| b >= 1)
            .ok_or_else(|| {
                invalid(
                    None,
                    "run.worker_buffers",
                    format!("expected a whole number of tasks, at least 1, got {value}"),
                )
            })
    }

    /// The index in [`Plan::clusters`] of the cluster `cluster` hangs from (`[cluster.launch]
    /// parent`); `None` for the main cluster's children and for a parent that names no
    /// cluster (the launcher reports it).
    pub fn parent_index(&self, cluster: &ClusterPlan) -> Option<usize> {
        let name = cluster.launch_settings().ok().and_then(|l| l.parent)?;
        self.clusters
            .iter()
            .position(|c| c.name == name)
            .filter(|&k| !self.clusters[k].main)
    }

    /// The round trip between the master and `cluster`'s sub-master, seconds: the sum of
    /// [`ClusterPlan::wan_rtt_s`] over the links of its path up the tree (`[cluster.launch]
    /// parent`, default the main cluster); 0 for the main cluster. A parent that names no
    /// cluster, or a cycle, ends the path there (the launcher reports those).
    pub fn round_trip_to_master_s(
        &self,
        cluster: &ClusterPlan,
        measured: Option<&MeasuredSystem>,
    ) -> f64 {
        let mut total = 0.0;
        let mut at = cluster;
        for _ in 0..self.clusters.len() {
            if at.main {
                break;
            }
            total += at.wan_rtt_s(measured);
            let parent = at.launch_settings().ok().and_then(|l| l.parent);
            match parent {
                Some(name) => match self.clusters.iter().find(|c| c.name == name) {
                    Some(next) => at = next,
                    None => break,
                },
                None => break,
            }
        }
        total
    }
}

impl ClusterPlan {
    /// The worker entries, in plan order.
    pub fn workers(&self) -> impl Iterator<Item = &Machine> {
        self.machines.iter().filter(|m| m.role == Role::Worker)
    }

    /// The WAN's round-trip time to the parent, seconds: `measured` (a calibration's
    /// `wan_rtt_s`) when given, else the plan's `wan_rtt_s`, else twice the one-way delay
    /// its emulator adds (`[cluster.launch] wan_delay_ms`), else 0 (the main cluster too).
    pub fn wan_rtt_s(&self, measured: Option<&MeasuredSystem>) -> f64 {
        if self.main {
            return 0.0;
        }
        let calibrated = measured
            .and_then(|m| m.clusters.iter().find(|c| c.name == self.name))
            .and_then(|c| c.wan_rtt_s);
        calibrated
            .or(self.wan_rtt_s)
            .or_else(|| {
                self.launch_settings()
                    .ok()
                    .map(|l| 2.0 * l.wan_delay_ms / 1e3)
            })
            .unwrap_or(0.0)
    }
}

/// One machine entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// `host`.
    pub host: String,
    /// `role`.
    pub role: Role,
    /// `perf`, basic operations per second (read for workers; may come from a measured system).
    pub perf: Option<f64>,
}
