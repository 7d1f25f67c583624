//! `hmw-transport`: how the ranks of one cluster exchange messages.
//!
//! Two implementations: [`mpi::MpiTransport`] over MPI for real runs, and
//! [`local::LocalTransport`] (threads and channels) so a whole cluster can run inside one
//! process, for tests and for trying an application without `mpirun`.
//!
//! Sends never block on the receiver, so two ranks sending to each other at once cannot
//! deadlock. Waiting never spins: an idle rank sleeps (see [`idle`]).

pub mod idle;
pub mod local;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod shared;

use std::time::Duration;

/// A message and the rank that sent it.
#[derive(Debug)]
pub struct Envelope {
    /// The sender's rank.
    pub from: usize,
    /// The message.
    pub bytes: Vec<u8>,
}

/// A transport failure.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A send to a rank outside the job.
    #[error("rank {to} does not exist (the job has {size} ranks)")]
    NoSuchRank {
        /// The rank addressed.
        to: usize,
        /// Ranks in the job.
        size: usize,
    },
    /// The rank's end of the transport is gone.
    #[error("rank {0} has gone away")]
    Disconnected(usize),
    /// Another rank failed and stopped the whole cluster.
    #[error("stopped: another rank of the cluster failed")]
    Aborted,
    /// A message from or for a process holding several ranks did not name one of them.
    #[error("a message of process {process} does not name one of its ranks")]
    BadTrailer {
        /// The process of the MPI job.
        process: usize,
    },
    /// A rank of a shared process addressed another rank than the master, or another than
    /// the master addressed it.
    #[error(
        "rank {from} sent to rank {to}: the ranks of a shared process talk to the master only"
    )]
    NotToMaster {
        /// The sender.
        from: usize,
        /// The rank it addressed.
        to: usize,
    },
}

/// What a rank has called when a message arrives for it ([`Transport::on_arrival`]).
pub type ArrivalHook = std::sync::Arc<dyn Fn() + Send + Sync>;

/// Point-to-point messages between the ranks of one cluster.
pub trait Transport {
    /// This rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Send `bytes` to rank `to`. Returns once the message is queued; never waits for the
    /// receiver. Messages between two ranks arrive in the order they were sent.
    fn send(&mut self, to: usize, bytes: Vec<u8>) -> Result<(), TransportError>;
    /// A message that has already arrived, if any.
    fn try_recv(&mut self) -> Result<Option<Envelope>, TransportError>;
    /// Wait up to `timeout` for a message, without burning the CPU. The wait may last the
    /// whole `timeout` even when a message arrives earlier: callers pass short timeouts
    /// (see [`idle`]). A zero timeout polls once (and may yield the CPU).
    fn wait(&mut self, timeout: Duration) -> Result<Option<Envelope>, TransportError>;
    /// Whether [`wait`](Self::wait) returns as soon as a message arrives (a blocking receive),
    /// rather than polling at the end of its timeout: then an idle rank may wait long without
    /// delaying a message. Default: no (MPI cannot wake a sleeping thread).
    fn wakes_on_arrival(&self) -> bool {
        false
    }
    /// Have `hook` called each time a message arrives for this rank, so that a loop waiting
    /// on something else too (a CM on its WAN link) is woken for it. Whether the transport
    /// can: default no.
    fn on_arrival(&mut self, _hook: ArrivalHook) -> bool {
        false
    }
    /// Wait until every message this rank sent has left its buffers.
    fn flush(&mut self) -> Result<(), TransportError>;
    /// A received message's buffer, no longer needed: the transport may receive the next
    /// message into it rather than allocate one. Default: dropped.
    fn recycle(&mut self, bytes: Vec<u8>) {
        drop(bytes);
    }
    /// The buffer of a message sent that the transport no longer reads, if it has one: the
    /// caller may encode another message into it rather than allocate one. Default: none.
    fn reclaim(&mut self) -> Option<Vec<u8>> {
        None
    }
}
