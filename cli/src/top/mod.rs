//! `hmw top [WORK_DIR]`: a terminal dashboard of a run that `hmw launch` runs, on its live
//! state file ([`crate::live_state`]): the clusters with their progress bars, the tasks done
//! against the model's band, the links, the event log; one cluster's workers on demand.
//! It exits with the run's summary when the run ends; a missing, stale or corrupt state file
//! is an error naming the file and its age. `hmw launch --top` shows the same dashboard in the
//! launcher's terminal ([`crate::watch`]).
//!
//! - [`session`]: the loop (the file, the keys, the frames);
//! - [`view`]: drawing a frame; [`choice`]: what the user chose, and the keys;
//! - [`figures`]: numbers for a person; [`summary`]: the summary printed at the end.

mod choice;
mod figures;
mod session;
mod summary;
#[cfg(test)]
mod tests;
mod view;

use std::{
    io::{self, IsTerminal as _},
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::{bail, Result};

use crate::live_state::FILE_NAME;
pub(crate) use session::{dashboard, CtrlC, Exit};
pub(crate) use summary::summary;

/// Arguments of `hmw top`.
#[derive(Debug, clap::Args)]
pub struct TopArgs {
    /// The run's work folder (`hmw launch --work-dir`; default: the run under target/launch
    /// whose live state was written last), or its live state file.
    work_dir: Option<PathBuf>,
    /// Seconds to keep the run's last state on screen once it ended, before the summary.
    #[arg(long, value_name = "SECONDS", default_value = "2", value_parser = hold_seconds)]
    hold: Duration,
}

fn hold_seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| (0.0..=3600.0).contains(s))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}`: expected seconds from 0 to 3600"))
}

/// The state file `hmw top` reads: WORK_DIR's, the file itself, or the newest under
/// target/launch.
fn state_file(work_dir: Option<&Path>) -> Result<PathBuf> {
    if let Some(given) = work_dir {
        // A folder, or what is not a file's name: the run's work folder.
        return Ok(if given.is_dir() || given.extension().is_none() {
            given.join(FILE_NAME)
        } else {
            given.to_owned()
        });
    }
    let runs = Path::new("target/launch");
    let newest = std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join(FILE_NAME))
        .filter_map(|file| Some((file.metadata().ok()?.modified().ok()?, file)))
        .max();
    match newest {
        Some((_, file)) => Ok(file),
        None => bail!(
            "no live state file under {}/*/ (hmw launch writes {FILE_NAME} in the run's work \
             folder): give the run's work folder",
            runs.display()
        ),
    }
}

/// Runs `hmw top`.
pub fn run(args: TopArgs) -> Result<()> {
    let path = state_file(args.work_dir.as_deref())?;
    let exit = if io::stdout().is_terminal() {
        dashboard(&path, io::stdout(), CtrlC::Quit, args.hold)?
    } else {
        // Not a terminal: the summary of the run so far, once.
        Exit::Ended(Box::new(session::load_fresh(&path)?.state))
    };
    match exit {
        Exit::Ended(state) => {
            print!("{}", summary(&state));
            match state.end.as_ref().map(|e| e.outcome.as_str()) {
                Some("completed") | None => Ok(()),
                Some(outcome) => bail!("the run {outcome} (its state: {})", path.display()),
            }
        }
        Exit::Quit => Ok(()),
    }
}
