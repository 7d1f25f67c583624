//! The daemons of the emulated hosts: one OpenSSH server per host, and for a Slurm cluster one
//! munged per host (all with the testbed's one key, each on its host's private `/run/munge`
//! socket), slurmctld on the head and slurmd on every machine.
//!
//! Every daemon runs in the foreground (`-D`, `-F`) as a detached child started in its host's
//! namespaces and cgroup, so its pid is recorded and everything it starts (an ssh session, a
//! Slurm job step) inherits the host's cgroup.

use std::fs;
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::cgroup::CpuCgroups;
use crate::layout::HostKind;
use crate::state::State;
use crate::sys::{self, run};
use crate::testbed::commands::{exec_output, spawn_daemon};

fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    Ok(())
}

fn keygen(path: &Path, comment: &str) -> anyhow::Result<String> {
    let p = path.to_string_lossy();
    run(
        "ssh-keygen",
        &["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", &p],
    )?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    let public = fs::read_to_string(format!("{p}.pub"))?;
    Ok(public.trim().to_string())
}

/// The client key, every host's host key, `known_hosts`, `authorized_keys`, the sshd
/// configurations, and two client configurations: `ssh/ssh_config` for the launching machine
/// (entry hosts by their management address, the others through `ProxyJump`) and
/// `ssh/hosts_config` for inside the hosts (bound on their `/etc/ssh/ssh_config`).
pub fn write_ssh_files(st: &State) -> anyhow::Result<()> {
    let dir = &st.dir;
    let ssh = dir.join("ssh");
    fs::set_permissions(&ssh, fs::Permissions::from_mode(0o700))?;
    let client_pub = keygen(
        &ssh.join("id_ed25519"),
        &format!("root@hmw-testbed-{}", st.name),
    )?;
    write_private(&ssh.join("authorized_keys"), &format!("{client_pub}\n"))?;
    let mut known = String::new();
    let common = format!(
        "Host *\n  User root\n  IdentityFile {id}\n  IdentitiesOnly yes\n  UserKnownHostsFile {kh}\n  \
         GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  CheckHostIP no\n  \
         BatchMode yes\n  ConnectTimeout 15\n  ServerAliveInterval 5\n  ServerAliveCountMax 6\n  LogLevel ERROR\n",
        id = ssh.join("id_ed25519").display(),
        kh = ssh.join("known_hosts").display()
    );
    let mut launch_cfg =
        String::from("# hmw-testbed: ssh -F THIS_FILE HOST, from the launch host\n");
    let mut hosts_cfg = String::from("# hmw-testbed: the client configuration inside the hosts\n");
    for h in st.layout.hosts.iter().filter(|h| h.sshd) {
        let hdir = dir.join("hosts").join(&h.name);
        fs::create_dir_all(&hdir)?;
        let key = hdir.join("ssh_host_ed25519_key");
        let public = keygen(&key, &h.name)?;
        let mut aliases = vec![h.name.clone()];
        aliases.extend(h.lan_addr.map(|a| a.to_string()));
        aliases.extend(h.mgmt_addr.map(|a| a.to_string()));
        let key_part: Vec<&str> = public.split_whitespace().take(2).collect();
        known.push_str(&format!("{} {}\n", aliases.join(","), key_part.join(" ")));
        let mut listen = String::new();
        for a in [h.lan_addr, h.mgmt_addr].into_iter().flatten() {
            listen.push_str(&format!("ListenAddress {a}\n"));
        }
        let sshd_config = format!(
            "# hmw-testbed: the sshd of {host}\nPort 22\n{listen}HostKey {key}\nPidFile {pid}\n\
             AuthorizedKeysFile {ak}\nPermitRootLogin prohibit-password\nPubkeyAuthentication yes\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes yes\n\
             X11Forwarding no\nAllowTcpForwarding yes\nPermitTunnel no\nPrintMotd no\n\
             AcceptEnv LANG LC_* OMPI_* HMW_*\nMaxStartups 100:30:200\nMaxSessions 64\n\
             Subsystem sftp internal-sftp\n",
            host = h.name,
            key = key.display(),
            pid = hdir.join("sshd.pid").display(),
            ak = ssh.join("authorized_keys").display()
        );
        write_private(&hdir.join("sshd_config"), &sshd_config)?;
        // From the launching machine.
        let entry = h.cluster.map(|c| {
            let c = &st.layout.clusters[c];
            c.gateway.clone().unwrap_or_else(|| c.head.clone())
        });
        match (h.mgmt_addr, h.lan_addr, entry) {
            (Some(m), _, _) => launch_cfg.push_str(&format!("Host {}\n  HostName {m}\n", h.name)),
            (None, Some(l), Some(e)) => launch_cfg.push_str(&format!(
                "Host {}\n  HostName {l}\n  ProxyJump {e}\n",
                h.name
            )),
            _ => {}
        }
        if let Some(l) = h.lan_addr {
            hosts_cfg.push_str(&format!("Host {}\n  HostName {l}\n", h.name));
        }
    }
    write_private(&ssh.join("known_hosts"), &known)?;
    launch_cfg.push_str(&common);
    hosts_cfg.push_str(&common);
    fs::write(ssh.join("ssh_config"), launch_cfg)?;
    fs::write(ssh.join("hosts_config"), hosts_cfg)?;
    for f in ["ssh_config", "hosts_config"] {
        fs::set_permissions(ssh.join(f), fs::Permissions::from_mode(0o644))?;
    }
    Ok(())
}

/// Starts one sshd per host.
pub fn start_sshd(st: &mut State, _cg: &CpuCgroups) -> anyhow::Result<()> {
    let hosts: Vec<String> = st
        .layout
        .hosts
        .iter()
        .filter(|h| h.sshd)
        .map(|h| h.name.clone())
        .collect();
    for h in hosts {
        start_sshd_on(st, &h)?;
    }
    Ok(())
}

/// Starts `host`'s sshd.
fn start_sshd_on(st: &mut State, host: &str) -> anyhow::Result<()> {
    let hdir = st.dir.join("hosts").join(host);
    let argv = vec![
        "/usr/sbin/sshd".to_string(),
        "-D".into(),
        "-e".into(),
        "-f".into(),
        hdir.join("sshd_config").to_string_lossy().into(),
    ];
    spawn_daemon(st, Some(host), "sshd", &argv, &hdir.join("sshd.log"))?;
    Ok(())
}

/// Starts `host`'s munged with the testbed's key, and waits for its socket (10 s at most).
fn start_munged(st: &mut State, host: &str) -> anyhow::Result<()> {
    let key = st.dir.join("munge/munge.key").to_string_lossy().to_string();
    let hdir = st.dir.join("hosts").join(host);
    let argv: Vec<String> = vec![
        "/usr/sbin/munged".into(),
        "-F".into(),
        "--force".into(),
        format!("--key-file={key}"),
        format!("--log-file={}", hdir.join("munged.log").display()),
        format!("--seed-file={}", hdir.join("munged.seed").display()),
        "--pid-file=/run/munge/munged.pid".into(),
        "--num-threads=2".into(),
    ];
    let pid = spawn_daemon(st, Some(host), "munged", &argv, &hdir.join("munged.out"))?;
    let socket = format!("/proc/{pid}/root/run/munge/munge.socket.2");
    if !sys::wait_for(Duration::from_secs(10), || Path::new(&socket).exists()) {
        let log = fs::read_to_string(hdir.join("munged.out")).unwrap_or_default();
        bail!("munged on `{host}` has no socket after 10 s: {log}");
    }
    Ok(())
}

/// Runs `f` inside the network namespace `netns`, then comes back.
pub fn in_netns<T>(netns: &str, f: impl FnOnce() -> T) -> anyhow::Result<T> {
    let own = fs::File::open("/proc/self/ns/net")?;
    let target = fs::File::open(format!("/run/netns/{netns}"))
        .with_context(|| format!("no network namespace {netns}"))?;
    // SAFETY: setns on open namespace files; this program is single-threaded when it calls it.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!("setns into {netns}: {}", std::io::Error::last_os_error());
    }
    let out = f();
    // SAFETY: as above, back to where it was.
    if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!("setns back: {}", std::io::Error::last_os_error());
    }
    Ok(out)
}

/// Waits until every sshd (or only `only`'s) accepts connections (20 s at most each).
pub fn wait_sshd(st: &State, only: Option<&str>) -> anyhow::Result<()> {
    for h in st
        .layout
        .hosts
        .iter()
        .filter(|h| h.sshd && only.is_none_or(|o| o == h.name))
    {
        let names = st.host(&h.name).context("host names")?;
        let addr: Ipv4Addr = h.lan_addr.or(h.mgmt_addr).context("an address")?;
        let ok = sys::wait_for(Duration::from_secs(20), || {
            in_netns(&names.netns, || {
                TcpStream::connect_timeout(
                    &SocketAddrV4::new(addr, 22).into(),
                    Duration::from_millis(300),
                )
                .is_ok()
            })
            .unwrap_or(false)
        });
        if !ok {
            let log = fs::read_to_string(st.dir.join("hosts").join(&h.name).join("sshd.log"))
                .unwrap_or_default();
            bail!(
                "the sshd of `{}` does not listen on {addr}:22 after 20 s; its log:\n{log}",
                h.name
            );
        }
    }
    Ok(())
}

/// The Slurm configuration of each Slurm cluster (`slurm/CLUSTER/slurm.conf`, bound on its
/// hosts' `/etc/slurm`) and the testbed's munge key (`munge/munge.key`).
pub fn write_slurm_files(st: &State) -> anyhow::Result<()> {
    let slurm: Vec<_> = st
        .layout
        .clusters
        .iter()
        .filter(|c| c.launcher == "slurm")
        .collect();
    if slurm.is_empty() {
        return Ok(());
    }
    let mdir = st.dir.join("munge");
    fs::create_dir_all(&mdir)?;
    fs::set_permissions(&mdir, fs::Permissions::from_mode(0o700))?;
    let mut key = vec![0u8; 1024];
    use std::io::Read;
    fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    let kpath = mdir.join("munge.key");
    fs::write(&kpath, &key)?;
    fs::set_permissions(&kpath, fs::Permissions::from_mode(0o400))?;
    for c in slurm {
        let cdir = st.dir.join("slurm").join(&c.name);
        fs::create_dir_all(cdir.join("ctld"))?;
        fs::create_dir_all(cdir.join("log"))?;
        let head = st.layout.host(&c.head).context("head")?;
        let mut conf = format!(
            "# hmw-testbed {name}: Slurm cluster `{cluster}` (generated at up)\n\
             ClusterName=tb{name}{idx}\nSlurmctldHost={head}({head_addr})\nSlurmctldPort=6817\nSlurmdPort=6818\n\
             SlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\nCryptoType=crypto/munge\nMpiDefault=none\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
             SchedulerType=sched/backfill\nReturnToService=2\nSlurmdTimeout=60\nInactiveLimit=0\nKillWait=5\n\
             MinJobAge=30\nMailProg=/bin/true\nStateSaveLocation={ctld}\nSlurmdSpoolDir=/run/slurmd\n\
             SlurmctldPidFile=/run/slurm/slurmctld.pid\nSlurmdPidFile=/run/slurm/slurmd.pid\n\
             SlurmctldLogFile={log}/slurmctld.log\nSlurmdLogFile={log}/slurmd-%n.log\n",
            name = st.name,
            cluster = c.name,
            idx = c.index,
            head = head.name,
            head_addr = head.lan_addr.context("head address")?,
            ctld = cdir.join("ctld").display(),
            log = cdir.join("log").display(),
        );
        let nodes: Vec<_> = st
            .layout
            .hosts_of(c.index - 1)
            .filter(|h| h.kind == HostKind::Machine)
            .collect();
        for h in &nodes {
            conf.push_str(&format!(
                "NodeName={} NodeAddr={} CPUs=1 State=UNKNOWN\n",
                h.name,
                h.lan_addr.context("address")?
            ));
        }
        conf.push_str("PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n");
        fs::write(cdir.join("slurm.conf"), conf)?;
    }
    Ok(())
}

/// Starts munged on every host of each Slurm cluster, then slurmctld on its head and slurmd on
/// every machine.
pub fn start_slurm(st: &mut State) -> anyhow::Result<()> {
    let clusters: Vec<(String, usize, String)> = st
        .layout
        .clusters
        .iter()
        .filter(|c| c.launcher == "slurm")
        .map(|c| (c.name.clone(), c.index, c.head.clone()))
        .collect();
    for (_cluster, index, head) in clusters {
        let hosts: Vec<String> = st
            .layout
            .hosts_of(index - 1)
            .filter(|h| h.kind == HostKind::Machine)
            .map(|h| h.name.clone())
            .collect();
        for h in &hosts {
            start_munged(st, h)?;
        }
        let hosts_dir = st.dir.join("hosts");
        let cdir_log = |h: &str| hosts_dir.join(h);
        let ctld_log = cdir_log(&head).join("slurmctld.out");
        spawn_daemon(
            st,
            Some(&head),
            "slurmctld",
            &["/usr/sbin/slurmctld".into(), "-D".into(), "-c".into()],
            &ctld_log,
        )?;
        for h in &hosts {
            let log = cdir_log(h).join("slurmd.out");
            spawn_daemon(
                st,
                Some(h),
                "slurmd",
                &[
                    "/usr/sbin/slurmd".into(),
                    "-D".into(),
                    "-N".into(),
                    h.clone(),
                ],
                &log,
            )?;
        }
    }
    Ok(())
}

/// Starts again the daemons of a host whose processes were all killed (`kill-host`): its
/// sshd, and in a Slurm cluster its munged, its slurmd (slurmctld too on the head), the node
/// then returned to service (`scontrol update state=resume`: its controller had set it down).
pub fn revive(st: &mut State, host: &str) -> anyhow::Result<()> {
    let h = st
        .layout
        .hosts
        .iter()
        .find(|h| h.name == host)
        .with_context(|| format!("no host `{host}`"))?
        .clone();
    let hdir = st.dir.join("hosts").join(host);
    if h.sshd {
        start_sshd_on(st, host)?;
    }
    let slurm = h
        .cluster
        .map(|c| st.layout.clusters[c].clone())
        .filter(|c| c.launcher == "slurm" && h.kind == HostKind::Machine);
    if let Some(cluster) = slurm {
        start_munged(st, host)?;
        if cluster.head == host {
            spawn_daemon(
                st,
                Some(host),
                "slurmctld",
                &["/usr/sbin/slurmctld".into(), "-D".into()],
                &hdir.join("slurmctld.out"),
            )?;
        }
        spawn_daemon(
            st,
            Some(host),
            "slurmd",
            &[
                "/usr/sbin/slurmd".into(),
                "-D".into(),
                "-N".into(),
                host.into(),
            ],
            &hdir.join("slurmd.out"),
        )?;
        let head = cluster.head.clone();
        let resumed = sys::wait_for(Duration::from_secs(30), || {
            exec_output(
                st,
                &head,
                &[
                    "scontrol",
                    "update",
                    &format!("nodename={host}"),
                    "state=resume",
                ],
            )
            .is_ok_and(|o| {
                o.status.success()
                    || String::from_utf8_lossy(&o.stderr).contains("Invalid node state")
            })
        });
        if !resumed {
            bail!("Slurm on `{head}` does not take node `{host}` back");
        }
    }
    if h.sshd {
        wait_sshd(st, Some(host))?;
    }
    Ok(())
}

/// Waits until every Slurm cluster's nodes are idle (60 s at most).
pub fn wait_slurm(st: &State) -> anyhow::Result<()> {
    for c in st.layout.clusters.iter().filter(|c| c.launcher == "slurm") {
        let n = st
            .layout
            .hosts_of(c.index - 1)
            .filter(|h| h.kind == HostKind::Machine)
            .count();
        let mut last = String::new();
        let ok = sys::wait_for(Duration::from_secs(60), || {
            match exec_output(st, &c.head, &["sinfo", "-h", "-N", "-o", "%N %t"]) {
                Ok(o) => {
                    last = String::from_utf8_lossy(&o.stdout).to_string()
                        + &String::from_utf8_lossy(&o.stderr);
                    last.lines().filter(|l| l.ends_with(" idle")).count() >= n
                }
                Err(_) => false,
            }
        });
        if !ok {
            bail!(
                "Slurm cluster `{}`: its {n} nodes are not idle after 60 s; sinfo says:\n{last}",
                c.name
            );
        }
    }
    Ok(())
}
