//! The messages between a master and the ranks it feeds (workers and communication managers),
//! and their encoding (bincode).
//!
//! A rank asks for work with *room*: how many more task batches it can hold. A worker with
//! `worker_buffers = 2` starts with room 2 and gives one back each time it finishes a batch, so
//! the next batch travels while it computes the current one.
//!
//! The same messages cross the WAN: a communication manager forwards the master's
//! [`ToWorker`] messages to the far cluster, whose sub-master answers with [`ToMaster`]
//! messages. A batch sent to a communication manager is one inter-cluster task; a result may
//! join the results of several tasks (`ids`).

mod hot_path;
pub mod pipeline;
pub mod report;

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use smallvec::SmallVec;

use crate::app::TaskId;
use report::ClusterReport;

/// A serialised task, as the master hands it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTask {
    /// The task's identity, unique in the run.
    pub id: TaskId,
    /// Basic operations of the task (`Task::operations`).
    pub operations: f64,
    /// The task, bincode-encoded.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// The tasks a result stands for: one, or several joined by a sub-master; inline up to two,
/// so a worker's result allocates nothing for them.
pub type TaskIds = SmallVec<[TaskId; 2]>;

/// A serialised result, as a worker returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireResult {
    /// The tasks this result stands for: one, or several joined by a sub-master.
    pub ids: TaskIds,
    /// Basic operations of those tasks.
    pub operations: f64,
    /// Seconds spent executing the tasks.
    pub busy_s: f64,
    /// Seconds spent decoding the tasks (reading them) and encoding their results (writing
    /// them) on the worker, beside `busy_s`.
    pub decode_s: f64,
    /// See `decode_s`.
    pub encode_s: f64,
    /// The result, bincode-encoded.
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// A result as a master reads it: its body borrowed from the message it arrived in, its ids
/// inline (one, unless a sub-master joined several), so reading it allocates nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRef<'a> {
    /// As [`WireResult::ids`].
    pub ids: TaskIds,
    /// As [`WireResult::operations`].
    pub operations: f64,
    /// As [`WireResult::busy_s`].
    pub busy_s: f64,
    /// As [`WireResult::decode_s`].
    pub decode_s: f64,
    /// As [`WireResult::encode_s`].
    pub encode_s: f64,
    /// As [`WireResult::body`], borrowed.
    pub body: &'a [u8],
}

/// A message to a master as [`ToMaster::read`] gives it: a result borrowed from the bytes it
/// came in (the hot path), or any message owned.
#[derive(Debug)]
pub enum ToMasterRef<'a> {
    /// `ToMaster::Result`, borrowed.
    Result {
        /// The result.
        result: ResultRef<'a>,
        /// Batches freed.
        room: u32,
    },
    /// Any message (a result too, when it was not read on the hot path).
    Owned(ToMaster),
}

/// Master to worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// A batch of tasks (one task with the on-demand scheduler).
    Tasks(Vec<WireTask>),
    /// No more work: answer `Bye` and stop.
    Stop,
    /// To a sub-master, through its CMs: join up to this many results per inter-cluster
    /// result (`nr`) from now on (re-planning, [`crate::adapt`]).
    Join(u32),
    /// To a sub-master, through its CMs: the master has journaled its results for these
    /// tasks (or needs them no more): it may forget them. Until then it keeps each result it
    /// sent, to send it again to a master started again.
    Journaled(Vec<TaskId>),
    /// To a sub-master, from its CM: the master's side started again; every result not
    /// acknowledged ([`ToWorker::Journaled`]) goes again.
    Resend,
}

/// A [`ToWorker::Tasks`] message written task by task, as a master takes each task out of
/// where it keeps it, into a buffer done with: its bytes are those of [`encode`] (the master's
/// hot path), and no batch of tasks is gathered first.
pub struct BatchWriter {
    bytes: Vec<u8>,
    count: usize,
}

/// [`WireTask`] over a borrowed body.
#[derive(Debug, Clone, Copy)]
pub struct WireTaskRef<'a> {
    /// As [`WireTask::id`].
    pub id: TaskId,
    /// As [`WireTask::operations`].
    pub operations: f64,
    /// As [`WireTask::body`], borrowed.
    pub body: &'a [u8],
}

impl BatchWriter {
    /// An empty batch, written into `buffer` (emptied first).
    pub fn new(mut buffer: Vec<u8>) -> Self {
        hot_path::start_tasks(&mut buffer);
        BatchWriter {
            bytes: buffer,
            count: 0,
        }
    }

    /// Add `task` to the batch.
    pub fn push(&mut self, task: WireTaskRef<'_>) {
        hot_path::put_task(&mut self.bytes, task);
        self.count += 1;
    }

    /// Tasks in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// No task in the batch.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The message's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        hot_path::end_tasks(&mut self.bytes, self.count);
        self.bytes
    }

    /// The buffer, for another use, when the batch is not sent.
    pub fn into_buffer(self) -> Vec<u8> {
        self.bytes
    }
}

impl ToWorker {
    /// Decode a message to a worker (a batch of tasks on the hot path, without serde); `what`
    /// names it in the error.
    pub fn decode(bytes: &[u8], what: &'static str) -> Result<ToWorker, DecodeError> {
        hot_path::decode_tasks(bytes).map_or_else(|| decode(bytes, what), Ok)
    }

    /// Read a batch of tasks from `bytes` without serde, giving each to `task` in order, the
    /// last in `bytes`' own buffer (a worker's hot path: a batch of one allocates nothing);
    /// `Err(bytes)` for any other message, before any task is given.
    pub fn take_tasks(bytes: Vec<u8>, task: impl FnMut(WireTask)) -> Result<(), Vec<u8>> {
        hot_path::take_tasks(bytes, task)
    }
}

impl ToMaster {
    /// Read a message to a master: a result on the hot path, without serde and borrowing its
    /// body from `bytes`; any other message through serde. `what` names it in the error.
    pub fn read<'a>(bytes: &'a [u8], what: &'static str) -> Result<ToMasterRef<'a>, DecodeError> {
        match hot_path::decode_result(bytes) {
            Some((result, room)) => Ok(ToMasterRef::Result { result, room }),
            None => decode(bytes, what).map(ToMasterRef::Owned),
        }
    }
}

impl WireResult {
    /// The bytes of `ToMaster::Result { result: self, room }`, as [`encode`] gives them,
    /// written directly into the body's buffer (a worker's hot path).
    pub fn into_message(self, room: u32) -> Vec<u8> {
        hot_path::encode_result(self, room)
    }

    /// The result as a master reads it.
    pub fn as_ref(&self) -> ResultRef<'_> {
        ResultRef {
            ids: self.ids.clone(),
            operations: self.operations,
            busy_s: self.busy_s,
            decode_s: self.decode_s,
            encode_s: self.encode_s,
            body: &self.body,
        }
    }
}

/// Worker to master.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToMaster {
    /// Room for `room` more batches.
    Ready {
        /// Batches.
        room: u32,
    },
    /// One result; `room` batches freed with it (1 when it closes a batch).
    Result {
        /// The result.
        result: WireResult,
        /// Batches freed.
        room: u32,
    },
    /// Acknowledges `Stop`: nothing more will come from this rank. A communication manager
    /// adds the report of the cluster behind it.
    Bye {
        /// The cluster behind a communication manager.
        report: Option<Box<ClusterReport>>,
    },
    /// From a communication manager: the cluster behind it is lost (its link stayed down past
    /// the deadline, or its sub-master reported it could not go on); the master takes back
    /// every task outstanding there. From a sub-master to its communication manager: this
    /// cluster cannot go on.
    Lost,
    /// From a communication manager whose cluster was lost after its link's deadline: the link
    /// is up again and the cluster's sub-master alive, so the cluster takes new tasks again
    /// (late results of the tasks taken back are discharged as usual).
    Back,
    /// This rank cannot go on (a task panicked): the run fails with this message.
    Failed {
        /// Why, naming the task.
        message: String,
    },
    /// From a communication manager facing a master, every second: its link, for the live
    /// prediction.
    Link(LinkState),
    /// From a worker, once, just before its `Bye`: the CPU time it used.
    Usage(WorkerUsage),
}

/// The CPU time a worker used while it served, from the first task it received to its `Bye`
/// (`hmw calibrate` reads a worker's own communication from it, (100)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerUsage {
    /// CPU seconds of the worker's process from its first task to its last result (to when
    /// it fell idle after it): every thread's, the kernel's work on its behalf in system
    /// calls included. The same window for the fields below.
    pub cpu_s: f64,
    /// CPU seconds of its compute thread, which decodes, executes and encodes the tasks
    /// handed to it (tasks too short for a hand-off run on the communication thread).
    pub compute_cpu_s: f64,
    /// Some of its tasks wait rather than compute ([`crate::Task::waits`]).
    pub tasks_wait: bool,
    /// CPU seconds of its communication thread's pauses while it held every task it asked
    /// for, and of its polls after them that found nothing: its waiting while its tasks
    /// compute, which grows with time rather than with messages.
    pub waiting_cpu_s: f64,
    /// Wall seconds from its first task's arrival to its last result's sending: the time
    /// it worked, over which `cpu_s` bounds the CPU its process can get (`hmw calibrate`,
    /// (106)).
    #[serde(default)]
    pub active_s: f64,
}

/// A link to another cluster as its communication manager sees it now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkState {
    /// The link has a connection.
    pub connected: bool,
    /// Tasks wait on this side of the link (its send buffer is half full or more).
    pub tasks_waiting: bool,
    /// Current throughput each way: tasks out, results in, bytes per second.
    pub send_bytes_per_s: f64,
    /// See `send_bytes_per_s`.
    pub recv_bytes_per_s: f64,
    /// The link's round trip, seconds (smoothed, the largest of its connections'); 0 before
    /// any was measured.
    #[serde(default)]
    pub rtt_s: f64,
    /// Connections that joined again after one was lost, since the start.
    #[serde(default)]
    pub reconnections: u64,
    /// Blocks sent again after the connection carrying them died, since the start.
    #[serde(default)]
    pub blocks_resent: u64,
    /// Packets QUIC declared lost (and sent again), since the start.
    #[serde(default)]
    pub packets_lost: u64,
}

/// A message that could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("undecodable {what} ({len} bytes): {source}")]
pub struct DecodeError {
    /// What the message was meant to be.
    pub what: &'static str,
    /// Its length, bytes.
    pub len: usize,
    /// bincode's error.
    #[source]
    pub source: bincode::error::DecodeError,
}

/// Encode a value with the framework's bincode configuration.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    encode_into(Vec::new(), value)
}

/// [`encode`] into `bytes` (emptied first): a buffer done with, so that encoding need not
/// allocate one.
pub fn encode_into<T: Serialize>(mut bytes: Vec<u8>, value: &T) -> Vec<u8> {
    bytes.clear();
    if bytes.capacity() == 0 {
        // Most control messages fit: a new buffer need not grow while it is written.
        bytes.reserve(128);
    }
    bincode::serde::encode_into_writer(value, Buffer(&mut bytes), bincode::config::standard())
        .expect("bincode encoding of an in-memory value cannot fail");
    bytes
}

/// A `Vec` as bincode's writer.
struct Buffer<'a>(&'a mut Vec<u8>);

impl bincode::enc::write::Writer for Buffer<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> Result<(), bincode::error::EncodeError> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

/// The number of tasks in a [`ToWorker::Tasks`] that [`encode`] or a [`BatchWriter`] wrote,
/// read from its first bytes without decoding the tasks (the rest is not checked); `None` for
/// any other message.
pub fn tasks_in_batch(bytes: &[u8]) -> Option<usize> {
    hot_path::batch_len(bytes)
}

/// The number of tasks a [`ToMaster::Result`] that [`encode`] wrote stands for (its ids), read
/// from its first bytes without decoding the result (the rest is not checked); `None` for any
/// other message.
pub fn tasks_in_result(bytes: &[u8]) -> Option<usize> {
    hot_path::result_len(bytes)
}

/// Decode a value encoded by [`encode`]; `what` names it in the error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &'static str) -> Result<T, DecodeError> {
    bincode::serde::decode_from_slice(bytes, bincode::config::standard())
        .map(|(value, _)| value)
        .map_err(|source| DecodeError {
            what,
            len: bytes.len(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let task = ToWorker::Tasks(vec![WireTask {
            id: 7,
            operations: 2.5,
            body: vec![1, 2, 3],
        }]);
        assert_eq!(decode::<ToWorker>(&encode(&task), "task").unwrap(), task);
        let result = ToMaster::Result {
            result: WireResult {
                ids: smallvec::smallvec![7],
                operations: 2.5,
                busy_s: 0.25,
                decode_s: 0.01,
                encode_s: 0.02,
                body: vec![9; 1000],
            },
            room: 1,
        };
        let bytes = encode(&result);
        assert!(bytes.len() < 1000 + 48, "bodies are encoded as raw bytes");
        assert_eq!(decode::<ToMaster>(&bytes, "result").unwrap(), result);
    }

    #[test]
    fn batches_written_task_by_task_encode_like_owned_ones() {
        // Two tasks, none, and more than a one-byte count holds.
        for count in [2, 0, 300] {
            let tasks: Vec<WireTask> = (0..count)
                .map(|id| WireTask {
                    id: 250 + id,
                    operations: id as f64 / 2.0,
                    body: vec![4; id as usize],
                })
                .collect();
            let mut batch = BatchWriter::new(vec![1; 10]);
            for t in &tasks {
                batch.push(WireTaskRef {
                    id: t.id,
                    operations: t.operations,
                    body: &t.body,
                });
            }
            assert_eq!(batch.len(), tasks.len());
            assert_eq!(batch.finish(), encode(&ToWorker::Tasks(tasks)));
        }
    }

    proptest::proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(0u8.., 0..64)) {
            let _ = decode::<ToMaster>(&bytes, "message");
            let _ = decode::<ToWorker>(&bytes, "message");
        }
    }
}
