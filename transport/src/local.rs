//! The in-process transport: each rank is a thread, messages go through channels.
//!
//! It behaves like the MPI transport (per-pair ordering, non-blocking sends, sleeping waits),
//! so every role runs unchanged on it: tests need no `mpirun`, and `--threads` runs a whole
//! cluster in one process.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, OnceLock,
    },
    time::Duration,
};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender, TryRecvError};

use crate::{ArrivalHook, Envelope, Transport, TransportError};

/// One rank's end of an in-process cluster.
pub struct LocalTransport {
    rank: usize,
    peers: Vec<Sender<Envelope>>,
    inbox: Receiver<Envelope>,
    /// Set when a rank failed: every rank's next receive fails, as `MPI_Abort` ends a job.
    aborted: Arc<AtomicBool>,
    /// Each rank's [`Transport::on_arrival`] hook, called by its senders.
    hooks: Arc<[OnceLock<ArrivalHook>]>,
}

impl LocalTransport {
    /// The transports of an in-process cluster of `size` ranks, in rank order.
    pub fn cluster(size: usize) -> Vec<LocalTransport> {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..size).map(|_| unbounded()).unzip();
        let aborted = Arc::new(AtomicBool::new(false));
        let hooks: Arc<[OnceLock<ArrivalHook>]> = (0..size).map(|_| OnceLock::new()).collect();
        receivers
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| LocalTransport {
                rank,
                peers: senders.clone(),
                inbox,
                aborted: aborted.clone(),
                hooks: hooks.clone(),
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
        .map_err(|_| TransportError::Disconnected(to))?;
        if let Some(hook) = self.hooks[to].get() {
            hook();
        }
        Ok(())
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

    fn wakes_on_arrival(&self) -> bool {
        true
    }

    /// One hook per rank: a second call keeps the first.
    fn on_arrival(&mut self, hook: ArrivalHook) -> bool {
        self.hooks[self.rank].set(hook).is_ok()
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank waiting long on the in-process transport is woken by a message at once: its idle
    /// backoff may be `MAX_PAUSE_WOKEN_ON_ARRIVAL` without delaying messages.
    #[test]
    fn a_long_wait_ends_when_a_message_arrives() {
        let mut ranks = LocalTransport::cluster(2);
        let mut one = ranks.pop().unwrap();
        let mut zero = ranks.pop().unwrap();
        let mut idle = crate::idle::Idle::for_transport(&zero);
        assert_eq!(idle.next_pause(), crate::idle::MAX_PAUSE_WOKEN_ON_ARRIVAL);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            one.send(0, vec![9]).unwrap();
        });
        let start = std::time::Instant::now();
        let envelope = zero.wait(Duration::from_secs(10)).unwrap().unwrap();
        assert_eq!(envelope.bytes, vec![9]);
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        sender.join().unwrap();
    }

    #[test]
    fn a_rank_s_hook_is_called_for_each_message_it_is_sent() {
        let mut ranks = LocalTransport::cluster(2);
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = calls.clone();
        assert!(ranks[1].on_arrival(Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })));
        ranks[0].send(1, vec![1]).unwrap();
        ranks[0].send(1, vec![2]).unwrap();
        ranks[1].send(0, vec![3]).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

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
