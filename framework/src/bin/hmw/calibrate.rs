//! `hmw calibrate PLAN.toml`: measure the system parameters of a plan on this machine, where
//! `hmw launch` runs it — each worker's available performance with the application's own
//! tasks, each LAN with task- and result-sized messages, each emulated WAN link both ways —
//! and write them as a system-parameter file that `hmw predict --measured` takes in place of
//! the plan's hand-written values.

use std::{
    fmt::Write as _,
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};
use hmw::{
    launch::{layout, LinkLayout, Target},
    machinefile::MachineFile,
    model::params::{MeasuredCluster, MeasuredSystem, MeasuredWorker},
    plan::load_plan,
    stats::RunStats,
};
use hmw_cm::{wanem::Wanem, BlockingLink, LinkConfig, Role, TlsConfig};
use indicatif::{ProgressBar, ProgressStyle};

use crate::launch::{find_binary, free_port, local_mpi_environment, relay_config};

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// The plan (TOML), as for `hmw launch`.
    plan: PathBuf,
    /// The system-parameter file to write (TOML).
    #[arg(long, default_value = "system.toml")]
    out: PathBuf,
    /// Tasks each worker runs alone.
    #[arg(long, default_value_t = 8)]
    tasks: u64,
    /// Seconds each WAN direction is measured.
    #[arg(long, default_value_t = 2.0)]
    wan_seconds: f64,
}

/// Measurements of one LAN: bytes per second of each run.
struct LanRuns(Vec<f64>);

impl LanRuns {
    fn mean(&self) -> f64 {
        self.0.iter().sum::<f64>() / self.0.len().max(1) as f64
    }
    fn spread(&self) -> (f64, f64) {
        let min = self.0.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.0.iter().copied().fold(0.0, f64::max);
        (min, max)
    }
}

pub fn run(args: CalibrateArgs) -> Result<()> {
    let plan = load_plan(&args.plan)?;
    let plan_dir = args.plan.parent().unwrap_or(Path::new(".")).to_owned();
    let layout = layout(&plan, None, Target::Local, free_port)
        .with_context(|| format!("{}", args.plan.display()))?;
    let work = PathBuf::from("target/calibrate").join(&plan.name);
    fs::create_dir_all(&work)?;
    let work = work.canonicalize()?;
    let binary = find_binary(
        layout
            .binary
            .as_deref()
            .context("no application binary: set [launch] binary in the plan")?,
        &plan_dir,
    )?;
    let synthetic = find_binary("hmw-synthetic", &plan_dir)?;
    let app = &plan.application;
    let steps: u64 = layout
        .clusters
        .iter()
        .map(|c| c.workers.len() as u64 + 2 + u64::from(c.link.is_some()))
        .sum();
    let bar = ProgressBar::new(steps).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
            .expect("a valid progress template"),
    );
    let mut measured = MeasuredSystem {
        measured_at: Some(now()),
        conditions: Some(format!(
            "hmw calibrate {} on this machine ({} cores), as hmw launch runs it: one mpirun \
             per run, workers emulated by their speed= annotation, WANs by hmw-wanem",
            args.plan.display(),
            std::thread::available_parallelism().map_or(0, |n| n.get())
        )),
        clusters: Vec::new(),
    };
    let mut table = String::new();
    for cluster in &layout.clusters {
        let machines = MachineFile::parse(Path::new(&cluster.name), &cluster.machine_file)?;
        let head = &machines.ranks[0];
        let head_line = format!("{} # cluster={}", head.host, cluster.name);
        let mut workers = Vec::new();
        for rank in machines.worker_ranks() {
            let line = &machines.ranks[rank];
            bar.set_message(format!("{}: {} alone", cluster.name, line.host));
            let hosts = format!("{head_line}\n{}\n", rank_line(line));
            let app_config = app_config(&layout.config, None)?;
            let stats = run_cluster(&binary, &work, &hosts, &app_config, Some(args.tasks))?;
            let worker = stats
                .workers
                .first()
                .context("the calibration run reported no worker")?;
            let _ = writeln!(
                table,
                "{:<12} {:<16} {:>12.4e} ops/s {:>10.3} tasks/s",
                cluster.name, line.host, worker.ops_per_s, worker.tasks_per_s
            );
            workers.push(MeasuredWorker {
                host: line.host.clone(),
                perf: worker.ops_per_s,
            });
            bar.inc(1);
        }
        // LAN: task- and result-sized messages, no compute, with one worker and with all.
        let mut lan = LanRuns(Vec::new());
        for count in [1, machines.worker_ranks().len().max(1)] {
            bar.set_message(format!("{}: LAN with {count} workers", cluster.name));
            let mut hosts = format!("{head_line}\n");
            for rank in machines.worker_ranks().into_iter().take(count) {
                hosts.push_str(&format!("{}\n", machines.ranks[rank].host));
            }
            let tasks = 200u64;
            let probe = format!(
                "tasks = {tasks}\ntask_seconds = 0.0\ntask_bytes = {}\nresult_bytes = {}\n",
                app.task_bytes as u64, app.result_bytes as u64
            );
            let config = app_config(&layout.config, Some(&probe))?;
            let stats = run_cluster(&synthetic, &work, &hosts, &config, None)?;
            lan.0
                .push(tasks as f64 * (app.task_bytes + app.result_bytes) / stats.wall_s);
            bar.inc(1);
        }
        let (low, high) = lan.spread();
        let _ = writeln!(
            table,
            "{:<12} LAN {:>12.4e} B/s (runs from {:.4e} to {:.4e})",
            cluster.name,
            lan.mean(),
            low,
            high
        );
        let mut entry = MeasuredCluster {
            name: cluster.name.clone(),
            lan_bytes_per_s: Some(lan.mean()),
            wan_in_bytes_per_s: None,
            wan_out_bytes_per_s: None,
            workers,
        };
        if let Some(link) = &cluster.link {
            bar.set_message(format!("{}: WAN both ways", cluster.name));
            let plan_cluster = plan.clusters.iter().find(|c| c.name == cluster.name);
            let nt = plan_cluster.map_or(1, |c| c.tasks_per_inter_task) as f64;
            let nr = plan_cluster.map_or(1, |c| c.results_per_inter_result) as f64;
            let task_size = app.task_bytes_inter.unwrap_or(nt * app.task_bytes);
            let result_size = app.result_bytes_inter.unwrap_or(nr * app.result_bytes);
            let seconds = Duration::from_secs_f64(args.wan_seconds);
            let (wan_in, wan_out) = measure_wan(
                link,
                &work,
                task_size as usize,
                result_size as usize,
                seconds,
            )?;
            let _ = writeln!(
                table,
                "{:<12} WAN in {:>12.4e} B/s, out {:>12.4e} B/s",
                cluster.name, wan_in, wan_out
            );
            entry.wan_in_bytes_per_s = Some(wan_in);
            entry.wan_out_bytes_per_s = Some(wan_out);
            bar.inc(1);
        }
        measured.clusters.push(entry);
    }
    bar.finish_and_clear();
    print!("{table}");
    fs::write(&args.out, toml::to_string(&measured)?)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!(
        "wrote {}: use it with hmw predict {} --measured {}",
        args.out.display(),
        args.plan.display(),
        args.out.display()
    );
    Ok(())
}

/// A rank line of a machine file written back, annotations included.
fn rank_line(line: &hmw::machinefile::RankLine) -> String {
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

/// Run one cluster under mpirun and read its statistics.
fn run_cluster(
    binary: &Path,
    work: &Path,
    hosts: &str,
    config: &toml::Table,
    max_tasks: Option<u64>,
) -> Result<RunStats> {
    let hosts_path = work.join("calibrate.hosts");
    let config_path = work.join("calibrate.toml");
    let stats_path = work.join("calibrate.stats.json");
    fs::write(&hosts_path, hosts)?;
    fs::write(&config_path, toml::to_string(config)?)?;
    let _ = fs::remove_file(&stats_path);
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
        .arg(&stats_path);
    if let Some(n) = max_tasks {
        command.args(["--max-tasks", &n.to_string()]);
    }
    local_mpi_environment(&mut command);
    let output = command
        .output()
        .with_context(|| format!("cannot run mpirun {}", binary.display()))?;
    if !output.status.success() {
        bail!(
            "calibration run of {} failed ({}):\n{}",
            binary.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(serde_json::from_str(&fs::read_to_string(&stats_path)?)?)
}

/// Goodput of the emulated WAN `link` each way, through hmw-cm links like the CMs': tasks
/// (`task_size`-byte messages) from the parent's side, results (`result_size`) back.
fn measure_wan(
    link: &LinkLayout,
    work: &Path,
    task_size: usize,
    result_size: usize,
    duration: Duration,
) -> Result<(f64, f64)> {
    let certs = work.join("certs");
    let names = ["calibrate-server".to_owned(), "calibrate-client".to_owned()];
    hmw_cm::keygen::generate(&certs, &names, &["localhost".into(), "127.0.0.1".into()])?;
    let tls = |name: &str| TlsConfig {
        cert: certs.join(format!("{name}.pem")),
        key: certs.join(format!("{name}.key.pem")),
        ca: Some(certs.join("ca.pem")),
        pinned_peer: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    // Steady state only: no outage while measuring.
    let mut steady = link.clone();
    steady.outages.clear();
    let relay = runtime.block_on(Wanem::start(relay_config(&steady)))?;
    let server = BlockingLink::start(LinkConfig::new(
        Role::Server,
        "127.0.0.1",
        link.server_port,
        tls(&names[0]),
    ))?;
    let mut client_config =
        LinkConfig::new(Role::Client, "127.0.0.1", link.client_port, tls(&names[1]));
    client_config.server_name = Some(names[0].clone());
    let client = BlockingLink::start(client_config)?;
    client.wait_connected(Duration::from_secs(20))?;
    let wan_in = goodput(&server, &client, task_size, duration)?;
    let wan_out = goodput(&client, &server, result_size, duration)?;
    server.close();
    client.close();
    relay.shutdown();
    Ok((wan_in, wan_out))
}

/// Bytes per second `to` receives while `from` sends `size`-byte messages for `duration`.
fn goodput(from: &BlockingLink, to: &BlockingLink, size: usize, duration: Duration) -> Result<f64> {
    let message = vec![0x5A; size.max(1)];
    let start = Instant::now();
    let received = std::thread::scope(|scope| {
        scope.spawn(|| {
            while start.elapsed() < duration {
                if from.send(&message).is_err() {
                    break;
                }
            }
        });
        let mut bytes = 0usize;
        let mut last = start;
        while start.elapsed() < duration + Duration::from_millis(500) {
            if let Ok(Some(m)) = to.recv_timeout(Duration::from_millis(50)) {
                bytes += m.len();
                last = Instant::now();
            }
        }
        (bytes, last)
    });
    let (bytes, last) = received;
    let seconds = last.duration_since(start).as_secs_f64();
    if bytes == 0 || seconds <= 0.0 {
        bail!("no message crossed the emulated WAN in {duration:?}");
    }
    Ok(bytes as f64 / seconds)
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
