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
use hmw_core::stats::RunStats;
use hmw_model::{
    methodology::{predict, Prediction},
    plan::{load_plan, model_input_with_measured, Plan},
};

use crate::{
    cluster_command::{cluster_command, ClusterFiles},
    keygen::{host_files, write_certificates},
    layout::{layout, ClusterLayout, Layout, LinkLayout, Target},
    ports::free_port,
    predict::MeasuredSource,
    processes::{become_subreaper, catch_signals, interrupted, kill_every_descendant, Group},
    remote::{place, Allocations, Deployment},
};

#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// The plan (TOML): clusters, machines, `[launch]` and `[run]` tables.
    #[arg(required_unless_present = "cleanup")]
    plan: Option<PathBuf>,
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

/// A started cluster: its `mpirun`, leader of a process group of its own.
struct Running {
    name: String,
    group: Group,
    /// Said that it ended before the main cluster.
    reported: bool,
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
    if let Some(state) = &args.cleanup {
        return crate::remote::cleanup(state);
    }
    let plan_path = args.plan.clone().context("no plan")?;
    let plan = load_plan(&plan_path)?;
    let remote =
        crate::remote::is_remote(&plan).with_context(|| plan_path.display().to_string())?;
    let plan_dir = plan_path.parent().unwrap_or(Path::new(".")).to_owned();
    let mut prediction = predicted(&plan, &plan_path, args.measured.as_deref(), None)?;
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
    if !allocations.list.is_empty() {
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
    let commands: Vec<(String, Command, PathBuf)> = layout
        .clusters
        .iter()
        .map(|cluster| {
            let hosts = work.join(format!("{}.hosts", cluster.name));
            fs::write(&hosts, &cluster.machine_file)
                .with_context(|| format!("cannot write {}", hosts.display()))?;
            let stats = work.join(format!("{}.stats.json", cluster.name));
            let files = ClusterFiles {
                hosts: &hosts,
                config: &config_path,
                stats: &stats,
            };
            let command = cluster_command(cluster, &binary, &files, args.print);
            Ok((cluster.name.clone(), command, stats))
        })
        .collect::<Result<_>>()?;
    let predicted = prediction
        .as_ref()
        .ok()
        .map(|p| (p.run.t_ex_best, p.run.t_ex_worst));
    if remote {
        let binary = binary.canonicalize().unwrap_or(binary);
        let (deployment, commands) = Deployment::prepare(
            &plan,
            &layout,
            &work,
            &certs,
            &binary,
            args.keep,
            args.print,
            &allocations.list,
        )?;
        allocations.handed_over();
        if args.print {
            println!(
                "# certificates in {}: each host's files are in its folder above; keep \
                 ca.key.pem off the clusters",
                certs.display()
            );
            return Ok(());
        }
        return run_clusters(
            &layout,
            commands,
            &work,
            args.grace_s,
            predicted,
            Some(&deployment),
        );
    }
    if args.print {
        for (name, command, _) in &commands {
            println!("# cluster {name}: on its head node");
            println!("{}", shell_line(command));
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
        return Ok(());
    }
    run_clusters(&layout, commands, &work, args.grace_s, predicted, None)
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

fn run_clusters(
    layout: &Layout,
    commands: Vec<(String, Command, PathBuf)>,
    work: &Path,
    grace: Duration,
    predicted: Option<(f64, f64)>,
    deployment: Option<&Deployment>,
) -> Result<()> {
    catch_signals()?;
    become_subreaper()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    // On real hosts the WAN is real: no emulator.
    let relays: Vec<(String, Wanem)> = layout
        .clusters
        .iter()
        .filter(|_| deployment.is_none())
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
    let main_name = layout.clusters[0].name.clone();
    let mut stats_files = Vec::new();
    for (name, mut command, stats) in commands.into_iter().rev() {
        if interrupted() {
            break;
        }
        let is_main = name == main_name;
        match deployment {
            // The cluster's processes end when this connection does: its input stays open
            // as long as the launcher lives.
            Some(_) => {
                command.stdin(Stdio::piped());
            }
            None => {
                command.stdin(Stdio::null());
                local_mpi_environment(&mut command);
            }
        }
        if !is_main {
            let path = work.join(format!("{name}.log"));
            let log = fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            command.stdout(log.try_clone()?).stderr(log);
        }
        let group =
            Group::start(&mut command).with_context(|| format!("cannot start cluster {name}"))?;
        let pid = group.id();
        println!("== cluster {name}: started (pid {pid})");
        started.0.push(Running {
            name: name.clone(),
            group,
            reported: false,
        });
        // mpirun's process id, also its process group's. Signalling either stops mpirun
        // alone (each rank runs in a group of its own): SIGTERM makes it stop its ranks;
        // after SIGKILL they come back to the launcher, which kills them when it ends.
        let pid_file = work.join(format!("{name}.pid"));
        fs::write(&pid_file, pid.to_string())
            .with_context(|| format!("cannot write {}", pid_file.display()))?;
        stats_files.push(stats);
    }
    let running = &mut started.0;
    let main = running
        .len()
        .checked_sub(1)
        .filter(|&m| running[m].name == main_name);
    // A remote cluster's watchdog hears from the launcher every second (none listens
    // locally: their input is /dev/null).
    let mut last_beat = Instant::now();
    let mut beat = |running: &mut [Running]| {
        if last_beat.elapsed() >= Duration::from_secs(1) {
            last_beat = Instant::now();
            for r in running.iter_mut() {
                r.group.heartbeat();
            }
        }
    };
    let outcome = loop {
        if interrupted() {
            break None;
        }
        beat(running);
        let Some(main) = main else { break None };
        // A cluster that fails before the main one ends: the master carries on without it (it
        // declares it lost after `lost_after_s`); say so at once. (One that ends well was
        // told to stop: the run is ending.)
        for r in running[..main].iter_mut() {
            if let (Some(status), false) = (r.group.poll(), r.reported) {
                r.reported = true;
                if status.success() {
                    continue;
                }
                println!(
                    "== cluster {}: failed while the main cluster runs ({status}); its log: {}",
                    r.name,
                    work.join(format!("{}.log", r.name)).display()
                );
            }
        }
        if let Some(status) = running[main].group.poll() {
            break Some(status);
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
                beat(running);
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
    let cleaned = deployment.map(|d| d.finish(work));
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
    let Some(status) = outcome else {
        bail!(
            "interrupted after {:.1} s; every cluster stopped; logs in {}",
            start.elapsed().as_secs_f64(),
            work.display()
        );
    };
    let main_stats = &stats_files[stats_files.len() - 1];
    if let Ok(text) = fs::read_to_string(main_stats) {
        if let Ok(stats) = serde_json::from_str::<RunStats>(&text) {
            if let Some((best, worst)) = predicted {
                println!(
                    "== makespan: predicted {best:.3} s (best) to {worst:.3} s (worst), measured \
                     {:.3} s ({:+.1}% from the worst case)",
                    stats.wall_s,
                    100.0 * (stats.wall_s - worst) / worst
                );
            }
            println!(
                "launch clusters={} tasks={} makespan_s={:.3} stats={}",
                layout.clusters.len(),
                stats.tasks,
                stats.wall_s,
                main_stats.display()
            );
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
    Ok(())
}
