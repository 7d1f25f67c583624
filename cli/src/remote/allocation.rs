//! "Let Slurm choose" (`[cluster.launch] slurm_choose = true`): before anything is staged, an
//! sbatch on the cluster's head without `--nodelist` holds as many nodes as the cluster's
//! machines name hosts. Once the job runs, its nodes (`scontrol show hostnames` of its node
//! list) take the places of the plan's hosts ([`place`]): the machine file is written from
//! them and the prediction redone for them. The job's own script waits for the launcher's go
//! (`DIR/go` on the batch node, written by the cluster's run script once every host is
//! staged), then runs `DIR/job.sh` as the job of an exact `--nodelist` does.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use hmw_model::plan::{Plan, Role};

use super::{
    cluster::{Allocation, RemoteCluster, SlurmJob},
    deployment::{clean_all, run_name, work_folder, write_state},
    ssh::{sh_quote, SshTarget},
};

/// Seconds an allocated job waits for the launcher's go before it gives its nodes back.
pub(crate) const GO_WAIT_S: u32 = 600;

/// The allocations of a run. Until [`Allocations::handed_over`] (to the deployment, which
/// cleans them with the rest), dropping them cancels their jobs and removes their folders: an
/// error between the allocation and the staging leaves no job behind.
pub(crate) struct Allocations {
    pub(crate) list: Vec<Allocation>,
    state_file: PathBuf,
}

impl Allocations {
    /// No allocation (no cluster lets Slurm choose).
    pub(crate) fn none(state_file: &Path) -> Allocations {
        Allocations {
            list: Vec::new(),
            state_file: state_file.to_owned(),
        }
    }

    /// The deployment cleans them from now on.
    pub(crate) fn handed_over(mut self) {
        self.list.clear();
    }
}

impl Drop for Allocations {
    fn drop(&mut self) {
        if self.list.is_empty() {
            return;
        }
        let remotes: Vec<RemoteCluster> = self.list.iter().map(|a| a.remote.clone()).collect();
        match clean_all(&remotes, false, &self.state_file, None) {
            Ok(()) => println!("== allocations given back: the run did not start"),
            Err(e) => eprintln!("warning: {e:#}"),
        }
    }
}

/// The distinct hosts of cluster `name`'s machines, in plan order.
fn plan_hosts(plan: &Plan, name: &str) -> Result<Vec<String>> {
    let cluster = plan
        .clusters
        .iter()
        .find(|c| c.name == name)
        .with_context(|| format!("no cluster {name} in the plan"))?;
    let mut hosts: Vec<String> = Vec::new();
    for m in &cluster.machines {
        if !hosts.contains(&m.host) {
            hosts.push(m.host.clone());
        }
    }
    Ok(hosts)
}

/// For every cluster of `plan` that lets Slurm choose: its run folder made on its head, an
/// sbatch of as many nodes as its machines name hosts, and the wait until the job runs (a job
/// still pending after `pending_limit_s` is cancelled, and said so). `state_file` records
/// each job before it is asked for, for `hmw launch --cleanup`; on an error the jobs asked for
/// so far are cancelled.
pub(crate) fn allocate(plan: &Plan, state_file: &Path) -> Result<Allocations> {
    let run_name = run_name(plan);
    let mut allocations = Allocations::none(state_file);
    for cluster in &plan.clusters {
        let launch = cluster
            .launch_settings()
            .with_context(|| format!("cluster {}: [cluster.launch]", cluster.name))?;
        // The plan's check at load: only with launcher = "slurm".
        if !launch.slurm_choose {
            continue;
        }
        let own = if cluster.main {
            Role::Master
        } else {
            Role::Submaster
        };
        let default_head = cluster
            .machines
            .iter()
            .find(|m| m.role == own)
            .map(|m| m.host.clone())
            .context("a cluster has its master or sub-master")?;
        let head = SshTarget::head_of(&launch, &default_head);
        let folder = work_folder(&head, &launch, &cluster.name, false)?;
        let nodes = plan_hosts(plan, &cluster.name)?.len();
        let mut remote = RemoteCluster {
            name: cluster.name.clone(),
            head_host: head.host.clone(),
            head,
            hosts: Vec::new(),
            dir: format!("{folder}/{run_name}-{}", cluster.name),
            slurm: true,
        };
        // Its job id goes to DIR/job.id on the head before the wait: a cleanup finds it.
        allocations.list.push(Allocation {
            remote: remote.clone(),
            job: String::new(),
            batch: String::new(),
        });
        let remotes: Vec<RemoteCluster> =
            allocations.list.iter().map(|a| a.remote.clone()).collect();
        write_state(state_file, &plan.name, &remotes)?;
        let job = SlurmJob::of(&launch);
        println!(
            "== cluster {}: asking Slurm for {nodes} nodes of its choice on {}",
            cluster.name,
            remote.head.describe()
        );
        let said = remote.head.run(
            "sh -s",
            allocation_script(&remote, nodes, &launch.environment, &job).as_bytes(),
            &format!("allocate the nodes of cluster {}", cluster.name),
        )?;
        let (job, batch, nodes) = parse_allocation(&said)
            .with_context(|| format!("cluster {}: the allocation said {said:?}", cluster.name))?;
        remote.hosts = nodes;
        let last = allocations.list.last_mut().expect("pushed above");
        *last = Allocation { remote, job, batch };
        println!(
            "== cluster {}: Slurm job {} on {}",
            cluster.name,
            last.job,
            last.remote.hosts.join(", ")
        );
    }
    Ok(allocations)
}

/// The script run on the head (`sh -s`) that asks for the allocation: the environment, sbatch
/// of `nodes` nodes (the job's script on sbatch's input), the wait until it runs; prints
/// `job=ID`, `batch=NODE` and `nodes=NODE ...` (expanded by `scontrol show hostnames`).
pub(crate) fn allocation_script(
    remote: &RemoteCluster,
    nodes: usize,
    environment: &[String],
    job: &SlurmJob,
) -> String {
    let dir = sh_quote(&remote.dir);
    let name = &remote.name;
    let mut sbatch = vec![
        "sbatch".to_owned(),
        "--parsable".into(),
        format!("--job-name=hmw-{name}"),
        format!("--nodes={nodes}"),
        format!("--ntasks={nodes}"),
        "--output=/dev/null".into(),
        "--chdir=/tmp".into(),
    ];
    sbatch.extend(job.options());
    let sbatch: Vec<String> = sbatch.iter().map(|a| sh_quote(a)).collect();
    let mut script = format!(
        "# hmw launch: the nodes of cluster {name}, chosen by Slurm (generated)\n\
         mkdir -p {dir} && cd {dir} || exit 97\n"
    );
    for line in environment {
        script.push_str(line);
        script.push('\n');
    }
    script.push_str(&format!(
        "job=$({sbatch} <<'HMW_JOB'\n\
         #!/bin/sh\n\
         # hmw launch: cluster {name} waits for the launcher's go (generated)\n\
         mkdir -p {dir} && cd {dir} || exit 97\n\
         exec >{dir}/job.out 2>&1\n\
         waited=0\n\
         while [ ! -f {dir}/go ]; do\n  \
           waited=$((waited + 1))\n  \
           if [ $waited -gt {polls} ]; then echo \"hmw: cluster {name}: no go from the launcher after {go} s\"; exit 93; fi\n  \
           sleep 0.2\n\
         done\n\
         exec sh {dir}/job.sh\n\
         HMW_JOB\n\
         ) || {{ echo \"hmw: cluster {name}: sbatch failed\" >&2; exit 96; }}\n\
         job=${{job%%;*}}\n\
         echo $job > {dir}/job.id\n\
         start=$(date +%s)\n\
         while :; do\n  \
           state=$(squeue -h -j $job -o '%T %B %N' 2>/dev/null)\n  \
           case \"$state\" in\n  \
           RUNNING*) break ;;\n  \
           '') rm -f {dir}/job.id\n    \
               echo \"hmw: cluster {name}: Slurm job $job ended before it ran\" >&2; exit 94 ;;\n  \
           *) if [ $(( $(date +%s) - start )) -ge {pending} ]; then\n      \
                scancel $job; rm -f {dir}/job.id\n      \
                echo \"hmw: cluster {name}: Slurm job $job still pending after {pending} s: cancelled\" >&2\n      \
                exit 95\n    \
              fi ;;\n  \
           esac\n  \
           sleep 0.5\n\
         done\n\
         set -- $state\n\
         echo \"job=$job\"\n\
         echo \"batch=$2\"\n\
         echo \"nodes=$(scontrol show hostnames \"$3\" | tr '\\n' ' ')\"\n",
        sbatch = sbatch.join(" "),
        polls = GO_WAIT_S * 5,
        go = GO_WAIT_S,
        pending = job.pending_limit_s,
    ));
    script
}

/// The job id, batch node and nodes the allocation script printed.
fn parse_allocation(said: &str) -> Result<(String, String, Vec<String>)> {
    let value = |key: &str| {
        said.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .with_context(|| format!("no {key}"))
    };
    let job = value("job=")?.to_owned();
    let batch = value("batch=")?.to_owned();
    let nodes: Vec<String> = value("nodes=")?
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    Ok((job, batch, nodes))
}

/// `plan` with cluster `name`'s hosts replaced by the `nodes` Slurm allocated: a node that one
/// of its machines names keeps that entry; each other entry's host goes, in plan order, to a
/// node no entry names, in Slurm's order. Each entry keeps its role and `perf`; `use_workers`
/// follows. Returns the plan and the hosts replaced (`(plan's, allocated)`).
pub(crate) fn place(
    plan: &Plan,
    name: &str,
    nodes: &[String],
) -> Result<(Plan, Vec<(String, String)>)> {
    let hosts = plan_hosts(plan, name)?;
    if hosts.len() != nodes.len() {
        bail!(
            "cluster {name}: Slurm allocated {} nodes ({}), the plan's machines name {} hosts",
            nodes.len(),
            nodes.join(", "),
            hosts.len()
        );
    }
    let mut free = nodes.iter().filter(|n| !hosts.contains(n));
    let replaced: Vec<(String, String)> = hosts
        .iter()
        .filter(|h| !nodes.contains(h))
        .map(|h| (h.clone(), free.next().expect("as many free nodes").clone()))
        .collect();
    let rename = |host: &mut String| {
        if let Some((_, node)) = replaced.iter().find(|(from, _)| from == host) {
            *host = node.clone();
        }
    };
    let mut placed = plan.clone();
    let cluster = placed
        .clusters
        .iter_mut()
        .find(|c| c.name == name)
        .expect("found above");
    cluster
        .machines
        .iter_mut()
        .for_each(|m| rename(&mut m.host));
    cluster.use_workers.iter_mut().flatten().for_each(rename);
    Ok((placed, replaced))
}

#[cfg(test)]
mod tests {
    use std::{
        fs,
        io::Read as _,
        process::{Command, Stdio},
        time::{Duration, Instant},
    };

    use super::*;
    use crate::layout::{layout, Target};

    /// lyon, and brazil through Slurm letting it choose: its entries name `brazil-head` (a
    /// node Slurm has), `any-1` and `any-2` (labels).
    fn plan() -> Plan {
        Plan::from_toml_str(
            "[application]\nname = \"t\"\ntasks = 100\ntask_bytes = 10\nresult_bytes = 10\n\
             [launch]\nbinary = \"hmw-synthetic\"\nreference_perf = 10.0\n\
             [[cluster]]\nname = \"lyon\"\nmain = true\nlan_bytes_per_s = 1e9\nmachines = [\n\
             { host = \"lyon-head\", role = \"master\" },\n\
             { host = \"lyon-1\", role = \"worker\", perf = 10.0 },\n]\n\
             [[cluster]]\nname = \"brazil\"\nlan_bytes_per_s = 1e9\nwan_in_bytes_per_s = 1e6\n\
             wan_out_bytes_per_s = 1e6\nmachines = [\n\
             { host = \"any-1\", role = \"submaster\" },\n\
             { host = \"brazil-head\", role = \"worker\", perf = 5.0 },\n\
             { host = \"any-2\", role = \"worker\", perf = 15.0 },\n]\n\
             [cluster.launch]\nlauncher = \"slurm\"\nslurm_choose = true\n",
        )
        .unwrap()
    }

    fn machine_file(plan: &Plan, cluster: &str) -> String {
        let mut port = 7000;
        let layout = layout(plan, None, Target::Deployment, None, || {
            port += 1;
            port
        })
        .unwrap();
        layout
            .clusters
            .iter()
            .find(|c| c.name == cluster)
            .unwrap()
            .machine_file
            .clone()
    }

    #[test]
    fn the_machine_file_is_written_from_the_allocated_nodes() {
        // What `scontrol show hostnames brazil-[1-2,5],brazil-head` prints, in Slurm's order.
        let nodes: Vec<String> = ["brazil-1", "brazil-2", "brazil-5", "brazil-head"]
            .map(String::from)
            .into();
        let err = place(&plan(), "brazil", &nodes).unwrap_err().to_string();
        assert!(
            err.contains("Slurm allocated 4 nodes (brazil-1, brazil-2, brazil-5, brazil-head), the plan's machines name 3 hosts"),
            "{err}"
        );
        let (placed, replaced) = place(&plan(), "brazil", &nodes[1..]).unwrap();
        // brazil-head keeps its entry; the labels take the other nodes in Slurm's order.
        assert_eq!(
            replaced,
            [
                ("any-1".to_owned(), "brazil-2".to_owned()),
                ("any-2".to_owned(), "brazil-5".to_owned())
            ]
        );
        let file = machine_file(&placed, "brazil");
        let ranks: Vec<&str> = file.lines().filter(|l| !l.starts_with('#')).collect();
        // One rank per line: the sub-master and the CM on the first entry's node, each worker
        // on its node with its entry's speed; lyon's CM is the server.
        assert_eq!(ranks[0], "brazil-2 # cluster=brazil");
        assert_eq!(ranks[1], "brazil-head # speed=0.5");
        assert_eq!(ranks[2], "brazil-5 # speed=1.5");
        assert!(ranks[3].starts_with("brazil-2 # S 0 7001 "), "{file}");
        assert_eq!(ranks.len(), 4, "{file}");
        assert_eq!(machine_file(&placed, "lyon"), machine_file(&plan(), "lyon"));
    }

    /// A folder of the temporary directory, removed when dropped (a failed test too).
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Writes each `(command, body)` as an executable script in `dir/bin`.
    fn fakes(dir: &Path, commands: &[(&str, &str)]) -> PathBuf {
        let bin = dir.join("bin");
        fs::create_dir_all(&bin).unwrap();
        for (command, body) in commands {
            let path = bin.join(command);
            fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        bin
    }

    /// Runs `script` in `sh` with `bin` first on PATH and `FAKE=dir`, its input open while it
    /// runs (the launcher's connection), for 30 s at most: its exit code, output and errors.
    fn run(script: &str, bin: &Path, dir: &Path) -> (i32, String, String) {
        let path = std::env::var("PATH").unwrap_or_default();
        let mut child = Command::new("sh")
            .args(["-c", script])
            .env("PATH", format!("{}:{path}", bin.display()))
            .env("FAKE", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("the script still runs after 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        drop(child.stdin.take());
        let (mut out, mut err) = (String::new(), String::new());
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), out, err)
    }

    fn hostname() -> String {
        let out = Command::new("hostname").output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn remote(dir: &Path) -> RemoteCluster {
        RemoteCluster {
            name: "brazil".into(),
            head: SshTarget {
                host: hostname(),
                user: None,
                port: None,
                identity: None,
                jump: None,
            },
            head_host: hostname(),
            hosts: Vec::new(),
            dir: dir.join("run").to_string_lossy().into_owned(),
            slurm: true,
        }
    }

    /// The whole flow against fake Slurm commands: the sbatch of three nodes of Slurm's choice
    /// (its job a background shell here), their names from the job's node list, the plan
    /// placed on them and the machine file written, the run script's go, `mpirun` inside the
    /// job on the hostfile of the allocated nodes, its status back; no job id left.
    #[test]
    fn slurm_chooses_the_nodes_and_the_run_goes_on_them() {
        let _children = crate::processes::tests::spawning_children();
        let scratch = Scratch::new("hmw-choose");
        let dir = scratch.0.clone();
        let me = hostname();
        let bin = fakes(
            &dir,
            &[
                // The job runs at once, here: the batch script from sbatch's input.
                (
                    "sbatch",
                    "echo \"$@\" > \"$FAKE/sbatch.args\"; cat > \"$FAKE/job.script\"\n\
                     ( sh \"$FAKE/job.script\"; touch \"$FAKE/job.done\" ) </dev/null >/dev/null 2>&1 &\n\
                     echo '51;tb'",
                ),
                // `-o '%T %B'` or `-o '%T %B %N'`, until the job's shell is done (a file:
                // orphaned, it may become the test process's unreaped child).
                (
                    "squeue",
                    "[ -f \"$FAKE/job.done\" ] && exit 0\n\
                     case \"$*\" in *%N*) nodes=\" $(hostname),brazil-[4-5]\" ;; esac\n\
                     echo \"RUNNING $(hostname)$nodes\"",
                ),
                (
                    "scontrol",
                    "[ \"$1 $2\" = 'show hostnames' ] || exit 1\n\
                     [ \"$3\" = \"$(hostname),brazil-[4-5]\" ] || exit 1\n\
                     printf '%s\\n' \"$(hostname)\" brazil-4 brazil-5",
                ),
                ("scancel", "echo \"$@\" >> \"$FAKE/cancelled\""),
                (
                    "mpirun",
                    "echo \"$@\" > \"$FAKE/mpirun.args\"; cat \"$2\" > \"$FAKE/ranks\"",
                ),
            ],
        );
        let mut remote = remote(&dir);
        let job = SlurmJob {
            partition: Some("main"),
            account: None,
            time_limit: Some("5:00"),
            pending_limit_s: 10,
            allocated: None,
        };
        let (code, said, err) = run(&allocation_script(&remote, 3, &[], &job), &bin, &dir);
        assert_eq!(code, 0, "{err}");
        let (id, batch, nodes) = parse_allocation(&said).unwrap();
        assert_eq!((id.as_str(), batch.as_str()), ("51", me.as_str()));
        assert_eq!(nodes, [me.as_str(), "brazil-4", "brazil-5"]);
        let args = fs::read_to_string(dir.join("sbatch.args")).unwrap();
        assert!(args.contains("--nodes=3 --ntasks=3"), "{args}");
        assert!(!args.contains("--nodelist"), "{args}");
        assert!(args.contains("--partition=main"), "{args}");

        // The plan's labels on the nodes, the machine file from them.
        let mut plan = plan();
        let brazil = plan
            .clusters
            .iter_mut()
            .find(|c| c.name == "brazil")
            .unwrap();
        brazil.machines[1].host = me.clone();
        let (placed, _) = place(&plan, "brazil", &nodes).unwrap();
        let machines = machine_file(&placed, "brazil");
        remote.hosts = RemoteCluster::hosts_of(&machines);
        assert_eq!(remote.hosts, ["brazil-4", me.as_str(), "brazil-5"]);
        let run_dir = Path::new(&remote.dir);
        fs::write(run_dir.join("hostfile"), RemoteCluster::hostfile(&machines)).unwrap();
        let mpirun = remote.mpirun(4, &[]);
        fs::write(run_dir.join("job.sh"), remote.job_script(&[], &mpirun)).unwrap();

        // The run: go, mpirun in the job, its status back.
        let allocated = SlurmJob {
            allocated: Some((&id, &batch)),
            ..job
        };
        let (code, out, err) = run(&remote.slurm_run_script(&[], &allocated), &bin, &dir);
        let ranks = fs::read_to_string(dir.join("ranks")).unwrap_or_default();
        let mpirun_args = fs::read_to_string(dir.join("mpirun.args")).unwrap_or_default();
        let job_id_left = run_dir.join("job.id").exists();
        let cancelled = fs::read_to_string(dir.join("cancelled")).unwrap_or_default();
        let job_out = fs::read_to_string(run_dir.join("job.out")).unwrap_or_default();
        drop(scratch);
        assert_eq!(code, 0, "{out}{err}; the job said: {job_out}");
        assert!(out.contains("hmw: cluster brazil: Slurm job 51"), "{out}");
        assert_eq!(ranks, format!("brazil-4\n{me}\nbrazil-5\nbrazil-4\n"));
        assert!(mpirun_args.contains("--map-by seq -np 4"), "{mpirun_args}");
        assert!(!job_id_left);
        assert_eq!(cancelled, "");
    }

    /// The job of chosen nodes ended by its time limit (running for two looks after the go,
    /// then gone without a status): said so, nothing left to cancel.
    #[test]
    fn a_chosen_allocation_ended_by_its_time_limit_is_said_so() {
        let _children = crate::processes::tests::spawning_children();
        let scratch = Scratch::new("hmw-choose-timeout");
        let dir = scratch.0.clone();
        let bin = fakes(
            &dir,
            &[
                (
                    "squeue",
                    "n=$(cat \"$FAKE/looks\" 2>/dev/null || echo 0); echo $((n + 1)) > \
                     \"$FAKE/looks\"; [ $n -lt 2 ] && echo \"RUNNING $(hostname)\"; true",
                ),
                ("scancel", "echo \"$@\" >> \"$FAKE/cancelled\""),
                (
                    "scontrol",
                    "echo 'JobId=53 JobState=TIMEOUT Reason=TimeLimit'",
                ),
            ],
        );
        let remote = remote(&dir);
        fs::create_dir_all(&remote.dir).unwrap();
        let me = hostname();
        let job = SlurmJob {
            partition: None,
            account: None,
            time_limit: Some("0:01"),
            pending_limit_s: 60,
            allocated: Some(("53", &me)),
        };
        let (code, _, err) = run(&remote.slurm_run_script(&[], &job), &bin, &dir);
        let go = Path::new(&remote.dir).join("go").exists();
        let cancelled = fs::read_to_string(dir.join("cancelled")).unwrap_or_default();
        drop(scratch);
        assert!(go, "no go given");
        assert_eq!(code, 94, "{err}");
        assert!(
            err.contains(
                "cluster brazil: Slurm job 53 ended without a status (JobState=TIMEOUT: its \
                 time limit, or cancelled)"
            ),
            "{err}"
        );
        assert_eq!(cancelled, "");
    }

    #[test]
    fn a_chosen_allocation_still_pending_is_cancelled_and_named() {
        let _children = crate::processes::tests::spawning_children();
        let scratch = Scratch::new("hmw-choose-pending");
        let dir = scratch.0.clone();
        let bin = fakes(
            &dir,
            &[
                ("sbatch", "cat >/dev/null; echo 52"),
                ("squeue", "echo 'PENDING n/a n/a'"),
                ("scancel", "echo \"$@\" >> \"$FAKE/cancelled\""),
            ],
        );
        let job = SlurmJob {
            partition: None,
            account: None,
            time_limit: None,
            pending_limit_s: 1,
            allocated: None,
        };
        let remote = remote(&dir);
        let (code, _, err) = run(&allocation_script(&remote, 3, &[], &job), &bin, &dir);
        let cancelled = fs::read_to_string(dir.join("cancelled")).unwrap_or_default();
        drop(scratch);
        assert_eq!(code, 95, "{err}");
        assert!(
            err.contains("cluster brazil: Slurm job 52 still pending after 1 s: cancelled"),
            "{err}"
        );
        assert_eq!(cancelled, "52\n");
    }
}
