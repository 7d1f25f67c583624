//! The calibration on this machine, where `hmw launch` runs the plan: every worker at once, the
//! LANs, the WANs through their emulators; each run one `mpirun`.

use std::{
    fmt::Write as _,
    fs,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};
use hmw_core::{machinefile::MachineFile, stats::RunStats};
use hmw_model::{
    params::{MeasuredCluster, MeasuredSystem},
    plan::Plan,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{
    args::CalibrateArgs,
    lan::{lan_application, lan_worker_counts, LanCalibration, LanRuns},
    run_config::{app_config, application_binary, rank_line, workers_config},
    run_figures::{master_cpu_per_task_s, run_lines, task_time_cv},
    system_file::{load_average, now},
    tables::{lan_table, print_tables, wan_line, workers_header},
    under_load::{measured_or_alone, timed, under_load},
    wan::measure_wans,
    workers::{measured_workers_of, shortest_busy_s, WorkerRuns, WorkersRun},
};
use crate::{
    launch::{find_binary, local_mpi_environment},
    layout::Layout,
    processes::{interrupted, kill_every_descendant, Group, Waited},
};

pub(super) fn calibrate(
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
        oper_cv: None,
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
    let mut master_cpu = None;
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
        master_cpu = master_cpu_per_task_s(&stats);
        system.oper_cv = task_time_cv(&stats.workers);
        workers_table.push_str(&run_lines(master_cpu, system.oper_cv));
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
                    capacity: plan.terms.capacity,
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
            lan_scv: lan.last().and_then(|runs| runs.service_scv(master_cpu)),
            wan_in_bytes_per_s: None,
            wan_out_bytes_per_s: None,
            wan_rtt_s: None,
            wan_in_ramp_s: None,
            wan_out_ramp_s: None,
            workers,
            lan_runs: lan.iter().map(LanRuns::summary).collect(),
            master_cpu_per_task_s: master_cpu,
            cm_cpu_per_task_s: None,
        });
        lan_all.push((cluster.name.clone(), lan));
    }
    let lan_time = phase.elapsed();
    let mut wan_table = String::new();
    let mut wan_time = Duration::ZERO;
    if links {
        let (measured, time) = measured_or_alone(wans, &bar, measure_links);
        wan_time = time;
        for wan in measured? {
            let _ = writeln!(
                wan_table,
                "{}",
                wan_line(&wan.cluster, &wan.tasks, &wan.results, wan.rtt_s)
            );
            if let Some(entry) = system.clusters.iter_mut().find(|c| c.name == wan.cluster) {
                entry.wan_in_bytes_per_s = Some(wan.tasks.bytes_per_s);
                entry.wan_out_bytes_per_s = Some(wan.results.bytes_per_s);
                entry.wan_rtt_s = Some(wan.rtt_s);
                entry.wan_in_ramp_s = Some(wan.tasks.ramp_s);
                entry.wan_out_ramp_s = Some(wan.results.ramp_s);
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let lan_tables = lan_all
        .iter()
        .map(|(name, runs)| lan_table(name, app, runs, master_cpu));
    print_tables(
        &workers_table,
        lan_tables,
        &wan_table,
        [workers_time, lan_time, wan_time],
    );
    Ok(system)
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
