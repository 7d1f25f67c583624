//! The run plan: a TOML file describing the application, the model's settings and the clusters
//! with their machines (format: `docs/model.md`, "The plan file").
//!
//! [`load_plan`] reads and validates a plan; [`Plan::model_input`] turns it into the model's
//! parameter structs, optionally with system parameters measured by a calibration run
//! ([`MeasuredSystem`]) in place of the hand-written ones.
//!
//! Unknown keys: the tables the model reads (`[application]`, `[[application.grain]]`,
//! `[model]`, `[[cluster]]` and its `machines`) reject unknown keys, so a typo is an error that
//! names the key and the cluster. The top level accepts only the tables it knows; `[launch]`,
//! `[run]` and `[testbed]`, and a `launch` table inside a `[[cluster]]`, are reserved for the
//! commands that run a plan and are kept here uninterpreted ([`launch`] reads them).

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use crate::methodology::MAX_TASKS_PER_UNIT;
use crate::params::{
    ApplicationParams, ClusterParams, ExternalLink, GrainCandidate, MeasuredSystem, ModelInput,
    ModelOptions, SelectionRequest, SystemParams, WorkerParams, DEFAULT_EXHAUSTIVE_LIMIT,
    DEFAULT_SELECTION_BUDGET_S, MAX_EXHAUSTIVE_LIMIT, RUNTIME_WORKER_BUFFERS,
};
use crate::range::check_working_range;

/// Default `[model] efficiency_threshold`.
pub const DEFAULT_EFFICIENCY_THRESHOLD: f64 = 0.8;

/// A bad plan (or measured-system file): one error naming the file, the cluster and the key.
#[derive(Debug, Error)]
pub enum PlanError {
    /// The file cannot be read.
    #[error("cannot read `{}`: {io}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        io: std::io::Error,
    },
    /// An error inside a named file.
    #[error("{}: {error}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        error: Box<PlanError>,
    },
    /// Not TOML, or a key of the wrong type, missing or unknown.
    #[error(
        "line {line}, column {column}: {}{message}",
        syntax_context(cluster, machine, key)
    )]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The `[[cluster]]` where it happened, when inside one.
        cluster: Option<String>,
        /// The machine entry's `host`, when inside one.
        machine: Option<String>,
        /// The key whose value is wrong (`perf`, `role`, `application.tasks`); `None` when the
        /// message names it already (a missing or unknown key) or the error is in no value.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A well-formed plan with a value that cannot be right.
    #[error("{}", InvalidDisplay { cluster, machine, key, message })]
    Invalid {
        /// The cluster's name, for a key of a `[[cluster]]`.
        cluster: Option<String>,
        /// The machine's host, for a key of a machine entry.
        machine: Option<String>,
        /// The key, as written in the plan (`application.tasks`, `wan_in_bytes_per_s`, ...).
        key: String,
        /// What is wrong.
        message: String,
    },
}

fn syntax_context(
    cluster: &Option<String>,
    machine: &Option<String>,
    key: &Option<String>,
) -> String {
    let parts: Vec<String> = [
        cluster.as_ref().map(|c| format!("cluster `{c}`")),
        machine.as_ref().map(|m| format!("machine `{m}`")),
        key.as_ref().map(|k| format!("key `{k}`")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("{}: ", parts.join(", "))
    }
}

struct InvalidDisplay<'a> {
    cluster: &'a Option<String>,
    machine: &'a Option<String>,
    key: &'a str,
    message: &'a str,
}

impl fmt::Display for InvalidDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(cluster) = self.cluster {
            write!(f, "cluster `{cluster}`, ")?;
        }
        if let Some(machine) = self.machine {
            write!(f, "machine `{machine}`, ")?;
        }
        write!(f, "key `{}`: {}", self.key, self.message)
    }
}

fn invalid(cluster: Option<&str>, key: &str, message: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        cluster: cluster.map(str::to_string),
        machine: None,
        key: key.to_string(),
        message: message.into(),
    }
}

fn invalid_machine(cluster: &str, host: &str, key: &str, message: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        cluster: Some(cluster.to_string()),
        machine: Some(host.to_string()),
        key: key.to_string(),
        message: message.into(),
    }
}

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
    fn name(self) -> &'static str {
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

// ---- the file as written (serde), before validation ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    application: ApplicationTable,
    #[serde(default)]
    model: ModelTable,
    #[serde(default)]
    cluster: Vec<ClusterTable>,
    #[serde(default)]
    launch: Option<toml::Table>,
    #[serde(default)]
    run: Option<toml::Table>,
    #[serde(default)]
    testbed: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplicationTable {
    name: String,
    tasks: u64,
    #[serde(default = "one")]
    oper: f64,
    task_bytes: f64,
    result_bytes: f64,
    task_bytes_inter: Option<f64>,
    result_bytes_inter: Option<f64>,
    #[serde(default)]
    oper_cv: f64,
    iterations: Option<u64>,
    #[serde(default)]
    grain: Vec<GrainTable>,
}

fn one() -> f64 {
    1.0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrainTable {
    grain: u64,
    tasks: u64,
    #[serde(default = "one")]
    oper: f64,
    task_bytes: f64,
    result_bytes: f64,
    task_bytes_inter: Option<f64>,
    result_bytes_inter: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelTable {
    #[serde(default = "default_threshold")]
    efficiency_threshold: f64,
    #[serde(default = "default_true")]
    reassign_last_task: bool,
    #[serde(default = "default_selection")]
    selection: SelectionMode,
    #[serde(default = "default_exhaustive_limit")]
    exhaustive_limit: u64,
    #[serde(default = "default_selection_budget_s")]
    selection_budget_s: f64,
}

impl Default for ModelTable {
    fn default() -> Self {
        ModelTable {
            efficiency_threshold: default_threshold(),
            reassign_last_task: true,
            selection: default_selection(),
            exhaustive_limit: default_exhaustive_limit(),
            selection_budget_s: default_selection_budget_s(),
        }
    }
}

fn default_threshold() -> f64 {
    DEFAULT_EFFICIENCY_THRESHOLD
}
fn default_true() -> bool {
    true
}
fn default_selection() -> SelectionMode {
    SelectionMode::All
}
fn default_exhaustive_limit() -> u64 {
    DEFAULT_EXHAUSTIVE_LIMIT
}
fn default_selection_budget_s() -> f64 {
    DEFAULT_SELECTION_BUDGET_S
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClusterTable {
    name: String,
    #[serde(default)]
    main: bool,
    lan_bytes_per_s: Option<f64>,
    wan_in_bytes_per_s: Option<f64>,
    wan_out_bytes_per_s: Option<f64>,
    wan_rtt_s: Option<f64>,
    tasks_per_inter_task: Option<u64>,
    results_per_inter_result: Option<u64>,
    use_workers: Option<Vec<String>>,
    machines: Vec<MachineTable>,
    launch: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineTable {
    host: String,
    role: Role,
    perf: Option<f64>,
}

// ---- the validated plan ----

/// A validated plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `[application] name`.
    pub name: String,
    /// The application at its current granularity.
    pub application: ApplicationParams,
    /// `[application] oper_cv`: the coefficient of variation of a task's basic operations
    /// (0, the default: every task has `oper`); `hmw simulate` draws each task's from a
    /// log-normal distribution of mean `oper` and this spread. The closed-form model reads
    /// only the mean.
    pub oper_cv: f64,
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
    /// The clusters, the main one first, then the others in plan order.
    pub clusters: Vec<ClusterPlan>,
    /// `[launch]`, reserved for the command that runs a plan ([`launch`]).
    pub launch: Option<toml::Table>,
    /// `[testbed]`, reserved for the testbed that emulates the plan's hosts on one machine.
    pub testbed: Option<toml::Table>,
    /// `[run]`, reserved for the command that runs a plan.
    pub run: Option<toml::Table>,
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

/// Reads and validates the plan at `path`; errors name the file.
pub fn load_plan(path: &Path) -> Result<Plan, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|io| PlanError::Read {
        path: path.to_path_buf(),
        io,
    })?;
    Plan::from_toml_str(&text).map_err(|error| PlanError::InFile {
        path: path.to_path_buf(),
        error: Box::new(error),
    })
}

/// Reads a measured-system file ([`MeasuredSystem`]): TOML as `hmw calibrate` writes it
/// (`measured_at`, `conditions`, `[[clusters]]` with `[[clusters.workers]]`), or JSON with the
/// same keys when its name ends in `.json`; errors name the file.
pub fn load_measured_system(path: &Path) -> Result<MeasuredSystem, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|io| PlanError::Read {
        path: path.to_path_buf(),
        io,
    })?;
    if path.extension().is_none_or(|e| e != "json") {
        return location::deserialize(&text).map_err(|failure| {
            let (e, located) = *failure;
            PlanError::InFile {
                path: path.to_path_buf(),
                error: Box::new(syntax_error(&text, &e, located, &[])),
            }
        });
    }
    serde_json::from_str(&text).map_err(|e| {
        let location = format!(" at line {} column {}", e.line(), e.column());
        let message = e.to_string();
        let message = message.strip_suffix(&location).unwrap_or(&message);
        PlanError::InFile {
            path: path.to_path_buf(),
            error: Box::new(PlanError::Syntax {
                line: e.line(),
                column: e.column(),
                cluster: None,
                machine: None,
                key: None,
                message: message.replace(" field ", " key "),
            }),
        }
    })
}

/// The model's input for `plan` (read from `plan_path`), with the values of the measured-system
/// file `measured`, when one is given, in place of the plan's ([`Plan::model_input`]); and the
/// measured system read, for the commands that say where their values come from. Errors name
/// their file: the measured file for one that cannot be read or does not fit the plan,
/// `plan_path` for an input the model cannot take.
pub fn model_input_with_measured(
    plan: &Plan,
    plan_path: &Path,
    measured: Option<&Path>,
) -> Result<(ModelInput, Option<MeasuredSystem>), PlanError> {
    let measured = match measured {
        Some(file) => {
            let system = load_measured_system(file)?;
            plan.check_measured(&system)
                .map_err(|error| PlanError::InFile {
                    path: file.to_path_buf(),
                    error: Box::new(error),
                })?;
            Some(system)
        }
        None => None,
    };
    let input = plan
        .model_input(measured.as_ref())
        .map_err(|error| PlanError::InFile {
            path: plan_path.to_path_buf(),
            error: Box::new(error),
        })?;
    Ok((input, measured))
}

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// The TOML error as one line, in the plan's vocabulary: the line and column, and the key (with
/// its cluster and machine) whose value is wrong, or else the cluster or table it is in.
fn syntax_error(
    text: &str,
    error: &toml::de::Error,
    located: Option<location::Located>,
    clusters: &[(String, std::ops::Range<usize>)],
) -> PlanError {
    let span = error.span().unwrap_or(0..0);
    let (line, column) = line_column(text, span.start);
    let message = error
        .message()
        .trim()
        .replace("unknown field", "unknown key")
        .replace("missing field", "missing key")
        .replace("duplicate field", "duplicate key")
        .replace('\n', "; ");
    // The key whose value is wrong; an unknown, duplicate or missing key is named by the
    // message itself.
    let names_a_key = !(message.starts_with("unknown key")
        || message.starts_with("duplicate key")
        || message.starts_with("missing key"));
    if let Some(found) = located.filter(|f| f.cluster.is_some() || names_a_key) {
        return PlanError::Syntax {
            line,
            column,
            cluster: found.cluster,
            machine: found.machine,
            key: Some(found.key).filter(|k| names_a_key && !k.is_empty()),
            message,
        };
    }
    let cluster = clusters
        .iter()
        .find(|(_, range)| range.start <= span.start && span.start < range.end.max(range.start + 1))
        .map(|(name, _)| name.clone());
    let table = match &cluster {
        Some(_) => String::new(),
        None => enclosing_table(text, span.start)
            .map(|t| format!("{t}: "))
            .unwrap_or_default(),
    };
    PlanError::Syntax {
        line,
        column,
        cluster,
        machine: None,
        key: None,
        message: format!("{table}{message}"),
    }
}

/// The header (`[application]`, `[model]`, ...) of the table holding byte `offset`, if any.
fn enclosing_table(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    text[..line_end]
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with('['))
        .map(|line| line.split('#').next().unwrap_or(line).trim().to_string())
}

/// Where each `[[cluster]]` is in the text and what it is called, for error messages.
fn cluster_spans(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    #[derive(Deserialize)]
    struct Skeleton {
        #[serde(default)]
        cluster: Vec<toml::Spanned<toml::Table>>,
    }
    let Ok(skeleton) = toml::from_str::<Skeleton>(text) else {
        return Vec::new();
    };
    skeleton
        .cluster
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = c
                .get_ref()
                .get("name")
                .and_then(|n| n.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| format!("#{}", i + 1));
            (name, c.span())
        })
        .collect()
}

fn check_positive(
    cluster: Option<&str>,
    key: &str,
    value: f64,
    unit: &str,
) -> Result<(), PlanError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(invalid(
            cluster,
            key,
            format!("must be a positive number of {unit}, got {value}"),
        ))
    }
}

fn check_size(key: &str, value: f64) -> Result<(), PlanError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(
            None,
            key,
            format!("must be a number of bytes, 0 or more, got {value}"),
        ))
    }
}

fn application_params(
    prefix: &str,
    tasks: u64,
    oper: f64,
    task_bytes: f64,
    result_bytes: f64,
    task_bytes_inter: Option<f64>,
    result_bytes_inter: Option<f64>,
) -> Result<ApplicationParams, PlanError> {
    if tasks == 0 {
        return Err(invalid(
            None,
            &format!("{prefix}.tasks"),
            "must be at least 1",
        ));
    }
    check_positive(
        None,
        &format!("{prefix}.oper"),
        oper,
        "basic operations per task",
    )?;
    check_size(&format!("{prefix}.task_bytes"), task_bytes)?;
    check_size(&format!("{prefix}.result_bytes"), result_bytes)?;
    if let Some(v) = task_bytes_inter {
        check_size(&format!("{prefix}.task_bytes_inter"), v)?;
    }
    if let Some(v) = result_bytes_inter {
        check_size(&format!("{prefix}.result_bytes_inter"), v)?;
    }
    Ok(ApplicationParams {
        tasks,
        oper,
        task_bytes,
        result_bytes,
        task_bytes_inter,
        result_bytes_inter,
    })
}

impl Plan {
    /// Parses and validates a plan. The first problem found is the error.
    pub fn from_toml_str(text: &str) -> Result<Plan, PlanError> {
        let file: PlanFile = location::deserialize(text).map_err(|failure| {
            let (e, located) = *failure;
            syntax_error(text, &e, located, &cluster_spans(text))
        })?;
        let a = file.application;
        let application = application_params(
            "application",
            a.tasks,
            a.oper,
            a.task_bytes,
            a.result_bytes,
            a.task_bytes_inter,
            a.result_bytes_inter,
        )?;
        if !(a.oper_cv.is_finite() && a.oper_cv >= 0.0) {
            return Err(invalid(
                None,
                "application.oper_cv",
                format!("must be a fraction, 0 or more, got {}", a.oper_cv),
            ));
        }
        if let Some(n) = a.iterations.filter(|&n| n == 0 || n > a.tasks) {
            return Err(invalid(
                None,
                "application.iterations",
                format!("must be from 1 to tasks ({}), got {n}", a.tasks),
            ));
        }
        let mut grains = Vec::new();
        let mut seen_grains = HashSet::new();
        for g in a.grain {
            if g.grain == 0 {
                return Err(invalid(
                    None,
                    "application.grain.grain",
                    "must be at least 1",
                ));
            }
            if !seen_grains.insert(g.grain) {
                return Err(invalid(
                    None,
                    "application.grain.grain",
                    format!("grain {} is listed twice", g.grain),
                ));
            }
            let prefix = format!("application.grain[grain = {}]", g.grain);
            grains.push(GrainCandidate {
                grain: g.grain,
                application: application_params(
                    &prefix,
                    g.tasks,
                    g.oper,
                    g.task_bytes,
                    g.result_bytes,
                    g.task_bytes_inter,
                    g.result_bytes_inter,
                )?,
            });
        }
        grains.sort_by_key(|g| g.grain);

        let m = file.model;
        if !(m.efficiency_threshold.is_finite() && (0.0..1.0).contains(&m.efficiency_threshold)) {
            return Err(invalid(
                None,
                "model.efficiency_threshold",
                format!(
                    "must be a fraction from 0 up to (not including) 1, got {}",
                    m.efficiency_threshold
                ),
            ));
        }
        if !(1..=MAX_EXHAUSTIVE_LIMIT).contains(&m.exhaustive_limit) {
            return Err(invalid(
                None,
                "model.exhaustive_limit",
                format!(
                    "must be between 1 and {MAX_EXHAUSTIVE_LIMIT} combinations, got {}",
                    m.exhaustive_limit
                ),
            ));
        }

        if !(m.selection_budget_s.is_finite() && m.selection_budget_s > 0.0) {
            return Err(invalid(
                None,
                "model.selection_budget_s",
                format!(
                    "must be a positive number of seconds, got {}",
                    m.selection_budget_s
                ),
            ));
        }

        let clusters = validate_clusters(file.cluster, m.selection)?;
        launch::check_slurm_choice(&clusters)?;
        Ok(Plan {
            name: a.name,
            application,
            oper_cv: a.oper_cv,
            iterations: a.iterations,
            grains,
            efficiency_threshold: m.efficiency_threshold,
            reassign_last_task: m.reassign_last_task,
            selection: m.selection,
            exhaustive_limit: m.exhaustive_limit,
            selection_budget_s: m.selection_budget_s,
            clusters,
            launch: file.launch,
            testbed: file.testbed,
            run: file.run,
        })
    }

    /// The model's input: the plan's values, with `measured` values (from a calibration run) in
    /// their place where given. Fails on a value neither provides, a measured entry that names
    /// no cluster or worker of the plan, or values that take a derived quantity out of the
    /// model's working range ([`check_working_range`]; the error names the key, cluster and
    /// machine, and says when the value came from the measured system).
    pub fn model_input(&self, measured: Option<&MeasuredSystem>) -> Result<ModelInput, PlanError> {
        let empty = MeasuredSystem::default();
        let measured = measured.unwrap_or(&empty);
        check_measured(self, measured)?;
        let mut clusters = Vec::new();
        let mut pinned = Vec::new();
        for plan in &self.clusters {
            let name = plan.name.as_str();
            let m = measured.clusters.iter().find(|c| c.name == name);
            let value = |key: &str, planned: Option<f64>, measured: Option<f64>| {
                measured.or(planned).ok_or_else(|| {
                    invalid(
                        Some(name),
                        key,
                        "missing: give it in the plan or in a measured system file",
                    )
                })
            };
            let lan = value(
                "lan_bytes_per_s",
                plan.lan_bytes_per_s,
                m.and_then(|m| m.lan_bytes_per_s),
            )?;
            let external = if plan.main {
                None
            } else {
                Some(ExternalLink {
                    wan_in_bytes_per_s: value(
                        "wan_in_bytes_per_s",
                        plan.wan_in_bytes_per_s,
                        m.and_then(|m| m.wan_in_bytes_per_s),
                    )?,
                    wan_out_bytes_per_s: value(
                        "wan_out_bytes_per_s",
                        plan.wan_out_bytes_per_s,
                        m.and_then(|m| m.wan_out_bytes_per_s),
                    )?,
                    tasks_per_inter_task: plan.tasks_per_inter_task,
                    results_per_inter_result: plan.results_per_inter_result,
                    wan_rtt_s: self.round_trip_to_master_s(plan, Some(measured)),
                })
            };
            let mut workers = Vec::new();
            for machine in plan.workers() {
                let measured = m.and_then(|m| m.workers.iter().find(|w| w.host == machine.host));
                let measured_perf = measured.map(|w| w.perf);
                let perf = measured_perf.or(machine.perf).ok_or_else(|| {
                    invalid_machine(
                        name,
                        &machine.host,
                        "perf",
                        "missing: give the worker's performance in the plan or in a measured \
                         system file",
                    )
                })?;
                workers.push(WorkerParams {
                    host: machine.host.clone(),
                    perf,
                    own_comm_bytes_per_s: measured.and_then(|w| w.own_comm_bytes_per_s),
                });
            }
            pinned.push(match &plan.use_workers {
                Some(hosts) => workers
                    .iter()
                    .enumerate()
                    .filter(|(_, w)| hosts.contains(&w.host))
                    .map(|(i, _)| i)
                    .collect(),
                None => (0..workers.len()).collect(),
            });
            clusters.push(ClusterParams {
                name: plan.name.clone(),
                lan_bytes_per_s: lan,
                workers,
                external,
            });
        }
        let selection = match self.selection {
            SelectionMode::All => SelectionRequest::All,
            SelectionMode::Auto => SelectionRequest::Auto,
            SelectionMode::Pinned => SelectionRequest::Pinned(pinned),
        };
        let input = ModelInput {
            application: self.application.clone(),
            grains: self.grains.clone(),
            system: SystemParams { clusters },
            options: ModelOptions {
                efficiency_threshold: self.efficiency_threshold,
                reassign_last_task: self.reassign_last_task,
                exhaustive_limit: self.exhaustive_limit,
                selection_budget_s: self.selection_budget_s,
                worker_buffers: self.worker_buffers()?,
            },
            selection,
        };
        check_working_range(&input).map_err(|e| {
            let source = match e.cluster.as_deref() {
                Some(cluster)
                    if measured_value(measured, cluster, e.machine.as_deref(), &e.key) =>
                {
                    " (the value comes from the measured system)"
                }
                // The best time (6): the sum of every worker's perf, some of them measured.
                None if e.key == "perf"
                    && measured.clusters.iter().any(|c| !c.workers.is_empty()) =>
                {
                    " (perf values come from the measured system)"
                }
                _ => "",
            };
            PlanError::Invalid {
                cluster: e.cluster,
                machine: e.machine,
                key: e.key,
                message: format!("{}{source}", e.message),
            }
        })?;
        Ok(input)
    }
}

/// Whether `measured` gives the value of `key` for `cluster` (and `machine`).
fn measured_value(
    measured: &MeasuredSystem,
    cluster: &str,
    machine: Option<&str>,
    key: &str,
) -> bool {
    let Some(m) = measured.clusters.iter().find(|c| c.name == cluster) else {
        return false;
    };
    match (key, machine) {
        ("perf", Some(host)) => m.workers.iter().any(|w| w.host == host),
        ("lan_bytes_per_s", _) => m.lan_bytes_per_s.is_some(),
        ("wan_in_bytes_per_s", _) => m.wan_in_bytes_per_s.is_some(),
        ("wan_out_bytes_per_s", _) => m.wan_out_bytes_per_s.is_some(),
        _ => false,
    }
}

fn validate_clusters(
    tables: Vec<ClusterTable>,
    selection: SelectionMode,
) -> Result<Vec<ClusterPlan>, PlanError> {
    if tables.is_empty() {
        return Err(invalid(None, "cluster", "the plan has no [[cluster]]"));
    }
    let mut names = HashSet::new();
    for t in &tables {
        if t.name.trim().is_empty() {
            return Err(invalid(
                None,
                "cluster.name",
                "a cluster name must not be empty",
            ));
        }
        if !names.insert(t.name.as_str()) {
            return Err(invalid(
                Some(&t.name),
                "name",
                "two clusters have this name",
            ));
        }
    }
    let mains: Vec<&str> = tables
        .iter()
        .filter(|t| t.main)
        .map(|t| t.name.as_str())
        .collect();
    match mains.as_slice() {
        [] => {
            return Err(invalid(
                None,
                "cluster.main",
                "no cluster has `main = true`; mark the cluster that runs the master",
            ))
        }
        [_] => {}
        [_, second, ..] => {
            return Err(invalid(
                Some(second),
                "main",
                format!(
                    "only one cluster may be the main one, `{}` already is",
                    mains[0]
                ),
            ))
        }
    }
    let mut clusters = Vec::new();
    for t in tables {
        clusters.push(validate_cluster(t, selection)?);
    }
    if clusters.iter().all(|c| c.workers().next().is_none()) {
        return Err(invalid(
            None,
            "cluster.machines",
            "the plan has no worker: give at least one machine role = \"worker\"",
        ));
    }
    clusters.sort_by_key(|c| !c.main);
    Ok(clusters)
}

fn validate_cluster(t: ClusterTable, selection: SelectionMode) -> Result<ClusterPlan, PlanError> {
    let name = t.name.as_str();
    let c = Some(name);
    if let Some(v) = t.lan_bytes_per_s {
        check_positive(c, "lan_bytes_per_s", v, "bytes per second")?;
    }
    let wan_keys = [
        ("wan_in_bytes_per_s", t.wan_in_bytes_per_s.is_some()),
        ("wan_out_bytes_per_s", t.wan_out_bytes_per_s.is_some()),
        ("wan_rtt_s", t.wan_rtt_s.is_some()),
        ("tasks_per_inter_task", t.tasks_per_inter_task.is_some()),
        (
            "results_per_inter_result",
            t.results_per_inter_result.is_some(),
        ),
    ];
    if t.main {
        if let Some((key, _)) = wan_keys.iter().find(|(_, given)| *given) {
            return Err(invalid(
                c,
                key,
                "the main cluster has no WAN link to the master; remove this key",
            ));
        }
    }
    for (key, value) in [
        ("wan_in_bytes_per_s", t.wan_in_bytes_per_s),
        ("wan_out_bytes_per_s", t.wan_out_bytes_per_s),
    ] {
        if let Some(v) = value {
            check_positive(c, key, v, "bytes per second")?;
        }
    }
    if let Some(rtt) = t.wan_rtt_s {
        if !(rtt.is_finite() && rtt >= 0.0) {
            return Err(invalid(
                c,
                "wan_rtt_s",
                format!("must be a number of seconds, 0 or more, got {rtt}"),
            ));
        }
    }
    for (key, value) in [
        ("tasks_per_inter_task", t.tasks_per_inter_task),
        ("results_per_inter_result", t.results_per_inter_result),
    ] {
        if let Some(v) = value {
            if !(1..=MAX_TASKS_PER_UNIT).contains(&v) {
                return Err(invalid(
                    c,
                    key,
                    format!("must be between 1 and {MAX_TASKS_PER_UNIT}, got {v}"),
                ));
            }
        }
    }
    if t.machines.is_empty() {
        return Err(invalid(c, "machines", "the cluster lists no machine"));
    }
    for m in &t.machines {
        if m.host.trim().is_empty() {
            return Err(invalid(c, "machines.host", "a host name must not be empty"));
        }
        if let Some(perf) = m.perf {
            if !(perf.is_finite() && perf > 0.0) {
                return Err(invalid_machine(
                    name,
                    &m.host,
                    "perf",
                    format!("must be a positive number of basic operations per second, got {perf}"),
                ));
            }
        }
    }
    let count = |role: Role| t.machines.iter().filter(|m| m.role == role).count();
    let (own, other) = if t.main {
        (Role::Master, Role::Submaster)
    } else {
        (Role::Submaster, Role::Master)
    };
    let kind = if t.main { "the main" } else { "an external" };
    if count(own) != 1 {
        return Err(invalid(
            c,
            "machines.role",
            format!(
                "{kind} cluster needs exactly one machine with role = \"{}\", found {}",
                own.name(),
                count(own)
            ),
        ));
    }
    if let Some(m) = t.machines.iter().find(|m| m.role == other) {
        return Err(invalid_machine(
            name,
            &m.host,
            "role",
            format!("{kind} cluster has no {}", other.name()),
        ));
    }
    if !t.main && count(Role::Worker) == 0 {
        return Err(invalid(
            c,
            "machines",
            "an external cluster needs at least one machine with role = \"worker\"",
        ));
    }
    if selection == SelectionMode::Pinned {
        if let Some(hosts) = &t.use_workers {
            if hosts.is_empty() {
                return Err(invalid(
                    c,
                    "use_workers",
                    "is empty; list at least one worker, or remove the key to use them all",
                ));
            }
            let mut seen = HashSet::new();
            for host in hosts {
                if !seen.insert(host) {
                    return Err(invalid(
                        c,
                        "use_workers",
                        format!("host `{host}` is listed twice"),
                    ));
                }
                match t
                    .machines
                    .iter()
                    .find(|m| &m.host == host && m.role == Role::Worker)
                {
                    Some(_) => {}
                    None => {
                        let what = match t.machines.iter().find(|m| &m.host == host) {
                            Some(m) => format!("its role here is {}", m.role.name()),
                            None => "it is not among the cluster's machines".to_string(),
                        };
                        return Err(invalid(
                            c,
                            "use_workers",
                            format!("host `{host}` is not a worker of this cluster ({what})"),
                        ));
                    }
                }
            }
        }
    }
    Ok(ClusterPlan {
        name: t.name.clone(),
        main: t.main,
        lan_bytes_per_s: t.lan_bytes_per_s,
        wan_in_bytes_per_s: t.wan_in_bytes_per_s,
        wan_out_bytes_per_s: t.wan_out_bytes_per_s,
        wan_rtt_s: t.wan_rtt_s,
        tasks_per_inter_task: t.tasks_per_inter_task.unwrap_or(1),
        results_per_inter_result: t.results_per_inter_result.unwrap_or(1),
        use_workers: t.use_workers,
        machines: t
            .machines
            .into_iter()
            .map(|m| Machine {
                host: m.host,
                role: m.role,
                perf: m.perf,
            })
            .collect(),
        launch: t.launch,
    })
}

impl Plan {
    /// Checks that a measured system names only clusters and workers of this plan, with
    /// positive values ([`Plan::model_input`] checks it too).
    pub fn check_measured(&self, measured: &MeasuredSystem) -> Result<(), PlanError> {
        check_measured(self, measured)
    }
}

/// A measured system must only name clusters and workers of the plan, with positive values.
fn check_measured(plan: &Plan, measured: &MeasuredSystem) -> Result<(), PlanError> {
    let mut seen = HashSet::new();
    for m in &measured.clusters {
        let name = m.name.as_str();
        let Some(cluster) = plan.clusters.iter().find(|c| c.name == m.name) else {
            return Err(invalid(
                Some(name),
                "name",
                "the measured system names a cluster that is not in the plan",
            ));
        };
        if !seen.insert(name) {
            return Err(invalid(
                Some(name),
                "name",
                "the measured system lists this cluster twice",
            ));
        }
        for (key, value) in [
            ("lan_bytes_per_s", m.lan_bytes_per_s),
            ("wan_in_bytes_per_s", m.wan_in_bytes_per_s),
            ("wan_out_bytes_per_s", m.wan_out_bytes_per_s),
        ] {
            if let Some(v) = value {
                check_positive(Some(name), key, v, "bytes per second")?;
                if cluster.main && key != "lan_bytes_per_s" {
                    return Err(invalid(
                        Some(name),
                        key,
                        "the measured system gives a WAN throughput for the main cluster",
                    ));
                }
            }
        }
        if let Some(rtt) = m.wan_rtt_s {
            if !(rtt.is_finite() && rtt >= 0.0) || cluster.main {
                return Err(invalid(
                    Some(name),
                    "wan_rtt_s",
                    format!(
                        "the measured round-trip time must be 0 or more seconds, for an \
                         external cluster; got {rtt}"
                    ),
                ));
            }
        }
        for w in &m.workers {
            if !cluster.workers().any(|p| p.host == w.host) {
                return Err(invalid_machine(
                    name,
                    &w.host,
                    "host",
                    "the measured system names a worker that is not in the plan",
                ));
            }
            if !(w.perf.is_finite() && w.perf > 0.0) {
                return Err(invalid_machine(
                    name,
                    &w.host,
                    "perf",
                    format!("the measured performance must be positive, got {}", w.perf),
                ));
            }
            if let Some(own) = w
                .own_comm_bytes_per_s
                .filter(|own| !(own.is_finite() && *own > 0.0))
            {
                return Err(invalid_machine(
                    name,
                    &w.host,
                    "own_comm_bytes_per_s",
                    format!("the measured own communication rate must be positive, got {own}"),
                ));
            }
            if let Some(cores) = w.cores.filter(|c| !(c.is_finite() && *c > 0.0)) {
                return Err(invalid_machine(
                    name,
                    &w.host,
                    "cores",
                    format!("the cores a worker got must be positive, got {cores}"),
                ));
            }
        }
    }
    Ok(())
}

pub mod launch;
mod location;

#[cfg(test)]
mod tests;
