//! The entry point of an application binary: command line, configuration, roles.
//!
//! ```no_run
//! # use hmw::{Problem, Task, TaskResult, WorkerContext};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Sq(u64);
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Sum(u64);
//! # impl Task for Sq { type Output = Sum; fn execute(self, _: &WorkerContext) -> Sum { Sum(self.0 * self.0) } }
//! # impl TaskResult for Sum { fn join(&mut self, o: Self) { self.0 += o.0 } }
//! # struct Squares { next: u64, sum: u64 }
//! # impl Problem for Squares {
//! #     type Task = Sq;
//! #     fn next_task(&mut self) -> Option<Sq> { (self.next < 100).then(|| { self.next += 1; Sq(self.next) }) }
//! #     fn gather(&mut self, _: u64, r: Sum) { self.sum += r.0 }
//! # }
//! fn main() -> std::process::ExitCode {
//!     hmw::run(
//!         |_settings: &toml::Table| Ok(Squares { next: 0, sum: 0 }),
//!         |squares, _stats| { println!("sum of squares = {}", squares.sum); Ok(()) },
//!     )
//! }
//! ```
//! Every rank starts the same binary; the machine file decides which rank is the master and
//! which are workers. All ranks check the configuration before any starts working: if one
//! finds it bad, none runs.

use std::{path::PathBuf, process::ExitCode, thread};

use anyhow::Context as _;
use clap::Parser;
use serde::de::DeserializeOwned;

use crate::{
    app::{Problem, WorkerContext},
    config::ConfigFile,
    error::RunError,
    machinefile::{MachineFile, Role},
    master::{Master, ProblemSource},
    scheduler::OnDemand,
    stats::RunStats,
    transport::{local::LocalTransport, mpi::MpiTransport, Transport},
    worker::Worker,
};

/// The command line every application binary accepts.
#[derive(Debug, Clone, Parser)]
#[command(
    version,
    about = "An hmw master-worker application: start it under mpirun, one rank \
    per machine-file line, or with --threads to run every rank in this process"
)]
pub struct RunArgs {
    /// Enhanced machine file: one rank per line, the first is the master.
    #[arg(long, short = 'm')]
    pub machinefile: PathBuf,
    /// Run configuration (TOML): the [run] table and the application's [application] table.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Write the run's statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Run every rank of the machine file as a thread of this process, without MPI.
    #[arg(long)]
    pub threads: bool,
}

/// Everything a rank needs before its role starts; built and checked on every rank.
struct Prepared<P> {
    config: ConfigFile,
    machines: MachineFile,
    /// The problem, on the master only.
    problem: Option<P>,
}

fn prepare<P, S>(
    args: &RunArgs,
    rank: usize,
    size: Option<usize>,
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
) -> anyhow::Result<Prepared<P>>
where
    S: DeserializeOwned,
{
    let config = match &args.config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::defaults(),
    };
    let machines = MachineFile::load(&args.machinefile)?;
    if let Some(size) = size {
        if size != machines.rank_count() {
            anyhow::bail!(
                "{}: the machine file has {} rank lines but the MPI job has {} ranks: start it \
                 with mpirun -np {}",
                machines.path.display(),
                machines.rank_count(),
                size,
                machines.rank_count()
            );
        }
    }
    if let Some(cm) = machines.ranks.iter().find(|r| r.cm.is_some()) {
        anyhow::bail!(
            "{}:{}: communication managers join clusters in a multi-cluster run, which this \
             command does not start; remove the annotation to run one cluster",
            machines.path.display(),
            cm.line_no
        );
    }
    if machines.worker_ranks().is_empty() {
        anyhow::bail!("{}: no worker line", machines.path.display());
    }
    let settings: S = config.application()?;
    let problem = if rank == 0 {
        Some(make_problem(&settings).context("cannot set the problem up")?)
    } else {
        None
    };
    Ok(Prepared {
        config,
        machines,
        problem,
    })
}

/// Run an application: parse the command line, check the configuration on every rank, and
/// play this rank's role. On the master, `finish` receives the problem with every result
/// gathered, and the statistics; its error makes the run fail.
pub fn run<P, S>(
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> ExitCode
where
    P: Problem,
    S: DeserializeOwned,
{
    init_logging();
    let args = RunArgs::parse();
    if args.threads {
        return report(run_threads(&args, make_problem, finish));
    }
    let Some(mut transport) = MpiTransport::init() else {
        eprintln!("error: MPI was already initialised in this process");
        return ExitCode::from(2);
    };
    let rank = transport.rank();
    let prepared = prepare(&args, rank, Some(transport.size()), make_problem);
    let (all_ok, master_ok) = transport.all_agree(prepared.is_ok(), rank == 0);
    let prepared = match prepared {
        Ok(prepared) if all_ok => prepared,
        Ok(_) => return ExitCode::from(2), // another rank reports why
        Err(e) => {
            // Every rank usually fails the same way: the master speaks for all.
            if rank == 0 || master_ok {
                eprintln!("error (rank {rank}): {e:#}");
            }
            return ExitCode::from(2);
        }
    };
    let result = play_role(&mut transport, &args, prepared, finish);
    if let Err(e) = &result {
        eprintln!("error (rank {rank}): {e:#}");
        // A failed rank would leave the others waiting: end the whole job.
        transport.abort(1);
    }
    ExitCode::SUCCESS
}

/// This rank's part of the run.
fn play_role<P: Problem>(
    transport: &mut dyn Transport,
    args: &RunArgs,
    prepared: Prepared<P>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let Prepared {
        config,
        machines,
        problem,
    } = prepared;
    let rank = transport.rank();
    match (machines.role(rank), problem) {
        (Role::Master, Some(problem)) => {
            let master = Master::new(
                transport,
                &machines,
                config.run.clone(),
                Box::new(OnDemand),
                ProblemSource(problem),
            );
            let (stats, ProblemSource(problem)) = master.run()?;
            if config.run.statistics_interval > 0.0 {
                print!("{}", stats.summary());
            }
            if let Some(path) = &args.stats_json {
                let json = serde_json::to_string_pretty(&stats)?;
                std::fs::write(path, json)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            finish(problem, &stats)
        }
        (Role::Worker, _) => {
            let context = WorkerContext {
                rank,
                line: machines.ranks[rank].clone(),
            };
            Worker::<P::Task>::new(transport, context, config.run.worker_buffers).run()?;
            Ok(())
        }
        (role, _) => Err(RunError::Setup(format!("rank {rank}: no {role} in this run")).into()),
    }
}

/// `--threads`: every rank of the machine file as a thread of this process.
fn run_threads<P, S>(
    args: &RunArgs,
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    P: Problem,
    S: DeserializeOwned,
{
    let prepared = prepare(args, 0, None, make_problem)?;
    let mut transports = LocalTransport::cluster(prepared.machines.rank_count()).into_iter();
    let mut master_transport = transports.next().expect("a machine file has a master");
    let workers: Vec<_> = transports
        .map(|mut transport| {
            let rank = transport.rank();
            let line = prepared.machines.ranks[rank].clone();
            let buffers = prepared.config.run.worker_buffers;
            thread::Builder::new()
                .name(format!("rank-{rank}"))
                .spawn(move || {
                    let context = WorkerContext { rank, line };
                    Worker::<P::Task>::new(&mut transport, context, buffers).run()
                })
                .context("cannot start a worker thread")
        })
        .collect::<anyhow::Result<_>>()?;
    play_role(&mut master_transport, args, prepared, finish)?;
    for worker in workers {
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("a worker thread panicked"))??;
    }
    Ok(())
}

fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr through `tracing`; `HMW_LOG` sets the filter (default `warn`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("HMW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
