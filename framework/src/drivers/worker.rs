//! The worker's driver: the communication thread around a [`WorkerCore`], and a compute
//! thread.
//!
//! This thread talks to the master (the only thread that touches the transport, as MPI's
//! funneled mode requires); the compute thread executes. The core decides what to ask for
//! and where each task runs; this loop moves messages, tasks and results, and sleeps with the
//! idle backoff between them.

use std::{
    collections::VecDeque,
    marker::PhantomData,
    os::unix::thread::JoinHandleExt,
    panic::{self, AssertUnwindSafe},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use smallvec::smallvec;

use crate::error::RunError;
use hmw_core::cpu_clock::{process_cpu_s, thread_cpu_s, ThreadClock};
use hmw_core::{
    app::{Task, TaskResult, WorkerContext},
    machinefile::MASTER,
    protocol::{decode, encode, encode_into, ToMaster, ToWorker, WireResult, WorkerUsage},
    roles::{Computed, Output, Queued, Received, WorkerCore},
    CoreError,
};
use hmw_transport::{idle::Idle, Transport};

/// How often a worker holding all the tasks it asked for looks at the master's messages: then
/// only `Stop` can come, and a few milliseconds more at the end of a run cost nothing.
const FULL_PAUSE: Duration = Duration::from_millis(20);

/// A worker of task type `T`.
pub(crate) struct Worker<'a, T> {
    transport: &'a mut dyn Transport,
    context: WorkerContext,
    buffers: u32,
    repeats: u32,
    task_type: PhantomData<fn() -> T>,
}

impl<'a, T: Task> Worker<'a, T> {
    /// A worker on `transport`, holding up to `buffers` batches (`run.worker_buffers`).
    pub(crate) fn new(
        transport: &'a mut dyn Transport,
        context: WorkerContext,
        buffers: u32,
    ) -> Self {
        Worker {
            transport,
            context,
            buffers: buffers.max(1),
            repeats: 1,
            task_type: PhantomData,
        }
    }

    /// Execute each task `repeats` times (`run.repeat_tasks`, calibration runs).
    pub(crate) fn repeating(mut self, repeats: u32) -> Self {
        self.repeats = repeats.max(1);
        self
    }

    /// Serve the master until it says stop. A task that fails is reported to the master, which
    /// decides how the run ends (a sub-master first tells its parent cluster): this rank
    /// waits for that, then fails.
    pub(crate) fn run(self) -> Result<(), RunError> {
        let Worker {
            transport,
            context,
            buffers,
            repeats,
            ..
        } = self;
        let execution = Execution {
            context,
            repeats,
            tasks_wait: Arc::default(),
        };
        match serve::<T>(transport, &execution, WorkerCore::new(buffers)) {
            Ok(()) => Ok(()),
            Err(Failure::Reported(error)) => wait_for_the_end(transport, error),
            Err(Failure::Other(error)) => Err(error),
        }
    }
}

/// How this worker executes its tasks: its context, and how many times each task
/// (`run.repeat_tasks`); set once it executed a task that waits ([`Task::waits`]).
#[derive(Clone)]
struct Execution {
    context: WorkerContext,
    repeats: u32,
    tasks_wait: Arc<AtomicBool>,
}

/// Why a worker stopped serving.
enum Failure {
    /// A task failed and the master was told: it decides how the run ends.
    Reported(RunError),
    /// Anything else: this rank ends the run itself.
    Other(RunError),
}

impl<E: Into<RunError>> From<E> for Failure {
    fn from(error: E) -> Self {
        Failure::Other(error.into())
    }
}

/// After a failure the master knows of: wait until it stops this rank (or the whole cluster
/// ends), then fail with `error`.
fn wait_for_the_end(transport: &mut dyn Transport, error: RunError) -> Result<(), RunError> {
    let mut idle = Idle::for_transport(transport);
    loop {
        match transport.wait(idle.next_pause()) {
            Ok(Some(envelope)) => {
                if let Ok(ToWorker::Stop) = decode(&envelope.bytes, "message to a worker") {
                    let _ = transport.send(MASTER, encode(&ToMaster::Bye { report: None }));
                    let _ = transport.flush();
                    return Err(error);
                }
            }
            Ok(None) => {}
            Err(_) => return Err(error),
        }
    }
}

/// Perform the core's sends.
fn perform(transport: &mut dyn Transport, out: &mut Vec<Output>) -> Result<(), RunError> {
    for output in out.drain(..) {
        if let Output::Send { to, bytes } = output {
            transport.send(to, bytes)?;
        }
    }
    Ok(())
}

/// The CPU time a worker uses while it serves, from the first task it receives to its last
/// result: its process's and its compute thread's. The clocks are read then only, and when
/// the worker falls idle after a result: a thread that reads its own CPU clock has its CPU
/// quota's accounting brought up to date, so reading it around each execution moved the
/// throttling it causes out of the timed executions (a calibration on the testbed then read
/// hosts of a 0.2-core quota up to 40 % faster).
///
/// The count ends when the worker falls idle after its last result, not at its `Bye`: a
/// worker done before the others polls for work until the run ends, at about 2 % of a core,
/// which is a fifth of a 0.1-core quota. Counted over its working time (`active_s`), those
/// seconds read as cores it got while it worked: on the testbed, the workers of a cluster
/// that waited 4 s for its slowest read 6-8 % over their quotas (`docs/benchmarks.md`).
struct Usage {
    compute: Option<ThreadClock>,
    /// The clocks when the first task arrived.
    start: Option<Clocks>,
    /// The clocks when the worker last fell idle, and the result it had sent last then.
    idle: Option<(Clocks, Instant)>,
    /// When the first task arrived, and when the last result left so far.
    first_task: Option<Instant>,
    last_result: Option<Instant>,
    /// Set once a task that waits was executed.
    tasks_wait: Arc<AtomicBool>,
    /// CPU seconds of this thread's full pauses that found nothing to do, since the first
    /// task.
    waiting_cpu_s: f64,
}

impl Usage {
    fn new(compute: Option<ThreadClock>, tasks_wait: Arc<AtomicBool>) -> Self {
        Usage {
            compute,
            start: None,
            idle: None,
            first_task: None,
            last_result: None,
            tasks_wait,
            waiting_cpu_s: 0.0,
        }
    }

    /// A full pause and the poll after it found nothing, using `cpu_s` of this thread.
    fn add_waiting(&mut self, cpu_s: f64) {
        if self.start.is_some() {
            self.waiting_cpu_s += cpu_s;
        }
    }

    /// Both clocks now, when the compute thread's can be read, and the waiting counted.
    fn now(&self) -> Option<Clocks> {
        Some(Clocks {
            process: process_cpu_s(),
            compute: self.compute.as_ref()?.seconds()?,
            waiting: self.waiting_cpu_s,
        })
    }

    /// The worker fell idle (nothing computing, nothing in hand, waiting for the master):
    /// the count so far is its work's, if a result left since it last fell idle.
    fn fell_idle(&mut self) {
        let Some(last_result) = self.last_result else {
            return;
        };
        if self.idle.is_some_and(|(_, result)| result == last_result) {
            return;
        }
        self.idle = self.now().map(|clocks| (clocks, last_result));
    }

    /// A task arrived: the first starts the count.
    fn task_received(&mut self) {
        if self.start.is_none() {
            self.start = self.now();
            self.first_task = Some(Instant::now());
        }
    }

    /// A result, encoded at `at`, was sent (the wall clock only: see the type's note on CPU
    /// clocks; the encoding's end stands for the sending, which follows it at once).
    fn result_sent(&mut self, at: Instant) {
        self.last_result = Some(at);
    }

    /// What was used from the first task to the last result, when any came: up to when the
    /// worker fell idle after it, or now if it has not.
    fn measured(&self) -> Option<WorkerUsage> {
        let start = self.start?;
        let end = match self.idle {
            Some((clocks, result)) if Some(result) == self.last_result => clocks,
            _ => self.now()?,
        };
        Some(WorkerUsage {
            cpu_s: end.process - start.process,
            compute_cpu_s: end.compute - start.compute,
            tasks_wait: self.tasks_wait.load(Ordering::Relaxed),
            waiting_cpu_s: end.waiting,
            active_s: match (self.first_task, self.last_result) {
                (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
                _ => 0.0,
            },
        })
    }
}

/// A worker's CPU clocks at one instant (its process's, its compute thread's), and the
/// waiting counted by then.
#[derive(Debug, Clone, Copy)]
struct Clocks {
    process: f64,
    compute: f64,
    waiting: f64,
}

/// Pass a computed task (encoded at `encoded_at`) to the core and send what it says, noting
/// the result's sending in `usage`; a failed task, once reported, ends serving.
fn deliver(
    transport: &mut dyn Transport,
    core: &mut WorkerCore,
    usage: &mut Usage,
    (computed, encoded_at): (Computed, Instant),
    inline: bool,
    out: &mut Vec<Output>,
) -> Result<(), Failure> {
    let reported = core.on_computed(computed, inline, out);
    perform(transport, out)?;
    if let Err(error) = reported {
        transport.flush()?;
        return Err(Failure::Reported(error.into()));
    }
    usage.result_sent(encoded_at);
    Ok(())
}

/// The worker's loop: serve the master until it says stop.
fn serve<T: Task>(
    transport: &mut dyn Transport,
    execution: &Execution,
    mut core: WorkerCore,
) -> Result<(), Failure> {
    let (task_tx, task_rx) = unbounded::<Queued>();
    let (result_tx, result_rx) = unbounded::<(Computed, Instant)>();
    let rank = execution.context.rank;
    let compute_execution = execution.clone();
    // Detached on purpose (its handle dropped): at the end it may be computing a duplicate
    // nobody needs; the process exits without waiting for it.
    let compute_thread = thread::Builder::new()
        .name(format!("compute-{rank}"))
        .spawn(move || compute::<T>(compute_execution, task_rx, result_tx))
        .map_err(|e| RunError::setup(format!("cannot start the compute thread: {e}")))?;
    let mut usage = Usage::new(
        ThreadClock::of(compute_thread.as_pthread_t()),
        execution.tasks_wait.clone(),
    );
    drop(compute_thread);

    let mut out = Vec::new();
    let mut tasks = VecDeque::new();
    core.start(&mut out);
    perform(transport, &mut out)?;
    let mut idle = Idle::for_transport(transport);
    // Whether the transport wakes this rank when a message arrives (in-process): then a rank
    // with nothing computing waits on it alone, and one computing on its task alone.
    let woken_on_arrival = transport.wakes_on_arrival();
    // A message the last wait returned.
    let mut waited = None;
    let mut coding = CodingSample::default();
    // This thread's CPU clock when it began a full pause that may find nothing at its end.
    let mut full_pause_from = None;
    loop {
        let mut active = false;
        // Results come only from tasks on the compute thread (tiny ones run inline).
        while core.computing() {
            let Ok(computed) = result_rx.try_recv() else {
                break;
            };
            deliver(transport, &mut core, &mut usage, computed, false, &mut out)?;
            active = true;
        }
        let envelope = match waited.take() {
            Some(envelope) => Some(envelope),
            None => transport.try_recv()?,
        };
        if let Some(envelope) = envelope {
            active = true;
            // The message's buffer carries its (last) task, then that task's result.
            let received = core.handle(envelope.bytes, rank, &mut tasks)?;
            if received == Received::Stop {
                break;
            }
            if !tasks.is_empty() {
                usage.task_received();
            }
            while let Some(queued) = tasks.pop_front() {
                if core.run_inline() {
                    let computed = execute::<T>(execution, queued, coding.next_inline());
                    deliver(transport, &mut core, &mut usage, computed, true, &mut out)?;
                } else {
                    // The compute thread only exits when this channel closes.
                    let _ = task_tx.send(queued);
                }
            }
        }
        if active {
            full_pause_from = None;
            idle.reset();
            continue;
        }
        // A full pause that ended with nothing to do: waiting while the tasks compute.
        if let Some(from) = full_pause_from.take() {
            usage.add_waiting(thread_cpu_s() - from);
        }
        let full = core.holds_all_it_asked_for();
        // While a task computes, only its end needs this rank at once when messages wake it
        // anyway: a task that comes meanwhile waits for the computing one to end. (Over MPI
        // the polls also move this rank's sends along, so they stay short.)
        let pause = if full || (woken_on_arrival && core.computing()) {
            FULL_PAUSE
        } else {
            idle.next_pause()
        };
        if pause.is_zero() {
            // The idle backoff's quick polling: poll the transport again at once.
            continue;
        }
        if full {
            full_pause_from = Some(thread_cpu_s());
        } else if !core.computing() {
            // Past the quick polling, with nothing in hand: idle until the master answers.
            usage.fell_idle();
        }
        if woken_on_arrival && !core.computing() {
            // Nothing computes: only a message can come, and it wakes us.
            waited = transport.wait(pause)?;
            continue;
        }
        // Sleep on the result channel: a finished task wakes us at once; the master's
        // messages are polled at the end of each pause.
        match result_rx.recv_timeout(pause) {
            Ok(computed) => {
                full_pause_from = None;
                idle.reset();
                deliver(transport, &mut core, &mut usage, computed, false, &mut out)?;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(RunError::setup(format!(
                    "rank {rank}: the compute thread ended unexpectedly"
                ))
                .into())
            }
        }
    }
    core.bye(usage.measured(), &mut out);
    perform(transport, &mut out)?;
    transport.flush()?;
    Ok(())
}

/// The compute thread: one task after another.
fn compute<T: Task>(
    execution: Execution,
    tasks: Receiver<Queued>,
    results: Sender<(Computed, Instant)>,
) {
    for queued in tasks {
        if results
            .send(execute::<T>(&execution, queued, CodingTimed::Every))
            .is_err()
        {
            return;
        }
    }
}

/// Whether an execution times its task's decoding and encoding.
#[derive(Debug, Clone, Copy, PartialEq)]
enum CodingTimed {
    /// Timed (a task on the compute thread: a clock read is nothing beside it).
    Every,
    /// Timed, standing for [`CodingSample::EVERY`] inline tasks: its times are multiplied by
    /// that.
    Sample,
    /// Not timed (another inline task of the sample stands for it).
    No,
}

/// Which inline tasks time their decoding and encoding. An inline task is tiny (tens of
/// microseconds at most, [`WorkerCore::run_inline`]), and its two clock reads around them
/// cost a worker of the dispatch benchmark a tenth of its rate (`docs/benchmarks.md`): one
/// inline task in [`Self::EVERY`] times them and carries them scaled by it, so that the
/// totals a calibration reads stay unbiased. The time it executes is read for every task.
#[derive(Debug, Default)]
struct CodingSample {
    inline: u64,
}

impl CodingSample {
    const EVERY: u32 = 16;

    /// How the next inline task is timed: the first, the 17th, ...
    fn next_inline(&mut self) -> CodingTimed {
        let sampled = self.inline % u64::from(Self::EVERY) == 0;
        self.inline += 1;
        if sampled {
            CodingTimed::Sample
        } else {
            CodingTimed::No
        }
    }
}

/// Decode, execute and encode one task (its result into the task's own buffer, done with),
/// timing its execution and, as `coding` says, its decoding and encoding (decoded and executed
/// again for each repeat, the work and times of every repeat counted, the last result kept),
/// and when it was done. A panic inside the application's code becomes an error naming the
/// task.
fn execute<T: Task>(
    execution: &Execution,
    queued: Queued,
    coding: CodingTimed,
) -> (Computed, Instant) {
    let Execution {
        context,
        repeats,
        tasks_wait,
    } = execution;
    let Queued {
        mut task,
        closes_batch,
    } = queued;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let timed = coding != CodingTimed::No;
        // One execution: its output, the work it says it did (else the task's estimate),
        // its busy and decoding seconds, and when it ended (three clock reads, two when the
        // decoding is not timed: the end of the last execution is the start of the encoding).
        let once = || -> Result<_, _> {
            let start = timed.then(Instant::now);
            let decoded = decode::<T>(&task.body, "task")?;
            if decoded.waits() {
                tasks_wait.store(true, Ordering::Relaxed);
            }
            let executing = Instant::now();
            let output = decoded.execute(context);
            let operations = output.operations().unwrap_or(task.operations);
            let end = Instant::now();
            Ok((
                output,
                operations,
                (end - executing).as_secs_f64(),
                start.map_or(0.0, |start| (executing - start).as_secs_f64()),
                end,
            ))
        };
        let (mut output, mut operations, mut busy_s, mut decode_s, mut encoding) = once()?;
        for _ in 1..*repeats {
            let (again, ops, busy, decoding, end) = once()?;
            (output, operations, busy_s, decode_s, encoding) = (
                again,
                operations + ops,
                busy_s + busy,
                decode_s + decoding,
                end,
            );
        }
        let body = encode_into(std::mem::take(&mut task.body), &output);
        let (encoded, scale) = match coding {
            CodingTimed::Every => (Instant::now(), 1.0),
            CodingTimed::Sample => (Instant::now(), f64::from(CodingSample::EVERY)),
            // The encoding of a tiny task ends about when its execution does.
            CodingTimed::No => (encoding, 0.0),
        };
        Ok((
            WireResult {
                ids: smallvec![task.id],
                operations,
                busy_s,
                decode_s: decode_s * scale,
                encode_s: (encoded - encoding).as_secs_f64() * scale,
                body,
            },
            encoded,
        ))
    }));
    let (result, done) = match outcome {
        Ok(Ok((result, encoded))) => (Ok(result), encoded),
        Ok(Err(source)) => (
            Err(CoreError::Decode {
                rank: context.rank,
                source,
            }),
            Instant::now(),
        ),
        Err(payload) => (
            Err(CoreError::Failed {
                rank: context.rank,
                host: context.line.host.clone(),
                message: format!("task {} panicked: {}", task.id, panic_text(&*payload)),
            }),
            Instant::now(),
        ),
    };
    (
        Computed {
            result,
            closes_batch,
        },
        done,
    )
}

/// The message of a panic, when it has one.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_inline_task_in_sixteen_times_its_coding_for_sixteen() {
        let mut coding = CodingSample::default();
        let timed: Vec<CodingTimed> = (0..2 * CodingSample::EVERY)
            .map(|_| coding.next_inline())
            .collect();
        let sampled: Vec<usize> = timed
            .iter()
            .enumerate()
            .filter(|(_, t)| **t != CodingTimed::No)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(sampled, vec![0, CodingSample::EVERY as usize]);
        assert_eq!(timed[0], CodingTimed::Sample);
    }

    /// Spins this thread for `seconds` of its CPU time.
    fn spin(seconds: f64) {
        let start = thread_cpu_s();
        while thread_cpu_s() - start < seconds {}
    }

    #[test]
    fn the_count_ends_when_the_worker_falls_idle_after_its_last_result() {
        // SAFETY: pthread_self has no preconditions.
        let this_thread = ThreadClock::of(unsafe { libc::pthread_self() });
        let mut usage = Usage::new(this_thread, Arc::new(AtomicBool::new(false)));
        usage.task_received();
        spin(0.02);
        usage.result_sent(Instant::now());
        usage.fell_idle();
        // Polling for work that never comes, then a second idle spell with no result.
        spin(0.05);
        usage.fell_idle();
        // This thread stands for the compute thread. The process's clock counts the other
        // tests' threads too (`cargo test` runs them in this process): bounded below only.
        let worked = usage.measured().unwrap();
        assert!((0.02..0.04).contains(&worked.compute_cpu_s), "{worked:?}");
        assert!(worked.cpu_s >= worked.compute_cpu_s * 0.99, "{worked:?}");

        // Another result: the count goes on to it.
        spin(0.02);
        usage.result_sent(Instant::now());
        let worked = usage.measured().unwrap();
        assert!(worked.compute_cpu_s >= 0.09, "{worked:?}");
    }
}
