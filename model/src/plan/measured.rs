//! A measured system checked against the plan: only its clusters and workers, with positive
//! values.

use std::collections::HashSet;

use super::{
    error::{check_positive, invalid, invalid_machine, PlanError},
    validated::Plan,
};
use crate::params::MeasuredSystem;

impl Plan {
    /// Checks that a measured system names only clusters and workers of this plan, with
    /// positive values ([`Plan::model_input`] checks it too).
    pub fn check_measured(&self, measured: &MeasuredSystem) -> Result<(), PlanError> {
        check_measured(self, measured)
    }
}

/// A measured system must only name clusters and workers of the plan, with positive values.
pub(super) fn check_measured(plan: &Plan, measured: &MeasuredSystem) -> Result<(), PlanError> {
    if let Some(cv) = measured
        .oper_cv
        .filter(|cv| !(cv.is_finite() && *cv >= 0.0))
    {
        return Err(invalid(
            None,
            "oper_cv",
            format!("the measured coefficient of variation must be 0 or more, got {cv}"),
        ));
    }
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
        if let Some(scv) = m.lan_scv {
            if !(scv.is_finite() && scv >= 0.0) {
                return Err(invalid(
                    Some(name),
                    "lan_scv",
                    format!(
                        "the LAN's squared coefficient of variation must be 0 or more; got {scv}"
                    ),
                ));
            }
        }
        for (key, value) in [
            ("master_cpu_per_task_s", m.master_cpu_per_task_s),
            ("cm_cpu_per_task_s", m.cm_cpu_per_task_s),
        ] {
            if let Some(v) = value {
                if !(v.is_finite() && v >= 0.0) || (cluster.main && key == "cm_cpu_per_task_s") {
                    return Err(invalid(
                        Some(name),
                        key,
                        format!(
                            "the measured CPU per task must be 0 or more seconds (a CM's for an \
                             external cluster); got {v}"
                        ),
                    ));
                }
            }
        }
        for (key, lag) in [
            ("wan_in_ramp_s", m.wan_in_ramp_s),
            ("wan_out_ramp_s", m.wan_out_ramp_s),
        ] {
            if let Some(lag) = lag {
                if !(lag.is_finite() && lag >= 0.0) || cluster.main {
                    return Err(invalid(
                        Some(name),
                        key,
                        format!(
                            "the measured time a link loses to its ramp must be 0 or more \
                             seconds, for an external cluster; got {lag}"
                        ),
                    ));
                }
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
