//! `hmw predict PLAN.toml [--json] [--measured FILE]`: evaluate the analytical model on a plan
//! before touching a machine — local cluster analysis, per-cluster and whole-run predictions,
//! and tuning advice (format: `docs/model.md`).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use serde::Serialize;
use serde_json::{json, Value};

use hmw::model::{
    predict, AdviceEffect, AdviceKind, AdviceValue, ClusterPrediction, GrainReason, Prediction,
    SelectionMethod,
};
use hmw::plan::{load_measured_system, load_plan, Plan};

/// Arguments of `hmw predict`.
#[derive(clap::Args)]
pub struct PredictArgs {
    /// The run plan (TOML).
    pub plan: PathBuf,
    /// Print the prediction as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// System parameters measured by a calibration run (JSON), used in place of the plan's
    /// `perf` and throughput values.
    #[arg(long, value_name = "FILE")]
    pub measured: Option<PathBuf>,
}

/// Runs `hmw predict`.
pub fn run(args: PredictArgs) -> Result<()> {
    let plan = load_plan(&args.plan)?;
    let measured = match &args.measured {
        Some(path) => {
            let measured = load_measured_system(path)?;
            plan.check_measured(&measured)
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            Some(measured)
        }
        None => None,
    };
    let input = plan
        .model_input(measured.as_ref())
        .map_err(|e| anyhow!("{}: {e}", args.plan.display()))?;
    let prediction = predict(&input).map_err(|e| anyhow!("{}: {e}", args.plan.display()))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&plan, &prediction))?
        );
    } else {
        print!("{}", to_text(&plan, &prediction));
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

#[derive(Serialize)]
struct SelectionJson<'a> {
    mode: &'static str,
    method: &'static str,
    evaluated: Option<u64>,
    limit: Option<u64>,
    left_out: &'a [String],
}

/// The prediction as one JSON object: `clusters`, `run` and `advice` in the shape of issue 3,
/// then `selection` (how the workers were chosen) and `local` (the local cluster analysis).
#[derive(Serialize)]
struct PredictionJson<'a> {
    clusters: Vec<ClusterJson<'a>>,
    run: RunJson,
    advice: Vec<AdviceJson<'a>>,
    selection: SelectionJson<'a>,
    local: Option<ClusterJson<'a>>,
}

fn to_json<'a>(plan: &Plan, p: &'a Prediction) -> PredictionJson<'a> {
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
        SelectionMethod::Greedy {
            evaluated, limit, ..
        } => ("greedy", Some(*evaluated), Some(*limit)),
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
            left_out: &p.left_out,
        },
        local: p.local.as_ref().map(ClusterJson::from),
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

fn seconds(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}

/// `h:mm:ss`, hours unbounded.
fn hms(x: f64) -> String {
    let total = x.round() as u64;
    format!("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
}

fn fraction(x: f64) -> String {
    format!("{x:.3}")
}

fn min_tasks(m: Option<u64>) -> String {
    m.map_or_else(|| "unreachable".into(), |t| t.to_string())
}

/// One row of the clusters table: its label and how to print a cluster's cell.
type TableRow = (&'static str, fn(&ClusterPrediction) -> String);

pub fn to_text(plan: &Plan, p: &Prediction) -> String {
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
    let selection = match &p.selection.method {
        SelectionMethod::All => "all workers".to_string(),
        SelectionMethod::Pinned => "pinned (use_workers; all workers where absent)".to_string(),
        SelectionMethod::Exhaustive { evaluated, limit } => {
            format!("auto, exhaustive search over {evaluated} combinations (limit {limit})")
        }
        SelectionMethod::Greedy {
            combinations,
            limit,
            evaluated,
        } => format!(
            "auto, greedy local search ({evaluated} selections evaluated): the {} combinations \
             exceed the exhaustive limit {limit}",
            combinations.map_or_else(|| "more than 2^64".to_string(), |c| c.to_string())
        ),
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
                    "communication bound ({}): external clusters cannot help until it is lifted",
                    l.bottleneck
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
    if p.advice.is_empty() {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw::plan::Plan;

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
        let (plan, p) = prediction(include_str!(
            "../../../../configs/srmsd-three-clusters-all.toml"
        ));
        let printed = serde_json::to_string_pretty(&to_json(&plan, &p)).unwrap();
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
        let (plan, p) = prediction(include_str!(
            "../../../../configs/matmul-two-clusters-grain.toml"
        ));
        let value = serde_json::to_value(to_json(&plan, &p)).unwrap();
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
        let (plan, p) = prediction(include_str!(
            "../../../../configs/srmsd-three-clusters-auto.toml"
        ));
        let text = to_text(&plan, &p);
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
    fn number_formats() {
        assert_eq!(amount(2_310_244.0), "2,310,244");
        assert_eq!(amount(4.0), "4");
        assert_eq!(amount(0.5), "0.5000");
        assert_eq!(hms(36_931.9), "10:15:32");
        assert_eq!(hms(362_220.9), "100:37:01");
        assert_eq!(perf(1.586e-3), "1.586e-3");
    }
}
