//! The plan file as written (serde), before validation, with its defaults.

use serde::Deserialize;

use super::pipeline::PipelineTable;
use super::validated::{Role, SelectionMode};
use crate::params::{
    Contention, ModelForm, ModelTerms, DEFAULT_EXHAUSTIVE_LIMIT, DEFAULT_SELECTION_BUDGET_S,
};

/// Default `[model] efficiency_threshold`.
pub const DEFAULT_EFFICIENCY_THRESHOLD: f64 = 0.8;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlanFile {
    pub(super) application: ApplicationTable,
    #[serde(default)]
    pub(super) model: ModelTable,
    #[serde(default)]
    pub(super) cluster: Vec<ClusterTable>,
    #[serde(default)]
    pub(super) launch: Option<toml::Table>,
    #[serde(default)]
    pub(super) run: Option<toml::Table>,
    #[serde(default)]
    pub(super) testbed: Option<toml::Table>,
    #[serde(default)]
    pub(super) pipeline: Option<PipelineTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApplicationTable {
    pub(super) name: String,
    /// Required, unless `[pipeline]` gives the items.
    pub(super) tasks: Option<u64>,
    pub(super) oper: Option<f64>,
    /// Required, unless `[pipeline]` gives the items' sizes.
    pub(super) task_bytes: Option<f64>,
    /// Required, unless `[pipeline]` gives the items' sizes.
    pub(super) result_bytes: Option<f64>,
    pub(super) task_bytes_inter: Option<f64>,
    pub(super) result_bytes_inter: Option<f64>,
    #[serde(default)]
    pub(super) oper_cv: f64,
    pub(super) iterations: Option<u64>,
    #[serde(default)]
    pub(super) grain: Vec<GrainTable>,
}

fn one() -> f64 {
    1.0
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GrainTable {
    pub(super) grain: u64,
    pub(super) tasks: u64,
    #[serde(default = "one")]
    pub(super) oper: f64,
    pub(super) task_bytes: f64,
    pub(super) result_bytes: f64,
    pub(super) task_bytes_inter: Option<f64>,
    pub(super) result_bytes_inter: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelTable {
    #[serde(default = "default_threshold")]
    pub(super) efficiency_threshold: f64,
    #[serde(default = "default_true")]
    pub(super) reassign_last_task: bool,
    #[serde(default = "default_selection")]
    pub(super) selection: SelectionMode,
    #[serde(default = "default_exhaustive_limit")]
    pub(super) exhaustive_limit: u64,
    #[serde(default = "default_selection_budget_s")]
    pub(super) selection_budget_s: f64,
    /// `extended` (the default) or `thesis`: the terms below default to the form's.
    #[serde(default = "default_form")]
    pub(super) form: ModelForm,
    pub(super) wan_latency: Option<bool>,
    pub(super) buffered_workers: Option<bool>,
    pub(super) submaster_tail: Option<bool>,
    pub(super) own_communication: Option<bool>,
    pub(super) capacity: Option<bool>,
    pub(super) link_ramp: Option<bool>,
    pub(super) shared_links: Option<bool>,
    pub(super) main_path: Option<bool>,
    pub(super) row_column_plateau: Option<bool>,
    pub(super) master_cpu: Option<bool>,
    /// `bottleneck` (the default) or `mva`.
    pub(super) contention: Option<Contention>,
}

impl ModelTable {
    /// The terms counted: the form's, each changed by its key where the plan gives it.
    pub(super) fn terms(&self) -> ModelTerms {
        let form = ModelTerms::of(self.form);
        ModelTerms {
            wan_latency: self.wan_latency.unwrap_or(form.wan_latency),
            buffered_workers: self.buffered_workers.unwrap_or(form.buffered_workers),
            submaster_tail: self.submaster_tail.unwrap_or(form.submaster_tail),
            own_communication: self.own_communication.unwrap_or(form.own_communication),
            capacity: self.capacity.unwrap_or(form.capacity),
            link_ramp: self.link_ramp.unwrap_or(form.link_ramp),
            shared_links: self.shared_links.unwrap_or(form.shared_links),
            main_path: self.main_path.unwrap_or(form.main_path),
            row_column_plateau: self.row_column_plateau.unwrap_or(form.row_column_plateau),
            master_cpu: self.master_cpu.unwrap_or(form.master_cpu),
            network: form.network || self.contention == Some(Contention::Mva),
            contention: self.contention.unwrap_or(form.contention),
        }
    }
}

impl Default for ModelTable {
    fn default() -> Self {
        ModelTable {
            efficiency_threshold: default_threshold(),
            reassign_last_task: true,
            selection: default_selection(),
            exhaustive_limit: default_exhaustive_limit(),
            selection_budget_s: default_selection_budget_s(),
            form: default_form(),
            wan_latency: None,
            buffered_workers: None,
            submaster_tail: None,
            own_communication: None,
            capacity: None,
            link_ramp: None,
            shared_links: None,
            main_path: None,
            row_column_plateau: None,
            master_cpu: None,
            contention: None,
        }
    }
}

fn default_threshold() -> f64 {
    DEFAULT_EFFICIENCY_THRESHOLD
}
fn default_true() -> bool {
    true
}
fn default_form() -> ModelForm {
    ModelForm::Extended
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
pub(super) struct ClusterTable {
    pub(super) name: String,
    #[serde(default)]
    pub(super) main: bool,
    pub(super) lan_bytes_per_s: Option<f64>,
    pub(super) wan_in_bytes_per_s: Option<f64>,
    pub(super) wan_out_bytes_per_s: Option<f64>,
    pub(super) wan_rtt_s: Option<f64>,
    pub(super) master_cpu_per_task_s: Option<f64>,
    pub(super) cm_cpu_per_task_s: Option<f64>,
    pub(super) cm_idle_cpu_per_link: Option<f64>,
    pub(super) tasks_per_inter_task: Option<u64>,
    pub(super) results_per_inter_result: Option<u64>,
    pub(super) use_workers: Option<Vec<String>>,
    pub(super) machines: Vec<MachineTable>,
    pub(super) launch: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MachineTable {
    pub(super) host: String,
    pub(super) role: Role,
    pub(super) perf: Option<f64>,
}
