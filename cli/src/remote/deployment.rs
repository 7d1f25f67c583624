//! A run on real hosts: per cluster, its run folder on each of its hosts with only what that
//! host needs (the run configuration, the machine file, its own CM keys, the binary when
//! asked), one `ssh HEAD sh DIR/run.sh` per cluster for the launcher to start and watch, then
//! the statistics fetched back and every host cleaned. A state file in the launcher's work
//! folder records what was staged where, so that `hmw launch --cleanup STATE` can remove what
//! a killed launcher left.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{SystemTime, UNIX_EPOCH},
};

use anyhow::{bail, Context as _, Result};
use hmw_model::plan::{
    launch::{ClusterLaunch, Launcher},
    Plan,
};
use serde::{Deserialize, Serialize};

use super::{
    cluster::{Allocation, RemoteCluster, SlurmJob},
    ssh::{sh_quote, SshTarget},
};
use crate::layout::Layout;

/// What `hmw launch --cleanup` reads.
#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    plan: String,
    clusters: Vec<RemoteCluster>,
}

/// The clusters of a run on their own hosts.
pub(crate) struct Deployment {
    pub(super) clusters: Vec<RemoteCluster>,
    pub(super) state_file: PathBuf,
    keep: bool,
    /// The plan's name, for the state file.
    pub(super) plan_name: String,
    /// Each cluster's `[cluster.launch]`, in layout order.
    pub(super) settings: Vec<ClusterLaunch>,
    /// Writes what a cluster's hosts get, to start it again.
    pub(super) stager: Stager,
    /// Each cluster's command for its first start (taken by the launcher).
    pub(super) first: Vec<Option<Command>>,
    /// Clusters whose nodes Slurm chose before the run: started again only in a new run.
    pub(super) allocated: Vec<bool>,
    /// The main master's journal here, and the ssh that copies it back as it grows.
    pub(super) journal: Option<PathBuf>,
    pub(super) follower: Option<crate::processes::Group>,
}

/// A cluster's command for the launcher: its name, the `ssh` that runs it, and where its
/// statistics land once fetched.
pub(crate) type ClusterCommand = (String, Command, PathBuf);

/// Whether any cluster of the plan runs elsewhere than on this machine; an error when some do
/// and some do not (a cluster on this machine has no address its peers could reach). A
/// cluster of threads runs where the others do: on its head when some run on their hosts.
pub(crate) fn is_remote(plan: &Plan) -> Result<bool> {
    let mut launchers = Vec::new();
    for cluster in &plan.clusters {
        let settings = cluster
            .launch_settings()
            .with_context(|| format!("cluster {}: [cluster.launch]", cluster.name))?;
        launchers.push((cluster.name.as_str(), settings.launcher));
    }
    let local: Vec<&str> = launchers
        .iter()
        .filter(|(_, l)| *l == Launcher::Local)
        .map(|(n, _)| *n)
        .collect();
    let remote = launchers
        .iter()
        .any(|(_, l)| matches!(l, Launcher::Ssh | Launcher::Slurm));
    if !remote {
        return Ok(false);
    }
    if local.is_empty() {
        return Ok(true);
    }
    bail!(
        "clusters {} run on this machine (launcher = \"local\") and the others on their own \
         hosts: give every cluster a launcher of \"ssh\", \"slurm\" or \"threads\", or \
         none",
        local.join(", ")
    )
}

impl Deployment {
    /// Make each cluster's run folder, stage its files, and return the commands that run the
    /// clusters (in layout order, the main cluster first). `binary` is the application on this
    /// machine; `certs` holds the CA and every CM's keys (the CA key stays here).
    ///
    /// With `print`, nothing is done on any host: each host's files stay in
    /// `WORK/stage/CLUSTER/HOST`, and the commands that would stage and run them are printed
    /// (a relative `work_dir` then stays relative to the remote home).
    ///
    /// A cluster in `allocations` (Slurm chose its nodes) keeps its run folder and head, and
    /// its run script gives the waiting job its go instead of an sbatch.
    ///
    /// The main cluster's command gets `main_args(DIR)` (its journal in its run folder `DIR`),
    /// and its head a copy of `journal` when the run resumes from one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn prepare(
        plan: &Plan,
        layout: &Layout,
        work: &Path,
        certs: &Path,
        binary: &Path,
        keep: bool,
        print: bool,
        allocations: &[Allocation],
        main_args: &dyn Fn(&str, bool) -> Vec<String>,
        journal: Option<&Path>,
    ) -> Result<Deployment> {
        let run_name = run_name(plan);
        let state_file = work.join("launch-state.json");
        let mut clusters = Vec::new();
        let mut settings = Vec::new();
        for cluster in &layout.clusters {
            let plan_cluster = plan
                .clusters
                .iter()
                .find(|c| c.name == cluster.name)
                .context("a laid-out cluster is in the plan")?;
            let launch = plan_cluster
                .launch_settings()
                .with_context(|| format!("cluster {}: [cluster.launch]", cluster.name))?;
            let mut hosts = RemoteCluster::hosts_of(&cluster.machine_file);
            if !launch.launcher.uses_mpi() && hosts.len() > 1 {
                bail!(
                    "cluster {}: launcher = \"threads\" runs every rank in one process on one \
                     host, and its machines name {}: give them all one host",
                    cluster.name,
                    hosts.join(", ")
                );
            }
            let allocation = allocations.iter().find(|a| a.remote.name == cluster.name);
            let remote = match allocation {
                Some(allocation) => {
                    // The head gets the run script, also when it is no node of the job.
                    let head = &allocation.remote.head_host;
                    if !hosts.contains(head) {
                        hosts.push(head.clone());
                    }
                    RemoteCluster {
                        hosts,
                        ..allocation.remote.clone()
                    }
                }
                None => {
                    let head_host = hosts.first().cloned().context("an empty machine file")?;
                    let head = SshTarget::head_of(&launch, &head_host);
                    let absolute = work_folder(&head, &launch, &cluster.name, print)?;
                    RemoteCluster {
                        name: cluster.name.clone(),
                        head,
                        head_host,
                        hosts,
                        dir: format!("{absolute}/{run_name}-{}", cluster.name),
                        slurm: launch.launcher == Launcher::Slurm,
                    }
                }
            };
            if print && launch.slurm_choose {
                println!(
                    "# cluster {}: lets Slurm choose its nodes: hmw launch first asks for as \
                     many as its machines name hosts (sbatch --nodes, no --nodelist), then \
                     writes its machine file from them; --print asks Slurm for nothing, so below are \
                     the commands for exactly the plan's hosts",
                    cluster.name
                );
            }
            clusters.push(remote);
            settings.push(launch);
            // Recorded before anything is staged: a cleanup finds a half-staged run (and the
            // jobs of the allocations not laid out yet).
            if !print {
                let mut recorded = clusters.clone();
                for allocation in allocations {
                    if !recorded.iter().any(|c| c.name == allocation.remote.name) {
                        recorded.push(allocation.remote.clone());
                    }
                }
                write_state(&state_file, &plan.name, &recorded)?;
            }
        }

        let stage_root = work.join("stage");
        let stager = Stager {
            config: layout.config.clone(),
            certs: certs.to_owned(),
            binary: binary.to_owned(),
            stage_root: stage_root.clone(),
            main_args: [false, true].map(|resume| {
                let dir = clusters.first().map_or("", |c| c.dir.as_str());
                main_args(&format!("{dir}/{}", crate::launch_record::JOURNAL), resume)
            }),
        };
        let mut commands = Vec::new();
        // (cluster, host, its folder here), sent all at once once written.
        let mut stages: Vec<(&RemoteCluster, String, PathBuf)> = Vec::new();
        for (index, ((cluster, remote), launch)) in layout
            .clusters
            .iter()
            .zip(&clusters)
            .zip(&settings)
            .enumerate()
        {
            let allocated = allocations
                .iter()
                .find(|a| a.remote.name == cluster.name)
                .map(|a| (a.job.as_str(), a.batch.as_str()));
            let journal = journal.filter(|_| index == 0);
            let written = stager.write(
                index == 0,
                remote,
                launch,
                &cluster.machine_file,
                allocated,
                journal,
            )?;
            stages.extend(written.into_iter().map(|(host, dir)| (remote, host, dir)));
            commands.push((
                cluster.name.clone(),
                remote.run_command(),
                work.join(format!("{}.stats.json", cluster.name)),
            ));
        }
        if print {
            print_commands(&clusters, &stages, &commands);
        }
        if !print {
            stage_all(
                stages
                    .iter()
                    .map(|(remote, host, dir)| (*remote, host.as_str(), dir.as_path())),
                &stage_root,
            )?;
            for remote in &clusters {
                println!(
                    "== cluster {}: staged in {} on {} (head {})",
                    remote.name,
                    remote.dir,
                    remote.hosts.join(", "),
                    remote.head.describe()
                );
            }
        }
        let allocated = layout
            .clusters
            .iter()
            .map(|c| allocations.iter().any(|a| a.remote.name == c.name))
            .collect();
        let deployment = Deployment {
            clusters,
            state_file,
            keep,
            plan_name: plan.name.clone(),
            settings,
            stager,
            first: commands.into_iter().map(|(_, c, _)| Some(c)).collect(),
            allocated,
            journal: None,
            follower: None,
        };
        Ok(deployment)
    }

    /// After the run: each cluster's statistics fetched into `work` (where the cluster wrote
    /// them), then every host of every cluster cleaned. Says what failed and goes on.
    pub(crate) fn finish(&self, work: &Path) -> Result<()> {
        clean_all(&self.clusters, self.keep, &self.state_file, Some(work))
    }
}

/// What each cluster's hosts get, written under `WORK/stage/CLUSTER/HOST` to be sent: the
/// run configuration, the machine file, the CA and the keys of the host's own CMs, the run
/// script on the head (the batch script too under Slurm), the binary when asked; the main
/// cluster's head its journal when it resumes from one.
pub(crate) struct Stager {
    /// The run configuration shared by every cluster.
    config: toml::Table,
    /// The CA and every CM's keys, here.
    certs: PathBuf,
    /// The application, here.
    binary: PathBuf,
    stage_root: PathBuf,
    /// The main cluster's own `mpirun` arguments (its journal), fresh and resuming.
    main_args: [Vec<String>; 2],
}

impl Stager {
    /// Where the files are written before they are sent.
    pub(crate) fn stage_root(&self) -> &Path {
        &self.stage_root
    }

    /// Writes the files of `remote`'s hosts for `machine_file`: the hosts and their folders
    /// here, to be sent.
    pub(crate) fn write(
        &self,
        main: bool,
        remote: &RemoteCluster,
        launch: &ClusterLaunch,
        machine_file: &str,
        allocated: Option<(&str, &str)>,
        journal: Option<&Path>,
    ) -> Result<Vec<(String, PathBuf)>> {
        let binary_name = self
            .binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "app".into());
        let remote_binary = match (&launch.remote_binary, launch.stage_binary) {
            (Some(path), _) => path.clone(),
            (None, true) => format!("{}/bin/{binary_name}", remote.dir),
            (None, false) => self.binary.to_string_lossy().into_owned(),
        };
        let mut config = self.config.clone();
        if let Some(toml::Value::Table(cm)) = config.get_mut("cm") {
            cm.insert(
                "certs".into(),
                toml::Value::String(format!("{}/certs", remote.dir)),
            );
        }
        let config = toml::to_string(&config)?;
        let at = |name: &str| format!("{}/{name}", remote.dir);
        let ranks = RemoteCluster::hostfile(machine_file).lines().count();
        // A cluster of threads is the application alone, every rank a thread of it.
        let mut mpirun = if launch.launcher.uses_mpi() {
            remote.mpirun(ranks, &launch.mpirun_args)
        } else {
            Vec::new()
        };
        mpirun.extend([
            remote_binary,
            "-m".into(),
            at("machines"),
            "-c".into(),
            at("run.toml"),
            "--stats-json".into(),
            at("stats.json"),
        ]);
        mpirun.push(
            if launch.launcher.uses_mpi() {
                "--check-placement"
            } else {
                "--threads"
            }
            .into(),
        );
        if main {
            mpirun.extend(
                self.main_args[usize::from(journal.is_some())]
                    .iter()
                    .cloned(),
            );
        }
        let mut written = Vec::new();
        for host in &remote.hosts {
            let dir = self.stage_root.join(&remote.name).join(host);
            fs::create_dir_all(dir.join("certs"))
                .with_context(|| format!("cannot create {}", dir.display()))?;
            fs::write(dir.join("run.toml"), &config)?;
            fs::write(dir.join("machines"), machine_file)?;
            fs::copy(self.certs.join("ca.pem"), dir.join("certs/ca.pem"))
                .with_context(|| format!("cannot copy {}", self.certs.display()))?;
            // Only this host's own CMs' keys.
            for name in cms_on(machine_file, host) {
                for file in [format!("{name}.pem"), format!("{name}.key.pem")] {
                    fs::copy(self.certs.join(&file), dir.join("certs").join(&file))
                        .with_context(|| format!("cannot copy {file}"))?;
                }
            }
            // The batch script runs on the allocation's first node, whichever it is.
            if *host == remote.head_host || remote.slurm {
                fs::write(dir.join("hostfile"), RemoteCluster::hostfile(machine_file))?;
                let run = if remote.slurm {
                    fs::write(
                        dir.join("job.sh"),
                        remote.job_script(&launch.environment, &mpirun),
                    )?;
                    let job = SlurmJob {
                        allocated,
                        ..SlurmJob::of(launch)
                    };
                    remote.slurm_run_script(&launch.environment, &job)
                } else {
                    remote.run_script(&launch.environment, &mpirun)
                };
                fs::write(dir.join("run.sh"), run)?;
            }
            if let (true, Some(journal)) = (*host == remote.head_host, journal) {
                fs::copy(journal, dir.join(crate::launch_record::JOURNAL))
                    .with_context(|| format!("cannot copy {}", journal.display()))?;
            }
            if launch.stage_binary && launch.remote_binary.is_none() {
                fs::create_dir_all(dir.join("bin"))?;
                fs::copy(&self.binary, dir.join("bin").join(&binary_name))
                    .with_context(|| format!("cannot copy the binary {}", self.binary.display()))?;
            }
            written.push((host.clone(), dir));
        }
        Ok(written)
    }
}

/// The names of the CMs `machine_file` places on `host` (their `name=`).
fn cms_on(machine_file: &str, host: &str) -> Vec<String> {
    machine_file
        .lines()
        .filter_map(|line| line.split_once('#'))
        .filter(|(h, rest)| {
            h.trim() == host && (rest.trim().starts_with("M ") || rest.trim().starts_with("S "))
        })
        .filter_map(|(_, rest)| {
            rest.split_whitespace()
                .find_map(|field| field.strip_prefix("name="))
                .map(str::to_owned)
        })
        .collect()
}

/// A name unique to a run of `plan`: the plan's name, the time, this process.
pub(crate) fn run_name(plan: &Plan) -> String {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{}-{stamp}-{}", plan.name, std::process::id())
}

/// The absolute folder on a cluster's head that its run folders go in (`work_dir`, by default
/// `hmw-runs` in the remote home), made if missing; as given when only printing.
pub(crate) fn work_folder(
    head: &SshTarget,
    launch: &ClusterLaunch,
    cluster: &str,
    print: bool,
) -> Result<String> {
    let parent = launch.work_dir.clone().unwrap_or_else(|| "hmw-runs".into());
    let parent = parent.strip_prefix("~/").unwrap_or(&parent).to_owned();
    if print {
        return Ok(parent);
    }
    let absolute = head.run(
        &format!("mkdir -p {p} && cd {p} && pwd", p = sh_quote(&parent)),
        b"",
        &format!("make the work folder {parent} of cluster {cluster}"),
    )?;
    Ok(absolute.trim().to_owned())
}

/// Record what is staged where, for `hmw launch --cleanup STATE`.
pub(crate) fn write_state(path: &Path, plan: &str, clusters: &[RemoteCluster]) -> Result<()> {
    let state = StateFile {
        plan: plan.to_owned(),
        clusters: clusters.to_vec(),
    };
    fs::write(path, serde_json::to_string_pretty(&state)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `--print`: per cluster, where each host's files go and the commands that stage and run
/// them, as `hmw launch` would.
fn print_commands(
    clusters: &[RemoteCluster],
    stages: &[(&RemoteCluster, String, PathBuf)],
    commands: &[ClusterCommand],
) {
    for (cluster, (_, command, _)) in clusters.iter().zip(commands) {
        println!(
            "# cluster {}: {} on its head {}, in {} on each host",
            cluster.name,
            if cluster.slurm {
                "sbatch of exactly its hosts, mpirun --map-by seq inside"
            } else {
                "mpirun --map-by seq"
            },
            cluster.head.describe(),
            cluster.dir
        );
        for (_, host, dir) in stages.iter().filter(|(c, _, _)| c.name == cluster.name) {
            let files: Vec<String> = walk(dir)
                .iter()
                .filter_map(|f| f.strip_prefix(dir).ok())
                .map(|f| f.display().to_string())
                .collect();
            println!("#   {host}: {}", files.join(" "));
            let unpack = format!(
                "umask 077 && mkdir -p {d} && tar -xf - -C {d}",
                d = sh_quote(&cluster.dir)
            );
            let ssh = cluster
                .head
                .command(&super::ssh::on_host(&cluster.head_host, host, &unpack));
            println!(
                "tar -C {} -cf - . | {}",
                sh_quote(&dir.to_string_lossy()),
                shell_line(&ssh)
            );
        }
        println!("{}", shell_line(command));
    }
    println!("# after the run: fetch DIR/stats.json from each head; remove DIR on every host");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}

fn shell_line(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| sh_quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Clean every cluster at once; with `stats_into`, fetch each one's statistics there first
/// (`CLUSTER.stats.json`).
pub(crate) fn clean_all(
    clusters: &[RemoteCluster],
    keep: bool,
    state_file: &Path,
    stats_into: Option<&Path>,
) -> Result<()> {
    let failed: Vec<String> = std::thread::scope(|scope| {
        let cleanups: Vec<_> = clusters
            .iter()
            .map(|c| {
                scope.spawn(move || {
                    let to = stats_into.map(|w| w.join(format!("{}.stats.json", c.name)));
                    let fetched = c.clean(keep, to.as_deref());
                    if let (Ok(false), Some(_)) = (&fetched, &to) {
                        println!("== cluster {}: no statistics", c.name);
                    }
                    fetched
                })
            })
            .collect();
        cleanups
            .into_iter()
            .filter_map(|h| h.join().ok().and_then(|r| r.err()))
            .map(|e| format!("{e:#}"))
            .collect()
    });
    if !failed.is_empty() {
        bail!(
            "{}; run `hmw launch --cleanup {}` once the hosts are reachable",
            failed.join("; "),
            state_file.display()
        );
    }
    let _ = fs::remove_file(state_file);
    for cluster in clusters {
        println!(
            "== cluster {}: processes stopped{} on {}",
            cluster.name,
            if keep {
                format!(", run folder {} kept", cluster.dir)
            } else {
                ", run folder removed".into()
            },
            cluster.hosts.join(", ")
        );
    }
    Ok(())
}

/// `hmw launch --cleanup STATE`: stop every process and remove every run folder a launcher
/// left on the hosts its state file names.
pub(crate) fn cleanup(state_file: &Path) -> Result<()> {
    let text = fs::read_to_string(state_file)
        .with_context(|| format!("cannot read {}", state_file.display()))?;
    let state: StateFile = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a launch state file", state_file.display()))?;
    println!(
        "== cleaning up the run of {} on {} clusters",
        state.plan,
        state.clusters.len()
    );
    clean_all(&state.clusters, false, state_file, None)
}

/// Send each (cluster, host, folder) of `stages` to its host, all at once (a thread each);
/// then remove `stage_root`, which holds the keys, whatever happened.
pub(super) fn stage_all<'a>(
    stages: impl Iterator<Item = (&'a RemoteCluster, &'a str, &'a Path)>,
    stage_root: &Path,
) -> Result<()> {
    let staged: Vec<Result<()>> = std::thread::scope(|scope| {
        let sends: Vec<_> = stages
            .map(|(remote, host, dir)| scope.spawn(move || remote.stage(host, dir)))
            .collect();
        sends
            .into_iter()
            .map(|s| {
                s.join()
                    .unwrap_or_else(|_| bail!("a staging thread panicked"))
            })
            .collect()
    });
    let _ = fs::remove_dir_all(stage_root);
    staged.into_iter().collect()
}
