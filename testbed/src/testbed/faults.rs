//! Failing a host of a running testbed, as a real host fails: every process of it killed at
//! once (its cgroup and its network namespace: its ranks, its sshd, its Slurm and munge
//! daemons), optionally its run folder wiped with it, and brought back; or its LAN port cut
//! for a while.

use std::{fs, thread, time::Duration};

use anyhow::{bail, Context};

use super::{cpu::cgroups_of, instance::Instance, netns::netns_pids};
use crate::{state::HostNames, sys::ip_in};

fn host_of<'a>(hosts: &'a [HostNames], host: &str) -> anyhow::Result<&'a HostNames> {
    hosts
        .iter()
        .find(|h| h.host == host)
        .with_context(|| format!("no host `{host}`"))
}

/// Kills every process of `host` (SIGKILL, until none is left: a process forking as it dies
/// is caught on the next pass), and with `wipe` removes what its `/srv/hmw` holds. The
/// processes killed.
pub fn kill_host(inst: &Instance, host: &str, wipe: bool) -> anyhow::Result<usize> {
    let st = inst.state()?;
    let names = host_of(&st.hosts, host)?;
    let cg = cgroups_of(&st);
    let mut killed = 0;
    for _ in 0..100 {
        let mut pids = cg.procs(&names.cgroup);
        pids.extend(netns_pids(&names.netns));
        pids.sort_unstable();
        pids.dedup();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill has no memory preconditions; the pid is one of this host's.
            if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
        thread::sleep(Duration::from_millis(50));
    }
    let left = cg.procs(&names.cgroup).len() + netns_pids(&names.netns).len();
    if left > 0 {
        bail!("host `{host}`: {left} processes left after SIGKILL");
    }
    if wipe {
        let work = st.dir.join("hosts").join(host).join("work");
        for entry in fs::read_dir(&work).with_context(|| format!("{}", work.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                fs::remove_dir_all(&path)
            } else {
                fs::remove_file(&path)
            }
            .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(killed)
}

/// Starts again the daemons of a host killed by [`kill_host`] (sshd; munged and slurmd in a
/// Slurm cluster): it is a host again, with none of what ran on it.
pub fn revive_host(inst: &Instance, host: &str) -> anyhow::Result<()> {
    let _locked = inst.lock_state()?;
    let mut st = inst.state()?;
    crate::daemons::revive(&mut st, host)?;
    st.save()
}

/// Takes `host`'s LAN port down for `seconds`, then up again: its processes live on, cut
/// from every other host (the management port of an entry host stays up).
pub fn cut_lan(inst: &Instance, host: &str, seconds: f64) -> anyhow::Result<()> {
    let st = inst.state()?;
    let names = host_of(&st.hosts, host)?;
    let port = names
        .ports
        .iter()
        .find(|(_, what)| what.starts_with(&format!("{host} eth0")))
        .map(|(port, _)| port.clone())
        .with_context(|| format!("host `{host}` has no LAN port"))?;
    if !(seconds.is_finite() && seconds >= 0.0) {
        bail!("{seconds} s: expected seconds >= 0");
    }
    ip_in(&st.fabric_netns, &["link", "set", &port, "down"])?;
    thread::sleep(Duration::from_secs_f64(seconds));
    ip_in(&st.fabric_netns, &["link", "set", &port, "up"])?;
    Ok(())
}
