//! The model's inputs (`docs/model.md` section 1): application parameters, which depend only
//! on the application and its granularity, and system parameters, which depend on the machines
//! and links of one run.
//!
//! System parameters come either from a plan's hand-written values or from a calibration run
//! ([`MeasuredSystem`] overlays measured values on the plan); both end up in the same
//! [`SystemParams`], which is all the model reads.

use serde::{Deserialize, Serialize};

/// Largest `nt` or `nr` the model accepts (bounds the whole-task hand-out of step 5).
pub const MAX_TASKS_PER_UNIT: u64 = 100_000;

/// Application parameters for one granularity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplicationParams {
    /// `tasks(G)`: number of tasks of the workload.
    pub tasks: u64,
    /// `oper(G)`: basic operations of one task.
    pub oper: f64,
    /// `s_task(G)`: bytes of one task.
    pub task_bytes: f64,
    /// `s_result(G)`: bytes of one result.
    pub result_bytes: f64,
    /// `s_task_inter`: bytes of one inter-cluster task; `None` means `nt * s_task`.
    pub task_bytes_inter: Option<f64>,
    /// `s_result_inter`: bytes of one inter-cluster result; `None` means `nr * s_result`.
    pub result_bytes_inter: Option<f64>,
    /// The coefficient of variation of a task's basic operations (`[application] oper_cv`,
    /// 0: every task has `oper`); the contention model's workers serve with it (129).
    #[serde(default)]
    pub oper_cv: f64,
}

impl ApplicationParams {
    /// Equation (1): `workload = tasks * oper`, in basic operations.
    pub fn workload(&self) -> f64 {
        self.tasks as f64 * self.oper
    }

    /// Equation (2): `s_comm = s_task + s_result`, the bytes one task moves on a LAN.
    pub fn comm_bytes(&self) -> f64 {
        self.task_bytes + self.result_bytes
    }

    /// `s_task_inter` for `nt` local tasks per inter-cluster task (section 1): the given size,
    /// or `nt * s_task` by default.
    pub fn inter_task_bytes(&self, tasks_per_inter_task: u64) -> f64 {
        self.task_bytes_inter
            .unwrap_or(tasks_per_inter_task as f64 * self.task_bytes)
    }

    /// `s_result_inter` for `nr` local results per inter-cluster result (section 1): the given
    /// size, or `nr * s_result` by default.
    pub fn inter_result_bytes(&self, results_per_inter_result: u64) -> f64 {
        self.result_bytes_inter
            .unwrap_or(results_per_inter_result as f64 * self.result_bytes)
    }
}

/// One candidate granularity `G` for the tuning advice (section 3.3), with the application
/// parameters the application would have at that grain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrainCandidate {
    /// The grain `G`, in the application's own unit (for example a block edge).
    pub grain: u64,
    /// `tasks(G)`, `oper(G)`, `s_task(G)`, `s_result(G)` (and optional inter-cluster sizes).
    pub application: ApplicationParams,
}

/// A worker machine (a worker process) and its available performance `perf[i]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerParams {
    /// Host name, as in the plan and the machine file.
    pub host: String,
    /// Available performance in basic operations per second.
    pub perf: f64,
    /// `tput_own[i]`: the bytes of its tasks and results the worker moves per second of its
    /// own time, time it does not compute (100); `None`: its communication costs it nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_comm_bytes_per_s: Option<f64>,
}

impl WorkerParams {
    /// Equation (100): the worker's performance in a run, `oper / (oper/perf +
    /// s_comm/tput_own)` — a task takes its computation and the worker's own share of moving
    /// it and its result; `perf` without `tput_own`.
    pub fn run_perf(&self, app: &ApplicationParams) -> f64 {
        match self.own_comm_bytes_per_s {
            Some(own) => app.oper / (app.oper / self.perf + app.comm_bytes() / own),
            None => self.perf,
        }
    }

    /// The performance the model reads: [`WorkerParams::run_perf`] (100) when `terms` count
    /// a worker's own communication, else `perf`.
    pub fn perf_in_model(&self, app: &ApplicationParams, terms: &ModelTerms) -> f64 {
        if terms.own_communication {
            self.run_perf(app)
        } else {
            self.perf
        }
    }
}

/// The WAN link from the main cluster to an external cluster, and how tasks and results are
/// grouped to cross it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalLink {
    /// `tput_in`: WAN throughput main -> this cluster (tasks), bytes per second.
    pub wan_in_bytes_per_s: f64,
    /// `tput_out`: WAN throughput this cluster -> main (results), bytes per second.
    pub wan_out_bytes_per_s: f64,
    /// `nt`: local tasks carried by one inter-cluster task.
    pub tasks_per_inter_task: u64,
    /// `nr`: local results joined into one inter-cluster result.
    pub results_per_inter_result: u64,
    /// `rtt`: the round-trip time of the WAN path between the master and this cluster's
    /// sub-master, seconds (the sum over the links of a tree's path); 0 without one. Read by
    /// (96) and (97).
    #[serde(default)]
    pub wan_rtt_s: f64,
    /// `L_in`: the seconds the link loses to its ramp carrying tasks to this cluster, just
    /// connected, against its steady rate (170); 0 when not measured. Read by (171).
    #[serde(default)]
    pub wan_in_ramp_s: f64,
    /// `L_out`: the same for the results it carries back (170). Read by (172).
    #[serde(default)]
    pub wan_out_ramp_s: f64,
    /// The cluster this one's link goes to, an index into [`SystemParams::clusters`]; `None`
    /// for the main cluster (a star). Read by (173)-(174).
    #[serde(default)]
    pub parent: Option<usize>,
}

impl ExternalLink {
    /// A link to the main cluster of these rates, each task and result crossing it alone, no
    /// round trip or ramp known.
    pub fn new(wan_in_bytes_per_s: f64, wan_out_bytes_per_s: f64) -> Self {
        ExternalLink {
            wan_in_bytes_per_s,
            wan_out_bytes_per_s,
            tasks_per_inter_task: 1,
            results_per_inter_result: 1,
            wan_rtt_s: 0.0,
            wan_in_ramp_s: 0.0,
            wan_out_ramp_s: 0.0,
            parent: None,
        }
    }
}

/// The CPU the processes that hand out a cluster's tasks spend per task: its master (a
/// sub-master for an external cluster) and its CM (for the main cluster, its CMs facing the
/// external clusters). 0 where not known: no term.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchCosts {
    /// `c_m`: seconds of the master's (or sub-master's) CPU per task, handling its result and
    /// handing out the next (`master_cpu_per_task_s`), (125); the main master's also for
    /// every other cluster's messages (177).
    #[serde(default)]
    pub master_s: f64,
    /// `c_cm`: seconds of the CM's CPU per task it relays (`cm_cpu_per_task_s`), (125); on
    /// the main cluster `c_hub`, its CMs' per task of an external cluster (177).
    #[serde(default)]
    pub cm_s: f64,
    /// `u_idle`: on the main cluster, the share of a core its CMs spend per link while no
    /// task crosses it (`cm_idle_cpu_per_link`), (177).
    #[serde(default)]
    pub cm_idle_per_link: f64,
}

/// System parameters of one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusterParams {
    /// The cluster's name, as in the plan.
    pub name: String,
    /// `tput_lan` (`tput_sc` for an external cluster), bytes per second.
    pub lan_bytes_per_s: f64,
    /// The cluster's worker processes (only workers count in `W` and `cperf`).
    pub workers: Vec<WorkerParams>,
    /// The WAN link to the main cluster; `None` for the main cluster.
    pub external: Option<ExternalLink>,
    /// The CPU its master and CM spend per task.
    #[serde(default)]
    pub dispatch: DispatchCosts,
    /// `scv_lan` (175): the squared coefficient of variation of the LAN's time per task, as
    /// `hmw calibrate` measures it; `None`: the product form's 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lan_scv: Option<f64>,
}

impl ClusterParams {
    /// The performances of the workers at `indices` (indices into
    /// [`ClusterParams::workers`]) running `app`: in a run (100) when `terms` count a worker's
    /// own communication, else `perf`; indices out of range are skipped.
    pub fn perfs_of(
        &self,
        indices: &[usize],
        app: &ApplicationParams,
        terms: &ModelTerms,
    ) -> Vec<f64> {
        indices
            .iter()
            .filter_map(|&i| self.workers.get(i).map(|w| w.perf_in_model(app, terms)))
            .collect()
    }
}

/// System parameters of a run: the main cluster first, then the external clusters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemParams {
    /// `clusters[0]` is the main cluster (no [`ExternalLink`]); every other one is external.
    pub clusters: Vec<ClusterParams>,
}

/// How the workers of a run are chosen (section 3.2 step 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SelectionRequest {
    /// Every worker of every cluster.
    All,
    /// The given workers: per cluster (same order as [`SystemParams::clusters`]) the indices of
    /// the chosen workers.
    Pinned(Vec<Vec<usize>>),
    /// The selection with the smallest worst-case makespan whose clusters and run all stay at or
    /// above the efficiency threshold.
    Auto,
}

/// Default size limit of the exhaustive selection: the number of worker combinations
/// (`prod over clusters of 2^workers`) it may evaluate; above it a greedy local search is used.
pub const DEFAULT_EXHAUSTIVE_LIMIT: u64 = 1 << 16;

/// Largest exhaustive limit accepted (about four million combinations), so that a search always
/// ends in seconds.
pub const MAX_EXHAUSTIVE_LIMIT: u64 = 1 << 22;

/// Default time budget of the branch-and-bound selection, seconds: beyond it the search stops
/// and reports the best selection found and its gap to the lower bound.
pub const DEFAULT_SELECTION_BUDGET_S: f64 = 5.0;

/// How many tasks a worker holds when the plan's `[run]` does not say (`worker_buffers`, the
/// runtime's default: one computing, one received ahead).
pub const RUNTIME_WORKER_BUFFERS: u32 = 2;

/// The form of the model (`[model] form`): the thesis's model alone, or with the terms this
/// project added (`docs/model.md`, "The thesis's form").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelForm {
    /// Every term beyond the thesis's model counted (the default).
    Extended,
    /// The thesis's model: every term beyond it off.
    Thesis,
}

impl ModelForm {
    /// `extended` or `thesis`, as the plan writes it.
    pub fn name(self) -> &'static str {
        match self {
            ModelForm::Extended => "extended",
            ModelForm::Thesis => "thesis",
        }
    }
}

/// Which rate a cluster's steady state takes (`[model] contention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Contention {
    /// The least of the bottleneck formulas' limits (26)(32)(36)(125).
    Bottleneck,
    /// The cluster's closed network solved by MVA (127)(128).
    Mva,
}

impl Contention {
    /// `bottleneck` or `mva`, as the plan writes it.
    pub fn name(self) -> &'static str {
        match self {
            Contention::Bottleneck => "bottleneck",
            Contention::Mva => "mva",
        }
    }
}

/// The terms beyond the thesis's model, each of which can be switched off (`docs/model.md`,
/// "The thesis's form"). [`ModelTerms::of`] gives a form's; a plan's `[model]` keys change
/// one term at a time from its form's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelTerms {
    /// (96)(97): an external cluster's startup and end count its WAN's round trip
    /// (`[model] wan_latency`); off, the round trip is taken as 0.
    pub wan_latency: bool,
    /// (99): a worker holds `worker_buffers` tasks in the worst end (`[model]
    /// buffered_workers`); off, one (the thesis's (39)(49)(54)).
    pub buffered_workers: bool,
    /// Section 8: an external cluster's worst end is (49)/(54), its sub-master making no tail
    /// copies, whatever `reassign_last_task` says (`[model] submaster_tail`); off, (50)/(55)
    /// with reassignment, as the thesis has it.
    pub submaster_tail: bool,
    /// (100): a worker's own communication lowers its performance in a run (`[model]
    /// own_communication`); off, `perf` alone.
    pub own_communication: bool,
    /// (106): `hmw calibrate` takes a worker's `perf` and `tput_own` at its capacity
    /// (`[model] capacity`); off, at its compute thread's share of a core. The model itself
    /// does not read it.
    pub capacity: bool,
    /// (170)-(172): an external cluster's startup and end count what its links lose to their
    /// ramp (`[model] link_ramp`); off, nothing.
    pub link_ramp: bool,
    /// (173)-(174): a link of a tree carries its subtree's traffic, shared in proportion to
    /// what each cluster asks when it is oversubscribed (`[model] shared_links`); off, each
    /// cluster has its own link's rate alone.
    pub shared_links: bool,
    /// (177)-(178): the main master and the main cluster's CMs serve every cluster's tasks,
    /// shared in proportion to what each asks when they would need more than a core (`[model]
    /// main_path`); off, each cluster counts its own master and CM alone (125).
    pub main_path: bool,
    /// (101): the matrix product's row/column strategy stabilises where (78) stops climbing,
    /// at the least of its arguments that do not depend on the row/column (`[model]
    /// row_column_plateau`); off, (80) at the available performance.
    pub row_column_plateau: bool,
    /// (125): the master's (and CM's) CPU per task limits a cluster in the bottleneck
    /// formulas and is a queue of its network (`[model] master_cpu`); off, no term.
    pub master_cpu: bool,
    /// (126)-(129): the cluster's closed network is solved, its rate shown beside the
    /// bottleneck's (the extended form, or `contention = "mva"`).
    pub network: bool,
    /// Which rate the steady state takes (`[model] contention`): the network's needs
    /// `network`.
    pub contention: Contention,
}

impl ModelTerms {
    /// The terms of `form`: all on for the extended form, all off for the thesis's.
    pub const fn of(form: ModelForm) -> Self {
        let on = matches!(form, ModelForm::Extended);
        ModelTerms {
            wan_latency: on,
            buffered_workers: on,
            submaster_tail: on,
            own_communication: on,
            capacity: on,
            link_ramp: on,
            shared_links: on,
            main_path: on,
            row_column_plateau: on,
            master_cpu: on,
            network: on,
            contention: Contention::Bottleneck,
        }
    }
}

impl Default for ModelTerms {
    /// The extended form's terms.
    fn default() -> Self {
        ModelTerms::of(ModelForm::Extended)
    }
}

/// How the model treats a cluster beyond its machines: how its last tasks are handed out (its
/// worst end (39)/(43)/(49)/(99) depends on it) and which terms beyond the thesis's model it
/// counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClusterOptions {
    /// Whether the master copies tasks still in flight to idle workers at the end.
    pub reassign_last_task: bool,
    /// Tasks a worker holds at once (1: it asks when done), (99).
    pub worker_buffers: u32,
    /// The terms counted.
    pub terms: ModelTerms,
}

impl ClusterOptions {
    /// The tasks a worker holds in the worst end (99): `worker_buffers`, or 1 when the term
    /// is off.
    pub fn end_buffers(&self) -> u32 {
        if self.terms.buffered_workers {
            self.worker_buffers
        } else {
            1
        }
    }
}

impl From<bool> for ClusterOptions {
    /// `reassign_last_task`, with one task per worker (the thesis's assumption) and the
    /// extended form's terms.
    fn from(reassign_last_task: bool) -> Self {
        ClusterOptions {
            reassign_last_task,
            worker_buffers: 1,
            terms: ModelTerms::default(),
        }
    }
}

/// Choices of the user that are not application or system parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelOptions {
    /// `eff_threshold`: minimum efficiency the user accepts, in `[0, 1)`.
    pub efficiency_threshold: f64,
    /// `reassign`: whether the master re-sends the last task to idle workers.
    pub reassign_last_task: bool,
    /// Largest number of combinations the automatic selection evaluates exhaustively.
    pub exhaustive_limit: u64,
    /// Wall-clock budget of the branch-and-bound selection beyond the exhaustive limit, seconds.
    #[serde(default = "default_selection_budget_s")]
    pub selection_budget_s: f64,
    /// Tasks a worker holds at once (`[run] worker_buffers` of the plan), read by (99);
    /// 1 when absent from a serialised input (the thesis's assumption).
    #[serde(default = "one_buffer")]
    pub worker_buffers: u32,
    /// The terms beyond the thesis's model counted; the extended form's when absent from a
    /// serialised input.
    #[serde(default)]
    pub terms: ModelTerms,
}

impl ModelOptions {
    /// How the model treats every cluster beyond its machines: the worst end's options and
    /// the terms.
    pub fn cluster_options(&self) -> ClusterOptions {
        ClusterOptions {
            reassign_last_task: self.reassign_last_task,
            worker_buffers: self.worker_buffers,
            terms: self.terms,
        }
    }
}

fn one_buffer() -> u32 {
    1
}

fn default_selection_budget_s() -> f64 {
    DEFAULT_SELECTION_BUDGET_S
}

/// Everything the model needs to predict a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInput {
    /// The application at its current granularity.
    pub application: ApplicationParams,
    /// Candidate granularities for the tuning advice (may be empty).
    pub grains: Vec<GrainCandidate>,
    /// Machines and links.
    pub system: SystemParams,
    /// Threshold, reassignment, search limit.
    pub options: ModelOptions,
    /// Which workers to use.
    pub selection: SelectionRequest,
}

/// System parameters measured by a calibration run, to use in place of the hand-written values
/// of a plan. Every value is optional: what is absent keeps the plan's value.
///
/// JSON shape:
/// `{"clusters": [{"name": "spain", "lan_bytes_per_s": 9.6e6, "wan_in_bytes_per_s": 21802,
///   "wan_out_bytes_per_s": 21206, "workers": [{"host": "aoquir3", "perf": 4.6e-3}]}]}`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredSystem {
    /// When it was measured (free text, e.g. RFC 3339).
    #[serde(default)]
    pub measured_at: Option<String>,
    /// What it was measured under: the plan, the machines, the emulation.
    #[serde(default)]
    pub conditions: Option<String>,
    /// The coefficient of variation of a task's time on a worker (129), in place of the
    /// plan's `[application] oper_cv`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oper_cv: Option<f64>,
    /// Measured values per cluster, matched to the plan by name.
    #[serde(default)]
    pub clusters: Vec<MeasuredCluster>,
}

/// Measured values of one cluster.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredCluster {
    /// The cluster's name in the plan.
    pub name: String,
    /// Measured LAN throughput, bytes per second.
    #[serde(default)]
    pub lan_bytes_per_s: Option<f64>,
    /// `scv_lan` (175): the squared coefficient of variation of the LAN's time per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lan_scv: Option<f64>,
    /// Measured WAN throughput main -> this cluster, bytes per second.
    #[serde(default)]
    pub wan_in_bytes_per_s: Option<f64>,
    /// Measured WAN throughput this cluster -> main, bytes per second.
    #[serde(default)]
    pub wan_out_bytes_per_s: Option<f64>,
    /// Measured round-trip time of the WAN to the parent cluster, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan_rtt_s: Option<f64>,
    /// `L_in` (170): seconds the link to this cluster, just connected as a run connects it,
    /// lost against its steady rate carrying tasks (external clusters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan_in_ramp_s: Option<f64>,
    /// `L_out` (170): the same carrying results back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan_out_ramp_s: Option<f64>,
    /// `c_m` (125): seconds of the cluster's master's (or sub-master's) CPU per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_cpu_per_task_s: Option<f64>,
    /// `c_cm` (125): seconds of its CM's CPU per task it relays (external clusters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cm_cpu_per_task_s: Option<f64>,
    /// Measured worker performance, matched to the plan's workers by host.
    #[serde(default)]
    pub workers: Vec<MeasuredWorker>,
    /// The LAN calibration runs behind `lan_bytes_per_s`, one entry per worker count: for
    /// people and tools (the model reads `lan_bytes_per_s`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lan_runs: Vec<MeasuredLanRuns>,
}

/// LAN calibration runs with one number of workers: bytes per second of tasks and results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredLanRuns {
    /// Workers of the runs.
    pub workers: usize,
    /// Runs.
    pub runs: usize,
    /// Tasks of each run.
    pub tasks_per_run: u64,
    /// Mean of the runs, bytes per second.
    pub mean: f64,
    /// Sample standard deviation (0 with one run).
    pub std_dev: f64,
    /// Slowest run.
    pub min: f64,
    /// Fastest run.
    pub max: f64,
}

/// Measured available performance of the worker(s) on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredWorker {
    /// Host name in the plan.
    pub host: String,
    /// Basic operations per second.
    pub perf: f64,
    /// `tput_own` (100): bytes of its tasks and results the worker moves per second of its
    /// own time; absent: its communication costs it nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_comm_bytes_per_s: Option<f64>,
    /// `a` (106): the cores its process got while it worked in the calibration, at which
    /// `perf` was taken (`perf / cores` is its work per CPU second); absent when `perf` is per
    /// busy second (no CPU time measured, tasks that wait) or in files written before (106).
    /// Not a model input: `hmw report` compares a run's workers against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<f64>,
    /// A pipeline's calibration: seconds one item of each stage took on this worker, in the
    /// order of the plan's `[[pipeline.stage]]` (the mean of its repeats after the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_s: Option<Vec<f64>>,
    /// A pipeline's calibration: the coefficient of variation of this worker's repeated
    /// timings of one item through every stage, the noise of the threshold (158).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_cv: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn srmsd() -> ApplicationParams {
        ApplicationParams {
            tasks: 500,
            oper: 1.0,
            task_bytes: 4.0,
            result_bytes: 2_310_244.0,
            task_bytes_inter: None,
            result_bytes_inter: None,
            oper_cv: 0.0,
        }
    }

    #[test]
    fn workload_is_tasks_times_oper_eq1() {
        let mut app = srmsd();
        assert_eq!(app.workload(), 500.0);
        app.oper = 2.5;
        assert_eq!(app.workload(), 1250.0);
    }

    #[test]
    fn comm_bytes_is_task_plus_result_eq2() {
        assert_eq!(srmsd().comm_bytes(), 2_310_248.0);
    }

    #[test]
    fn a_workers_own_communication_lowers_its_performance_in_a_run_eq100() {
        // tb-matmul-local's lyon-1 as calibrated (docs/model.md section 9).
        let app = ApplicationParams {
            tasks: 216,
            oper: 268_173_312.0,
            task_bytes: 4_194_336.0,
            result_bytes: 2_097_162.0,
            task_bytes_inter: None,
            result_bytes_inter: None,
            oper_cv: 0.0,
        };
        let mut worker = WorkerParams {
            host: "lyon-1".into(),
            perf: 4.9303e9,
            own_comm_bytes_per_s: None,
        };
        assert_eq!(worker.run_perf(&app), 4.9303e9);
        worker.own_comm_bytes_per_s = Some(3.3379e8);
        let task_s = app.oper / 4.9303e9 + 6_291_498.0 / 3.3379e8;
        assert!((task_s - (0.054_393 + 0.018_849)).abs() < 1e-6, "{task_s}");
        let run_perf = worker.run_perf(&app);
        assert!((run_perf / 3.6614e9 - 1.0).abs() < 1e-4, "{run_perf}");
    }

    #[test]
    fn inter_sizes_default_to_multiples_and_respect_given_values() {
        let mut app = srmsd();
        assert_eq!(app.inter_task_bytes(3), 12.0);
        assert_eq!(app.inter_result_bytes(3), 6_930_732.0);
        app.result_bytes_inter = Some(2_310_244.0);
        app.task_bytes_inter = Some(8.0);
        assert_eq!(app.inter_result_bytes(3), 2_310_244.0);
        assert_eq!(app.inter_task_bytes(3), 8.0);
    }

    #[test]
    fn measured_system_reads_partial_json_and_rejects_unknown_keys() {
        let text = r#"{"clusters": [{"name": "spain", "wan_out_bytes_per_s": 30000,
            "workers": [{"host": "aoquir3", "perf": 0.005}]}]}"#;
        let measured: MeasuredSystem = serde_json::from_str(text).unwrap();
        assert_eq!(measured.clusters[0].wan_out_bytes_per_s, Some(30000.0));
        assert_eq!(measured.clusters[0].lan_bytes_per_s, None);
        assert_eq!(measured.clusters[0].workers[0].perf, 0.005);
        let typo = r#"{"clusters": [{"name": "spain", "wan_ot_bytes_per_s": 1}]}"#;
        let err = serde_json::from_str::<MeasuredSystem>(typo).unwrap_err();
        assert!(err.to_string().contains("wan_ot_bytes_per_s"), "{err}");
    }
}
