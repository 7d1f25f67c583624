//! The WAN probes on this machine: a pair of hmw-cm links per WAN, configured as the
//! communication managers configure theirs, through the link's emulator.

use std::{path::Path, time::Duration};

use anyhow::{anyhow, Context as _, Result};
use hmw_cm::{wanem::Wanem, BlockingLink, Role};
use hmw_core::{
    config::{CmConfig, ConfigFile},
    machinefile::MachineFile,
};
use hmw_model::plan::Plan;

use super::args::CalibrateArgs;
use crate::{
    keygen::write_certificates,
    launch::relay_config,
    layout::{cm_name, Layout, Target},
    wan_probe::{cm_config, echo, exchange, ping, wait_connected, Received},
};

/// What was measured of the WAN link of a cluster to its parent.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct WanMeasured {
    /// The cluster.
    pub(super) cluster: String,
    /// Tasks, parent -> cluster: goodput (bytes per second) and what the link lost to its
    /// ramp (170).
    pub(super) tasks: Received,
    /// Results, cluster -> parent.
    pub(super) results: Received,
    /// The round trip, seconds.
    pub(super) rtt_s: f64,
}

/// Each WAN link of the layout, measured.
pub(super) fn measure_wans(
    args: &CalibrateArgs,
    plan: &Plan,
    layout: &Layout,
    work: &Path,
) -> Result<Vec<WanMeasured>> {
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
    let measured: Vec<(Result<Received>, Result<Received>)> = std::thread::scope(|scope| {
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
                let joined = |handle: std::thread::ScopedJoinHandle<'_, Result<Received>>| {
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
        out.push(WanMeasured {
            cluster: p.cluster.to_owned(),
            tasks: wan_in,
            results: wan_out,
            rtt_s: rtt,
        });
    }
    Ok(out)
}

/// The sizes of the messages on the link of cluster `name` to its parent, bytes: its
/// inter-cluster tasks and results.
pub(super) fn link_message_sizes(plan: &Plan, name: &str) -> Result<(usize, usize)> {
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
