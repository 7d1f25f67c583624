//! The in-process transport: each rank is a thread, messages go through channels.
//!
//! It behaves like the MPI transport (per-pair ordering, non-blocking sends, sleeping waits),
//! so every role runs unchanged on it: tests need no `mpirun`, and `--threads` runs a whole
//! cluster in one process.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender, TryRecvError};

use crate::{Envelope, Transport, TransportError};

/// One rank's end of an in-process cluster.
pub struct LocalTransport {
    rank: usize,
    peers: Vec<Sender<Envelope>>,
    inbox: Receiver<Envelope>,
    /// Set when a rank failed: every rank's next receive fails, as `MPI_Abort` ends a job.
    aborted: Arc<AtomicBool>,
}

impl LocalTransport {
    /// The transports of an in-process cluster of `size` ranks, in rank order.
    pub fn cluster(size: usize) -> Vec<LocalTransport> {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..size).map(|_| unbounded()).unzip();
        let aborted = Arc::new(AtomicBool::new(false));
        receivers
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| LocalTransport {
                rank,
                peers: senders.clone(),
                inbox,
                aborted: aborted.clone(),
            })
            .collect()
    }

    /// Stop the whole cluster: every rank's next receive fails with
    /// [`TransportError::Aborted`].
    pub fn abort_cluster(&self) {
        self.aborted.store(true, Ordering::SeqCst);
    }

    fn check_aborted(&self) -> Result<(), TransportError> {
        if self.aborted.load(Ordering::SeqCst) {
            Err(TransportError::Aborted)
        } else {
            Ok(())
        }
    }
}

impl Transport for LocalTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.peers.len()
    }

    fn send(&mut self, to: usize, bytes: Vec<u8>) -> Result<(), TransportError> {
        let peer = self.peers.get(to).ok_or(TransportError::NoSuchRank {
            to,
            size: self.peers.len(),
        })?;
        peer.send(Envelope {
            from: self.rank,
            bytes,
        })
        .map_err(|_| TransportError::Disconnected(to))
    }

    fn try_recv(&mut self) -> Result<Option<Envelope>, TransportError> {
        self.check_aborted()?;
        match self.inbox.try_recv() {
            Ok(envelope) => Ok(Some(envelope)),
            // Every rank holds a sender to every rank, itself included: never disconnected.
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => Ok(None),
        }
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Envelope>, TransportError> {
        self.check_aborted()?;
        match self.inbox.recv_timeout(timeout) {
            Ok(envelope) => Ok(Some(envelope)),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => Ok(None),
        }
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_between_ranks_keep_their_order() {
        let mut ranks = LocalTransport::cluster(3);
        let mut two = ranks.pop().unwrap();
        let mut one = ranks.pop().unwrap();
        for i in 0..10u8 {
            one.send(2, vec![i]).unwrap();
        }
        let got: Vec<u8> = (0..10)
            .map(|_| {
                let e = two.wait(Duration::from_secs(1)).unwrap().unwrap();
                assert_eq!(e.from, 1);
                e.bytes[0]
            })
            .collect();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        assert!(two.try_recv().unwrap().is_none());
        assert!(matches!(
            one.send(7, vec![]),
            Err(TransportError::NoSuchRank { to: 7, size: 3 })
        ));
    }
}
