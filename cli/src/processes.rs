//! The processes `hmw launch` and `hmw calibrate` start, and how they are stopped.
//!
//! - [`Group::start`]: each `mpirun` leads a process group of its own, and the kernel sends it
//!   SIGTERM when this process dies, even by SIGKILL (`PR_SET_PDEATHSIG`); `mpirun` answers
//!   SIGTERM by stopping its ranks.
//! - [`Group::kill`]: SIGKILL to the group, and only while `mpirun` is not reaped: until then
//!   its id names no other process or group; once reaped, the id may be another's.
//! - OpenMPI puts each rank in a process group of its own, so `mpirun`'s group holds `mpirun`
//!   alone, and a rank whose `mpirun` died would be re-parented to init, out of reach.
//!   [`become_subreaper`] makes this process their parent instead
//!   (`PR_SET_CHILD_SUBREAPER`), and [`kill_every_descendant`] kills them at the end.
//! - [`catch_signals`]: Ctrl-C, SIGTERM and SIGHUP only set a flag ([`interrupted`]); the
//!   commands check it in their loops and clean up there.

use std::{
    fs, io,
    os::unix::process::CommandExt as _,
    process::{Child, ChildStdin, Command, ExitStatus},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context as _, Result};

/// Set by Ctrl-C, SIGTERM and SIGHUP once [`catch_signals`] ran.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Catch Ctrl-C, SIGTERM and SIGHUP (ctrlc's `termination` feature) into a flag, read by
/// [`interrupted`]. Once called, these signals no longer end the process: its loops must check
/// the flag.
pub(crate) fn catch_signals() -> Result<()> {
    ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst))
        .context("cannot catch Ctrl-C, SIGTERM and SIGHUP")
}

/// Whether Ctrl-C, SIGTERM or SIGHUP arrived since [`catch_signals`].
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Make this process the parent of every orphan below it (`PR_SET_CHILD_SUBREAPER`): a rank
/// whose `mpirun` died is re-parented here rather than to init, so that
/// [`kill_every_descendant`] finds it.
pub(crate) fn become_subreaper() -> Result<()> {
    // SAFETY: prctl(PR_SET_CHILD_SUBREAPER, 1) reads no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        bail!(
            "cannot become the parent of orphaned ranks (PR_SET_CHILD_SUBREAPER): {}",
            io::Error::last_os_error()
        );
    }
    Ok(())
}

/// A started `mpirun`, leader of a process group of its own.
pub(crate) struct Group {
    child: Child,
    /// Its exit status, once reaped.
    status: Option<ExitStatus>,
    /// Its standard input, when that is a pipe: a remote cluster's watchdog listens to it.
    heart: Heart,
}

/// A started process's standard input, where the launcher writes a byte every second for a
/// remote cluster's watchdog: shared, so that a thread keeps beating it while the launcher is
/// busy (starting a cluster again takes longer than the watchdog's patience).
#[derive(Clone, Default)]
pub(crate) struct Heart(Arc<Mutex<Option<ChildStdin>>>);

impl Heart {
    /// One byte to the pipe; a failed write closes it (the process is gone, or no longer
    /// reads).
    pub(crate) fn beat(&self) {
        use std::io::Write as _;
        let mut stdin = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pipe) = stdin.as_mut() {
            if pipe.write_all(b".").and_then(|()| pipe.flush()).is_err() {
                *stdin = None;
            }
        }
    }
}

/// A thread that beats every heart given to it once a second, until dropped.
pub(crate) struct Heartbeats {
    hearts: Arc<Mutex<Vec<Heart>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Heartbeats {
    pub(crate) fn start() -> Heartbeats {
        let hearts: Arc<Mutex<Vec<Heart>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = thread::spawn({
            let (hearts, stop) = (hearts.clone(), stop.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    for heart in hearts.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                        heart.beat();
                    }
                    thread::sleep(Duration::from_secs(1));
                }
            }
        });
        Heartbeats {
            hearts,
            stop,
            thread: Some(thread),
        }
    }

    /// Beat `heart` from now on.
    pub(crate) fn add(&self, heart: Heart) {
        self.hearts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(heart);
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How [`Group::wait_until`] ended.
pub(crate) enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Interrupted,
}

impl Group {
    /// Start `command` as the leader of a new process group that the kernel signals (SIGTERM)
    /// when this process dies, even by SIGKILL.
    pub(crate) fn start(command: &mut Command) -> io::Result<Group> {
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        command.process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGTERM as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died before prctl: then nobody would signal us.
                if libc::getppid() != parent {
                    return Err(io::Error::other("the launcher is gone"));
                }
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        let heart = Heart(Arc::new(Mutex::new(child.stdin.take())));
        Ok(Group {
            child,
            status: None,
            heart,
        })
    }

    /// The process id of `mpirun`, which is also its group's.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// One byte to its standard input, when that is a pipe: a remote cluster's watchdog stops
    /// it when these stop coming, even when the connection died without closing. A failed
    /// write closes the pipe (the process is gone, or no longer reads).
    pub(crate) fn heartbeat(&mut self) {
        self.heart.beat();
    }

    /// Its standard input, to beat from another thread ([`Heartbeats`]).
    pub(crate) fn heart(&self) -> Heart {
        self.heart.clone()
    }

    /// Its exit status, once it ended (reaping it).
    pub(crate) fn poll(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// The exit status it was reaped with, if it was.
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        self.status
    }

    /// SIGKILL to the process group, then reap `mpirun`; nothing once it was reaped (its id may
    /// then be another process's). Its ranks, each in a group of its own, are left to
    /// [`kill_every_descendant`].
    pub(crate) fn kill(&mut self) {
        if self.status.is_some() {
            return;
        }
        // SAFETY: kill(2) on the group this process created, whose leader (mpirun, our child)
        // is not reaped yet, so that its id names no other group.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        self.status = self.child.wait().ok();
    }

    /// Wait until `mpirun` ends, `deadline` passes or [`interrupted`] is set, whichever
    /// comes first; a [`heartbeat`](Self::heartbeat) every second meanwhile.
    pub(crate) fn wait_until(&mut self, deadline: Instant) -> Waited {
        let mut beat = Instant::now();
        loop {
            if beat.elapsed() >= Duration::from_secs(1) {
                beat = Instant::now();
                self.heartbeat();
            }
            if let Some(status) = self.poll() {
                return Waited::Exited(status);
            }
            if interrupted() {
                return Waited::Interrupted;
            }
            if Instant::now() >= deadline {
                return Waited::TimedOut;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// SIGKILL every process below this one and reap it, for at most `within`; returns the ids
/// still there then (none, unless a process is stuck in the kernel).
///
/// Level by level: each child of this process is killed by its id (an unreaped child's id
/// cannot name another process), which re-parents its own children here (with
/// [`become_subreaper`]), and so on. Killing grandchildren by the ids read in /proc instead
/// would race with their parents reaping them and the ids being reused (`pid_max` is 32768
/// on many machines). To be called once every [`Group`] is reaped ([`Group::kill`]): it reaps
/// the children it kills, which a [`Group`] would then no longer find.
pub(crate) fn kill_every_descendant(within: Duration) -> Vec<i32> {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    let deadline = Instant::now() + within;
    loop {
        let children = children_of(me);
        if children.is_empty() || Instant::now() >= deadline {
            return children;
        }
        for &child in &children {
            // SAFETY: `child` is a child of this process not yet reaped: its id names no other
            // process. waitpid with a null status pointer writes nothing.
            unsafe {
                libc::kill(child, libc::SIGKILL);
            }
        }
        thread::sleep(Duration::from_millis(5));
        for &child in &children {
            // SAFETY: as above; a null status pointer is allowed.
            unsafe {
                libc::waitpid(child, std::ptr::null_mut(), libc::WNOHANG);
            }
        }
    }
}

/// The children of `pid`, from /proc.
pub(crate) fn children_of(pid: i32) -> Vec<i32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let child: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
            // The fields after the command name (which may hold spaces): state, ppid, ...
            let parent: i32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (parent == pid).then_some(child)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Tests that start child processes hold this for reading; the test that kills every
    /// descendant of the test process holds it for writing, so it reaches no other test's.
    static CHILDREN: std::sync::RwLock<()> = std::sync::RwLock::new(());

    /// Held by a test while its child processes run.
    pub(crate) fn spawning_children() -> std::sync::RwLockReadGuard<'static, ()> {
        CHILDREN.read().unwrap_or_else(|e| e.into_inner())
    }

    /// A shell that starts a sleeping grandchild and waits: killing the shell orphans it.
    fn family() -> Group {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 600 & wait"]);
        Group::start(&mut command).unwrap()
    }

    fn alive(pid: i32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z")
        })
    }

    /// Wait (5 s at most) until `pid` has children, and return them.
    fn children_once_up(pid: i32) -> Vec<i32> {
        let start = Instant::now();
        loop {
            let children = children_of(pid);
            if !children.is_empty() || start.elapsed() > Duration::from_secs(5) {
                return children;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// One test: killing every descendant of the test process would reach another test's.
    #[test]
    fn orphans_come_here_and_are_killed_with_everything_below() {
        let _alone = CHILDREN.write().unwrap_or_else(|e| e.into_inner());
        // Past its deadline: said so, and killed.
        let mut group = family();
        assert!(matches!(
            group.wait_until(Instant::now() + Duration::from_millis(100)),
            Waited::TimedOut
        ));
        group.kill();
        assert!(group.status().is_some());
        let _ = kill_every_descendant(Duration::from_secs(5));

        become_subreaper().unwrap();
        let mut group = family();
        let shell = group.id() as i32;
        let sleepers = children_once_up(shell);
        assert_eq!(sleepers.len(), 1, "the shell's sleep");
        // The group holds the shell and its sleep: kill the shell alone, as one kills mpirun.
        // SAFETY: our unreaped child.
        unsafe { libc::kill(shell, libc::SIGKILL) };
        assert!(matches!(
            group.wait_until(Instant::now() + Duration::from_secs(5)),
            Waited::Exited(_)
        ));
        // Re-parented here, not to init, and still running.
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        assert!(children_of(me).contains(&sleepers[0]));
        assert!(alive(sleepers[0]));
        // A reaped group is not signalled again.
        group.kill();
        assert!(alive(sleepers[0]));
        assert!(kill_every_descendant(Duration::from_secs(5)).is_empty());
        assert!(!alive(sleepers[0]));
        assert!(!children_of(me).contains(&sleepers[0]));
    }
}
