//! Taking a testbed down from its state file alone, and what remains of one after.

use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::bail;

use super::{
    conditions::control,
    cpu::cgroups_of,
    instance::Instance,
    netns::{link_exists, netns_exists, netns_pids},
};
use crate::state::{self, Resource, State};
use crate::sys::{self, ip_in, run, run_quiet};

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
