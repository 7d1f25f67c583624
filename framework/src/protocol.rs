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
    /// the deadline); the master takes back every task outstanding there.
    Lost,
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
                body: vec![9; 1000],
            },
            room: 1,
        };
        let bytes = encode(&result);
        assert!(bytes.len() < 1000 + 32, "bodies are encoded as raw bytes");
        assert_eq!(decode::<ToMaster>(&bytes, "result").unwrap(), result);
    }

    proptest::proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(0u8.., 0..64)) {
            let _ = decode::<ToMaster>(&bytes, "message");
            let _ = decode::<ToWorker>(&bytes, "message");
        }
    }
}
