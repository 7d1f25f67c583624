//! The dashboard on recorded state files of the demo plan's run (`testdata/`, written by
//! `hmw launch` 8 s into the run and at its end): what an 80×24 and a large terminal show,
//! the keys, the summary, and the errors for a missing, stale, corrupt or foreign file.

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use ratatui::{
    backend::TestBackend,
    crossterm::event::{KeyCode, KeyEvent, KeyModifiers},
    Terminal,
};

use super::{
    choice::{Asked, Choice, Screen},
    session::load_fresh,
    summary, view,
};
use crate::live_state::LiveState;

const MID_RUN: &str = include_str!("testdata/mid-run.json");
const ENDED: &str = include_str!("testdata/ended.json");

fn state(text: &str) -> LiveState {
    serde_json::from_str(text).expect("a recorded live state")
}

/// The screen's lines as drawn at `width`×`height`, 0.5 s after the state was written.
fn screen(state: &LiveState, choice: &Choice, width: u16, height: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let now = state.updated_unix_s + 0.5;
    terminal
        .draw(|frame| view::draw(frame, state, choice, now))
        .unwrap();
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
        })
        .collect()
}

fn row<'a>(lines: &'a [String], starting: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.contains(&format!("│{starting}")))
        .unwrap_or_else(|| panic!("no row {starting}:\n{}", lines.join("\n")))
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn an_80_by_24_terminal_shows_every_cluster_link_and_the_last_events() {
    let state = state(MID_RUN);
    let lines = screen(&state, &Choice::default(), 80, 24);
    let text = lines.join("\n");
    assert!(lines[0].starts_with("demo running"), "{text}");
    assert!(lines[0].contains("696/1200 tasks (58.0%)"), "{text}");
    assert!(lines[1].contains("live 13.7 s"), "{text}");
    for c in &state.clusters {
        let cluster_row = row(&lines, &c.name);
        assert!(cluster_row.contains("computing"), "{cluster_row}");
        assert!(
            cluster_row.contains(&format!(" {} ", c.tasks_done)),
            "{cluster_row}"
        );
        assert!(cluster_row.contains('█'), "a progress bar: {cluster_row}");
    }
    assert!(row(&lines, "spain    45ms").contains("0/0"), "{text}");
    assert!(text.contains("tasks done against the model"), "{text}");
    assert!(text.contains("cluster lyon: computing"), "{text}");
    assert!(lines[23].contains("q quit"), "{text}");
}

#[test]
fn a_large_terminal_shows_more_of_the_log() {
    let state = state(MID_RUN);
    let small = screen(&state, &Choice::default(), 80, 24);
    let large = screen(&state, &Choice::default(), 200, 60);
    let events = |lines: &[String]| lines.iter().filter(|l| l.contains(" cluster ")).count();
    assert!(events(&large) > events(&small));
    assert!(large[1].contains("figures 8 s, 0 s ago"), "{}", large[1]);
}

#[test]
fn keys_sort_select_and_open_a_clusters_workers() {
    let state = state(MID_RUN);
    let mut choice = Choice::default();
    assert_eq!(choice.key(key(KeyCode::Char('s')), &state), Asked::Redraw);
    let names = |choice: &Choice| -> Vec<&str> {
        choice
            .cluster_order(&state)
            .into_iter()
            .map(|i| state.clusters[i].name.as_str())
            .collect()
    };
    assert_eq!(
        names(&choice),
        ["brazil", "spain", "lyon"],
        "most done first"
    );
    choice.key(key(KeyCode::Down), &state);
    assert_eq!(choice.selected.as_deref(), Some("spain"));
    choice.key(key(KeyCode::Enter), &state);
    assert_eq!(choice.screen, Screen::Workers("spain".into()));
    let lines = screen(&state, &choice, 80, 24);
    let text = lines.join("\n");
    assert!(text.contains("spain: 3 workers, computing"), "{text}");
    for host in ["spain-1", "spain-2", "spain-3"] {
        assert!(text.contains(host), "{text}");
    }
    choice.key(key(KeyCode::Esc), &state);
    assert_eq!(choice.screen, Screen::Overview);
    assert_eq!(choice.key(key(KeyCode::Char('x')), &state), Asked::Nothing);
    assert_eq!(choice.key(key(KeyCode::Char('q')), &state), Asked::Quit);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(choice.key(ctrl_c, &state), Asked::Interrupt);
}

#[test]
fn the_summary_of_a_run_that_ended() {
    let state = state(ENDED);
    let text = summary(&state);
    assert!(
        text.starts_with("== hmw top: run demo completed: makespan 13.687 s"),
        "{text}"
    );
    let last = text.lines().last().unwrap();
    let done: u64 = state.clusters.iter().map(|c| c.tasks_done).sum();
    assert_eq!(done, 1200);
    let expected = format!(
        "top run=demo outcome=completed tasks=1200 makespan_s=13.687 lyon={} spain={} brazil={}",
        state.clusters[0].tasks_done, state.clusters[1].tasks_done, state.clusters[2].tasks_done
    );
    assert_eq!(last, expected);
}

/// A scratch folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("hmw-top-{name}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, text: &str, age: Duration) -> PathBuf {
        let path = self.0.join("live-state.json");
        fs::write(&path, text).unwrap();
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn error_of(path: &Path) -> String {
    format!("{:#}", load_fresh(path).expect_err("an error"))
}

#[test]
fn a_missing_stale_corrupt_or_foreign_file_is_named_with_its_age() {
    let scratch = Scratch::new("errors");
    let missing = scratch.0.join("nothing.json");
    let error = error_of(&missing);
    assert!(error.starts_with(&format!("{}: no live state file", missing.display())));

    let fresh = scratch.file(MID_RUN, Duration::ZERO);
    assert!(load_fresh(&fresh).is_ok());
    let stale = scratch.file(MID_RUN, Duration::from_secs(95));
    let error = error_of(&stale);
    assert!(
        error.starts_with(&format!(
            "{}: stale live state file: last written 95.",
            stale.display()
        )),
        "{error}"
    );
    assert!(error.contains("and the run is not over"), "{error}");
    // A run that ended is never stale.
    let ended = scratch.file(ENDED, Duration::from_secs(3600));
    assert!(load_fresh(&ended).is_ok());

    let corrupt = scratch.file(&MID_RUN[..MID_RUN.len() / 2], Duration::from_secs(30));
    let error = error_of(&corrupt);
    assert!(
        error.starts_with(&format!(
            "{}: corrupt live state file (written 30.",
            corrupt.display()
        )),
        "{error}"
    );
    assert!(error.contains("EOF while parsing"), "{error}");
    let wrong_field = scratch.file(
        &MID_RUN.replacen("\"tasks_done\": 696", "\"tasks_done\": \"many\"", 1),
        Duration::ZERO,
    );
    assert!(
        error_of(&wrong_field).contains("at `progress.tasks_done`"),
        "{}",
        error_of(&wrong_field)
    );
    let foreign = scratch.file(
        &MID_RUN.replacen("\"version\": 1", "\"version\": 9", 1),
        Duration::from_secs(2),
    );
    let error = error_of(&foreign);
    assert!(
        error.contains("a live state file of format `hmw-live-state` version 9"),
        "{error}"
    );
}
