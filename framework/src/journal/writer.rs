//! The journal's file and the thread that syncs it: group commit.
//!
//! The master appends each record to a buffer in memory, under a lock, and goes on; a writer
//! thread takes the buffer, seals its records (their checksums: off the master's thread),
//! writes it to the file and syncs the file (`fdatasync`), every
//! record of the interval in one sync. It does so when the oldest record waiting is
//! `sync_interval` old, or as soon as half of `max_unsynced` bytes wait: the other half is the
//! master's room while that sync runs (taking the whole budget at once made the master wait
//! for every sync on a fast stream of results). The master waits for the disk only when
//! `max_unsynced` bytes wait or are being written, so that a crash loses at most:
//!
//! - the records appended in the last `sync_interval` plus the time one write and sync take,
//! - and never more than `max_unsynced` bytes plus one record.

use std::{
    fs::File,
    io::{self, Write as _},
    mem,
    path::PathBuf,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

/// When records waiting in memory are written and synced.
#[derive(Debug, Clone)]
pub(crate) struct SyncPolicy {
    /// The oldest record waits at most this long.
    pub(crate) interval: Duration,
    /// At most this many bytes wait.
    pub(crate) max_unsynced: usize,
    /// A file rewritten with the journal's synced length after each sync (what a crash of
    /// the machine would leave: the fault suite cuts the journal there), and that length
    /// when the writer starts.
    pub(crate) synced_mark: Option<(PathBuf, u64)>,
}

/// What the master and the writer thread share.
struct State {
    /// Records appended and not yet taken by the writer.
    pending: Vec<u8>,
    /// Records in `pending`, and of them results.
    pending_records: u64,
    pending_results: u64,
    /// When the oldest record in `pending` was appended.
    oldest: Option<Instant>,
    /// Bytes the writer is writing and syncing now.
    writing: usize,
    /// Records written and synced, and of them results.
    synced_records: u64,
    synced_results: u64,
    /// No more records: write what waits and stop.
    closing: bool,
    /// The write or sync that failed: journaling stopped there.
    failed: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    /// The writer waits on it for records or the close; the master for room.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in the other thread while holding the lock leaves plain data behind.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The journal's writing end: [`append`](Self::append) records, [`close`](Self::close) at the
/// end.
pub(crate) struct JournalWriter {
    shared: Arc<Shared>,
    max_unsynced: usize,
    /// The writer takes what waits once this much does: half of `max_unsynced`.
    write_at: usize,
    thread: Option<JoinHandle<()>>,
}

impl JournalWriter {
    /// A writer appending to `file` (positioned at its end, everything before synced).
    pub(crate) fn start(file: File, policy: SyncPolicy) -> io::Result<Self> {
        let max_unsynced = policy.max_unsynced;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pending: Vec::with_capacity(max_unsynced.min(1 << 20)),
                pending_records: 0,
                pending_results: 0,
                oldest: None,
                writing: 0,
                synced_records: 0,
                synced_results: 0,
                closing: false,
                failed: None,
            }),
            changed: Condvar::new(),
        });
        let thread = thread::Builder::new().name("hmw-journal".into()).spawn({
            let shared = shared.clone();
            move || write_loop(&shared, file, policy)
        })?;
        Ok(JournalWriter {
            shared,
            max_unsynced,
            write_at: write_at(max_unsynced),
            thread: Some(thread),
        })
    }

    /// Appends one record (a result's when `result`), written into the buffer by `record`.
    /// Waits while `max_unsynced` bytes wait already. After a failed write nothing more is
    /// journaled (said once, when it failed).
    pub(crate) fn append(&self, result: bool, record: impl FnOnce(&mut Vec<u8>)) {
        let mut state = self.shared.lock();
        while state.failed.is_none() && state.pending.len() + state.writing >= self.max_unsynced {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        if state.failed.is_some() {
            return;
        }
        record(&mut state.pending);
        state.pending_records += 1;
        state.pending_results += u64::from(result);
        // The writer needs waking only to start the interval's clock or when enough waits.
        let wake = state.oldest.is_none() || state.pending.len() >= self.write_at;
        if state.oldest.is_none() {
            state.oldest = Some(Instant::now());
        }
        drop(state);
        if wake {
            self.shared.changed.notify_all();
        }
    }

    /// Records on disk so far.
    #[cfg(test)]
    pub(crate) fn synced_records(&self) -> u64 {
        self.shared.lock().synced_records
    }

    /// Results on disk so far.
    pub(crate) fn synced_results(&self) -> u64 {
        self.shared.lock().synced_results
    }

    /// Writes and syncs what waits, and stops the thread: the results it synced, or why the
    /// journal failed.
    pub(crate) fn close(mut self) -> Result<u64, String> {
        self.stop();
        let state = self.shared.lock();
        match &state.failed {
            Some(error) => Err(error.clone()),
            None => Ok(state.synced_results),
        }
    }

    fn stop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for JournalWriter {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How many bytes waiting start a write: half the budget of unsynced bytes (at least one).
fn write_at(max_unsynced: usize) -> usize {
    (max_unsynced / 2).max(1)
}

/// The writer thread: waits until the oldest record is due (or enough wait, or the close),
/// then writes and syncs everything that waits.
fn write_loop(shared: &Shared, mut file: File, policy: SyncPolicy) {
    let write_at = write_at(policy.max_unsynced);
    let mut spare = Vec::new();
    let (mark, mut synced) = policy.synced_mark.clone().unzip();
    let mut synced = synced.take().unwrap_or(0);
    let mut state = shared.lock();
    loop {
        if state.pending.is_empty() {
            if state.closing || state.failed.is_some() {
                return;
            }
            state = shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
            continue;
        }
        let due = state
            .oldest
            .map_or_else(Instant::now, |t| t + policy.interval);
        let now = Instant::now();
        if !state.closing && state.pending.len() < write_at && now < due {
            state = shared
                .changed
                .wait_timeout(state, due - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        let mut batch = mem::replace(&mut state.pending, mem::take(&mut spare));
        let records = mem::take(&mut state.pending_records);
        let results = mem::take(&mut state.pending_results);
        state.oldest = None;
        state.writing = batch.len();
        drop(state);
        hmw_core::journal::seal(&mut batch);
        let written = file.write_all(&batch).and_then(|()| file.sync_data());
        if written.is_ok() {
            synced += batch.len() as u64;
            if let Some(mark) = &mark {
                let _ = std::fs::write(mark, synced.to_string());
            }
        }
        batch.clear();
        spare = batch;
        state = shared.lock();
        state.writing = 0;
        match written {
            Ok(()) => {
                state.synced_records += records;
                state.synced_results += results;
            }
            Err(error) => {
                let message = format!("cannot write the journal: {error}");
                tracing::error!(
                    "{message}; the run goes on without it (a restart would redo what it misses)"
                );
                state.failed = Some(message);
                state.pending.clear();
            }
        }
        shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(dir: &std::path::Path, interval_ms: u64, max: usize) -> (JournalWriter, PathBuf) {
        let path = dir.join("journal");
        let file = File::create(&path).unwrap();
        let policy = SyncPolicy {
            interval: Duration::from_millis(interval_ms),
            max_unsynced: max,
            synced_mark: Some((dir.join("synced"), 0)),
        };
        (JournalWriter::start(file, policy).unwrap(), path)
    }
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hmw-journal-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The loss bound, by time: a record is on disk within the interval (and a write), while
    /// records appended within it share its sync.
    #[test]
    fn a_record_is_synced_within_the_interval() {
        let dir = scratch("interval");
        let (writer, path) = writer(&dir, 200, 1 << 20);
        writer.append(true, |b| b.extend_from_slice(b"first"));
        writer.append(true, |b| b.extend_from_slice(b"second"));
        assert_eq!(
            writer.synced_records(),
            0,
            "group commit: not synced at once"
        );
        let appended = Instant::now();
        while writer.synced_records() < 2 {
            assert!(
                appended.elapsed() < Duration::from_secs(5),
                "not synced within 5 s"
            );
            thread::sleep(Duration::from_millis(5));
        }
        assert!(appended.elapsed() >= Duration::from_millis(150));
        assert_eq!(std::fs::read(&path).unwrap(), b"firstsecond");
        assert_eq!(std::fs::read_to_string(dir.join("synced")).unwrap(), "11");
        assert_eq!(writer.close(), Ok(2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The loss bound, by size: once half of `max_unsynced` bytes wait they are written without
    /// waiting for the interval, and the master never runs further ahead of the disk.
    #[test]
    fn a_full_buffer_is_written_at_once() {
        let dir = scratch("size");
        let (writer, path) = writer(&dir, 60_000, 100);
        for _ in 0..10 {
            writer.append(true, |b| b.extend_from_slice(&[7; 30]));
        }
        // At most 100 bytes plus one record wait; the rest are on disk long before a minute.
        let appended = Instant::now();
        while writer.synced_records() < 7 {
            assert!(appended.elapsed() < Duration::from_secs(5));
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(writer.close(), Ok(10));
        assert_eq!(std::fs::read(&path).unwrap().len(), 300);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_write_stops_the_journal_and_says_why() {
        let dir = scratch("fail");
        // A file opened for reading only: every write fails.
        let path = dir.join("journal");
        std::fs::write(&path, b"").unwrap();
        let file = File::open(&path).unwrap();
        let policy = SyncPolicy {
            interval: Duration::from_millis(1),
            max_unsynced: 10,
            synced_mark: None,
        };
        let writer = JournalWriter::start(file, policy).unwrap();
        for _ in 0..5 {
            writer.append(true, |b| b.extend_from_slice(&[1; 20]));
        }
        let error = writer.close().unwrap_err();
        assert!(error.contains("cannot write the journal"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
