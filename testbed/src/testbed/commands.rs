//! Programs run in the testbed: on a host (its namespaces, its cgroup, `/srv/hmw` as cwd),
//! waited for or captured, or detached as a daemon on a host or in the router namespace.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use anyhow::{bail, Context};

use super::netns::netns_path;
use crate::layout::LAUNCH;
use crate::state::{Resource, State};
use crate::sys;

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

/// Runs a command on a host, capturing its output (for checks and tests).
pub fn exec_output(st: &State, host: &str, argv: &[&str]) -> anyhow::Result<std::process::Output> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    let mut cmd = host_command(st, host, &argv)?;
    cmd.stdin(Stdio::null());
    cmd.output()
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

/// The hosts' names of the launching machine.
pub fn launch_host() -> &'static str {
    LAUNCH
}
