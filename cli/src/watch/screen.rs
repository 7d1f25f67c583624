//! `hmw launch --top`: the dashboard in the launcher's own terminal. While it shows, the
//! launcher's standard output and error (its `== ...` lines, its logs) go to WORK/launch.log;
//! when the dashboard closes (the run ended, or the user left it with `q`) the terminal comes
//! back, and what went to the log meanwhile is printed, in order, before anything else.

use std::{
    fs::{self, File},
    io::{self, Write as _},
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    thread::{self, JoinHandle},
    time::Duration,
};

use anyhow::{Context as _, Result};

use crate::top::{self, CtrlC, Exit};

/// Seconds the dashboard keeps the last state on screen once the run ended.
const HOLD: Duration = Duration::from_secs(2);

/// Standard output and error sent to the log; the terminal's own, kept.
struct Redirect {
    out: OwnedFd,
    err: OwnedFd,
    log: PathBuf,
}

impl Redirect {
    /// Send standard output and error to `log`.
    fn to(log: &Path) -> Result<Redirect> {
        let file = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        let keep = |fd: RawFd| -> Result<OwnedFd> {
            // SAFETY: dup of a descriptor this process has open (0, 1, 2 exist for a command
            // run from a terminal); the new descriptor is owned by the result.
            let copy = unsafe { libc::dup(fd) };
            if copy < 0 {
                return Err(io::Error::last_os_error()).context("cannot keep the terminal");
            }
            // SAFETY: `copy` was just opened and is owned by nothing else.
            Ok(unsafe { OwnedFd::from_raw_fd(copy) })
        };
        let (out, err) = (keep(1)?, keep(2)?);
        io::stdout().flush()?;
        for fd in [1, 2] {
            // SAFETY: dup2 onto the standard descriptors, from a file open here.
            if unsafe { libc::dup2(file.as_raw_fd(), fd) } < 0 {
                return Err(io::Error::last_os_error()).context("cannot redirect the output");
            }
        }
        Ok(Redirect {
            out,
            err,
            log: log.to_owned(),
        })
    }

    /// The terminal back on standard output and error, and what went to the log printed.
    fn undo(self) {
        let _ = io::stdout().flush();
        // SAFETY: dup2 of descriptors this process owns onto the standard ones.
        unsafe {
            libc::dup2(self.out.as_raw_fd(), 1);
            libc::dup2(self.err.as_raw_fd(), 2);
        }
        if let Ok(text) = fs::read_to_string(&self.log) {
            print!("{text}");
        }
    }

    /// The terminal, for the dashboard to draw on.
    fn terminal(&self) -> Result<File> {
        Ok(File::from(self.out.try_clone()?))
    }
}

/// The dashboard showing in the launcher's terminal.
pub(super) struct Screen {
    redirect: Arc<Mutex<Option<Redirect>>>,
    dashboard: JoinHandle<()>,
}

impl Screen {
    /// Hand the terminal to a dashboard of `state_file`, the launcher's output going to `log`.
    pub(super) fn take(state_file: &Path, log: &Path) -> Result<Screen> {
        let redirect = Redirect::to(log)?;
        let terminal = redirect.terminal()?;
        let redirect = Arc::new(Mutex::new(Some(redirect)));
        let shared = Arc::clone(&redirect);
        let state_file = state_file.to_owned();
        let dashboard = thread::Builder::new()
            .name("top".into())
            .spawn(move || {
                let shown = top::dashboard(&state_file, terminal, CtrlC::Interrupt, HOLD);
                give_back(&shared);
                match shown {
                    Ok(Exit::Ended(state)) => print!("{}", top::summary(&state)),
                    Ok(Exit::Quit) => println!(
                        "== dashboard closed; the run goes on (hmw top {} shows it again)",
                        state_file.parent().unwrap_or(Path::new(".")).display()
                    ),
                    Err(e) => println!("== dashboard closed: {e:#}; the run goes on"),
                }
            })
            .context("cannot start the dashboard")?;
        Ok(Screen {
            redirect,
            dashboard,
        })
    }

    /// Once the run is over: wait for the dashboard to show its end, then have the terminal
    /// back.
    pub(super) fn give_back(self) {
        let _ = self.dashboard.join();
        give_back(&self.redirect);
    }
}

fn give_back(redirect: &Mutex<Option<Redirect>>) {
    let taken = redirect.lock().map(|mut r| r.take());
    if let Ok(Some(redirect)) = taken {
        redirect.undo();
    }
}
