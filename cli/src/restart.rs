//! A cluster whose job died, started again by `hmw launch` without the hosts that stopped
//! answering: its machine file less those hosts, the main cluster's master resuming from its
//! journal.
//!
//! A host lost takes its worker lines with it. Its master's or sub-master's line, and its CM
//! lines, move to the first host left (the first line stays the cluster's master): a CM that
//! is a link's client only reaches out, so it may run anywhere; a server CM (`# M 1 ...`),
//! whose address and certificate the far cluster knows, may not, and such a loss is said and
//! not restarted.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

use crate::{
    cluster_command::{cluster_command, ClusterFiles},
    launch_record::{LaunchRecord, JOURNAL},
    layout::ClusterLayout,
    remote::RemoteCluster,
};

/// How the launcher starts a cluster's job: the first time and again.
pub(crate) trait ClusterStarter {
    /// The command that starts cluster `index` (the main cluster is 0) with `machine_file`;
    /// the main cluster's master resumes from its journal when `resume`.
    fn command(&mut self, index: usize, machine_file: &str, resume: bool) -> Result<Command>;

    /// The hosts among `hosts` that do not answer now (none, on this machine, where hosts are
    /// names only).
    fn unreachable(&self, index: usize, hosts: &[String]) -> Vec<String>;

    /// A probe of cluster `index`'s hosts that another thread may run: the hosts among those
    /// given that do not answer. `None` where hosts cannot be lost (on this machine).
    fn prober(&self, index: usize) -> Option<Prober> {
        let _ = index;
        None
    }

    /// Whether the clusters run on their own hosts (each command an ssh to its head).
    fn remote(&self) -> bool {
        false
    }

    /// After the run: what is left on the hosts cleaned (for clusters on their own hosts).
    fn finish(&mut self, work: &Path) -> Option<Result<()>> {
        let _ = work;
        None
    }
}

/// A probe of a cluster's hosts: those among the given ones that do not answer.
pub(crate) type Prober = Box<dyn Fn(&[String]) -> Vec<String> + Send + Sync>;

/// The launcher's watch over one cluster's hosts: a probe every `timeout / 3` in a thread of
/// its own; a host that has not answered for `timeout` is taken for lost (its cluster's job is
/// then stopped and started again without it). A host hung, or cut from its LAN, is found so,
/// where its dead job would not say it.
pub(crate) struct HostWatch {
    prober: Arc<Prober>,
    timeout: Duration,
    /// When each host last answered.
    answered: Vec<(String, Instant)>,
    probing: Option<thread::JoinHandle<Vec<String>>>,
    next: Instant,
}

impl HostWatch {
    /// A watch over `hosts` with `prober`, a host lost after `timeout` without an answer.
    pub(crate) fn new(prober: Prober, hosts: &[String], timeout: Duration) -> Self {
        let now = Instant::now();
        HostWatch {
            prober: Arc::new(prober),
            timeout,
            answered: hosts.iter().map(|h| (h.clone(), now)).collect(),
            probing: None,
            next: now + timeout / 3,
        }
    }

    /// Called often: starts a probe when one is due, takes in one that finished; the hosts
    /// silent for the timeout, if any.
    pub(crate) fn lost(&mut self) -> Vec<String> {
        let now = Instant::now();
        if self.probing.as_ref().is_some_and(|p| p.is_finished()) {
            let silent = self
                .probing
                .take()
                .and_then(|p| p.join().ok())
                .unwrap_or_default();
            for (host, answered) in &mut self.answered {
                if !silent.contains(host) {
                    *answered = now;
                }
            }
        }
        if self.probing.is_none() && now >= self.next {
            self.next = now + self.timeout / 3;
            let hosts: Vec<String> = self.answered.iter().map(|(h, _)| h.clone()).collect();
            let prober = self.prober.clone();
            self.probing = Some(thread::spawn(move || prober(&hosts)));
        }
        self.answered
            .iter()
            .filter(|(_, answered)| now.duration_since(*answered) >= self.timeout)
            .map(|(host, _)| host.clone())
            .collect()
    }
}

/// Every cluster on this machine, each its own `mpirun` (or process, for a cluster of
/// threads): its files in the work folder.
pub(crate) struct LocalStarter<'a> {
    /// The clusters as laid out, the main one first.
    pub(crate) clusters: &'a [ClusterLayout],
    pub(crate) work: &'a Path,
    pub(crate) binary: &'a Path,
    pub(crate) config: &'a Path,
    pub(crate) record: &'a LaunchRecord,
    /// Commands for a real deployment (`--print`): each `mpirun` places its ranks by the
    /// machine file.
    pub(crate) print: bool,
}

impl LocalStarter<'_> {
    /// Where cluster `index`'s statistics land.
    pub(crate) fn stats(&self, index: usize) -> PathBuf {
        self.work
            .join(format!("{}.stats.json", self.clusters[index].name))
    }
}

impl ClusterStarter for LocalStarter<'_> {
    fn command(&mut self, index: usize, machine_file: &str, resume: bool) -> Result<Command> {
        let cluster = ClusterLayout {
            machine_file: machine_file.to_owned(),
            ranks: RemoteCluster::hostfile(machine_file).lines().count(),
            ..self.clusters[index].clone()
        };
        let hosts = self.work.join(format!("{}.hosts", cluster.name));
        fs::write(&hosts, machine_file)
            .with_context(|| format!("cannot write {}", hosts.display()))?;
        let stats = self.stats(index);
        let files = ClusterFiles {
            hosts: &hosts,
            config: self.config,
            stats: &stats,
        };
        let mut command = cluster_command(&cluster, self.binary, &files, self.print);
        if !self.print {
            command
                .arg("--live-json")
                .arg(crate::watch::feed_path(self.work, &cluster.name));
        }
        if index == 0 {
            let journal = self.work.join(JOURNAL);
            command.args(self.record.journal_args(&journal.to_string_lossy(), resume));
        }
        Ok(command)
    }

    fn unreachable(&self, _index: usize, _hosts: &[String]) -> Vec<String> {
        Vec::new()
    }
}

/// `machine_file` less the hosts `lost`: their worker lines removed, their first line and
/// CM lines moved to the first host left. An error when no worker would be left, or a server
/// CM would move.
pub(crate) fn without_hosts(machine_file: &str, lost: &[String]) -> Result<String> {
    let is_lost = |host: &str| lost.iter().any(|l| l == host);
    let Some(new_home) = RemoteCluster::hosts_of(machine_file)
        .into_iter()
        .find(|host| !is_lost(host))
    else {
        bail!("every host of the cluster is lost");
    };
    let mut out = String::new();
    let mut workers = 0;
    let mut ranks = 0;
    for line in machine_file.lines() {
        let (host, rest) = line.split_once('#').unwrap_or((line, ""));
        let (host, rest) = (host.trim(), rest.trim());
        if host.is_empty() {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let first = ranks == 0;
        ranks += 1;
        let cm = rest.starts_with("M ") || rest.starts_with("S ");
        if !first && !cm {
            if !is_lost(host) {
                workers += 1;
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        if !is_lost(host) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let server = rest.split_whitespace().nth(1) == Some("1");
        if cm && server {
            bail!(
                "host {host} ran a server CM ({rest}): its address and certificate are the far \
                 cluster's to reach it, so it cannot move to another host"
            );
        }
        out.push_str(&format!("{new_home} # {rest}\n"));
    }
    if workers == 0 {
        bail!("no worker host would be left");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPAIN: &str = "# cluster spain\nspain-head # cluster=spain\nspain-1 # speed=1\n\
                         spain-2 # speed=1\nspain-cm # S 0 7000 lyon-cm name=a peer=b\n";

    #[test]
    fn a_worker_host_lost_takes_its_lines() {
        let left = without_hosts(SPAIN, &["spain-1".into()]).unwrap();
        assert_eq!(
            left,
            "# cluster spain\nspain-head # cluster=spain\nspain-2 # speed=1\n\
             spain-cm # S 0 7000 lyon-cm name=a peer=b\n"
        );
    }

    #[test]
    fn the_master_and_a_client_cm_move_to_the_first_host_left() {
        let left = without_hosts(SPAIN, &["spain-head".into(), "spain-cm".into()]).unwrap();
        assert_eq!(
            left,
            "# cluster spain\nspain-1 # cluster=spain\nspain-1 # speed=1\nspain-2 # speed=1\n\
             spain-1 # S 0 7000 lyon-cm name=a peer=b\n"
        );
        assert_eq!(RemoteCluster::hosts_of(&left), ["spain-1", "spain-2"]);
    }

    #[test]
    fn a_server_cm_or_the_last_worker_cannot_be_lost() {
        let lyon = "lyon-head\nlyon-1\nlyon-cm # M 1 7000 name=a\n";
        let error = without_hosts(lyon, &["lyon-cm".into()]).unwrap_err();
        assert!(error.to_string().contains("server CM"), "{error}");
        let error = without_hosts(lyon, &["lyon-1".into()]).unwrap_err();
        assert!(error.to_string().contains("no worker"), "{error}");
    }
}
