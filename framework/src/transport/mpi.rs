//! The MPI transport (rsmpi over OpenMPI) used by real runs.
//!
//! Sends are non-blocking (`MPI_Isend`): a master sending a large task to a worker that is
//! itself sending a large result cannot deadlock. Receives probe (`MPI_Improbe`) and sleep
//! between probes instead of spinning in MPI's progress loop.
//!
//! Only the thread that created the transport calls MPI (`MPI_THREAD_FUNNELED`).

use std::time::Duration;

use mpi::{
    collective::SystemOperation,
    environment::Universe,
    point_to_point::MatchedReceiveVec,
    request::{Request, StaticScope},
    topology::SimpleCommunicator,
    traits::*,
    Threading,
};

use super::{Envelope, Transport, TransportError};
use crate::idle::{self, Idle};

/// A send in progress: the request and the buffer it reads from.
struct PendingSend {
    request: Request<'static, [u8]>,
    /// The message's `Vec`, taken apart (pointer, length, capacity) and leaked into `request`
    /// until the send completes; kept whole, so sending never reallocates it.
    buffer: (*mut u8, usize, usize),
}

impl PendingSend {
    fn start(world: &SimpleCommunicator, to: usize, bytes: Vec<u8>) -> Self {
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        let buffer = (bytes.as_mut_ptr(), bytes.len(), bytes.capacity());
        // SAFETY: the buffer stays allocated until `finish` rebuilds and frees the `Vec`, which
        // happens only after MPI reported the send complete.
        let message: &'static [u8] = unsafe { std::slice::from_raw_parts(buffer.0, buffer.1) };
        let request = world
            .process_at_rank(to as i32)
            .immediate_send(StaticScope, message);
        PendingSend { request, buffer }
    }

    /// Free the buffer of a completed send.
    fn finish((pointer, length, capacity): (*mut u8, usize, usize)) {
        // SAFETY: the parts came from a `Vec` in `start`, and MPI no longer reads it.
        drop(unsafe { Vec::from_raw_parts(pointer, length, capacity) });
    }

    /// `None` once complete (buffer freed), otherwise the still-pending send.
    fn test(self) -> Option<Self> {
        let buffer = self.buffer;
        match self.request.test() {
            Ok(_) => {
                Self::finish(buffer);
                None
            }
            Err(request) => Some(PendingSend { request, buffer }),
        }
    }

    fn wait(self) {
        self.request.wait();
        Self::finish(self.buffer);
    }
}

/// MPI point-to-point messages on `MPI_COMM_WORLD`.
pub struct MpiTransport {
    pending: Vec<PendingSend>,
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    // Declared last: finalizes MPI after everything else is dropped.
    _universe: Universe,
}

impl MpiTransport {
    /// Initialise MPI. Returns `None` when MPI was already initialised in this process.
    pub fn init() -> Option<Self> {
        let (universe, _threading) = mpi::initialize_with_threading(Threading::Funneled)?;
        let world = universe.world();
        Some(MpiTransport {
            pending: Vec::new(),
            rank: world.rank() as usize,
            size: world.size() as usize,
            world,
            _universe: universe,
        })
    }

    /// Collective: every rank says whether it is ready (`ok`); returns whether all are, and
    /// whether rank 0 is. Lets all ranks refuse to start together when any of them found its
    /// configuration bad, and lets the master speak for all when it failed too.
    pub fn all_agree(&self, ok: bool, is_root: bool) -> (bool, bool) {
        let mine = [i32::from(ok), i32::from(ok || !is_root)];
        let mut all = [0i32; 2];
        self.world
            .all_reduce_into(&mine[..], &mut all[..], SystemOperation::logical_and());
        (all[0] != 0, all[1] != 0)
    }

    /// Collective: every rank gives its host name; rank 0 gets them all, in rank order (each
    /// cut to 255 bytes), the others `None`.
    pub fn gather_hosts(&self, mine: &str) -> Option<Vec<String>> {
        const WIDTH: usize = 256;
        let mut buffer = [0u8; WIDTH];
        let bytes = &mine.as_bytes()[..mine.len().min(WIDTH - 1)];
        buffer[..bytes.len()].copy_from_slice(bytes);
        let root = self.world.process_at_rank(0);
        if self.rank != 0 {
            root.gather_into(&buffer[..]);
            return None;
        }
        let mut all = vec![0u8; WIDTH * self.size];
        root.gather_into_root(&buffer[..], &mut all[..]);
        Some(
            all.chunks(WIDTH)
                .map(|name| {
                    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
                    String::from_utf8_lossy(&name[..end]).into_owned()
                })
                .collect(),
        )
    }

    /// End the whole MPI job (every rank) with `code`.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// Free the buffers of the sends that have completed (their order does not matter: MPI
    /// fixed the message order when each send started).
    fn progress_sends(&mut self) {
        for i in (0..self.pending.len()).rev() {
            let send = self.pending.swap_remove(i);
            if let Some(still_pending) = send.test() {
                self.pending.push(still_pending);
            }
        }
    }
}

impl Transport for MpiTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn send(&mut self, to: usize, bytes: Vec<u8>) -> Result<(), TransportError> {
        if to >= self.size {
            return Err(TransportError::NoSuchRank {
                to,
                size: self.size,
            });
        }
        self.pending
            .push(PendingSend::start(&self.world, to, bytes));
        self.progress_sends();
        Ok(())
    }

    fn try_recv(&mut self) -> Result<Option<Envelope>, TransportError> {
        self.progress_sends();
        Ok(self
            .world
            .any_process()
            .immediate_matched_probe()
            .map(|matched| {
                let (bytes, status) = matched.matched_receive_vec::<u8>();
                Envelope {
                    from: status.source_rank() as usize,
                    bytes,
                }
            }))
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Envelope>, TransportError> {
        // MPI cannot wake a sleeping thread when a message arrives: poll, sleep, poll.
        if let Some(envelope) = self.try_recv()? {
            return Ok(Some(envelope));
        }
        if timeout.is_zero() {
            // The probe has just given MPI's progress engine its turn, which yields the CPU
            // when ranks outnumber cores: a yield of ours would double the system calls.
            return Ok(None);
        }
        idle::pause(timeout);
        self.try_recv()
    }

    fn flush(&mut self) -> Result<(), TransportError> {
        let mut idle = Idle::default();
        while {
            self.progress_sends();
            !self.pending.is_empty()
        } {
            idle::pause(idle.next_pause());
        }
        Ok(())
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        for send in self.pending.drain(..) {
            send.wait();
        }
    }
}
