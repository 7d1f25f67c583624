//! The main master's journal of results (`--journal FILE`, on by default under `hmw launch`):
//! every result gathered is appended to FILE by a writer thread that syncs it in groups
//! ([`writer`]); a run started again with `--resume` gathers what the journal holds into a
//! fresh problem and hands out only the tasks it lacks. The format and the replay are
//! `hmw-core`'s ([`hmw_core::journal`], [`ResumedSource`]); this module owns the file.

mod source;
mod writer;

use std::{
    collections::BTreeMap,
    fs::{File, OpenOptions},
    io::{Read as _, Write as _},
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use hmw_core::{
    config::{ConfigFile, RunConfig},
    journal::{self, JournalHeader, Record},
    roles::{ProblemSource, ResumedSource},
    stats::JournalStats,
    Problem,
};

use crate::error::RunError;
pub(crate) use source::JournaledSource;
pub(crate) use writer::{JournalWriter, SyncPolicy};

/// What the command line asks of the journal.
#[derive(Debug, Clone)]
pub(crate) struct JournalArgs {
    /// The journal's file.
    pub(crate) path: PathBuf,
    /// Resume from it (else a new journal replaces any file there).
    pub(crate) resume: bool,
    /// Fingerprints the launcher gives, by name (`plan`).
    pub(crate) fingerprints: BTreeMap<String, String>,
}

/// The main master's task source with a journal: `inner` resumed from the journal's records
/// when asked, every result gathered from now on journaled.
pub(crate) fn open<P: Problem>(
    args: &JournalArgs,
    config: &ConfigFile,
    inner: ProblemSource<P>,
) -> Result<JournaledSource<ResumedSource<ProblemSource<P>>>, RunError> {
    let now = JournalHeader {
        application: config.application_text()?,
        binary_sha256: binary_sha256()?,
        fingerprints: args.fingerprints.clone(),
        started_unix_s: unix_now(),
    };
    let path = &args.path;
    let failed = |what: &str, e: std::io::Error| {
        RunError::setup(format!("journal {}: cannot {what}: {e}", path.display()))
    };
    if !args.resume {
        let mut bytes = journal::MAGIC.to_vec();
        journal::append_header(&mut bytes, &now);
        journal::seal(&mut bytes[journal::MAGIC.len()..]);
        let mut file = File::create(path).map_err(|e| failed("create it", e))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| failed("write its header", e))?;
        sync_folder(path);
        let policy = policy(&config.run, path, bytes.len() as u64);
        let writer = JournalWriter::start(file, policy).map_err(|e| failed("start", e))?;
        let stats = stats_of(path, 0, Vec::new());
        return Ok(JournaledSource::new(
            ResumedSource::fresh(inner),
            writer,
            stats,
        ));
    }
    let refuse = |why: String| {
        RunError::setup(format!(
            "cannot resume from the journal {}: {why}",
            path.display()
        ))
    };
    let problem = inner.problem();
    problem.check_resumable().map_err(&refuse)?;
    if problem.iterations_completed().is_some() {
        return Err(refuse(
            "the problem is iterative: each iteration's tasks are made from the last one's \
             results, which a replay of the journal does not give back in their iterations"
                .into(),
        ));
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut file| file.read_to_end(&mut bytes))
        .map_err(|e| failed("read it", e))?;
    let scan = journal::scan(&bytes).map_err(|e| refuse(e.to_string()))?;
    let differences = scan.header.differences(&now);
    if !differences.is_empty() {
        return Err(refuse(format!(
            "it was written by another run:\n  {}",
            differences.join("\n  ")
        )));
    }
    if let Some(torn) = &scan.torn {
        tracing::warn!(
            offset = torn.offset,
            bytes = torn.bytes,
            reason = %torn.reason,
            "the journal's tail was torn (a crash before its last sync): cut there"
        );
    }
    let started: Vec<f64> = scan
        .records
        .iter()
        .filter_map(|record| match record {
            Record::Started { unix_s } => Some(*unix_s),
            _ => None,
        })
        .collect();
    let source = ResumedSource::replay(inner, &scan.records)?;
    let replayed = source.gathered_before();
    let mut file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| failed("open it", e))?;
    file.set_len(scan.good_len as u64)
        .map_err(|e| failed("cut its torn tail", e))?;
    let mut mark = Vec::new();
    journal::append_resumed(&mut mark, now.started_unix_s, replayed);
    journal::seal(&mut mark);
    use std::io::Seek as _;
    file.seek(std::io::SeekFrom::End(0))
        .and_then(|_| file.write_all(&mark))
        .and_then(|()| file.sync_all())
        .map_err(|e| failed("append to it", e))?;
    tracing::info!(
        replayed,
        journal = %path.display(),
        "resumed: the journal's results are gathered, the run hands out the tasks it lacks"
    );
    let policy = policy(&config.run, path, (scan.good_len + mark.len()) as u64);
    let writer = JournalWriter::start(file, policy).map_err(|e| failed("start", e))?;
    let stats = stats_of(path, replayed, started);
    Ok(JournaledSource::new(source, writer, stats))
}

/// The writer's policy from `[run]`, its synced length noted in `PATH.synced` from `synced` on.
fn policy(run: &RunConfig, path: &Path, synced: u64) -> SyncPolicy {
    let mut mark = path.as_os_str().to_owned();
    mark.push(".synced");
    SyncPolicy {
        interval: Duration::from_secs_f64(run.journal_sync_s),
        max_unsynced: usize::try_from(run.journal_sync_bytes).unwrap_or(usize::MAX),
        synced_mark: Some((PathBuf::from(mark), synced)),
    }
}

fn stats_of(path: &Path, resumed_tasks: u64, started_unix_s: Vec<f64>) -> JournalStats {
    JournalStats {
        path: path.display().to_string(),
        resumed_tasks,
        started_unix_s,
        records: 0,
        failed: None,
    }
}

/// The journal's folder synced, so that the new file's name survives a crash too.
fn sync_folder(path: &Path) {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(folder) = File::open(folder) {
            let _ = folder.sync_all();
        }
    }
}

/// SHA-256 of the running binary, hex.
fn binary_sha256() -> Result<String, RunError> {
    let exe = std::env::current_exe()
        .map_err(|e| RunError::setup(format!("cannot find this binary: {e}")))?;
    let bytes = std::fs::read(&exe)
        .map_err(|e| RunError::setup(format!("cannot read {}: {e}", exe.display())))?;
    Ok(sha256_hex(&bytes))
}

/// SHA-256 of `bytes`, in hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
