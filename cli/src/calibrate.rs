//! `hmw calibrate PLAN.toml`: measure the system parameters of a plan on this machine, where
//! `hmw launch` runs it — each worker's available performance with the application's own
//! tasks, each LAN with task- and result-sized messages, each emulated WAN link both ways —
//! and write them as a system-parameter file that `hmw predict --measured` (and `hmw launch`,
//! `hmw report`) take in place of the plan's hand-written values.
//!
//! - Workers: every worker of every cluster in one run, all computing at once as they do in a
//!   run here, where they share this machine's cores: `--tasks` tasks of the application per
//!   worker, handed out on demand; a worker's perf is its basic operations per busy second.
//!   The last few tasks, when some workers are done, run under less load than a run's. On the
//!   clusters' own hosts ([`calibrate_remote`]) an external cluster's workers compute the parts
//!   its sub-master splits tasks into when the application splits them (`[run] split_tasks`):
//!   their figures are per part, and their own communication (100) is counted per task of
//!   the plan, `parts_per_task` parts'.
//! - LAN: the synthetic application with the plan's task and result sizes and no
//!   computation, with 1, half and all of the cluster's workers (`--lan-runs` runs each, every
//!   run at least `--lan-seconds` long and `--lan-tasks` tasks; `--lan-runs 0` measures none
//!   and leaves the plan's value); throughput `tasks * (task + result bytes) / makespan`.
//!   The file keeps each count's mean, standard deviation, minimum and maximum in the
//!   cluster's `[[clusters.lan_runs]]` tables and gives the model, as `lan_bytes_per_s`, the
//!   mean with every worker, the load the run puts on its master.
//! - WAN: a pair of hmw-cm links configured from the plan's `[launch.cm]` exactly as the
//!   communication managers configure theirs (same machine-file lines, same `[cm]` keys,
//!   certificates as `hmw launch` writes them), through the link's emulator, one direction
//!   at a time (inter-cluster tasks one way, then inter-cluster results the other; both at
//!   once, each direction's acknowledgements queue behind the other's data:
//!   [`crate::wan_probe`]), each `--wan-warmup` seconds of warm-up, then `--wan-seconds`
//!   timed. Every link at once (each has an emulator of its own), while the workers' run
//!   computes (run again until the links are measured): relays, links and workers share the
//!   cores in a run, and the links are measured under that load ([`under_load`]). The
//!   workers' figures come from that first run, the probes beside it. Their saturating
//!   traffic is no run's, and on the testbed, where every host shares this machine's cores,
//!   it costs the workers CPU: there they read 5-10 % slower than a compute-only run
//!   computes. Measured alone first instead (2026-11-26, `fb5c4d2`, reverted), they matched
//!   those runs, but a full `scripts/validate.sh` then missed `tb-matmul-two-clusters` by
//!   +29 % and `tb-tsp-three-clusters` by +15 % (+2 % and +4 % the run before, under the
//!   probes), `tb-srmsd-one-to-many` going from -4.9 % to +1.1 %: a run's own inter-cluster
//!   traffic, relays and CMs take CPU from its workers too, and the probes' load stands in
//!   for it better than no load does.
//!
//! Each run is one `mpirun` started and stopped as `hmw launch` does ([`crate::processes`]):
//! in a process group of its own, SIGTERM from the kernel if `hmw calibrate` dies, ranks
//! orphaned by their `mpirun` re-parented here and killed; a run still going after
//! `--run-timeout` is killed and is an error. Ctrl-C, SIGTERM and SIGHUP stop the run under
//! way (or the WAN measurement) and everything below `hmw calibrate`, which then fails.

use std::{
    cell::Cell,
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context as _, Result};
use hmw_cm::{wanem::Wanem, BlockingLink, Role};
use hmw_core::{
    config::{CmConfig, ConfigFile},
    machinefile::MachineFile,
    stats::{RunStats, WorkerStats},
};
use hmw_model::{
    params::{ApplicationParams, MeasuredCluster, MeasuredLanRuns, MeasuredSystem, MeasuredWorker},
    plan::{load_measured_system, load_plan, Plan},
};
use indicatif::{ProgressBar, ProgressStyle};
use tracing::debug;

use crate::{
    capacity::{perf_at_capacity, working_share},
    keygen::write_certificates,
    launch::{find_binary, local_mpi_environment, relay_config},
    layout::{cm_name, layout, ClusterLayout, Layout, Target},
    ports::free_port,
    processes::{
        become_subreaper, catch_signals, interrupted, kill_every_descendant, Group, Waited,
    },
    remote::{is_remote, Program, RemoteCalibration, RunFiles, RunOutput},
    wan_probe::{self, cm_config, echo, exchange, ping, wait_connected},
};

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// The plan (TOML), as for `hmw launch`.
    plan: PathBuf,
    /// The system-parameter file to write (TOML).
    #[arg(long, default_value = "system.toml")]
    out: PathBuf,
    /// Tasks per worker in the workers' run (every worker at once).
    #[arg(long, default_value_t = 8)]
    tasks: u64,
    /// Times each worker executes each task of the workers' run: a worker then computes
    /// without waiting for the master, so its figure is its speed while every worker
    /// computes at once, even where the master cannot hand tasks out as fast as they are
    /// done (a worker that waits computes faster while it computes on shared or
    /// quota-limited cores).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Workers: the shortest busy time that counts, seconds: while a worker of the workers'
    /// run computed for less, the run is done again with more tasks (a speed under a CPU
    /// quota or on a shared core is an average over many scheduling periods: over 0.4 s
    /// of 100 ms quota periods, two calibrations of the same hosts differed by 10 %).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "2",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    worker_seconds: Duration,
    /// LAN: runs with each worker count (1, half, all); 0 measures no LAN, and the plan's
    /// `lan_bytes_per_s` stays.
    #[arg(long, default_value_t = 3)]
    lan_runs: u32,
    /// LAN: the shortest run counted, seconds (a shorter one is run again, longer).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "1",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    lan_seconds: Duration,
    /// LAN: the fewest tasks of a run.
    #[arg(long, default_value_t = 200)]
    lan_tasks: u64,
    /// WAN: seconds each link carries traffic before the timed window, at least (30 round
    /// trips when longer: a direction that starts idle ramps up over round trips).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "1",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    wan_warmup: Duration,
    /// WAN: seconds timed, each direction in turn. The relays share this machine's cores
    /// with the links they relay, so their deliveries can lag and catch up: over 3 s that
    /// moved a 1 MB/s link's figure by up to 7%, over 6 s by under 5%.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "6",
        value_parser = crate::positive_seconds,
        allow_negative_numbers = true
    )]
    wan_seconds: Duration,
    /// Seconds a calibration run may last before it is killed as hung (an error).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "600",
        value_parser = crate::positive_seconds,
        allow_negative_numbers = true
    )]
    run_timeout: Duration,
    /// Folder for the calibration runs' files (default: a temporary folder, removed at the
    /// end unless the calibration fails).
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

/// The LAN runs with one worker count: bytes per second of each run.
struct LanRuns {
    workers: usize,
    tasks_per_run: u64,
    values: Vec<f64>,
    /// Runs too short to count (the first of a cluster sizes the others).
    discarded: u32,
}

impl LanRuns {
    /// The runs as the system file records them.
    fn summary(&self) -> MeasuredLanRuns {
        MeasuredLanRuns {
            workers: self.workers,
            runs: self.values.len(),
            tasks_per_run: self.tasks_per_run,
            mean: self.mean(),
            std_dev: self.std_dev(),
            min: self.min(),
            max: self.max(),
        }
    }

    fn mean(&self) -> f64 {
        self.values.iter().sum::<f64>() / self.values.len().max(1) as f64
    }
    /// Sample standard deviation (0 with one run).
    fn std_dev(&self) -> f64 {
        let n = self.values.len();
        if n < 2 {
            return 0.0;
        }
        let mean = self.mean();
        (self.values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
    fn min(&self) -> f64 {
        self.values.iter().copied().fold(f64::INFINITY, f64::min)
    }
    fn max(&self) -> f64 {
        self.values.iter().copied().fold(0.0, f64::max)
    }
}

/// Worker counts the LAN is measured with: 1, half (rounded up) and all, without repeats;
/// none for a cluster without workers (one that only relays to clusters further down).
fn lan_worker_counts(workers: usize) -> Vec<usize> {
    if workers == 0 {
        return Vec::new();
    }
    let mut counts = vec![1, workers.div_ceil(2), workers];
    counts.dedup();
    counts
}

/// Where the calibration writes its runs' files; removed on drop unless kept.
struct WorkDir {
    path: PathBuf,
    temporary: bool,
    keep: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.temporary && !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

pub fn run(args: CalibrateArgs) -> Result<()> {
    let started = Instant::now();
    let plan = load_plan(&args.plan)?;
    let plan_dir = args.plan.parent().unwrap_or(Path::new(".")).to_owned();
    catch_signals()?;
    become_subreaper()?;
    let remote = is_remote(&plan).with_context(|| args.plan.display().to_string())?;
    let target = if remote {
        Target::Deployment
    } else {
        Target::Local
    };
    let layout = layout(&plan, None, target, None, free_port)
        .with_context(|| format!("{}", args.plan.display()))?;
    let mut work = match &args.work_dir {
        Some(dir) => WorkDir {
            path: dir.clone(),
            temporary: false,
            keep: true,
        },
        None => WorkDir {
            path: std::env::temp_dir().join(format!(
                "hmw-calibrate-{}-{}",
                plan.name,
                std::process::id()
            )),
            temporary: true,
            keep: false,
        },
    };
    fs::create_dir_all(&work.path)
        .with_context(|| format!("cannot create {}", work.path.display()))?;
    work.path = work.path.canonicalize()?;
    let result = if remote {
        calibrate_remote(&args, &plan, &plan_dir, &layout, &work.path)
    } else {
        calibrate(&args, &plan, &plan_dir, &layout, &work.path)
    };
    // Whatever the way out, nothing started here outlives it.
    kill_every_descendant(Duration::from_secs(10));
    // Files of a failed calibration are kept for a look; not those of an interrupted one.
    if result.is_err() && work.temporary && !interrupted() {
        work.keep = true;
        eprintln!(
            "calibration files kept in {} for a look",
            work.path.display()
        );
    }
    let measured = result?;
    let text = system_file(&measured)?;
    fs::write(&args.out, &text).with_context(|| format!("cannot write {}", args.out.display()))?;
    // What was written must read back as written: the model reads this file.
    let back = load_measured_system(&args.out)?;
    if back != measured {
        bail!(
            "{}: the file written does not read back as measured",
            args.out.display()
        );
    }
    plan.check_measured(&back)
        .map_err(|e| anyhow!("{}: {e}", args.out.display()))?;
    println!(
        "wrote {} in {:.0} s: use it with hmw predict {} --measured {}",
        args.out.display(),
        started.elapsed().as_secs_f64(),
        args.plan.display(),
        args.out.display()
    );
    Ok(())
}

fn calibrate(
    args: &CalibrateArgs,
    plan: &Plan,
    plan_dir: &Path,
    layout: &Layout,
    work: &Path,
) -> Result<MeasuredSystem> {
    let binary = application_binary(layout, plan_dir)?;
    let synthetic = find_binary("hmw-synthetic", plan_dir)?;
    let app = &plan.application;
    let steps: u64 = layout
        .clusters
        .iter()
        .map(|c| lan_worker_counts(c.workers.len()).len() as u64 * u64::from(args.lan_runs))
        .sum::<u64>()
        + u64::from(layout.clusters.iter().any(|c| !c.workers.is_empty()))
        + u64::from(layout.clusters.iter().any(|c| c.link.is_some()));
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
            .expect("a valid progress template"),
    );
    let mut system = MeasuredSystem {
        measured_at: Some(now()),
        conditions: Some(format!(
            "hmw calibrate {} on this machine ({} cores, load average {} at the start), as hmw \
             launch runs it: one mpirun per run, workers emulated by their speed= annotation, \
             WANs by hmw-wanem",
            args.plan.display(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            load_average()
        )),
        clusters: Vec::new(),
    };
    let machine_files: Vec<MachineFile> = layout
        .clusters
        .iter()
        .map(|c| MachineFile::parse(Path::new(&format!("{}.hosts", c.name)), &c.machine_file))
        .collect::<Result<_, _>>()?;

    // Workers: every worker of every cluster in one run, computing at once as they do in a
    // run here, where they share this machine's cores; the WANs measured meanwhile, under
    // that load, as in a run (their relays and links share the same cores).
    let phase = Instant::now();
    let mut workers_table = workers_header();
    let mut measured_workers = Vec::new();
    let worker_count: usize = machine_files.iter().map(|m| m.worker_ranks().len()).sum();
    let links = layout.clusters.iter().any(|c| c.link.is_some());
    let measure_links = || timed(|| measure_wans(args, plan, layout, work));
    let mut wans = None;
    if worker_count > 0 {
        bar.set_message(if links {
            "every worker at once, the WANs meanwhile".to_owned()
        } else {
            "every worker at once".to_owned()
        });
        let mut hosts = format!("{} # cluster=calibration\n", machine_files[0].ranks[0].host);
        for machines in &machine_files {
            for rank in machines.worker_ranks() {
                hosts.push_str(&rank_line(&machines.ranks[rank]));
                hosts.push('\n');
            }
        }
        // One run for every cluster's workers: at the grain of the main cluster's tasks.
        let app_config = workers_config(&layout.config, args.repeats, false)?;
        let sizing = WorkerRuns::new(args);
        let workers_run = || {
            sizing.long_enough(
                |tasks| {
                    let tasks = tasks * worker_count as u64;
                    run_cluster(&binary, work, &hosts, &app_config, Some(tasks), args)
                },
                |stats| shortest_busy_s([stats]),
            )
        };
        let (stats, measured) =
            under_load(workers_run, workers_run, links.then_some(measure_links));
        let stats = stats.context("every worker at once")?;
        wans = measured;
        // The run's ranks after its master: each cluster's workers in turn.
        let mut first = 1;
        for (cluster, machines) in layout.clusters.iter().zip(&machine_files) {
            let ranks = machines.worker_ranks();
            measured_workers.push(measured_workers_of(
                &cluster.name,
                machines,
                &ranks,
                first,
                &WorkersRun {
                    stats: &stats,
                    repeats: args.repeats,
                    comm_bytes: app.comm_bytes(),
                },
                &mut workers_table,
            )?);
            first += ranks.len();
        }
        bar.inc(1);
    } else {
        measured_workers.resize_with(layout.clusters.len(), Vec::new);
    }
    let workers_time = phase.elapsed();

    let phase = Instant::now();
    let mut lan_all = Vec::new();
    let mut lan_calibration = LanCalibration {
        args,
        plan,
        bar: &bar,
        rates: [None; 3],
    };
    for ((cluster, machines), workers) in layout
        .clusters
        .iter()
        .zip(&machine_files)
        .zip(measured_workers)
    {
        let head_line = format!("{} # cluster={}", machines.ranks[0].host, cluster.name);
        let worker_ranks = machines.worker_ranks();
        let lan = lan_calibration.measure(&cluster.name, worker_ranks.len(), |count, tasks| {
            let mut hosts = format!("{head_line}\n");
            for &rank in worker_ranks.iter().take(count) {
                hosts.push_str(&format!("{}\n", machines.ranks[rank].host));
            }
            let config = app_config(&layout.config, Some(&lan_application(app, tasks)))?;
            run_cluster(&synthetic, work, &hosts, &config, None, args)
        })?;
        // No workers, no LAN measured: the plan's value stays.
        let used = lan.last().map(LanRuns::mean);
        system.clusters.push(MeasuredCluster {
            name: cluster.name.clone(),
            lan_bytes_per_s: used,
            wan_in_bytes_per_s: None,
            wan_out_bytes_per_s: None,
            wan_rtt_s: None,
            workers,
            lan_runs: lan.iter().map(LanRuns::summary).collect(),
        });
        lan_all.push((cluster.name.clone(), lan));
    }
    let lan_time = phase.elapsed();
    let mut wan_table = String::new();
    let mut wan_time = Duration::ZERO;
    if links {
        let (measured, time) = measured_or_alone(wans, &bar, measure_links);
        wan_time = time;
        for (name, wan_in, wan_out, rtt) in measured? {
            let _ = writeln!(
                wan_table,
                "{name:<12} WAN in (tasks) {wan_in:>12.4e} B/s, out (results) {wan_out:>12.4e} \
                 B/s, round trip {:.1} ms",
                rtt * 1e3
            );
            if let Some(entry) = system.clusters.iter_mut().find(|c| c.name == name) {
                entry.wan_in_bytes_per_s = Some(wan_in);
                entry.wan_out_bytes_per_s = Some(wan_out);
                entry.wan_rtt_s = Some(rtt);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let lan_tables = lan_all
        .iter()
        .map(|(name, runs)| lan_table(name, app, runs));
    print_tables(
        &workers_table,
        lan_tables,
        &wan_table,
        [workers_time, lan_time, wan_time],
    );
    Ok(system)
}

/// `f`'s result and how long it took.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    (f(), start.elapsed())
}

/// Run `first` (a workers' run) and, meanwhile, `measure` (the WANs), then `again` (the same
/// run, its files kept apart) until `measure` is done, so that what `measure` measures
/// carries the load a run puts on the cores it shares (this machine's; on real hosts, a CM's
/// host's): `first`'s result, and the measurement's. A load run that fails ends the loading.
fn under_load<L, M: Send>(
    first: impl FnOnce() -> Result<L>,
    again: impl Fn() -> Result<L>,
    measure: Option<impl FnOnce() -> M + Send>,
) -> (Result<L>, Option<M>) {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let measuring = measure.map(|measure| {
            let done = &done;
            scope.spawn(move || {
                let measured = measure();
                done.store(true, Ordering::Release);
                measured
            })
        });
        let first = first();
        while first.is_ok() && measuring.is_some() && !done.load(Ordering::Acquire) {
            if interrupted() || again().is_err() {
                break;
            }
        }
        let measured = measuring.map(|m| m.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (first, measured)
    })
}

/// The size of the workers' run: `--tasks` per worker, more once a run was too short.
struct WorkerRuns {
    tasks_per_worker: Cell<u64>,
    seconds: f64,
}

impl WorkerRuns {
    /// Runs again with more tasks at most this many times.
    const RETRIES: u32 = 4;

    fn new(args: &CalibrateArgs) -> Self {
        WorkerRuns {
            tasks_per_worker: Cell::new(args.tasks),
            seconds: args.worker_seconds.as_secs_f64(),
        }
    }

    /// `run(tasks per worker)`, again with more tasks while `busy` of its result (the
    /// shortest busy time of its workers) is under `--worker-seconds`: sized from the
    /// shortest run's rate with a margin of a quarter, the size kept for the next call.
    fn long_enough<T>(
        &self,
        run: impl Fn(u64) -> Result<T>,
        busy: impl Fn(&T) -> f64,
    ) -> Result<T> {
        let mut retries = 0;
        loop {
            let tasks = self.tasks_per_worker.get();
            let result = run(tasks)?;
            let busy_s = busy(&result);
            if busy_s >= self.seconds || retries == Self::RETRIES {
                return Ok(result);
            }
            retries += 1;
            let scale = (1.25 * self.seconds / busy_s.max(1e-3)).min(50.0);
            self.tasks_per_worker
                .set(((tasks as f64 * scale).ceil() as u64).max(tasks + 1));
            debug!(
                tasks,
                busy_s,
                next = self.tasks_per_worker.get(),
                "workers' run too short"
            );
        }
    }
}

/// The shortest busy time of the workers of these runs (0 without any).
fn shortest_busy_s<'a>(runs: impl IntoIterator<Item = &'a RunStats>) -> f64 {
    runs.into_iter()
        .flat_map(|stats| stats.workers.iter().map(|w| w.busy_s))
        .reduce(f64::min)
        .unwrap_or(0.0)
}

/// The WANs as measured under the workers' load, or, without workers to load them (`None`),
/// measured now, alone.
fn measured_or_alone<M>(
    under_load: Option<(M, Duration)>,
    bar: &ProgressBar,
    measure: impl FnOnce() -> (M, Duration),
) -> (M, Duration) {
    under_load.unwrap_or_else(|| {
        bar.set_message("WANs, one way then the other".to_owned());
        measure()
    })
}

/// What the LAN measurements of every cluster share.
struct LanCalibration<'a> {
    args: &'a CalibrateArgs,
    plan: &'a Plan,
    bar: &'a ProgressBar,
    /// Tasks per second of the last run with one, half and all of a cluster's workers: what
    /// sizes the next such run (on this machine every cluster's; on real hosts the cluster's).
    rates: [Option<f64>; 3],
}

/// The synthetic application of a LAN run: `tasks` tasks of the plan's sizes, no computation.
fn lan_application(app: &ApplicationParams, tasks: u64) -> String {
    format!(
        "tasks = {tasks}\ntask_seconds = 0.0\ntask_bytes = {}\nresult_bytes = {}\n",
        app.task_bytes as u64, app.result_bytes as u64
    )
}

/// The most tasks of a LAN run.
const LAN_TASKS_MAX: u64 = 10_000_000;

impl LanCalibration<'_> {
    /// The LAN of cluster `name`, of `workers` workers, with 1, half and all of them:
    /// `run(count, tasks)` runs `tasks` tasks of [`lan_application`] with the first `count`.
    fn measure(
        &mut self,
        name: &str,
        workers: usize,
        mut run: impl FnMut(usize, u64) -> Result<RunStats>,
    ) -> Result<Vec<LanRuns>> {
        let args = self.args;
        let app = &self.plan.application;
        let bytes_per_task = app.task_bytes + app.result_bytes;
        let mut all = Vec::new();
        if args.lan_runs == 0 {
            return Ok(all);
        }
        // The rate with the previous worker count: it sizes the first run with the next one
        // (scaled by the count) when no run of that kind has been seen yet.
        let mut previous: Option<(usize, f64)> = None;
        for (index, count) in lan_worker_counts(workers).into_iter().enumerate() {
            // Which of one, half and all (a cluster of two has no separate half).
            let kind = if count == workers { 2 } else { index.min(1) };
            let mut runs = LanRuns {
                workers: count,
                tasks_per_run: 0,
                values: Vec::new(),
                discarded: 0,
            };
            while runs.values.len() < args.lan_runs as usize {
                self.bar.set_message(format!(
                    "{name}: LAN with {count} worker{}, run {} of {}",
                    if count == 1 { "" } else { "s" },
                    runs.values.len() + 1,
                    args.lan_runs
                ));
                // Long enough at the last rate seen, with a margin.
                let rate =
                    self.rates[kind].or_else(|| previous.map(|(c, r)| r * count as f64 / c as f64));
                let tasks = rate
                    .map_or(args.lan_tasks, |r| {
                        (r * args.lan_seconds.as_secs_f64() * 1.25).ceil() as u64
                    })
                    .clamp(args.lan_tasks, LAN_TASKS_MAX);
                let stats = run(count, tasks)
                    .with_context(|| format!("LAN of cluster {name} with {count} workers"))?;
                if stats.wall_s <= 0.0 {
                    bail!("LAN of cluster {name} with {count} workers: a run of no duration");
                }
                self.rates[kind] = Some(tasks as f64 / stats.wall_s);
                previous = Some((count, tasks as f64 / stats.wall_s));
                if stats.wall_s < args.lan_seconds.as_secs_f64() && tasks < LAN_TASKS_MAX {
                    // Too short to count (the very first, at the fewest tasks, is a warm-up
                    // that sizes the next): again, longer, at most a few times.
                    runs.discarded += 1;
                    if runs.discarded > 5 {
                        bail!(
                            "LAN of cluster {name} with {count} workers: runs stay under {} s",
                            args.lan_seconds.as_secs_f64()
                        );
                    }
                    continue;
                }
                runs.tasks_per_run = runs.tasks_per_run.max(tasks);
                runs.values
                    .push(tasks as f64 * bytes_per_task / stats.wall_s);
                self.bar.inc(1);
            }
            all.push(runs);
        }
        Ok(all)
    }
}

/// The LAN runs of one cluster as a table.
fn lan_table(name: &str, app: &ApplicationParams, runs: &[LanRuns]) -> String {
    let mut out = String::new();
    if runs.is_empty() {
        let _ = writeln!(
            out,
            "LAN of {name}: not measured (--lan-runs 0, or no workers of its own); the \
             plan's value stays"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "LAN of {name}: {} B tasks and {} B results, no computation; bytes per second \
         of tasks and results in each run",
        app.task_bytes, app.result_bytes
    );
    let _ = writeln!(
        out,
        "{:>8} {:>5} {:>10} {:>12} {:>12} {:>12} {:>12} {:>10}",
        "workers", "runs", "tasks/run", "mean", "std dev", "min", "max", "too short"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "{:>8} {:>5} {:>10} {:>12.4e} {:>12.4e} {:>12.4e} {:>12.4e} {:>10}",
            r.workers,
            r.values.len(),
            r.tasks_per_run,
            r.mean(),
            r.std_dev(),
            r.min(),
            r.max(),
            r.discarded
        );
    }
    if let Some(all) = runs.last() {
        let _ = writeln!(
            out,
            "value used (lan_bytes_per_s): the mean with all {} workers, the load of a run",
            all.workers
        );
    }
    out
}

/// The system file: the measured values as TOML, under a header saying how to read them.
fn system_file(measured: &MeasuredSystem) -> Result<String> {
    let mut text = String::from(
        "# System parameters measured by hmw calibrate: hmw predict/launch/report --measured \
         FILE\n# lan_bytes_per_s: the mean of the LAN runs with all of the cluster's workers \
         (lan_runs: every\n# number of workers tried, in bytes per second of tasks and \
         results).\n",
    );
    text.push_str(&toml::to_string(measured)?);
    Ok(text)
}

/// A rank line of a machine file written back, annotations included.
fn rank_line(line: &hmw_core::machinefile::RankLine) -> String {
    let annotations = line.annotations.to_string();
    if annotations.is_empty() {
        line.host.clone()
    } else {
        format!("{} # {annotations}", line.host)
    }
}

/// The launch configuration for a calibration run: silent, no tail reassignment, and
/// `application` replacing the application's settings when given.
fn app_config(config: &toml::Table, application: Option<&str>) -> Result<toml::Table> {
    let mut config = config.clone();
    config.remove("cm");
    let mut run = config
        .get("run")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    run.insert("statistics_interval".into(), toml::Value::Integer(0));
    run.insert("reassign_last_task".into(), toml::Value::Boolean(false));
    run.remove("load_balance");
    config.insert("run".into(), toml::Value::Table(run));
    if let Some(text) = application {
        config.insert("application".into(), toml::Value::Table(text.parse()?));
    }
    Ok(config)
}

/// The launch configuration for the workers' run: each task executed `repeats` times; with
/// `split`, the run's master splits its tasks as an external cluster's sub-master does (the
/// workers then compute, and move, the parts they do in a run).
fn workers_config(config: &toml::Table, repeats: u32, split: bool) -> Result<toml::Table> {
    let mut config = app_config(config, None)?;
    if let Some(run) = config.get_mut("run").and_then(toml::Value::as_table_mut) {
        run.insert("repeat_tasks".into(), toml::Value::Integer(repeats.into()));
        if split {
            run.insert("split_tasks".into(), toml::Value::Boolean(true));
        }
    }
    Ok(config)
}

/// Run one cluster under mpirun and read its statistics: at most `args.run_timeout`, and
/// stopped at once by Ctrl-C, SIGTERM or SIGHUP. Whatever the way out, the run's processes are
/// gone when it returns.
fn run_cluster(
    binary: &Path,
    work: &Path,
    hosts: &str,
    config: &toml::Table,
    max_tasks: Option<u64>,
    args: &CalibrateArgs,
) -> Result<RunStats> {
    if interrupted() {
        bail!("interrupted");
    }
    let hosts_path = work.join("calibrate.hosts");
    let config_path = work.join("calibrate.toml");
    let stats_path = work.join("calibrate.stats.json");
    let log_path = work.join("calibrate.log");
    fs::write(&hosts_path, hosts)
        .with_context(|| format!("cannot write {}", hosts_path.display()))?;
    fs::write(&config_path, toml::to_string(config)?)
        .with_context(|| format!("cannot write {}", config_path.display()))?;
    let _ = fs::remove_file(&stats_path);
    let log = fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let ranks = hosts
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count();
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(binary)
        .arg("-m")
        .arg(&hosts_path)
        .arg("-c")
        .arg(&config_path)
        .arg("--stats-json")
        .arg(&stats_path)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    if let Some(n) = max_tasks {
        command.args(["--max-tasks", &n.to_string()]);
    }
    local_mpi_environment(&mut command);
    let mut group = Group::start(&mut command)
        .with_context(|| format!("cannot run mpirun {}", binary.display()))?;
    let waited = group.wait_until(Instant::now() + args.run_timeout);
    // Ranks that outlived mpirun too (re-parented here).
    group.kill();
    kill_every_descendant(Duration::from_secs(10));
    match waited {
        Waited::Exited(status) if status.success() => {}
        Waited::Exited(status) => bail!(
            "calibration run of {} failed ({status}):\n{}",
            binary.display(),
            log_tail(&log_path)
        ),
        Waited::TimedOut => bail!(
            "calibration run of {} still running after {} s: killed (--run-timeout); its \
             output:\n{}",
            binary.display(),
            args.run_timeout.as_secs_f64(),
            log_tail(&log_path)
        ),
        Waited::Interrupted => bail!("interrupted"),
    }
    let text = fs::read_to_string(&stats_path)
        .with_context(|| format!("cannot read {}", stats_path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{}: not run statistics", stats_path.display()))
}

/// The last lines of a run's output, for an error.
fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Each WAN link of the layout: `(cluster, tasks' goodput parent -> cluster, results'
/// goodput cluster -> parent)`, bytes per second.
fn measure_wans(
    args: &CalibrateArgs,
    plan: &Plan,
    layout: &Layout,
    work: &Path,
) -> Result<Vec<(String, f64, f64, f64)>> {
    // Certificates and [cm] settings as hmw launch gives them to the CMs.
    let certs = work.join("certs");
    write_certificates(layout, &certs, Target::Local)?;
    let mut cm_table = layout
        .config
        .get("cm")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    cm_table.insert(
        "certs".into(),
        toml::Value::String(certs.to_string_lossy().into_owned()),
    );
    let mut document = toml::Table::new();
    document.insert("cm".into(), toml::Value::Table(cm_table));
    let cm: CmConfig =
        ConfigFile::parse(Path::new("[launch.cm]"), &toml::to_string(&document)?)?.cm;
    let machine_files: Vec<MachineFile> = layout
        .clusters
        .iter()
        .map(|c| MachineFile::parse(Path::new(&format!("{}.hosts", c.name)), &c.machine_file))
        .collect::<Result<_, _>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    // Every link up first, then all measured at once (each has its own emulator).
    struct Probe<'a> {
        cluster: &'a str,
        parent: &'a str,
        server: BlockingLink,
        client: BlockingLink,
        relay: Wanem,
        task_size: usize,
        result_size: usize,
    }
    let mut probes = Vec::new();
    for (i, cluster) in layout.clusters.iter().enumerate() {
        let Some(link) = &cluster.link else { continue };
        let parent = &layout.clusters[link.parent];
        let server = cm_config(
            &machine_files[link.parent],
            &cm_name(&parent.name, &cluster.name),
            &cm,
        )?;
        let client = cm_config(
            &machine_files[i],
            &cm_name(&cluster.name, &parent.name),
            &cm,
        )?;
        let (task_size, result_size) = link_message_sizes(plan, &cluster.name)?;
        // Steady state only: no outage while measuring.
        let mut steady = link.clone();
        steady.outages.clear();
        let relay = runtime
            .block_on(Wanem::start(relay_config(&steady)))
            .with_context(|| format!("cannot start the WAN emulator of {}", cluster.name))?;
        let link_error = |e: hmw_cm::LinkError| anyhow!("WAN of {}: {e}", cluster.name);
        probes.push(Probe {
            cluster: &cluster.name,
            parent: &parent.name,
            server: BlockingLink::start(server).map_err(link_error)?,
            client: BlockingLink::start(client).map_err(link_error)?,
            relay,
            task_size,
            result_size,
        });
    }
    for p in &probes {
        wait_connected(&p.client, Duration::from_secs(20))
            .with_context(|| format!("WAN of {}", p.cluster))?;
    }
    // Round trips first, on idle links: a loaded link adds its queue to them.
    let mut round_trips = Vec::new();
    for p in &probes {
        let rtt = std::thread::scope(|scope| {
            let echoing = scope.spawn(|| echo(&p.client));
            let rtt = ping(&p.server, args.wan_warmup);
            echoing
                .join()
                .unwrap_or_else(|_| Err(anyhow!("the echoing thread panicked")))?;
            rtt
        });
        round_trips.push(rtt.with_context(|| format!("WAN of {}, round trip", p.cluster))?);
    }
    let window = args.wan_seconds;
    let measured: Vec<(Result<f64>, Result<f64>)> = std::thread::scope(|scope| {
        let threads: Vec<_> = probes
            .iter()
            .zip(&round_trips)
            .map(|(p, &(_, warmup))| {
                // One direction at a time: each end measures what it receives while the
                // other sends (tasks reach the client, results the server).
                let tasks = scope.spawn(move || {
                    exchange(&p.client, Role::Client, p.result_size, warmup, window)
                });
                let results = scope
                    .spawn(move || exchange(&p.server, Role::Server, p.task_size, warmup, window));
                (tasks, results)
            })
            .collect();
        threads
            .into_iter()
            .map(|(tasks, results)| {
                let joined = |handle: std::thread::ScopedJoinHandle<'_, Result<f64>>| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err(anyhow!("the measuring thread panicked")))
                };
                (joined(tasks), joined(results))
            })
            .collect()
    });
    let mut out = Vec::new();
    for ((p, (wan_in, wan_out)), (rtt, _)) in probes.into_iter().zip(measured).zip(round_trips) {
        p.server.close();
        p.client.close();
        p.relay.shutdown();
        let wan_in =
            wan_in.with_context(|| format!("WAN of {}, tasks from {}", p.cluster, p.parent))?;
        let wan_out =
            wan_out.with_context(|| format!("WAN of {}, results to {}", p.cluster, p.parent))?;
        out.push((p.cluster.to_owned(), wan_in, wan_out, rtt));
    }
    Ok(out)
}

/// The sizes of the messages on the link of cluster `name` to its parent, bytes: its
/// inter-cluster tasks and results.
fn link_message_sizes(plan: &Plan, name: &str) -> Result<(usize, usize)> {
    let cluster = plan
        .clusters
        .iter()
        .find(|c| c.name == name)
        .with_context(|| format!("cluster {name} is not in the plan"))?;
    let app = &plan.application;
    let nt = cluster.tasks_per_inter_task as f64;
    let nr = cluster.results_per_inter_result as f64;
    Ok((
        app.task_bytes_inter.unwrap_or(nt * app.task_bytes) as usize,
        app.result_bytes_inter.unwrap_or(nr * app.result_bytes) as usize,
    ))
}

/// A workers' run: its statistics, how many times each task was executed, and the bytes of
/// one task and its result.
struct WorkersRun<'a> {
    stats: &'a RunStats,
    repeats: u32,
    comm_bytes: f64,
}

/// The perf and `tput_own` (100) of each worker of `ranks` (machine-file lines of cluster
/// `name`) from a workers' run in which the k-th of them was rank `first + k`, its row added
/// to `table`.
fn measured_workers_of(
    name: &str,
    machines: &MachineFile,
    ranks: &[usize],
    first: usize,
    run: &WorkersRun,
    table: &mut String,
) -> Result<Vec<MeasuredWorker>> {
    let WorkersRun {
        stats,
        repeats,
        comm_bytes,
    } = *run;
    let join_s = stats.join_s / stats.tasks.max(1) as f64;
    // A run whose master split its tasks as the cluster's sub-master does: each worker
    // computed and moved parts, `comm_bytes / parts` of the plan's bytes each on average, and
    // its own time on the messages of a task of the plan is that of its parts.
    let comm_bytes = match stats.parts_per_task {
        Some(parts) if parts != 1.0 => {
            let _ = writeln!(
                table,
                "{name:<12} (tasks split as its sub-master splits them, {parts:.1} parts a \
                 task: the figures below are per part)"
            );
            comm_bytes / parts
        }
        _ => comm_bytes,
    };
    ranks
        .iter()
        .enumerate()
        .map(|(k, &line)| {
            let host = &machines.ranks[line].host;
            let worker = stats
                .workers
                .iter()
                .find(|w| w.rank == first + k)
                .with_context(|| {
                    format!(
                        "cluster {name}: worker {host} (rank {} of the calibration run) \
                         computed nothing",
                        first + k
                    )
                })?;
            let figures = worker_figures(worker, comm_bytes, repeats);
            table.push_str(&worker_row(
                name,
                host,
                worker,
                (repeats, comm_bytes),
                join_s,
                &figures,
            ));
            Ok(MeasuredWorker {
                host: host.clone(),
                perf: figures.perf,
                own_comm_bytes_per_s: figures.own.map(|own| own.bytes_per_s),
                cores: figures.own.map(|own| own.capacity),
            })
        })
        .collect()
}

/// What the model takes of a worker from the workers' run.
#[derive(Debug, Clone, Copy, PartialEq)]
struct WorkerFigures {
    /// `perf`: basic operations per second of its time, at its capacity when its own
    /// communication is counted, else per busy second.
    perf: f64,
    /// Its own communication, when counted.
    own: Option<OwnCommunication>,
}

/// A worker's own communication (100) and the capacity (106) it was taken at.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OwnCommunication {
    /// `tput_own` (100).
    bytes_per_s: f64,
    /// `a` (106), cores.
    capacity: f64,
}

/// `perf` and `tput_own` (100) of a worker from the workers' run, whose tasks and results
/// carried `comm_bytes` each and executed `repeats` times.
///
/// Its own communication is the CPU time it spent on its messages per task — its process's
/// beside its compute thread's, and its compute thread's decoding of the task (once) and
/// encoding of the result. The compute thread is taken to decode and encode at the share of a
/// core it executed at (its CPU time over its decoding, busy and encoding seconds; on a CPU
/// quota every step is throttled alike: a worker of a tenth of a core whose decoding took as
/// many seconds as its compute thread's CPU time still executed at a tenth). Of the
/// communication thread's waiting while the tasks compute (`waiting_cpu_s`), which grows with
/// time, only a run's share counts: a task of the workers' run lasts `repeats` executions, a
/// task of a run one.
///
/// A run spends that CPU time and the executions' at the worker's capacity (106): `perf` is
/// the busy-second rate scaled from the compute thread's share to the capacity, and
/// `tput_own` moves `comm_bytes` per `own_cpu / capacity` seconds. Nothing is counted (`perf`
/// per busy second, no `tput_own`) when its tasks wait rather than compute
/// ([`hmw_core::Task::waits`]: its CPU is free for its messages meanwhile), when the run measured
/// no CPU time, when nothing was spent on messages, or when the compute thread used under 5 %
/// of a core (its tasks ran on the communication thread).
fn worker_figures(worker: &WorkerStats, comm_bytes: f64, repeats: u32) -> WorkerFigures {
    let (_, share) = working_share(worker);
    let coding_cpu_s = (worker.decode_s / f64::from(repeats) + worker.encode_s) * share;
    let waiting_cpu_s = worker.waiting_cpu_s * (1.0 - 1.0 / f64::from(repeats));
    let own_cpu_s = (worker.cpu_s - worker.compute_cpu_s - waiting_cpu_s + coding_cpu_s)
        / worker.tasks_computed as f64;
    let per_busy_second = WorkerFigures {
        perf: worker.ops_per_s,
        own: None,
    };
    let Some((perf, capacity)) =
        perf_at_capacity(worker).filter(|_| own_cpu_s > 0.0 && comm_bytes > 0.0)
    else {
        return per_busy_second;
    };
    let own = OwnCommunication {
        bytes_per_s: comm_bytes * capacity / own_cpu_s,
        capacity,
    };
    if !own.bytes_per_s.is_finite() {
        return per_busy_second;
    }
    WorkerFigures {
        perf,
        own: Some(own),
    }
}

/// A worker's row of the workers' table: the `perf` the model takes; per execution of a task
/// (each task executed `repeats` times) but for writing its result and joining it; its own
/// communication of a task's `comm_bytes` (100), done once per task, and the capacity (106)
/// it is taken at.
fn worker_row(
    cluster: &str,
    host: &str,
    worker: &WorkerStats,
    (repeats, comm_bytes): (u32, f64),
    join_s_per_task: f64,
    figures: &WorkerFigures,
) -> String {
    // Per execution: reading the task (decoding, on the worker) and working; per task:
    // writing the result (encoding), and joining it at the master (decoding and gathering).
    let tasks = worker.tasks_computed.max(1) as f64;
    let executions = tasks * f64::from(repeats);
    let (own_ms, cores) = figures.own.map_or(("-".to_owned(), "-".to_owned()), |own| {
        (
            format!("{:.3}", 1e3 * comm_bytes / own.bytes_per_s),
            format!("{:.3}", own.capacity),
        )
    });
    format!(
        "{cluster:<12} {host:<16} {:>12.4e} {:>10.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {own_ms:>9} \
         {cores:>6}\n",
        figures.perf,
        executions / worker.busy_s.max(f64::MIN_POSITIVE),
        1e3 * worker.decode_s / executions,
        1e3 * worker.busy_s / executions,
        1e3 * worker.encode_s / tasks,
        1e3 * join_s_per_task
    )
}

/// The header of the workers' table.
fn workers_header() -> String {
    format!(
        "{:<12} {:<16} {:>12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}\n",
        "cluster",
        "worker",
        "ops/s",
        "tasks/s",
        "read ms",
        "work ms",
        "write ms",
        "join ms",
        "own ms",
        "cores"
    )
}

/// `hmw calibrate` of a plan whose clusters run on their own hosts, through each cluster's
/// launcher (ssh, or Slurm), ranks placed by their machine-file lines as `hmw launch` places
/// them ([`crate::remote`]):
/// - workers: every worker of a cluster at once, every cluster at once (the load a run puts
///   on each host), `--tasks` tasks per worker handed out on demand; a worker's perf is its
///   basic operations per busy second. Hosts shared by several worker lines are measured
///   with all of them computing; the fewer tasks left at the very end of the run (some workers
///   done, others not) are the only time a host carries less than a run's load.
/// - LANs: as on one machine, each cluster's runs on its own hosts, every cluster at once.
/// - WANs: `hmw wan-probe` on each CM's host, the link configured as the CM configures it,
///   across the real network between the CM hosts: round trip, then each direction in turn,
///   while the workers' run computes (as on one machine).
fn calibrate_remote(
    args: &CalibrateArgs,
    plan: &Plan,
    plan_dir: &Path,
    layout: &Layout,
    work: &Path,
) -> Result<MeasuredSystem> {
    let binary = application_binary(layout, plan_dir)?;
    let binary = binary.canonicalize().unwrap_or(binary);
    let synthetic = find_binary("hmw-synthetic", plan_dir)?;
    let synthetic = synthetic.canonicalize().unwrap_or(synthetic);
    let certs = work.join("certs");
    write_certificates(layout, &certs, Target::Deployment)?;
    let mut machine_files = Vec::new();
    let mut clusters = Vec::new();
    for cluster in &layout.clusters {
        let machines = MachineFile::parse(
            Path::new(&format!("{}.hosts", cluster.name)),
            &cluster.machine_file,
        )?;
        let runs = calibration_runs(args, plan, layout, cluster, &machines, &binary, &synthetic)?;
        clusters.push((cluster.name.clone(), cluster.machine_file.clone(), runs));
        machine_files.push(machines);
    }
    let calibration = RemoteCalibration::prepare(plan, clusters, work, &certs, &layout.cms)?;
    let measured = measure_remote(args, plan, layout, &machine_files, &calibration);
    let cleaned = calibration.finish();
    let system = measured?;
    cleaned?;
    Ok(system)
}

/// The calibration runs of one cluster on its own hosts: `perf` (every worker at once, the
/// plan's application), `lan-K` (the synthetic application with K workers), `wan` (a probe
/// per CM, on its host).
fn calibration_runs(
    args: &CalibrateArgs,
    plan: &Plan,
    layout: &Layout,
    cluster: &ClusterLayout,
    machines: &MachineFile,
    binary: &Path,
    synthetic: &Path,
) -> Result<Vec<RunFiles>> {
    let head = &machines.ranks[0].host;
    let head_line = format!("{head} # cluster={}", cluster.name);
    let workers = machines.worker_ranks();
    let mut runs = Vec::new();
    let with_workers = |lines: &mut dyn Iterator<Item = (String, String)>| {
        let mut text = format!("{head_line}\n");
        let mut hosts = vec![head.clone()];
        for (line, host) in lines {
            text.push_str(&line);
            text.push('\n');
            hosts.push(host);
        }
        (text, hosts)
    };
    if !workers.is_empty() {
        let (machine_file, hosts) = with_workers(&mut workers.iter().map(|&r| {
            let line = &machines.ranks[r];
            (rank_line(line), line.host.clone())
        }));
        runs.push(RunFiles {
            name: "perf".into(),
            machine_file,
            hosts,
            // An external cluster's workers compute the parts its sub-master splits tasks
            // into, when the application splits them.
            config: workers_config(&layout.config, args.repeats, cluster.link.is_some())?,
            program: Program::Application(binary.to_owned()),
        });
        let lan = app_config(
            &layout.config,
            Some(&lan_application(&plan.application, LAN_TASKS_MAX)),
        )?;
        for count in lan_worker_counts(workers.len()) {
            let (machine_file, hosts) = with_workers(&mut workers.iter().take(count).map(|&r| {
                let host = machines.ranks[r].host.clone();
                (host.clone(), host)
            }));
            runs.push(RunFiles {
                name: format!("lan-{count}"),
                machine_file,
                hosts,
                config: lan.clone(),
                program: Program::Application(synthetic.to_owned()),
            });
        }
    }
    // The WAN probe: one rank per CM of the cluster, on the CM's host, sending what its CM
    // sends (a client, facing the parent: results; a server: tasks for its child).
    let parent = cluster
        .link
        .as_ref()
        .map(|l| &layout.clusters[l.parent].name);
    let mut probe_args = Vec::new();
    let mut cm_hosts = Vec::new();
    for line in machines.ranks.iter().filter(|r| r.cm.is_some()) {
        let name = line
            .annotations
            .name
            .as_deref()
            .with_context(|| format!("cluster {}: a CM line without name=", cluster.name))?;
        let bytes = match parent {
            Some(parent) if name == cm_name(&cluster.name, parent) => {
                link_message_sizes(plan, &cluster.name)?.1
            }
            _ => {
                let child = line.annotations.cluster.as_deref().with_context(|| {
                    format!("cluster {}: CM {name} without cluster=", cluster.name)
                })?;
                link_message_sizes(plan, child)?.0
            }
        };
        probe_args.extend(["--cm".to_owned(), format!("{name}={bytes}")]);
        cm_hosts.push(line.host.clone());
    }
    if !cm_hosts.is_empty() {
        probe_args.extend([
            "--warmup".to_owned(),
            args.wan_warmup.as_secs_f64().to_string(),
            "--seconds".to_owned(),
            args.wan_seconds.as_secs_f64().to_string(),
        ]);
        runs.push(RunFiles {
            name: "wan".into(),
            machine_file: cluster.machine_file.clone(),
            hosts: cm_hosts,
            config: layout.config.clone(),
            program: Program::WanProbe(probe_args),
        });
    }
    Ok(runs)
}

/// The statistics of a calibration run on real hosts.
fn run_stats(output: RunOutput, what: &str) -> Result<RunStats> {
    let text = output
        .stats
        .with_context(|| format!("{what}: no statistics came back"))?;
    serde_json::from_str(&text).with_context(|| format!("{what}: not run statistics"))
}

/// Run `f` for each cluster at once, in a thread each; the results in cluster order.
fn each_cluster<T: Send>(count: usize, f: impl Fn(usize) -> Result<T> + Sync) -> Vec<Result<T>> {
    std::thread::scope(|scope| {
        let f = &f;
        let threads: Vec<_> = (0..count).map(|i| scope.spawn(move || f(i))).collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow!("a calibration thread panicked")))
            })
            .collect()
    })
}

/// The measurements of [`calibrate_remote`], once everything is staged.
fn measure_remote(
    args: &CalibrateArgs,
    plan: &Plan,
    layout: &Layout,
    machine_files: &[MachineFile],
    calibration: &RemoteCalibration,
) -> Result<MeasuredSystem> {
    let app = &plan.application;
    let timeout = args.run_timeout;
    let workers: Vec<Vec<usize>> = machine_files.iter().map(|m| m.worker_ranks()).collect();
    let links = layout.clusters.iter().any(|c| c.link.is_some());
    let steps: u64 = workers
        .iter()
        .map(|w| {
            u64::from(!w.is_empty())
                + lan_worker_counts(w.len()).len() as u64 * u64::from(args.lan_runs)
        })
        .sum::<u64>()
        + u64::from(links);
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
            .expect("a valid progress template"),
    );

    // Workers: all of them at once, as in a run; the WANs measured meanwhile, under that load
    // (a probe on each CM host, every link at once).
    let phase = Instant::now();
    bar.set_message(if links {
        "workers, every cluster at once, the WANs meanwhile".to_owned()
    } else {
        "workers, every cluster at once".to_owned()
    });
    let has_cms: Vec<bool> = machine_files
        .iter()
        .map(|m| m.ranks.iter().any(|r| r.cm.is_some()))
        .collect();
    let measure_links = || {
        timed(|| -> Result<Vec<wan_probe::ProbeResult>> {
            let mut probes = Vec::new();
            for output in each_cluster(layout.clusters.len(), |i| {
                if !has_cms[i] {
                    return Ok(Vec::new());
                }
                let output = calibration.run(i, "wan", &[], timeout)?;
                wan_probe::results_in(&output.output)
            }) {
                probes.extend(output?);
            }
            Ok(probes)
        })
    };
    // The runs that only load the cores while the WANs are measured keep their files as
    // `CLUSTER.perf-load.*`: `CLUSTER.perf.*` are those of the run the figures come from.
    let perf_runs_of = |tasks_per_worker: u64, kept_as: &str| {
        each_cluster(layout.clusters.len(), |i| {
            let name = &layout.clusters[i].name;
            if workers[i].is_empty() {
                return Ok(None);
            }
            let tasks = tasks_per_worker * workers[i].len() as u64;
            let output = calibration.run_kept_as(
                i,
                "perf",
                kept_as,
                &["--max-tasks".into(), tasks.to_string()],
                timeout,
            )?;
            Ok(Some(run_stats(
                output,
                &format!("cluster {name}, workers"),
            )?))
        })
        .into_iter()
        .collect::<Result<Vec<_>>>()
    };
    let any_workers = workers.iter().any(|w| !w.is_empty());
    let sizing = WorkerRuns::new(args);
    let perf_runs = || {
        sizing.long_enough(
            |tasks| perf_runs_of(tasks, "perf"),
            |runs: &Vec<Option<RunStats>>| shortest_busy_s(runs.iter().flatten()),
        )
    };
    let (perf, wans) = if any_workers {
        let load_runs = || perf_runs_of(sizing.tasks_per_worker.get(), "perf-load");
        under_load(perf_runs, load_runs, links.then_some(measure_links))
    } else {
        (perf_runs(), None)
    };
    bar.inc(workers.iter().filter(|w| !w.is_empty()).count() as u64);
    let mut workers_table = workers_header();
    let mut measured_workers = Vec::new();
    for (i, stats) in perf?.into_iter().enumerate() {
        measured_workers.push(match stats {
            // Rank r of the cluster's run is its worker r (its master is rank 0).
            Some(stats) => measured_workers_of(
                &layout.clusters[i].name,
                &machine_files[i],
                &workers[i],
                1,
                &WorkersRun {
                    stats: &stats,
                    repeats: args.repeats,
                    comm_bytes: plan.application.comm_bytes(),
                },
                &mut workers_table,
            )?,
            None => Vec::new(),
        });
    }
    let workers_time = phase.elapsed();

    // LANs: each cluster's own, every cluster at once.
    let phase = Instant::now();
    let lans = each_cluster(layout.clusters.len(), |i| {
        let name = &layout.clusters[i].name;
        let mut lan = LanCalibration {
            args,
            plan,
            bar: &bar,
            rates: [None; 3],
        };
        lan.measure(name, workers[i].len(), |count, tasks| {
            let output = calibration.run(
                i,
                &format!("lan-{count}"),
                &["--max-tasks".into(), tasks.to_string()],
                timeout,
            )?;
            run_stats(output, &format!("cluster {name}, LAN with {count} workers"))
        })
    });
    let lans: Vec<Vec<LanRuns>> = lans.into_iter().collect::<Result<_>>()?;
    let lan_time = phase.elapsed();

    // WANs: measured under the workers' load above, or alone without workers.
    let mut probes = Vec::new();
    let mut wan_time = Duration::ZERO;
    if links {
        let (measured, time) = measured_or_alone(wans, &bar, measure_links);
        probes = measured?;
        wan_time = time;
        bar.inc(1);
    }
    bar.finish_and_clear();

    let mut system = MeasuredSystem {
        measured_at: Some(now()),
        conditions: Some(format!(
            "hmw calibrate {} on the clusters' own hosts through their launchers (ssh, Slurm), \
             ranks placed by their machine-file lines: every worker at once, {}, each WAN \
             between its CMs' hosts (load average here {} at the end)",
            args.plan.display(),
            if args.lan_runs == 0 {
                "no LAN (the plan's values)"
            } else {
                "every LAN at once"
            },
            load_average()
        )),
        clusters: Vec::new(),
    };
    let mut wan_table = String::new();
    for ((cluster, workers), lan) in layout.clusters.iter().zip(measured_workers).zip(&lans) {
        let mut entry = MeasuredCluster {
            name: cluster.name.clone(),
            lan_bytes_per_s: lan.last().map(LanRuns::mean),
            wan_in_bytes_per_s: None,
            wan_out_bytes_per_s: None,
            wan_rtt_s: None,
            workers,
            lan_runs: lan.iter().map(LanRuns::summary).collect(),
        };
        if let Some(link) = &cluster.link {
            let parent = &layout.clusters[link.parent].name;
            let end = |cm: String| {
                probes.iter().find(|p| p.cm == cm).with_context(|| {
                    format!("WAN of {}: no measurement from CM {cm}", cluster.name)
                })
            };
            let client = end(cm_name(&cluster.name, parent))?;
            let server = end(cm_name(parent, &cluster.name))?;
            let rtt = client
                .rtt_s
                .context("the client end measured no round trip")?;
            let _ = writeln!(
                wan_table,
                "{:<12} WAN in (tasks) {:>12.4e} B/s, out (results) {:>12.4e} B/s, round trip \
                 {:.1} ms ({} - {})",
                cluster.name,
                client.received_bytes_per_s,
                server.received_bytes_per_s,
                rtt * 1e3,
                server.host,
                client.host
            );
            entry.wan_in_bytes_per_s = Some(client.received_bytes_per_s);
            entry.wan_out_bytes_per_s = Some(server.received_bytes_per_s);
            entry.wan_rtt_s = Some(rtt);
        }
        system.clusters.push(entry);
    }
    let lan_tables = layout
        .clusters
        .iter()
        .zip(&lans)
        .map(|(cluster, runs)| lan_table(&cluster.name, app, runs));
    print_tables(
        &workers_table,
        lan_tables,
        &wan_table,
        [workers_time, lan_time, wan_time],
    );
    Ok(system)
}

/// The load average over the last minute, from /proc.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The current time, RFC 3339, from the system's `date`.
fn now() -> String {
    Command::new("date")
        .arg("--iso-8601=seconds")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The calibration's tables, and how long each part took (workers, LANs, WANs).
fn print_tables(
    workers_table: &str,
    lan_tables: impl Iterator<Item = String>,
    wan_table: &str,
    [workers, lans, wans]: [Duration; 3],
) {
    print!("{workers_table}");
    for table in lan_tables {
        print!("{table}");
    }
    print!("{wan_table}");
    println!(
        "measured in: workers {:.0} s, LANs {:.0} s, WANs {:.0} s",
        workers.as_secs_f64(),
        lans.as_secs_f64(),
        wans.as_secs_f64()
    );
}
/// The plan's application binary (`[launch] binary`), found as `hmw launch` finds it.
fn application_binary(layout: &Layout, plan_dir: &Path) -> Result<PathBuf> {
    find_binary(
        layout
            .binary
            .as_deref()
            .context("no application binary: set [launch] binary in the plan")?,
        plan_dir,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_counts_one_half_all() {
        assert!(lan_worker_counts(0).is_empty());
        assert_eq!(lan_worker_counts(1), [1]);
        assert_eq!(lan_worker_counts(2), [1, 2]);
        assert_eq!(lan_worker_counts(3), [1, 2, 3]);
        assert_eq!(lan_worker_counts(4), [1, 2, 4]);
        assert_eq!(lan_worker_counts(7), [1, 4, 7]);
    }

    /// `hmw calibrate` parsed from `args` (the plan's path and options).
    fn calibrate_args(args: &[&str]) -> CalibrateArgs {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            args: CalibrateArgs,
        }
        <Command as clap::Parser>::parse_from(
            std::iter::once("calibrate").chain(args.iter().copied()),
        )
        .args
    }

    #[test]
    fn a_short_workers_run_is_done_again_long_enough() {
        // A worker computes 0.1 s per task: 4 tasks are 0.4 s, under the 2 s asked for.
        let sizing = WorkerRuns::new(&calibrate_args(&["plan.toml", "--tasks", "4"]));
        let runs = std::cell::RefCell::new(Vec::new());
        let run = |tasks: u64| -> Result<f64> {
            runs.borrow_mut().push(tasks);
            Ok(0.1 * tasks as f64)
        };
        let busy_s = sizing.long_enough(run, |busy_s| *busy_s).unwrap();
        assert_eq!(*runs.borrow(), [4, 25]);
        assert!(busy_s >= 2.0);
        // The size found is kept for the next call (the load repeated under the WAN probe).
        sizing.long_enough(run, |busy_s| *busy_s).unwrap();
        assert_eq!(*runs.borrow(), [4, 25, 25]);

        // A run that stays short is given up on after a few tries, not repeated forever.
        let stuck = WorkerRuns::new(&calibrate_args(&["plan.toml", "--tasks", "4"]));
        let tries = Cell::new(0);
        let short = |_| -> Result<()> {
            tries.set(tries.get() + 1);
            Ok(())
        };
        stuck.long_enough(short, |_| 0.01).unwrap();
        assert_eq!(tries.get(), 1 + WorkerRuns::RETRIES);
    }

    #[test]
    fn lan_runs_count_runs_and_zero_measures_no_lan() {
        let plan = Plan::from_toml_str(
            &fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../configs/validation/local-comm.toml"
            ))
            .expect("the scenario is readable"),
        )
        .expect("the scenario is a plan");
        let bar = ProgressBar::hidden();
        let measured = |lan_runs: &str| {
            let args = calibrate_args(&["plan.toml", "--lan-runs", lan_runs, "--lan-seconds", "0"]);
            let mut lan = LanCalibration {
                args: &args,
                plan: &plan,
                bar: &bar,
                rates: [None; 3],
            };
            let mut runs = Vec::new();
            let figures = lan
                .measure("main", 4, |count, tasks| {
                    runs.push(count);
                    Ok(RunStats {
                        wall_s: tasks as f64 * 1e-3,
                        ..RunStats::default()
                    })
                })
                .expect("fake runs measure");
            (
                runs,
                figures.iter().map(|r| r.values.len()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(measured("0"), (vec![], vec![]));
        // One, half and all of four workers, each run twice.
        assert_eq!(measured("2"), (vec![1, 1, 2, 2, 4, 4], vec![2, 2, 2]));
    }

    #[test]
    fn lan_figures() {
        let runs = LanRuns {
            workers: 2,
            tasks_per_run: 10,
            values: vec![1.0, 2.0, 3.0],
            discarded: 0,
        };
        assert_eq!(runs.mean(), 2.0);
        assert_eq!(runs.std_dev(), 1.0);
        assert_eq!((runs.min(), runs.max()), (1.0, 3.0));
    }

    #[test]
    fn the_communication_during_the_work_is_counted_once_at_the_capacity() {
        // 10 tasks executed 4 times on a 0.4-core quota: the compute thread worked 3 s (busy
        // 2.9, decoding 0.08, encoding 0.02) at a share of 0.377 of a core, because the
        // communication thread took the rest of the 0.4 meanwhile (the process used 1.2 s of
        // CPU over the 3 s, the first task in to the last result out 3 s too).
        let worker = WorkerStats {
            tasks_computed: 10,
            busy_s: 2.9,
            decode_s: 0.08,
            encode_s: 0.02,
            compute_cpu_s: 1.13,
            cpu_s: 1.2,
            active_s: 3.0,
            ops_per_s: 2.0e9,
            ..WorkerStats::default()
        };
        let share = 1.13 / 3.0;
        let figures = worker_figures(&worker, 6e6, 4);
        let own = figures.own.unwrap();
        assert!((own.capacity - 0.4).abs() < 1e-12, "{own:?}");
        // Executing at 0.4 rather than at the share: 6 % faster.
        assert!(
            (figures.perf - 2.0e9 * 0.4 / share).abs() < 1e-3,
            "{figures:?}"
        );
        // 8.51 ms of CPU per task on messages (0.07 s beside the compute thread, one decoding
        // and the encoding at the share), 21.3 ms at 0.4 of a core.
        let own_cpu_s = (0.07 + (0.02 + 0.02) * share) / 10.0;
        let own_s = 6e6 / own.bytes_per_s;
        assert!((own_s - own_cpu_s / 0.4).abs() < 1e-12, "{own_s}");
        // Between its parts it waited for the next (3.1 s from first in to last out): some of
        // its communication ran then, and the capacity is bounded by the CPU over that time.
        let waited = WorkerStats {
            active_s: 3.1,
            ..worker.clone()
        };
        let capacity = worker_figures(&waited, 6e6, 4).own.unwrap().capacity;
        assert!((capacity - 1.2 / 3.1).abs() < 1e-12, "{capacity}");
        // Never below the share; without `active_s` (older statistics), the share.
        for active_s in [6.0, 0.0] {
            let worker = WorkerStats {
                active_s,
                ..worker.clone()
            };
            let figures = worker_figures(&worker, 6e6, 4);
            assert_eq!(figures.own.unwrap().capacity, share);
            assert!((figures.perf - 2.0e9).abs() < 1e-3, "{figures:?}");
        }
    }

    /// `tput_own` of a worker whose capacity is unknown (no `active_s`), 4 executions a task.
    fn own_rate(worker: &WorkerStats, comm_bytes: f64) -> f64 {
        let figures = worker_figures(worker, comm_bytes, 4);
        let own = figures.own.expect("a worker that computes");
        assert_eq!(
            own.capacity,
            worker.compute_cpu_s / (worker.busy_s + worker.decode_s + worker.encode_s)
        );
        assert!((figures.perf - worker.ops_per_s).abs() <= 1e-12 * worker.ops_per_s);
        own.bytes_per_s
    }

    #[test]
    fn a_workers_own_communication_is_its_cpu_time_on_messages_at_its_share() {
        // 10 tasks executed 4 times: the compute thread worked 2.1 s (busy 2, decoding 0.08,
        // encoding 0.02) on 0.84 s of CPU, a share of 0.4 of a core; the process used 0.054 s
        // more, and one decoding per task and the encoding 0.04 s of the compute thread's
        // at that share: 7 ms of CPU per task on messages, 17.5 ms of the worker's time.
        let worker = WorkerStats {
            tasks_computed: 10,
            busy_s: 2.0,
            decode_s: 0.08,
            encode_s: 0.02,
            compute_cpu_s: 0.84,
            cpu_s: 0.894,
            ..WorkerStats::default()
        };
        let rate = own_rate(&worker, 6e6);
        assert!((rate - 6e6 / 0.0175).abs() < 1e-6 * rate, "{rate}");
        // Of 0.04 s its communication thread spent waiting while the tasks computed, a run's
        // tasks (one execution, not four) wait a quarter: 0.03 s less, 4 ms of CPU per task,
        // 10 ms of the worker's time.
        let waiting = WorkerStats {
            waiting_cpu_s: 0.04,
            ..worker.clone()
        };
        let rate = own_rate(&waiting, 6e6);
        assert!((rate - 6e6 / 0.010).abs() < 1e-6 * rate, "{rate}");
        // A worker on a tenth of a core whose decoding took about as long as its compute
        // thread's CPU time (tb-matmul-two-clusters' spain-2, its tasks split in 64 parts):
        // it decoded and executed at its share, 0.089 of a core, and spent 1.02 ms of CPU per
        // part on messages, 11.4 ms of its time.
        let throttled = WorkerStats {
            tasks_computed: 247,
            busy_s: 3.8536,
            decode_s: 0.27357,
            encode_s: 0.10317,
            compute_cpu_s: 0.37855,
            cpu_s: 0.61420,
            ..WorkerStats::default()
        };
        let rate = own_rate(&throttled, 98_304.0);
        let own_ms = 1e3 * 98_304.0 / rate;
        assert!((own_ms - 11.36).abs() < 0.01, "{own_ms}");
        // Tasks that sleep leave the CPU free, though the compute thread's CPU (its decoding
        // and encoding, its waits) can be 8 % of its time (local-comm's calibration, 2 MiB
        // tasks of 4 ms of sleep, 4 executions): no rate; no CPU counted, or none on
        // messages: no rate.
        let sleeping = WorkerStats {
            tasks_computed: 149,
            busy_s: 2.555,
            decode_s: 0.120,
            encode_s: 0.013,
            compute_cpu_s: 0.2309,
            cpu_s: 0.3737,
            tasks_wait: true,
            ..worker.clone()
        };
        assert_eq!(worker_figures(&sleeping, 6e6, 4).own, None);
        let unmeasured = WorkerStats {
            compute_cpu_s: 0.0,
            cpu_s: 0.0,
            ..worker.clone()
        };
        assert_eq!(worker_figures(&unmeasured, 6e6, 4).own, None);
        let nothing_beside = WorkerStats {
            decode_s: 0.0,
            encode_s: 0.0,
            cpu_s: 0.84,
            ..worker
        };
        assert_eq!(worker_figures(&nothing_beside, 6e6, 4).own, None);
    }
}
