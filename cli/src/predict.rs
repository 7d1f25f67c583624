//! `hmw predict PLAN.toml [--json] [--measured FILE]`: evaluate the analytical model on a plan
//! before touching a machine — local cluster analysis, per-cluster and whole-run predictions,
//! and tuning advice (format: `docs/model.md`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::{json, Value};

use hmw_model::plan::{load_plan, model_input_with_measured, Plan};
use hmw_model::{
    predict, AdviceEffect, AdviceKind, AdviceValue, Bottleneck, ClusterPrediction, GrainReason,
    LinkNeed, MeasuredSystem, Prediction, Remark, SelectionMethod,
};

/// Arguments of `hmw predict`.
#[derive(clap::Args)]
pub struct PredictArgs {
    /// The run plan (TOML).
    pub plan: PathBuf,
    /// Print the prediction as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// System parameters measured by `hmw calibrate`: the TOML file it writes (with its date
    /// and conditions; a name ending in .json is read as JSON with the same keys), used in
    /// place of the plan's `perf` and throughput values.
    #[arg(long, value_name = "FILE")]
    pub measured: Option<PathBuf>,
}

/// The measured-system file a prediction used, for the header.
#[derive(Clone, Copy)]
pub struct MeasuredSource<'a> {
    /// Where it was read.
    pub path: &'a Path,
    /// What it holds.
    pub system: &'a MeasuredSystem,
}

/// Runs `hmw predict`.
pub fn run(args: PredictArgs) -> Result<()> {
    let plan = load_plan(&args.plan)?;
    let (input, measured) = model_input_with_measured(&plan, &args.plan, args.measured.as_deref())?;
    let prediction = predict(&input).map_err(|e| anyhow!("{}: {e}", args.plan.display()))?;
    let source = args
        .measured
        .as_deref()
        .zip(measured.as_ref())
        .map(|(path, system)| MeasuredSource { path, system });
    let row_column = crate::row_column::predict(&plan, &input, &prediction)
        .with_context(|| format!("{}", args.plan.display()))?;
    if args.json {
        let mut json = serde_json::to_value(to_json(&plan, &prediction, source))?;
        if !row_column.is_empty() {
            json["row_column"] = serde_json::to_value(&row_column)?;
        }
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", to_text(&plan, &prediction, source));
        print!("{}", crate::row_column::to_text(&row_column));
    }
    Ok(())
}

// ---- JSON ----

/// One `clusters` entry (and `local`), keys in the order of issue 3.
#[derive(Serialize)]
struct ClusterJson<'a> {
    name: &'a str,
    workers: &'a [String],
    cperf: f64,
    perf_ste: f64,
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
/// `remarks` only when there are any, `measured` only with `--measured`.
#[derive(Serialize)]
struct PredictionJson<'a> {
    clusters: Vec<ClusterJson<'a>>,
    run: RunJson,
    advice: Vec<AdviceJson<'a>>,
    selection: SelectionJson<'a>,
    local: Option<ClusterJson<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    remarks: Vec<RemarkJson<'a>>,
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

fn to_json<'a>(
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
        measured: measured.map(|m| MeasuredJson {
            file: m.path.display().to_string(),
            measured_at: m.system.measured_at.as_deref(),
            conditions: m.system.conditions.as_deref(),
        }),
    }
}

// ---- text ----

/// A number for a table: 4 significant digits, scientific when very large or small.
fn num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 {
        "0".into()
    } else if !(1e-2..1e6).contains(&a) {
        format!("{x:.3e}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}

/// A performance (basic operations per second): 4 significant digits, scientific.
fn perf(x: f64) -> String {
    format!("{x:.3e}")
}

/// A count or size: whole numbers with thousands separators, others as [`num`].
fn amount(x: f64) -> String {
    if x.fract() != 0.0 || x.abs() >= 1e15 {
        return num(x);
    }
    let digits = format!("{}", x.abs() as u64);
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(d);
    }
    if x < 0.0 {
        grouped.insert(0, '-');
    }
    grouped
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Seconds: four decimals below 100 s, one up to 1e12 s, scientific beyond.
fn seconds(x: f64) -> String {
    if x.is_nan() || x >= 1e12 {
        format!("{x:.4e}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}

/// `h:mm:ss`, hours unbounded; beyond a billion hours, hours in scientific notation.
fn hms(x: f64) -> String {
    if x.is_nan() || x >= 3.6e12 {
        return format!("{:.3e} h", x / 3600.0);
    }
    let total = x.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
}

/// The name of a link in sentences.
fn link_name(link: Bottleneck) -> &'static str {
    match link {
        Bottleneck::Compute => "computation",
        Bottleneck::Lan => "LAN",
        Bottleneck::WanIn => "WAN in",
        Bottleneck::WanOut => "WAN out",
    }
}

/// What each limiting link needs, as one clause per link.
fn needs_text(needs: &[LinkNeed]) -> String {
    needs
        .iter()
        .map(|n| {
            format!(
                "{link} limit {} ops/s: a {link} of at least {} B/s ({key}, now {}), or a grain \
                 whose tasks carry at least {} basic operations per byte on it (now {})",
                perf(n.limit),
                perf(n.throughput_needed),
                perf(n.throughput),
                perf(n.operations_per_byte_needed),
                perf(n.operations_per_byte),
                link = link_name(n.link),
                key = n.link.throughput_key().unwrap_or("perf"),
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn fraction(x: f64) -> String {
    format!("{x:.3}")
}

fn min_tasks(m: Option<u64>) -> String {
    m.map_or_else(|| "unreachable".into(), |t| t.to_string())
}

/// One row of the clusters table: its label and how to print a cluster's cell.
type TableRow = (&'static str, fn(&ClusterPrediction) -> String);

/// The prediction as text, in the order of the methodology; the measured-system file it used,
/// if any, with its date and conditions in the header.
pub fn to_text(plan: &Plan, p: &Prediction, measured: Option<MeasuredSource>) -> String {
    let mut out = String::new();
    let app = &plan.application;
    let threshold = plan.efficiency_threshold;
    let w = &mut out;
    let _ = writeln!(
        w,
        "{}: {} tasks of {} basic operations; task {} B, result {} B",
        plan.name,
        amount(app.tasks as f64),
        amount(app.oper),
        amount(app.task_bytes),
        amount(app.result_bytes)
    );
    if let Some(m) = measured {
        let _ = writeln!(
            w,
            "measured system: {}, measured {}; conditions: {}",
            m.path.display(),
            m.system.measured_at.as_deref().unwrap_or("(no date given)"),
            m.system
                .conditions
                .as_deref()
                .unwrap_or("(none given)")
                .replace('\n', " ")
        );
    }
    let selection = match &p.selection.method {
        SelectionMethod::All => "all workers".to_string(),
        SelectionMethod::Pinned => "pinned (use_workers; all workers where absent)".to_string(),
        SelectionMethod::Exhaustive { evaluated, limit } => {
            format!("auto, exhaustive search over {evaluated} combinations (limit {limit})")
        }
        SelectionMethod::BranchAndBound {
            combinations,
            limit,
            evaluated,
            nodes,
            proved_optimal,
            gap,
            budget_s,
        } => {
            let combinations =
                combinations.map_or_else(|| "more than 2^64".to_string(), |c| c.to_string());
            let result = if *proved_optimal {
                "proved optimal".to_string()
            } else {
                match gap {
                    Some(g) => format!(
                        "stopped by its {budget_s} s budget, gap {:.4}% to its lower bound",
                        100.0 * g
                    ),
                    None => format!(
                        "stopped by its {budget_s} s budget before any selection reached the \
                         threshold"
                    ),
                }
            };
            format!(
                "auto, branch and bound ({nodes} nodes, {evaluated} selections evaluated), \
                 {result}: the {combinations} combinations exceed the exhaustive limit {limit}"
            )
        }
    };
    let _ = writeln!(
        w,
        "efficiency threshold {threshold} (checked on the worst case); last task {}; selection: {selection}",
        if plan.reassign_last_task {
            "reassigned"
        } else {
            "not reassigned"
        }
    );
    for name in &p.left_out {
        let _ = writeln!(w, "left out: cluster {name} (no worker selected)");
    }

    let _ = writeln!(w, "\n== Local cluster analysis ==");
    match &p.local {
        None => {
            let _ = writeln!(
                w,
                "{} has no workers: all the work runs in external clusters.",
                plan.clusters[0].name
            );
        }
        Some(l) => {
            let _ = writeln!(
                w,
                "{} alone, {}, the whole problem:",
                l.name,
                plural(l.workers.len(), "worker")
            );
            let bound = if l.bottleneck.name() == "compute" {
                "computation bound".to_string()
            } else {
                format!(
                    "communication bound ({}): external clusters cannot help until it is lifted \
                     ({})",
                    l.bottleneck,
                    needs_text(&l.needs)
                )
            };
            let _ = writeln!(
                w,
                "  available performance {} ops/s, steady performance {} ops/s: {bound}",
                perf(l.cperf),
                perf(l.perf_ste)
            );
            let _ = writeln!(
                w,
                "  startup {} s, end best {} s, worst {} s",
                seconds(l.t_up),
                seconds(l.t_end_best),
                seconds(l.t_end_worst)
            );
            let reach = match l.min_tasks {
                None => "no workload reaches it with these workers".to_string(),
                Some(m) if m > app.tasks => format!(
                    "the problem's {} tasks are fewer: only releasing machines can reach it",
                    app.tasks
                ),
                Some(_) => format!("the problem's {} tasks reach it", app.tasks),
            };
            let _ = writeln!(
                w,
                "  minimum tasks for efficiency {threshold}: {} ({reach})",
                min_tasks(l.min_tasks)
            );
            let _ = writeln!(
                w,
                "  execution time best {} s ({}), worst {} s ({}); efficiency best {}, worst {}",
                seconds(l.t_ex_best),
                hms(l.t_ex_best),
                seconds(l.t_ex_worst),
                hms(l.t_ex_worst),
                fraction(l.efficiency_best),
                fraction(l.efficiency_worst)
            );
        }
    }

    let _ = writeln!(w, "\n== Clusters ==");
    let rows: Vec<TableRow> = vec![
        ("workers used", |c| c.workers.len().to_string()),
        ("available performance (ops/s)", |c| perf(c.cperf)),
        ("steady performance (ops/s)", |c| perf(c.perf_ste)),
        ("bottleneck", |c| c.bottleneck.name().to_string()),
        ("steady efficiency bound", |c| {
            fraction(c.perf_ste / c.cperf)
        }),
        ("startup (s)", |c| seconds(c.t_up)),
        ("end time best (s)", |c| seconds(c.t_end_best)),
        ("end time worst (s)", |c| seconds(c.t_end_worst)),
        ("minimum tasks for the threshold", |c| {
            min_tasks(c.min_tasks)
        }),
        ("tasks best", |c| c.tasks_best.to_string()),
        ("tasks worst", |c| c.tasks_worst.to_string()),
        ("execution time best (s)", |c| seconds(c.t_ex_best)),
        ("execution time best (h:m:s)", |c| hms(c.t_ex_best)),
        ("execution time worst (s)", |c| seconds(c.t_ex_worst)),
        ("execution time worst (h:m:s)", |c| hms(c.t_ex_worst)),
        ("efficiency best", |c| fraction(c.efficiency_best)),
        ("efficiency worst", |c| fraction(c.efficiency_worst)),
    ];
    let label_width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, f)| p.clusters.iter().map(f).collect())
        .collect();
    let widths: Vec<usize> = (0..p.clusters.len())
        .map(|k| {
            cells
                .iter()
                .map(|r| r[k].len())
                .chain([p.clusters[k].name.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let _ = write!(w, "{:label_width$}", "");
    for (c, width) in p.clusters.iter().zip(&widths) {
        let _ = write!(w, "  {:>width$}", c.name);
    }
    let _ = writeln!(w);
    for ((label, _), row) in rows.iter().zip(&cells) {
        let _ = write!(w, "{label:label_width$}");
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(w, "  {cell:>width$}");
        }
        let _ = writeln!(w);
    }
    for c in &p.clusters {
        let _ = writeln!(w, "{} workers: {}", c.name, c.workers.join(" "));
    }

    let _ = writeln!(w, "\n== Whole run ==");
    let machines: usize = p.clusters.iter().map(|c| c.workers.len()).sum();
    let _ = writeln!(
        w,
        "{}, {}; best possible time (every worker busy all along) {} s",
        plural(p.clusters.len(), "cluster"),
        plural(machines, "worker"),
        seconds(p.run.t_best)
    );
    let _ = writeln!(
        w,
        "execution time best {} s ({}), worst {} s ({})",
        seconds(p.run.t_ex_best),
        hms(p.run.t_ex_best),
        seconds(p.run.t_ex_worst),
        hms(p.run.t_ex_worst)
    );
    let _ = writeln!(
        w,
        "efficiency best {}, worst {}",
        fraction(p.run.efficiency_best),
        fraction(p.run.efficiency_worst)
    );
    match (p.run.speedup_best, p.run.speedup_worst, &p.local) {
        (Some(best), Some(worst), Some(l)) => {
            let _ = writeln!(
                w,
                "speedup over {} alone: best {:.2}, worst {:.2}",
                l.name, best, worst
            );
        }
        _ => {
            let _ = writeln!(
                w,
                "speedup over the main cluster alone: none (it has no workers)"
            );
        }
    }

    if !p.grains.is_empty() {
        let _ = writeln!(w, "\n== Granularity candidates (workers as selected) ==");
        let _ = writeln!(
            w,
            "{:>10}  {:>8}  {:>12}  {:>12}  {:>10}  {:>12}  {:>12}  {:>12}  {:>11}",
            "cluster",
            "grain",
            "cperf",
            "perf_ste",
            "bottleneck",
            "startup (s)",
            "end best (s)",
            "end worst (s)",
            "min tasks"
        );
        for g in &p.grains {
            let _ = writeln!(
                w,
                "{:>10}  {:>8}  {:>12}  {:>12}  {:>10}  {:>12}  {:>12}  {:>12}  {:>11}",
                g.cluster,
                g.grain,
                perf(g.cperf),
                perf(g.perf_ste),
                g.bottleneck.name(),
                seconds(g.t_up),
                seconds(g.t_end_best),
                seconds(g.t_end_worst),
                min_tasks(g.min_tasks)
            );
        }
    }

    let _ = writeln!(w, "\n== Tuning advice ==");
    if p.advice.is_empty() && p.remarks.is_empty() {
        let _ = writeln!(
            w,
            "none: no cluster taking part is communication bound or below the threshold"
        );
    }
    for a in &p.advice {
        let value = match a.value {
            AdviceValue::Count(n) => n.to_string(),
            AdviceValue::Seconds(s) => format!("{} s", seconds(s)),
        };
        let _ = write!(
            w,
            "{} (bottleneck {}): {} = {value}",
            a.cluster,
            a.bottleneck,
            a.kind.name()
        );
        let explanation = match (&a.kind, &a.effect) {
            (
                AdviceKind::ResultsPerInterResult | AdviceKind::TasksPerInterTask,
                AdviceEffect::LiftsLimit {
                    from,
                    to,
                    cperf,
                    inter_bytes,
                },
            ) => {
                let (what, link) = if a.kind == AdviceKind::ResultsPerInterResult {
                    (
                        "join that many results into one inter-cluster result",
                        "WAN-out",
                    )
                } else {
                    ("carry that many tasks in one inter-cluster task", "WAN-in")
                };
                format!(
                    " — {what} of {} B: the {link} limit rises from {} to {} ops/s, at least \
                     cperf {}",
                    amount(*inter_bytes),
                    perf(*from),
                    perf(*to),
                    perf(*cperf)
                )
            }
            (_, AdviceEffect::Grain { reason, row }) => {
                let why = match reason {
                    GrainReason::ComputationBound => {
                        "the smallest candidate grain whose steady state is computation bound"
                    }
                    GrainReason::FitsShare => {
                        "the largest candidate grain whose minimum workload fits the cluster's share"
                    }
                };
                format!(
                    " — {why}: steady performance {} of cperf {} ops/s, startup {} s, end best {} \
                     s, worst {} s; minimum tasks for the threshold {} (the problem has {} at \
                     that grain)",
                    perf(row.perf_ste),
                    perf(row.cperf),
                    seconds(row.t_up),
                    seconds(row.t_end_best),
                    seconds(row.t_end_worst),
                    min_tasks(row.min_tasks),
                    row.tasks
                )
            }
            (
                _,
                AdviceEffect::RunWithout {
                    t_ex_worst,
                    efficiency_worst,
                },
            ) => format!(
                " — below the threshold and nothing above lifts it; without it the run takes \
                 {} s ({}) in the worst case, efficiency {}",
                seconds(*t_ex_worst),
                hms(*t_ex_worst),
                fraction(*efficiency_worst)
            ),
            _ => String::new(),
        };
        let _ = writeln!(w, "{explanation}");
    }
    for remark in &p.remarks {
        let _ = match remark {
            Remark::OutOfReach {
                cluster,
                bottleneck,
                kind,
                needed,
                largest,
            } => writeln!(
                w,
                "{cluster} (bottleneck {bottleneck}): cannot reach cperf with {} — it would have \
                 to be {}, more than the {} a plan accepts",
                kind.name(),
                needed.map_or_else(|| "beyond 2^64".to_string(), |n| amount(n as f64)),
                amount(*largest as f64)
            ),
            Remark::LinkNeeds {
                cluster,
                bottleneck,
                cperf,
                needs,
            } => writeln!(
                w,
                "{cluster} (bottleneck {bottleneck}): communication bound and nothing above lifts \
                 it to cperf {} ops/s — {}",
                perf(*cperf),
                needs_text(needs)
            ),
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw_model::plan::Plan;

    fn prediction(text: &str) -> (Plan, Prediction) {
        let plan = Plan::from_toml_str(text).unwrap();
        let prediction = predict(&plan.model_input(None).unwrap()).unwrap();
        (plan, prediction)
    }

    /// The keys of a JSON object, in the order they are printed.
    fn keys_in_order<'a>(printed: &str, object: &'a Value, indent: usize) -> Vec<&'a str> {
        let mut keys: Vec<&str> = object
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let position = |k: &str| printed.find(&format!("\n{}\"{k}\":", " ".repeat(indent)));
        keys.sort_by_key(|k| position(k).expect("key printed"));
        keys
    }

    #[test]
    fn json_has_the_shape_of_the_issue() {
        let (plan, p) = prediction(include_str!("../../configs/srmsd-three-clusters-all.toml"));
        let printed = serde_json::to_string_pretty(&to_json(&plan, &p, None)).unwrap();
        let value: Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(
            keys_in_order(&printed, &value, 2),
            ["clusters", "run", "advice", "selection", "local"]
        );
        assert_eq!(
            keys_in_order(&printed, &value["clusters"][0], 6),
            [
                "name",
                "workers",
                "cperf",
                "perf_ste",
                "bottleneck",
                "t_up",
                "t_end_best",
                "t_end_worst",
                "min_tasks",
                "tasks_best",
                "tasks_worst",
                "t_ex_best",
                "t_ex_worst",
                "efficiency_best",
                "efficiency_worst"
            ]
        );
        let run_start = printed.find("\"run\"").unwrap();
        assert_eq!(
            keys_in_order(&printed[run_start..], &value["run"], 4),
            [
                "t_ex_best",
                "t_ex_worst",
                "efficiency_best",
                "efficiency_worst",
                "speedup_worst"
            ]
        );
        assert_eq!(
            value["advice"],
            json!([{"cluster": "spain", "bottleneck": "wan_out",
                    "kind": "results_per_inter_result", "value": 3}])
        );
        assert_eq!(value["clusters"][2]["min_tasks"], Value::Null);
        assert_eq!(value["clusters"][0]["workers"], json!(["pgs-1", "pgs-3"]));
    }

    #[test]
    fn granularity_advice_carries_its_startup_and_end_times() {
        let (plan, p) = prediction(include_str!("../../configs/matmul-two-clusters-grain.toml"));
        let value = serde_json::to_value(to_json(&plan, &p, None)).unwrap();
        let grain = &value["advice"][1];
        assert_eq!(grain["kind"], "granularity");
        assert_eq!(grain["value"], 4400);
        assert!(grain["t_up"].as_f64().unwrap() > 0.0);
        assert!(grain["t_end_worst"].as_f64().unwrap() > grain["t_end_best"].as_f64().unwrap());
        assert_eq!(value["run"]["speedup_worst"], Value::Null);
        assert_eq!(value["local"], Value::Null);
    }

    #[test]
    fn text_follows_the_methodology() {
        let (plan, p) = prediction(include_str!("../../configs/srmsd-three-clusters-auto.toml"));
        let text = to_text(&plan, &p, None);
        let sections = [
            "== Local cluster analysis ==",
            "== Clusters ==",
            "== Whole run ==",
            "== Tuning advice ==",
        ];
        let positions: Vec<usize> = sections.iter().map(|s| text.find(s).unwrap()).collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(text.contains("exhaustive search over 32767 combinations (limit 65536)"));
        assert!(text.contains("spain workers: aoquir3 aoquir8"));
        assert!(text.contains("results_per_inter_result = 2"));
    }

    #[test]
    fn remarks_and_the_measured_system_are_optional_json_keys() {
        let (plan, p) = prediction(include_str!("../../configs/validation/local-comm.toml"));
        let measured = MeasuredSystem {
            measured_at: Some("2025-01-31T10:00:00+00:00".into()),
            conditions: Some("hmw calibrate on this machine\n(2 cores)".into()),
            clusters: vec![],
        };
        let source = MeasuredSource {
            path: Path::new("system.toml"),
            system: &measured,
        };
        let printed = serde_json::to_string_pretty(&to_json(&plan, &p, Some(source))).unwrap();
        let value: Value = serde_json::from_str(&printed).unwrap();
        assert_eq!(
            keys_in_order(&printed, &value, 2),
            [
                "clusters",
                "run",
                "advice",
                "selection",
                "local",
                "remarks",
                "measured"
            ]
        );
        assert_eq!(value["advice"], json!([]));
        let remark = &value["remarks"][0];
        assert_eq!(remark["remark"], "link_needs");
        assert_eq!(remark["bottleneck"], "lan");
        assert_eq!(remark["links"][0]["key"], "lan_bytes_per_s");
        let needed = remark["links"][0]["throughput_needed"].as_f64().unwrap();
        let limit = remark["links"][0]["limit"].as_f64().unwrap();
        let cperf = remark["cperf"].as_f64().unwrap();
        // the limit grows with the throughput: at the needed one it reaches cperf
        let lan = plan.clusters[0].lan_bytes_per_s.unwrap();
        assert!((limit * needed / lan - cperf).abs() < 1e-9 * cperf);
        assert_eq!(
            value["measured"],
            json!({"file": "system.toml", "measured_at": "2025-01-31T10:00:00+00:00",
                   "conditions": "hmw calibrate on this machine\n(2 cores)"})
        );
        let text = to_text(&plan, &p, Some(source));
        assert!(
            text.lines().nth(1).unwrap()
                == "measured system: system.toml, measured 2025-01-31T10:00:00+00:00; \
                    conditions: hmw calibrate on this machine (2 cores)",
            "{text}"
        );
        assert!(text.contains(&format!(
            "a LAN of at least 4.194e9 B/s (lan_bytes_per_s, now {lan:.3e})"
        )));
        // without them neither key is printed
        let value = serde_json::to_value(to_json(&plan, &p, None)).unwrap();
        assert!(value.get("measured").is_none());
        let (plan, p) = prediction(include_str!(
            "../../configs/srmsd-three-clusters-pinned.toml"
        ));
        let value = serde_json::to_value(to_json(&plan, &p, None)).unwrap();
        assert!(value.get("remarks").is_none() && value.get("measured").is_none());
        assert!(to_text(&plan, &p, None).contains("\nnone: no cluster taking part"));
    }

    #[test]
    fn number_formats() {
        assert_eq!(amount(2_310_244.0), "2,310,244");
        assert_eq!(amount(4.0), "4");
        assert_eq!(amount(0.5), "0.5000");
        assert_eq!(hms(36_931.9), "10:15:32");
        assert_eq!(hms(362_220.9), "100:37:01");
        assert_eq!(hms(3.6e20), "1.000e17 h");
        assert_eq!(seconds(36_931.9), "36931.9");
        assert_eq!(seconds(2.31e126), "2.3100e126");
        assert_eq!(hms(f64::INFINITY), "inf h");
        assert_eq!(perf(1.586e-3), "1.586e-3");
    }
}
