//! A scenario judged from what its tools left in the work folder (`NAME.report.txt`,
//! `NAME.simulate.txt`, `NAME.predict.json`, `NAME.calibrate.log`, the same report and
//! prediction with `contention = "mva"` in `NAME.mva.report.txt` and `NAME.mva.predict.txt`,
//! the runs' folders and logs): its row of the results and its section of the document.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, Context, Result};

use super::document::Section;
use super::files::{calibrated_before, cpu_per_operation_drift, runs_capped};
use super::numbers::Figure;
use super::process::output_of;
use super::row::{
    error_from_middle, median_run, simulated_error, simulation_within, speed_scaled_median, spread,
    MvaPrediction, Row, Run, SimulationVerdict,
};
use super::scenario::{description, written_lan, PlanFacts, Scenario};
use super::tools::{
    calibration_tables, clusters_within, launcher_wall_time, predicted_workers, read_output,
    ReportSummary, Simulated,
};

/// The row and the section of `scenario`, whose tools ran `plan` (its facts `facts`; on the
/// testbed when `on_testbed`) and were given `mva_plan` (`plan` with `contention = "mva"`)
/// for the second prediction, and left their files in `work`; `runs` its runs, in order.
pub(crate) fn judge(
    work: &Path,
    scenario: &Scenario,
    plan: &str,
    mva_plan: &str,
    facts: &PlanFacts,
    on_testbed: bool,
    runs: &[Run],
) -> Result<(Row, Section)> {
    let name = scenario.name.as_str();
    let file = |suffix: &str| work.join(format!("{name}{suffix}"));
    let simulate_txt = file(".simulate.txt");
    let simulate_output = read_output(&simulate_txt)?;
    let simulated = Simulated::from_output(&simulate_output)
        .with_context(|| format!("in {}", simulate_txt.display()))?;
    let report_txt = file(".report.txt");
    let report_output = read_output(&report_txt)?;
    let summary = ReportSummary::from_output(&report_output)
        .with_context(|| format!("in {}", report_txt.display()))?;
    let mva_report_txt = file(".mva.report.txt");
    let mva_report_output = read_output(&mva_report_txt)?;
    let mva_summary = ReportSummary::from_output(&mva_report_output)
        .with_context(|| format!("in {}", mva_report_txt.display()))?;
    // The workers each prediction selects: the plan's own are those the runs used.
    let workers = |suffix: &str| -> Result<Vec<String>> {
        Ok(predicted_workers(&read_output(&file(suffix))?)
            .into_iter()
            .map(str::to_owned)
            .collect())
    };
    let (plan_workers, mva_workers) = (workers(".predict.txt")?, workers(".mva.predict.txt")?);
    let median = median_run(runs).ok_or_else(|| anyhow!("no run"))?;
    let makespans: Vec<Figure> = runs.iter().map(|r| r.launched.makespan_s.clone()).collect();
    let spread = spread(&makespans).ok_or_else(|| anyhow!("no run"))?;
    let sim_err = simulated_error(&summary.makespan_s, &simulated.median_s);
    // Scenarios the closed form cannot predict (a WAN outage: it has none) are judged on
    // `hmw simulate`'s prediction.
    let simulation = facts.wan_outages.then(|| {
        SimulationVerdict::new(
            &summary.makespan_s,
            &simulated,
            clusters_within(&report_output, &simulate_output),
        )
    });
    // From the files the runs left: a model-derived cap in what they ran with, real
    // computation, a calibration older than every run that its prediction used, how fast the
    // machine computed in the runs against the calibration.
    let run_dirs: Vec<PathBuf> = runs.iter().map(|r| r.dir.clone()).collect();
    let capped = runs_capped(&run_dirs)?;
    let real_compute = facts.real_compute();
    let system = file(".system.toml");
    let calibrated =
        calibrated_before(&file(".predict.json"), &system, &run_dirs).unwrap_or_else(|error| {
            eprintln!("validate: {name}: not counted as calibrated: {error:#}");
            false
        });
    let calibration_runs = work.join("runs").join(format!("{name}-calibrate"));
    let cpu_drift = if real_compute && on_testbed {
        let ratios = cpu_per_operation_drift(&calibration_runs, &run_dirs)?;
        Some(
            ratios
                .into_iter()
                .map(|r| r.map(|r| Figure::fixed(r, 3)))
                .collect::<Vec<_>>(),
        )
    } else {
        None
    };
    // A testbed scenario's runs at the speed the machine had when it was calibrated: each
    // run's makespan divided by its CPU time per basic operation over the calibration's (which
    // no CPU quota changes and the model does not use; on this kind of VM it moves by +-15 %
    // between runs a minute apart), the median of those, and its error from the prediction.
    let scaled = cpu_drift
        .as_ref()
        .and_then(|ratios| speed_scaled_median(&makespans, ratios));
    let scaled_err = scaled
        .as_ref()
        .map(|m| error_from_middle(m, &summary.best_s, &summary.worst_s));
    let launch_log = read_output(&work.join(format!("{}.launch.log", median.name)))?;
    let machine_busy = runs
        .iter()
        .map(|r| r.machine_busy.map(|b| Figure::fixed(b, 2)))
        .collect();
    let row = Row {
        name: name.to_owned(),
        machine_busy,
        launcher_s: launcher_wall_time(&launch_log).map(str::to_owned),
        // The simulation's target: within max(5 %, the spread of the measured runs).
        sim_within: simulation_within(&sim_err, &spread),
        mva: MvaPrediction {
            summary: mva_summary,
            other_workers: mva_workers != plan_workers,
        },
        summary,
        makespans,
        spread,
        cpu_drift,
        scaled,
        scaled_err,
        simulated_s: simulated.median_s,
        sim_err,
        simulation,
        counted: scenario.counted,
        capped,
        real_compute,
        calibrated,
        added: added_in(&scenario.plan),
    };
    let section = Section {
        name: name.to_owned(),
        shown: scenario.plan.clone(),
        description: description(&read_output(Path::new(&scenario.plan))?),
        mva_workers: if mva_workers == plan_workers {
            Vec::new()
        } else {
            mva_workers
        },
        workers: plan_workers,
        lan: if scenario.lan_measured() {
            written_lan(&read_output(Path::new(plan))?)
        } else {
            String::new()
        },
        plan: plan.to_owned(),
        lan_runs: scenario.lan_runs(),
        calibration: calibration_tables(&read_output(&file(".calibrate.log"))?)
            .into_iter()
            .map(str::to_owned)
            .collect(),
        report: report_output,
        mva_plan: mva_plan.to_owned(),
        mva_report: comparison(&mva_report_output).to_owned(),
        simulate: simulate_output,
    };
    Ok((row, section))
}

/// `hmw report`'s comparison of the prediction with the run: its output up to its `verdict`
/// line (what follows it is the run alone); all of it when there is none.
fn comparison(report: &str) -> &str {
    let mut end = 0;
    for line in report.split_inclusive('\n') {
        end += line.len();
        if line.starts_with("verdict ") {
            return &report[..end];
        }
    }
    report
}

/// The commit that added the file `path` (`git log --diff-filter=A`).
fn added_in(path: &str) -> Option<String> {
    let out = output_of(Command::new("git").args([
        "log",
        "--diff-filter=A",
        "--format=%h",
        "-1",
        "--",
        path,
    ]))?;
    let hash = out.trim_end();
    (!hash.is_empty()).then(|| hash.to_owned())
}

#[cfg(test)]
mod tests {
    use super::comparison;

    #[test]
    fn a_reports_comparison() {
        let report = "== val: predicted (p) against measured (s)\nmakespan s  1 2 3\n\
                      verdict PASS: measured makespan 6.097 s inside the tolerance\n\
                      lyon: 2 workers busy 98.5 %\nreport name=val tasks=3\n";
        assert_eq!(
            comparison(report),
            "== val: predicted (p) against measured (s)\nmakespan s  1 2 3\n\
             verdict PASS: measured makespan 6.097 s inside the tolerance\n"
        );
        assert_eq!(comparison("no verdict\nhere"), "no verdict\nhere");
        assert_eq!(comparison("verdict FAIL: x"), "verdict FAIL: x");
    }
}
