//! `hmw launch`'s watch over its run: a thread that follows the masters' live feeds and the
//! clusters' processes and rewrites the live state file ([`crate::live_state`]) at most once
//! a second; with `--top`, the dashboard of `hmw top` in the launcher's terminal.
//!
//! - [`tracker`]: the state, built from what the launcher sees (pure);
//! - [`tail`]: the records appended to a feed since the last look;
//! - [`write`]: the file's atomic rewrite;
//! - [`screen`]: the terminal handed to the dashboard while the launcher's own output goes to
//!   a log.
//!
//! The launcher tells the watch when a cluster starts ([`Watch::started`]; a second start of
//! the same cluster shows it `restarted`), how its processes are ([`Watch::processes`]) and
//! how the run ended ([`Watch::finish`]).

mod screen;
mod tail;
#[cfg(test)]
mod tests;
mod tracker;
mod write;

use std::{
    fs,
    io::{self, IsTerminal as _},
    path::{Path, PathBuf},
    process::ExitStatus,
    sync::mpsc::{self, Receiver, RecvTimeoutError, Sender},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use crate::clock::unix_now;
use anyhow::{Context as _, Result};
use hmw_core::stats::RunStats;
use hmw_model::Prediction;

use crate::{
    layout::Layout,
    live_state::{BandPoint, RunPrediction, FILE_NAME},
    report::predicted::{sample_times, Predicted},
};
use screen::Screen;
use tail::FeedTail;
pub(crate) use tracker::{ClusterSetup, PredictedFigures, RunSetup, Tracker};

/// The state file is rewritten at most this often.
const WRITE_EVERY: Duration = Duration::from_secs(1);
/// The feeds are looked at this often.
const LOOK_EVERY: Duration = Duration::from_millis(200);
/// Points of the predicted band.
const BAND_POINTS: usize = 120;

/// What the launcher tells the watch's thread.
enum Note {
    Started {
        name: String,
        pid: u32,
    },
    Ended {
        name: String,
        success: bool,
        how: String,
    },
    Finish {
        outcome: String,
        stats_file: PathBuf,
    },
}

/// The watch over a run.
pub(crate) struct Watch {
    notes: Option<Sender<Note>>,
    thread: Option<JoinHandle<()>>,
    /// The clusters whose end was told (each is told once).
    ended: Vec<String>,
    screen: Option<Screen>,
}

/// The feed of cluster `name`'s master in the work folder `work`.
pub(crate) fn feed_path(work: &Path, name: &str) -> PathBuf {
    work.join(format!("{name}.live.jsonl"))
}

/// What a run's state starts from: its clusters with their predicted figures, and the
/// predicted band of the tasks done over time.
pub(crate) fn setup(layout: &Layout, prediction: Option<(&Prediction, f64)>) -> RunSetup {
    let predicted = prediction.map(|(p, oper)| Predicted::new(p, oper));
    let clusters = layout
        .clusters
        .iter()
        .map(|c| ClusterSetup {
            name: c.name.clone(),
            parent: c
                .link
                .as_ref()
                .and_then(|l| layout.clusters.get(l.parent))
                .map(|p| p.name.clone()),
            workers: c.workers.len(),
            predicted: predicted
                .as_ref()
                .and_then(|p| p.clusters.iter().find(|pc| pc.name == c.name))
                .map(|pc| PredictedFigures {
                    tasks_per_s: pc.best.tasks_per_s,
                    tasks: (pc.best.tasks, pc.worst.tasks),
                    efficiency: (pc.efficiency_best, pc.efficiency_worst),
                }),
        })
        .collect();
    let run = predicted.map(|p| {
        let end = p
            .clusters
            .iter()
            .map(|c| c.worst.execution_time().max(c.best.execution_time()))
            .fold(p.t_ex_worst.max(p.t_ex_best), f64::max);
        let band = sample_times(end, BAND_POINTS, [])
            .into_iter()
            .map(|t| BandPoint {
                t_s: t,
                best: p.clusters.iter().map(|c| c.best.done_at(t)).sum(),
                worst: p.clusters.iter().map(|c| c.worst.done_at(t)).sum(),
            })
            .collect();
        RunPrediction {
            makespan_best_s: p.t_ex_best,
            makespan_worst_s: p.t_ex_worst,
            efficiency_best: p.efficiency_best,
            efficiency_worst: p.efficiency_worst,
            band,
        }
    });
    RunSetup {
        clusters,
        prediction: run,
    }
}

impl Watch {
    /// Start watching the run `name` laid out as `layout` in the work folder `work`; with
    /// `live_figures`, its masters write their feeds there ([`feed_path`]). With `on_screen`,
    /// the dashboard takes the terminal and the launcher's own output goes to
    /// WORK/launch.log until the run ends.
    pub(crate) fn start(
        name: &str,
        layout: &Layout,
        prediction: Option<(&Prediction, f64)>,
        work: &Path,
        live_figures: bool,
        on_screen: bool,
    ) -> Result<Watch> {
        let interval_s = layout
            .config
            .get("run")
            .and_then(|run| run.get("statistics_interval"))
            .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
            .unwrap_or(hmw_core::config::RunConfig::default().statistics_interval);
        let setup = setup(layout, prediction);
        let feeds: Vec<FeedTail> = setup
            .clusters
            .iter()
            .map(|c| {
                let path = feed_path(work, &c.name);
                // A previous run's feed is not this run's.
                let _ = fs::remove_file(&path);
                FeedTail::new(&path)
            })
            .collect();
        let mut tracker = Tracker::new(
            name,
            setup,
            interval_s,
            live_figures,
            &work.display().to_string(),
            std::process::id(),
            unix_now(),
        );
        let state_file = work.join(FILE_NAME);
        let (notes, inbox) = mpsc::channel();
        write::write_atomically(&state_file, &tracker.bytes(unix_now()))
            .with_context(|| format!("cannot write {}", state_file.display()))?;
        let writer = state_file.clone();
        let thread = thread::Builder::new()
            .name("watch".into())
            .spawn(move || follow(tracker, feeds, &inbox, &writer))
            .context("cannot start the watch's thread")?;
        let screen = match on_screen {
            true if io::stdout().is_terminal() => {
                Some(Screen::take(&state_file, &work.join("launch.log"))?)
            }
            true => {
                println!("== --top: the output is not a terminal; progress lines instead");
                None
            }
            false => None,
        };
        Ok(Watch {
            notes: Some(notes),
            thread: Some(thread),
            ended: Vec::new(),
            screen,
        })
    }

    /// Whether the dashboard has the terminal (then each cluster's output, the main one's
    /// too, must go to a log).
    pub(crate) fn on_screen(&self) -> bool {
        self.screen.is_some()
    }

    fn note(&self, note: Note) {
        if let Some(notes) = &self.notes {
            let _ = notes.send(note);
        }
    }

    /// Cluster `name`'s processes started as process `pid`.
    pub(crate) fn started(&mut self, name: &str, pid: u32) {
        self.ended.retain(|n| n != name);
        self.note(Note::Started {
            name: name.to_owned(),
            pid,
        });
    }

    /// Each cluster's processes as the launcher last polled them: an exit status once they
    /// ended (each end is told once).
    pub(crate) fn processes<'a>(
        &mut self,
        clusters: impl IntoIterator<Item = (&'a str, Option<ExitStatus>)>,
    ) {
        for (name, status) in clusters {
            let Some(status) = status else { continue };
            if self.ended.iter().any(|n| n == name) {
                continue;
            }
            self.ended.push(name.to_owned());
            self.note(Note::Ended {
                name: name.to_owned(),
                success: status.success(),
                how: status.to_string(),
            });
        }
    }

    /// The run is over, as `outcome` says (`completed`, `failed`, `interrupted`); the main
    /// master's statistics, when it wrote them, are in `main_stats`. The state file is written
    /// a last time; the dashboard, if any, shows it, gives the terminal back and prints the
    /// launcher's output meanwhile and the run's summary.
    pub(crate) fn finish(mut self, outcome: &str, main_stats: &Path) {
        self.note(Note::Finish {
            outcome: outcome.to_owned(),
            stats_file: main_stats.to_owned(),
        });
        self.stop();
    }

    fn stop(&mut self) {
        // Closing the channel ends the thread once it has written its last state.
        self.notes = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(screen) = self.screen.take() {
            screen.give_back();
        }
    }
}

impl Drop for Watch {
    /// Left without [`Watch::finish`] (an error starting the clusters): the state says the run
    /// failed, and the terminal is given back.
    fn drop(&mut self) {
        self.stop();
    }
}

/// The watch's thread: the feeds every [`LOOK_EVERY`], the launcher's notes as they come,
/// the state file at most every [`WRITE_EVERY`]; until the launcher closes the channel (after
/// a [`Note::Finish`], or without one: then the run failed).
fn follow(
    mut tracker: Tracker,
    mut feeds: Vec<FeedTail>,
    inbox: &Receiver<Note>,
    state_file: &Path,
) {
    let mut last_write = Instant::now();
    let mut finished = false;
    let mut reported_write_error = false;
    loop {
        let note = inbox.recv_timeout(LOOK_EVERY);
        for (owner, feed) in feeds.iter_mut().enumerate() {
            for record in feed.read_new() {
                tracker.record(owner, record, unix_now());
            }
        }
        let closed = match note {
            Ok(note) => {
                let now = unix_now();
                match note {
                    Note::Started { name, pid } => tracker.started(&name, pid, now),
                    Note::Ended { name, success, how } => tracker.ended(&name, success, &how),
                    Note::Finish {
                        outcome,
                        stats_file,
                    } => {
                        let stats = read_stats(&stats_file);
                        let file = stats_file.display().to_string();
                        tracker.finish(&outcome, stats.as_ref(), Some(file), now);
                        finished = true;
                    }
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        if closed && !finished {
            tracker.finish("failed", None, None, unix_now());
        }
        if closed || last_write.elapsed() >= WRITE_EVERY {
            // At most once a second, the last write included.
            if let Some(wait) = WRITE_EVERY.checked_sub(last_write.elapsed()) {
                thread::sleep(wait);
            }
            let bytes = tracker.bytes(unix_now());
            if let Err(e) = write::write_atomically(state_file, &bytes) {
                if !reported_write_error {
                    tracing::warn!(file = %state_file.display(), error = %e, "cannot write the live state");
                    reported_write_error = true;
                }
            }
            last_write = Instant::now();
        }
        if closed {
            return;
        }
    }
}

/// A master's statistics file, if it holds statistics.
fn read_stats(path: &Path) -> Option<RunStats> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}
