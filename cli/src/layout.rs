//! From a plan to the processes of a multi-cluster run: one machine file per cluster, the run
//! configuration, the communication managers' links and their WAN emulation.
//!
//! This module only computes the layout; `hmw launch` writes it out, generates certificates,
//! starts the WAN emulators and one `mpirun` per cluster.
//!
//! Plan keys read here (beside the model's):
//! ```toml
//! [launch]
//! binary = "hmw-synthetic"     # the application: next to `hmw`, or a path
//! reference_perf = 20.0        # a worker whose `perf` is this runs at speed 1 (emulation)
//! [launch.application]         # the application's own [application] settings
//! tasks = 200                  # must agree with [application] tasks (checked)
//! [launch.cm]                  # [cm] settings of the communication managers
//! lost_after_s = 30
//!
//! [run]                        # the framework's [run] settings (load_balance, ...)
//!
//! [[cluster]]
//! # ...
//! [cluster.launch]
//! parent = "argentina"         # the cluster it hangs from (default: the main cluster)
//! wan_delay_ms = 25            # one-way delay of the emulated WAN
//! wan_jitter_ms = 0
//! wan_loss = 0.0               # random loss, each way
//! wan_outages = ["30-50"]      # seconds from the start when the link is down
//! emulate_rates = true         # limit each way to wan_in/out_bytes_per_s
//! ```
//!
//! The plan says some things twice, once for the model and once for the run; the layout checks
//! that they agree ([`layout`]): `[launch.application]` `tasks`, `task_bytes` and
//! `result_bytes` where given (`hmw-synthetic` gets `tasks` from `[application]` when it is
//! absent), and `[run] reassign_last_task`, which takes `[model] reassign_last_task` unless set.

use std::{
    collections::{BTreeMap, HashSet},
    fmt::Write as _,
};

use hmw_core::machinefile::process_hosts;
use hmw_wan::Outage;

use hmw_model::{
    external::request_window,
    methodology::Prediction,
    plan::{
        launch::{ClusterLaunch, Launcher},
        ClusterPlan, Plan, Role,
    },
};

/// A plan that cannot be launched.
#[derive(Debug, thiserror::Error)]
#[error("{context}: {message}")]
pub struct LaunchError {
    /// Which table or cluster.
    pub context: String,
    pub message: String,
}

fn error(context: impl Into<String>, message: impl Into<String>) -> LaunchError {
    LaunchError {
        context: context.into(),
        message: message.into(),
    }
}

/// How the layout is meant to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Every cluster on this machine, links on loopback through WAN emulators.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))] // only launch and calibrate
    Local,
    /// Each cluster on its own hosts, links direct between the CM hosts.
    Deployment,
}

/// The WAN link between a cluster and its parent.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkLayout {
    /// Index of the parent cluster in [`Layout::clusters`].
    pub parent: usize,
    /// The parent's CM listens here.
    pub server_port: u16,
    /// The child's CM connects here: the emulator's port locally, the server's otherwise.
    pub client_port: u16,
    /// Emulated rate parent -> child (tasks), bytes/s; `None` = unlimited.
    pub tasks_bytes_per_s: Option<f64>,
    /// Emulated rate child -> parent (results), bytes/s.
    pub results_bytes_per_s: Option<f64>,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub loss: f64,
    pub outages: Vec<Outage>,
}

/// One cluster's part of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterLayout {
    pub name: String,
    /// The enhanced machine file.
    pub machine_file: String,
    pub ranks: usize,
    /// The link to its parent (external clusters).
    pub link: Option<LinkLayout>,
    /// Workers taking part.
    pub workers: Vec<String>,
    /// How its ranks start (`[cluster.launch] launcher`).
    pub launcher: Launcher,
}

/// One communication manager of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmLayout {
    /// The name of its certificate (`CLUSTER-PEER`).
    pub name: String,
    /// The cluster it runs in.
    pub cluster: String,
    /// The host it runs on: the cluster's `cm` machine (its head when it has none).
    pub host: String,
}

/// Everything `hmw launch` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// The main cluster first, then the others in plan order.
    pub clusters: Vec<ClusterLayout>,
    /// The run configuration shared by every cluster (`certs` is filled by the launcher).
    pub config: toml::Table,
    /// The communication managers, each needing a certificate, in machine-file order.
    pub cms: Vec<CmLayout>,
    pub binary: Option<String>,
    /// What the layout derived from the plan rather than read from it, one sentence each
    /// (`hmw launch` prints them).
    pub notes: Vec<String>,
}

impl Layout {
    /// Each CM certificate's subject alternative names beside its name: on this machine the
    /// loopback names the CMs connect to, in a deployment its own host only (a key staged on
    /// one host cannot pose as another host's CM).
    pub fn certificate_sans(&self, target: Target) -> Vec<(String, Vec<String>)> {
        self.cms
            .iter()
            .map(|cm| {
                let sans = match target {
                    Target::Local => vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
                    Target::Deployment => vec![cm.host.clone()],
                };
                (cm.name.clone(), sans)
            })
            .collect()
    }
}

/// The most bytes of encoding a plan's message size may add to the application's payload
/// (`[application] task_bytes` is the serialised task, `[launch.application] task_bytes` the
/// payload the application puts in it): 64 bytes or 1 %, whichever is larger.
pub fn encoding_slack(payload_bytes: f64) -> f64 {
    (0.01 * payload_bytes).max(64.0)
}

/// Check that what the plan says twice agrees: `[launch.application]` against `[application]`
/// (tasks exactly; task and result sizes up to [`encoding_slack`] of encoding), and
/// `[run] reassign_last_task` against `[model] reassign_last_task`. Fills what it can derive
/// into `application` and `run`, and says so in the returned notes.
fn reconcile(
    plan: &Plan,
    binary: Option<&str>,
    application: &mut toml::Table,
    run: &mut toml::Table,
) -> Result<Vec<String>, LaunchError> {
    let mut notes = Vec::new();
    let model = &plan.application;
    let number = |application: &toml::Table, key: &str| -> Result<Option<f64>, LaunchError> {
        match application.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(n)) => Ok(Some(*n as f64)),
            Some(toml::Value::Float(x)) => Ok(Some(*x)),
            Some(other) => Err(error(
                format!("[launch.application] {key}"),
                format!("expected a number, found `{other}`"),
            )),
        }
    };
    match number(application, "tasks")? {
        Some(tasks) if tasks != model.tasks as f64 => {
            return Err(error(
                "[launch.application] tasks",
                format!(
                    "{tasks} disagrees with [application] tasks = {}: the model would predict \
                    another run than the one launched; make them equal",
                    model.tasks
                ),
            ));
        }
        Some(_) => {}
        None if is_synthetic(binary) => {
            application.insert("tasks".into(), toml::Value::Integer(model.tasks as i64));
            notes.push(format!(
                "[launch.application] tasks not set: the application gets [application] tasks \
                = {}",
                model.tasks
            ));
        }
        None => {}
    }
    for (key, serialised) in [
        ("task_bytes", model.task_bytes),
        ("result_bytes", model.result_bytes),
    ] {
        let Some(payload) = number(application, key)? else {
            continue;
        };
        let slack = encoding_slack(payload);
        if serialised < payload || serialised > payload + slack {
            return Err(error(
                format!("[launch.application] {key}"),
                format!(
                    "{payload} bytes disagrees with [application] {key} = {serialised}: the \
                    model's size is the application's payload plus at most {slack:.0} bytes \
                    of encoding"
                ),
            ));
        }
    }
    match run.get("reassign_last_task") {
        Some(toml::Value::Boolean(value)) if *value != plan.reassign_last_task => {
            notes.push(format!(
                "[run] reassign_last_task = {value} overrides [model] reassign_last_task = {}: \
                the run does not do what the prediction assumes",
                plan.reassign_last_task
            ));
        }
        Some(toml::Value::Boolean(_)) => {}
        Some(other) => {
            return Err(error(
                "[run] reassign_last_task",
                format!("expected true or false, found `{other}`"),
            ))
        }
        None => {
            run.insert(
                "reassign_last_task".into(),
                toml::Value::Boolean(plan.reassign_last_task),
            );
            notes.push(format!(
                "[run] reassign_last_task not set: the run uses [model] reassign_last_task = {}",
                plan.reassign_last_task
            ));
        }
    }
    Ok(notes)
}

/// Whether the application binary is the synthetic application (whose `[application]` table
/// has `tasks`, `task_bytes` and `result_bytes`).
fn is_synthetic(binary: Option<&str>) -> bool {
    binary
        .and_then(|b| std::path::Path::new(b).file_name())
        .is_some_and(|name| name == "hmw-synthetic")
}

/// The name of the certificate of the CM of cluster `from` facing cluster `to`.
pub fn cm_name(from: &str, to: &str) -> String {
    format!("{from}-{to}")
}

fn host_of(cluster: &ClusterPlan, role: Role) -> Option<&str> {
    cluster
        .machines
        .iter()
        .find(|m| m.role == role)
        .map(|m| m.host.as_str())
}

/// The host of a cluster's CMs: its `cm` machine, else its head (its master when `main`, its
/// sub-master otherwise), as its machine file places them.
fn cm_host_of(cluster: &ClusterPlan, main: bool) -> Option<&str> {
    host_of(cluster, Role::Cm)
        .or_else(|| host_of(cluster, if main { Role::Master } else { Role::Submaster }))
}

/// Lay a plan out. `prediction` (when the model could evaluate the plan) selects the workers
/// and, with `[run] load_balance = true`, bounds each cluster's share; `binary`, when given
/// (`hmw launch --binary`), replaces `[launch] binary`, so that what depends on the
/// application (`hmw-synthetic` gets `[application] tasks`) follows the binary that runs;
/// `port` hands out ports for the links.
pub fn layout(
    plan: &Plan,
    prediction: Option<&Prediction>,
    target: Target,
    binary: Option<&str>,
    mut port: impl FnMut() -> u16,
) -> Result<Layout, LaunchError> {
    let mut launch = plan
        .launch_table()
        .map_err(|e| error("[launch]", e.to_string()))?;
    if let Some(binary) = binary {
        launch.binary = Some(binary.to_owned());
    }
    let cluster_launch: Vec<ClusterLaunch> = plan
        .clusters
        .iter()
        .map(|c| {
            c.launch_settings()
                .map_err(|e| error(format!("cluster {}: launch", c.name), e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    let index: BTreeMap<&str, usize> = plan
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let main = plan.clusters.iter().position(|c| c.main).unwrap_or(0);

    // Parents, and the workers each cluster uses.
    let mut parents = vec![None; plan.clusters.len()];
    for (i, c) in plan.clusters.iter().enumerate() {
        if i == main {
            continue;
        }
        let parent = match &cluster_launch[i].parent {
            Some(name) => *index.get(name.as_str()).ok_or_else(|| {
                error(
                    format!("cluster {}: launch.parent", c.name),
                    format!("no cluster named `{name}`"),
                )
            })?,
            None => main,
        };
        parents[i] = Some(parent);
    }
    for start in 0..plan.clusters.len() {
        let mut at = start;
        for _ in 0..=plan.clusters.len() {
            match parents[at] {
                Some(p) => at = p,
                None => break,
            }
        }
        if parents[at].is_some() {
            return Err(error(
                format!("cluster {}: launch.parent", plan.clusters[start].name),
                "the parents form a cycle",
            ));
        }
    }
    let selected: Vec<Vec<String>> = plan
        .clusters
        .iter()
        .map(|c| match prediction {
            Some(p) => p
                .clusters
                .iter()
                .find(|pc| pc.name == c.name)
                .map(|pc| pc.workers.clone())
                .unwrap_or_default(),
            None => c.workers().map(|m| m.host.clone()).collect(),
        })
        .collect();
    let children: Vec<Vec<usize>> = (0..parents.len())
        .map(|i| {
            (0..parents.len())
                .filter(|&c| parents[c] == Some(i))
                .collect()
        })
        .collect();
    // A cluster takes part when it has workers or leads to clusters that do.
    let mut takes_part = vec![false; plan.clusters.len()];
    mark_taking_part(main, &selected, &children, &mut takes_part);
    takes_part[main] = true;

    // With load balance, each link carries at most its subtree's worst-case balanced share.
    let load_balance = plan
        .run
        .as_ref()
        .and_then(|r| r.get("load_balance"))
        .and_then(toml::Value::as_bool)
        .unwrap_or(false);
    let own_share: Vec<u64> = plan
        .clusters
        .iter()
        .map(|c| {
            prediction
                .and_then(|p| p.clusters.iter().find(|pc| pc.name == c.name))
                .map_or(0, |pc| pc.tasks_worst)
        })
        .collect();

    let mut links: Vec<Option<LinkLayout>> = vec![None; plan.clusters.len()];
    for (i, c) in plan.clusters.iter().enumerate() {
        let (Some(parent), true) = (parents[i], takes_part[i]) else {
            continue;
        };
        let l = &cluster_launch[i];
        let outages = l
            .wan_outages
            .iter()
            .map(|o| {
                o.parse::<Outage>()
                    .map_err(|m| error(format!("cluster {}: launch.wan_outages", c.name), m))
            })
            .collect::<Result<_, _>>()?;
        let server_port = port();
        let client_port = match target {
            Target::Local => port(),
            Target::Deployment => server_port,
        };
        links[i] = Some(LinkLayout {
            parent,
            server_port,
            client_port,
            tasks_bytes_per_s: c.wan_in_bytes_per_s.filter(|_| l.emulate_rates),
            results_bytes_per_s: c.wan_out_bytes_per_s.filter(|_| l.emulate_rates),
            delay_ms: l.wan_delay_ms,
            jitter_ms: l.wan_jitter_ms,
            loss: l.wan_loss,
            outages,
        });
    }

    let mut clusters = Vec::new();
    let mut cms = Vec::new();
    let mut order: Vec<usize> = vec![main];
    order.extend((0..plan.clusters.len()).filter(|&i| i != main && takes_part[i]));
    for &i in &order {
        let c = &plan.clusters[i];
        let mut text = String::new();
        let _ = writeln!(
            text,
            "# cluster {} (generated by hmw launch from the plan)",
            c.name
        );
        let head = host_of(
            c,
            if i == main {
                Role::Master
            } else {
                Role::Submaster
            },
        )
        .unwrap_or("localhost");
        let _ = writeln!(text, "{head} # cluster={}", c.name);
        let mut workers = Vec::new();
        // Hashed: a cluster may have tens of thousands of workers.
        let chosen: HashSet<&str> = selected[i].iter().map(String::as_str).collect();
        for m in c.workers() {
            if !chosen.contains(m.host.as_str()) {
                continue;
            }
            workers.push(m.host.clone());
            let speed = match (launch.reference_perf, m.perf) {
                (Some(reference), Some(perf)) if reference > 0.0 => {
                    format!(" speed={}", perf / reference)
                }
                _ => String::new(),
            };
            let _ = writeln!(
                text,
                "{}{}",
                m.host,
                if speed.is_empty() {
                    String::new()
                } else {
                    format!(" #{speed}")
                }
            );
        }
        let cm_host = cm_host_of(c, i == main).unwrap_or(head);
        let bind = match target {
            Target::Local => " bind=127.0.0.1",
            Target::Deployment => "",
        };
        if let (Some(link), Some(parent)) = (&links[i], parents[i]) {
            let parent_cluster = &plan.clusters[parent];
            let server_host = match target {
                Target::Local => "127.0.0.1".to_owned(),
                Target::Deployment => cm_host_of(parent_cluster, parent == main)
                    .unwrap_or("localhost")
                    .to_owned(),
            };
            let name = cm_name(&c.name, &parent_cluster.name);
            let _ = writeln!(
                text,
                "{cm_host} # S 0 {} {server_host} name={name} peer={} nr={}{}",
                link.client_port,
                cm_name(&parent_cluster.name, &c.name),
                c.results_per_inter_result,
                path_hint(c, false)
            );
            cms.push(CmLayout {
                name,
                cluster: c.name.clone(),
                host: cm_host.to_owned(),
            });
        }
        let shared = if cluster_launch[i].links_in_one_process {
            " process=links"
        } else {
            ""
        };
        for &child in children[i].iter().filter(|&&k| takes_part[k]) {
            let k = &plan.clusters[child];
            let link = links[child]
                .as_ref()
                .expect("every taking part child has a link");
            let name = cm_name(&c.name, &k.name);
            let bound = if load_balance && prediction.is_some() {
                format!(" max_tasks={}", subtree_tasks(child, &own_share, &children))
            } else {
                String::new()
            };
            let window = window_for(plan, prediction, child, link, &children)
                .map(|w| format!(" window={w}"))
                .unwrap_or_default();
            let workers = subtree_workers(child, &selected, &children);
            // peer=: only the child's CM may connect, even holding another certificate of the
            // same CA.
            let _ = writeln!(
                text,
                "{cm_host} # M 1 {}{bind} name={name} peer={} cluster={} nt={} \
                 workers={workers}{window}{bound}{}{shared}",
                link.server_port,
                cm_name(&k.name, &c.name),
                k.name,
                k.tasks_per_inter_task,
                path_hint(k, true)
            );
            cms.push(CmLayout {
                name,
                cluster: c.name.clone(),
                host: cm_host.to_owned(),
            });
        }
        if workers.is_empty() && children[i].iter().all(|&k| !takes_part[k]) {
            return Err(error(format!("cluster {}", c.name), "no worker takes part"));
        }
        clusters.push(ClusterLayout {
            name: c.name.clone(),
            ranks: process_hosts(&text).len(),
            machine_file: text,
            link: links[i].clone(),
            workers,
            launcher: cluster_launch[i].launcher,
        });
    }
    // Link parents are indices into the plan; turn them into indices into `clusters`.
    let position: BTreeMap<String, usize> = clusters
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), i))
        .collect();
    for cluster in &mut clusters {
        if let Some(link) = &mut cluster.link {
            link.parent = position[&plan.clusters[link.parent].name];
        }
    }

    let mut application = launch.application.clone();
    let mut run = plan.run.clone().unwrap_or_default();
    let notes = reconcile(plan, launch.binary.as_deref(), &mut application, &mut run)?;
    let mut config = toml::Table::new();
    config.insert("run".into(), toml::Value::Table(run));
    config.insert("cm".into(), toml::Value::Table(launch.cm.clone()));
    config.insert("application".into(), toml::Value::Table(application));
    Ok(Layout {
        clusters,
        config,
        cms,
        binary: launch.binary,
        notes,
    })
}

/// Mark the clusters of `i`'s subtree that take part: those with workers, and those leading
/// to clusters with workers. Returns whether `i` takes part.
fn mark_taking_part(
    i: usize,
    selected: &[Vec<String>],
    children: &[Vec<usize>],
    out: &mut [bool],
) -> bool {
    let mut any = !selected[i].is_empty();
    for &c in &children[i] {
        any |= mark_taking_part(c, selected, children, out);
    }
    out[i] = any;
    any
}

/// Workers of `i`'s whole subtree.
fn subtree_workers(i: usize, selected: &[Vec<String>], children: &[Vec<usize>]) -> usize {
    subtree_sum(i, children, &|k| selected[k].len())
}

/// Tasks of `i`'s whole subtree.
fn subtree_tasks(i: usize, own: &[u64], children: &[Vec<usize>]) -> u64 {
    subtree_sum(i, children, &|k| own[k])
}

/// `value` of cluster `i` and of every cluster below it, summed.
fn subtree_sum<T: std::iter::Sum + std::ops::Add<Output = T>>(
    i: usize,
    children: &[Vec<usize>],
    value: &impl Fn(usize) -> T,
) -> T {
    value(i)
        + children[i]
            .iter()
            .map(|&c| subtree_sum(c, children, value))
            .sum::<T>()
}

/// The annotations that start a CM's link warm (`path_send= path_recv= path_rtt_ms=`): the
/// plan's WAN rates of external cluster `cluster` and its round trip, for the CM in its parent
/// cluster (`parent_side`: it sends the tasks) or the one in the cluster itself (it sends the
/// results); none when the plan lacks a rate or a round trip.
fn path_hint(cluster: &ClusterPlan, parent_side: bool) -> String {
    let (Some(tasks), Some(results)) = (cluster.wan_in_bytes_per_s, cluster.wan_out_bytes_per_s)
    else {
        return String::new();
    };
    let rtt_s = cluster.wan_rtt_s(None);
    if rtt_s <= 0.0 {
        return String::new();
    }
    let (send, recv) = if parent_side {
        (tasks, results)
    } else {
        (results, tasks)
    };
    format!(
        " path_send={send} path_recv={recv} path_rtt_ms={:.3}",
        rtt_s * 1e3
    )
}

/// Inter-cluster tasks the parent's CM may send ahead of cluster `child`'s requests: what the
/// cluster and every cluster below it compute during one round trip of its link (their
/// requests take that long to come back; the link carries the whole subtree's tasks), plus
/// two, the model's (98). `None` without a prediction of the cluster or a round trip
/// (`wan_rtt_s` or an emulated delay).
fn window_for(
    plan: &Plan,
    prediction: Option<&Prediction>,
    child: usize,
    link: &LinkLayout,
    children: &[Vec<usize>],
) -> Option<u64> {
    let prediction = prediction?;
    let steady_of = |k: usize| {
        prediction
            .clusters
            .iter()
            .find(|pc| pc.name == plan.clusters[k].name)
            .map(|pc| pc.perf_ste)
    };
    steady_of(child)?;
    let steady = subtree_sum(child, children, &|k| steady_of(k).unwrap_or(0.0));
    let cluster = &plan.clusters[child];
    // The plan's round trip (`wan_rtt_s`, else twice the emulated delay), and the jitter.
    let round_trip_s = cluster.wan_rtt_s(None) + 2.0 * link.jitter_ms / 1e3;
    request_window(
        steady,
        plan.application.oper,
        cluster.tasks_per_inter_task,
        round_trip_s,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A main cluster and one behind a WAN, the synthetic application; `launch_app` and `run`
    /// are the bodies of `[launch.application]` and `[run]`.
    fn plan(launch_app: &str, run: &str) -> Plan {
        let text = format!(
            "[application]\nname = \"t\"\ntasks = 100\noper = 1.0\ntask_bytes = 1040\n\
             result_bytes = 20040\n[model]\nreassign_last_task = false\n[run]\n{run}\n\
             [launch]\nbinary = \"hmw-synthetic\"\n[launch.application]\n{launch_app}\n\
             [[cluster]]\nname = \"lyon\"\nmain = true\nlan_bytes_per_s = 1e9\nmachines = [\n\
             {{ host = \"lyon-head\", role = \"master\" }},\n\
             {{ host = \"lyon-cm\", role = \"cm\" }},\n\
             {{ host = \"lyon-1\", role = \"worker\", perf = 10.0 }},\n]\n\
             [[cluster]]\nname = \"spain\"\nlan_bytes_per_s = 1e9\nwan_in_bytes_per_s = 1e6\n\
             wan_out_bytes_per_s = 1e6\nmachines = [\n\
             {{ host = \"spain-head\", role = \"submaster\" }},\n\
             {{ host = \"spain-gw\", role = \"cm\" }},\n\
             {{ host = \"spain-1\", role = \"worker\", perf = 10.0 }},\n]\n"
        );
        Plan::from_toml_str(&text).unwrap()
    }

    fn lay(plan: &Plan) -> Result<Layout, LaunchError> {
        lay_with(plan, None)
    }

    fn lay_with(plan: &Plan, binary: Option<&str>) -> Result<Layout, LaunchError> {
        let mut next = 7000;
        layout(plan, None, Target::Deployment, binary, || {
            next += 1;
            next
        })
    }

    fn run_table(layout: &Layout) -> &toml::Table {
        layout.config["run"].as_table().unwrap()
    }

    /// With a round trip in the plan, each CM's line carries the path it sends and receives
    /// over (tasks down, results up), so that its link starts warm; without one, no hint.
    #[test]
    fn cm_lines_carry_the_path_they_send_over() {
        let app = "tasks = 100\ntask_bytes = 1024\nresult_bytes = 20000";
        let plan_text = |rtt: &str| {
            let mut p = plan(app, "reassign_last_task = false");
            p.clusters[1].wan_out_bytes_per_s = Some(2e6);
            p.clusters[1].wan_rtt_s = rtt.parse().ok();
            p
        };
        let layout = lay(&plan_text("0.12")).unwrap();
        let line = |cluster: usize, mark: &str| {
            layout.clusters[cluster]
                .machine_file
                .lines()
                .find(|l| l.contains(mark))
                .unwrap()
                .to_owned()
        };
        assert!(
            line(0, "# M").ends_with(" path_send=1000000 path_recv=2000000 path_rtt_ms=120.000"),
            "{}",
            line(0, "# M")
        );
        assert!(
            line(1, "# S").ends_with(" path_send=2000000 path_recv=1000000 path_rtt_ms=120.000"),
            "{}",
            line(1, "# S")
        );
        let layout = lay(&plan_text("none")).unwrap();
        assert!(!layout.clusters[0].machine_file.contains("path_"));
    }

    /// A regional cluster's link carries its subtree's tasks: the window its parent's CM
    /// keeps ahead is sized from the subtree's rate, not from the region's own.
    #[test]
    fn a_regional_link_s_window_is_its_subtree_s() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../configs/validation/depth2-tree.toml"
        );
        let plan = hmw_model::plan::load_plan(std::path::Path::new(path)).unwrap();
        let prediction = hmw_model::predict(&plan.model_input(None).unwrap()).unwrap();
        let mut next = 7000;
        let layout = layout(&plan, Some(&prediction), Target::Deployment, None, || {
            next += 1;
            next
        })
        .unwrap();
        let window_to = |from: usize, to: &str| -> u64 {
            let line = layout.clusters[from]
                .machine_file
                .lines()
                .find(|l| l.contains(&format!(" name={}-{to} ", plan.clusters[from].name)))
                .unwrap()
                .to_owned();
            let (_, after) = line.split_once(" window=").expect(&line);
            after.split(' ').next().unwrap().parse().unwrap()
        };
        let rate = |name: &str| {
            let c = prediction.clusters.iter().find(|c| c.name == name).unwrap();
            c.perf_ste
        };
        // 20 ms each way: a round trip of 40 ms; nt = 1, oper = 1
        let window = |tasks_per_s: f64| request_window(tasks_per_s, 1.0, 1, 0.04).unwrap();
        assert_ne!(
            window(rate("spain") + rate("brazil")),
            window(rate("spain"))
        );
        assert_eq!(
            window_to(0, "spain"),
            window(rate("spain") + rate("brazil"))
        );
        assert_eq!(window_to(1, "brazil"), window(rate("brazil")));
    }

    #[test]
    fn agreeing_plan_lays_out_with_every_cm_and_its_host() {
        let layout = lay(&plan(
            "tasks = 100\ntask_bytes = 1024\nresult_bytes = 20000",
            "reassign_last_task = false",
        ))
        .unwrap();
        assert_eq!(
            layout.cms,
            [
                CmLayout {
                    name: "lyon-spain".into(),
                    cluster: "lyon".into(),
                    host: "lyon-cm".into()
                },
                CmLayout {
                    name: "spain-lyon".into(),
                    cluster: "spain".into(),
                    host: "spain-gw".into()
                },
            ]
        );
        let own = |name: &str, host: &str| (name.to_owned(), vec![host.to_owned()]);
        assert_eq!(
            layout.certificate_sans(Target::Deployment),
            [own("lyon-spain", "lyon-cm"), own("spain-lyon", "spain-gw")]
        );
        let loopback = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        assert!(layout
            .certificate_sans(Target::Local)
            .iter()
            .all(|(_, sans)| *sans == loopback));
        assert!(layout.notes.is_empty(), "{:?}", layout.notes);
        assert_eq!(
            run_table(&layout)["reassign_last_task"].as_bool(),
            Some(false)
        );
    }

    #[test]
    fn a_parent_without_a_cm_machine_serves_from_its_head() {
        let mut plan = plan("tasks = 100\ntask_bytes = 1024\nresult_bytes = 20000", "");
        plan.clusters[0].machines.retain(|m| m.role != Role::Cm);
        let layout = lay(&plan).unwrap();
        let spain = &layout.clusters[1].machine_file;
        let server = spain.lines().find(|l| l.contains("# S ")).unwrap();
        assert!(server.contains(" lyon-head name=spain-lyon"), "{spain}");
        let lyon = &layout.clusters[0].machine_file;
        assert!(lyon.contains("lyon-head # M 1 "), "{lyon}");
    }

    #[test]
    fn task_counts_that_disagree_are_an_error_naming_both_keys() {
        let err = lay(&plan("tasks = 90", "")).unwrap_err().to_string();
        assert!(err.contains("[launch.application] tasks"), "{err}");
        assert!(err.contains("[application] tasks = 100"), "{err}");
    }

    #[test]
    fn sizes_agree_up_to_the_encoding() {
        for bad in [
            "task_bytes = 2048",
            "task_bytes = 1041",
            "result_bytes = 10000",
        ] {
            let err = lay(&plan(bad, "")).unwrap_err().to_string();
            let key = bad.split(' ').next().unwrap();
            assert!(
                err.contains(&format!("[launch.application] {key}")),
                "{err}"
            );
            assert!(err.contains(&format!("[application] {key} = ")), "{err}");
        }
        // 1040 serialised for a 1000-byte payload: 40 bytes of encoding, within 64.
        assert!(lay(&plan("task_bytes = 1000", "")).is_ok());
        assert_eq!(encoding_slack(1e6), 1e4);
    }

    #[test]
    fn the_synthetic_application_gets_the_models_task_count() {
        let layout = lay(&plan("task_seconds = 0.1", "")).unwrap();
        let application = layout.config["application"].as_table().unwrap();
        assert_eq!(application["tasks"].as_integer(), Some(100));
        assert!(
            layout
                .notes
                .iter()
                .any(|n| n.contains("[application] tasks = 100")),
            "{:?}",
            layout.notes
        );
    }

    #[test]
    fn a_binary_given_on_the_command_line_is_the_one_laid_out() {
        let tasks = |layout: &Layout| layout.config["application"].get("tasks").cloned();
        let synthetic = plan("task_seconds = 0.1", "");
        // Another application: it gets no task count of the synthetic one's.
        let other = lay_with(&synthetic, Some("bin/my-app")).unwrap();
        assert_eq!(other.binary.as_deref(), Some("bin/my-app"));
        assert_eq!(tasks(&other), None);
        assert!(other.notes.iter().all(|n| !n.contains("tasks not set")));
        // And the other way: a plan for another binary run with hmw-synthetic.
        let mut table = synthetic.launch.clone().unwrap();
        table.insert("binary".into(), toml::Value::String("my-app".into()));
        let mut for_other = synthetic.clone();
        for_other.launch = Some(table);
        assert_eq!(tasks(&lay(&for_other).unwrap()), None);
        let layout = lay_with(&for_other, Some("/opt/hmw/hmw-synthetic")).unwrap();
        assert_eq!(layout.binary.as_deref(), Some("/opt/hmw/hmw-synthetic"));
        assert_eq!(tasks(&layout).and_then(|t| t.as_integer()), Some(100));
    }

    #[test]
    fn reassignment_follows_the_model_unless_the_run_overrides_it() {
        let layout = lay(&plan("", "")).unwrap();
        assert_eq!(
            run_table(&layout)["reassign_last_task"].as_bool(),
            Some(false)
        );
        assert!(layout
            .notes
            .iter()
            .any(|n| n.contains("the run uses [model] reassign_last_task = false")));

        let layout = lay(&plan("", "reassign_last_task = true")).unwrap();
        assert_eq!(
            run_table(&layout)["reassign_last_task"].as_bool(),
            Some(true)
        );
        assert!(
            layout.notes.iter().any(|n| n.contains(
                "[run] reassign_last_task = true overrides [model] reassign_last_task = false"
            )),
            "{:?}",
            layout.notes
        );
    }
}
