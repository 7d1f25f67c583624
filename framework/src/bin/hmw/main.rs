//! The `hmw` command line.

mod calibrate;
mod check;
mod keygen;
mod launch;
mod predict;
mod report;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hmw",
    version,
    about = "Hierarchical multi-cluster master-worker: calibrate, check, keygen, predict, launch, report"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure a plan's system parameters on this machine (workers, LANs, WANs) for predict.
    Calibrate(calibrate::CalibrateArgs),
    /// Check a run configuration and a machine file without starting anything.
    Check(check::CheckArgs),
    /// Write the CA and a certificate per communication manager of a plan's deployment.
    Keygen(keygen::KeygenArgs),
    /// Run every cluster of a plan on this machine (or print each cluster's command).
    Launch(launch::LaunchArgs),
    /// Predict makespan and efficiency of a plan and select workers, before touching a machine.
    Predict(predict::PredictArgs),
    /// Compare a run's statistics with the prediction for its plan: table and chart.
    Report(report::ReportArgs),
}

fn main() -> std::process::ExitCode {
    hmw::runner::init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Calibrate(args) => calibrate::run(args),
        Command::Check(args) => check::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Launch(args) => launch::run(args),
        Command::Report(args) => report::run(args),
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
