//! `hmw launch PLAN.toml`: run every cluster of a plan on this machine (one `mpirun` per
//! cluster, a WAN emulator per link, certificates for the communication managers), wait, and
//! clean up; or, with `--print`, write the files and print the commands of a real deployment.
//! When the plan's clusters have launchers `ssh` or `slurm`, each runs on its own hosts
//! instead ([`crate::remote`]): the same waiting loop watches one `ssh` per cluster.
//!
//! Cleanup ([`crate::processes`]): each `mpirun` runs in a process group of its own, and the
//! launcher is the parent of every orphan below it (`PR_SET_CHILD_SUBREAPER`), so that ranks
//! whose `mpirun` died (OpenMPI puts each rank in a process group of its own) come back to it.
//! At the end of the run, and on an error starting a later cluster, every group whose `mpirun`
//! is not reaped yet is killed (by its id, SIGKILL), then every process left below the
//! launcher, by process id. Ctrl-C, SIGTERM and SIGHUP only set a flag: the waiting loop sees
//! it and cleans up the same way. If the launcher itself is killed outright, the kernel sends
//! each `mpirun` SIGTERM (`PR_SET_PDEATHSIG`), which `mpirun` passes on to its ranks.

use std::{
    fs,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context as _, Result};
use hmw_cm::wanem::{DirectionConfig, Wanem, WanemConfig};
use hmw_core::{pipeline::PipelineStats, stats::RunStats};
use hmw_model::{
    methodology::{predict, Prediction},
    plan::{load_plan, model_input_with_measured, Plan},
};

pub(crate) use crate::pipeline::Purpose;
use crate::{
    clock::unix_now,
    keygen::{host_files, write_certificates},
    launch_record::{LaunchRecord, JOURNAL},
    layout::{layout, ClusterLayout, Layout, LinkLayout, Target},
    ports::free_port,
    predict::MeasuredSource,
    processes::{
        become_subreaper, catch_signals, interrupted, kill_every_descendant, Group, Heartbeats,
    },
    remote::{place, Allocations, Deployment, RemoteCluster},
    restart::{without_hosts, ClusterStarter, HostWatch, LocalStarter},
    watch::Watch,
};

#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// The plan (TOML): clusters, machines, `[launch]` and `[run]` tables.
    #[arg(required_unless_present_any = ["cleanup", "resume"])]
    plan: Option<PathBuf>,
    /// Start the run of WORK_DIR again where its journal ends: every cluster started anew,
    /// the main master gathering what the journal holds and handing out only the tasks it
    /// lacks. Refused when the plan, the binary or the measured file changed since.
    #[arg(
        long,
        value_name = "WORK_DIR",
        conflicts_with_all = ["plan", "cleanup", "measured", "binary", "work_dir", "print"]
    )]
    resume: Option<PathBuf>,
    /// Keep no journal of the main master's results (a run that fails cannot be resumed).
    #[arg(long, conflicts_with = "resume")]
    no_journal: bool,
    /// Stop every process and remove every run folder that a launcher (killed, or cut from a
    /// host) left on the hosts its state file names (WORK/launch-state.json), then exit.
    #[arg(long, value_name = "STATE", conflicts_with = "plan")]
    cleanup: Option<PathBuf>,
    /// Keep the run folders on the clusters' hosts (launchers ssh and slurm).
    #[arg(long)]
    keep: bool,
    /// System parameters measured by `hmw calibrate`, used in place of the plan's `perf` and
    /// throughputs for the prediction printed first and the workers it selects.
    #[arg(long, value_name = "FILE")]
    measured: Option<PathBuf>,
    /// Write machine files, configuration and certificates, and print each cluster's command
    /// for a real deployment (each cluster started on its own head node) instead of running.
    #[arg(long)]
    print: bool,
    /// Folder for the generated files, logs and statistics (default: target/launch/NAME).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Show the dashboard of `hmw top` in place of the progress lines (every cluster's output
    /// then goes to its log, the launcher's to WORK/launch.log, printed when the run ends).
    #[arg(long, conflicts_with = "print")]
    top: bool,
    /// The application binary (overrides `[launch] binary`).
    #[arg(long)]
    binary: Option<String>,
    /// Seconds to let the other clusters finish after the main one did, before killing them.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value = "30",
        value_parser = crate::seconds,
        allow_negative_numbers = true
    )]
    grace_s: Duration,
}

impl LaunchArgs {
    /// The launch of a calibration run of `plan`, its files in `work_dir`.
    pub(crate) fn calibration(plan: PathBuf, work_dir: PathBuf) -> Self {
        LaunchArgs {
            plan: Some(plan),
            cleanup: None,
            resume: None,
            no_journal: true,
            keep: false,
            measured: None,
            print: false,
            work_dir: Some(work_dir),
            top: false,
            binary: None,
            grace_s: Duration::from_secs(30),
        }
    }
}

/// A started cluster: its `mpirun`, leader of a process group of its own.
struct Running {
    name: String,
    /// Its place in the layout (the main cluster is 0).
    index: usize,
    group: Group,
    /// The watch over its hosts (clusters on their own hosts).
    watch: Option<HostWatch>,
    /// Its hosts the watch found silent, for which its job was stopped.
    silent: Vec<String>,
    /// Said that it ended before the main cluster.
    reported: bool,
    /// When it was (last) started, seconds since the UNIX epoch.
    started_unix_s: f64,
}

/// Every cluster started so far. [`Started::stop`] kills each one's process group that is
/// not reaped yet, then every process left below the launcher (ranks included); dropping it
/// does the same, whatever the way out: an error starting a later cluster, a panic.
#[derive(Default)]
struct Started(Vec<Running>);

impl Started {
    fn stop(&mut self) {
        for r in &mut self.0 {
            r.group.kill();
        }
        let left = kill_every_descendant(Duration::from_secs(10));
        if !left.is_empty() {
            eprintln!("warning: processes {left:?} did not end after SIGKILL");
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The application binary: a path, or a name looked up next to this `hmw`, then on PATH.
pub(crate) fn find_binary(name: &str, plan_dir: &Path) -> Result<PathBuf> {
    let as_path = Path::new(name);
    if as_path.components().count() > 1 {
        let path = if as_path.is_absolute() {
            as_path.to_owned()
        } else {
            plan_dir.join(as_path)
        };
        if path.exists() {
            return Ok(path);
        }
        bail!("the application binary {} does not exist", path.display());
    }
    let beside = std::env::current_exe()?.with_file_name(name);
    if beside.exists() {
        return Ok(beside);
    }
    Ok(PathBuf::from(name))
}

pub fn run(args: LaunchArgs) -> Result<()> {
    run_for(args, Purpose::Run).map(|_| ())
}

/// [`run`] for `purpose`; the main cluster's statistics file.
pub(crate) fn run_for(mut args: LaunchArgs, purpose: Purpose) -> Result<PathBuf> {
    if let Some(state) = &args.cleanup {
        crate::remote::cleanup(state)?;
        return Ok(PathBuf::new());
    }
    let resumed = match &args.resume {
        Some(work) => {
            let record = LaunchRecord::to_resume(work)?;
            println!(
                "== resuming the run of {} (run {} of it), from its journal {}",
                work.display(),
                record.runs_unix_s.len(),
                work.join(JOURNAL).display()
            );
            // What the launcher that died left on the hosts: stopped first (hosts that do not
            // answer are said, not waited for).
            let state = work.join("launch-state.json");
            if state.exists() {
                if let Err(e) = crate::remote::cleanup(&state) {
                    println!("== the earlier run's cleanup: {e:#}");
                }
            }
            args.plan = Some(record.plan.clone());
            args.measured = record.measured.as_ref().map(|(path, _)| path.clone());
            args.binary = Some(record.binary.to_string_lossy().into_owned());
            args.work_dir = Some(work.clone());
            Some(record)
        }
        None => None,
    };
    let plan_path = args.plan.clone().context("no plan")?;
    let plan = load_plan(&plan_path)?;
    let remote =
        crate::remote::is_remote(&plan).with_context(|| plan_path.display().to_string())?;
    let plan_dir = plan_path.parent().unwrap_or(Path::new(".")).to_owned();
    // A pipeline plan: the pipeline model's prediction (its mapping starts the run); the
    // layout then uses every worker.
    let pipeline = match purpose {
        _ if plan.pipeline.is_none() => None,
        Purpose::Run => Some(crate::pipeline::predicted(
            &plan,
            &plan_path,
            args.measured.as_deref(),
        )?),
        Purpose::PipelineCalibration { .. } => {
            println!("== calibrating every node of the pipeline");
            None
        }
    };
    let mut prediction = if plan.pipeline.is_some() {
        Err(anyhow!("a pipeline plan"))
    } else {
        predicted(&plan, &plan_path, args.measured.as_deref(), None)?
    };
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/launch").join(&plan.name));
    fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let work = work.canonicalize()?;
    let state_file = work.join("launch-state.json");
    // Clusters that let Slurm choose their nodes: allocated now, the plan placed on the
    // nodes, the prediction redone for them. Dropped on an error below, the allocations
    // are given back.
    let allocations = if remote && !args.print {
        crate::remote::allocate(&plan, &state_file)?
    } else {
        Allocations::none(&state_file)
    };
    let mut plan = plan;
    if !allocations.list.is_empty() && plan.pipeline.is_none() {
        let mut why = Vec::new();
        for allocation in &allocations.list {
            let name = &allocation.remote.name;
            let (placed, replaced) = place(&plan, name, &allocation.remote.hosts)?;
            plan = placed;
            let nodes = allocation.remote.hosts.join(", ");
            why.push(if replaced.is_empty() {
                format!("Slurm chose the nodes of cluster {name}: {nodes}, the plan's own hosts")
            } else {
                let pairs: Vec<String> = replaced
                    .iter()
                    .map(|(from, to)| format!("{to} for {from}"))
                    .collect();
                format!(
                    "Slurm chose the nodes of cluster {name}: {nodes} ({})",
                    pairs.join(", ")
                )
            });
        }
        prediction = predicted(
            &plan,
            &plan_path,
            args.measured.as_deref(),
            Some(&why.join("; ")),
        )?;
    }
    let target = if args.print || remote {
        Target::Deployment
    } else {
        Target::Local
    };
    let layout = layout(
        &plan,
        prediction.as_ref().ok(),
        target,
        args.binary.as_deref(),
        free_port,
    )
    .with_context(|| format!("{}", plan_path.display()))?;
    let mut layout = layout;
    if let Some(p) = &plan.pipeline {
        let table = crate::pipeline::run_table(&plan, p, pipeline.as_ref(), purpose)?;
        layout
            .config
            .insert("pipeline".into(), toml::Value::Table(table));
    }
    for note in &layout.notes {
        println!("== note: {note}");
    }
    let certs = work.join("certs");
    write_certificates(&layout, &certs, target)?;
    let config_path = write_config(&layout, &work, &certs)?;
    let binary_name = layout
        .binary
        .as_deref()
        .context("no application binary: set [launch] binary in the plan or --binary")?;
    let binary = find_binary(binary_name, &plan_dir)?;
    let resuming = resumed.is_some();
    let record = match resumed {
        Some(record) => record,
        None => {
            let journal = work.join(JOURNAL);
            if journal.exists() && !args.print {
                let old = work.join(format!("{JOURNAL}.old"));
                fs::rename(&journal, &old)
                    .with_context(|| format!("cannot move {} aside", journal.display()))?;
                println!(
                    "== note: the journal of an earlier run in {} is now {} (a new run starts)",
                    work.display(),
                    old.display()
                );
            }
            // A pipeline's controller keeps no journal.
            let journal = !args.no_journal && plan.pipeline.is_none();
            LaunchRecord::new(&plan_path, &binary, args.measured.as_deref(), journal)?
        }
    };
    if !args.print {
        record.write(&work)?;
    }
    let launch_table = plan
        .launch_table()
        .with_context(|| format!("{}: [launch]", plan_path.display()))?;
    let restarts = launch_table.restarts;
    let host_timeout = Duration::try_from_secs_f64(launch_table.host_timeout_s)
        .ok()
        .filter(|t| !t.is_zero())
        .with_context(|| {
            format!(
                "{}: [launch] host_timeout_s = {}: expected seconds > 0",
                plan_path.display(),
                launch_table.host_timeout_s
            )
        })?;
    let names: Vec<String> = layout.clusters.iter().map(|c| c.name.clone()).collect();
    let mut local = LocalStarter {
        clusters: &layout.clusters,
        work: &work,
        binary: &binary,
        config: &config_path,
        record: &record,
        print: args.print,
    };
    // The live state file; the masters' feeds only where they run on this machine.
    let watch = |live_figures: bool| {
        let model = prediction.as_ref().ok().map(|p| (p, plan.application.oper));
        Watch::start(&plan.name, &layout, model, &work, live_figures, args.top)
    };
    let predicted = match &pipeline {
        Some(p) => Some(crate::pipeline::predicted_makespan(p)),
        None => prediction
            .as_ref()
            .ok()
            .map(|p| (p.run.t_ex_best, p.run.t_ex_worst)),
    };
    if remote {
        let binary = binary.canonicalize().unwrap_or_else(|_| binary.clone());
        let journal = work.join(JOURNAL);
        let staged = if resuming {
            Some(cut_torn_tail(&journal)?)
        } else {
            None
        };
        let mut deployment = Deployment::prepare(
            &plan,
            &layout,
            &work,
            &certs,
            &binary,
            args.keep,
            args.print,
            &allocations.list,
            &|path, resume| record.journal_args(path, resume),
            staged.map(|_| journal.as_path()),
        )?;
        allocations.handed_over();
        if args.print {
            println!(
                "# certificates in {}: each host's files are in its folder above; keep \
                 ca.key.pem off the clusters",
                certs.display()
            );
            return Ok(PathBuf::new());
        }
        // The journal comes back as the master writes it: it outlives the main cluster's
        // hosts. Stopped with every process below the launcher at the end.
        if record.journal {
            deployment.follow_journal(&journal, staged.unwrap_or(0))?;
        }
        let clusters = Clusters {
            names: names.clone(),
            machine_files: layout
                .clusters
                .iter()
                .map(|c| c.machine_file.clone())
                .collect(),
            starter: &mut deployment,
            resume: resuming,
            restarts_left: restarts,
            journal: record.journal,
            heartbeats: Heartbeats::start(),
            host_timeout,
            watch: watch(false)?,
        };
        return run_clusters(&layout, clusters, &work, args.grace_s, predicted);
    }
    let machine_files: Vec<String> = layout
        .clusters
        .iter()
        .map(|c| c.machine_file.clone())
        .collect();
    if args.print {
        for (index, machine_file) in machine_files.iter().enumerate() {
            let command = local.command(index, machine_file, false)?;
            println!("# cluster {}: on its head node", names[index]);
            println!("{}", shell_line(&command));
        }
        println!(
            "# certificates in {}: copy each host's files to it, into {} (run.toml's [cm] \
             certs); keep ca.key.pem off the clusters",
            certs.display(),
            certs.display()
        );
        for line in host_files(&layout) {
            println!("#   {line}");
        }
        return Ok(PathBuf::new());
    }
    let clusters = Clusters {
        starter: &mut local,
        names,
        machine_files,
        resume: resuming,
        restarts_left: restarts,
        journal: record.journal,
        heartbeats: Heartbeats::start(),
        host_timeout,
        watch: watch(true)?,
    };
    run_clusters(&layout, clusters, &work, args.grace_s, predicted)
}

/// Cuts the torn tail of the journal at `path` (records a crash left incomplete), so that
/// the copy a remote master resumes from is the copy here: its length.
pub(crate) fn cut_torn_tail(path: &Path) -> Result<u64> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let scan = hmw_core::journal::scan(&bytes)
        .with_context(|| format!("cannot resume from {}", path.display()))?;
    if let Some(torn) = &scan.torn {
        println!(
            "== journal {}: {} bytes torn at its end (a crash before their sync): cut",
            path.display(),
            torn.bytes
        );
        fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|file| file.set_len(scan.good_len as u64))
            .with_context(|| format!("cannot cut {}", path.display()))?;
    }
    Ok(scan.good_len as u64)
}

/// The model's prediction for `plan` (with the measured values of `measured`, when given),
/// printed under its heading; `again`, when the prediction is redone, says why. An error only
/// for a measured file that does not fit the plan: without one, a plan the model cannot take
/// is said and launched with every worker.
fn predicted(
    plan: &Plan,
    plan_path: &Path,
    measured: Option<&Path>,
    again: Option<&str>,
) -> Result<Result<Prediction>> {
    let (prediction, system) = match model_input_with_measured(plan, plan_path, measured) {
        Ok((input, system)) => (predict(&input).map_err(anyhow::Error::from), system),
        Err(e) => (Err(e.into()), None),
    };
    match (&prediction, measured) {
        (Ok(p), measured_file) => {
            let from = match measured_file {
                Some(file) => format!(
                    "{}, measured values from {}",
                    plan_path.display(),
                    file.display()
                ),
                None => plan_path.display().to_string(),
            };
            match again {
                Some(why) => println!("== predicted again ({from}): {why}"),
                None => println!("== predicted ({from})"),
            }
            let source = measured_file
                .zip(system.as_ref())
                .map(|(path, system)| MeasuredSource { path, system });
            print!("{}", crate::predict::to_text(plan, p, source));
        }
        // A measured file that does not fit the plan is an error, not a reason to run blind.
        (Err(e), Some(_)) => return Err(anyhow!("{e:#}")),
        (Err(e), None) => {
            println!("== no prediction ({e:#}); launching every worker of the plan")
        }
    }
    Ok(prediction)
}

fn write_config(layout: &Layout, work: &Path, certs: &Path) -> Result<PathBuf> {
    let mut config = layout.config.clone();
    if let Some(toml::Value::Table(cm)) = config.get_mut("cm") {
        cm.insert(
            "certs".into(),
            toml::Value::String(certs.to_string_lossy().into_owned()),
        );
    }
    let path = work.join("run.toml");
    fs::write(&path, toml::to_string(&config)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

fn shell_line(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The WAN emulator of one link: the child's CM sends to it, it relays to the parent's CM.
pub(crate) fn relay_config(link: &LinkLayout) -> WanemConfig {
    let direction = |rate: Option<f64>| DirectionConfig {
        rate_mbit: rate.map_or(0.0, |bytes| bytes * 8.0 / 1e6),
        delay_ms: link.delay_ms,
        jitter_ms: link.jitter_ms,
        loss: link.loss,
        ..DirectionConfig::default()
    };
    let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    WanemConfig {
        outages: link.outages.clone(),
        client_to_server: direction(link.results_bytes_per_s),
        server_to_client: direction(link.tasks_bytes_per_s),
        ..WanemConfig::symmetric(at(link.client_port), at(link.server_port), direction(None))
    }
}

/// Every cluster runs on this machine: MPI talks over shared memory and loopback only, and
/// (the run being the user's own) may run as root.
pub(crate) fn local_mpi_environment(command: &mut Command) {
    let defaults = [
        ("OMPI_MCA_btl_tcp_if_include", "lo"),
        ("OMPI_MCA_oob_tcp_if_include", "lo"),
    ];
    for (key, value) in defaults {
        if std::env::var_os(key).is_none() {
            command.env(key, value);
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        command
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
}

/// The clusters of a run as `run_clusters` starts them, and starts them again.
struct Clusters<'a> {
    /// What starts each cluster's job.
    starter: &'a mut dyn ClusterStarter,
    /// Each cluster's name and current machine file, the main cluster first.
    names: Vec<String>,
    machine_files: Vec<String>,
    /// The main master resumes from its journal from its first start (`--resume`).
    resume: bool,
    /// Restarts of clusters left in this run (`[launch] restarts`).
    restarts_left: u32,
    /// Whether the main master keeps a journal to restart from.
    journal: bool,
    /// Keeps each remote cluster's watchdog fed, also while the launcher starts one again.
    heartbeats: Heartbeats,
    /// A host silent this long is taken for lost (`[launch] host_timeout_s`).
    host_timeout: Duration,
    /// The live state file (`hmw top`).
    watch: Watch,
}

impl Clusters<'_> {
    /// Starts cluster `index`'s job (resuming the main master when `resume`), its output to
    /// its log (the main cluster's to this terminal), its `mpirun`'s id in `WORK/NAME.pid`.
    fn start(&mut self, index: usize, resume: bool, work: &Path, remote: bool) -> Result<Running> {
        let started_unix_s = unix_now();
        let name = self.names[index].clone();
        let mut command = self
            .starter
            .command(index, &self.machine_files[index], resume)
            .with_context(|| format!("cannot start cluster {name}"))?;
        if remote {
            // The cluster's processes end when this connection does: its input stays open
            // as long as the launcher lives.
            command.stdin(Stdio::piped());
        } else {
            command.stdin(Stdio::null());
            local_mpi_environment(&mut command);
        }
        if index != 0 || self.watch.on_screen() {
            let path = work.join(format!("{name}.log"));
            let log = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            command.stdout(log.try_clone()?).stderr(log);
        }
        let group =
            Group::start(&mut command).with_context(|| format!("cannot start cluster {name}"))?;
        self.heartbeats.add(group.heart());
        let pid = group.id();
        println!("== cluster {name}: started (pid {pid})");
        self.watch.started(&name, pid);
        // mpirun's process id, also its process group's. Signalling either stops mpirun
        // alone (each rank runs in a group of its own): SIGTERM makes it stop its ranks;
        // after SIGKILL they come back to the launcher, which kills them when it ends.
        let pid_file = work.join(format!("{name}.pid"));
        fs::write(&pid_file, pid.to_string())
            .with_context(|| format!("cannot write {}", pid_file.display()))?;
        let watch = self.starter.prober(index).map(|prober| {
            let hosts = RemoteCluster::hosts_of(&self.machine_files[index]);
            HostWatch::new(prober, &hosts, self.host_timeout)
        });
        Ok(Running {
            name,
            index,
            group,
            reported: false,
            watch,
            silent: Vec::new(),
            started_unix_s,
        })
    }

    /// Cluster `index`'s job died (`status`): started again without the hosts that do not
    /// answer, while restarts are left; the main master resumes from its journal. Whether it
    /// was.
    fn restart(
        &mut self,
        running: &mut Running,
        status: std::process::ExitStatus,
        work: &Path,
        remote: bool,
    ) -> bool {
        let (index, name) = (running.index, running.name.clone());
        let why = if self.restarts_left == 0 {
            Some("no restart left ([launch] restarts)".to_string())
        } else if index == 0 && !self.journal {
            Some("the main master kept no journal to resume from".to_string())
        } else {
            None
        };
        if let Some(why) = why {
            println!("== cluster {name}: failed ({status}); not started again: {why}");
            return false;
        }
        let hosts = RemoteCluster::hosts_of(&self.machine_files[index]);
        let mut lost = self.starter.unreachable(index, &hosts);
        for host in std::mem::take(&mut running.silent) {
            if !lost.contains(&host) {
                lost.push(host);
            }
        }
        let machine_file = match without_hosts(&self.machine_files[index], &lost) {
            Ok(file) => file,
            Err(e) => {
                println!(
                    "== cluster {name}: failed ({status}); hosts {lost:?} do not answer and it \
                     cannot go on without them: {e:#}"
                );
                return false;
            }
        };
        self.restarts_left -= 1;
        println!(
            "== cluster {name}: failed ({status}); started again{}{} ({} restarts left)",
            if lost.is_empty() {
                String::new()
            } else {
                format!(" without {}", lost.join(", "))
            },
            if index == 0 {
                ", its master from the journal"
            } else {
                ""
            },
            self.restarts_left
        );
        self.machine_files[index] = machine_file;
        match self.start(index, index == 0, work, remote) {
            Ok(started) => {
                *running = started;
                true
            }
            Err(e) => {
                println!("== cluster {name}: {e:#}");
                false
            }
        }
    }
}

fn run_clusters(
    layout: &Layout,
    mut clusters: Clusters<'_>,
    work: &Path,
    grace: Duration,
    predicted: Option<(f64, f64)>,
) -> Result<PathBuf> {
    catch_signals()?;
    let remote = clusters.starter.remote();
    become_subreaper()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    // On real hosts the WAN is real: no emulator.
    let relays: Vec<(String, Wanem)> = layout
        .clusters
        .iter()
        .filter(|_| !remote)
        .filter_map(|c: &ClusterLayout| c.link.as_ref().map(|l| (c, l)))
        .map(|(cluster, link)| {
            let relay = runtime
                .block_on(Wanem::start(relay_config(link)))
                .with_context(|| format!("cannot start the WAN emulator of {}", cluster.name))?;
            Ok((cluster.name.clone(), relay))
        })
        .collect::<Result<_>>()?;

    // External clusters first (their CMs connect and wait), the main cluster last.
    let mut started = Started::default();
    let start = Instant::now();
    let launched_unix_s = unix_now();
    let main_name = layout.clusters[0].name.clone();
    for index in (0..clusters.names.len()).rev() {
        if interrupted() {
            break;
        }
        let resume = index == 0 && clusters.resume;
        started.0.push(clusters.start(index, resume, work, remote)?);
    }
    let main_stats = work.join(format!("{main_name}.stats.json"));
    let running = &mut started.0;
    let main = running
        .len()
        .checked_sub(1)
        .filter(|&m| running[m].name == main_name);
    let outcome = loop {
        if interrupted() {
            break None;
        }
        let Some(main) = main else { break None };
        // A cluster that fails before the main one ends is started again, without the hosts
        // that stopped answering, while restarts are left; the master takes its tasks back
        // as soon as it is back (or after `lost_after_s`). (One that ends well was told to
        // stop: the run is ending.)
        for r in running.iter_mut().filter(|r| !r.reported) {
            let silent = r.watch.as_mut().map(HostWatch::lost).unwrap_or_default();
            if !silent.is_empty() && r.group.poll().is_none() {
                println!(
                    "== cluster {}: {} silent for {:.0} s: its job is stopped",
                    r.name,
                    silent.join(", "),
                    clusters.host_timeout.as_secs_f64()
                );
                r.group.kill();
                r.silent = silent;
            }
        }
        for r in running[..main].iter_mut() {
            if let (Some(status), false) = (r.group.poll(), r.reported) {
                if status.success() || clusters.restart(r, status, work, remote) {
                    r.reported = status.success();
                    continue;
                }
                r.reported = true;
                println!(
                    "== cluster {}: failed while the main cluster runs ({status}); its log: {}",
                    r.name,
                    work.join(format!("{}.log", r.name)).display()
                );
            }
        }
        clusters.watch.processes(
            running
                .iter_mut()
                .map(|r| (r.name.as_str(), r.group.poll())),
        );
        // The main cluster that fails starts again, its master from the journal, while the
        // other clusters keep their work and wait for it.
        if let Some(status) = running[main].group.poll() {
            if status.success() || !clusters.restart(&mut running[main], status, work, remote) {
                break Some(status);
            }
        }
        thread::sleep(Duration::from_millis(50));
    };
    match outcome {
        // Let the other clusters see the end and stop; then stop what is left.
        Some(status) if status.success() => {
            let deadline = Instant::now() + grace;
            while !interrupted()
                && Instant::now() < deadline
                && running.iter_mut().any(|r| r.group.poll().is_none())
            {
                clusters.watch.processes(
                    running
                        .iter_mut()
                        .map(|r| (r.name.as_str(), r.group.poll())),
                );
                thread::sleep(Duration::from_millis(50));
            }
        }
        // The main cluster failed: nobody will tell the others to stop.
        Some(status) => println!("== cluster {main_name}: failed ({status}); stopping the others"),
        None => println!("== interrupted: stopping every cluster"),
    }
    for r in running.iter_mut() {
        if r.group.poll().is_none() {
            println!("== cluster {}: still running, stopped", r.name);
        }
    }
    // Every group not reaped yet, then whatever is left below the launcher (ranks whose
    // mpirun died included).
    started.stop();
    let cleaned = clusters.starter.finish(work);
    let running = &started.0;
    for (name, relay) in relays {
        println!("== WAN emulator of {name}:\n{}", relay.counters());
        relay.shutdown();
    }
    for r in running.iter().rev() {
        let status = r
            .group
            .status()
            .map_or("killed".to_owned(), |s| s.to_string());
        println!("== cluster {}: {status}", r.name);
    }
    if let Some(Err(e)) = &cleaned {
        println!("== cleanup: {e:#}");
    }
    let cleanup_failed = matches!(cleaned, Some(Err(_)));
    clusters
        .watch
        .processes(running.iter().map(|r| (r.name.as_str(), r.group.status())));
    clusters.watch.finish(
        match outcome {
            None => "interrupted",
            Some(status) if status.success() => "completed",
            Some(_) => "failed",
        },
        &main_stats,
    );
    let Some(status) = outcome else {
        bail!(
            "interrupted after {:.1} s; every cluster stopped; logs in {}",
            start.elapsed().as_secs_f64(),
            work.display()
        );
    };
    if let Ok(text) = fs::read_to_string(&main_stats) {
        if let Ok(stats) = serde_json::from_str::<RunStats>(&text) {
            let resumed = stats.journal.as_ref().map_or(0, |j| j.resumed_tasks);
            if resumed > 0 {
                println!(
                    "== resumed: {resumed} tasks gathered from the journal, {} in this run \
                     (the prediction below is the whole run's)",
                    stats.tasks
                );
            }
            if let Some((best, worst)) = predicted {
                println!(
                    "== makespan: predicted {best:.3} s (best) to {worst:.3} s (worst), measured \
                     {:.3} s ({:+.1}% from the worst case)",
                    stats.wall_s,
                    100.0 * (stats.wall_s - worst) / worst
                );
            }
            let started_at = |name: &str| {
                running
                    .iter()
                    .find(|r| r.name == name)
                    .map(|r| r.started_unix_s)
            };
            let startup = crate::startup::startup(&stats, launched_unix_s, started_at).map_or_else(
                String::new,
                |s| {
                    println!(
                        "== startup: every link up {:.1} s after the launch (the clusters' own \
                         starts overlapped {:.1} times)",
                        s.all_links_s, s.overlap
                    );
                    format!(
                        " startup_s={:.2} startup_overlap={:.1}",
                        s.all_links_s, s.overlap
                    )
                },
            );
            println!(
                "launch clusters={} tasks={} makespan_s={:.3}{startup} stats={}",
                layout.clusters.len(),
                stats.tasks,
                stats.wall_s,
                main_stats.display()
            );
        } else if let Ok(stats) = serde_json::from_str::<PipelineStats>(&text) {
            crate::pipeline::print_outcome(&stats, predicted, layout.clusters.len(), &main_stats);
        }
    }
    println!("== wall time {:.1} s", start.elapsed().as_secs_f64());
    if !status.success() {
        bail!(
            "the main cluster failed ({status}); logs in {}",
            work.display()
        );
    }
    if cleanup_failed {
        bail!("the run ended but the cleanup of some hosts failed (said above)");
    }
    Ok(main_stats)
}
