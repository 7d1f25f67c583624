//! The state file: what a testbed is and every resource it created, written *before* each
//! resource is created, so that `down` can remove everything from the file alone, also after a
//! crash. Every resource is named exactly (a namespace, a link in a namespace, a cgroup, a pid
//! with its start time, a mount point); nothing is ever removed by pattern.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::layout::Layout;

/// The state file's name inside the state dir.
pub const STATE_FILE: &str = "state.json";

/// One resource of a testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Resource {
    /// A folder the testbed created (removed with its contents).
    Dir {
        /// Its path.
        path: PathBuf,
    },
    /// A bind mount of a folder onto itself with private propagation (where the namespace
    /// files are bound).
    PrivateMount {
        /// The mount point.
        path: PathBuf,
    },
    /// A network namespace (`ip netns add`); its links and qdiscs go with it.
    NetNs {
        /// Its name under /run/netns.
        name: String,
    },
    /// A namespace (UTS or mount) bound to a file.
    NsFile {
        /// The file it is bound to.
        path: PathBuf,
    },
    /// A cgroup (relative to the CPU hierarchy's root).
    Cgroup {
        /// Its path relative to the hierarchy's root.
        rel: String,
    },
    /// A link (veth, bridge) in a network namespace.
    Link {
        /// The namespace.
        netns: String,
        /// Its name there.
        dev: String,
    },
    /// A root qdisc on a link.
    Qdisc {
        /// The namespace.
        netns: String,
        /// The link.
        dev: String,
    },
    /// A daemon the testbed started.
    Process {
        /// Its pid.
        pid: u32,
        /// Its start time (`/proc/PID/stat` field 22), to never signal a later process.
        start: u64,
        /// The host it runs on.
        host: String,
        /// What it is (`sshd`, `munged`, `slurmd`, `slurmctld`, `router`).
        what: String,
    },
}

/// The names of one host's namespaces and cgroup.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostNames {
    /// The host.
    pub host: String,
    /// Its network namespace (`ip netns` name).
    pub netns: String,
    /// Its UTS namespace's file.
    pub uts: PathBuf,
    /// Its mount namespace's file.
    pub mnt: PathBuf,
    /// Its cgroup, relative to the CPU hierarchy's root.
    pub cgroup: String,
    /// Its current `perf` (changed by `set-perf`).
    pub perf: Option<f64>,
    /// Short interface name (in the fabric namespace) -> what it is.
    pub ports: Vec<(String, String)>,
}

/// A testbed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct State {
    /// The instance's name (the prefix of everything it creates).
    pub name: String,
    /// Its state dir.
    pub dir: PathBuf,
    /// The plan it was made from.
    pub plan_path: PathBuf,
    /// A hash of the plan's text (a second `up` of the same plan is a no-op).
    pub plan_hash: String,
    /// The plan's testbed.
    pub layout: Layout,
    /// `v1` or `v2`.
    pub cgroup_version: String,
    /// The CPU hierarchy's root.
    pub cgroup_root: PathBuf,
    /// The testbed's own cgroup (relative).
    pub cgroup: String,
    /// The namespace holding the bridges (the LANs and the management LAN).
    pub fabric_netns: String,
    /// The router's namespace.
    pub router_netns: String,
    /// Each host's names.
    pub hosts: Vec<HostNames>,
    /// `emulated` (hmw-wan-router runs), `unemulated` (plain kernel forwarding) or `none` (one
    /// cluster: no WAN).
    pub wan: String,
    /// The emulator's control socket.
    pub control: PathBuf,
    /// `true` once `up` finished.
    pub complete: bool,
    /// Every resource, in the order created.
    pub resources: Vec<Resource>,
}

impl State {
    /// The state file's path.
    pub fn file(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// Writes the state file (atomically: a temporary file of this process's own renamed over
    /// it, so that two processes saving at once never write into the same file).
    pub fn save(&self) -> anyhow::Result<()> {
        let tmp = self
            .dir
            .join(format!("{STATE_FILE}.tmp.{}", std::process::id()));
        let text = serde_json::to_string_pretty(self)?;
        fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, self.file()).context("renaming the state file")?;
        Ok(())
    }

    /// Records a resource, then saves: call before creating it.
    pub fn record(&mut self, r: Resource) -> anyhow::Result<()> {
        if !self.resources.contains(&r) {
            self.resources.push(r);
        }
        self.save()
    }

    /// Reads a state file.
    pub fn load(dir: &Path) -> anyhow::Result<State> {
        let file = dir.join(STATE_FILE);
        let text =
            fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))
    }

    /// A host's names.
    pub fn host(&self, name: &str) -> Option<&HostNames> {
        self.hosts.iter().find(|h| h.host == name)
    }
}

/// Where instances are registered: `INDEX_DIR/NAME` is the state dir or a symbolic link to it.
pub const INDEX_DIR: &str = "/var/lib/hmw-testbed";

/// The default state dir of an instance.
pub fn default_state_dir(name: &str) -> PathBuf {
    Path::new(INDEX_DIR).join(name)
}

/// The registered instances (names).
pub fn instances() -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(INDEX_DIR)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join(STATE_FILE).exists())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_round_trip() {
        let r = vec![
            Resource::NetNs {
                name: "hmwtb-a-fabric".into(),
            },
            Resource::Process {
                pid: 7,
                start: 9,
                host: "h".into(),
                what: "sshd".into(),
            },
        ];
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"kind\":\"net_ns\""), "{text}");
        let back: Vec<Resource> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
