//! The entry point of a pipeline application: [`run_pipeline`]. Every rank starts the same
//! binary with the same command line as a master-worker application (`-m` machine file,
//! `-c` configuration, `--threads`, `--stats-json`); its machine-file line says which role it
//! plays: the main cluster's first line the controller (source, sink, decisions), another
//! cluster's first line its head (its stage managers), a worker line a node (stages), a CM
//! line the link to another cluster.

use std::{process::ExitCode, thread};

use anyhow::Context as _;
use clap::Parser;
use serde::{de::DeserializeOwned, Serialize};

use crate::{
    drivers::pipeline::{controller, head, node, relay},
    error::RunError,
    placement,
    runner::RunArgs,
};
use hmw_core::{
    config::ConfigFile,
    machinefile::{MachineFile, Role},
    pipeline::{stats::PipelineStats, Chain, Complete, PipelineConfig, Sink, Source},
    roles::pipeline::{ControllerSetup, HeadCore, NodeCore, RelayCore, Routes},
};
use hmw_transport::{local::LocalTransport, Transport, TransportError};

/// Everything a rank of a pipeline run reads before its role starts.
pub(crate) struct Prepared<So, Si, T> {
    /// The run configuration.
    pub(crate) config: ConfigFile,
    /// Its `[pipeline]` table.
    pub(crate) pipeline: PipelineConfig,
    /// This cluster's machine file.
    pub(crate) machines: MachineFile,
    /// The application's pipeline.
    pub(crate) complete: Complete<So, Si, T>,
}

/// What playing a rank's role gave.
pub(crate) enum PipeOutcome<Si> {
    /// The controller: the sink with every item, and the statistics.
    Controller {
        /// The sink.
        sink: Si,
        /// The run's statistics.
        stats: Box<PipelineStats>,
    },
    /// Any other rank.
    Done,
}

fn prepare<S, So, Si, T>(
    args: &RunArgs,
    make: impl FnOnce(&S) -> anyhow::Result<Complete<So, Si, T>>,
) -> anyhow::Result<Prepared<So, Si, T>>
where
    S: DeserializeOwned,
    So: Source,
    Si: Sink<T>,
{
    let config = match &args.config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::defaults(),
    };
    let machines = MachineFile::load(&args.machinefile)?;
    if !machines.processes.is_one_rank_each() {
        anyhow::bail!(
            "{}: process= (CMs sharing a process) is for master-worker runs; a pipeline's \
             nodes each need a process of their own",
            machines.path.display()
        );
    }
    let settings: S = config.application()?;
    let mut pipeline = config.pipeline()?;
    if let Some(items) = args.max_tasks {
        pipeline.items = Some(items);
    }
    let complete = make(&settings).with_context(|| {
        format!(
            "{}: [application]: cannot set the pipeline up",
            config.path.display()
        )
    })?;
    pipeline
        .check(complete.chain.len())
        .map_err(|e| anyhow::anyhow!("{}: {e}", config.path.display()))?;
    Ok(Prepared {
        config,
        pipeline,
        machines,
        complete,
    })
}

/// Run a pipeline application: parse the command line, check the configuration on every
/// rank, and play this rank's role. `make` builds the pipeline from the `[application]`
/// settings (on every rank: each needs the stages; only the controller uses the source and
/// the sink). On the controller, `finish` receives the sink with every item and the
/// statistics; its error makes the run fail.
pub fn run_pipeline<S, So, Si, T>(
    make: impl FnOnce(&S) -> anyhow::Result<Complete<So, Si, T>>,
    finish: impl FnOnce(Si, &PipelineStats) -> anyhow::Result<()>,
) -> ExitCode
where
    S: DeserializeOwned,
    So: Source,
    Si: Sink<T>,
    T: Serialize + DeserializeOwned + 'static,
{
    hmw_core::logging::init_logging();
    let args = RunArgs::parse();
    if args.threads {
        let played = prepare(&args, make).and_then(|prepared| {
            let (config, calibrating) = (prepared.config.clone(), prepared.pipeline.calibrate_only);
            let outcome = play_in_threads(prepared)?;
            conclude(outcome, &config, &args, calibrating, finish)
        });
        return match played {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    run_mpi(&args, make, finish)
}

#[cfg(not(feature = "mpi"))]
fn run_mpi<S, So, Si, T>(
    _args: &RunArgs,
    _make: impl FnOnce(&S) -> anyhow::Result<Complete<So, Si, T>>,
    _finish: impl FnOnce(Si, &PipelineStats) -> anyhow::Result<()>,
) -> ExitCode
where
    S: DeserializeOwned,
    So: Source,
    Si: Sink<T>,
{
    eprintln!("error: this build of hmw has no MPI (feature `mpi`): run with --threads");
    ExitCode::from(2)
}

/// This rank of an MPI job: every rank checks its configuration, they agree, then each plays
/// its role.
#[cfg(feature = "mpi")]
fn run_mpi<S, So, Si, T>(
    args: &RunArgs,
    make: impl FnOnce(&S) -> anyhow::Result<Complete<So, Si, T>>,
    finish: impl FnOnce(Si, &PipelineStats) -> anyhow::Result<()>,
) -> ExitCode
where
    S: DeserializeOwned,
    So: Source,
    Si: Sink<T>,
    T: Serialize + DeserializeOwned + 'static,
{
    use hmw_transport::mpi::MpiTransport;

    let Some(mut transport) = MpiTransport::init() else {
        eprintln!("error: MPI was already initialised in this process");
        return ExitCode::from(2);
    };
    let rank = transport.rank();
    let observed = placement::observed_host();
    let prepared = prepare(args, make).and_then(|prepared| {
        let machines = &prepared.machines;
        if machines.rank_count() != transport.size() {
            anyhow::bail!(
                "{}: the machine file has {} rank lines but the MPI job has {} ranks",
                machines.path.display(),
                machines.rank_count(),
                transport.size()
            );
        }
        let line = &machines.ranks[rank];
        if args.check_placement && !placement::is_this_host(&line.host, &observed) {
            anyhow::bail!(
                "{}",
                placement::misplaced(rank, line.line_no, &line.host, &observed)
            );
        }
        Ok(prepared)
    });
    let (all_ok, master_ok) = transport.all_agree(prepared.is_ok(), rank == 0);
    let prepared = match prepared {
        Ok(prepared) if all_ok => prepared,
        Ok(_) => return ExitCode::from(2),
        Err(e) => {
            if rank == 0 || master_ok {
                eprintln!("error (rank {rank}): {e:#}");
            }
            return ExitCode::from(2);
        }
    };
    let (config, calibrating) = (prepared.config.clone(), prepared.pipeline.calibrate_only);
    let result = play(&mut transport, prepared)
        .map_err(anyhow::Error::from)
        .and_then(|outcome| conclude(outcome, &config, args, calibrating, finish));
    if let Err(e) = &result {
        eprintln!("error (rank {rank}): {e:#}");
        transport.abort(1);
    }
    ExitCode::SUCCESS
}

/// Play this rank's role in one cluster.
fn play<So, Si, T>(
    transport: &mut dyn Transport,
    prepared: Prepared<So, Si, T>,
) -> Result<PipeOutcome<Si>, RunError>
where
    So: Source,
    Si: Sink<T>,
    T: DeserializeOwned,
{
    let Prepared {
        config,
        pipeline,
        machines,
        complete,
    } = prepared;
    let rank = transport.rank();
    let routes = Routes::new(&pipeline, &machines, rank)?;
    let chain = complete.chain.clone();
    if rank == 0 && routes.me().cluster == 0 {
        let setup = ControllerSetup {
            stages: chain
                .stages()
                .iter()
                .map(|s| (s.name.clone(), s.operations))
                .collect(),
            own: routes.cluster_ranks(&machines),
            routes,
            config: pipeline,
            statistics_interval: config.run.statistics_interval,
        };
        let (sink, stats) = controller::run(transport, setup, complete.source, complete.sink)?;
        return Ok(PipeOutcome::Controller {
            sink,
            stats: Box::new(stats),
        });
    }
    play_other(transport, &config, &pipeline, &machines, routes, chain)?;
    Ok(PipeOutcome::Done)
}

/// A rank that is not the controller: a head, a CM or a node.
fn play_other(
    transport: &mut dyn Transport,
    config: &ConfigFile,
    pipeline: &PipelineConfig,
    machines: &MachineFile,
    routes: Routes,
    chain: Chain,
) -> Result<(), RunError> {
    let rank = transport.rank();
    match machines.role(rank) {
        Role::Master => {
            let ranks = routes.cluster_ranks(machines);
            head::run(
                transport,
                HeadCore::new(routes, ranks, pipeline.replica_buffers),
            )
        }
        Role::CommunicationManager => relay::run(
            transport,
            machines,
            &config.cm,
            RelayCore::new(routes, config.cm.give_up_after()),
        ),
        Role::Worker => {
            let core = NodeCore::new(routes, &machines.ranks[rank].host, chain.len());
            node::run(transport, core, chain)
        }
    }
}

/// `--threads`: every rank of the machine file as a thread of this process.
pub(crate) fn play_in_threads<So, Si, T>(
    prepared: Prepared<So, Si, T>,
) -> anyhow::Result<PipeOutcome<Si>>
where
    So: Source,
    Si: Sink<T>,
    T: DeserializeOwned,
{
    let machines = prepared.machines.clone();
    let mut transports = LocalTransport::cluster(machines.rank_count()).into_iter();
    let mut first = transports.next().expect("a machine file has a first line");
    let others: Vec<_> = transports
        .map(|mut transport| {
            let (config, pipeline, machines) = (
                prepared.config.clone(),
                prepared.pipeline.clone(),
                machines.clone(),
            );
            let chain = prepared.complete.chain.clone();
            thread::Builder::new()
                .name(format!("rank-{}", transport.rank()))
                .spawn(move || {
                    let played = Routes::new(&pipeline, &machines, transport.rank())
                        .map_err(RunError::from)
                        .and_then(|routes| {
                            play_other(&mut transport, &config, &pipeline, &machines, routes, chain)
                        });
                    if played.is_err() {
                        transport.abort_cluster();
                    }
                    played
                })
                .context("cannot start a rank thread")
        })
        .collect::<anyhow::Result<_>>()?;
    let outcome = play(&mut first, prepared);
    if outcome.is_err() {
        first.abort_cluster();
    }
    let mut failure = None;
    for rank in others {
        let ended = rank
            .join()
            .unwrap_or_else(|_| Err(RunError::setup("a rank thread panicked")));
        if let Err(e) = ended {
            if failure.is_none() && !matches!(e, RunError::Transport(TransportError::Aborted)) {
                failure = Some(e);
            }
        }
    }
    match (outcome, failure) {
        (Err(e), _) if !matches!(e, RunError::Transport(TransportError::Aborted)) => Err(e.into()),
        (_, Some(e)) => Err(e.into()),
        (outcome, None) => Ok(outcome?),
    }
}

/// The end of a run on the controller: the summary, the JSON statistics, and the
/// application's `finish` (skipped when `--max-tasks` cut the run short, or the run only
/// calibrated the nodes).
fn conclude<Si>(
    outcome: PipeOutcome<Si>,
    config: &ConfigFile,
    args: &RunArgs,
    calibrating: bool,
    finish: impl FnOnce(Si, &PipelineStats) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let PipeOutcome::Controller { sink, stats } = outcome else {
        return Ok(());
    };
    if config.run.statistics_interval > 0.0 {
        print!("{}", stats.summary());
    }
    if let Some(path) = &args.stats_json {
        let json = serde_json::to_string_pretty(&stats)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.max_tasks.is_some() || calibrating {
        return Ok(());
    }
    finish(sink, &stats)
}
