//! A cluster on its own hosts started again after its job died: the hosts that still answer
//! found (through its head, or each directly when the head is lost), what its dead job left on
//! them stopped, its files written again for its machine file less the lost hosts and sent,
//! its run script started again; the main cluster's head gets the journal as it is here.

use std::{path::Path, process::Command};

use anyhow::{bail, Context as _, Result};

use super::{
    cluster::RemoteCluster,
    deployment::{stage_all, write_state, Deployment},
    ssh::{sh_quote, SshTarget},
};
use crate::restart::{ClusterStarter, Prober};
use hmw_model::plan::launch::ClusterLaunch;

/// Seconds a host has to answer the launcher's probe.
const PROBE_S: u32 = 8;

/// The hosts among `hosts` of cluster `remote` that do not answer: each probed from the head
/// by a TCP connection to its ssh port within [`PROBE_S`] (the kernel answers it: a host whose
/// CPU is all taken by its work still does, where an ssh login there may not in time); when
/// the head does not answer, it is lost too and each other host is tried on its own with ssh
/// (through the cluster's jump host, when it has one).
fn probe(remote: &RemoteCluster, launch: &ClusterLaunch, hosts: &[String]) -> Vec<String> {
    let others: Vec<&String> = hosts.iter().filter(|h| **h != remote.head_host).collect();
    let port = launch.ssh_port.unwrap_or(22);
    let mut script = String::new();
    for host in &others {
        let connect = format!(": </dev/tcp/{host}/{port}");
        script.push_str(&format!(
            "( timeout {PROBE_S} bash -c {} >/dev/null 2>&1 || echo {} ) &\n",
            sh_quote(&connect),
            sh_quote(host)
        ));
    }
    script.push_str("wait\n");
    match remote
        .head
        .run("sh -s", script.as_bytes(), "probe the hosts")
    {
        Ok(silent) => silent.lines().map(str::to_owned).collect(),
        Err(_) => std::iter::once(remote.head_host.clone())
            .chain(
                others
                    .into_iter()
                    .filter(|host| {
                        SshTarget::host_of(launch, host)
                            .run("true", b"", "probe a host")
                            .is_err()
                    })
                    .cloned(),
            )
            .collect(),
    }
}

impl Deployment {
    /// Copies the main master's journal back into `local` as it grows, from byte `from` on:
    /// it outlives the main cluster's hosts. Started again with the main cluster.
    pub(crate) fn follow_journal(&mut self, local: &Path, from: u64) -> Result<()> {
        let main = self.clusters.first().context("no cluster")?;
        self.follower = Some(main.follow_journal(local, from)?);
        self.journal = Some(local.to_owned());
        Ok(())
    }
}

impl ClusterStarter for Deployment {
    fn command(&mut self, index: usize, machine_file: &str, resume: bool) -> Result<Command> {
        if let Some(first) = self.first[index].take() {
            return Ok(first);
        }
        let name = self.clusters[index].name.clone();
        if self.allocated[index] {
            bail!(
                "cluster {name} let Slurm choose its nodes before the run ([cluster.launch] \
                 slurm_choose): it is not started again within the run"
            );
        }
        let launch = self.settings[index].clone();
        let hosts = RemoteCluster::hosts_of(machine_file);
        let remote = &mut self.clusters[index];
        // What the dead job left on the hosts that answer: stopped (its folder kept).
        remote.hosts.retain(|h| hosts.contains(h));
        if !hosts.contains(&remote.head_host) {
            remote.head_host = hosts.first().context("no host left")?.clone();
            remote.head = SshTarget::head_of(&launch, &remote.head_host);
        }
        remote
            .clean(true, None)
            .with_context(|| format!("cannot stop what cluster {name}'s job left"))?;
        remote.hosts = hosts;
        let remote = remote.clone();
        write_state(&self.state_file, &self.plan_name, &self.clusters)?;
        let journal = match (&self.journal, resume && index == 0) {
            (Some(local), true) => Some(local.clone()),
            _ => None,
        };
        let from = journal
            .as_deref()
            .map(crate::launch::cut_torn_tail)
            .transpose()?;
        let written = self.stager.write(
            index == 0,
            &remote,
            &launch,
            machine_file,
            None,
            journal.as_deref(),
        )?;
        stage_all(
            written
                .iter()
                .map(|(host, dir)| (&remote, host.as_str(), dir.as_path())),
            self.stager.stage_root(),
        )?;
        if let (Some(local), Some(from)) = (&journal, from) {
            if let Some(old) = &mut self.follower {
                old.kill();
            }
            self.follower = Some(remote.follow_journal(local, from)?);
        }
        Ok(remote.run_command())
    }

    fn unreachable(&self, index: usize, hosts: &[String]) -> Vec<String> {
        probe(&self.clusters[index], &self.settings[index], hosts)
    }

    fn prober(&self, index: usize) -> Option<Prober> {
        let (remote, launch) = (self.clusters[index].clone(), self.settings[index].clone());
        Some(Box::new(move |hosts: &[String]| {
            probe(&remote, &launch, hosts)
        }))
    }

    fn remote(&self) -> bool {
        true
    }

    fn finish(&mut self, work: &Path) -> Option<Result<()>> {
        Some(Deployment::finish(self, work))
    }
}
