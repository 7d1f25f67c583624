//! The calibration on the clusters' own hosts, through each cluster's launcher (ssh, or
//! Slurm): the runs of each cluster staged on its hosts, then measured, every cluster at once.

use std::{
    fmt::Write as _,
    path::Path,
    time::{Duration, Instant},
};

use anyhow::{anyhow, Context as _, Result};
use hmw_core::{machinefile::MachineFile, stats::RunStats};
use hmw_model::{
    params::{MeasuredCluster, MeasuredSystem},
    plan::Plan,
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{
    args::CalibrateArgs,
    lan::{lan_application, lan_worker_counts, LanCalibration, LanRuns, LAN_TASKS_MAX},
    run_config::{app_config, application_binary, rank_line, workers_config},
    run_figures::{master_cpu_per_task_s, run_lines, task_time_cv},
    system_file::{load_average, now},
    tables::{lan_table, print_tables, wan_line, workers_header},
    under_load::{measured_or_alone, timed, under_load},
    wan::link_message_sizes,
    workers::{measured_workers_of, shortest_busy_s, WorkerRuns, WorkersRun},
};
use crate::{
    keygen::write_certificates,
    launch::find_binary,
    layout::{cm_name, ClusterLayout, Layout, Target},
    remote::{Program, RemoteCalibration, RunFiles, RunOutput},
    wan_probe::{self, ProbeResult, Received},
};

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
pub(super) fn calibrate_remote(
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
    let perf = perf?;
    // Each cluster's run had its own master on its head: its CPU per task (125); the spread
    // of the tasks' times pooled over every cluster's workers (129).
    let master_cpu: Vec<Option<f64>> = perf
        .iter()
        .map(|stats| stats.as_ref().and_then(master_cpu_per_task_s))
        .collect();
    let oper_cv = task_time_cv(perf.iter().flatten().flat_map(|s| &s.workers));
    for (i, stats) in perf.into_iter().enumerate() {
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
                    capacity: plan.terms.capacity,
                },
                &mut workers_table,
            )?,
            None => Vec::new(),
        });
    }
    for (cluster, c) in layout.clusters.iter().zip(&master_cpu) {
        if c.is_some() {
            workers_table.push_str(&format!("{:<12} ", cluster.name));
            workers_table.push_str(&run_lines(*c, None));
        }
    }
    workers_table.push_str(&run_lines(None, oper_cv));
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
        oper_cv,
    };
    let mut wan_table = String::new();
    for (i, ((cluster, workers), lan)) in layout
        .clusters
        .iter()
        .zip(measured_workers)
        .zip(&lans)
        .enumerate()
    {
        let mut entry = MeasuredCluster {
            name: cluster.name.clone(),
            lan_bytes_per_s: lan.last().map(LanRuns::mean),
            lan_scv: lan.last().and_then(|runs| runs.service_scv(master_cpu[i])),
            wan_in_bytes_per_s: None,
            wan_out_bytes_per_s: None,
            wan_rtt_s: None,
            wan_in_ramp_s: None,
            wan_out_ramp_s: None,
            workers,
            lan_runs: lan.iter().map(LanRuns::summary).collect(),
            master_cpu_per_task_s: master_cpu[i],
            cm_cpu_per_task_s: None,
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
            let received = |p: &ProbeResult| Received {
                bytes_per_s: p.received_bytes_per_s,
                ramp_s: p.received_ramp_s.unwrap_or(0.0),
            };
            let (tasks, results) = (received(client), received(server));
            let _ = writeln!(
                wan_table,
                "{} ({} - {})",
                wan_line(&cluster.name, &tasks, &results, rtt),
                server.host,
                client.host
            );
            entry.wan_in_bytes_per_s = Some(tasks.bytes_per_s);
            entry.wan_out_bytes_per_s = Some(results.bytes_per_s);
            entry.wan_rtt_s = Some(rtt);
            entry.wan_in_ramp_s = client.received_ramp_s;
            entry.wan_out_ramp_s = server.received_ramp_s;
        }
        system.clusters.push(entry);
    }
    let lan_tables = layout
        .clusters
        .iter()
        .zip(&lans)
        .zip(&master_cpu)
        .map(|((cluster, runs), &master)| lan_table(&cluster.name, app, runs, master));
    print_tables(
        &workers_table,
        lan_tables,
        &wan_table,
        [workers_time, lan_time, wan_time],
    );
    Ok(system)
}
