//! The fault suite (`scripts/faults.sh`, `cargo xtask faults [--quick]`): one testbed kept up
//! for every run of `configs/testbed/faults.toml` (three clusters, real computation, one
//! through Slurm); a run without faults first, then one run per fault, each struck once 30 %
//! of its tasks are in; the last line sums them up. `--quick` runs the faults of
//! [`scenario::QUICK`] on a plan of half the tasks, without the run without faults: the check
//! `scripts/test.sh` runs.
//!
//! - `scenario`: the faults and how a faulted run is judged;
//! - `launch`: `hmw launch` in the background, its lines timed.

mod launch;
mod scenario;

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, ExitCode},
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};

use crate::validate::{process::output_of, testbed::Testbed};
use launch::{value, Launch};
use scenario::{Fault, Outcome, Strike};

/// The share of the tasks in when the fault strikes.
const STRIKE_AT: f64 = 0.3;

/// How long a launch may take before it is taken for stuck.
const LIMIT: Duration = Duration::from_secs(600);

/// Where everything is.
struct Suite {
    /// The release binaries.
    bin: PathBuf,
    plan: PathBuf,
    work: PathBuf,
    testbed: Testbed,
    tasks: u64,
}

/// `xtask faults [--quick]`.
pub(crate) fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("faults: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<bool> {
    let quick = match args {
        [] => false,
        [flag] if flag == "--quick" => true,
        _ => bail!("usage: xtask faults [--quick]"),
    };
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| "target".into(), PathBuf::from);
    let bin = fs::canonicalize(target.join("release"))?;
    let work = fs::canonicalize(&target)?.join(if quick { "faults/quick" } else { "faults/full" });
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work)?;
    let mut plan = fs::canonicalize("configs/testbed/faults.toml")?;
    if quick {
        // Half the tasks: each run about half as long.
        let text = fs::read_to_string(&plan)?.replace("tasks = 240", "tasks = 120");
        plan = work.join("faults-quick.toml");
        fs::write(&plan, text)?;
    }
    let testbed = Testbed::new(
        bin.join("hmw-testbed"),
        format!("flt{}", std::process::id() % 100_000),
        work.clone(),
    );
    testbed.tear_down_on_signals()?;
    if !testbed.up(&plan.to_string_lossy(), &work.join("testbed-up.log"))? {
        bail!("the testbed did not come up");
    }
    let predicted = predicted_s(&bin, &plan)?;
    let tasks = application_tasks(&plan)?;
    let suite = Suite {
        bin,
        plan,
        work,
        testbed,
        tasks,
    };
    // The full suite first runs the plan without faults: every faulted run's answer is set
    // against it.
    let baseline = if quick {
        None
    } else {
        let baseline = suite.baseline()?;
        println!(
            "faults: no fault: makespan {:.1} s (predicted {predicted:.1} s), verified={}",
            baseline.makespan_s, baseline.verified
        );
        Some(baseline)
    };
    let faults: Vec<Fault> = scenario::ALL
        .into_iter()
        .filter(|f| !quick || scenario::QUICK.contains(&f.name))
        .collect();
    let mut outcomes = Vec::new();
    for fault in faults {
        let outcome = suite.strike(fault)?;
        // A resumed run's restart as first counted (with the first run's startup in place of
        // the resumed run's) stays printed beside the one judged.
        let before = outcome
            .restart_with_first_startup_s
            .map_or(String::new(), |s| {
                format!(" (with the first run's startup, as counted before: {s:.1} s)")
            });
        println!(
            "faults: {}: survived={} verified={} missing={} duplicates={} makespan {:.1} s, \
             restart {:.1} s{before}, within bound {}",
            outcome.name,
            outcome.survived,
            outcome.verified,
            outcome.missing,
            outcome.duplicates,
            outcome.makespan_s,
            outcome.restart_s,
            outcome.within_bound(predicted)
        );
        outcomes.push(outcome);
    }
    let passed = baseline.is_none_or(|b| b.verified) && scenario::passed(&outcomes, predicted);
    println!("{}", scenario::summary(&outcomes, predicted));
    Ok(passed)
}

/// The plan's predicted worst-case makespan (`hmw predict --json`).
fn predicted_s(bin: &Path, plan: &Path) -> Result<f64> {
    let json = output_of(
        Command::new(bin.join("hmw"))
            .arg("predict")
            .arg("--json")
            .arg(plan),
    )
    .context("hmw predict failed")?;
    let prediction: serde_json::Value = serde_json::from_str(&json)?;
    prediction["run"]["t_ex_worst"]
        .as_f64()
        .context("no run.t_ex_worst in hmw predict --json")
}

/// The plan's `[application] tasks`.
fn application_tasks(plan: &Path) -> Result<u64> {
    let plan: toml::Table = toml::from_str(&fs::read_to_string(plan)?)?;
    plan.get("application")
        .and_then(|a| a.get("tasks"))
        .and_then(toml::Value::as_integer)
        .and_then(|t| u64::try_from(t).ok())
        .context("no [application] tasks in the plan")
}

impl Suite {
    /// `hmw launch` of the plan into `work` on the launching machine.
    fn launch(&self, work: &Path, log: &str) -> Result<Launch> {
        let mut command = self
            .testbed
            .on_host(true, &self.bin.join("hmw").to_string_lossy());
        command
            .arg("launch")
            .arg(&self.plan)
            .arg("--work-dir")
            .arg(work)
            .arg("--binary")
            .arg(self.bin.join("hmw-synthetic"));
        Launch::start(&mut command, &self.work.join(log))
    }

    /// The run without faults.
    fn baseline(&self) -> Result<Outcome> {
        let work = self.work.join("no-fault");
        let mut launch = self.launch(&work, "no-fault.log")?;
        let status = launch.wait(LIMIT)?;
        Ok(judged(
            "no_fault",
            &launch,
            status.success(),
            &clock(&work)?,
        ))
    }

    /// One run struck by `fault`.
    fn strike(&self, fault: Fault) -> Result<Outcome> {
        let work = self.work.join(fault.name);
        let launched_unix = unix_now();
        let mut launch = self.launch(&work, &format!("{}.log", fault.name))?;
        let at = (self.tasks as f64 * STRIKE_AT).ceil() as u64;
        if !launch.wait_for_tasks(at, LIMIT) {
            bail!(
                "{}: the run ended or stalled before {at} tasks were in",
                fault.name
            );
        }
        let struck = Instant::now();
        let struck_unix = unix_now();
        let cut = self.inject(fault, &work)?;
        let (mut last, restarted) = if fault.resumes() {
            launch.wait(LIMIT)?;
            let resumed = Instant::now();
            let mut command = self
                .testbed
                .on_host(true, &self.bin.join("hmw").to_string_lossy());
            command.arg("launch").arg("--resume").arg(&work);
            let log = format!("{}-resumed.log", fault.name);
            (
                Launch::start(&mut command, &self.work.join(log))?,
                Some(resumed),
            )
        } else {
            (launch, None)
        };
        let status = last.wait(LIMIT)?;
        if let Some(cut) = cut {
            let _ = cut.join();
        }
        self.revive(fault)?;
        let restarted = restarted.or_else(|| last.line_after(struck, "started again"));
        let clock = clock(&work)?;
        let mut outcome = judged(fault.name, &last, status.success(), &clock);
        // What starting the clusters took in the first run, before its clock started.
        let startup_s = clock.first_start - launched_unix;
        let restart_with_first_startup_s =
            restarted.map_or(0.0, |at| at.duration_since(struck).as_secs_f64()) + startup_s;
        if fault.resumes() {
            // The resumed launch cleans up the killed run on every host, stages and starts
            // again: all of it until its clock starts is the restart.
            outcome.restart_s = clock.last_start - struck_unix;
            outcome.restart_with_first_startup_s = Some(restart_with_first_startup_s);
        } else {
            outcome.restart_s = restart_with_first_startup_s;
        }
        outcome.fault_s = fault.duration_s();
        Ok(outcome)
    }

    /// Strikes: a LAN cut runs in a thread of its own (it returns once the port is up again).
    fn inject(&self, fault: Fault, work: &Path) -> Result<Option<thread::JoinHandle<()>>> {
        let tool = |args: &[&str]| -> Result<()> {
            let mut command = self.testbed.tool();
            let output = command.args(args).output()?;
            if !output.status.success() {
                bail!(
                    "hmw-testbed {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            Ok(())
        };
        match fault.strike {
            Strike::KillHost { host, wipe } => {
                let mut args = vec!["kill-host", host];
                if wipe {
                    args.push("--wipe");
                }
                tool(&args)?;
            }
            Strike::KillRank { host } => tool(&["kill-host", host, "--only", "hmw-synthetic"])?,
            Strike::CutLan { host, seconds } => {
                let mut command = self.testbed.tool();
                command.args(["cut-lan", host, &seconds.to_string()]);
                return Ok(Some(thread::spawn(move || {
                    let _ = command.output();
                })));
            }
            Strike::KillLauncher => kill_launcher(work)?,
            Strike::Power => {
                kill_launcher(work)?;
                let hosts = hosts_of(&self.plan)?;
                let kills: Vec<_> = hosts
                    .iter()
                    .map(|host| {
                        let mut command = self.testbed.tool();
                        command.args(["kill-host", host]);
                        thread::spawn(move || command.output())
                    })
                    .collect();
                for kill in kills {
                    let _ = kill.join();
                }
                self.cut_to_synced(work)?;
                // The power is back: the hosts start again, with nothing of the run on them.
                for host in &hosts {
                    tool(&["revive", host])?;
                }
            }
        }
        Ok(None)
    }

    /// After a power loss: the launcher's copy of the journal cut to what the master had
    /// synced (its `journal.hmwj.synced`, in its run folder on its host).
    fn cut_to_synced(&self, work: &Path) -> Result<()> {
        let state: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(work.join("launch-state.json"))?)?;
        let main = &state["clusters"][0];
        let (host, dir) = (
            main["head_host"]
                .as_str()
                .context("no head in the launch state")?,
            main["dir"]
                .as_str()
                .context("no run folder in the launch state")?,
        );
        let synced = output_of(
            self.testbed
                .exec(host, "cat")
                .arg(format!("{dir}/journal.hmwj.synced")),
        )
        .context("cannot read the master's synced length")?;
        let synced: u64 = synced.trim().parse()?;
        let journal = work.join("journal.hmwj");
        let file = fs::OpenOptions::new().write(true).open(&journal)?;
        if file.metadata()?.len() > synced {
            file.set_len(synced)?;
        }
        Ok(())
    }

    /// The host a fault killed, back for the next run.
    fn revive(&self, fault: Fault) -> Result<()> {
        if let Strike::KillHost { host, .. } = fault.strike {
            let output = self.testbed.tool().args(["revive", host]).output()?;
            if !output.status.success() {
                bail!(
                    "cannot revive {host}: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
        }
        Ok(())
    }
}

/// The launcher of the run in `work` killed with SIGKILL.
fn kill_launcher(work: &Path) -> Result<()> {
    let pattern = format!("launch .*--work-dir {}", work.display());
    let status = Command::new("pkill")
        .args(["-KILL", "-f", &pattern])
        .status()?;
    if !status.success() {
        bail!("no launcher of {} to kill", work.display());
    }
    Ok(())
}

/// Every host of the plan's clusters.
fn hosts_of(plan: &Path) -> Result<Vec<String>> {
    let plan: toml::Table = toml::from_str(&fs::read_to_string(plan)?)?;
    let mut hosts: Vec<String> = plan
        .get("cluster")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("machines")?.as_array())
        .flatten()
        .filter_map(|m| Some(m.get("host")?.as_str()?.to_owned()))
        .collect();
    hosts.dedup();
    Ok(hosts)
}

/// A run's clock, in seconds since the Unix epoch, from the main master's statistics and its
/// journal's starts.
struct RunClock {
    /// The first launch's clock start.
    first_start: f64,
    /// The last launch's (a resume's) clock start.
    last_start: f64,
    /// The last result.
    end: f64,
}

fn clock(work: &Path) -> Result<RunClock> {
    let stats = main_stats(work)?;
    let last_start = stats["started_unix_s"]
        .as_f64()
        .context("no started_unix_s")?;
    Ok(RunClock {
        first_start: stats["journal"]["started_unix_s"][0]
            .as_f64()
            .unwrap_or(last_start),
        last_start,
        end: last_start + stats["wall_s"].as_f64().context("no wall_s")?,
    })
}

/// The main cluster's statistics of a run.
fn main_stats(work: &Path) -> Result<serde_json::Value> {
    let path = work.join("lyon.stats.json");
    Ok(serde_json::from_str(
        &fs::read_to_string(&path).with_context(|| format!("no {}", path.display()))?,
    )?)
}

/// A run's outcome from its launch's last lines.
fn judged(name: &'static str, launch: &Launch, ended_well: bool, clock: &RunClock) -> Outcome {
    let line = launch.last_line("synthetic ").unwrap_or_default();
    let count = |key| value(&line, key).and_then(|v| v.parse().ok());
    Outcome {
        name,
        survived: ended_well,
        verified: value(&line, "verified") == Some("true"),
        missing: count("missing").unwrap_or(0),
        duplicates: count("duplicates").unwrap_or(0),
        makespan_s: clock.end - clock.first_start,
        restart_s: 0.0,
        restart_with_first_startup_s: None,
        fault_s: 0.0,
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
