//! `hmw predict`'s row/column section: for each external cluster that a matrix-product plan
//! gives the row/column strategy, the model of `docs/model.md` section 7 — the row/column from
//! which the cluster's steady performance (78) stops climbing (101: computation bound there,
//! (80), unless its LAN or WAN out bounds it first), the startup until then (95), and its
//! steady performance per row/column (78).
//!
//! The strategy and the product's shape are the application's settings, read where the run
//! reads them: `[launch.application]` `row_column` (the clusters), `m` and `b` (elements are
//! f64, 8 bytes). A plan without `row_column` has no such section.

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use hmw_model::params::ModelInput;
use hmw_model::plan::Plan;
use hmw_model::row_column::{Bound, Plateau, RowColumnShape};
use hmw_model::Prediction;

/// Bytes per element of the matrix product (f64).
const ELEMENT_BYTES: f64 = 8.0;

/// The row/column model of one cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowColumnPrediction {
    /// The cluster.
    pub cluster: String,
    /// `M`, `B`.
    pub order: u64,
    /// `B`.
    pub block: u64,
    /// `CPerf_avail`, operations per second: the cluster's available performance.
    pub available_ops_per_s: f64,
    /// `TPut_in`, bytes per second.
    pub wan_in_bytes_per_s: f64,
    /// The performance (78) climbs to (101), operations per second; absent when the plan's
    /// terms leave (101) out (`[model] row_column_plateau`): (80) takes `CPerf_avail`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plateau_ops_per_s: Option<f64>,
    /// What bounds it: `computation` (then (101) is (80)), `LAN` or `WAN-out`; absent with
    /// the plateau.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_by: Option<String>,
    /// The real bound of (101), `1 + plateau * alpha / ((2B-1) * TPut_in)` ((80)'s without
    /// the plateau).
    pub bound: f64,
    /// `M / B` (rounded up): the matrix's row/column pairs, the most a cluster receives;
    /// absent with the plateau.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pairs: Option<u64>,
    /// (101): the first row/column from which (78) stops climbing; `None` when no pair of the
    /// matrix gets there (no WAN throughput, or the bound beyond its `pairs`: the rate climbs
    /// to the last pair).
    pub stabilising_row_column: Option<u64>,
    /// (95): seconds until that row/column has crossed the WAN.
    pub startup_s: Option<f64>,
    /// (78) for the first row/columns, operations per second, up to the stabilising one.
    pub steady_ops_per_s: Vec<f64>,
}

/// A whole number of `[launch.application]`, or `None` when absent.
fn whole(application: &toml::Table, key: &str) -> Result<Option<u64>> {
    match application.get(key) {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if *n > 0 => Ok(Some(*n as u64)),
        Some(other) => bail!("[launch.application] {key} = {other} is not a positive integer"),
    }
}

/// The row/column model of every cluster the plan gives the strategy; empty when none.
pub fn predict(
    plan: &Plan,
    input: &ModelInput,
    prediction: &Prediction,
) -> Result<Vec<RowColumnPrediction>> {
    let launch = plan.launch_table().context("[launch]")?;
    let application = &launch.application;
    let Some(names) = application.get("row_column") else {
        return Ok(Vec::new());
    };
    let names: Vec<String> = names
        .clone()
        .try_into()
        .context("[launch.application] row_column must be a list of cluster names")?;
    let (Some(order), Some(block)) = (whole(application, "m")?, whole(application, "b")?) else {
        bail!("[launch.application] row_column needs the product's m and b");
    };
    let shape = RowColumnShape {
        order: order as f64,
        block: block as f64,
        element_bytes: ELEMENT_BYTES,
    };
    names
        .iter()
        .map(|name| {
            let params = input
                .system
                .clusters
                .iter()
                .find(|c| &c.name == name)
                .with_context(|| format!("[launch.application] row_column: no cluster {name}"))?;
            let link = params.external.as_ref().with_context(|| {
                format!("[launch.application] row_column: {name} is the main cluster")
            })?;
            let available = prediction
                .clusters
                .iter()
                .find(|c| &c.name == name)
                .map(|c| c.cperf)
                .with_context(|| format!("no prediction for cluster {name}"))?;
            let wan_in = link.wan_in_bytes_per_s;
            // (101), or (80)'s available performance when the term is off.
            let plateau = if plan.terms.row_column_plateau {
                shape.plateau(available, params.lan_bytes_per_s, link.wan_out_bytes_per_s)
            } else {
                Plateau {
                    performance: available,
                    bound: Bound::Computation,
                }
            };
            let shown = plan.terms.row_column_plateau;
            let pairs = order.div_ceil(block);
            let stabilising = shape
                .stabilising_row_column(plateau.performance, wan_in)
                .filter(|&rc| rc <= pairs);
            let steady = (1..=stabilising.unwrap_or(pairs).min(64))
                .map(|rc| {
                    shape.steady_performance(
                        rc,
                        available,
                        params.lan_bytes_per_s,
                        wan_in,
                        link.wan_out_bytes_per_s,
                    )
                })
                .collect();
            Ok(RowColumnPrediction {
                cluster: name.clone(),
                order,
                block,
                available_ops_per_s: available,
                wan_in_bytes_per_s: wan_in,
                plateau_ops_per_s: shown.then_some(plateau.performance),
                bound_by: shown.then(|| plateau.bound.to_string()),
                bound: 1.0 + plateau.performance / shape.wan_in_limit(2, wan_in),
                pairs: shown.then_some(pairs),
                stabilising_row_column: stabilising,
                startup_s: stabilising.map(|rc| shape.startup_time(rc, wan_in)),
                steady_ops_per_s: steady,
            })
        })
        .collect()
}

/// The section as text (nothing when the plan has no row/column cluster).
pub fn to_text(predictions: &[RowColumnPrediction]) -> String {
    let mut out = String::new();
    if predictions.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nrow/column strategy (model section 7, equations (78), (80), (95), (101)):"
    );
    for p in predictions {
        let from = match p.stabilising_row_column {
            Some(rc) => format!(" from row/column {rc}"),
            None if p.bound.is_finite() => format!(
                ", never reached: the matrix has {} row/columns and the rate climbs to the last",
                p.pairs.map_or("fewer".to_string(), |n| n.to_string())
            ),
            None => ", never reached: no WAN throughput".to_string(),
        };
        let _ = writeln!(
            out,
            "  {}: M = {}, B = {}; CPerf_avail {:.4e} op/s, WAN in {:.4e} B/s: RC >= {:.2}, \
             {} bound at {:.4e} op/s{from}, startup {}",
            p.cluster,
            p.order,
            p.block,
            p.available_ops_per_s,
            p.wan_in_bytes_per_s,
            p.bound,
            p.bound_by.as_deref().unwrap_or("computation"),
            p.plateau_ops_per_s.unwrap_or(p.available_ops_per_s),
            p.startup_s.map_or("-".into(), |s| format!("{s:.3} s")),
        );
        let steady: Vec<String> = p
            .steady_ops_per_s
            .iter()
            .enumerate()
            .map(|(i, perf)| format!("{}:{:.3e}", i + 1, perf))
            .collect();
        let _ = writeln!(
            out,
            "    steady performance per row/column (78), op/s: {}",
            steady.join(" ")
        );
        let rc = p
            .stabilising_row_column
            .map_or("none".to_string(), |rc| rc.to_string());
        let _ = writeln!(out, "    rc_stabilise_pred cluster={} rc={rc}", p.cluster);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw_model::plan::Plan;

    fn parse_plan(text: &str) -> Result<Plan, hmw_model::plan::PlanError> {
        Plan::from_toml_str(text)
    }

    const PLAN: &str = r#"
[application]
name = "rc"
tasks = 10
oper = 1
task_bytes = 1
result_bytes = 1

[launch]
binary = "hmw-matmul"
[launch.application]
m = 10000
b = 400
row_column = ["spain"]

[[cluster]]
name = "lyon"
main = true
lan_bytes_per_s = 1e9
machines = [{ host = "l0", role = "master" }, { host = "l1", role = "worker", perf = 1e6 }]

[[cluster]]
name = "spain"
lan_bytes_per_s = 1e12
wan_in_bytes_per_s = 110485.6
wan_out_bytes_per_s = 1e12
machines = [{ host = "s0", role = "submaster" },
            { host = "s1", role = "worker", perf = 28.4695e6 },
            { host = "s2", role = "worker", perf = 28.4695e6 }]
"#;

    #[test]
    fn the_thesis_example_through_a_plan() {
        let plan = parse_plan(PLAN).unwrap();
        let input = plan.model_input(None).unwrap();
        let prediction = hmw_model::predict(&input).unwrap();
        let rows = predict(&plan, &input, &prediction).unwrap();
        assert_eq!(rows.len(), 1);
        // (2B-1) * TPut_in / alpha = 11.035e6 op/s; CPerf_avail = 56.939e6: RC >= 6.16.
        assert!((rows[0].bound - 6.16).abs() < 0.01, "{rows:?}");
        assert_eq!(rows[0].stabilising_row_column, Some(7));
        assert_eq!(rows[0].steady_ops_per_s.len(), 7);
        assert!(to_text(&rows).contains("rc_stabilise_pred cluster=spain rc=7"));
        assert_eq!(rows[0].bound_by, Some(Bound::Computation.to_string()));
        // A LAN that carries 21.5e6 op/s of block products (3 blocks each) bounds the climb
        // at the 3rd row/column (101): 1 + 21.5e6 / 11.035e6 = 2.95.
        let lan = 21.5e6 * 3.0 * 8.0 / 799.0;
        let text = PLAN.replace(
            "lan_bytes_per_s = 1e12",
            &format!("lan_bytes_per_s = {lan}"),
        );
        let plan = parse_plan(&text).unwrap();
        let input = plan.model_input(None).unwrap();
        let prediction = hmw_model::predict(&input).unwrap();
        let rows = predict(&plan, &input, &prediction).unwrap();
        assert_eq!(rows[0].stabilising_row_column, Some(3), "{rows:?}");
        assert_eq!(rows[0].bound_by.as_deref(), Some("LAN"));
        assert!(to_text(&rows).contains("LAN bound at 2.1500e7 op/s from row/column 3"));
    }

    #[test]
    fn a_bound_beyond_the_matrix_is_never_reached() {
        // M / B = 5 pairs, where the thesis example stabilises at the 7th.
        let plan = parse_plan(&PLAN.replace("m = 10000", "m = 2000")).unwrap();
        let input = plan.model_input(None).unwrap();
        let prediction = hmw_model::predict(&input).unwrap();
        let rows = predict(&plan, &input, &prediction).unwrap();
        assert_eq!(
            (rows[0].pairs, rows[0].stabilising_row_column),
            (Some(5), None)
        );
        assert_eq!(
            (rows[0].startup_s, rows[0].steady_ops_per_s.len()),
            (None, 5)
        );
        let text = to_text(&rows);
        assert!(
            text.contains("never reached: the matrix has 5 row/columns"),
            "{text}"
        );
        assert!(
            text.contains("rc_stabilise_pred cluster=spain rc=none"),
            "{text}"
        );
    }

    #[test]
    fn a_plan_without_row_column_has_no_section() {
        let text = PLAN.replace("row_column = [\"spain\"]", "");
        let plan = parse_plan(&text).unwrap();
        let input = plan.model_input(None).unwrap();
        let prediction = hmw_model::predict(&input).unwrap();
        assert!(predict(&plan, &input, &prediction).unwrap().is_empty());
        let bad = PLAN.replace("[\"spain\"]", "[\"peru\"]");
        let plan = parse_plan(&bad).unwrap();
        let error = predict(&plan, &input, &prediction).unwrap_err();
        assert!(error.to_string().contains("no cluster peru"), "{error}");
    }
}
