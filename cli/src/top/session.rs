//! The dashboard's loop: the live state file looked at four times a second (read again only
//! when it changed), keys as they come, a frame drawn only when something changed (and once a
//! second for the header's clock), at most four a second; until the run ends (the last state
//! is held on screen a moment), the user leaves, or the file goes missing, stale or corrupt.

use std::{
    io::Write,
    path::Path,
    time::{Duration, Instant, SystemTime},
};

use crate::clock::unix_now;
use anyhow::{bail, Result};
use ratatui::{
    backend::CrosstermBackend,
    crossterm::{
        cursor,
        event::{self, Event, KeyEventKind},
        execute,
        terminal::{self, EnterAlternateScreen, LeaveAlternateScreen},
    },
    Terminal,
};

use super::{
    choice::{Asked, Choice},
    view,
};
use crate::live_state::{self, age_s, ago, LiveState, Loaded};

/// A state file of a run not over that was not written for this long is stale: its launcher
/// writes it every second.
pub(crate) const STALE_AFTER_S: f64 = 10.0;
/// How often the file is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(250);
/// The least time between two frames.
const FRAME_EVERY: Duration = Duration::from_millis(250);

/// What Ctrl-C does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CtrlC {
    /// Leave the dashboard (`hmw top`).
    Quit,
    /// Interrupt the run (`hmw launch --top`: the launcher stops every cluster, and the
    /// dashboard shows the run's end).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Interrupt,
}

/// How the dashboard closed.
#[derive(Debug)]
pub(crate) enum Exit {
    /// The run ended: its last state.
    Ended(Box<LiveState>),
    /// The user left.
    Quit,
}

/// The state file read, and checked to be fresh: a run not over whose file was not written
/// for [`STALE_AFTER_S`] is an error naming the file, its age and its launcher.
pub(crate) fn load_fresh(path: &Path) -> Result<Loaded> {
    let loaded = live_state::read(path)?;
    let age = age_s(loaded.modified);
    if loaded.state.end.is_none() && age > STALE_AFTER_S {
        let pid = loaded.state.launcher_pid;
        let launcher = if Path::new(&format!("/proc/{pid}")).exists() {
            format!("its launcher (pid {pid}) still runs but no longer writes it")
        } else {
            format!("its launcher (pid {pid}) is gone: killed before the run ended")
        };
        bail!(
            "{}: stale live state file: last written {}, and the run is not over; {launcher}",
            path.display(),
            ago(age)
        );
    }
    Ok(loaded)
}

/// The terminal in raw mode on the alternate screen, given back whatever the way out.
struct Screen<W: Write> {
    terminal: Terminal<CrosstermBackend<W>>,
}

impl<W: Write> Screen<W> {
    fn take(mut out: W) -> Result<Screen<W>> {
        terminal::enable_raw_mode()?;
        if let Err(e) = execute!(out, EnterAlternateScreen, cursor::Hide) {
            let _ = terminal::disable_raw_mode();
            return Err(e.into());
        }
        Ok(Screen {
            terminal: Terminal::new(CrosstermBackend::new(out))?,
        })
    }
}

impl<W: Write> Drop for Screen<W> {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            self.terminal.backend_mut(),
            LeaveAlternateScreen,
            cursor::Show
        );
    }
}

/// Show the dashboard of the state file `path` on `out` until the run ends (its last state
/// held `hold` on screen), the user leaves, or the file fails.
pub(crate) fn dashboard(
    path: &Path,
    out: impl Write,
    ctrl_c: CtrlC,
    hold: Duration,
) -> Result<Exit> {
    let Loaded {
        mut state,
        mut modified,
    } = load_fresh(path)?;
    if state.end.is_some() {
        return Ok(Exit::Ended(Box::new(state)));
    }
    let mut screen = Screen::take(out)?;
    let mut choice = Choice::default();
    let mut changed = true;
    let mut drawn_at: Option<Instant> = None;
    let mut looked_at = Instant::now();
    let mut ended_at: Option<Instant> = None;
    loop {
        let due = drawn_at.is_none_or(|at| {
            let since = at.elapsed();
            (changed && since >= FRAME_EVERY) || since >= Duration::from_secs(1)
        });
        if due {
            let now = unix_now();
            screen
                .terminal
                .draw(|frame| view::draw(frame, &state, &choice, now))?;
            drawn_at = Some(Instant::now());
            changed = false;
        }
        if event::poll(LOOK_EVERY.saturating_sub(looked_at.elapsed()))? {
            match event::read()? {
                Event::Key(key) if key.kind == KeyEventKind::Press => {
                    match choice.key(key, &state) {
                        Asked::Redraw => changed = true,
                        Asked::Nothing => {}
                        Asked::Quit => return Ok(Exit::Quit),
                        Asked::Interrupt => match ctrl_c {
                            CtrlC::Quit => return Ok(Exit::Quit),
                            // SAFETY: raise(2) has no preconditions; the launcher catches
                            // SIGINT into its flag.
                            CtrlC::Interrupt => unsafe {
                                libc::raise(libc::SIGINT);
                            },
                        },
                    }
                }
                Event::Resize(..) => changed = true,
                _ => {}
            }
        }
        if looked_at.elapsed() >= LOOK_EVERY {
            looked_at = Instant::now();
            let now_modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
            if now_modified != Some(modified) {
                let loaded = load_fresh(path)?;
                (state, modified) = (loaded.state, loaded.modified);
                changed = true;
            } else if state.end.is_none() {
                load_fresh_age(path, modified, &state)?;
            }
            if state.end.is_some() && ended_at.is_none() {
                ended_at = Some(Instant::now());
            }
        }
        if ended_at.is_some_and(|at| at.elapsed() >= hold) {
            return Ok(Exit::Ended(Box::new(state)));
        }
    }
}

/// The staleness check of [`load_fresh`] on a file that did not change since it was read.
fn load_fresh_age(path: &Path, modified: SystemTime, state: &LiveState) -> Result<()> {
    if age_s(modified) > STALE_AFTER_S && state.end.is_none() {
        load_fresh(path)?;
    }
    Ok(())
}
