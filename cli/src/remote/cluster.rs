//! One cluster run on its own hosts over ssh: the files each host gets, the script that runs
//! `mpirun` on the head (and stops it when the launcher's connection goes), and the cleanup
//! that leaves no process and no file of the run on any of its hosts.
//!
//! Every process of the run on a host has the run's remote folder in its command line (the
//! script `sh DIR/run.sh`, each rank `BINARY -m DIR/machines ...`), so the cleanup finds them by
//! that folder, which is unique to the run; the cleanup script itself goes to `sh -s` on its
//! standard input, so that no command line of the cleanup holds it.

use std::{fs, path::Path};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use hmw_core::machinefile::process_hosts;
use hmw_model::plan::launch::ClusterLaunch;

use super::ssh::{on_host, sh_quote, SshTarget};

/// A cluster's part of a remote run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RemoteCluster {
    pub(crate) name: String,
    /// How to reach its head.
    pub(crate) head: SshTarget,
    /// The head's name in the machine file (rank 0's host).
    pub(crate) head_host: String,
    /// Every host of its machine file, once each, in file order (the head first).
    pub(crate) hosts: Vec<String>,
    /// The run's folder on each of its hosts (absolute).
    pub(crate) dir: String,
    /// Its ranks run in a Slurm job (whose id the head's `DIR/job.id` holds while it runs).
    #[serde(default)]
    pub(crate) slurm: bool,
}

/// The running job of a cluster whose nodes Slurm chose.
#[derive(Debug, Clone)]
pub(crate) struct Allocation {
    /// The cluster's remote part: its head, its run folder, the allocated nodes as `hosts`
    /// (Slurm's order); `head_host` is the head's own name, so that every node is reached
    /// from it by ssh unless it is the head.
    pub(crate) remote: RemoteCluster,
    /// The Slurm job id.
    pub(crate) job: String,
    /// The node its batch script runs on.
    pub(crate) batch: String,
}

/// What an sbatch of a cluster asks for.
pub(crate) struct SlurmJob<'a> {
    pub(crate) partition: Option<&'a str>,
    pub(crate) account: Option<&'a str>,
    pub(crate) time_limit: Option<&'a str>,
    pub(crate) pending_limit_s: u64,
    /// The job already runs, on nodes Slurm chose (`[cluster.launch] slurm_choose`): its id
    /// and its batch node, where the run script gives the go instead of an sbatch.
    pub(crate) allocated: Option<(&'a str, &'a str)>,
}

impl<'a> SlurmJob<'a> {
    /// The job a cluster's `[cluster.launch]` asks for, not allocated yet.
    pub(crate) fn of(launch: &'a ClusterLaunch) -> SlurmJob<'a> {
        SlurmJob {
            partition: launch.partition.as_deref(),
            account: launch.account.as_deref(),
            time_limit: launch.time_limit.as_deref(),
            pending_limit_s: launch.pending_limit_s,
            allocated: None,
        }
    }

    /// sbatch's options for the partition, account and time limit the plan gives.
    pub(crate) fn options(&self) -> Vec<String> {
        let mut options = Vec::new();
        if let Some(partition) = self.partition {
            options.push(format!("--partition={partition}"));
        }
        if let Some(account) = self.account {
            options.push(format!("--account={account}"));
        }
        if let Some(limit) = self.time_limit {
            options.push(format!("--time={limit}"));
        }
        options
    }
}

impl RemoteCluster {
    /// The hosts of a machine file, once each, in order.
    pub(crate) fn hosts_of(machine_file: &str) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for line in machine_file.lines() {
            let host = line.split('#').next().unwrap_or("").trim();
            if !host.is_empty() && seen.insert(host) {
                hosts.push(host.to_owned());
            }
        }
        hosts
    }

    /// `ssh HEAD sh DIR/run.sh`: the command the launcher starts and watches.
    pub(crate) fn run_command(&self) -> std::process::Command {
        self.head
            .command(&format!("sh {}", sh_quote(&format!("{}/run.sh", self.dir))))
    }

    /// The hostfile given to `mpirun --map-by seq`: line i is the host of the job's process
    /// i (rank i's, unless CMs share a process), nothing else.
    pub(crate) fn hostfile(machine_file: &str) -> String {
        process_hosts(machine_file)
            .into_iter()
            .map(|host| format!("{host}\n"))
            .collect()
    }

    /// The start of the `mpirun` command line of `ranks` ranks in this folder: rank i on the
    /// host of line i of `DIR/hostfile`, then the plan's own options (`mpirun_args`).
    pub(crate) fn mpirun(&self, ranks: usize, mpirun_args: &[String]) -> Vec<String> {
        let mut mpirun = vec![
            "mpirun".to_owned(),
            "--hostfile".into(),
            format!("{}/hostfile", self.dir),
            "--map-by".into(),
            "seq".into(),
            "-np".into(),
            ranks.to_string(),
        ];
        if self.slurm {
            // The allocation has one task per node; a host may run several ranks.
            mpirun.push("--oversubscribe".into());
        }
        mpirun.extend(mpirun_args.iter().cloned());
        mpirun
    }

    /// Send the folder `local` to `host`'s run folder (through the head: the head passes
    /// the stream on and keeps nothing of another host's).
    pub(crate) fn stage(&self, host: &str, local: &Path) -> Result<()> {
        let archive = std::process::Command::new("tar")
            .arg("-C")
            .arg(local)
            .args(["-cf", "-", "."])
            .output()
            .with_context(|| format!("cannot pack {}", local.display()))?;
        let unpack = format!(
            "umask 077 && mkdir -p {dir} && tar -xf - -C {dir}",
            dir = sh_quote(&self.dir)
        );
        self.head
            .run(
                &on_host(&self.head_host, host, &unpack),
                &archive.stdout,
                &format!("stage the files of cluster {} on {host}", self.name),
            )
            .map(|_| ())
    }

    /// The script run on the head (`sh DIR/run.sh [ARGS]`): `mpirun` in a session of its own,
    /// the script's arguments added to its command line; when the launcher's connection ends
    /// (its standard input closes), `mpirun`'s whole session is stopped, SIGTERM then SIGKILL.
    /// Exits with `mpirun`'s status.
    pub(crate) fn run_script(&self, environment: &[String], mpirun: &[String]) -> String {
        let dir = sh_quote(&self.dir);
        let mpirun: Vec<String> = mpirun.iter().map(|a| sh_quote(a)).collect();
        let mut script = format!(
            "# hmw launch: cluster {} (generated)\ncd {dir} || exit 97\n\
             # The launcher's connection, kept for the watchdog (a background job's own input\n\
             # is /dev/null).\nexec 3<&0\n",
            self.name
        );
        for line in environment {
            script.push_str(line);
            script.push('\n');
        }
        script.push_str(&format!(
            "setsid {mpirun} \"$@\" </dev/null 3<&- &\n\
             pid=$!\n\
             echo $pid > {dir}/mpirun.pid\n\
             ( {watch}\n  \
               if [ -f {dir}/mpirun.pid ]; then\n    \
                 kill -TERM -$pid 2>/dev/null; sleep 2; kill -KILL -$pid 2>/dev/null\n  \
               fi ) >/dev/null 2>&1 &\n\
             exec 3<&-\n\
             wait $pid\n\
             code=$?\n\
             rm -f {dir}/mpirun.pid\n\
             exit $code\n",
            mpirun = mpirun.join(" "),
            watch = watch_launcher(),
        ));
        script
    }

    /// The batch script of a Slurm cluster (`DIR/job.sh [ARGS]`): the environment, `mpirun`
    /// inside the allocation (the arguments added to its command line), its status into
    /// `DIR/job.status`.
    pub(crate) fn job_script(&self, environment: &[String], mpirun: &[String]) -> String {
        let dir = sh_quote(&self.dir);
        let mpirun: Vec<String> = mpirun.iter().map(|a| sh_quote(a)).collect();
        let mut script = format!(
            "#!/bin/sh\n# hmw launch: cluster {} (generated)\ncd {dir} || exit 97\n",
            self.name
        );
        for line in environment {
            script.push_str(line);
            script.push('\n');
        }
        script.push_str(&format!(
            "{} \"$@\"\necho $? > {dir}/job.status\n",
            mpirun.join(" ")
        ));
        script
    }

    /// The script run on the head of a Slurm cluster (`sh DIR/run.sh [ARGS]`): sbatch of
    /// `DIR/job.sh ARGS` on exactly the plan's hosts, the job cancelled when the launcher's
    /// connection ends or when it stays pending longer than the plan allows; says why a job
    /// ended without a status (its time limit, a cancellation). Exits with `mpirun`'s status.
    pub(crate) fn slurm_run_script(&self, environment: &[String], job: &SlurmJob) -> String {
        let dir = sh_quote(&self.dir);
        let name = &self.name;
        let mut sbatch = vec![
            "sbatch".to_owned(),
            "--parsable".into(),
            format!("--job-name=hmw-{name}"),
            format!("--nodelist={}", self.hosts.join(",")),
            format!("--nodes={}", self.hosts.len()),
            format!("--ntasks={}", self.hosts.len()),
            format!("--output={}/job.out", self.dir),
            format!("--chdir={}", self.dir),
        ];
        sbatch.extend(job.options());
        sbatch.push(format!("{}/job.sh", self.dir));
        let sbatch: Vec<String> = sbatch.iter().map(|a| sh_quote(a)).collect();
        let mut script = format!(
            "# hmw launch: cluster {name} through Slurm (generated)\ncd {dir} || exit 97\n\
             exec 3<&0\n"
        );
        for line in environment {
            script.push_str(line);
            script.push('\n');
        }
        // The batch script runs on the allocation's first node: its output is there.
        let on_batch = format!(
            "on_batch() {{ if [ -z \"$batch\" ] || [ \"$batch\" = \"$(hostname)\" ]; then sh -c \"$1\"; \
             else ssh -o BatchMode=yes -o ConnectTimeout={timeout} \"$batch\" \"$1\"; fi; }}\n",
            timeout = super::ssh::CONNECT_TIMEOUT_S,
        );
        script.push_str(&on_batch);
        match job.allocated {
            // Slurm chose the nodes and the job waits for the go: every host is staged now.
            Some((id, batch)) => script.push_str(&format!(
                "job={id}\nbatch={batch}\n\
                 on_batch 'echo > {dir}/go' || {{ echo \"hmw: cluster {name}: cannot give Slurm job $job its go on $batch\" >&2; exit 96; }}\n",
                id = sh_quote(id),
                batch = sh_quote(batch),
            )),
            None => script.push_str(&format!(
                "batch=\n\
                 job=$({sbatch} \"$@\") || {{ echo \"hmw: cluster {name}: sbatch failed\" >&2; exit 96; }}\n\
                 job=${{job%%;*}}\n\
                 echo $job > {dir}/job.id\n",
                sbatch = sbatch.join(" "),
            )),
        }
        script.push_str(&format!(
            "echo \"hmw: cluster {name}: Slurm job $job\"\n\
             ( {watch}\n  \
               if [ -f {dir}/job.id ]; then scancel --signal=KILL --full $job; scancel $job; fi\n\
             ) >/dev/null 2>&1 &\n\
             exec 3<&-\n\
             start=$(date +%s)\n\
             while :; do\n  \
               state=$(squeue -h -j $job -o '%T %B' 2>/dev/null)\n  \
               case \"$state\" in\n  \
               '') break ;;\n  \
               PENDING*|CONFIGURING*)\n    \
                 if [ $(( $(date +%s) - start )) -ge {pending} ]; then\n      \
                   scancel $job; rm -f {dir}/job.id\n      \
                   echo \"hmw: cluster {name}: Slurm job $job still pending after {pending} s: cancelled\" >&2\n      \
                   exit 95\n    \
                 fi ;;\n  \
               *) batch=${{state#* }} ;;\n  \
               esac\n  \
               sleep 1\n\
             done\n\
             rm -f {dir}/job.id\n\
             on_batch 'cat {dir}/job.out' 2>/dev/null\n\
             status=$(on_batch 'cat {dir}/job.status' 2>/dev/null)\n\
             if [ -n \"$status\" ]; then exit $status; fi\n\
             state=$(scontrol show job $job 2>/dev/null | grep -o 'JobState=[A-Z_]*')\n\
             echo \"hmw: cluster {name}: Slurm job $job ended without a status (${{state:-state unknown}}: its time limit, or cancelled)\" >&2\n\
             exit 94\n",
            pending = job.pending_limit_s,
            watch = watch_launcher(),
        ));
        script
    }

    /// The cleanup run on the head (`sh -s`, this on its input): stop `mpirun`'s session, then
    /// on every host kill what holds the run's folder in its command line and (unless
    /// `keep`) remove the folder.
    pub(crate) fn cleanup_script(&self, keep: bool) -> String {
        let on_each = self.host_cleanup(keep);
        let dir = sh_quote(&self.dir);
        // The run's own `mpirun` and job, and those of the runs in its subfolders (`hmw
        // calibrate` runs several from one folder).
        let mut script = format!(
            "for f in {dir}/mpirun.pid {dir}/*/mpirun.pid; do\n  [ -f \"$f\" ] || continue\n  \
             pid=$(cat \"$f\")\n  \
             kill -TERM -$pid 2>/dev/null\n  \
             for i in 1 2 3 4 5; do kill -0 -$pid 2>/dev/null || break; sleep 0.2; done\n  \
             kill -KILL -$pid 2>/dev/null\ndone\n\
             for f in {dir}/job.id {dir}/*/job.id; do\n  [ -f \"$f\" ] || continue\n  \
             job=$(cat \"$f\")\n  \
             scancel --signal=KILL --full $job 2>/dev/null; scancel $job\n  \
             for i in $(seq 1 50); do\n    \
               [ -z \"$(squeue -h -j $job 2>/dev/null)\" ] && break; sleep 0.2\n  done\ndone\n"
        );
        // Each other host's part goes to its `sh -s` as a here-document: on its command
        // line, the folder would make the shell running the cleanup a target of its pkill.
        // Three tries each (a loaded head may drop a connection); a host still not cleaned
        // is named, and the cleanup fails.
        script.push_str("failed=\n");
        for host in self.hosts.iter().filter(|h| **h != self.head_host) {
            script.push_str(&format!(
                "( for try in 1 2 3; do\n{} <<'HMW_CLEANUP' && exit 0\n{on_each}\nHMW_CLEANUP\n\
                 sleep 1; done; exit 1 ) &\npids=\"$pids $!:{host}\"\n",
                on_host(&self.head_host, host, "sh -s")
            ));
        }
        script.push_str("for p in $pids; do wait ${p%%:*} || failed=\"$failed ${p#*:}\"; done\n");
        script.push_str(&on_each);
        script.push('\n');
        script.push_str(
            "if [ -n \"$failed\" ]; then echo \"cannot clean up on$failed\" >&2; exit 1; fi\n",
        );
        script
    }

    /// Each host's part of the cleanup: kill what holds the run's folder in its command line,
    /// then (unless `keep`) remove the folder.
    fn host_cleanup(&self, keep: bool) -> String {
        // `[/]x` matches `/x` but not itself: the pattern never matches a command line that
        // holds the pattern.
        let pattern = match self.dir.split_at_checked(1) {
            Some((first, rest)) => format!("[{first}]{rest}"),
            None => self.dir.clone(),
        };
        format!(
            "pkill -KILL -f -- {} 2>/dev/null; {}true",
            sh_quote(&pattern),
            if keep {
                String::new()
            } else {
                format!("{}; ", self.remove_folder())
            }
        )
    }

    /// The removal of the run's folder, from its parent: with the folder's whole path on its
    /// command line, `rm` would be a target of the cleanup's `pkill` too, one running on
    /// another host that shares this one's processes (the testbed's hosts do), and killed
    /// part way, leave files behind.
    fn remove_folder(&self) -> String {
        let (parent, name) = self.dir.rsplit_once('/').unwrap_or((".", &self.dir));
        format!(
            "cd -- {} && rm -rf -- {}",
            sh_quote(if parent.is_empty() { "/" } else { parent }),
            sh_quote(name)
        )
    }

    /// Copies the main master's journal (`DIR/journal.hmwj`, written on rank 0's host) into
    /// `to` as it grows, from its byte `from` on (what `to` already holds, cut there): a
    /// `tail -F` over ssh that lives until the launcher ends it, so that the journal outlives
    /// the host and its folder. The copy lags the master's syncs by the poll's 0.2 s.
    pub(crate) fn follow_journal(&self, to: &Path, from: u64) -> Result<crate::processes::Group> {
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(to)
            .with_context(|| format!("cannot open {}", to.display()))?;
        file.set_len(from)
            .with_context(|| format!("cannot cut {}", to.display()))?;
        let path = format!("{}/{}", self.dir, crate::launch_record::JOURNAL);
        let mut command = self.head.command(&format!(
            "exec tail -c +{} -F -s 0.2 {} 2>/dev/null",
            from + 1,
            sh_quote(&path)
        ));
        command
            .stdin(std::process::Stdio::null())
            .stdout(file)
            .stderr(std::process::Stdio::null());
        crate::processes::Group::start(&mut command).with_context(|| {
            format!(
                "cannot follow the journal of cluster {} on {}",
                self.name,
                self.head.describe()
            )
        })
    }

    /// Run the cleanup; with `stats_to`, first fetch the head's `stats.json` there (in the
    /// same connection: a connection costs seconds on a loaded head). Returns whether there
    /// were statistics; an error names the cluster and its head.
    pub(crate) fn clean(&self, keep: bool, stats_to: Option<&Path>) -> Result<bool> {
        let mut script = String::new();
        if stats_to.is_some() {
            script.push_str(&format!(
                "cat {} 2>/dev/null\n",
                sh_quote(&format!("{}/stats.json", self.dir))
            ));
        }
        script.push_str(&self.cleanup_script(keep));
        let stats = self.head.run(
            "sh -s",
            script.as_bytes(),
            &format!("clean up cluster {}", self.name),
        )?;
        match stats_to {
            Some(to) if !stats.trim().is_empty() => {
                fs::write(to, stats).with_context(|| format!("cannot write {}", to.display()))?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// Seconds without a heartbeat from the launcher after which a cluster's watchdog stops it.
pub(crate) const SILENCE_S: u32 = 20;

/// The shell loop of a watchdog: returns once the launcher's connection (fd 3) closed or
/// stayed silent for [`SILENCE_S`] (the launcher sends a byte every second).
fn watch_launcher() -> String {
    format!("while [ -n \"$(timeout {SILENCE_S} head -c1 <&3 2>/dev/null)\" ]; do :; done")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> RemoteCluster {
        RemoteCluster {
            name: "spain".into(),
            head: SshTarget {
                host: "spain-head".into(),
                user: None,
                port: None,
                identity: None,
                jump: None,
            },
            head_host: "spain-head".into(),
            hosts: vec!["spain-head".into(), "spain-1".into()],
            dir: "/srv/hmw/demo-spain-1".into(),
            slurm: false,
        }
    }

    #[test]
    fn hostfile_is_one_rank_per_line_in_rank_order() {
        let machine_file = "# c\nhead # cluster=x\nb # speed=1\na\nb # S 0 7000 c\n";
        assert_eq!(RemoteCluster::hostfile(machine_file), "head\nb\na\nb\n");
        assert_eq!(RemoteCluster::hosts_of(machine_file), ["head", "b", "a"]);
        let shared = "head\nb\nc # M 1 7000 name=x process=p\nc # M 1 7001 name=y process=p\n";
        assert_eq!(
            RemoteCluster::hostfile(shared),
            "head\nb\nc\n",
            "CMs sharing a process"
        );
    }

    #[test]
    fn cleanup_finds_the_runs_processes_but_not_itself() {
        let script = cluster().cleanup_script(false);
        assert!(
            script.contains("pkill -KILL -f -- '[/]srv/hmw/demo-spain-1'"),
            "{script}"
        );
        assert!(script.contains("ssh -o BatchMode=yes"), "{script}");
        assert!(
            script.contains("spain-1 'sh -s' <<'HMW_CLEANUP' &"),
            "{script}"
        );
        assert!(
            script.contains("cd -- /srv/hmw && rm -rf -- demo-spain-1"),
            "{script}"
        );
        assert!(!cluster().cleanup_script(true).contains("rm -rf"));
        // The pattern matches a rank's command line, and neither the pattern's own nor the
        // removal's.
        let rank = "hmw-synthetic -m /srv/hmw/demo-spain-1/machines";
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!(
                    "printf '%s\\n' {} {} {} | grep -c -- '[/]srv/hmw/demo-spain-1'",
                    sh_quote(rank),
                    sh_quote("pkill -f [/]srv/hmw/demo-spain-1"),
                    sh_quote("rm -rf -- demo-spain-1"),
                ),
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    }

    /// Two hosts' cleanups at once, as on the testbed, whose hosts share one process
    /// namespace: the second host's `pkill` runs while the first host's removal is under
    /// way, and the folder still goes, all of it (CI's deployment check once found a run's
    /// files left on a host whose cleanup had reported success).
    #[test]
    fn one_hosts_cleanup_spares_another_hosts_removal() {
        let parent = std::env::temp_dir().join(format!("hmw-remove-{}", std::process::id()));
        let name = format!("demo-race-{}", std::process::id());
        let dir = parent.join(&name);
        for sub in 0..20 {
            let sub = dir.join(sub.to_string());
            fs::create_dir_all(&sub).unwrap();
            for file in 0..100 {
                fs::write(sub.join(file.to_string()), "x").unwrap();
            }
        }
        fs::write(parent.join("other"), "kept").unwrap();
        let remote = RemoteCluster {
            dir: dir.to_string_lossy().into_owned(),
            ..cluster()
        };
        let mut first = std::process::Command::new("sh")
            .args(["-c", &remote.host_cleanup(false)])
            .spawn()
            .unwrap();
        // Once its `rm` runs (or it has ended), the second host's cleanup.
        let removing = || {
            fs::read_dir("/proc").unwrap().flatten().any(|p| {
                fs::read(p.path().join("cmdline")).is_ok_and(|line| {
                    let line = String::from_utf8_lossy(&line).into_owned();
                    line.starts_with("rm\0") && line.contains(&name)
                })
            })
        };
        let start = std::time::Instant::now();
        while !removing() && first.try_wait().unwrap().is_none() {
            assert!(start.elapsed().as_secs() < 10, "the removal never started");
        }
        let second = std::process::Command::new("sh")
            .args(["-c", &remote.host_cleanup(true)])
            .status()
            .unwrap();
        assert!(second.success() && first.wait().unwrap().success());
        assert!(!dir.exists(), "files left in {}", dir.display());
        assert!(parent.join("other").exists());
        fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn the_run_script_stops_mpirun_when_the_connection_goes() {
        let script = cluster().run_script(
            &["module load openmpi".into()],
            &["mpirun".into(), "-np".into(), "3".into()],
        );
        assert!(
            script.contains("module load openmpi\nsetsid mpirun -np 3"),
            "{script}"
        );
        assert!(script.contains("kill -TERM -$pid"), "{script}");
    }

    #[test]
    fn the_watchdog_returns_when_the_launcher_goes() {
        let _children = crate::processes::tests::spawning_children();
        let run = |input: &str| {
            let started = std::time::Instant::now();
            let status = std::process::Command::new("sh")
                .args(["-c", &format!("exec 3<&0; {}; echo gone", watch_launcher())])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    use std::io::Write as _;
                    let mut stdin = child.stdin.take().unwrap();
                    stdin.write_all(input.as_bytes())?;
                    drop(stdin);
                    child.wait_with_output()
                })
                .unwrap();
            (
                String::from_utf8_lossy(&status.stdout).into_owned(),
                started.elapsed(),
            )
        };
        // Beats, then the launcher goes: the loop ends at once.
        let (out, took) = run("....");
        assert_eq!(out, "gone\n");
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }

    /// Run the Slurm run script of `cluster()` in `dir` against fake `sbatch`, `squeue`,
    /// `scancel` and `scontrol` (the shell functions `fakes` defines, as scripts in `dir/bin`):
    /// its exit code and standard error.
    fn run_slurm_script(name: &str, job: &SlurmJob, fakes: &[(&str, &str)]) -> (i32, String) {
        let _children = crate::processes::tests::spawning_children();
        let dir = std::env::temp_dir().join(format!("hmw-slurm-{name}-{}", std::process::id()));
        let bin = dir.join("bin");
        fs::create_dir_all(&bin).unwrap();
        for (command, body) in fakes {
            let path = bin.join(command);
            fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut remote = cluster();
        remote.dir = dir.to_string_lossy().into_owned();
        let script = remote.slurm_run_script(&[], job);
        let path = std::env::var("PATH").unwrap_or_default();
        // Its input stays open while it runs (the launcher's connection): the watchdog waits.
        let mut child = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("PATH", format!("{}:{path}", bin.display()))
            .env("FAKE", &dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "the script still runs after 30 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        drop(child.stdin.take());
        let mut stderr = String::new();
        use std::io::Read as _;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let cancelled = fs::read_to_string(dir.join("cancelled")).unwrap_or_default();
        let _ = fs::remove_dir_all(&dir);
        (
            status.code().unwrap_or(-1),
            format!("{stderr}cancelled: {cancelled}"),
        )
    }

    #[test]
    fn a_job_pending_past_its_limit_is_cancelled_and_named() {
        let job = SlurmJob {
            partition: None,
            account: None,
            time_limit: None,
            pending_limit_s: 1,
            allocated: None,
        };
        let (code, said) = run_slurm_script(
            "pending",
            &job,
            &[
                ("sbatch", "echo 42"),
                ("squeue", "echo 'PENDING n/a'"),
                ("scancel", "echo \"$@\" >> \"$FAKE/cancelled\""),
                ("scontrol", "true"),
            ],
        );
        assert_eq!(code, 95, "{said}");
        assert!(
            said.contains("cluster spain: Slurm job 42 still pending after 1 s: cancelled"),
            "{said}"
        );
        assert!(said.contains("cancelled: 42"), "{said}");
    }

    #[test]
    fn a_job_ended_by_its_time_limit_is_said_so() {
        let job = SlurmJob {
            partition: None,
            account: None,
            time_limit: Some("0:01"),
            pending_limit_s: 60,
            allocated: None,
        };
        // Running for two looks, then gone without a status: Slurm ended it.
        let (code, said) = run_slurm_script(
            "timelimit",
            &job,
            &[
                ("sbatch", "echo \"$@\" > \"$FAKE/sbatch\"; echo 43"),
                (
                    "squeue",
                    "n=$(cat \"$FAKE/looks\" 2>/dev/null || echo 0); echo $((n + 1)) > \
                     \"$FAKE/looks\"; [ $n -lt 2 ] && echo \"RUNNING $(hostname)\"; true",
                ),
                ("scancel", "echo \"$@\" >> \"$FAKE/cancelled\""),
                (
                    "scontrol",
                    "echo 'JobId=43 JobState=TIMEOUT Reason=TimeLimit'",
                ),
            ],
        );
        assert_eq!(code, 94, "{said}");
        assert!(
            said.contains(
                "cluster spain: Slurm job 43 ended without a status (JobState=TIMEOUT: its time \
                 limit, or cancelled)"
            ),
            "{said}"
        );
        // Nothing left to cancel: the job ended by itself.
        assert!(said.ends_with("cancelled: "), "{said}");
    }

    #[test]
    fn a_slurm_job_asks_for_exactly_the_plans_hosts() {
        let job = SlurmJob {
            partition: Some("main"),
            account: None,
            time_limit: Some("5:00"),
            pending_limit_s: 60,
            allocated: None,
        };
        let script = cluster().slurm_run_script(&[], &job);
        assert!(
            script.contains("--nodelist=spain-head,spain-1 --nodes=2"),
            "{script}"
        );
        assert!(script.contains("--partition=main"), "{script}");
        assert!(script.contains("--time=5:00"), "{script}");
        assert!(script.contains("-ge 60 ]"), "{script}");
        assert!(script.contains("scancel $job"), "{script}");
        assert!(cluster().cleanup_script(false).contains("scancel $job"));
    }
}
