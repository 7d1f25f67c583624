//! The MPI transport (rsmpi over OpenMPI) used by real runs.
//!
//! Sends are non-blocking (`MPI_Isend`): a master sending a large task to a worker that is
//! itself sending a large result cannot deadlock. A receive of up to [`POSTED_BYTES`] from any
//! rank is posted in advance (a persistent request: `MPI_Recv_init` once), tested when the
//! rank looks for a message, and started again (`MPI_Start`) once a message landed in it: a
//! small message (a fine-grained application's every task and result) is matched once and
//! copied once, where a probe and a matched receive matched it twice and copied it through
//! MPI's queue of unexpected messages. The receive is posted again at the next poll, once the
//! rank has answered the message. A larger message is announced by an empty notice through
//! the same receive and follows with a tag of its own, which the posted receive does not
//! take, received in full once the notice is read: the messages from one rank are delivered
//! in the order they were sent, whatever their sizes. Everything travels on `MPI_COMM_WORLD`
//! itself: a duplicate for the bodies had OpenMPI poll its non-blocking collectives (with
//! which it made the duplicate) at every test of every rank. Between tests the rank sleeps
//! instead of spinning in MPI's progress loop.
//!
//! Only the thread that created the transport calls MPI. A worker computes on a thread of its
//! own and a communication manager runs its link's threads, so they ask for
//! `MPI_THREAD_FUNNELED`; rank 0, a master or a sub-master (the machine file's first rank
//! line), runs on one thread and asks for `MPI_THREAD_SINGLE`, which spares it the locks
//! OpenMPI takes in every call at any higher level (`threading_for`; they were 9 % of a
//! busy master's CPU: `docs/benchmarks.md`). The rank is not known before MPI starts; the
//! launcher's environment says it (OpenMPI's `mpirun`, PMIx, MPICH's Hydra, Slurm's `srun`),
//! and a process that finds none asks for `MPI_THREAD_FUNNELED`. A `Problem` may still start
//! threads of its own in the master: they cannot call MPI (hmw gives them no way to), and
//! what OpenMPI does differently at `MPI_THREAD_SINGLE` is not to lock.

use std::time::Duration;

use mpi::{
    collective::SystemOperation,
    environment::Universe,
    ffi,
    point_to_point::{MatchedReceiveVec, Status},
    raw::AsRaw,
    topology::SimpleCommunicator,
    traits::*,
    Threading,
};

use hmw_core::spare::SpareBuffers;

use crate::{
    idle::{self, Idle},
    Envelope, Transport, TransportError,
};

/// A send in progress: the request and the buffer it reads from. Its requests are MPI's own,
/// tested and waited for through `ffi` (rsmpi's wrapper cost a busy rank about 90 instructions
/// per send in its test alone, callgrind).
struct PendingSend {
    request: ffi::MPI_Request,
    /// The message's `Vec`, taken apart (pointer, length, capacity) until the send completes;
    /// kept whole, so sending never reallocates it.
    buffer: (*mut u8, usize, usize),
}

impl PendingSend {
    fn start(comm: &SimpleCommunicator, to: usize, tag: i32, bytes: Vec<u8>) -> Self {
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        let buffer = (bytes.as_mut_ptr(), bytes.len(), bytes.capacity());
        // `MPI_Isend` itself: rsmpi's `process_at_rank` asks MPI for the communicator's size at
        // every send to check `to` (1 % of a busy master's or worker's time, `perf`), which
        // `Transport::send` has checked against the size read once.
        let mut request = std::mem::MaybeUninit::uninit();
        // SAFETY: MPI reads the buffer, which stays allocated until `finish` rebuilds and frees
        // the `Vec`, only after MPI reported the send complete; it writes the request.
        let request = unsafe {
            ffi::MPI_Isend(
                buffer.0.cast_const().cast(),
                i32::try_from(buffer.1).expect("a message under 2 GiB"),
                u8::equivalent_datatype().as_raw(),
                to as i32,
                tag,
                comm.as_raw(),
                request.as_mut_ptr(),
            );
            request.assume_init()
        };
        PendingSend { request, buffer }
    }

    /// The buffer of a completed send, whole again.
    fn finish((pointer, length, capacity): (*mut u8, usize, usize)) -> Vec<u8> {
        // SAFETY: the parts came from a `Vec` in `start`, and MPI no longer reads it.
        unsafe { Vec::from_raw_parts(pointer, length, capacity) }
    }

    /// The buffer once the send is complete, otherwise the still-pending send.
    fn test(mut self) -> Result<Vec<u8>, Self> {
        let mut flag = 0;
        // SAFETY: an active request from `MPI_Isend`; MPI frees it when it reports it complete.
        unsafe { ffi::MPI_Test(&mut self.request, &mut flag, ffi::RSMPI_STATUS_IGNORE) };
        if flag != 0 {
            Ok(Self::finish(self.buffer))
        } else {
            Err(self)
        }
    }

    fn wait(mut self) {
        // SAFETY: as in `test`; MPI frees the request once the send completed.
        unsafe { ffi::MPI_Wait(&mut self.request, ffi::RSMPI_STATUS_IGNORE) };
        drop(Self::finish(self.buffer));
    }
}

/// OpenMPI's parameter that makes its progress engine yield the CPU at every poll, which
/// `mpirun` turns on when ranks outnumber cores. hmw's ranks wait with their own backoff
/// (`crate::idle`: polls for 100 us, then sleeps from 20 us doubling to 2 ms), and a yield
/// inside each poll handed a busy master's core to the ranks it was waiting for, whose own
/// polls handed it back (`docs/benchmarks.md`). Turned off for each hmw rank unless its
/// environment sets it already.
const YIELD_PARAMETER: &str = "OMPI_MCA_mpi_yield_when_idle";

/// The environment variables in which launchers give a process its rank in `MPI_COMM_WORLD`,
/// before `MPI_Init`: OpenMPI's `mpirun`, PMIx, MPICH's Hydra, Slurm's `srun`.
const RANK_VARIABLES: [&str; 4] = [
    "OMPI_COMM_WORLD_RANK",
    "PMIX_RANK",
    "PMI_RANK",
    "SLURM_PROCID",
];

/// This process's rank as its launcher gives it (`var` reads an environment variable).
fn launcher_rank(var: impl Fn(&str) -> Option<String>) -> Option<usize> {
    RANK_VARIABLES
        .iter()
        .find_map(|name| var(name)?.trim().parse().ok())
}

/// The thread support to ask MPI for: none for rank 0 (a master or a sub-master: one thread),
/// calls from the main thread only for any other rank or an unknown one.
fn threading_for(rank: Option<usize>) -> Threading {
    match rank {
        Some(0) => Threading::Single,
        _ => Threading::Funneled,
    }
}

/// The size of the receive posted in advance: a message up to this size arrives whole in it.
const POSTED_BYTES: usize = 4096;

/// The tag of what the posted receive takes: a message sent whole (1 to [`POSTED_BYTES`]
/// bytes), or the empty notice of one sent as a body.
const MESSAGE: i32 = 1;
/// The tag of a body: a message larger than [`POSTED_BYTES`] (or empty), after its notice.
const BODY: i32 = 2;

/// The receive posted in advance: any rank, tag [`MESSAGE`], into a buffer of
/// [`POSTED_BYTES`]. A persistent receive (`MPI_Recv_init`), started again (`MPI_Start`) at the
/// first look for a message after one landed: MPI sets the request up once rather than at
/// every message, as `MPI_Irecv` does, and a rank answers a message before OpenMPI searches its
/// unexpected messages for the next.
struct PostedReceive {
    request: ffi::MPI_Request,
    /// Started and not yet completed.
    active: bool,
    /// The buffer MPI receives into, freed by `Drop` once no receive uses it.
    buffer: *mut [u8],
}

impl PostedReceive {
    fn new(world: &SimpleCommunicator) -> Self {
        let buffer = Box::into_raw(vec![0u8; POSTED_BYTES].into_boxed_slice());
        let mut request = std::mem::MaybeUninit::uninit();
        // SAFETY: the buffer lives until `Drop`, which first completes and frees the request;
        // nothing else reads or writes it while the receive is active (`bytes` reads it only
        // once the receive completed, before it is started again).
        let request = unsafe {
            ffi::MPI_Recv_init(
                buffer.cast::<u8>().cast(),
                POSTED_BYTES as i32,
                u8::equivalent_datatype().as_raw(),
                ffi::RSMPI_ANY_SOURCE,
                MESSAGE,
                world.as_raw(),
                request.as_mut_ptr(),
            );
            request.assume_init()
        };
        let mut posted = PostedReceive {
            request,
            active: false,
            buffer,
        };
        posted.post();
        posted
    }

    fn post(&mut self) {
        debug_assert!(!self.active, "the receive is posted already");
        // SAFETY: an inactive persistent request, started (see `new` for the buffer).
        unsafe { ffi::MPI_Start(&mut self.request) };
        self.active = true;
    }

    /// The status of a message that landed in the buffer, if one did; the receive is then no
    /// longer posted, and the buffer holds the message until the next call, which posts it
    /// again first.
    fn arrived(&mut self) -> Option<Status> {
        if !self.active {
            self.post();
        }
        let mut status = std::mem::MaybeUninit::uninit();
        let mut flag = 0;
        // SAFETY: an active request; MPI writes the flag, and the status when it is set.
        unsafe { ffi::MPI_Test(&mut self.request, &mut flag, status.as_mut_ptr()) };
        (flag != 0).then(|| {
            self.active = false;
            // SAFETY: the flag says MPI wrote the status.
            Status::from_raw(unsafe { status.assume_init() })
        })
    }

    /// The buffer's first `count` bytes, once a message landed in it.
    fn bytes(&self, count: usize) -> &[u8] {
        debug_assert!(!self.active, "the receive is not posted");
        // SAFETY: no receive is active into the buffer, which lives until `Drop`.
        unsafe { &(&*self.buffer)[..count] }
    }
}

impl Drop for PostedReceive {
    fn drop(&mut self) {
        // SAFETY: the request came from `MPI_Recv_init`; once cancelled and completed (or
        // already complete) it is freed, and then the buffer, which no receive uses any more.
        unsafe {
            if self.active {
                ffi::MPI_Cancel(&mut self.request);
                ffi::MPI_Wait(&mut self.request, ffi::RSMPI_STATUS_IGNORE);
            }
            ffi::MPI_Request_free(&mut self.request);
            drop(Box::from_raw(self.buffer));
        }
    }
}

/// MPI point-to-point messages on `MPI_COMM_WORLD`.
pub struct MpiTransport {
    pending: Vec<PendingSend>,
    /// A buffer handed back by [`Transport::recycle`]: the next message is received into it
    /// rather than into a new allocation (a master receives a message per task; the
    /// allocation and its free cost it about 110 of 6,670 instructions per task, callgrind,
    /// `docs/benchmarks.md`).
    spare: Vec<u8>,
    /// The buffers of messages sent, once MPI no longer reads them: for [`Transport::reclaim`],
    /// or to receive into when no buffer was recycled.
    sent: SpareBuffers,
    posted: PostedReceive,
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    // Declared last: finalizes MPI after everything else is dropped.
    _universe: Universe,
}

impl MpiTransport {
    /// Initialise MPI. Returns `None` when MPI was already initialised in this process.
    pub fn init() -> Option<Self> {
        if std::env::var_os(YIELD_PARAMETER).is_none() {
            // Read by OpenMPI in `MPI_Init`; no other thread runs yet.
            std::env::set_var(YIELD_PARAMETER, "0");
        }
        let rank = launcher_rank(|name| std::env::var(name).ok());
        let (universe, _threading) = mpi::initialize_with_threading(threading_for(rank))?;
        let world = universe.world();
        Some(MpiTransport {
            pending: Vec::new(),
            spare: Vec::new(),
            sent: SpareBuffers::default(),
            posted: PostedReceive::new(&world),
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

    /// Start sending `bytes` to rank `to` with `tag`. A small message is usually copied out at
    /// once (OpenMPI's shared-memory transport completes it inside `MPI_Isend`): its buffer is
    /// taken back now, and the list of sends in progress stays empty.
    fn start_send(&mut self, to: usize, tag: i32, bytes: Vec<u8>) {
        match PendingSend::start(&self.world, to, tag, bytes).test() {
            Ok(buffer) => self.sent.keep(buffer),
            Err(send) => self.pending.push(send),
        }
    }

    /// The recycled buffer, emptied, to receive the next message into; else the buffer of a
    /// message sent that nobody reclaimed (a worker's driver reclaims none).
    fn take_spare(&mut self) -> Vec<u8> {
        match std::mem::take(&mut self.spare) {
            bytes if bytes.capacity() == 0 => self.sent.take(),
            mut bytes => {
                bytes.clear();
                bytes
            }
        }
    }

    /// Take back the buffers of the sends that have completed (their order does not matter:
    /// MPI fixed the message order when each send started).
    fn progress_sends(&mut self) {
        for i in (0..self.pending.len()).rev() {
            match self.pending.swap_remove(i).test() {
                Ok(buffer) => self.sent.keep(buffer),
                Err(still_pending) => self.pending.push(still_pending),
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
        // The sends in progress are tested first: most have completed by now.
        self.progress_sends();
        if (1..=POSTED_BYTES).contains(&bytes.len()) {
            self.start_send(to, MESSAGE, bytes);
        } else {
            // An empty message is the notice: an empty message to send goes as a body.
            self.start_send(to, MESSAGE, Vec::new());
            self.start_send(to, BODY, bytes);
        }
        Ok(())
    }

    fn try_recv(&mut self) -> Result<Option<Envelope>, TransportError> {
        // The sends in progress are tested (their buffers freed) when another starts and
        // before a pause, not at every test: the test progresses them all the same.
        let Some(status) = self.posted.arrived() else {
            return Ok(None);
        };
        let from = status.source_rank();
        let count = byte_count(&status);
        let bytes = if count == 0 {
            // A notice: the body was sent right after it, and is on its way.
            let (message, status) = self
                .world
                .process_at_rank(from)
                .matched_probe_with_tag(BODY);
            let count = byte_count(&status);
            if count > self.spare.capacity() {
                // A new buffer either way: the library's, which it does not zero first.
                (message, status).matched_receive_vec::<u8>().0
            } else {
                let mut bytes = self.take_spare();
                bytes.resize(count, 0);
                message.matched_receive_into(&mut bytes[..]);
                bytes
            }
        } else {
            let mut bytes = self.take_spare();
            bytes.extend_from_slice(self.posted.bytes(count));
            bytes
        };
        Ok(Some(Envelope {
            from: from as usize,
            bytes,
        }))
    }

    fn recycle(&mut self, bytes: Vec<u8>) {
        // As large as a kept buffer may be: a rare large message does not pin its memory.
        if bytes.capacity() <= SpareBuffers::BYTES {
            self.spare = bytes;
        }
    }

    fn reclaim(&mut self) -> Option<Vec<u8>> {
        self.sent.pop()
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Envelope>, TransportError> {
        // MPI cannot wake a sleeping thread when a message arrives: poll, sleep, poll.
        if let Some(envelope) = self.try_recv()? {
            return Ok(Some(envelope));
        }
        if timeout.is_zero() {
            // A quick poll: probe again at once (the progress engine does not yield here,
            // `YIELD_PARAMETER`); the pauses after the quick polling give the CPU away.
            return Ok(None);
        }
        self.progress_sends();
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

/// The bytes a received message holds.
fn byte_count(status: &Status) -> usize {
    usize::try_from(status.count(u8::equivalent_datatype()))
        .expect("a message's byte count is not negative")
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        for send in self.pending.drain(..) {
            send.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment holding only `pairs`.
    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn rank_zero_runs_single_threaded_and_the_others_funneled() {
        assert_eq!(
            launcher_rank(env(&[("OMPI_COMM_WORLD_RANK", "0")])),
            Some(0)
        );
        assert_eq!(launcher_rank(env(&[("PMI_RANK", "3")])), Some(3));
        assert_eq!(launcher_rank(env(&[("SLURM_PROCID", "2\n")])), Some(2));
        // A variable that is no number is passed over for the next.
        assert_eq!(
            launcher_rank(env(&[("PMIX_RANK", "x"), ("SLURM_PROCID", "1")])),
            Some(1)
        );
        assert_eq!(launcher_rank(env(&[])), None);
        assert!(matches!(threading_for(Some(0)), Threading::Single));
        assert!(matches!(threading_for(Some(1)), Threading::Funneled));
        assert!(matches!(threading_for(None), Threading::Funneled));
    }
}
