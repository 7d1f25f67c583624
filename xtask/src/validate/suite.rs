//! The suite from end to end: each scenario calibrated, predicted, simulated, run three times
//! and reported on (on the testbed for the tb-* scenarios), its runs reported on again against
//! the model with `[model] contention = "mva"`, the verdicts, the totals, the document, the
//! last lines and the exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context, Result};

use super::calendar::utc_minute;
use super::document::{kept_by_hand, Document, Generated, LanNotes, Section};
use super::files::read_json;
use super::judge::judge;
use super::machine::{cores, load_average, settle, BusyRecorder, BusyTrace};
use super::numbers::{exponent, fixed, Figure};
use super::options::{self, Mode};
use super::process::{
    cat_to_stderr, interrupted, output_of, run_logged, tail_to_stderr, wait_for_the_end,
};
use super::row::{median_run, Row, Run};
use super::scenario::{
    selected, with_contention, with_measured_lan, PlanFacts, Scenario, LAN_CALIBRATION_PLAN,
};
use super::testbed::Testbed;
use super::tools::{calibration_time, read_output, Launched, Simulated};
use super::totals::Totals;

/// Runs of each scenario: on this shared 2-core machine a single run moves by several
/// percent, so the run compared is the one with the median makespan of three.
const REPEATS: usize = 3;

/// Runs of the LAN calibration averaged.
const CALIBRATION_RUNS: usize = 3;

/// Every scenario's calibration: 10 tasks per worker, all at once, each executed 4 times
/// (`hmw calibrate`'s default: a worker then computes without waiting for the master), more
/// tasks until every worker computed for 2 s (its default `--worker-seconds`); one LAN run per
/// worker count; 5 s of each WAN both ways. (With 6 tasks computed once, one calibration of
/// tb-matmul-local gave a host of a 0.3-core quota 2.68e9 flop/s where its runs measured
/// 1.9-2.0e9; with 10 tasks computed 4 times, 0.4 s on a fast machine's 0.45-core host, a CI
/// run's calibration of tb-tsp-hetero put the hosts 11 % below what its runs measured.)
const CALIBRATE_ARGS: &[&str] = &[
    "--tasks",
    "10",
    "--lan-tasks",
    "300",
    "--lan-seconds",
    "0.3",
    "--wan-seconds",
    "5",
];

/// `validate [--quick] [--only NAME,NAME...]`: the exit status is 0 when everything passed, 1
/// when something failed, 2 for a command line not understood or a scenario that does not
/// exist (1 for `--only` without its list).
pub(crate) fn main(args: &[String]) -> ExitCode {
    let options = match options::parse(args) {
        Ok(options) => options,
        Err(bad) => {
            eprintln!("{}", bad.message);
            return ExitCode::from(bad.status);
        }
    };
    match run(options) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("validate: {error:#}");
            ExitCode::from(1)
        }
    }
}

fn run(options: options::Options) -> Result<ExitCode> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or_else(|| anyhow!("xtask has no parent folder"))?;
    std::env::set_current_dir(root)
        .with_context(|| format!("cannot enter the repository {}", root.display()))?;
    let root = std::env::current_dir().context("cannot read the current folder")?;
    let scenarios = match selected(&root, options.mode, options.only.as_deref()) {
        Ok(scenarios) => scenarios,
        Err(missing) => {
            eprintln!("validate: no scenario {missing}");
            return Ok(ExitCode::from(2));
        }
    };
    let mut suite = Suite::new(root, options)?;
    for scenario in &scenarios {
        let outcome = suite.scenario(scenario);
        if interrupted() {
            wait_for_the_end();
        }
        if let Err(error) = outcome {
            eprintln!("validate: {}: {error:#}", scenario.name);
            suite.failures.push(format!("{}: {error:#}", scenario.name));
        }
    }
    suite.finish()
}

/// Where the suite reads and writes.
struct Paths {
    /// The repository (the current folder).
    root: PathBuf,
    /// `hmw`, release build.
    hmw: String,
    /// The run's files: logs, calibrations, predictions, runs.
    work: PathBuf,
    /// The charts.
    charts: PathBuf,
    /// The document.
    doc: PathBuf,
}

/// The LAN calibration's results (local-comm only).
#[derive(Default)]
struct Lan {
    /// The throughput measured before local-comm, as its plan is given it (`%.4e`).
    bytes_per_s: Option<String>,
    /// How it was measured, before.
    before: Option<String>,
    /// After.
    after: Option<String>,
}

/// The suite as it runs.
struct Suite {
    mode: Mode,
    paths: Paths,
    failures: Vec<String>,
    rows: Vec<Row>,
    sections: Vec<Section>,
    lan: Lan,
    /// Last, so that it is taken down after everything else is done.
    testbed: Testbed,
}

/// Before or after local-comm.
#[derive(Clone, Copy)]
enum Phase {
    Before,
    After,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Before => "before",
            Phase::After => "after",
        }
    }
}

impl Suite {
    fn new(root: PathBuf, options: options::Options) -> Result<Suite> {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| PathBuf::from("target"), PathBuf::from);
        let target = std::fs::canonicalize(&target)
            .or_else(|_| std::path::absolute(&target))
            .with_context(|| format!("cannot find {}", target.display()))?;
        let release = target.join("release");
        let base = target.join("validation");
        let (work, charts, doc) = match (&options.only, options.mode) {
            (Some(_), _) => {
                let work = base.join("only");
                (
                    work.clone(),
                    work.join("charts"),
                    work.join("validation.md"),
                )
            }
            (None, Mode::Full) => (
                base.join("full"),
                PathBuf::from("docs/validation"),
                PathBuf::from("docs/validation.md"),
            ),
            (None, Mode::Quick) => {
                let work = base.join("quick");
                (
                    work.clone(),
                    work.join("charts"),
                    work.join("validation.md"),
                )
            }
        };
        if work.exists() {
            std::fs::remove_dir_all(&work)
                .with_context(|| format!("cannot remove {}", work.display()))?;
        }
        for dir in [work.join("plans"), charts.clone()] {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        // One testbed at a time, named after this process (the script's `$$`: the wrapper
        // execs this binary).
        let testbed = Testbed::new(
            release.join("hmw-testbed"),
            format!("val{}", std::process::id() % 100_000),
            work.clone(),
        );
        testbed.tear_down_on_signals()?;
        Ok(Suite {
            mode: options.mode,
            paths: Paths {
                root,
                hmw: release.join("hmw").to_string_lossy().into_owned(),
                work,
                charts,
                doc,
            },
            failures: Vec::new(),
            rows: Vec::new(),
            sections: Vec::new(),
            lan: Lan::default(),
            testbed,
        })
    }

    fn work(&self, file: &str) -> PathBuf {
        self.paths.work.join(file)
    }

    fn fail(&mut self, failure: String) {
        self.failures.push(failure);
    }

    /// `hmw ARGS...`, here.
    fn hmw(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.paths.hmw);
        command.args(args);
        command
    }

    /// `hmw launch` of `plan` as run `name` (predicted live from the calibration `system`
    /// when given; on the testbed when `on_testbed`): its last line, or `None` when it failed
    /// (said on standard error).
    fn launch(
        &self,
        plan: &str,
        name: &str,
        system: Option<&Path>,
        on_testbed: bool,
    ) -> Result<Option<Launched>> {
        let log = self.work(&format!("{name}.launch.log"));
        let run_dir = self.paths.work.join("runs").join(name);
        let mut launch = self.testbed.on_host(on_testbed, "timeout");
        launch
            .args([
                "-s",
                "INT",
                "-k",
                "60",
                "300",
                &self.paths.hmw,
                "launch",
                plan,
                "--work-dir",
            ])
            .arg(&run_dir);
        if let Some(system) = system {
            launch.arg("--measured").arg(system);
        }
        if !run_logged(&mut launch, &log)? {
            eprintln!(
                "validate: {name}: hmw launch failed; log: {}",
                log.display()
            );
            tail_to_stderr(&log, 20);
            return Ok(None);
        }
        // The master's journal of the results (`hmw launch`'s default) is for resuming a run;
        // one that ended needs it no more, and nothing here reads it. Kept, those of
        // local-comm's runs and of the LAN calibrations came to 32 GB in a full validation.
        let journal = run_dir.join("journal.hmwj");
        if let Err(error) = std::fs::remove_file(&journal) {
            if error.kind() != std::io::ErrorKind::NotFound {
                eprintln!("validate: {name}: {}: {error}", journal.display());
            }
        }
        match Launched::from_log(&read_output(&log)?) {
            Ok(Some(launched)) => Ok(Some(launched)),
            Ok(None) => {
                eprintln!(
                    "validate: {name}: no `launch clusters=` line in {}",
                    log.display()
                );
                Ok(None)
            }
            Err(error) => {
                eprintln!("validate: {name}: {error:#}; log: {}", log.display());
                Ok(None)
            }
        }
    }

    /// The LAN calibration: the throughput the master gets with local-comm's message sizes,
    /// in local-comm's regime, the mean of three runs. `Before` gives local-comm its LAN,
    /// `After` shows how much it drifted meanwhile. Whether it succeeded.
    fn calibrate_lan(&mut self, phase: Phase) -> Result<bool> {
        let plan = LAN_CALIBRATION_PLAN;
        let sizes = PlanFacts::read(Path::new(plan))?
            .message_bytes
            .ok_or_else(|| anyhow!("{plan}: no task_bytes and result_bytes in [application]"))?;
        let mut values = Vec::new();
        for i in 1..=CALIBRATION_RUNS {
            let name = format!("lan-calibration-{}-{i}", phase.name());
            let Some(launched) = self.launch(plan, &name, None, false)? else {
                return Ok(false);
            };
            let throughput = launched.tasks.value() * sizes / launched.makespan_s.value();
            let value = exponent(throughput, 4);
            values.push(Figure::parse(&value).map_or(throughput, |f| f.value()));
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let deviation = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        let note = format!(
            "{} MB/s (mean of {CALIBRATION_RUNS} runs; min {}, max {}, standard deviation {} MB/s)",
            fixed(mean / 1e6, 0),
            fixed(lo / 1e6, 0),
            fixed(hi / 1e6, 0),
            fixed(deviation / 1e6, 0)
        );
        println!("  LAN ({} local-comm): {note}", phase.name());
        match phase {
            Phase::Before => {
                self.lan.bytes_per_s = Some(exponent(mean, 4));
                self.lan.before = Some(note);
            }
            Phase::After => self.lan.after = Some(note),
        }
        Ok(true)
    }

    /// The plan a scenario runs: the committed one, or for local-comm a copy with the LAN
    /// measured just before (`None` when that measurement failed).
    fn plan_for(&self, scenario: &Scenario) -> Result<Option<String>> {
        if !scenario.lan_measured() {
            return Ok(Some(scenario.plan.clone()));
        }
        let Some(bytes_per_s) = &self.lan.bytes_per_s else {
            return Ok(None);
        };
        let text = read_output(Path::new(&scenario.plan))?;
        let copy = self
            .paths
            .work
            .join("plans")
            .join(format!("{}.toml", scenario.name));
        std::fs::write(&copy, with_measured_lan(&text, bytes_per_s))
            .with_context(|| format!("cannot write {}", copy.display()))?;
        Ok(Some(copy.to_string_lossy().into_owned()))
    }

    /// The plan `plan` of `scenario` with `[model] contention = "mva"`: a copy in the work
    /// folder's `plans/NAME.mva.toml`.
    fn mva_plan_for(&self, scenario: &Scenario, plan: &str) -> Result<String> {
        let text = read_output(Path::new(plan))?;
        let copy = self
            .paths
            .work
            .join("plans")
            .join(format!("{}.mva.toml", scenario.name));
        let mva = with_contention(&text, "mva").with_context(|| plan.to_owned())?;
        std::fs::write(&copy, mva).with_context(|| format!("cannot write {}", copy.display()))?;
        Ok(copy.to_string_lossy().into_owned())
    }

    /// One scenario: its row and section, or its failure.
    fn scenario(&mut self, scenario: &Scenario) -> Result<()> {
        let name = scenario.name.as_str();
        if scenario.lan_measured() && self.lan.bytes_per_s.is_none() {
            println!("validate: LAN calibration");
            if let Err(error) = self.calibrate_lan(Phase::Before) {
                eprintln!("validate: LAN calibration: {error:#}");
            }
        }
        println!("validate: {name}");
        let Some(plan) = self.plan_for(scenario)? else {
            self.fail(format!("{name}: the LAN calibration failed"));
            return Ok(());
        };
        let facts = PlanFacts::read(Path::new(&plan))?;
        // The same runs are predicted again with the network's rate (docs/model.md section
        // 16): the plan as it is predicts with the default, the bottleneck formulas.
        let mva_plan = self.mva_plan_for(scenario, &plan)?;
        // Calibrated just before the runs (on the testbed, its hosts up first); every figure
        // of the model (prediction, simulation, report) from that calibration.
        let on_testbed = facts.testbed;
        let plan = if on_testbed {
            format!("{}/{plan}", self.paths.root.display())
        } else {
            plan
        };
        if on_testbed {
            let log = self.work(&format!("{name}.testbed.log"));
            if !self.testbed.up(&plan, &log)? {
                self.fail(format!(
                    "{name}: the testbed did not come up; log: {}",
                    log.display()
                ));
                return Ok(());
            }
        }
        let system = self.work(&format!("{name}.system.toml"));
        let system_arg = system.to_string_lossy().into_owned();
        let quiet = settle()?;
        let log = self.work(&format!("{name}.calibrate.log"));
        let mut calibrate = self.testbed.on_host(on_testbed, "timeout");
        calibrate
            .args([
                "-s",
                "INT",
                "-k",
                "30",
                "300",
                &self.paths.hmw,
                "calibrate",
                &plan,
                "--out",
                &system_arg,
            ])
            .arg("--work-dir")
            .arg(
                self.paths
                    .work
                    .join("runs")
                    .join(format!("{name}-calibrate")),
            )
            .args(CALIBRATE_ARGS)
            .args(scenario.lan_runs());
        if !run_logged(&mut calibrate, &log)? {
            self.fail(format!(
                "{name}: hmw calibrate failed; log: {}",
                log.display()
            ));
            tail_to_stderr(&log, 20);
            return Ok(());
        }
        let calibration_log = read_output(&log)?;
        println!(
            "  calibrated: {} (after {quiet})",
            calibration_time(&calibration_log)
        );
        let measured = ["--measured", system_arg.as_str()];
        let (predict_json, predict_txt) = (
            self.work(&format!("{name}.predict.json")),
            self.work(&format!("{name}.predict.txt")),
        );
        if !run_logged(
            &mut self.hmw(&[&["predict", &plan][..], &measured, &["--json"]].concat()),
            &predict_json,
        )? || !run_logged(
            &mut self.hmw(&[&["predict", &plan][..], &measured].concat()),
            &predict_txt,
        )? {
            self.fail(format!("{name}: hmw predict failed"));
            cat_to_stderr(&predict_txt);
            return Ok(());
        }
        let mva_predict_txt = self.work(&format!("{name}.mva.predict.txt"));
        if !run_logged(
            &mut self.hmw(&[&["predict", &mva_plan][..], &measured].concat()),
            &mva_predict_txt,
        )? {
            self.fail(format!("{name}: hmw predict failed with contention = mva"));
            cat_to_stderr(&mva_predict_txt);
            return Ok(());
        }
        // The same plan in virtual time: the real cores against the plan's workers and links.
        let simulate_txt = self.work(&format!("{name}.simulate.txt"));
        if !run_logged(
            &mut self.hmw(&[&["simulate", &plan][..], &measured, &["--runs", "3"]].concat()),
            &simulate_txt,
        )? {
            self.fail(format!("{name}: hmw simulate failed"));
            cat_to_stderr(&simulate_txt);
            return Ok(());
        }
        // Its `simulate ...` line, before the runs (they are judged against it).
        Simulated::from_output(&read_output(&simulate_txt)?)
            .with_context(|| format!("in {}", simulate_txt.display()))?;
        // Each run under its own name; the one with the median makespan is compared and
        // charted.
        let mut runs = Vec::new();
        let mut failed = false;
        for r in 1..=REPEATS {
            let run_name = if REPEATS == 1 {
                name.to_owned()
            } else {
                format!("{name}-run{r}")
            };
            let busy = BusyRecorder::start();
            let launched = self.launch(&plan, &run_name, Some(&system), on_testbed)?;
            let busy = busy.stop();
            match launched {
                Some(launched) => runs.push(Run {
                    machine_busy: machine_busy_in(&busy, &launched.stats),
                    dir: self.paths.work.join("runs").join(&run_name),
                    name: run_name,
                    launched,
                }),
                None => failed = true,
            }
        }
        if failed {
            self.fail(format!("{name}: a run failed"));
            return Ok(());
        }
        let median = median_run(&runs).ok_or_else(|| anyhow!("no run"))?;
        let report_txt = self.work(&format!("{name}.report.txt"));
        let chart = self.paths.charts.join(format!("{name}.svg"));
        let mut report = self.hmw(
            &[
                &["report", &median.launched.stats, "--plan", &plan][..],
                &measured,
            ]
            .concat(),
        );
        report.arg("--svg").arg(&chart);
        if !run_logged(&mut report, &report_txt)? {
            self.fail(format!("{name}: hmw report failed"));
            cat_to_stderr(&report_txt);
            return Ok(());
        }
        // The same run against the prediction with the network's rate.
        let mva_report_txt = self.work(&format!("{name}.mva.report.txt"));
        if !run_logged(
            &mut self.hmw(
                &[
                    &["report", &median.launched.stats, "--plan", &mva_plan][..],
                    &measured,
                ]
                .concat(),
            ),
            &mva_report_txt,
        )? {
            self.fail(format!("{name}: hmw report failed with contention = mva"));
            cat_to_stderr(&mva_report_txt);
            return Ok(());
        }
        let (row, section) = judge(
            &self.paths.work,
            scenario,
            &plan,
            &mva_plan,
            &facts,
            on_testbed,
            &runs,
        )?;
        println!("  {}", row.summary.line);
        println!("{}", row.contention_line());
        if row.machine_busy.iter().any(Option::is_some) {
            println!(
                "  machine busy during the runs (cores of {}): {}",
                cores(),
                row.machine_busy_text()
            );
        }
        if self.mode == Mode::Full {
            if let Some(failure) = row.wild_failure() {
                self.fail(failure);
            }
        }
        if let Some(line) = row.scaled_line() {
            println!("{line}");
        }
        // The gate: the median of three runs outside [0.90 best, 1.10 worst] fails the quick
        // suite; a testbed scenario's runs are judged at the calibration's speed.
        if self.mode == Mode::Quick {
            if let Some(failure) = row.gate_failure() {
                self.fail(failure);
            }
        }
        println!("{}", row.simulated_line());
        self.rows.push(row);
        self.sections.push(section);
        if scenario.lan_measured() {
            let calibrated = self.calibrate_lan(Phase::After).unwrap_or_else(|error| {
                eprintln!("validate: LAN calibration: {error:#}");
                false
            });
            if !calibrated {
                self.fail("LAN calibration after local-comm failed".to_owned());
            }
        }
        Ok(())
    }

    /// The totals, the document, the last lines; the exit status.
    fn finish(self) -> Result<ExitCode> {
        if interrupted() {
            wait_for_the_end();
        }
        let totals = Totals::of(&self.rows);
        let lan = self.lan.before.clone().map(|before| LanNotes {
            before,
            after: self.lan.after.clone(),
        });
        let text = Document {
            mode: self.mode,
            generated: generated(),
            lan,
            rows: &self.rows,
            totals: &totals,
            failures: &self.failures,
            sections: &self.sections,
            calibrate_args: CALIBRATE_ARGS,
            repeats: REPEATS,
            root: &self.paths.root.to_string_lossy(),
        }
        .render();
        let doc = &self.paths.doc;
        let kept = std::fs::read_to_string(doc)
            .map(|old| kept_by_hand(&old).to_owned())
            .unwrap_or_default();
        std::fs::write(doc, text + &kept)
            .with_context(|| format!("cannot write {}", doc.display()))?;
        println!("validate: wrote {}", doc.display());
        println!("{}", totals.contention_line());
        println!("{}", totals.simulation_line());
        let code = if self.failures.is_empty() {
            ExitCode::SUCCESS
        } else {
            for failure in &self.failures {
                eprintln!("validate: FAILED: {failure}");
            }
            ExitCode::from(1)
        };
        println!("{}", totals.validation_line());
        Ok(code)
    }
}

/// When, where and from what commit the document is generated.
fn generated() -> Generated {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0));
    let commit = output_of(Command::new("git").args(["rev-parse", "--short", "HEAD"]))
        .map(|out| out.trim_end().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    let unchanged = Command::new("git")
        .args([
            "diff",
            "--quiet",
            "--",
            ".",
            ":(exclude)docs/validation.md",
            ":(exclude)docs/validation",
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    Generated {
        date: utc_minute(now),
        commit,
        uncommitted: !unchanged,
        cores: cores(),
        load: load_average(),
    }
}

/// The machine's processors busy while the run of `stats` (its `started_unix_s` and
/// `wall_s`) went, in cores; `None` when the file does not say or too few readings fall in.
fn machine_busy_in(busy: &BusyTrace, stats: &str) -> Option<f64> {
    let stats = read_json(Path::new(stats)).ok()?;
    let start = stats.get("started_unix_s")?.as_f64()?;
    let wall = stats.get("wall_s")?.as_f64()?;
    busy.busy_cores(start, start + wall, cores())
}
