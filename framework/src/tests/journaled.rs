//! The main master's journal in one process: a run journals every result; a run stopped part
//! way (its journal cut, its tail torn) resumes and gathers every task exactly once; a resume
//! with other parameters, or of a problem that cannot resume, is refused with the reason.

use std::{
    fs,
    path::{Path, PathBuf},
};

use hmw_core::{
    config::ConfigFile,
    journal::{self, Record},
    machinefile::MachineFile,
    Problem, Task, TaskId, TaskResult, WorkerContext,
};
use serde::{Deserialize, Serialize};

use crate::{
    journal::JournalArgs,
    runner::{play_in_threads_with, Outcome},
};

#[derive(Serialize, Deserialize)]
struct Square(u64);

#[derive(Serialize, Deserialize)]
struct Squared(u64);

impl Task for Square {
    type Output = Squared;
    fn execute(self, _: &WorkerContext) -> Squared {
        Squared(self.0 * self.0)
    }
}

impl TaskResult for Squared {
    fn join(&mut self, other: Squared) -> Result<(), Squared> {
        Err(other)
    }
}

/// The squares of `0..n`, gathered into a sum and a count per task: a task gathered twice,
/// or not at all, shows.
#[derive(Debug, Deserialize)]
struct Squares {
    n: u64,
    #[serde(skip)]
    produced: u64,
    #[serde(skip)]
    sum: u64,
    #[serde(skip)]
    gathers: Vec<u32>,
    #[serde(default)]
    iterative: bool,
}

impl Problem for Squares {
    type Task = Square;
    fn next_task(&mut self) -> Option<Square> {
        (self.produced < self.n).then(|| {
            self.produced += 1;
            Square(self.produced - 1)
        })
    }
    fn gather(&mut self, id: TaskId, result: Squared) {
        assert_eq!(result.0, id * id, "task {id}'s result");
        self.sum += result.0;
        self.gathers[id as usize] += 1;
    }
    fn task_count(&self) -> Option<u64> {
        Some(self.n)
    }
    fn iterations_completed(&self) -> Option<u64> {
        self.iterative.then_some(0)
    }
}

fn config(n: u64, iterative: bool) -> ConfigFile {
    let text = format!(
        "[run]\nstatistics_interval = 0\njournal_sync_s = 0.01\n\n[application]\nn = {n}\n\
         iterative = {iterative}\n"
    );
    ConfigFile::parse(Path::new("run.toml"), &text).unwrap()
}

fn problem(config: &ConfigFile) -> Squares {
    let mut problem: Squares = config.application().unwrap();
    problem.gathers = vec![0; problem.n as usize];
    problem
}

/// Plays master and three workers in threads with the journal at `path`.
fn play(config: &ConfigFile, path: &Path, resume: bool) -> Result<Squares, String> {
    let machines = MachineFile::parse(Path::new("test.hosts"), "master\nw1\nw2\nw3\n").unwrap();
    let args = JournalArgs {
        path: path.to_owned(),
        resume,
        fingerprints: [("plan".to_string(), "p1".to_string())].into(),
    };
    match play_in_threads_with(
        &machines,
        config,
        Some(problem(config)),
        None,
        None,
        Some(&args),
    ) {
        Ok(Outcome::Master { problem, stats }) => {
            let journal = stats.journal.expect("the journal's statistics");
            assert_eq!(journal.failed, None);
            assert_eq!(journal.records + journal.resumed_tasks, problem.n);
            Ok(problem)
        }
        Ok(_) => panic!("not the master's outcome"),
        Err(e) => Err(e.to_string()),
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hmw-journaled-{name}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    dir.join("journal.hmwj")
}

/// The bytes of the journal up to the end of its `keep`-th gathered record.
fn cut_after(bytes: &[u8], keep: usize) -> usize {
    let mut at = journal::MAGIC.len();
    let mut gathered = 0;
    while at < bytes.len() {
        let length = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = bytes[at + journal::RECORD_OVERHEAD];
        if kind == journal::Kind::Gathered as u8 {
            if gathered == keep {
                break;
            }
            gathered += 1;
        }
        at += journal::RECORD_OVERHEAD + length;
    }
    at
}

#[test]
fn a_run_cut_short_resumes_and_gathers_every_task_once() {
    let path = scratch("resume");
    let config = config(200, false);
    let whole = play(&config, &path, false).unwrap();
    assert!(whole.gathers.iter().all(|&g| g == 1));
    let bytes = fs::read(&path).unwrap();
    let scan = journal::scan(&bytes).unwrap();
    let gathered = |records: &[Record<'_>]| {
        records
            .iter()
            .filter(|r| matches!(r, Record::Gathered { .. }))
            .count()
    };
    assert_eq!(gathered(&scan.records), 200);
    assert!(matches!(scan.records[0], Record::Started { .. }));
    assert_eq!(scan.header.fingerprints["plan"], "p1");

    // A crash after 120 results: the rest never synced, the tail torn.
    let mut cut = bytes[..cut_after(&bytes, 120)].to_vec();
    cut.extend_from_slice(&bytes[cut.len()..cut.len() + 13]);
    fs::write(&path, &cut).unwrap();
    let resumed = play(&config, &path, true).unwrap();
    assert!(
        resumed.gathers.iter().all(|&g| g == 1),
        "every task gathered once: {:?}",
        resumed.gathers
    );
    assert_eq!(resumed.sum, (0..200u64).map(|i| i * i).sum::<u64>());

    // The journal now holds every task once, with the resume marked.
    let bytes = fs::read(&path).unwrap();
    let scan = journal::scan(&bytes).unwrap();
    assert_eq!(scan.torn, None);
    let mut ids: Vec<TaskId> = scan
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Gathered { ids, .. } => Some(ids[0]),
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..200).collect::<Vec<_>>());
    assert!(scan
        .records
        .iter()
        .any(|r| matches!(r, Record::Resumed { replayed: 120, .. })));

    // Resumed once more with everything in: nothing left to hand out.
    let done = play(&config, &path, true).unwrap();
    assert!(done.gathers.iter().all(|&g| g == 1));
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_resume_with_other_parameters_is_refused_naming_them() {
    let path = scratch("params");
    play(&config(20, false), &path, false).unwrap();
    let error = play(&config(21, false), &path, true).unwrap_err();
    assert!(
        error.contains("cannot resume") && error.contains("n = 20") && error.contains("n = 21"),
        "{error}"
    );
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn an_iterative_problem_is_refused() {
    let path = scratch("iterative");
    play(&config(5, true), &path, false).unwrap();
    let error = play(&config(5, true), &path, true).unwrap_err();
    assert!(error.contains("iterative"), "{error}");
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
}
