//! Bringing a testbed up and down, running commands on its hosts, changing its conditions.
//!
//! Topology (see `docs/architecture.md`, "The testbed"):
//! - a **fabric** namespace holds the bridges: one per cluster (its LAN) and the management
//!   bridge; nothing of the testbed lives in the machine's own network namespace;
//! - each **host** has a network namespace (a veth `eth0` on its cluster's bridge; the entry
//!   hosts also `mgmt0` on the management bridge), a UTS namespace (its host name) and a mount
//!   namespace (private `/run` and `/srv/hmw`; the testbed's hosts file on `/etc/hosts`,
//!   its ssh client configuration on `/etc/ssh/ssh_config`, a Slurm cluster's configuration on
//!   `/etc/slurm`), bound to files in the state dir;
//! - the **router** namespace has one port on every cluster's bridge (`.254`) and runs
//!   `hmw-wan-router`; every host routes the other clusters' subnets through it;
//! - the **launch** host (the user's machine) is only on the management bridge, whose other
//!   ports are isolated: it reaches every entry host, the entry hosts cannot reach each other
//!   that way, so an emulated outage cuts clusters from each other, not from the user.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};

use crate::cgroup::CpuCgroups;
use crate::layout::{router_dev, HostKind, Layout, LAUNCH};
use crate::names;
use crate::state::{self, HostNames, Resource, State};
use crate::sys::{self, ip_in, run, run_quiet, run_s};

/// Where a testbed is: its name and state dir.
#[derive(Debug, Clone)]
pub struct Instance {
    /// The instance name.
    pub name: String,
    /// Its state dir.
    pub dir: PathBuf,
}

impl Instance {
    /// Finds an existing instance: by `name`, by `dir`, or the only one registered.
    pub fn find(name: Option<&str>, dir: Option<&Path>) -> anyhow::Result<Instance> {
        if let Some(dir) = dir {
            let st = State::load(dir)?;
            return Ok(Instance {
                name: st.name,
                dir: dir.to_path_buf(),
            });
        }
        let name = match name {
            Some(n) => n.to_string(),
            None => {
                let all = state::instances();
                match all.as_slice() {
                    [one] => one.clone(),
                    [] => bail!("no testbed is up (nothing under {})", state::INDEX_DIR),
                    many => bail!(
                        "several testbeds are up ({}): name one with --name",
                        many.join(", ")
                    ),
                }
            }
        };
        let dir = state::default_state_dir(&name);
        let dir = fs::canonicalize(&dir).unwrap_or(dir);
        if !dir.join(state::STATE_FILE).exists() {
            bail!(
                "no testbed named `{name}` (no {})",
                dir.join(state::STATE_FILE).display()
            );
        }
        Ok(Instance { name, dir })
    }

    /// Its state.
    pub fn state(&self) -> anyhow::Result<State> {
        State::load(&self.dir)
    }

    /// An exclusive lock on its state, held until the file returned is dropped: a command
    /// that reads, changes and saves the state while the testbed runs takes it, so that
    /// several run at once (`set-perf` on each host of a cluster) do not save over each
    /// other's changes.
    pub fn lock_state(&self) -> anyhow::Result<fs::File> {
        let path = self.dir.join("state.lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock on a descriptor this function owns; the lock goes with the file.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } != 0 {
            bail!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(file)
    }
}

/// Checks that this process may build a testbed: root (or CAP_NET_ADMIN and CAP_SYS_ADMIN),
/// a writable CPU cgroup, and the tools. One error naming everything missing.
pub fn preflight(layout: &Layout, cg: &anyhow::Result<CpuCgroups>) -> anyhow::Result<()> {
    let mut missing = Vec::new();
    if !has_admin_caps() {
        missing.push("root (or the capabilities CAP_NET_ADMIN and CAP_SYS_ADMIN)".to_string());
    }
    match cg {
        Ok(cg) => {
            let root = cg.path("");
            // SAFETY: access(2) on a NUL-terminated path.
            let c = std::ffi::CString::new(root.as_os_str().as_encoded_bytes()).unwrap();
            if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                missing.push(format!(
                    "a writable cgroup CPU hierarchy ({} is not)",
                    root.display()
                ));
            }
        }
        Err(e) => missing.push(format!("a cgroup CPU controller ({e})")),
    }
    let mut tools = vec![
        "ip", "tc", "nsenter", "unshare", "mount", "umount", "bridge", "sysctl",
    ];
    tools.extend(["/usr/sbin/sshd", "ssh-keygen", "ssh"]);
    if layout.clusters.iter().any(|c| c.launcher == "slurm") {
        tools.extend([
            "/usr/sbin/munged",
            "/usr/sbin/slurmd",
            "/usr/sbin/slurmctld",
            "srun",
        ]);
    }
    let absent: Vec<&str> = tools
        .into_iter()
        .filter(|t| sys::which(t).is_none())
        .collect();
    if !absent.is_empty() {
        missing.push(format!(
            "the programs {} (scripts/setup.sh installs them)",
            absent.join(", ")
        ));
    }
    if missing.is_empty() {
        Ok(())
    } else {
        bail!("hmw-testbed needs {}", missing.join("; and "))
    }
}

fn has_admin_caps() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let Ok(status) = fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_NET_ADMIN: u64 = 12;
    const CAP_SYS_ADMIN: u64 = 21;
    eff & (1 << CAP_NET_ADMIN) != 0 && eff & (1 << CAP_SYS_ADMIN) != 0
}

/// A 64-bit FNV-1a hash, hex: tells one plan's text from another.
pub fn fnv_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// What `up` did.
#[derive(Debug)]
pub enum UpOutcome {
    /// The testbed was built.
    Built(Box<State>),
    /// The same plan's testbed was up already: nothing done.
    AlreadyUp(Box<State>),
}

/// Options of `up`.
#[derive(Debug, Clone, Default)]
pub struct UpOptions {
    /// The instance name (default: from the plan's file name).
    pub name: Option<String>,
    /// The state dir (default: `/var/lib/hmw-testbed/NAME`).
    pub state_dir: Option<PathBuf>,
    /// The emulator's binary (default: next to this binary, then PATH).
    pub router: Option<PathBuf>,
    /// Require the emulator (no fallback to plain forwarding).
    pub require_router: bool,
}

/// Brings a plan's testbed up. On a failure, removes what it created and returns the error.
pub fn up(plan_path: &Path, opts: &UpOptions) -> anyhow::Result<UpOutcome> {
    let plan = hmw_model::plan::load_plan(plan_path)?;
    let layout = Layout::from_plan(&plan)?;
    let text = fs::read(plan_path).with_context(|| format!("reading {}", plan_path.display()))?;
    let hash = fnv_hex(&text);
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| names::default_name(plan_path));
    names::check_name(&name)?;
    let cg = CpuCgroups::detect(Path::new("/sys/fs/cgroup"));
    preflight(&layout, &cg)?;
    let cg = cg?;

    let index = state::default_state_dir(&name);
    let dir = opts.state_dir.clone().unwrap_or_else(|| index.clone());
    let existing = if index.join(state::STATE_FILE).exists() {
        Some(fs::canonicalize(&index)?)
    } else if dir.join(state::STATE_FILE).exists() {
        Some(dir.clone())
    } else {
        None
    };
    if let Some(existing) = existing {
        let st = State::load(&existing)?;
        if st.plan_hash == hash && st.complete {
            return Ok(UpOutcome::AlreadyUp(Box::new(st)));
        }
        if st.plan_hash == hash {
            bail!(
                "testbed `{name}` was left half built (state {}): run `hmw-testbed down --name {name}` first",
                existing.display()
            );
        }
        bail!(
            "testbed `{name}` is up with another plan ({}): take it down first \
             (`hmw-testbed down --name {name}`) or choose another --name",
            st.plan_path.display()
        );
    }
    // One cluster has no WAN: nothing to emulate, no router to start.
    let joins_clusters = layout.clusters.len() > 1;
    let router_bin = find_router(opts.router.as_deref()).filter(|_| joins_clusters);
    if opts.require_router && joins_clusters && router_bin.is_none() {
        bail!("hmw-wan-router is neither next to hmw-testbed nor on PATH (and --require-router was given)");
    }

    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = fs::canonicalize(&dir)?;
    let mut st = State {
        name: name.clone(),
        dir: dir.clone(),
        plan_path: fs::canonicalize(plan_path)?,
        plan_hash: hash,
        layout: layout.clone(),
        cgroup_version: cg.version().to_string(),
        cgroup_root: cg.path(""),
        cgroup: names::cgroup(&name),
        fabric_netns: names::fabric_netns(&name),
        router_netns: names::router_netns(&name),
        hosts: Vec::new(),
        wan: if !joins_clusters {
            "none"
        } else if router_bin.is_some() {
            "emulated"
        } else {
            "unemulated"
        }
        .to_string(),
        control: dir.join("router/control.sock"),
        complete: false,
        resources: vec![Resource::Dir { path: dir.clone() }],
    };
    st.save()?;
    if dir != index {
        fs::create_dir_all(state::INDEX_DIR)?;
        std::os::unix::fs::symlink(&dir, &index)
            .with_context(|| format!("registering {} as {}", dir.display(), index.display()))?;
    }
    match build(&mut st, &cg, router_bin.as_deref()) {
        Ok(()) => {
            st.complete = true;
            st.save()?;
            Ok(UpOutcome::Built(Box::new(st)))
        }
        Err(e) => {
            eprintln!("hmw-testbed: up failed, removing what was created: {e:#}");
            let inst = Instance {
                name: name.clone(),
                dir: dir.clone(),
            };
            if let Err(d) = down(&inst) {
                eprintln!("hmw-testbed: down after the failure: {d:#}");
            }
            Err(e)
        }
    }
}

/// The emulator's binary: `explicit`, else next to this program, else on PATH.
pub fn find_router(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return p.exists().then(|| p.to_path_buf());
    }
    if let Ok(me) = std::env::current_exe() {
        let next = me.with_file_name("hmw-wan-router");
        if next.is_file() {
            return Some(next);
        }
    }
    sys::which("hmw-wan-router")
}

fn mkdir(path: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(path).with_context(|| format!("creating {}", path.display()))
}

fn write_file(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
    Ok(())
}

fn netns_path(netns: &str) -> String {
    format!("/run/netns/{netns}")
}

fn add_netns(st: &mut State, netns: &str) -> anyhow::Result<()> {
    st.record(Resource::NetNs {
        name: netns.to_string(),
    })?;
    run("ip", &["netns", "add", netns])?;
    ip_in(netns, &["link", "set", "lo", "up"])?;
    Ok(())
}

fn build(st: &mut State, cg: &CpuCgroups, router_bin: Option<&Path>) -> anyhow::Result<()> {
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
    crate::daemons::wait_sshd(st)?;
    crate::daemons::wait_slurm(st)?;
    Ok(())
}

/// The weight of a testbed's cgroup against the machine's other processes (v1 scale).
pub const TESTBED_WEIGHT: u64 = 8192;

/// A host's quota (`cores`, none when `None`) and its weight among the hosts: proportional to
/// its quota (1024 per core), so that under contention the hosts still share the CPU in the
/// ratio of their `perf`; hosts without quota keep the default 1024.
pub fn apply_quota(cg: &CpuCgroups, rel: &str, cores: Option<f64>) -> anyhow::Result<()> {
    cg.set_quota(rel, cores)?;
    cg.set_weight(
        rel,
        cores.map(|c| (c * 1024.0).round() as u64).unwrap_or(1024),
    )
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

/// Quotes for `sh`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// How to run a program on a host: its namespaces, its cgroup, `/srv/hmw` as cwd.
pub fn host_command(st: &State, host: &str, argv: &[String]) -> anyhow::Result<Command> {
    let h = st.host(host).with_context(|| {
        format!(
            "testbed `{}` has no host `{host}` (hosts: {})",
            st.name,
            st.hosts
                .iter()
                .map(|h| h.host.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    if argv.is_empty() {
        bail!("no command to run on `{host}`");
    }
    let mut cmd = Command::new("nsenter");
    cmd.arg(format!("--net={}", netns_path(&h.netns)))
        .arg(format!("--uts={}", h.uts.display()))
        .arg(format!("--mount={}", h.mnt.display()))
        .args(["--", "env", "-C", "/srv/hmw"])
        .args(argv);
    join_cgroup_on_exec(&mut cmd, &st.cgroup_root.join(&h.cgroup))?;
    Ok(cmd)
}

/// Makes the child move itself into a cgroup before it runs anything.
pub fn join_cgroup_on_exec(cmd: &mut Command, cgroup_dir: &Path) -> anyhow::Result<()> {
    let procs = std::ffi::CString::new(
        cgroup_dir
            .join("cgroup.procs")
            .as_os_str()
            .as_encoded_bytes(),
    )?;
    // SAFETY: the closure only calls async-signal-safe functions (open, getpid, write, close)
    // on a path prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut buf = [0u8; 16];
            let mut n = libc::getpid() as u32;
            let mut i = buf.len();
            loop {
                i -= 1;
                buf[i] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            let r = libc::write(fd, buf[i..].as_ptr().cast(), buf.len() - i);
            libc::close(fd);
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Runs a command on a host, its stdio inherited; returns its exit status.
pub fn exec(st: &State, host: &str, argv: &[String]) -> anyhow::Result<ExitStatus> {
    let mut cmd = host_command(st, host, argv)?;
    cmd.status()
        .with_context(|| format!("running `{}` on `{host}`", argv.join(" ")))
}

/// Starts a daemon on a host (or, with `host = None`, in the router namespace), detached, its
/// output to `log`; records it. Returns its pid.
pub fn spawn_daemon(
    st: &mut State,
    host: Option<&str>,
    what: &str,
    argv: &[String],
    log: &Path,
) -> anyhow::Result<u32> {
    let mut cmd = match host {
        Some(h) => host_command(st, h, argv)?,
        None => {
            let mut c = Command::new("nsenter");
            c.arg(format!("--net={}", netns_path(&st.router_netns)))
                .arg("--")
                .args(argv);
            join_cgroup_on_exec(
                &mut c,
                &st.cgroup_root.join(format!("{}/router", st.cgroup)),
            )?;
            c
        }
    };
    let out = fs::OpenOptions::new().create(true).append(true).open(log)?;
    cmd.stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    // SAFETY: setsid is async-signal-safe: the daemon leaves our session and terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = cmd.spawn().with_context(|| format!("starting {what}"))?;
    let pid = child.id();
    // The child is a daemon: it is not waited for here (down ends it by pid).
    std::mem::forget(child);
    let start = sys::start_time(pid).unwrap_or(0);
    st.record(Resource::Process {
        pid,
        start,
        host: host.unwrap_or("router").to_string(),
        what: what.to_string(),
    })?;
    Ok(pid)
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

/// One request to the emulator's control socket; its reply.
pub fn control(st: &State, request: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if st.wan != "emulated" {
        bail!(
            "testbed `{}` runs without the WAN emulator (wan={}): no control",
            st.name,
            st.wan
        );
    }
    let mut s = std::os::unix::net::UnixStream::connect(&st.control).with_context(|| {
        format!(
            "connecting to the emulator's control socket {}",
            st.control.display()
        )
    })?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    writeln!(s, "{request}")?;
    let mut line = String::new();
    BufReader::new(&s)
        .read_line(&mut line)
        .context("reading the emulator's reply")?;
    let reply: serde_json::Value = serde_json::from_str(line.trim())
        .with_context(|| format!("the emulator's reply `{}`", line.trim()))?;
    if reply.get("ok").and_then(|v| v.as_bool()) != Some(true) {
        bail!("the emulator refused {request}: {reply}");
    }
    Ok(reply)
}

/// Changes a host's `perf` (its CPU quota) while the testbed runs.
pub fn set_perf(inst: &Instance, host: &str, perf: f64) -> anyhow::Result<Option<f64>> {
    let _locked = inst.lock_state()?;
    let mut st = inst.state()?;
    if !(perf.is_finite() && perf > 0.0) {
        bail!("perf {perf} must be positive");
    }
    let cg = cgroups_of(&st);
    let idx = st
        .hosts
        .iter()
        .position(|h| h.host == host)
        .with_context(|| format!("no host `{host}`"))?;
    let mut total = 0.0;
    for (i, h) in st.hosts.iter().enumerate() {
        let p = if i == idx { Some(perf) } else { h.perf };
        total += st.layout.cores_of(p).unwrap_or(0.0);
    }
    if total > crate::layout::MAX_WORKER_CORES + 1e-9 {
        bail!(
            "with perf {perf} on `{host}` the hosts would ask for {total:.3} cores in all, more than {}",
            crate::layout::MAX_WORKER_CORES
        );
    }
    let cores = st.layout.cores_of(Some(perf));
    apply_quota(&cg, &st.hosts[idx].cgroup, cores)?;
    st.hosts[idx].perf = Some(perf);
    st.save()?;
    Ok(cores)
}

/// The CPU hierarchy a state was built on.
pub fn cgroups_of(st: &State) -> CpuCgroups {
    if st.cgroup_version == "v2" {
        CpuCgroups::V2(st.cgroup_root.clone())
    } else {
        CpuCgroups::V1(st.cgroup_root.clone())
    }
}

/// Takes a testbed down from its state file alone: every recorded resource, in the reverse
/// order of creation; processes first. Errors name what could not be removed.
pub fn down(inst: &Instance) -> anyhow::Result<Vec<String>> {
    let st = inst.state()?;
    let cg = cgroups_of(&st);
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let grace = Duration::from_secs(3);
    // 0. The emulator is asked to stop (it removes its TUN device and routing itself).
    if st.wan == "emulated" && st.control.exists() {
        let _ = control(&st, &serde_json::json!({"cmd": "stop"}));
    }
    // 1. Every recorded daemon, then anything else inside the testbed's cgroups and network
    //    namespaces (commands started by exec, ssh, srun).
    for r in st.resources.iter().rev() {
        if let Resource::Process {
            pid,
            start,
            what,
            host,
        } = r
        {
            sys::kill_process(*pid, Some(*start), grace);
            done.push(format!("process {pid} ({what} on {host})"));
        }
    }
    for _round in 0..3 {
        let mut any = false;
        for r in st.resources.iter().rev() {
            let pids: Vec<u32> = match r {
                Resource::Cgroup { rel } => cg.procs(rel),
                Resource::NetNs { name } => netns_pids(name),
                _ => continue,
            };
            for pid in pids {
                any = true;
                sys::kill_process(pid, None, Duration::from_secs(1));
            }
        }
        if !any {
            break;
        }
    }
    // 2. The rest, newest first.
    for r in st.resources.iter().rev() {
        let result: anyhow::Result<()> = match r {
            Resource::Process { .. } => Ok(()),
            Resource::Qdisc { netns, dev } => {
                if netns_exists(netns) {
                    run_quiet("tc", &["-n", netns, "qdisc", "del", "dev", dev, "root"]);
                }
                Ok(())
            }
            Resource::Link { netns, dev } => {
                if netns_exists(netns) && link_exists(netns, dev) {
                    ip_in(netns, &["link", "del", dev]).map(|_| ())
                } else {
                    Ok(())
                }
            }
            Resource::Cgroup { rel } => cg.remove(rel),
            Resource::NsFile { path } => {
                if sys::is_mount_point(path) {
                    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
                    // SAFETY: umount2 on a NUL-terminated path.
                    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
                }
                match fs::remove_file(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(anyhow::Error::from(e).context(format!("removing {}", path.display())))
                    }
                    _ => Ok(()),
                }
            }
            Resource::NetNs { name } => {
                if netns_exists(name) {
                    run("ip", &["netns", "del", name]).map(|_| ())
                } else {
                    Ok(())
                }
            }
            Resource::PrivateMount { path } => {
                if sys::is_mount_point(path) {
                    run("umount", &["-l", &path.to_string_lossy()]).map(|_| ())
                } else {
                    Ok(())
                }
            }
            Resource::Dir { path } => {
                if path == &st.dir {
                    continue; // last, after the index entry
                }
                remove_dir(path)
            }
        };
        match result {
            Ok(()) => done.push(describe(r)),
            Err(e) => failed.push(format!("{}: {e:#}", describe(r))),
        }
    }
    // 3. The index entry, then the state dir itself (the state file with it).
    let index = state::default_state_dir(&st.name);
    if index != st.dir
        && fs::symlink_metadata(&index)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false)
    {
        let _ = fs::remove_file(&index);
    }
    if failed.is_empty() {
        remove_dir(&st.dir)?;
        let _ = fs::remove_dir(state::INDEX_DIR); // only when empty
        Ok(done)
    } else {
        bail!(
            "testbed `{}`: could not remove (state kept in {}):\n  {}",
            st.name,
            st.dir.display(),
            failed.join("\n  ")
        )
    }
}

fn remove_dir(path: &Path) -> anyhow::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(anyhow::Error::from(e).context(format!("removing {}", path.display())))
        }
        _ => Ok(()),
    }
}

fn describe(r: &Resource) -> String {
    match r {
        Resource::Dir { path } => format!("folder {}", path.display()),
        Resource::PrivateMount { path } => format!("mount {}", path.display()),
        Resource::NetNs { name } => format!("netns {name}"),
        Resource::NsFile { path } => format!("namespace file {}", path.display()),
        Resource::Cgroup { rel } => format!("cgroup {rel}"),
        Resource::Link { netns, dev } => format!("link {dev} in {netns}"),
        Resource::Qdisc { netns, dev } => format!("qdisc on {dev} in {netns}"),
        Resource::Process {
            pid, what, host, ..
        } => format!("process {pid} ({what} on {host})"),
    }
}

/// Whether a named network namespace exists.
pub fn netns_exists(name: &str) -> bool {
    Path::new(&netns_path(name)).exists()
}

fn link_exists(netns: &str, dev: &str) -> bool {
    run_quiet("ip", &["-n", netns, "link", "show", "dev", dev])
}

/// The processes in a named network namespace.
pub fn netns_pids(name: &str) -> Vec<u32> {
    if !netns_exists(name) {
        return Vec::new();
    }
    run("ip", &["netns", "pids", name])
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// What remains of a testbed after `down`, checked kind by kind from a copy of its state file:
/// network namespaces, links (bridges, veths) and qdiscs, mounts, cgroups, processes, files.
pub fn leftovers(st: &State) -> Vec<String> {
    let cg = cgroups_of(st);
    let mut left = Vec::new();
    for r in &st.resources {
        let remains = match r {
            Resource::NetNs { name } => netns_exists(name),
            Resource::Link { netns, dev } | Resource::Qdisc { netns, dev } => {
                netns_exists(netns) && link_exists(netns, dev)
            }
            Resource::Cgroup { rel } => cg.path(rel).exists(),
            Resource::Process { pid, start, .. } => sys::same_process(*pid, *start),
            Resource::NsFile { path } | Resource::Dir { path } => path.exists(),
            Resource::PrivateMount { path } => sys::is_mount_point(path),
        };
        if remains {
            left.push(describe(r));
        }
    }
    // By kind, beyond the records: any namespace, link or mount carrying the instance's names.
    let prefix = format!("hmwtb-{}-", st.name);
    if let Ok(rd) = fs::read_dir("/run/netns") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n.starts_with(&prefix) {
                left.push(format!("netns {n} (unrecorded)"));
            }
        }
    }
    if let Ok(out) = run("ip", &["-o", "link", "show"]) {
        for l in out.lines() {
            if let Some(dev) = l
                .split(':')
                .nth(1)
                .map(|s| s.trim().split('@').next().unwrap_or(""))
            {
                if dev.starts_with(&st.name)
                    && dev.len() > st.name.len()
                    && dev[st.name.len()..].starts_with(['b', 'l', 'm', 'r'])
                {
                    left.push(format!("link {dev} in the machine's namespace"));
                }
            }
        }
    }
    if let Ok(info) = fs::read_to_string("/proc/self/mountinfo") {
        let d = st.dir.to_string_lossy().to_string();
        for l in info.lines() {
            if let Some(m) = l.split(' ').nth(4) {
                if m.starts_with(&d) || m.starts_with(&format!("/run/netns/{prefix}")) {
                    left.push(format!("mount {m}"));
                }
            }
        }
    }
    if cg.path(&st.cgroup).exists() {
        left.push(format!("cgroup {}", st.cgroup));
    }
    if st.file().exists() {
        left.push(format!("state file {}", st.file().display()));
    }
    if fs::symlink_metadata(state::default_state_dir(&st.name)).is_ok() {
        left.push(format!(
            "index entry {}",
            state::default_state_dir(&st.name).display()
        ));
    }
    if Path::new("/etc/netns")
        .join(format!("{prefix}launch"))
        .exists()
    {
        left.push("an /etc/netns entry".to_string());
    }
    left.sort();
    left.dedup();
    left
}

/// A summary of a testbed for `status`.
pub fn status_text(st: &State) -> String {
    let cg = cgroups_of(st);
    let mut s = format!(
        "testbed {} ({}): plan {}, wan={}, cgroup {} ({}), state {}\n",
        st.name,
        if st.complete { "up" } else { "INCOMPLETE" },
        st.plan_path.display(),
        st.wan,
        st.cgroup,
        st.cgroup_version,
        st.dir.display()
    );
    for h in &st.hosts {
        let spec = st.layout.host(&h.host);
        let quota = cg
            .quota(&h.cgroup)
            .ok()
            .flatten()
            .map(|q| format!("{q:.3} cores"))
            .unwrap_or_else(|| "no quota".into());
        let procs = cg.procs(&h.cgroup).len();
        let (lan, mgmt, cluster) = spec
            .map(|s| {
                (
                    s.lan_addr.map(|a| a.to_string()).unwrap_or("-".into()),
                    s.mgmt_addr.map(|a| a.to_string()).unwrap_or("-".into()),
                    s.cluster
                        .map(|c| st.layout.clusters[c].name.clone())
                        .unwrap_or("-".into()),
                )
            })
            .unwrap_or_default();
        s.push_str(&format!(
            "  {:<14} cluster {:<10} lan {:<14} mgmt {:<12} {:<12} processes {procs}  netns {}\n",
            h.host, cluster, lan, mgmt, quota, h.netns
        ));
    }
    s
}

/// Runs a command on a host, capturing its output (for checks and tests).
pub fn exec_output(st: &State, host: &str, argv: &[&str]) -> anyhow::Result<std::process::Output> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let mut cmd = host_command(st, host, &argv)?;
    cmd.stdin(Stdio::null());
    cmd.output()
        .with_context(|| format!("running `{}` on `{host}`", argv.join(" ")))
}

/// The hosts' names of the launching machine.
pub fn launch_host() -> &'static str {
    LAUNCH
}
