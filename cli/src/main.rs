//! The `hmw` command line.

#[cfg(feature = "mpi")]
mod calibrate;
mod capacity;
mod check;
mod clock;
#[cfg(feature = "mpi")]
mod cluster_command;
mod keygen;
#[cfg(feature = "mpi")]
mod launch;
#[cfg(feature = "mpi")]
mod launch_record;
mod layout;
mod live_state;
#[cfg(feature = "mpi")]
mod pipeline;
mod ports;
mod predict;
#[cfg(feature = "mpi")]
mod processes;
#[cfg(feature = "mpi")]
mod remote;
mod report;
#[cfg(feature = "mpi")]
mod restart;
mod row_column;
mod simulate;
#[cfg(feature = "mpi")]
mod startup;
mod top;
#[cfg(feature = "mpi")]
mod wan_probe;
#[cfg(feature = "mpi")]
mod watch;

#[cfg(feature = "mpi")]
use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hmw",
    version,
    about = "Hierarchical multi-cluster master-worker: calibrate, check, keygen, predict, simulate, launch, top, report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure a plan's system parameters on this machine (workers, LANs, WANs) for predict.
    #[cfg(feature = "mpi")]
    Calibrate(calibrate::CalibrateArgs),
    /// Check a run configuration and a machine file without starting anything.
    Check(check::CheckArgs),
    /// Write the CA and a certificate per communication manager of a plan's deployment.
    Keygen(keygen::KeygenArgs),
    /// Run every cluster of a plan on this machine (or print each cluster's command).
    #[cfg(feature = "mpi")]
    Launch(launch::LaunchArgs),
    /// Predict makespan and efficiency of a plan and select workers, before touching a machine.
    Predict(predict::PredictArgs),
    /// Compare a run's statistics with the prediction for its plan: table and chart.
    Report(report::ReportArgs),
    /// Run a plan in virtual time: the real cores against simulated workers, LANs and WANs.
    Simulate(simulate::SimulateArgs),
    /// Watch a run of hmw launch in the terminal: clusters, progress against the model,
    /// links, events.
    Top(top::TopArgs),
    /// One end of a WAN measured by `hmw calibrate`, on its CM's host (started by calibrate).
    #[cfg(feature = "mpi")]
    #[command(hide = true)]
    WanProbe(wan_probe::WanProbeArgs),
}

/// A command-line duration: seconds, a finite number of at least zero.
#[cfg(feature = "mpi")]
pub(crate) fn seconds(text: &str) -> Result<Duration, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(value)
        .map_err(|_| format!("`{text}`: seconds must be a finite number of at least 0"))
}

/// [`seconds`], more than zero.
#[cfg(feature = "mpi")]
pub(crate) fn positive_seconds(text: &str) -> Result<Duration, String> {
    match seconds(text)? {
        Duration::ZERO => Err(format!("`{text}`: seconds must be more than 0")),
        positive => Ok(positive),
    }
}

fn main() -> std::process::ExitCode {
    hmw_core::logging::init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        #[cfg(feature = "mpi")]
        Command::Calibrate(args) => calibrate::run(args),
        Command::Check(args) => check::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Predict(args) => predict::run(args),
        #[cfg(feature = "mpi")]
        Command::Launch(args) => launch::run(args),
        Command::Report(args) => report::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Top(args) => top::run(args),
        #[cfg(feature = "mpi")]
        Command::WanProbe(args) => wan_probe::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The message and its causes on one line, without a backtrace: the errors say what
        // and where (file, line, key, peer).
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(all(test, feature = "mpi"))]
mod tests {
    use super::*;

    fn error_of(args: &[&str]) -> String {
        match Cli::try_parse_from(args) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn durations_on_the_command_line_are_finite_and_not_negative() {
        assert_eq!(seconds("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(seconds("0"), Ok(Duration::ZERO));
        for bad in ["-1", "NaN", "inf", "1e300", "soon"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
        assert!(positive_seconds("0").is_err());
        assert_eq!(positive_seconds("2"), Ok(Duration::from_secs(2)));
        // What used to panic in Duration::from_secs_f64 is a usage error naming the option.
        for (command, option) in [
            (["hmw", "launch", "plan.toml", "--grace-s=-1"], "--grace-s"),
            (["hmw", "launch", "plan.toml", "--grace-s=NaN"], "--grace-s"),
            (
                ["hmw", "calibrate", "plan.toml", "--wan-warmup=-0.5"],
                "--wan-warmup",
            ),
            (
                ["hmw", "calibrate", "plan.toml", "--wan-seconds=inf"],
                "--wan-seconds",
            ),
            (
                ["hmw", "calibrate", "plan.toml", "--wan-seconds=0"],
                "--wan-seconds",
            ),
            (
                ["hmw", "calibrate", "plan.toml", "--lan-seconds=NaN"],
                "--lan-seconds",
            ),
            (
                ["hmw", "calibrate", "plan.toml", "--run-timeout=-3"],
                "--run-timeout",
            ),
        ] {
            let err = error_of(&command);
            assert!(err.contains(option), "{err}");
        }
        // A negative number as a separate argument is a value too, and said to be wrong.
        let err = error_of(&["hmw", "launch", "plan.toml", "--grace-s", "-1"]);
        assert!(
            err.contains("seconds must be a finite number of at least 0"),
            "{err}"
        );
        assert!(Cli::try_parse_from(["hmw", "launch", "plan.toml", "--grace-s", "2.5"]).is_ok());
    }
}
