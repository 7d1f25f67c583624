//! `hmw launch PLAN.toml`: run every cluster of a plan on this machine (one `mpirun` per
//! cluster, a WAN emulator per link, certificates for the communication managers), wait, and
//! clean up; or, with `--print`, write the files and print the commands of a real deployment.

use std::{
    fs,
    net::{SocketAddr, UdpSocket},
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};
use hmw::{
    launch::{layout, ClusterLayout, Layout, LinkLayout, Target},
    model::methodology::predict,
    plan::load_plan,
    stats::RunStats,
};
use hmw_cm::wanem::{DirectionConfig, Wanem, WanemConfig};

#[derive(Debug, clap::Args)]
pub struct LaunchArgs {
    /// The plan (TOML): clusters, machines, [launch] and [run] tables.
    plan: PathBuf,
    /// Write machine files, configuration and certificates, and print each cluster's command
    /// for a real deployment (each cluster started on its own head node) instead of running.
    #[arg(long)]
    print: bool,
    /// Folder for the generated files, logs and statistics (default: target/launch/NAME).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// The application binary (overrides [launch] binary).
    #[arg(long)]
    binary: Option<String>,
    /// Seconds to let the other clusters finish after the main one did, before killing them.
    #[arg(long, default_value_t = 30.0)]
    grace_s: f64,
}

/// A started cluster: its `mpirun`, in a process group of its own.
struct Running {
    name: String,
    child: Child,
    status: Option<ExitStatus>,
}

impl Running {
    /// Kill the whole process group (mpirun and its ranks), by id.
    fn kill(&mut self) {
        if self.status.is_none() {
            // SAFETY: kill(2) with a negative pid signals the process group we created.
            unsafe {
                libc::kill(-(self.child.id() as i32), libc::SIGKILL);
            }
            self.status = self.child.wait().ok();
        }
    }

    fn poll(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }
}

pub(crate) fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
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
    let plan = load_plan(&args.plan)?;
    let plan_dir = args.plan.parent().unwrap_or(Path::new(".")).to_owned();
    let prediction = plan
        .model_input(None)
        .map_err(anyhow::Error::from)
        .and_then(|input| predict(&input).map_err(anyhow::Error::from));
    match &prediction {
        Ok(p) => {
            println!("== predicted ({})", args.plan.display());
            print!("{}", crate::predict::to_text(&plan, p));
        }
        Err(e) => println!("== no prediction ({e:#}); launching every worker of the plan"),
    }
    let target = if args.print {
        Target::Deployment
    } else {
        Target::Local
    };
    let layout = layout(&plan, prediction.as_ref().ok(), target, free_port)
        .with_context(|| format!("{}", args.plan.display()))?;
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/launch").join(&plan.name));
    fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let work = work.canonicalize()?;
    let certs = work.join("certs");
    hmw_cm::keygen::generate(
        &certs,
        &layout.cm_names,
        &["localhost".to_owned(), "127.0.0.1".to_owned()],
    )?;
    let config_path = write_config(&layout, &work, &certs)?;
    let binary_name = args
        .binary
        .clone()
        .or_else(|| layout.binary.clone())
        .context("no application binary: set [launch] binary in the plan or --binary")?;
    let binary = find_binary(&binary_name, &plan_dir)?;
    let commands: Vec<(String, Command, PathBuf)> = layout
        .clusters
        .iter()
        .map(|cluster| {
            let hosts = work.join(format!("{}.hosts", cluster.name));
            fs::write(&hosts, &cluster.machine_file)?;
            let stats = work.join(format!("{}.stats.json", cluster.name));
            let mut command = Command::new("mpirun");
            if args.print {
                command.arg("--hostfile").arg(&hosts);
            } else {
                command.arg("--oversubscribe");
            }
            command
                .args(["-np", &cluster.ranks.to_string()])
                .arg(&binary)
                .arg("-m")
                .arg(&hosts)
                .arg("-c")
                .arg(&config_path)
                .arg("--stats-json")
                .arg(&stats);
            Ok((cluster.name.clone(), command, stats))
        })
        .collect::<Result<_>>()?;
    if args.print {
        for (name, command, _) in &commands {
            println!("# cluster {name}: on its head node");
            println!("{}", shell_line(command));
        }
        println!(
            "# certificates in {} (copy each CM's NAME.pem, NAME.key.pem and ca.pem to its host)",
            certs.display()
        );
        return Ok(());
    }
    let predicted = prediction
        .as_ref()
        .ok()
        .map(|p| (p.run.t_ex_best, p.run.t_ex_worst));
    run_local(&layout, commands, &work, args.grace_s, predicted)
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
    fs::write(&path, toml::to_string(&config)?)?;
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

fn run_local(
    layout: &Layout,
    commands: Vec<(String, Command, PathBuf)>,
    work: &Path,
    grace_s: f64,
    predicted: Option<(f64, f64)>,
) -> Result<()> {
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst))
            .context("cannot catch Ctrl-C")?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let relays: Vec<(String, Wanem)> = layout
        .clusters
        .iter()
        .filter_map(|c: &ClusterLayout| c.link.as_ref().map(|l| (c, l)))
        .map(|(cluster, link)| {
            let relay = runtime
                .block_on(Wanem::start(relay_config(link)))
                .with_context(|| format!("cannot start the WAN emulator of {}", cluster.name))?;
            Ok((cluster.name.clone(), relay))
        })
        .collect::<Result<_>>()?;

    // External clusters first (their CMs connect and wait), the main cluster last.
    let mut running: Vec<Running> = Vec::new();
    let start = Instant::now();
    let main_name = layout.clusters[0].name.clone();
    let mut stats_files = Vec::new();
    for (name, mut command, stats) in commands.into_iter().rev() {
        let is_main = name == main_name;
        command.stdin(Stdio::null()).process_group(0);
        local_mpi_environment(&mut command);
        if !is_main {
            let log = fs::File::create(work.join(format!("{name}.log")))?;
            command.stdout(log.try_clone()?).stderr(log);
        }
        let child = command
            .spawn()
            .with_context(|| format!("cannot start mpirun for cluster {name}"))?;
        println!("== cluster {name}: started (pid {})", child.id());
        // Its process group id too: tools (and tests) stop a cluster with it.
        fs::write(work.join(format!("{name}.pid")), child.id().to_string())?;
        running.push(Running {
            name,
            child,
            status: None,
        });
        stats_files.push(stats);
    }
    let main = running.len() - 1;
    let outcome = loop {
        if interrupted.load(Ordering::SeqCst) {
            break Err(anyhow::anyhow!("interrupted"));
        }
        if let Some(status) = running[main].poll() {
            break Ok(status);
        }
        thread::sleep(Duration::from_millis(50));
    };
    // Let the other clusters see the end and stop; then stop what is left.
    let deadline = Instant::now() + Duration::from_secs_f64(grace_s);
    while outcome.is_ok()
        && !interrupted.load(Ordering::SeqCst)
        && Instant::now() < deadline
        && running.iter_mut().any(|r| r.poll().is_none())
    {
        thread::sleep(Duration::from_millis(50));
    }
    for r in &mut running {
        if r.poll().is_none() {
            println!("== cluster {}: still running, stopped", r.name);
            r.kill();
        }
    }
    for (name, relay) in relays {
        println!("== WAN emulator of {name}:\n{}", relay.counters());
        relay.shutdown();
    }
    for r in running.iter().rev() {
        let status = r.status.map_or("killed".to_owned(), |s| s.to_string());
        println!("== cluster {}: {status}", r.name);
    }
    let status = outcome?;
    let main_stats = &stats_files[main];
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
    Ok(())
}
