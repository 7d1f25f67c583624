//! The tables of a plan that say how to run it rather than what to predict: `[launch]` and
//! each cluster's `[cluster.launch]`. The model keeps them uninterpreted in [`Plan`]; the
//! commands that run a plan (`hmw launch`, `hmw calibrate`, the testbed) read them here, so
//! that every reader agrees on one format.
//!
//! ```toml
//! [launch]
//! binary = "hmw-synthetic"     # the application: next to `hmw`, or a path
//! reference_perf = 20.0        # a worker whose `perf` is this runs at speed 1 (emulation)
//! [launch.application]         # the application's own [application] settings
//! [launch.cm]                  # [cm] settings of the communication managers
//! restarts = 3                 # a cluster whose job died is started again, this many times
//!                              # in a run (its hosts that stop answering left out)
//! host_timeout_s = 30          # a host of a remote cluster silent this long is taken for lost
//!
//! [[cluster]]
//! # ...
//! [cluster.launch]
//! launcher = "local"           # how its ranks start: local, ssh, slurm or threads
//! parent = "argentina"         # the cluster it hangs from (default: the main cluster)
//! wan_delay_ms = 25            # one-way delay of the emulated WAN
//! wan_jitter_ms = 0
//! wan_loss = 0.0               # random loss, each way
//! wan_outages = ["30-50"]      # seconds from the start when the link is down
//! emulate_rates = true         # limit each way to wan_in/out_bytes_per_s
//! [[cluster.launch.changes]]   # a change during the run (`hmw simulate` plays it; on the
//! at_s = 6.0                   # testbed, `hmw-testbed set-perf` and `set-rate` make it)
//! perf_factor = 0.333          # its hosts' workers at this times their perf from then on
//! host = "spain-1"             # only this host (default: every host of the cluster)
//! wan_rate_factor = 0.2        # its WAN's rates, both ways, at this times the plan's
//! # launcher = "ssh": the cluster's ranks start with mpirun on its head host, over ssh
//! head = "lyon-head"           # the ssh host of its head (default: its master's host)
//! ssh_user = "me"              # default: ssh's own (its configuration, then the local user)
//! ssh_port = 22
//! ssh_identity = "~/.ssh/id_ed25519"
//! jump = "gw.example.org"      # reach the head through this host (ssh ProxyJump)
//! work_dir = "/scratch/me/hmw" # the remote work folder's parent (default: hmw-runs in home)
//! remote_binary = "/opt/hmw/bin/hmw-synthetic"   # the application on the cluster
//! stage_binary = false         # copy the launching machine's binary instead
//! environment = ["module load openmpi"]          # run first, in the remote shell
//! mpirun_args = ["--mca", "btl", "self,tcp"]     # added to mpirun's options
//! # launcher = "threads": every rank a thread of one process (`APP --threads`), no MPI:
//! # on this machine, or on its head over ssh when the other clusters run on their hosts
//! # (the ssh keys above apply; its machine entries are then labels on that one host)
//! # launcher = "slurm": as ssh, mpirun inside an sbatch allocation of the plan's hosts
//! partition = "batch"
//! account = "project-42"
//! time_limit = "30:00"         # sbatch --time
//! pending_limit_s = 300        # a job still pending after this is cancelled, and said so
//! slurm_choose = false         # true: no --nodelist; Slurm chooses as many nodes as the
//!                              # cluster's machines name hosts; an allocated node keeps the
//!                              # entry that names it, each other entry goes to a node no
//!                              # entry names (in Slurm's order); only for a cluster whose
//!                              # CMs are all clients (checked at load)
//! ```

use serde::Deserialize;

use super::{error::invalid_machine, ClusterPlan, Plan, PlanError, Role};

/// `[launch]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchTable {
    /// The application binary: a name found next to `hmw` or on `PATH`, or a path.
    pub binary: Option<String>,
    /// Emulation on one machine: a worker whose `perf` is this runs at speed 1.
    pub reference_perf: Option<f64>,
    /// The application's own `[application]` settings.
    #[serde(default)]
    pub application: toml::Table,
    /// The `[cm]` settings of the communication managers.
    #[serde(default)]
    pub cm: toml::Table,
    /// How many times in a run `hmw launch` starts a cluster whose job died again (its hosts
    /// that stopped answering left out; the main cluster's master from its journal).
    #[serde(default = "default_restarts")]
    pub restarts: u32,
    /// A host of a cluster on its own hosts that has not answered the launcher's probes (ssh
    /// from its head, every third of this) for this many seconds is taken for lost: its
    /// cluster's job is stopped and started again without it.
    #[serde(default = "default_host_timeout_s")]
    pub host_timeout_s: f64,
}

fn default_host_timeout_s() -> f64 {
    30.0
}

fn default_restarts() -> u32 {
    3
}

impl Default for LaunchTable {
    fn default() -> Self {
        LaunchTable {
            binary: None,
            reference_perf: None,
            application: toml::Table::new(),
            cm: toml::Table::new(),
            restarts: default_restarts(),
            host_timeout_s: default_host_timeout_s(),
        }
    }
}

/// How a cluster's ranks are started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// `mpirun` on the launching machine (every cluster on this machine).
    #[default]
    Local,
    /// `mpirun` over ssh on the cluster's hosts.
    Ssh,
    /// A Slurm allocation on the cluster's nodes.
    Slurm,
    /// Every rank a thread of one process over the in-process transport (`APP --threads`),
    /// no MPI: the same roles and CM links, for a cluster that is one large node. On this
    /// machine when every other cluster is too, else on the cluster's head over ssh.
    Threads,
}

impl Launcher {
    /// Its name in a plan.
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Local => "local",
            Launcher::Ssh => "ssh",
            Launcher::Slurm => "slurm",
            Launcher::Threads => "threads",
        }
    }

    /// Whether the cluster's ranks run under `mpirun` (every launcher but `threads`).
    pub fn uses_mpi(self) -> bool {
        self != Launcher::Threads
    }
}

/// `[cluster.launch]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterLaunch {
    /// How the cluster's ranks are started.
    pub launcher: Launcher,
    /// The cluster it hangs from (default: the main cluster).
    pub parent: Option<String>,
    /// One-way delay of the WAN to its parent, milliseconds.
    pub wan_delay_ms: f64,
    /// Jitter of that delay, milliseconds.
    pub wan_jitter_ms: f64,
    /// Random loss, each way.
    pub wan_loss: f64,
    /// When the link is down, seconds from the start (`30-50` or `30+20`).
    pub wan_outages: Vec<String>,
    /// Limit each way to the cluster's `wan_in/out_bytes_per_s`.
    pub emulate_rates: bool,
    /// Changes during the run: hosts slowed, the WAN's rate changed.
    pub changes: Vec<RunChange>,
    /// The CMs of the cluster's links to further clusters share one process of its MPI job
    /// (`process=links` on their machine-file lines): one process slot and one poller of MPI
    /// for all of them, rather than a process each.
    pub links_in_one_process: bool,
    /// The ssh host of the cluster's head (default: the host of its master or sub-master).
    pub head: Option<String>,
    /// The ssh user (default: ssh's own choice).
    pub ssh_user: Option<String>,
    /// The ssh port (default: ssh's own choice).
    pub ssh_port: Option<u16>,
    /// The ssh identity file.
    pub ssh_identity: Option<String>,
    /// A host the head is reached through (ssh `ProxyJump`).
    pub jump: Option<String>,
    /// The parent of the remote work folders (default: `hmw-runs` in the remote home).
    pub work_dir: Option<String>,
    /// The application binary's path on the cluster (default: the launching machine's path).
    pub remote_binary: Option<String>,
    /// Copy the launching machine's binary to every host of the cluster.
    pub stage_binary: bool,
    /// Shell lines run on the head before `mpirun` (`module load openmpi`).
    pub environment: Vec<String>,
    /// Extra `mpirun` options.
    pub mpirun_args: Vec<String>,
    /// Slurm: the partition (`sbatch --partition`).
    pub partition: Option<String>,
    /// Slurm: the account (`sbatch --account`).
    pub account: Option<String>,
    /// Slurm: the job's time limit (`sbatch --time`, Slurm's format).
    pub time_limit: Option<String>,
    /// Slurm: seconds a job may stay pending before it is cancelled.
    pub pending_limit_s: u64,
    /// Slurm: let Slurm choose the nodes (no `--nodelist`), as many as the cluster's machines
    /// name hosts; the machine file is written from the allocation.
    pub slurm_choose: bool,
}

impl Default for ClusterLaunch {
    fn default() -> Self {
        ClusterLaunch {
            launcher: Launcher::Local,
            parent: None,
            wan_delay_ms: 0.0,
            wan_jitter_ms: 0.0,
            wan_loss: 0.0,
            wan_outages: Vec::new(),
            emulate_rates: true,
            changes: Vec::new(),
            links_in_one_process: false,
            head: None,
            ssh_user: None,
            ssh_port: None,
            ssh_identity: None,
            jump: None,
            work_dir: None,
            remote_binary: None,
            stage_binary: false,
            environment: Vec::new(),
            mpirun_args: Vec::new(),
            partition: None,
            account: None,
            time_limit: None,
            pending_limit_s: 300,
            slurm_choose: false,
        }
    }
}

/// A change during the run, `at_s` seconds from the start (`[[cluster.launch.changes]]`),
/// with the meaning of the testbed's changes while running: `perf_factor` as
/// `hmw-testbed set-perf HOST perf x factor` on the cluster's hosts (or `host` alone),
/// `wan_rate_factor` as `hmw-testbed set-rate CLUSTER rate x factor` (both ways). Each factor
/// is over the plan's figure, not over an earlier change's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunChange {
    /// Seconds from the start.
    pub at_s: f64,
    /// The host whose speed changes (default: every host of the cluster).
    pub host: Option<String>,
    /// The workers' speed over their `perf` from `at_s` on.
    pub perf_factor: Option<f64>,
    /// The WAN's rates over the plan's, both ways, from `at_s` on.
    pub wan_rate_factor: Option<f64>,
}

impl RunChange {
    /// Why the change is not valid, if it is not: the key at fault.
    pub fn check(&self) -> Result<(), String> {
        if !(self.at_s.is_finite() && self.at_s >= 0.0) {
            return Err(format!("at_s = {}: expected seconds >= 0", self.at_s));
        }
        for (key, factor) in [
            ("perf_factor", self.perf_factor),
            ("wan_rate_factor", self.wan_rate_factor),
        ] {
            if let Some(f) = factor.filter(|f| !(f.is_finite() && *f > 0.0)) {
                return Err(format!("{key} = {f}: expected a factor > 0"));
            }
        }
        if self.perf_factor.is_none() && self.wan_rate_factor.is_none() {
            return Err("neither perf_factor nor wan_rate_factor: nothing changes".into());
        }
        if self.host.is_some() && self.perf_factor.is_none() {
            return Err("host without perf_factor: a host's WAN rate cannot change".into());
        }
        Ok(())
    }
}

impl Plan {
    /// The `[launch]` table, or its defaults when the plan has none.
    pub fn launch_table(&self) -> Result<LaunchTable, toml::de::Error> {
        parse_or_default(self.launch.as_ref())
    }
}

impl ClusterPlan {
    /// The cluster's `launch` table, or its defaults when it has none.
    pub fn launch_settings(&self) -> Result<ClusterLaunch, toml::de::Error> {
        parse_or_default(self.launch.as_ref())
    }
}

/// The check at load of the clusters that let Slurm choose their hosts (`slurm_choose`):
/// only with `launcher = "slurm"`, and only when every CM of the cluster is a client. A CM
/// that is the server of a link (the cluster is the parent of another) must be on a host
/// named in the plan: the child's CM needs its name before any allocation exists. A
/// `[cluster.launch]` that does not parse is left to the commands that read it.
pub(super) fn check_slurm_choice(clusters: &[ClusterPlan]) -> Result<(), PlanError> {
    let settings: Vec<Option<ClusterLaunch>> =
        clusters.iter().map(|c| c.launch_settings().ok()).collect();
    for (cluster, launch) in clusters.iter().zip(&settings) {
        let Some(launch) = launch.as_ref().filter(|l| l.slurm_choose) else {
            continue;
        };
        let own = if cluster.main {
            Role::Master
        } else {
            Role::Submaster
        };
        let cm_host = [Role::Cm, own]
            .iter()
            .find_map(|role| cluster.machines.iter().find(|m| m.role == *role))
            .map_or("", |m| m.host.as_str());
        if launch.launcher != Launcher::Slurm {
            return Err(invalid_machine(
                &cluster.name,
                cm_host,
                "launch.slurm_choose",
                "only a cluster with launcher = \"slurm\" can let Slurm choose its hosts",
            ));
        }
        let children: Vec<&str> = clusters
            .iter()
            .zip(&settings)
            .filter(|(child, child_launch)| {
                let parent = child_launch.as_ref().and_then(|l| l.parent.as_deref());
                !child.main
                    && match parent {
                        Some(parent) => parent == cluster.name,
                        None => cluster.main,
                    }
            })
            .map(|(child, _)| child.name.as_str())
            .collect();
        if !children.is_empty() {
            return Err(invalid_machine(
                &cluster.name,
                cm_host,
                "launch.slurm_choose",
                format!(
                    "its CM on `{cm_host}` is the server of the link of cluster {}, whose CM \
                     needs the server's host name before any allocation exists: a server CM \
                     must be on a host the allocation names (remove slurm_choose to allocate \
                     exactly the plan's hosts)",
                    children.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn parse_or_default<T: Default + serde::de::DeserializeOwned>(
    table: Option<&toml::Table>,
) -> Result<T, toml::de::Error> {
    match table {
        Some(table) => toml::Value::Table(table.clone()).try_into(),
        None => Ok(T::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_and_defaults() {
        let table: toml::Table = toml::from_str("launcher = \"slurm\"\nwan_delay_ms = 5").unwrap();
        let l: ClusterLaunch = parse_or_default(Some(&table)).unwrap();
        assert_eq!(l.launcher, Launcher::Slurm);
        assert_eq!(l.wan_delay_ms, 5.0);
        assert!(l.emulate_rates);
        let none: ClusterLaunch = parse_or_default(None).unwrap();
        assert_eq!(none.launcher, Launcher::Local);
        let changes: toml::Table = toml::from_str(
            "[[changes]]\nat_s = 6\nperf_factor = 0.5\nhost = \"h1\"\n\
             [[changes]]\nat_s = 7\nwan_rate_factor = 0.2\n",
        )
        .unwrap();
        let l: ClusterLaunch = parse_or_default(Some(&changes)).unwrap();
        assert_eq!(l.changes.len(), 2);
        assert_eq!(l.changes[0].host.as_deref(), Some("h1"));
        assert!(l.changes.iter().all(|c| c.check().is_ok()));
        let nothing = RunChange {
            at_s: 1.0,
            host: None,
            perf_factor: None,
            wan_rate_factor: None,
        };
        assert!(nothing.check().unwrap_err().contains("nothing changes"));
        let zero = RunChange {
            perf_factor: Some(0.0),
            ..nothing.clone()
        };
        assert!(zero.check().unwrap_err().contains("perf_factor = 0"));
        let early = RunChange {
            at_s: -1.0,
            wan_rate_factor: Some(0.5),
            ..nothing
        };
        assert!(early.check().unwrap_err().contains("at_s = -1"));
        let threads: toml::Table = toml::from_str("launcher = \"threads\"").unwrap();
        let l: ClusterLaunch = parse_or_default(Some(&threads)).unwrap();
        assert!(l.launcher == Launcher::Threads && !l.launcher.uses_mpi());
        let bad: toml::Table = toml::from_str("launcher = \"pbs\"").unwrap();
        let err = parse_or_default::<ClusterLaunch>(Some(&bad)).unwrap_err();
        assert!(err.to_string().contains("pbs"), "{err}");
    }
}
