//! The prediction as one JSON object (`hmw predict --json`): the clusters, the run and the
//! advice in the shape of issue 3, then the selection, the local cluster analysis, the remarks
//! and the measured system.

use serde::Serialize;
use serde_json::{json, Value};

use hmw_model::{main_path::MainPathLoad, plan::Plan};
use hmw_model::{
    AdviceEffect, AdviceValue, ClusterPrediction, LinkNeed, Prediction, Remark, SelectionMethod,
};

use super::source::MeasuredSource;

/// One `clusters` entry (and `local`), keys in the order of issue 3.
#[derive(Serialize)]
struct ClusterJson<'a> {
    name: &'a str,
    workers: &'a [String],
    cperf: f64,
    perf_ste: f64,
    /// The bottleneck formulas' rate and the closed network's (127)(128), when the network
    /// is computed (not in the thesis's form).
    #[serde(skip_serializing_if = "Option::is_none")]
    perf_ste_bottleneck: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    perf_ste_network: Option<f64>,
    bottleneck: &'static str,
    t_up: f64,
    t_end_best: f64,
    t_end_worst: f64,
    min_tasks: Option<u64>,
    tasks_best: u64,
    tasks_worst: u64,
    t_ex_best: f64,
    t_ex_worst: f64,
    efficiency_best: f64,
    efficiency_worst: f64,
}

impl<'a> From<&'a ClusterPrediction> for ClusterJson<'a> {
    fn from(c: &'a ClusterPrediction) -> Self {
        ClusterJson {
            name: &c.name,
            workers: &c.workers,
            cperf: c.cperf,
            perf_ste: c.perf_ste,
            perf_ste_bottleneck: c.network.map(|_| c.limits.steady_performance()),
            perf_ste_network: c.network,
            bottleneck: c.bottleneck.name(),
            t_up: c.t_up,
            t_end_best: c.t_end_best,
            t_end_worst: c.t_end_worst,
            min_tasks: c.min_tasks,
            tasks_best: c.tasks_best,
            tasks_worst: c.tasks_worst,
            t_ex_best: c.t_ex_best,
            t_ex_worst: c.t_ex_worst,
            efficiency_best: c.efficiency_best,
            efficiency_worst: c.efficiency_worst,
        }
    }
}

#[derive(Serialize)]
struct RunJson {
    t_ex_best: f64,
    t_ex_worst: f64,
    efficiency_best: f64,
    efficiency_worst: f64,
    speedup_worst: Option<f64>,
}

/// One `advice` entry; a `granularity` entry adds the startup and end times at that grain.
#[derive(Serialize)]
struct AdviceJson<'a> {
    cluster: &'a str,
    bottleneck: &'static str,
    kind: &'static str,
    value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    t_up: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    t_end_best: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    t_end_worst: Option<f64>,
}

/// One `remarks` entry: tuning information that is no advice of the four kinds.
#[derive(Serialize)]
struct RemarkJson<'a> {
    cluster: &'a str,
    bottleneck: &'static str,
    /// `out_of_reach` or `link_needs`.
    remark: &'static str,
    /// `out_of_reach`: the key that would have to exceed its largest value.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'static str>,
    /// `out_of_reach`: the value needed (`null` beyond any integer).
    #[serde(skip_serializing_if = "Option::is_none")]
    needed: Option<Option<u64>>,
    /// `out_of_reach`: the largest value a plan accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    largest: Option<u64>,
    /// `link_needs`: the cluster's available performance.
    #[serde(skip_serializing_if = "Option::is_none")]
    cperf: Option<f64>,
    /// `link_needs`: one entry per link below `cperf`.
    #[serde(skip_serializing_if = "Option::is_none")]
    links: Option<Vec<LinkNeedJson>>,
}

#[derive(Serialize)]
struct LinkNeedJson {
    link: &'static str,
    key: &'static str,
    limit: f64,
    throughput: f64,
    throughput_needed: f64,
    operations_per_byte: f64,
    operations_per_byte_needed: f64,
}

/// The measured-system file used: where, when and under what conditions it was measured.
#[derive(Serialize)]
struct MeasuredJson<'a> {
    file: String,
    measured_at: Option<&'a str>,
    conditions: Option<&'a str>,
}

#[derive(Serialize)]
struct SelectionJson<'a> {
    mode: &'static str,
    method: &'static str,
    evaluated: Option<u64>,
    limit: Option<u64>,
    /// Branch and bound only: whether the selection is proved optimal, and the remaining gap
    /// `(best - bound) / best` (0 when proved; `null` when stopped before any feasible one).
    #[serde(skip_serializing_if = "Option::is_none")]
    proved_optimal: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gap: Option<Option<f64>>,
    left_out: &'a [String],
}

/// The prediction as one JSON object: `clusters`, `run` and `advice` in the shape of issue 3,
/// then `selection` (how the workers were chosen) and `local` (the local cluster analysis);
/// `remarks` only when there are any, `main_path` (177)(178) only when its costs are known,
/// `measured` only with `--measured`.
#[derive(Serialize)]
pub(super) struct PredictionJson<'a> {
    clusters: Vec<ClusterJson<'a>>,
    run: RunJson,
    advice: Vec<AdviceJson<'a>>,
    selection: SelectionJson<'a>,
    local: Option<ClusterJson<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    remarks: Vec<RemarkJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    main_path: Option<MainPathLoad>,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured: Option<MeasuredJson<'a>>,
}

fn link_need_json(need: &LinkNeed) -> LinkNeedJson {
    LinkNeedJson {
        link: need.link.name(),
        key: need.link.throughput_key().unwrap_or("perf"),
        limit: need.limit,
        throughput: need.throughput,
        throughput_needed: need.throughput_needed,
        operations_per_byte: need.operations_per_byte,
        operations_per_byte_needed: need.operations_per_byte_needed,
    }
}

fn remark_json(remark: &Remark) -> RemarkJson<'_> {
    match remark {
        Remark::OutOfReach {
            cluster,
            bottleneck,
            kind,
            needed,
            largest,
        } => RemarkJson {
            cluster,
            bottleneck: bottleneck.name(),
            remark: "out_of_reach",
            key: Some(kind.name()),
            needed: Some(*needed),
            largest: Some(*largest),
            cperf: None,
            links: None,
        },
        Remark::LinkNeeds {
            cluster,
            bottleneck,
            cperf,
            needs,
        } => RemarkJson {
            cluster,
            bottleneck: bottleneck.name(),
            remark: "link_needs",
            key: None,
            needed: None,
            largest: None,
            cperf: Some(*cperf),
            links: Some(needs.iter().map(link_need_json).collect()),
        },
    }
}

pub(super) fn to_json<'a>(
    plan: &Plan,
    p: &'a Prediction,
    measured: Option<MeasuredSource<'a>>,
) -> PredictionJson<'a> {
    let advice = p
        .advice
        .iter()
        .map(|a| {
            let grain = match &a.effect {
                AdviceEffect::Grain { row, .. } => Some(row),
                _ => None,
            };
            AdviceJson {
                cluster: &a.cluster,
                bottleneck: a.bottleneck.name(),
                kind: a.kind.name(),
                value: match a.value {
                    AdviceValue::Count(n) => json!(n),
                    AdviceValue::Seconds(s) => json!(s),
                },
                t_up: grain.map(|r| r.t_up),
                t_end_best: grain.map(|r| r.t_end_best),
                t_end_worst: grain.map(|r| r.t_end_worst),
            }
        })
        .collect();
    let (method, evaluated, limit) = match &p.selection.method {
        SelectionMethod::All => ("all", None, None),
        SelectionMethod::Pinned => ("pinned", None, None),
        SelectionMethod::Exhaustive { evaluated, limit } => {
            ("exhaustive", Some(*evaluated), Some(*limit))
        }
        SelectionMethod::BranchAndBound {
            evaluated, limit, ..
        } => ("branch_and_bound", Some(*evaluated), Some(*limit)),
    };
    let (proved_optimal, gap) = match &p.selection.method {
        SelectionMethod::BranchAndBound {
            proved_optimal,
            gap,
            ..
        } => (Some(*proved_optimal), Some(*gap)),
        _ => (None, None),
    };
    PredictionJson {
        clusters: p.clusters.iter().map(ClusterJson::from).collect(),
        run: RunJson {
            t_ex_best: p.run.t_ex_best,
            t_ex_worst: p.run.t_ex_worst,
            efficiency_best: p.run.efficiency_best,
            efficiency_worst: p.run.efficiency_worst,
            speedup_worst: p.run.speedup_worst,
        },
        advice,
        selection: SelectionJson {
            mode: plan.selection.name(),
            method,
            evaluated,
            limit,
            proved_optimal,
            gap,
            left_out: &p.left_out,
        },
        local: p.local.as_ref().map(ClusterJson::from),
        remarks: p.remarks.iter().map(remark_json).collect(),
        main_path: p.main_path,
        measured: measured.map(|m| MeasuredJson {
            file: m.path.display().to_string(),
            measured_at: m.system.measured_at.as_deref(),
            conditions: m.system.conditions.as_deref(),
        }),
    }
}
