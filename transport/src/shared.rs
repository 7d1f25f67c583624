//! Ranks over processes: a machine file's ranks when some of them share a process of the MPI
//! job (CMs facing the master that name one `process=`: [`ProcessMap`]).
//!
//! The job's transport addresses processes. [`ByProcess`] gives a process that holds one rank
//! (the master, a worker) the machine file's ranks instead. A message to or from a rank of a
//! shared process carries that rank in a 4-byte trailer (little-endian), which the other end
//! takes off: a message between ranks of their own processes is sent as it is. In a shared
//! process, [`SharedProcess`] routes between the job's transport and one in-process
//! transport per rank ([`Member`]), on which each rank's role runs on a thread of its own as it
//! would in a process of its own. The ranks of a shared process talk to the master only.

use std::time::Duration;

use hmw_core::machinefile::{ProcessMap, MASTER};

use crate::{idle::Idle, local::LocalTransport, ArrivalHook, Envelope, Transport, TransportError};

/// Bytes of the trailer naming a rank of a shared process.
const TRAILER: usize = 4;

/// Add the trailer naming `rank` to `bytes`.
fn seal(mut bytes: Vec<u8>, rank: usize) -> Vec<u8> {
    bytes.extend_from_slice(&(rank as u32).to_le_bytes());
    bytes
}

/// Take the trailer off a message from or for a rank of `process`, one of `ranks`; the rank.
fn unseal(bytes: &mut Vec<u8>, process: usize, ranks: &[usize]) -> Result<usize, TransportError> {
    let bad = || TransportError::BadTrailer { process };
    let at = bytes.len().checked_sub(TRAILER).ok_or_else(bad)?;
    let rank = u32::from_le_bytes(bytes[at..].try_into().expect("four bytes")) as usize;
    if ranks.binary_search(&rank).is_err() {
        return Err(bad());
    }
    bytes.truncate(at);
    Ok(rank)
}

/// The transport of a process holding one rank, addressing the machine file's ranks over a
/// job whose processes hold several.
pub struct ByProcess<'a> {
    inner: &'a mut dyn Transport,
    processes: &'a ProcessMap,
    rank: usize,
}

impl<'a> ByProcess<'a> {
    /// `inner`, the job's transport (its ranks are processes), over `processes`.
    pub fn new(inner: &'a mut dyn Transport, processes: &'a ProcessMap) -> Self {
        let rank = processes.first_rank(inner.rank());
        ByProcess {
            inner,
            processes,
            rank,
        }
    }

    fn by_rank(&self, envelope: Option<Envelope>) -> Result<Option<Envelope>, TransportError> {
        let Some(Envelope { from, mut bytes }) = envelope else {
            return Ok(None);
        };
        let from = match self.processes.shared_ranks(from) {
            Some(ranks) => unseal(&mut bytes, from, ranks)?,
            None => self.processes.first_rank(from),
        };
        Ok(Some(Envelope { from, bytes }))
    }
}

impl Transport for ByProcess<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.processes.rank_count()
    }

    fn send(&mut self, to: usize, bytes: Vec<u8>) -> Result<(), TransportError> {
        if to >= self.size() {
            return Err(TransportError::NoSuchRank {
                to,
                size: self.size(),
            });
        }
        let process = self.processes.process_of(to);
        let bytes = match self.processes.shared_ranks(process) {
            Some(_) => seal(bytes, to),
            None => bytes,
        };
        self.inner.send(process, bytes)
    }

    fn try_recv(&mut self) -> Result<Option<Envelope>, TransportError> {
        let envelope = self.inner.try_recv()?;
        self.by_rank(envelope)
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Envelope>, TransportError> {
        let envelope = self.inner.wait(timeout)?;
        self.by_rank(envelope)
    }

    fn wakes_on_arrival(&self) -> bool {
        self.inner.wakes_on_arrival()
    }

    fn on_arrival(&mut self, hook: ArrivalHook) -> bool {
        self.inner.on_arrival(hook)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        self.inner.flush()
    }

    fn recycle(&mut self, bytes: Vec<u8>) {
        self.inner.recycle(bytes);
    }

    fn reclaim(&mut self) -> Option<Vec<u8>> {
        self.inner.reclaim()
    }
}

/// One rank of a shared process: its messages go to and come from the master through the
/// process's [`SharedProcess`]. It wakes on arrival, so its role may wait long on something
/// else (a CM on its link) without delaying the master's messages.
pub struct Member {
    local: LocalTransport,
    rank: usize,
    ranks: usize,
}

impl Transport for Member {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.ranks
    }

    fn send(&mut self, to: usize, bytes: Vec<u8>) -> Result<(), TransportError> {
        if to != MASTER {
            return Err(TransportError::NotToMaster {
                from: self.rank,
                to,
            });
        }
        self.local.send(0, bytes)
    }

    fn try_recv(&mut self) -> Result<Option<Envelope>, TransportError> {
        Ok(self.local.try_recv()?.map(from_master))
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Envelope>, TransportError> {
        Ok(self.local.wait(timeout)?.map(from_master))
    }

    fn wakes_on_arrival(&self) -> bool {
        true
    }

    fn on_arrival(&mut self, hook: ArrivalHook) -> bool {
        self.local.on_arrival(hook)
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        Ok(())
    }
}

/// A message the router passed on: from the master, the only rank a member hears from.
fn from_master(envelope: Envelope) -> Envelope {
    Envelope {
        from: MASTER,
        bytes: envelope.bytes,
    }
}

/// The router of a shared process: passes the master's messages to its ranks and theirs to
/// the master, over the job's transport. Runs on the thread that owns that transport (MPI's),
/// the one poller of the job's transport for all the process's ranks.
pub struct SharedProcess<'a> {
    inner: &'a mut dyn Transport,
    /// Local rank 0; local rank `i + 1` is `ranks[i]`.
    local: LocalTransport,
    ranks: &'a [usize],
}

impl<'a> SharedProcess<'a> {
    /// The router of the process holding `ranks` (in rank order) of a machine file of
    /// `rank_count` ranks, over `inner`, and the transport of each of its ranks, in order.
    pub fn new(
        inner: &'a mut dyn Transport,
        ranks: &'a [usize],
        rank_count: usize,
    ) -> (Self, Vec<Member>) {
        let mut locals = LocalTransport::cluster(ranks.len() + 1).into_iter();
        let local = locals.next().expect("the router's end");
        let members = locals
            .zip(ranks)
            .map(|(local, &rank)| Member {
                local,
                rank,
                ranks: rank_count,
            })
            .collect();
        (
            SharedProcess {
                inner,
                local,
                ranks,
            },
            members,
        )
    }

    /// Pass messages both ways until `finished` says the ranks are all done, then pass what
    /// they sent last and flush. Polls the job's transport between pauses that a member's
    /// message ends at once.
    pub fn route(&mut self, mut finished: impl FnMut() -> bool) -> Result<(), TransportError> {
        let mut idle = Idle::default();
        loop {
            let done = finished();
            let mut active = self.pass_to_members()?;
            while let Some(envelope) = self.local.try_recv()? {
                self.pass_to_master(envelope)?;
                active = true;
            }
            if done {
                break;
            }
            if active {
                idle.reset();
            } else if let Some(envelope) = self.local.wait(idle.next_pause())? {
                self.pass_to_master(envelope)?;
                idle.reset();
            }
        }
        self.inner.flush()
    }

    /// Pass what the master sent to the ranks; whether anything came.
    fn pass_to_members(&mut self) -> Result<bool, TransportError> {
        let mut any = false;
        while let Some(Envelope { from, mut bytes }) = self.inner.try_recv()? {
            any = true;
            let process = from;
            if process != MASTER {
                return Err(TransportError::NotToMaster {
                    from: process,
                    to: self.ranks[0],
                });
            }
            // A trailer that names none of this process's ranks: the error names this process.
            let rank = unseal(&mut bytes, self.inner.rank(), self.ranks)?;
            let index = self.ranks.binary_search(&rank).expect("unseal checked it");
            match self.local.send(index + 1, bytes) {
                // The rank has ended: as a message to a process that has.
                Err(TransportError::Disconnected(_)) => {}
                sent => sent?,
            }
        }
        Ok(any)
    }

    fn pass_to_master(&mut self, envelope: Envelope) -> Result<(), TransportError> {
        let rank = self.ranks[envelope.from - 1];
        self.inner.send(MASTER, seal(envelope.bytes, rank))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw_core::machinefile::MachineFile;

    /// A master, a worker and two CMs sharing a process, over an in-process job of three
    /// processes: each message reaches the rank it is for, and replies name their sender.
    #[test]
    fn messages_reach_the_ranks_of_a_shared_process_and_back() {
        let file = MachineFile::parse(
            std::path::Path::new("hosts"),
            "m\nw\nc # M 1 7000 name=x process=links\nc # M 1 7001 name=y process=links\n",
        )
        .unwrap();
        let processes = &file.processes;
        assert_eq!(processes.count(), 3);
        let mut job = LocalTransport::cluster(3).into_iter();
        let (mut master, mut worker, mut shared) = (
            job.next().unwrap(),
            job.next().unwrap(),
            job.next().unwrap(),
        );
        let shared_ranks = processes.shared_ranks(2).unwrap().to_vec();
        let router = std::thread::spawn(move || {
            let (mut router, members) = SharedProcess::new(&mut shared, &shared_ranks, 4);
            let echoes: Vec<_> = members
                .into_iter()
                .map(|mut member| {
                    std::thread::spawn(move || {
                        let envelope = member.wait(Duration::from_secs(10)).unwrap().unwrap();
                        assert_eq!(envelope.from, MASTER);
                        let mut reply = envelope.bytes;
                        reply.push(member.rank() as u8);
                        member.send(MASTER, reply).unwrap();
                        assert!(
                            member.send(1, vec![]).is_err(),
                            "a member talks to the master only"
                        );
                    })
                })
                .collect();
            router
                .route(|| echoes.iter().all(|e| e.is_finished()))
                .unwrap();
        });
        let mut by_process = ByProcess::new(&mut master, processes);
        assert_eq!((by_process.rank(), by_process.size()), (0, 4));
        for rank in [3, 2, 1] {
            by_process.send(rank, vec![rank as u8 * 10]).unwrap();
        }
        let to_worker = worker.wait(Duration::from_secs(10)).unwrap().unwrap();
        assert_eq!(
            (to_worker.from, to_worker.bytes),
            (0, vec![10]),
            "no trailer"
        );
        worker.send(0, vec![11]).unwrap();
        let mut got = Vec::new();
        while got.len() < 3 {
            if let Some(e) = by_process.wait(Duration::from_millis(100)).unwrap() {
                got.push((e.from, e.bytes));
            }
        }
        got.sort();
        assert_eq!(got, vec![(1, vec![11]), (2, vec![20, 2]), (3, vec![30, 3])]);
        router.join().unwrap();
    }

    #[test]
    fn a_trailer_naming_another_process_s_rank_is_refused() {
        let mut short = vec![1, 2];
        assert!(unseal(&mut short, 2, &[2, 4]).is_err());
        let mut wrong = seal(vec![7], 3);
        assert!(matches!(
            unseal(&mut wrong, 2, &[2, 4]),
            Err(TransportError::BadTrailer { process: 2 })
        ));
        let mut right = seal(vec![7], 4);
        assert_eq!(
            (unseal(&mut right, 2, &[2, 4]).unwrap(), right),
            (4, vec![7])
        );
    }
}
