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

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::{app::TaskId, stats::ClusterReport};

/// A serialised task, as the master hands it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireTask {
    pub id: TaskId,
    /// Basic operations of the task (`Task::operations`).
    pub operations: f64,
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// A serialised result, as a worker returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireResult {
    /// The tasks this result stands for: one, or several joined by a sub-master.
    pub ids: Vec<TaskId>,
    pub operations: f64,
    /// Seconds spent executing the tasks.
    pub busy_s: f64,
    /// Seconds spent decoding the tasks (reading them) and encoding their results (writing
    /// them) on the worker, beside `busy_s`.
    pub decode_s: f64,
    pub encode_s: f64,
    #[serde(with = "serde_bytes")]
    pub body: Vec<u8>,
}

/// Master to worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// A batch of tasks (one task with the on-demand scheduler).
    Tasks(Vec<WireTask>),
    /// No more work: answer `Bye` and stop.
    Stop,
}

/// [`ToWorker::Tasks`] over borrowed bodies: it encodes to the same bytes, so a master sends
/// the bodies it keeps without copying them first.
#[derive(Serialize)]
pub enum ToWorkerRef<'a> {
    Tasks(Vec<WireTaskRef<'a>>),
}

/// [`WireTask`] over a borrowed body.
#[derive(Serialize)]
pub struct WireTaskRef<'a> {
    pub id: TaskId,
    pub operations: f64,
    #[serde(with = "serde_bytes")]
    pub body: &'a [u8],
}

/// Worker to master.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ToMaster {
    /// Room for `room` more batches.
    Ready { room: u32 },
    /// One result; `room` batches freed with it (1 when it closes a batch).
    Result { result: WireResult, room: u32 },
    /// Acknowledges `Stop`: nothing more will come from this rank. A communication manager
    /// adds the report of the cluster behind it.
    Bye { report: Option<Box<ClusterReport>> },
    /// From a communication manager: the cluster behind it is lost (its link stayed down past
    /// the deadline, or its sub-master reported it could not go on); the master takes back
    /// every task outstanding there. From a sub-master to its communication manager: this
    /// cluster cannot go on.
    Lost,
    /// This rank cannot go on (a task panicked): the run fails with this message.
    Failed { message: String },
    /// From a communication manager facing a master, every second: its link, for the live
    /// prediction.
    Link(LinkState),
}

/// A link to another cluster as its communication manager sees it now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkState {
    pub connected: bool,
    /// Tasks wait on this side of the link (its send buffer is half full or more).
    pub tasks_waiting: bool,
    /// Current throughput each way: tasks out, results in, bytes per second.
    pub send_bytes_per_s: f64,
    pub recv_bytes_per_s: f64,
}

/// A message that could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("undecodable {what} ({len} bytes): {source}")]
pub struct DecodeError {
    pub what: &'static str,
    pub len: usize,
    #[source]
    pub source: bincode::error::DecodeError,
}

/// Encode a value with the framework's bincode configuration.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, bincode::config::standard())
        .expect("bincode encoding of an in-memory value cannot fail")
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
                ids: vec![7],
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
    fn borrowed_tasks_encode_like_owned_ones() {
        let owned = ToWorker::Tasks(vec![
            WireTask {
                id: 3,
                operations: 1.5,
                body: vec![4; 300],
            },
            WireTask {
                id: 9,
                operations: 0.0,
                body: vec![],
            },
        ]);
        let ToWorker::Tasks(tasks) = &owned else {
            unreachable!()
        };
        let borrowed = ToWorkerRef::Tasks(
            tasks
                .iter()
                .map(|t| WireTaskRef {
                    id: t.id,
                    operations: t.operations,
                    body: &t.body,
                })
                .collect(),
        );
        assert_eq!(encode(&borrowed), encode(&owned));
    }

    proptest::proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(0u8.., 0..64)) {
            let _ = decode::<ToMaster>(&bytes, "message");
            let _ = decode::<ToWorker>(&bytes, "message");
        }
    }
}
