//! A master's task source whose results are journaled as they are gathered.

use hmw_core::{
    app::{Recipient, TaskId},
    journal,
    protocol::ResultRef,
    roles::{Next, TaskSource},
    stats::JournalStats,
    CoreError,
};

use super::writer::JournalWriter;

/// `inner`, every result it gathers first appended to the journal, and every task it
/// redivides noted there (a journal that notes one cannot be resumed: see
/// `Problem::check_resumable`).
pub(crate) struct JournaledSource<S> {
    inner: S,
    writer: JournalWriter,
    stats: JournalStats,
    /// Records appended that are not results (the clock's start, a task redivided).
    marks: u64,
}

impl<S> JournaledSource<S> {
    pub(crate) fn new(inner: S, writer: JournalWriter, stats: JournalStats) -> Self {
        JournaledSource {
            inner,
            writer,
            stats,
            marks: 0,
        }
    }

    /// Every record written and synced: the source, and what the journal holds.
    pub(crate) fn close(self) -> (S, JournalStats) {
        let mut stats = self.stats;
        match self.writer.close() {
            Ok(records) => stats.records = records.saturating_sub(self.marks),
            Err(error) => stats.failed = Some(error),
        }
        (self.inner, stats)
    }
}

impl<S: TaskSource> TaskSource for JournaledSource<S> {
    fn next_task(&mut self, id: TaskId) -> Next {
        self.inner.next_task(id)
    }

    fn next_task_for(&mut self, id: TaskId, to: Recipient<'_>) -> Next {
        self.inner.next_task_for(id, to)
    }

    fn gather(&mut self, result: ResultRef<'_>) -> Result<(), CoreError> {
        self.writer
            .append(|buffer| journal::append_gathered(buffer, &result));
        self.inner.gather(result)
    }

    fn redivide(&mut self, id: TaskId, body: &[u8]) -> Option<Vec<(f64, Vec<u8>)>> {
        let parts = self.inner.redivide(id, body)?;
        self.writer
            .append(|buffer| journal::append_redivided(buffer, id, parts.len() as u64));
        self.marks += 1;
        Some(parts)
    }

    fn adopt(&mut self, ids: &[TaskId]) -> bool {
        self.inner.adopt(ids)
    }

    fn task_count(&self) -> Option<u64> {
        self.inner.task_count()
    }

    fn later_tasks_may_do_less(&self) -> bool {
        self.inner.later_tasks_may_do_less()
    }

    fn join_s(&self) -> f64 {
        self.inner.join_s()
    }

    fn iterations_completed(&self) -> Option<u64> {
        self.inner.iterations_completed()
    }

    fn set_active_workers(&mut self, workers: usize) {
        self.inner.set_active_workers(workers);
    }

    fn run_started(&mut self, unix_s: f64) {
        self.writer
            .append(|buffer| journal::append_started(buffer, unix_s));
        self.marks += 1;
        self.stats.started_unix_s.push(unix_s);
        self.inner.run_started(unix_s);
    }

    fn recycle(&mut self, buffer: Vec<u8>) {
        self.inner.recycle(buffer);
    }
}
