//! What building a testbed needs of this process and machine: root (or the capabilities), a
//! writable CPU cgroup, the programs.

use std::fs;

use anyhow::bail;

use crate::cgroup::CpuCgroups;
use crate::layout::Layout;
use crate::sys;

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
