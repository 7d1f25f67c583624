//! The entry point of an application binary: command line, configuration, roles.
//!
//! ```no_run
//! # use hmw::{Problem, Task, TaskResult, WorkerContext};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Sq(u64);
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Sum(u64);
//! # impl Task for Sq { type Output = Sum; fn execute(self, _: &WorkerContext) -> Sum { Sum(self.0 * self.0) } }
//! # impl TaskResult for Sum { fn join(&mut self, o: Self) -> Result<(), Self> { self.0 += o.0; Ok(()) } }
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

use std::{path::PathBuf, process::ExitCode, sync::Arc, thread};

use anyhow::Context as _;
use clap::Parser;
use serde::de::DeserializeOwned;

use crate::{
    drivers::{
        cm,
        master::{Master, ProblemSource},
        submaster,
        worker::Worker,
    },
    error::RunError,
    journal::{self, JournalArgs},
};
use hmw_core::{
    app::{Problem, Splitter, WorkerContext},
    config::{ConfigFile, RunConfig},
    machinefile::{Facing, MachineFile, Role, MASTER},
    protocol::{decode, encode},
    roles::SplitSource,
    scheduler::Scheduler,
    stats::RunStats,
    CoreError,
};
use hmw_transport::{local::LocalTransport, Transport, TransportError};

/// The command line every application binary accepts.
#[derive(Debug, Clone, Parser)]
#[command(
    version,
    about = "An hmw master-worker application: start it under mpirun, one rank \
    per machine-file line, or with --threads to run every rank in this process"
)]
pub(crate) struct RunArgs {
    /// Enhanced machine file: one rank per line, the first is the master.
    #[arg(long, short = 'm')]
    pub machinefile: PathBuf,
    /// Run configuration (TOML): the `[run]` table and the application's `[application]` table.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Write the run's statistics as JSON to this file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// On the master of this cluster: append its live feed, a line of JSON per progress
    /// line, to this file (`hmw launch` builds its live state file from them).
    #[arg(long)]
    pub live_json: Option<PathBuf>,
    /// Run every rank of the machine file as a thread of this process, without MPI.
    #[arg(long)]
    pub threads: bool,
    /// Hand out only the first N tasks (a calibration run; the application's final check is
    /// skipped). Overrides [run] max_tasks.
    #[arg(long)]
    pub max_tasks: Option<u64>,
    /// Check that each rank runs on its machine-file line's host (by its own host name and
    /// addresses) and stop the cluster when one does not: on real hosts (`hmw launch` gives
    /// it); off on one machine, where the file's host names are labels.
    #[arg(long)]
    pub check_placement: bool,
    /// The main master journals every result it gathers to this file, synced in groups
    /// (`[run] journal_sync_s`, `journal_sync_bytes`); a file there is replaced, unless
    /// `--resume`. `hmw launch` gives it.
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
    /// With `--journal`: gather what the journal holds into the problem, hand out only the
    /// tasks it lacks, and go on appending to it. Refused, naming what differs, when the
    /// application's parameters, this binary or a `--fingerprint` are not the journal's.
    #[arg(long, requires = "journal")]
    pub resume: bool,
    /// A fingerprint the journal records and a resume must find unchanged: NAME=VALUE
    /// (`hmw launch` gives `plan=` the plan file's SHA-256).
    #[arg(long = "fingerprint", value_name = "NAME=VALUE", value_parser = parse_fingerprint)]
    pub fingerprints: Vec<(String, String)>,
}

impl RunArgs {
    /// What the command line asks of the main master's journal.
    fn journal(&self) -> Option<JournalArgs> {
        self.journal.as_ref().map(|path| JournalArgs {
            path: path.clone(),
            resume: self.resume,
            fingerprints: self.fingerprints.iter().cloned().collect(),
        })
    }
}

fn parse_fingerprint(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("{text:?}: expected NAME=VALUE")),
    }
}

/// A splitter for one rank, made from the application's settings.
pub(crate) type SplitterOf<P> = Box<dyn Splitter<<P as Problem>::Task>>;

/// How an application makes its splitter from its settings.
pub(crate) type MakeSplitter<'a, P, S> = &'a dyn Fn(&S) -> anyhow::Result<SplitterOf<P>>;

/// Everything a rank needs before its role starts; built and checked on every rank.
struct Prepared<P: Problem, S> {
    config: ConfigFile,
    machines: MachineFile,
    settings: S,
    /// The problem, on the main master only.
    problem: Option<P>,
    /// A splitter for each of the process's ranks that uses one (a sub-master, a CM facing a
    /// master), in rank order, when the application has one.
    // Only an MPI process plays its roles with them: in-process clusters make one per rank.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    splitters: Vec<SplitterOf<P>>,
}

/// Whether `rank` uses the application's splitter: a sub-master splits the tasks that reach
/// it (and so does the main master of a run with `[run] split_tasks`), a CM facing a master
/// shapes the tasks that leave.
fn uses_splitter(machines: &MachineFile, config: &ConfigFile, rank: usize) -> bool {
    match machines.role(rank) {
        Role::Master => machines.upstream().is_some() || config.run.split_tasks,
        Role::CommunicationManager => machines.ranks[rank]
            .cm
            .as_ref()
            .is_some_and(|cm| cm.facing == Facing::Master),
        Role::Worker => false,
    }
}

/// Read and check the configuration of MPI process `process` of a job of `processes` (or of
/// a cluster in threads: `0`, `None`), and make what its ranks need.
fn prepare<P, S>(
    args: &RunArgs,
    process: usize,
    processes: Option<usize>,
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    make_splitter: Option<MakeSplitter<P, S>>,
) -> anyhow::Result<Prepared<P, S>>
where
    P: Problem,
    S: DeserializeOwned,
{
    let mut config = match &args.config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::defaults(),
    };
    if args.max_tasks.is_some() {
        config.run.max_tasks = args.max_tasks;
    }
    config.run.live_json.clone_from(&args.live_json);
    let machines = MachineFile::load(&args.machinefile)?;
    if let Some(size) = processes {
        if size != machines.process_count() {
            let lines = match machines.process_count() {
                p if p == machines.rank_count() => format!("{p} rank lines"),
                p => format!(
                    "{} rank lines in {p} processes (CMs naming one process= share one)",
                    machines.rank_count()
                ),
            };
            anyhow::bail!(
                "{}: the machine file has {lines} but the MPI job has {size} processes: start \
                 it with mpirun -np {}",
                machines.path.display(),
                machines.process_count()
            );
        }
    }
    let ranks: Vec<usize> = match machines.processes.shared_ranks(process) {
        Some(ranks) => ranks.to_vec(),
        None => vec![machines.processes.first_rank(process)],
    };
    let rank = ranks[0];
    if machines.worker_ranks().is_empty() && machines.ranks.iter().all(|r| r.cm.is_none()) {
        anyhow::bail!("{}: no worker line", machines.path.display());
    }
    if config.run.load_balance {
        for rank in machines.master_facing_cms() {
            let line = &machines.ranks[rank];
            if line.annotations.max_tasks.is_none() {
                anyhow::bail!(
                    "{}:{}: [run] load_balance = true bounds each cluster's share, but this CM \
                     has no max_tasks= (hmw launch writes it from the plan's model)",
                    machines.path.display(),
                    line.line_no
                );
            }
        }
    }
    let settings: S = config.application()?;
    let in_application = || format!("{}: [application]", config.path.display());
    let problem = if rank == 0 && machines.upstream().is_none() {
        Some(
            make_problem(&settings)
                .with_context(|| format!("{}: cannot set the problem up", in_application()))?,
        )
    } else {
        None
    };
    let mut splitters = Vec::new();
    if let Some(make) = make_splitter {
        for _ in ranks
            .iter()
            .filter(|&&r| uses_splitter(&machines, &config, r))
        {
            splitters
                .push(make(&settings).with_context(|| {
                    format!("{}: cannot set the splitter up", in_application())
                })?);
        }
    }
    Ok(Prepared {
        config,
        machines,
        settings,
        problem,
        splitters,
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
    run_app(make_problem, None, None, finish)
}

/// [`run`] for an application with a [`Splitter`]: `make_splitter` makes one, from the
/// application's settings, on each sub-master and each communication manager facing a
/// master.
pub fn run_split<P, S, Sp>(
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    make_splitter: impl Fn(&S) -> anyhow::Result<Sp>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> ExitCode
where
    P: Problem,
    S: DeserializeOwned,
    Sp: Splitter<P::Task>,
{
    let make =
        |settings: &S| -> anyhow::Result<SplitterOf<P>> { Ok(Box::new(make_splitter(settings)?)) };
    run_app(make_problem, Some(&make), None, finish)
}

/// [`run`] and [`run_split`] with an optional scheduler factory: the entry of
/// [`crate::App`].
pub(crate) fn run_app<P, S>(
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    make_splitter: Option<MakeSplitter<P, S>>,
    make_scheduler: Option<MakeScheduler>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> ExitCode
where
    P: Problem,
    S: DeserializeOwned,
{
    hmw_core::logging::init_logging();
    let args = RunArgs::parse();
    if args.threads {
        return report(run_threads(
            &args,
            make_problem,
            make_splitter,
            make_scheduler,
            finish,
        ));
    }
    run_mpi(&args, make_problem, make_splitter, make_scheduler, finish)
}

/// Without MPI only `--threads` runs.
#[cfg(not(feature = "mpi"))]
fn run_mpi<P, S>(
    _args: &RunArgs,
    _make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    _make_splitter: Option<MakeSplitter<P, S>>,
    _make_scheduler: Option<MakeScheduler>,
    _finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> ExitCode
where
    P: Problem,
    S: DeserializeOwned,
{
    eprintln!("error: this build of hmw has no MPI (feature `mpi`): run with --threads");
    ExitCode::from(2)
}

/// This rank of an MPI job: every rank checks its configuration, they agree, then each plays
/// its role.
#[cfg(feature = "mpi")]
fn run_mpi<P, S>(
    args: &RunArgs,
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    make_splitter: Option<MakeSplitter<P, S>>,
    make_scheduler: Option<MakeScheduler>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> ExitCode
where
    P: Problem,
    S: DeserializeOwned,
{
    use hmw_transport::mpi::MpiTransport;

    let Some(mut transport) = MpiTransport::init() else {
        eprintln!("error: MPI was already initialised in this process");
        return ExitCode::from(2);
    };
    // The job's ranks are processes; a process holds one rank of the machine file, or
    // several CMs facing the master (`hmw_core::machinefile::ProcessMap`).
    let process = transport.rank();
    let observed = placement::observed_host();
    let prepared = prepare(
        args,
        process,
        Some(transport.size()),
        make_problem,
        make_splitter,
    )
    .and_then(|prepared| {
        let rank = prepared.machines.processes.first_rank(process);
        let line = &prepared.machines.ranks[rank];
        if args.check_placement && !placement::is_this_host(&line.host, &observed) {
            anyhow::bail!(
                "{}",
                placement::misplaced(rank, line.line_no, &line.host, &observed)
            );
        }
        Ok(prepared)
    });
    let (all_ok, master_ok) = transport.all_agree(prepared.is_ok(), process == 0);
    let prepared = match prepared {
        Ok(prepared) if all_ok => prepared,
        Ok(_) => return ExitCode::from(2), // another rank reports why
        Err(e) => {
            // Every rank usually fails the same way: the master speaks for all.
            if process == 0 || master_ok {
                eprintln!("error (MPI rank {process}): {e:#}");
            }
            return ExitCode::from(2);
        }
    };
    let Prepared {
        config,
        machines,
        problem,
        mut splitters,
        ..
    } = prepared;
    let rank = machines.processes.first_rank(process);
    let hosts = transport.gather_hosts(&observed).unwrap_or_default();
    let placement: Vec<RankPlacement> = if hosts.is_empty() {
        Vec::new()
    } else {
        machines
            .ranks
            .iter()
            .enumerate()
            .map(|(rank, line)| RankPlacement {
                rank,
                line_host: line.host.clone(),
                observed_host: hosts[machines.processes.process_of(rank)].clone(),
            })
            .collect()
    };
    let processes = &machines.processes;
    let result = match processes.shared_ranks(process) {
        Some(ranks) => {
            let mut outbounds: Vec<_> = splitters
                .into_iter()
                .map(outbound_of::<P>)
                .map(Some)
                .collect();
            outbounds.resize_with(ranks.len(), || None);
            cm::run_shared(&mut transport, &machines, &config.cm, ranks, outbounds)
                .map(|()| Outcome::Done)
        }
        None => {
            let mut by_process;
            let transport: &mut dyn Transport = if processes.is_one_rank_each() {
                &mut transport
            } else {
                by_process = ByProcess::new(&mut transport, processes);
                &mut by_process
            };
            play_with(
                transport,
                &machines,
                &config,
                problem,
                splitters.pop(),
                make_scheduler.as_ref(),
                args.journal().as_ref(),
            )
        }
    }
    .map(|outcome| with_placement(outcome, placement))
    .map_err(anyhow::Error::from)
    .and_then(|outcome| conclude(outcome, &config, args, finish));
    if let Err(e) = &result {
        eprintln!("error (rank {rank}): {e:#}");
        // A failed rank would leave the others waiting: end the whole job.
        transport.abort(1);
    }
    ExitCode::SUCCESS
}

#[cfg(feature = "mpi")]
use hmw_core::stats::RankPlacement;
#[cfg(feature = "mpi")]
use hmw_transport::shared::ByProcess;

use crate::placement;

/// The outcome of a cluster's rank 0 with where each of its ranks ran.
#[cfg(feature = "mpi")]
fn with_placement<P>(outcome: Outcome<P>, placement: Vec<RankPlacement>) -> Outcome<P> {
    match outcome {
        Outcome::Master { problem, mut stats } => {
            stats.placement = placement;
            Outcome::Master { problem, stats }
        }
        Outcome::SubMaster { mut stats } => {
            stats.placement = placement;
            Outcome::SubMaster { stats }
        }
        Outcome::Done => Outcome::Done,
    }
}

/// What playing a rank's role gave.
pub(crate) enum Outcome<P> {
    /// The main master: the problem with every result gathered, and the statistics.
    Master {
        /// The problem with every result gathered.
        problem: P,
        /// The run's statistics.
        stats: RunStats,
    },
    /// A sub-master: its cluster's statistics (also sent upstream).
    SubMaster {
        /// Its cluster's statistics.
        stats: RunStats,
    },
    /// A worker or a communication manager.
    Done,
}

/// Makes the scheduler of a master or sub-master, from the run's configuration.
pub(crate) type MakeScheduler = Arc<dyn Fn(&RunConfig) -> Box<dyn Scheduler> + Send + Sync>;

/// Play this rank's role in one cluster: `problem` is given to the main master only (rank 0
/// of a cluster without upstream communication manager), `splitter` to the ranks that use
/// the application's splitter (a sub-master, a CM facing a master). Masters and sub-masters
/// schedule with `make_scheduler`'s schedulers, or by the configuration's `[run] scheduler`
/// when `None`. The main master keeps `journal` when given.
pub(crate) fn play_with<P: Problem>(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    config: &ConfigFile,
    problem: Option<P>,
    splitter: Option<SplitterOf<P>>,
    make_scheduler: Option<&MakeScheduler>,
    journal: Option<&JournalArgs>,
) -> Result<Outcome<P>, RunError> {
    let rank = transport.rank();
    let scheduler = match make_scheduler {
        Some(make) => make(&config.run),
        None => config.run.configured_scheduler(),
    };
    match (machines.role(rank), problem) {
        (Role::Master, Some(problem)) if config.run.split_tasks && splitter.is_some() => {
            let splitter = splitter.expect("checked");
            let source = SplitSource::new(problem, splitter);
            let master = Master::new(transport, machines, config.run.clone(), scheduler, source)?;
            let (stats, source) = master.run()?;
            let problem = source.into_problem();
            Ok(Outcome::Master { problem, stats })
        }
        (Role::Master, Some(problem)) if journal.is_some() => {
            let journal = journal.expect("checked");
            let source = journal::open(journal, config, ProblemSource::new(problem))?;
            let master = Master::new(transport, machines, config.run.clone(), scheduler, source)?;
            let (mut stats, source) = master.run()?;
            let (source, journal) = source.close();
            if let Some(failed) = &journal.failed {
                eprintln!("warning: {failed}; the journal stops there");
            }
            stats.journal = Some(journal);
            let problem = source.into_inner().into_problem();
            Ok(Outcome::Master { problem, stats })
        }
        (Role::Master, Some(problem)) => {
            let master = Master::new(
                transport,
                machines,
                config.run.clone(),
                scheduler,
                ProblemSource::new(problem),
            )?;
            let (stats, source) = master.run()?;
            let problem = source.into_problem();
            Ok(Outcome::Master { problem, stats })
        }
        (Role::Master, None) => {
            let stats =
                submaster::run::<P::Task>(transport, machines, config, scheduler, splitter)?;
            Ok(Outcome::SubMaster { stats })
        }
        (Role::Worker, _) => {
            let context = WorkerContext::of(machines, rank);
            Worker::<P::Task>::new(transport, context, config.run.worker_buffers)
                .repeating(config.run.repeat_tasks)
                .run()?;
            Ok(Outcome::Done)
        }
        (Role::CommunicationManager, _) => {
            let outbound = splitter.map(outbound_of::<P>);
            cm::run(transport, machines, &config.cm, outbound, None)?;
            Ok(Outcome::Done)
        }
    }
}

/// How a CM facing a master shapes the tasks it forwards: with the application's splitter.
fn outbound_of<P: Problem>(mut splitter: SplitterOf<P>) -> cm::Outbound {
    Box::new(move |body: &[u8]| {
        let task: P::Task = decode(body, "task").map_err(CoreError::decoding(MASTER))?;
        Ok(encode(&splitter.outbound(task)))
    })
}

/// Play a whole cluster in this process: rank 0 on this thread, every other rank on a thread
/// of its own, over the in-process transport. `make_splitter` gives a splitter to each rank
/// that uses one (see [`play_with`]). When a rank fails, the whole cluster stops, and the error
/// returned is the one that stopped it.
#[cfg(test)]
pub(crate) fn play_in_threads<P: Problem>(
    machines: &MachineFile,
    config: &ConfigFile,
    problem: Option<P>,
    make_splitter: Option<&dyn Fn() -> anyhow::Result<SplitterOf<P>>>,
) -> Result<Outcome<P>, RunError> {
    play_in_threads_with(machines, config, problem, make_splitter, None, None)
}

/// [`play_in_threads`], masters and sub-masters scheduling with `make_scheduler`'s
/// schedulers (the configured policy when `None`), the main master keeping `journal` when
/// given.
pub(crate) fn play_in_threads_with<P: Problem>(
    machines: &MachineFile,
    config: &ConfigFile,
    problem: Option<P>,
    make_splitter: Option<&dyn Fn() -> anyhow::Result<SplitterOf<P>>>,
    make_scheduler: Option<MakeScheduler>,
    journal: Option<&JournalArgs>,
) -> Result<Outcome<P>, RunError> {
    let mut splitters = Vec::with_capacity(machines.rank_count());
    for rank in 0..machines.rank_count() {
        splitters.push(match make_splitter {
            Some(make) if uses_splitter(machines, config, rank) => Some(
                make()
                    .map_err(|e| RunError::setup(format!("cannot set the splitter up: {e:#}")))?,
            ),
            _ => None,
        });
    }
    let mut splitters = splitters.into_iter();
    let mut transports = LocalTransport::cluster(machines.rank_count()).into_iter();
    let mut first = transports.next().expect("a machine file has a master");
    let first_splitter = splitters.next().flatten();
    let others: Vec<_> = transports
        .zip(splitters)
        .map(|(mut transport, splitter)| {
            let (machines, config) = (machines.clone(), config.clone());
            let make_scheduler = make_scheduler.clone();
            thread::Builder::new()
                .name(format!("rank-{}", transport.rank()))
                .spawn(move || {
                    let played = play_with::<P>(
                        &mut transport,
                        &machines,
                        &config,
                        None,
                        splitter,
                        make_scheduler.as_ref(),
                        None,
                    );
                    if played.is_err() {
                        transport.abort_cluster();
                    }
                    played.map(|_| ())
                })
                .map_err(|e| RunError::setup(format!("cannot start a rank thread: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let outcome = play_with(
        &mut first,
        machines,
        config,
        problem,
        first_splitter,
        make_scheduler.as_ref(),
        journal,
    );
    if outcome.is_err() {
        first.abort_cluster();
    }
    // The error that stopped the cluster, not those of the ranks it stopped.
    let mut failure = None;
    for rank in others {
        let ended = rank.join().unwrap_or_else(|payload| {
            Err(RunError::setup(format!(
                "a rank thread panicked: {}",
                crate::drivers::worker::panic_text(&*payload)
            )))
        });
        if let Err(e) = ended {
            if failure.is_none() && primary(&e) {
                failure = Some(e);
            }
        }
    }
    match outcome {
        Err(e) if primary(&e) => Err(e),
        Err(e) => Err(failure.unwrap_or(e)),
        Ok(outcome) => match failure {
            None => Ok(outcome),
            Some(e) => Err(e),
        },
    }
}

/// An error that is not merely the echo of another rank's failure.
fn primary(error: &RunError) -> bool {
    !matches!(error, RunError::Transport(TransportError::Aborted))
}

/// The CLI's end of a run: the summary, the JSON statistics, and the application's `finish`.
fn conclude<P>(
    outcome: Outcome<P>,
    config: &ConfigFile,
    args: &RunArgs,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let (stats, problem) = match outcome {
        Outcome::Master { problem, stats } => (stats, Some(problem)),
        Outcome::SubMaster { stats } => (stats, None),
        Outcome::Done => return Ok(()),
    };
    if config.run.statistics_interval > 0.0 {
        print!("{}", stats.summary());
    }
    if let Some(path) = &args.stats_json {
        let json = serde_json::to_string_pretty(&stats)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    match problem {
        Some(problem) if config.run.max_tasks.is_none() => finish(problem, &stats),
        _ => Ok(()),
    }
}

/// `--threads`: every rank of the machine file as a thread of this process.
fn run_threads<P, S>(
    args: &RunArgs,
    make_problem: impl FnOnce(&S) -> anyhow::Result<P>,
    make_splitter: Option<MakeSplitter<P, S>>,
    make_scheduler: Option<MakeScheduler>,
    finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    P: Problem,
    S: DeserializeOwned,
{
    let Prepared {
        config,
        machines,
        settings,
        problem,
        ..
    } = prepare(args, 0, None, make_problem, make_splitter)?;
    let make = make_splitter.map(|make| move || make(&settings));
    let outcome = play_in_threads_with(
        &machines,
        &config,
        problem,
        make.as_ref()
            .map(|m| m as &dyn Fn() -> anyhow::Result<SplitterOf<P>>),
        make_scheduler,
        args.journal().as_ref(),
    )?;
    conclude(outcome, &config, args, finish)
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
