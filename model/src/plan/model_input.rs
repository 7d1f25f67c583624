//! A plan as the model's input, with the values of a measured system in place of the plan's,
//! checked against the model's working range.

use super::{
    error::{invalid, invalid_machine, PlanError},
    measured::check_measured,
    validated::{Plan, SelectionMode},
};
use crate::params::{
    ApplicationParams, ClusterParams, DispatchCosts, ExternalLink, MeasuredSystem, ModelInput,
    ModelOptions, SelectionRequest, SystemParams, WorkerParams,
};
use crate::range::check_working_range;

impl Plan {
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
                    wan_in_ramp_s: m.and_then(|m| m.wan_in_ramp_s).unwrap_or(0.0),
                    wan_out_ramp_s: m.and_then(|m| m.wan_out_ramp_s).unwrap_or(0.0),
                    parent: self.parent_index(plan),
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
            let dispatch = DispatchCosts {
                master_s: m
                    .and_then(|m| m.master_cpu_per_task_s)
                    .or(plan.master_cpu_per_task_s)
                    .unwrap_or(0.0),
                cm_s: m
                    .and_then(|m| m.cm_cpu_per_task_s)
                    .or(plan.cm_cpu_per_task_s)
                    .unwrap_or(0.0),
                cm_idle_per_link: plan.cm_idle_cpu_per_link.unwrap_or(0.0),
            };
            clusters.push(ClusterParams {
                name: plan.name.clone(),
                lan_bytes_per_s: lan,
                workers,
                external,
                dispatch,
                lan_scv: m.and_then(|m| m.lan_scv),
            });
        }
        let selection = match self.selection {
            SelectionMode::All => SelectionRequest::All,
            SelectionMode::Auto => SelectionRequest::Auto,
            SelectionMode::Pinned => SelectionRequest::Pinned(pinned),
        };
        let input = ModelInput {
            application: ApplicationParams {
                oper_cv: measured.oper_cv.unwrap_or(self.application.oper_cv),
                ..self.application.clone()
            },
            grains: self.grains.clone(),
            system: SystemParams { clusters },
            options: ModelOptions {
                efficiency_threshold: self.efficiency_threshold,
                reassign_last_task: self.reassign_last_task,
                exhaustive_limit: self.exhaustive_limit,
                selection_budget_s: self.selection_budget_s,
                worker_buffers: self.worker_buffers()?,
                terms: self.terms,
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
