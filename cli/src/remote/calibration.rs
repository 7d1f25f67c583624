//! `hmw calibrate` on real hosts: per cluster one folder on each of its hosts, holding every
//! calibration run's files in a subfolder of its own (machine file, configuration, hostfile,
//! the scripts `hmw launch` runs: `mpirun --map-by seq` on the head, or in an sbatch
//! allocation of the run's hosts; for the WAN probe the certificates, each CM host only its
//! own keys), staged once. Each run is then one `ssh HEAD sh DIR/RUN/run.sh ARGS` whose
//! output and statistics come back in the same connection. A state file lets `hmw launch
//! --cleanup STATE` stop and remove everything a killed calibration left; otherwise it is
//! removed at the end, whatever the way out.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};
use hmw_model::plan::{
    launch::{ClusterLaunch, Launcher},
    Plan,
};

use super::{
    cluster::{RemoteCluster, SlurmJob},
    deployment::{clean_all, run_name, stage_all, work_folder, write_state},
    ssh::{on_host, sh_quote, SshTarget},
};
use crate::{
    layout::CmLayout,
    processes::{Group, Waited},
};

/// What a calibration run starts on each of its ranks.
pub(crate) enum Program {
    /// An hmw application (the plan's, or `hmw-synthetic`) at this path on this machine: it
    /// reads the run's machine file and configuration, writes its statistics, checks its host.
    Application(PathBuf),
    /// `hmw wan-probe` (this `hmw`) with these arguments after the machine file and
    /// configuration.
    WanProbe(Vec<String>),
}

/// One calibration run of a cluster.
pub(crate) struct RunFiles {
    /// Its subfolder's name.
    pub(crate) name: String,
    /// The machine file its ranks read.
    pub(crate) machine_file: String,
    /// Rank i's host, in rank order (mpirun's hostfile).
    pub(crate) hosts: Vec<String>,
    /// Its run configuration; a `[cm]` table gets `certs` (the run folder's `certs`, holding
    /// the CA's certificate and the keys of the CMs of each host).
    pub(crate) config: toml::Table,
    pub(crate) program: Program,
}

/// What a run printed, and the statistics its rank 0 wrote (when it wrote any).
pub(crate) struct RunOutput {
    pub(crate) output: String,
    pub(crate) stats: Option<String>,
}

/// The line between a run's output and its statistics in what its ssh prints.
const STATS_MARK: &str = "@@hmw-calibration-stats@@";

/// The calibration folders of every cluster, staged.
pub(crate) struct RemoteCalibration {
    /// Per cluster: its calibration folder on every one of its hosts.
    clusters: Vec<RemoteCluster>,
    /// Per cluster, per run: its name and its subfolder (as a cluster of the run's hosts).
    runs: Vec<Vec<(String, RemoteCluster)>>,
    work: PathBuf,
    state_file: PathBuf,
    finished: bool,
}

/// A program's path on a cluster: the plan's `remote_binary` for the program of that name,
/// else the file of that name beside it; the staged copy with `stage_binary`; else this
/// machine's path (a shared file system, or the same path installed there).
fn remote_program(launch: &ClusterLaunch, dir: &str, local: &Path) -> String {
    let name = local
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match (&launch.remote_binary, launch.stage_binary) {
        (Some(path), _) => {
            let path = Path::new(path);
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == name)
            {
                path.to_string_lossy().into_owned()
            } else {
                path.with_file_name(&name).to_string_lossy().into_owned()
            }
        }
        (None, true) => format!("{dir}/bin/{name}"),
        (None, false) => local.to_string_lossy().into_owned(),
    }
}

impl RemoteCalibration {
    /// Make each cluster's calibration folder on its head, write every run's files for each
    /// host and stage them (every host at once). `clusters` are the layout's clusters (name
    /// and machine file) with their runs; `certs` holds the CA and every CM's keys (the CA key
    /// stays here), `cms` says which CM runs on which host.
    pub(crate) fn prepare(
        plan: &Plan,
        clusters: Vec<(String, String, Vec<RunFiles>)>,
        work: &Path,
        certs: &Path,
        cms: &[CmLayout],
    ) -> Result<RemoteCalibration> {
        let run_name = run_name(plan);
        let mut calibration = RemoteCalibration {
            clusters: Vec::new(),
            runs: Vec::new(),
            work: work.to_owned(),
            state_file: work.join("launch-state.json"),
            finished: false,
        };
        let stage_root = work.join("stage");
        let mut stages: Vec<(usize, String, PathBuf)> = Vec::new();
        for (name, machine_file, runs) in &clusters {
            let launch = plan
                .clusters
                .iter()
                .find(|c| &c.name == name)
                .context("a laid-out cluster is in the plan")?
                .launch_settings()
                .with_context(|| format!("cluster {name}: [cluster.launch]"))?;
            let hosts = RemoteCluster::hosts_of(machine_file);
            let head_host = hosts.first().cloned().context("an empty machine file")?;
            let head = SshTarget::head_of(&launch, &head_host);
            let folder = work_folder(&head, &launch, name, false)?;
            let slurm = launch.launcher == Launcher::Slurm;
            let cluster = RemoteCluster {
                name: name.clone(),
                head: head.clone(),
                head_host,
                hosts: hosts.clone(),
                dir: format!("{folder}/{run_name}-calibrate-{name}"),
                slurm,
            };
            calibration.clusters.push(cluster.clone());
            // Recorded before anything is staged: a cleanup finds a half-staged calibration.
            write_state(&calibration.state_file, &plan.name, &calibration.clusters)?;
            let mut subfolders = Vec::new();
            for run in runs {
                let sub = RemoteCluster {
                    name: format!("{name}-{}", run.name),
                    head: head.clone(),
                    head_host: run.hosts.first().cloned().unwrap_or_default(),
                    hosts: RemoteCluster::hosts_of(&run.hosts.join("\n")),
                    dir: format!("{}/{}", cluster.dir, run.name),
                    slurm,
                };
                let at = |file: &str| format!("{}/{file}", sub.dir);
                let mut mpirun = sub.mpirun(run.hosts.len(), &launch.mpirun_args);
                let config_path = at("run.toml");
                let machines_path = at("machines");
                match &run.program {
                    Program::Application(local) => mpirun.extend([
                        remote_program(&launch, &cluster.dir, local),
                        "-m".into(),
                        machines_path,
                        "-c".into(),
                        config_path,
                        "--stats-json".into(),
                        at("stats.json"),
                        "--check-placement".into(),
                    ]),
                    Program::WanProbe(args) => {
                        let hmw = std::env::current_exe()?;
                        mpirun.extend([
                            remote_program(&launch, &cluster.dir, &hmw),
                            "wan-probe".into(),
                            "-m".into(),
                            machines_path,
                            "-c".into(),
                            config_path,
                        ]);
                        mpirun.extend(args.iter().cloned());
                    }
                }
                let mut config = run.config.clone();
                let has_cm = match config.get_mut("cm") {
                    Some(toml::Value::Table(cm)) => {
                        cm.insert("certs".into(), toml::Value::String(at("certs")));
                        true
                    }
                    _ => false,
                };
                let config = toml::to_string(&config)?;
                let hostfile: String = run.hosts.iter().map(|h| format!("{h}\n")).collect();
                let job = SlurmJob::of(&launch);
                let script = if slurm {
                    sub.slurm_run_script(&launch.environment, &job)
                } else {
                    sub.run_script(&launch.environment, &mpirun)
                };
                let job_script = sub.job_script(&launch.environment, &mpirun);
                // Every host gets every run's small files (a Slurm job's script runs on its
                // allocation's first node); keys only where their CM runs.
                for host in &hosts {
                    let dir = stage_root.join(name).join(host).join(&run.name);
                    fs::create_dir_all(&dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                    fs::write(dir.join("machines"), &run.machine_file)?;
                    fs::write(dir.join("run.toml"), &config)?;
                    fs::write(dir.join("hostfile"), &hostfile)?;
                    fs::write(dir.join("run.sh"), &script)?;
                    if slurm {
                        fs::write(dir.join("job.sh"), &job_script)?;
                    }
                    if has_cm {
                        stage_keys(certs, cms, name, host, &dir.join("certs"))?;
                    }
                }
                subfolders.push((run.name.clone(), sub));
            }
            if launch.stage_binary && launch.remote_binary.is_none() {
                let mut programs: Vec<PathBuf> = Vec::new();
                for run in runs {
                    let local = match &run.program {
                        Program::Application(local) => local.clone(),
                        Program::WanProbe(_) => std::env::current_exe()?,
                    };
                    if !programs.contains(&local) {
                        programs.push(local);
                    }
                }
                for host in &hosts {
                    let bin = stage_root.join(name).join(host).join("bin");
                    fs::create_dir_all(&bin)?;
                    for local in &programs {
                        let file = local.file_name().context("a program without a name")?;
                        fs::copy(local, bin.join(file)).with_context(|| {
                            format!("cannot copy the program {}", local.display())
                        })?;
                    }
                }
            }
            for host in &hosts {
                stages.push((
                    calibration.clusters.len() - 1,
                    host.clone(),
                    stage_root.join(name).join(host),
                ));
            }
            calibration.runs.push(subfolders);
        }
        stage_all(
            stages.iter().map(|(cluster, host, dir)| {
                (
                    &calibration.clusters[*cluster],
                    host.as_str(),
                    dir.as_path(),
                )
            }),
            &stage_root,
        )?;
        for cluster in &calibration.clusters {
            println!(
                "== cluster {}: calibration staged in {} on {} (head {})",
                cluster.name,
                cluster.dir,
                cluster.hosts.join(", "),
                cluster.head.describe()
            );
        }
        Ok(calibration)
    }

    /// Run `run` of cluster `cluster` (its index) with `args` added to its program's command
    /// line, at most `timeout`: its output and statistics, or an error naming the cluster, the
    /// run and its head, with the end of its output. Ctrl-C, SIGTERM and SIGHUP stop it. Its
    /// log and statistics are kept as `CLUSTER.RUN.log` and `CLUSTER.RUN.stats.json`.
    pub(crate) fn run(
        &self,
        cluster: usize,
        run: &str,
        args: &[String],
        timeout: Duration,
    ) -> Result<RunOutput> {
        self.run_kept_as(cluster, run, run, args, timeout)
    }

    /// [`run`](Self::run), its files kept as `CLUSTER.KEPT_AS.log` and
    /// `CLUSTER.KEPT_AS.stats.json`.
    pub(crate) fn run_kept_as(
        &self,
        cluster: usize,
        run: &str,
        kept_as: &str,
        args: &[String],
        timeout: Duration,
    ) -> Result<RunOutput> {
        let top = &self.clusters[cluster];
        let (_, sub) = self.runs[cluster]
            .iter()
            .find(|(name, _)| name == run)
            .with_context(|| format!("cluster {}: no calibration run {run}", top.name))?;
        let args: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
        let stats = sh_quote(&format!("{}/stats.json", sub.dir));
        let remote = format!(
            "sh {run_sh} {args}; code=$?; echo; echo {STATS_MARK}; {cat}; exit $code",
            run_sh = sh_quote(&format!("{}/run.sh", sub.dir)),
            args = args.join(" "),
            cat = on_host(
                &top.head_host,
                &sub.head_host,
                &format!("cat {stats} 2>/dev/null")
            ),
        );
        let log_path = self.work.join(format!("{}.{kept_as}.log", top.name));
        let log = fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut command = top.head.command(&remote);
        command
            .stdin(Stdio::piped())
            .stdout(log.try_clone()?)
            .stderr(log);
        let what = format!(
            "cluster {}, calibration run {run} (head {})",
            top.name,
            top.head.describe()
        );
        let mut group =
            Group::start(&mut command).with_context(|| format!("{what}: cannot start ssh"))?;
        let waited = group.wait_until(Instant::now() + timeout);
        group.kill();
        let text = fs::read_to_string(&log_path).unwrap_or_default();
        let (output, stats) = match text.split_once(STATS_MARK) {
            Some((output, stats)) => (
                output.to_owned(),
                Some(stats.trim().to_owned()).filter(|s| !s.is_empty()),
            ),
            None => (text.clone(), None),
        };
        if let Some(stats) = &stats {
            // Beside the log, as a run's `--stats-json`: for `hmw report`, or to compare a run
            // with its calibration. A copy: the calibration goes on without it.
            let path = self.work.join(format!("{}.{kept_as}.stats.json", top.name));
            if let Err(e) = fs::write(&path, stats) {
                eprintln!("warning: cannot write {}: {e}", path.display());
            }
        }
        let tail = || {
            let lines: Vec<&str> = output.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        };
        match waited {
            Waited::Exited(status) if status.success() => Ok(RunOutput { output, stats }),
            Waited::Exited(status) => bail!("{what} failed ({status}):\n{}", tail()),
            Waited::TimedOut => bail!(
                "{what} still running after {} s: stopped (--run-timeout); its output:\n{}",
                timeout.as_secs_f64(),
                tail()
            ),
            Waited::Interrupted => bail!("interrupted"),
        }
    }

    /// Stop whatever is left of the calibration on every host and remove its folders.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.finished = true;
        clean_all(&self.clusters, false, &self.state_file, None)
    }
}

impl Drop for RemoteCalibration {
    fn drop(&mut self) {
        if !self.finished {
            if let Err(e) = clean_all(&self.clusters, false, &self.state_file, None) {
                eprintln!("calibration cleanup: {e:#}");
            }
        }
    }
}

/// Into `to`: the CA's certificate, and the certificate and key of each CM of `cluster` that
/// runs on `host`.
fn stage_keys(certs: &Path, cms: &[CmLayout], cluster: &str, host: &str, to: &Path) -> Result<()> {
    fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    fs::copy(certs.join("ca.pem"), to.join("ca.pem"))
        .with_context(|| format!("cannot copy {}/ca.pem", certs.display()))?;
    for cm in cms
        .iter()
        .filter(|cm| cm.cluster == cluster && cm.host == host)
    {
        for file in [format!("{}.pem", cm.name), format!("{}.key.pem", cm.name)] {
            fs::copy(certs.join(&file), to.join(&file))
                .with_context(|| format!("cannot copy {file}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_as_the_plan_says() {
        let mut launch = ClusterLaunch::default();
        let local = Path::new("/home/me/target/release/hmw-synthetic");
        assert_eq!(
            remote_program(&launch, "/srv/x", local),
            "/home/me/target/release/hmw-synthetic"
        );
        launch.stage_binary = true;
        assert_eq!(
            remote_program(&launch, "/srv/x", local),
            "/srv/x/bin/hmw-synthetic"
        );
        launch.remote_binary = Some("/opt/hmw/bin/hmw-matmul".into());
        assert_eq!(
            remote_program(&launch, "/srv/x", local),
            "/opt/hmw/bin/hmw-synthetic"
        );
        assert_eq!(
            remote_program(&launch, "/srv/x", Path::new("/a/hmw-matmul")),
            "/opt/hmw/bin/hmw-matmul"
        );
    }
}
