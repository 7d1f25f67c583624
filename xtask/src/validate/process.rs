//! Running the tools as processes, each one's standard output and error into a log file, as
//! the script's `>LOG 2>&1` did; the one running now known, so that an interruption can stop
//! it.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The process id of the tool running now (0: none).
static RUNNING: AtomicI32 = AtomicI32::new(0);
/// Held while a tool is started and recorded.
static STARTING: Mutex<()> = Mutex::new(());
/// Set once the suite is interrupted: no tool starts after that.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether the suite was interrupted (Ctrl-C, SIGTERM).
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn not_interrupted() -> Result<()> {
    if interrupted() {
        bail!("interrupted");
    }
    Ok(())
}

/// Runs `command` with its standard output and error into the file `log` (created or
/// truncated); whether it exited with status 0. A command that cannot start (a missing
/// binary) writes why into its log and counts as failed, as the shell's `command not found`
/// did. An error once the suite is interrupted.
pub(crate) fn run_logged(command: &mut Command, log: &Path) -> Result<bool> {
    let file = File::create(log).with_context(|| format!("cannot write {}", log.display()))?;
    let err = file
        .try_clone()
        .with_context(|| format!("cannot write {}", log.display()))?;
    command.stdout(file).stderr(err);
    let started = {
        let _starting = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        not_interrupted()?;
        let started = command.spawn();
        if let Ok(child) = &started {
            RUNNING.store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
        }
        started
    };
    let mut child = match started {
        Ok(child) => child,
        Err(error) => {
            let mut file = File::options().append(true).open(log)?;
            writeln!(file, "cannot run {:?}: {error}", command.get_program())?;
            return Ok(false);
        }
    };
    let status = child.wait();
    RUNNING.store(0, Ordering::SeqCst);
    not_interrupted()?;
    Ok(status
        .with_context(|| format!("cannot wait for {:?}", command.get_program()))?
        .success())
}

/// Runs `command` to its end, its output into `log`, outside the suite's bookkeeping: for the
/// teardown, which must run even once the suite is interrupted.
pub(crate) fn run_unrecorded(command: &mut Command, log: &Path) -> Result<ExitStatus> {
    let file = File::create(log).with_context(|| format!("cannot write {}", log.display()))?;
    let err = file.try_clone()?;
    command
        .stdout(file)
        .stderr(err)
        .status()
        .with_context(|| format!("cannot run {:?}", command.get_program()))
}

/// After an interruption: no tool starts any more; the one running is sent SIGTERM (`timeout`
/// passes it on to the tool it runs) and given up to `grace` to end.
pub(crate) fn stop_tools(grace: Duration) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A tool being started is recorded before this lock is free.
    let pid = {
        let _starting = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        RUNNING.load(Ordering::SeqCst)
    };
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) with a process id this process started and has not reaped yet (the
    // waiting thread clears RUNNING once it has).
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let start = Instant::now();
    while RUNNING.load(Ordering::SeqCst) == pid && start.elapsed() < grace {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for the end of the process, which the interruption's handler brings once the
/// testbed is down.
pub(crate) fn wait_for_the_end() -> ! {
    loop {
        std::thread::park();
    }
}

/// The last `lines` lines of the file at `path`, to standard error (`tail -n N >&2`).
pub(crate) fn tail_to_stderr(path: &Path, lines: usize) {
    let text = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().collect();
    for line in &all[all.len().saturating_sub(lines)..] {
        eprintln!("{line}");
    }
}

/// The file at `path` to standard error (`cat >&2`); nothing when it cannot be read.
pub(crate) fn cat_to_stderr(path: &Path) {
    if let Ok(text) = std::fs::read(path) {
        let _ = std::io::stderr().write_all(&text);
    }
}

/// The standard output of `command` when it exits with status 0 (its standard error
/// dropped).
pub(crate) fn output_of(command: &mut Command) -> Option<String> {
    let output = command.stderr(std::process::Stdio::null()).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::scratch::Scratch;

    #[test]
    fn logs_hold_both_streams() {
        let dir = Scratch::new();
        let log = dir.path().join("a.log");
        let mut sh = Command::new("sh");
        sh.args(["-c", "echo out; echo err >&2; exit 3"]);
        assert!(!run_logged(&mut sh, &log).unwrap());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "out\nerr\n");
        let mut ok = Command::new("true");
        assert!(run_logged(&mut ok, &log).unwrap());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "");
        let mut missing = Command::new("/nonexistent/hmw");
        assert!(!run_logged(&mut missing, &log).unwrap());
        assert!(std::fs::read_to_string(&log)
            .unwrap()
            .contains("/nonexistent/hmw"));
        assert!(run_logged(
            &mut Command::new("true"),
            &dir.path().join("no/such/dir.log")
        )
        .is_err());
    }

    #[test]
    fn outputs() {
        assert_eq!(
            output_of(Command::new("echo").arg("x")),
            Some("x\n".to_owned())
        );
        assert_eq!(output_of(&mut Command::new("false")), None);
    }
}
