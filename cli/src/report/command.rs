//! `hmw report STATS.json [--plan PLAN.toml] [--svg OUT.svg] [--png OUT.png] [--html OUT.html]
//! [--json]`: a run's statistics against the model's prediction for its plan — the predicted
//! against measured table, a `report ...` line for scripts, a chart of the completion rate per
//! cluster over time, and the whole report as one HTML page.

use std::{fs, path::PathBuf};

use anyhow::{anyhow, Context as _, Result};
use hmw_core::stats::RunStats;
use hmw_model::{
    plan::{load_plan, model_input_with_measured, ClusterPlan, Plan},
    predict,
};

use super::{document::Report, workers};

/// Arguments of `hmw report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// The statistics of the run (`--stats-json` of the main cluster; `hmw launch` writes
    /// target/launch/NAME/MAIN.stats.json).
    stats: PathBuf,
    /// The plan the run was launched from: adds the model's prediction and the comparison.
    #[arg(long)]
    plan: Option<PathBuf>,
    /// System parameters measured by `hmw calibrate`, as for `hmw predict --measured`: the
    /// predicted curves and figures use them in place of the plan's.
    #[arg(long, value_name = "FILE", requires = "plan")]
    measured: Option<PathBuf>,
    /// Write the chart as SVG.
    #[arg(long, value_name = "OUT.svg")]
    svg: Option<PathBuf>,
    /// Write the chart as PNG.
    #[arg(long, value_name = "OUT.png")]
    png: Option<PathBuf>,
    /// Write the whole report as one self-contained HTML page: the charts (the run's and each
    /// cluster's) inline as SVG, the figures, links, outages; nothing fetched from elsewhere.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// Print the comparison as JSON instead of the table (needs --plan).
    #[arg(long, requires = "plan")]
    json: bool,
    /// Chart size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1500x950", value_parser = parse_size)]
    size: (u32, u32),
}

fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once('x')
        .ok_or_else(|| format!("`{text}`: expected WIDTHxHEIGHT, e.g. 1500x950"))?;
    let parse = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|&v| (300..=10_000).contains(&v))
            .ok_or_else(|| format!("`{text}`: each side must be 300 to 10000 pixels"))
    };
    Ok((parse(w)?, parse(h)?))
}

/// Runs `hmw report`.
pub fn run(args: ReportArgs) -> Result<()> {
    let text = fs::read_to_string(&args.stats)
        .with_context(|| format!("cannot read {}", args.stats.display()))?;
    let stats: RunStats = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not the statistics of a run (--stats-json)",
            args.stats.display()
        )
    })?;
    // The measured system, when given, as the prediction read it: its workers are set
    // against the run's below the comparison.
    let (report, system) = match &args.plan {
        Some(path) => {
            let plan = load_plan(path)?;
            let (input, measured) =
                model_input_with_measured(&plan, path, args.measured.as_deref())?;
            let prediction = predict(&input).map_err(|e| anyhow!("{}: {e}", path.display()))?;
            let unknown: Vec<&str> = stats
                .clusters
                .iter()
                .map(|c| c.name.as_str())
                .chain(std::iter::once(stats.name.as_str()))
                .filter(|name| !plan.clusters.iter().any(|c| &c.name == name))
                .collect();
            if !unknown.is_empty() {
                eprintln!(
                    "warning: {} has clusters the plan {} does not: {}",
                    args.stats.display(),
                    path.display(),
                    unknown.join(", ")
                );
            }
            let mut report = Report::new(
                &plan.name,
                &stats,
                Some((&prediction, plan.application.oper, plan.application.tasks)),
            );
            if let Some(comparison) = report.comparison.as_mut() {
                comparison.fold_subtrees(&subtree_tops(&plan), plan.application.tasks);
            }
            (report, measured)
        }
        None => (Report::new(&stats.name, &stats, None), None),
    };

    // The tables, printed (unless --json) and in the HTML page.
    let mut text = String::new();
    match &report.comparison {
        Some(comparison) => {
            let measured = args.measured.as_ref().map_or(String::new(), |m| {
                format!(", measured values from {}", m.display())
            });
            text = format!(
                "== {}: predicted ({}{measured}) against measured ({})\n",
                report.title,
                args.plan
                    .as_ref()
                    .map_or(String::new(), |p| p.display().to_string()),
                args.stats.display()
            );
            text.push_str(&comparison.to_text());
            text.push_str(&report.observed.details_text());
            if let Some(system) = &system {
                text.push_str(&workers::text(&workers::against_calibration(
                    &stats, system,
                )));
            }
        }
        None => {
            text.push_str(&measured_only(&report));
            text.push_str(&report.observed.details_text());
        }
    }
    match (&report.comparison, args.json) {
        (Some(comparison), true) => println!("{}", serde_json::to_string_pretty(comparison)?),
        _ => print!("{text}"),
    }
    if let Some(path) = &args.svg {
        let svg = report.svg(args.size)?;
        fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("chart: {}", path.display());
    }
    if let Some(path) = &args.png {
        report.png(path, args.size)?;
        eprintln!("chart: {}", path.display());
    }
    if let Some(path) = &args.html {
        let page = report.html(&stats, args.size, &text)?;
        fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("report: {}", path.display());
    }
    if !args.json {
        match &report.comparison {
            Some(comparison) => println!("{}", comparison.summary_line()),
            None => println!(
                "report name={} tasks={} makespan_s={:.3}",
                report.title, report.observed.tasks, report.observed.wall_s
            ),
        }
    }
    Ok(())
}

/// Each external cluster of `plan` and the cluster under the main one its path up the tree
/// (`[cluster.launch] parent`) goes through: itself for a cluster under the main one. A parent
/// the plan does not have, or a cycle, ends the path where it is.
fn subtree_tops(plan: &Plan) -> Vec<(String, String)> {
    let parent_of = |c: &ClusterPlan| -> Option<&ClusterPlan> {
        let name = c.launch_settings().ok()?.parent?;
        plan.clusters.iter().find(|p| p.name == name && !p.main)
    };
    plan.clusters
        .iter()
        .filter(|c| !c.main)
        .map(|c| {
            let mut top = c;
            for _ in 0..plan.clusters.len() {
                match parent_of(top) {
                    Some(p) => top = p,
                    None => break,
                }
            }
            (c.name.clone(), top.name.clone())
        })
        .collect()
}

/// The table without a plan: tasks and rates per cluster.
fn measured_only(report: &Report) -> String {
    use std::fmt::Write as _;
    let o = &report.observed;
    let mut out = format!(
        "== {}: {} tasks in {:.3} s ({:.2} tasks/s); no plan given, so no prediction\n",
        report.title,
        o.tasks,
        o.wall_s,
        if o.wall_s > 0.0 {
            o.tasks as f64 / o.wall_s
        } else {
            0.0
        }
    );
    let _ = writeln!(
        out,
        "{:<12} {:>8} {:>8} {:>14}",
        "cluster", "tasks", "share", "steady tasks/s"
    );
    for c in &o.clusters {
        let share = if o.tasks > 0 {
            c.tasks_done() as f64 / o.tasks as f64
        } else {
            0.0
        };
        let steady =
            super::comparison::steady_rate(c).map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"));
        let _ = writeln!(
            out,
            "{:<12} {:>8} {:>7.1}% {:>14}",
            c.name,
            c.tasks_done(),
            100.0 * share,
            steady
        );
    }
    out
}
