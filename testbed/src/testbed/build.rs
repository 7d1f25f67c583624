//! Building a testbed, each resource recorded before it is created: files, the fabric's
//! bridges, the router, each host's namespaces, cgroup, links and addresses, the daemons.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};

use super::{
    commands::{shell_quote, spawn_daemon},
    cpu::{apply_quota, TESTBED_WEIGHT},
    netns::netns_path,
};
use crate::cgroup::CpuCgroups;
use crate::layout::{router_dev, HostKind};
use crate::names;
use crate::state::{HostNames, Resource, State};
use crate::sys::{self, ip_in, run, run_s};

fn mkdir(path: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}

fn write_file(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn add_netns(st: &mut State, netns: &str) -> anyhow::Result<()> {
    st.record(Resource::NetNs {
        name: netns.to_string(),
    })?;
    run("ip", &["netns", "add", netns])?;
    ip_in(netns, &["link", "set", "lo", "up"])?;
    Ok(())
}

pub(super) fn build(
    st: &mut State,
    cg: &CpuCgroups,
    router_bin: Option<&Path>,
) -> anyhow::Result<()> {
    let name = st.name.clone();
    let dir = st.dir.clone();
    let layout = st.layout.clone();
    // SAFETY: umask has no preconditions; keys and configuration stay private.
    unsafe { libc::umask(0o022) };
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;

    // Files first: the hosts' mount namespaces bind some of them.
    for sub in ["ns", "hosts", "ssh", "router", "etc"] {
        mkdir(&dir.join(sub))?;
    }
    write_file(&dir.join("etc/hosts"), &layout.hosts_file(), 0o644)?;
    write_file(
        &dir.join("etc/hosts.launch"),
        &layout.launch_hosts_file(),
        0o644,
    )?;
    crate::daemons::write_ssh_files(st)?;
    crate::daemons::write_slurm_files(st)?;

    // The namespace files' folder: private propagation, as unshare requires.
    let nsdir = dir.join("ns");
    st.record(Resource::PrivateMount {
        path: nsdir.clone(),
    })?;
    let nsd = nsdir.to_string_lossy().to_string();
    run("mount", &["--bind", &nsd, &nsd])?;
    run("mount", &["--make-private", &nsd])?;

    // cgroups
    let top = st.cgroup.clone();
    for rel in [top.clone(), format!("{top}/hosts"), format!("{top}/router")] {
        st.record(Resource::Cgroup { rel: rel.clone() })?;
        cg.create(&rel)?;
    }
    // The quotas are ceilings; a heavy weight makes them floors too while the machine has the
    // cores (the workers' quotas leave 0.6 of the 2 cores to everything else).
    cg.set_weight(&top, TESTBED_WEIGHT)?;

    // The fabric: bridges.
    let fabric = st.fabric_netns.clone();
    add_netns(st, &fabric)?;
    let mut bridges = vec![(names::mgmt_bridge(&name), None)];
    for c in &layout.clusters {
        bridges.push((names::lan_bridge(&name, c.index), Some(c.index)));
    }
    for (br, _) in &bridges {
        st.record(Resource::Link {
            netns: fabric.clone(),
            dev: br.clone(),
        })?;
        ip_in(&fabric, &["link", "add", br, "type", "bridge"])?;
        ip_in(&fabric, &["link", "set", br, "up"])?;
    }

    // The router.
    let router = st.router_netns.clone();
    add_netns(st, &router)?;
    run(
        "nsenter",
        &[
            &format!("--net={}", netns_path(&router)),
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ],
    )?;
    for c in &layout.clusters {
        let port = names::router_port(&name, c.index);
        let dev = router_dev(c.index);
        st.record(Resource::Link {
            netns: fabric.clone(),
            dev: port.clone(),
        })?;
        ip_in(
            &fabric,
            &[
                "link", "add", &port, "type", "veth", "peer", "name", &dev, "netns", &router,
            ],
        )?;
        ip_in(
            &fabric,
            &[
                "link",
                "set",
                &port,
                "master",
                &names::lan_bridge(&name, c.index),
                "up",
            ],
        )?;
        ip_in(
            &router,
            &["addr", "add", &format!("{}/24", c.router_addr), "dev", &dev],
        )?;
        ip_in(&router, &["link", "set", &dev, "up"])?;
    }

    // The hosts.
    for (k, h) in layout.hosts.iter().enumerate() {
        let netns = names::host_netns(&name, &h.name);
        let hdir = dir.join("hosts").join(&h.name);
        mkdir(&hdir.join("work"))?;
        let cgroup = format!("{top}/hosts/{}", h.name);
        let mut names_ = HostNames {
            host: h.name.clone(),
            netns: netns.clone(),
            uts: nsdir.join(format!("{}.uts", h.name)),
            mnt: nsdir.join(format!("{}.mnt", h.name)),
            cgroup: cgroup.clone(),
            perf: h.perf,
            ports: Vec::new(),
        };
        add_netns(st, &netns)?;
        // UTS and mount namespaces bound to files.
        for f in [&names_.uts, &names_.mnt] {
            st.record(Resource::NsFile { path: f.clone() })?;
            fs::write(f, "")?;
        }
        let script = host_setup_script(st, h, &hdir, &nsdir);
        run_s(
            "nsenter",
            &[
                format!("--net={}", netns_path(&netns)),
                "unshare".into(),
                format!("--uts={}", names_.uts.display()),
                format!("--mount={}", names_.mnt.display()),
                "--propagation".into(),
                "private".into(),
                "/bin/sh".into(),
                "-ec".into(),
                script,
            ],
        )
        .with_context(|| format!("host `{}`: its namespaces", h.name))?;
        // Its cgroup and quota.
        st.record(Resource::Cgroup {
            rel: cgroup.clone(),
        })?;
        cg.create(&cgroup)?;
        apply_quota(cg, &cgroup, layout.cores_of(h.perf))?;
        // LAN
        if let (Some(ci), Some(addr)) = (h.cluster, h.lan_addr) {
            let c = &layout.clusters[ci];
            let port = names::lan_port(&name, k);
            names_
                .ports
                .push((port.clone(), format!("{} eth0 on {}", h.name, c.name)));
            st.record(Resource::Link {
                netns: fabric.clone(),
                dev: port.clone(),
            })?;
            ip_in(
                &fabric,
                &[
                    "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &netns,
                ],
            )?;
            ip_in(
                &fabric,
                &[
                    "link",
                    "set",
                    &port,
                    "master",
                    &names::lan_bridge(&name, c.index),
                    "up",
                ],
            )?;
            ip_in(
                &netns,
                &["addr", "add", &format!("{addr}/24"), "dev", "eth0"],
            )?;
            ip_in(&netns, &["link", "set", "eth0", "up"])?;
            for other in &layout.clusters {
                if other.index != c.index {
                    ip_in(
                        &netns,
                        &[
                            "route",
                            "add",
                            &other.subnet,
                            "via",
                            &c.router_addr.to_string(),
                        ],
                    )?;
                }
            }
            if layout.shape_lan {
                if let Some(rate) = c.lan_bytes_per_s {
                    for (ns, dev) in [(netns.as_str(), "eth0"), (fabric.as_str(), port.as_str())] {
                        st.record(Resource::Qdisc {
                            netns: ns.to_string(),
                            dev: dev.to_string(),
                        })?;
                        shape(ns, dev, rate)?;
                    }
                }
            }
        }
        // Management
        if let Some(addr) = h.mgmt_addr {
            let port = names::mgmt_port(&name, k);
            names_
                .ports
                .push((port.clone(), format!("{} mgmt0", h.name)));
            st.record(Resource::Link {
                netns: fabric.clone(),
                dev: port.clone(),
            })?;
            ip_in(
                &fabric,
                &[
                    "link", "add", &port, "type", "veth", "peer", "name", "mgmt0", "netns", &netns,
                ],
            )?;
            ip_in(
                &fabric,
                &[
                    "link",
                    "set",
                    &port,
                    "master",
                    &names::mgmt_bridge(&name),
                    "up",
                ],
            )?;
            if h.kind != HostKind::Launch {
                // Entry hosts talk to `launch` only, never to each other, over this LAN.
                run(
                    "bridge",
                    &["-n", &fabric, "link", "set", "dev", &port, "isolated", "on"],
                )?;
            }
            ip_in(
                &netns,
                &["addr", "add", &format!("{addr}/24"), "dev", "mgmt0"],
            )?;
            ip_in(&netns, &["link", "set", "mgmt0", "up"])?;
        }
        st.hosts.push(names_);
        st.save()?;
    }

    // Daemons: sshd everywhere, munge and Slurm where asked, the WAN emulator.
    crate::daemons::start_sshd(st, cg)?;
    crate::daemons::start_slurm(st)?;
    start_router(st, router_bin)?;
    crate::daemons::wait_sshd(st, None)?;
    crate::daemons::wait_slurm(st)?;
    Ok(())
}

/// tc tbf at `bytes_per_s` on a link's egress.
fn shape(netns: &str, dev: &str, bytes_per_s: f64) -> anyhow::Result<()> {
    let bits = (bytes_per_s * 8.0).round() as u64;
    // The bucket holds 10 ms at the rate (at least 32 KiB), beyond a timer tick's worth.
    let burst = ((bytes_per_s / 100.0) as u64).max(32 * 1024);
    run(
        "tc",
        &[
            "-n",
            netns,
            "qdisc",
            "replace",
            "dev",
            dev,
            "root",
            "tbf",
            "rate",
            &format!("{bits}bit"),
            "burst",
            &burst.to_string(),
            "latency",
            "50ms",
        ],
    )?;
    Ok(())
}

/// The script run inside a new UTS + mount namespace (and the host's network namespace).
fn host_setup_script(st: &State, h: &crate::layout::HostSpec, hdir: &Path, nsdir: &Path) -> String {
    let q = |p: &Path| shell_quote(&p.to_string_lossy());
    let dir = &st.dir;
    let mut s = String::new();
    s.push_str(&format!("hostname {}\n", shell_quote(&h.name)));
    // Drop the copies of the other namespaces' bindings: this namespace must not pin them.
    s.push_str(&format!("umount -l {} 2>/dev/null || true\n", q(nsdir)));
    s.push_str("umount -l /run/netns 2>/dev/null || true\n");
    s.push_str("mount -t tmpfs -o mode=755 hmw-run /run\n");
    s.push_str("mkdir -p /run/sshd /run/munge /run/slurm /run/slurmd\nchmod 755 /run/munge\n");
    // /tmp stays the machine's: binaries and checkouts may live there (CI clones under /tmp),
    // and a host must run them; what a host stages goes to its private /srv/hmw.
    s.push_str("mount -t tmpfs -o mode=755 hmw-srv /srv\nmkdir -p /srv/hmw\n");
    s.push_str(&format!(
        "mount --bind {} /srv/hmw\n",
        q(&hdir.join("work"))
    ));
    let hosts = if h.kind == HostKind::Launch {
        "etc/hosts.launch"
    } else {
        "etc/hosts"
    };
    s.push_str(&format!(
        "mount --bind {} /etc/hosts\n",
        q(&dir.join(hosts))
    ));
    s.push_str(&format!(
        "mount --bind {} /etc/hostname 2>/dev/null || true\n",
        q(&hdir.join("hostname"))
    ));
    let ssh_config = if h.kind == HostKind::Launch {
        "ssh/ssh_config"
    } else {
        "ssh/hosts_config"
    };
    s.push_str(&format!(
        "mount --bind {} /etc/ssh/ssh_config\n",
        q(&dir.join(ssh_config))
    ));
    if let Some(ci) = h.cluster {
        let c = &st.layout.clusters[ci];
        if c.launcher == "slurm" && h.kind == HostKind::Machine {
            s.push_str("mkdir -p /etc/slurm 2>/dev/null || true\n");
            s.push_str(&format!(
                "mount --bind {} /etc/slurm\n",
                q(&dir.join("slurm").join(&c.name))
            ));
        }
    }
    let _ = fs::write(hdir.join("hostname"), format!("{}\n", h.name));
    s
}

fn start_router(st: &mut State, router_bin: Option<&Path>) -> anyhow::Result<()> {
    if st.layout.clusters.len() < 2 {
        return Ok(());
    }
    let Some(bin) = router_bin else {
        eprintln!(
            "hmw-testbed: WARNING: hmw-wan-router not found (next to hmw-testbed or on PATH): \
             wan=unemulated, the router namespace forwards between clusters without delay, \
             rate limit, loss or outages"
        );
        return Ok(());
    };
    let rdir = st.dir.join("router");
    let config = rdir.join("router.toml");
    write_file(&config, &st.layout.router_config("wan0", 1), 0o644)?;
    let log = rdir.join("router.out");
    let argv: Vec<String> = vec![
        bin.to_string_lossy().into(),
        "--config".into(),
        config.to_string_lossy().into(),
        "--control".into(),
        st.control.to_string_lossy().into(),
        "--log".into(),
        rdir.join("router.log").to_string_lossy().into(),
    ];
    let pid = spawn_daemon(st, None, "router", &argv, &log)?;
    let ready = sys::wait_for(Duration::from_secs(20), || {
        fs::read_to_string(&log)
            .map(|t| t.lines().any(|l| l.trim() == "ready"))
            .unwrap_or(false)
            || sys::start_time(pid).is_none()
    });
    let text = fs::read_to_string(&log).unwrap_or_default();
    if !ready || !text.lines().any(|l| l.trim() == "ready") {
        bail!(
            "hmw-wan-router did not print `ready` within 20 s; its output ({}):\n{}",
            log.display(),
            text.lines()
                .rev()
                .take(20)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    Ok(())
}
