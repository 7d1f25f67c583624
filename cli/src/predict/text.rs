//! The prediction as text, in the order of the methodology: the header, the local cluster
//! analysis, the clusters' table, the whole run, the granularity candidates, the tuning advice.

use std::{fmt::Write as _, ops::Range};

use hmw_model::{main_path::MainPathLoad, plan::Plan};
use hmw_model::{
    AdviceEffect, AdviceKind, AdviceValue, ClusterPrediction, GrainReason, ModelForm, Prediction,
    Remark, SelectionMethod,
};

use super::{
    format::{amount, fraction, hms, min_tasks, needs_text, perf, plural, seconds},
    source::MeasuredSource,
};

/// One row of the clusters table: its label and how to print a cluster's cell.
type TableRow = (&'static str, fn(&ClusterPrediction) -> String);

/// The widest the clusters' table may be: with more clusters than fit, their columns go in
/// blocks, one under the other, each with the rows' labels.
pub(super) const TABLE_WIDTH: usize = 100;

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
    if plan.form != ModelForm::Extended {
        let _ = writeln!(
            w,
            "model: the {} form (docs/model.md section 14)",
            plan.form.name()
        );
    }
    if plan.terms.network {
        let _ = writeln!(
            w,
            "steady performance: contention = {} (the bottleneck formulas' and the closed \
             network's rates are both below)",
            plan.terms.contention.name()
        );
    }
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
    let mut rows: Vec<TableRow> = vec![
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
    if p.clusters.iter().any(|c| c.network.is_some()) {
        let rates: [TableRow; 2] = [
            ("  bottleneck formulas (ops/s)", |c| {
                perf(c.limits.steady_performance())
            }),
            ("  closed network, MVA (ops/s)", |c| {
                c.network.map_or_else(|| "-".to_string(), perf)
            }),
        ];
        rows.splice(3..3, rates);
    }
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
    for (b, block) in column_blocks(label_width, &widths, TABLE_WIDTH)
        .into_iter()
        .enumerate()
    {
        if b > 0 {
            let _ = writeln!(w);
        }
        let _ = write!(w, "{:label_width$}", "");
        for k in block.clone() {
            let _ = write!(w, "  {:>width$}", p.clusters[k].name, width = widths[k]);
        }
        let _ = writeln!(w);
        for ((label, _), row) in rows.iter().zip(&cells) {
            let _ = write!(w, "{label:label_width$}");
            for k in block.clone() {
                let _ = write!(w, "  {:>width$}", row[k], width = widths[k]);
            }
            let _ = writeln!(w);
        }
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

    if let Some(path) = &p.main_path {
        main_path_lines(w, path);
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

/// The columns `0..widths.len()` (each two spaces and its width) in consecutive blocks that fit
/// within `limit` beside labels of `label_width`, at least one column a block.
/// What the clusters ask of the main master and the main cluster's CMs (177), and the share
/// they get when it is more than a core (178).
fn main_path_lines(w: &mut String, path: &MainPathLoad) {
    let share = |f: f64| {
        if f < 1.0 {
            format!(
                ": more than a core, each cluster gets {} of its rate",
                fraction(f)
            )
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        w,
        "main master busy {:.3} of a core{}",
        path.master,
        share(path.master_share)
    );
    let fill = path.links_to_fill_a_core().map_or(String::new(), |n| {
        format!("; idle they fill a core at {n:.0} links")
    });
    let _ = writeln!(
        w,
        "main cluster's CMs busy {:.3} of a core for {} ({:.3} of it idle){}{}",
        path.cms,
        plural(path.links, "link"),
        path.cms_idle,
        share(path.cms_share),
        fill
    );
}

fn column_blocks(label_width: usize, widths: &[usize], limit: usize) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let mut start = 0;
    let mut used = label_width;
    for (k, width) in widths.iter().enumerate() {
        if k > start && used + 2 + width > limit {
            blocks.push(start..k);
            start = k;
            used = label_width;
        }
        used += 2 + width;
    }
    if start < widths.len() {
        blocks.push(start..widths.len());
    }
    blocks
}
