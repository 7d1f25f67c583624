//! A plan parsed and validated: the file as written checked, key by key, into a [`Plan`]; the
//! first problem found is the error.

use std::collections::HashSet;

use super::{
    error::{check_positive, check_size, invalid, invalid_machine, PlanError},
    file::{ClusterTable, MachineTable, PlanFile},
    hostlist, launch, location,
    pipeline::validate_pipeline,
    syntax::{cluster_spans, syntax_error},
    validated::{ClusterPlan, Machine, Plan, Role, SelectionMode},
};
use crate::methodology::MAX_TASKS_PER_UNIT;
use crate::params::{ApplicationParams, GrainCandidate, MAX_EXHAUSTIVE_LIMIT};

impl Plan {
    /// Parses and validates a plan. The first problem found is the error.
    pub fn from_toml_str(text: &str) -> Result<Plan, PlanError> {
        let file: PlanFile = location::deserialize(text).map_err(|failure| {
            let (e, located) = *failure;
            syntax_error(text, &e, located, &cluster_spans(text))
        })?;
        let a = file.application;
        let pipeline = file.pipeline.map(validate_pipeline).transpose()?;
        let (tasks, oper, task_bytes, result_bytes) = match &pipeline {
            // A pipeline's items are its tasks, an item through every stage its operations.
            Some(p) => {
                for (key, given) in [
                    ("tasks", a.tasks.is_some()),
                    ("oper", a.oper.is_some()),
                    ("task_bytes", a.task_bytes.is_some()),
                    ("result_bytes", a.result_bytes.is_some()),
                ] {
                    if given {
                        return Err(invalid(
                            None,
                            &format!("application.{key}"),
                            "a pipeline plan gives its items in [pipeline] (items, item_bytes, \
                             the stages' oper and output_bytes): remove this key",
                        ));
                    }
                }
                let last = p.stages.last().map_or(p.item_bytes, |s| s.output_bytes);
                (p.items, p.chain_oper(), p.item_bytes, last)
            }
            None => (
                required(a.tasks, "tasks")?,
                a.oper.unwrap_or(1.0),
                required(a.task_bytes, "task_bytes")?,
                required(a.result_bytes, "result_bytes")?,
            ),
        };
        let application = ApplicationParams {
            oper_cv: a.oper_cv,
            ..application_params(
                "application",
                tasks,
                oper,
                task_bytes,
                result_bytes,
                a.task_bytes_inter,
                a.result_bytes_inter,
            )?
        };
        if !(a.oper_cv.is_finite() && a.oper_cv >= 0.0) {
            return Err(invalid(
                None,
                "application.oper_cv",
                format!("must be a fraction, 0 or more, got {}", a.oper_cv),
            ));
        }
        if let Some(n) = a.iterations.filter(|&n| n == 0 || n > tasks) {
            return Err(invalid(
                None,
                "application.iterations",
                format!("must be from 1 to tasks ({tasks}), got {n}"),
            ));
        }
        let mut grains = Vec::new();
        let mut seen_grains = HashSet::new();
        for g in a.grain {
            if g.grain == 0 {
                return Err(invalid(
                    None,
                    "application.grain.grain",
                    "must be at least 1",
                ));
            }
            if !seen_grains.insert(g.grain) {
                return Err(invalid(
                    None,
                    "application.grain.grain",
                    format!("grain {} is listed twice", g.grain),
                ));
            }
            let prefix = format!("application.grain[grain = {}]", g.grain);
            grains.push(GrainCandidate {
                grain: g.grain,
                application: ApplicationParams {
                    oper_cv: a.oper_cv,
                    ..application_params(
                        &prefix,
                        g.tasks,
                        g.oper,
                        g.task_bytes,
                        g.result_bytes,
                        g.task_bytes_inter,
                        g.result_bytes_inter,
                    )?
                },
            });
        }
        grains.sort_by_key(|g| g.grain);

        let m = file.model;
        if !(m.efficiency_threshold.is_finite() && (0.0..1.0).contains(&m.efficiency_threshold)) {
            return Err(invalid(
                None,
                "model.efficiency_threshold",
                format!(
                    "must be a fraction from 0 up to (not including) 1, got {}",
                    m.efficiency_threshold
                ),
            ));
        }
        if !(1..=MAX_EXHAUSTIVE_LIMIT).contains(&m.exhaustive_limit) {
            return Err(invalid(
                None,
                "model.exhaustive_limit",
                format!(
                    "must be between 1 and {MAX_EXHAUSTIVE_LIMIT} combinations, got {}",
                    m.exhaustive_limit
                ),
            ));
        }

        if !(m.selection_budget_s.is_finite() && m.selection_budget_s > 0.0) {
            return Err(invalid(
                None,
                "model.selection_budget_s",
                format!(
                    "must be a positive number of seconds, got {}",
                    m.selection_budget_s
                ),
            ));
        }

        let clusters = validate_clusters(file.cluster, m.selection)?;
        launch::check_slurm_choice(&clusters)?;
        Ok(Plan {
            name: a.name,
            application,
            iterations: a.iterations,
            grains,
            efficiency_threshold: m.efficiency_threshold,
            reassign_last_task: m.reassign_last_task,
            selection: m.selection,
            exhaustive_limit: m.exhaustive_limit,
            selection_budget_s: m.selection_budget_s,
            form: m.form,
            terms: m.terms(),
            clusters,
            launch: file.launch,
            testbed: file.testbed,
            run: file.run,
            pipeline,
        })
    }
}

/// A key of `[application]` a master-worker plan must give.
fn required<T>(value: Option<T>, key: &str) -> Result<T, PlanError> {
    value.ok_or_else(|| {
        invalid(
            None,
            &format!("application.{key}"),
            format!("missing key `{key}` (a master-worker plan gives it; a pipeline plan gives [pipeline] instead)"),
        )
    })
}

fn application_params(
    prefix: &str,
    tasks: u64,
    oper: f64,
    task_bytes: f64,
    result_bytes: f64,
    task_bytes_inter: Option<f64>,
    result_bytes_inter: Option<f64>,
) -> Result<ApplicationParams, PlanError> {
    if tasks == 0 {
        return Err(invalid(
            None,
            &format!("{prefix}.tasks"),
            "must be at least 1",
        ));
    }
    check_positive(
        None,
        &format!("{prefix}.oper"),
        oper,
        "basic operations per task",
    )?;
    check_size(&format!("{prefix}.task_bytes"), task_bytes)?;
    check_size(&format!("{prefix}.result_bytes"), result_bytes)?;
    if let Some(v) = task_bytes_inter {
        check_size(&format!("{prefix}.task_bytes_inter"), v)?;
    }
    if let Some(v) = result_bytes_inter {
        check_size(&format!("{prefix}.result_bytes_inter"), v)?;
    }
    Ok(ApplicationParams {
        tasks,
        oper,
        task_bytes,
        result_bytes,
        task_bytes_inter,
        result_bytes_inter,
        oper_cv: 0.0,
    })
}

fn validate_clusters(
    tables: Vec<ClusterTable>,
    selection: SelectionMode,
) -> Result<Vec<ClusterPlan>, PlanError> {
    if tables.is_empty() {
        return Err(invalid(None, "cluster", "the plan has no [[cluster]]"));
    }
    let mut names = HashSet::new();
    for t in &tables {
        if t.name.trim().is_empty() {
            return Err(invalid(
                None,
                "cluster.name",
                "a cluster name must not be empty",
            ));
        }
        if !names.insert(t.name.as_str()) {
            return Err(invalid(
                Some(&t.name),
                "name",
                "two clusters have this name",
            ));
        }
    }
    let mains: Vec<&str> = tables
        .iter()
        .filter(|t| t.main)
        .map(|t| t.name.as_str())
        .collect();
    match mains.as_slice() {
        [] => {
            return Err(invalid(
                None,
                "cluster.main",
                "no cluster has `main = true`; mark the cluster that runs the master",
            ))
        }
        [_] => {}
        [_, second, ..] => {
            return Err(invalid(
                Some(second),
                "main",
                format!(
                    "only one cluster may be the main one, `{}` already is",
                    mains[0]
                ),
            ))
        }
    }
    let mut clusters = Vec::new();
    for t in tables {
        clusters.push(validate_cluster(t, selection)?);
    }
    if clusters.iter().all(|c| c.workers().next().is_none()) {
        return Err(invalid(
            None,
            "cluster.machines",
            "the plan has no worker: give at least one machine role = \"worker\"",
        ));
    }
    clusters.sort_by_key(|c| !c.main);
    Ok(clusters)
}

fn validate_cluster(
    mut t: ClusterTable,
    selection: SelectionMode,
) -> Result<ClusterPlan, PlanError> {
    t.machines = expand_host_ranges(&t.name, std::mem::take(&mut t.machines))?;
    let name = t.name.as_str();
    let c = Some(name);
    if let Some(v) = t.lan_bytes_per_s {
        check_positive(c, "lan_bytes_per_s", v, "bytes per second")?;
    }
    let wan_keys = [
        ("wan_in_bytes_per_s", t.wan_in_bytes_per_s.is_some()),
        ("wan_out_bytes_per_s", t.wan_out_bytes_per_s.is_some()),
        ("wan_rtt_s", t.wan_rtt_s.is_some()),
        ("tasks_per_inter_task", t.tasks_per_inter_task.is_some()),
        (
            "results_per_inter_result",
            t.results_per_inter_result.is_some(),
        ),
    ];
    if t.main {
        if let Some((key, _)) = wan_keys.iter().find(|(_, given)| *given) {
            return Err(invalid(
                c,
                key,
                "the main cluster has no WAN link to the master; remove this key",
            ));
        }
    }
    for (key, value) in [
        ("wan_in_bytes_per_s", t.wan_in_bytes_per_s),
        ("wan_out_bytes_per_s", t.wan_out_bytes_per_s),
    ] {
        if let Some(v) = value {
            check_positive(c, key, v, "bytes per second")?;
        }
    }
    if let Some(v) = t.cm_idle_cpu_per_link {
        if !t.main {
            return Err(invalid(
                c,
                "cm_idle_cpu_per_link",
                "only the main cluster's CMs hold links of other clusters; give it there",
            ));
        }
        if !(v.is_finite() && (0.0..1.0).contains(&v)) {
            return Err(invalid(
                c,
                "cm_idle_cpu_per_link",
                format!("must be a share of a core, 0 or more and below 1, got {v}"),
            ));
        }
    }
    for (key, value) in [
        ("wan_rtt_s", t.wan_rtt_s),
        ("master_cpu_per_task_s", t.master_cpu_per_task_s),
        ("cm_cpu_per_task_s", t.cm_cpu_per_task_s),
    ] {
        if let Some(v) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(invalid(
                c,
                key,
                format!("must be a number of seconds, 0 or more, got {v}"),
            ));
        }
    }
    for (key, value) in [
        ("tasks_per_inter_task", t.tasks_per_inter_task),
        ("results_per_inter_result", t.results_per_inter_result),
    ] {
        if let Some(v) = value {
            if !(1..=MAX_TASKS_PER_UNIT).contains(&v) {
                return Err(invalid(
                    c,
                    key,
                    format!("must be between 1 and {MAX_TASKS_PER_UNIT}, got {v}"),
                ));
            }
        }
    }
    if t.machines.is_empty() {
        return Err(invalid(c, "machines", "the cluster lists no machine"));
    }
    for m in &t.machines {
        if m.host.trim().is_empty() {
            return Err(invalid(c, "machines.host", "a host name must not be empty"));
        }
        if let Some(perf) = m.perf {
            if !(perf.is_finite() && perf > 0.0) {
                return Err(invalid_machine(
                    name,
                    &m.host,
                    "perf",
                    format!("must be a positive number of basic operations per second, got {perf}"),
                ));
            }
        }
    }
    let count = |role: Role| t.machines.iter().filter(|m| m.role == role).count();
    let (own, other) = if t.main {
        (Role::Master, Role::Submaster)
    } else {
        (Role::Submaster, Role::Master)
    };
    let kind = if t.main { "the main" } else { "an external" };
    if count(own) != 1 {
        return Err(invalid(
            c,
            "machines.role",
            format!(
                "{kind} cluster needs exactly one machine with role = \"{}\", found {}",
                own.name(),
                count(own)
            ),
        ));
    }
    if let Some(m) = t.machines.iter().find(|m| m.role == other) {
        return Err(invalid_machine(
            name,
            &m.host,
            "role",
            format!("{kind} cluster has no {}", other.name()),
        ));
    }
    if !t.main && count(Role::Worker) == 0 {
        return Err(invalid(
            c,
            "machines",
            "an external cluster needs at least one machine with role = \"worker\"",
        ));
    }
    if selection == SelectionMode::Pinned {
        if let Some(hosts) = &t.use_workers {
            if hosts.is_empty() {
                return Err(invalid(
                    c,
                    "use_workers",
                    "is empty; list at least one worker, or remove the key to use them all",
                ));
            }
            let mut seen = HashSet::new();
            for host in hosts {
                if !seen.insert(host) {
                    return Err(invalid(
                        c,
                        "use_workers",
                        format!("host `{host}` is listed twice"),
                    ));
                }
                match t
                    .machines
                    .iter()
                    .find(|m| &m.host == host && m.role == Role::Worker)
                {
                    Some(_) => {}
                    None => {
                        let what = match t.machines.iter().find(|m| &m.host == host) {
                            Some(m) => format!("its role here is {}", m.role.name()),
                            None => "it is not among the cluster's machines".to_string(),
                        };
                        return Err(invalid(
                            c,
                            "use_workers",
                            format!("host `{host}` is not a worker of this cluster ({what})"),
                        ));
                    }
                }
            }
        }
    }
    Ok(ClusterPlan {
        name: t.name.clone(),
        main: t.main,
        lan_bytes_per_s: t.lan_bytes_per_s,
        wan_in_bytes_per_s: t.wan_in_bytes_per_s,
        wan_out_bytes_per_s: t.wan_out_bytes_per_s,
        wan_rtt_s: t.wan_rtt_s,
        master_cpu_per_task_s: t.master_cpu_per_task_s,
        cm_cpu_per_task_s: t.cm_cpu_per_task_s,
        cm_idle_cpu_per_link: t.cm_idle_cpu_per_link,
        tasks_per_inter_task: t.tasks_per_inter_task.unwrap_or(1),
        results_per_inter_result: t.results_per_inter_result.unwrap_or(1),
        use_workers: t.use_workers,
        machines: t
            .machines
            .into_iter()
            .map(|m| Machine {
                host: m.host,
                role: m.role,
                perf: m.perf,
            })
            .collect(),
        launch: t.launch,
    })
}

/// Each machine entry whose host is a range (`node[1-16384]`) as one entry per host.
fn expand_host_ranges(
    cluster: &str,
    machines: Vec<MachineTable>,
) -> Result<Vec<MachineTable>, PlanError> {
    if !machines.iter().any(|m| m.host.contains(['[', ']'])) {
        return Ok(machines);
    }
    let mut expanded = Vec::with_capacity(machines.len());
    for m in machines {
        let hosts = hostlist::expand(&m.host)
            .map_err(|message| invalid(Some(cluster), "machines.host", message))?;
        expanded.extend(hosts.into_iter().map(|host| MachineTable { host, ..m }));
    }
    Ok(expanded)
}
