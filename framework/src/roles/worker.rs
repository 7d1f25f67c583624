//! The worker role: executes tasks and returns their results.
//!
//! Two threads: this one talks to the master (the only thread that touches the transport, as
//! MPI's funneled mode requires), a compute thread executes. With `worker_buffers = 2` the
//! worker asks for a second batch up front, so the next task arrives while the current one
//! computes; with 1 it asks only once the current batch is done. Tasks that take only a few
//! microseconds run on the communication thread itself: for them a thread hand-off costs more
//! than the task, and there is nothing to overlap.

use std::{
    marker::PhantomData,
    panic::{self, AssertUnwindSafe},
    thread,
    time::{Duration, Instant},
};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};

use crate::{
    app::{Task, TaskResult, WorkerContext},
    error::RunError,
    idle::Idle,
    machinefile::MASTER,
    protocol::{decode, encode, encode_with_capacity, ToMaster, ToWorker, WireResult, WireTask},
    transport::Transport,
};

/// How often a worker holding all the tasks it asked for looks at the master's messages: then
/// only `Stop` can come, and a few milliseconds more at the end of a run cost nothing.
const FULL_PAUSE: Duration = Duration::from_millis(20);

/// A task queued for the compute thread.
struct Queued {
    task: WireTask,
    /// The last task of its batch: finishing it frees a batch of room.
    closes_batch: bool,
}

/// What the compute thread hands back.
struct Computed {
    result: Result<WireResult, RunError>,
    closes_batch: bool,
}

/// A worker of task type `T`.
pub struct Worker<'a, T> {
    transport: &'a mut dyn Transport,
    context: WorkerContext,
    buffers: u32,
    task_type: PhantomData<fn() -> T>,
}

impl<'a, T: Task> Worker<'a, T> {
    /// A worker on `transport`, holding up to `buffers` batches (`run.worker_buffers`).
    pub fn new(transport: &'a mut dyn Transport, context: WorkerContext, buffers: u32) -> Self {
        Worker {
            transport,
            context,
            buffers: buffers.max(1),
            task_type: PhantomData,
        }
    }

    /// Serve the master until it says stop. A task that fails is reported to the master, which
    /// decides how the run ends (a sub-master first tells its parent cluster): this rank
    /// waits for that, then fails.
    pub fn run(self) -> Result<(), RunError> {
        let Worker {
            transport,
            context,
            buffers,
            ..
        } = self;
        match serve::<T>(transport, &context, buffers) {
            Ok(()) => Ok(()),
            Err(Failure::Reported(error)) => wait_for_the_end(transport, error),
            Err(Failure::Other(error)) => Err(error),
        }
    }
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
    let mut idle = Idle::default();
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

/// The worker's loop: serve the master until it says stop.
fn serve<T: Task>(
    transport: &mut dyn Transport,
    context: &WorkerContext,
    buffers: u32,
) -> Result<(), Failure> {
    let (task_tx, task_rx) = unbounded::<Queued>();
    let (result_tx, result_rx) = unbounded::<Computed>();
    let rank = context.rank;
    let compute_context = context.clone();
    // Detached on purpose: at the end it may be computing a duplicate nobody needs; the
    // process exits without waiting for it.
    thread::Builder::new()
        .name(format!("compute-{rank}"))
        .spawn(move || compute::<T>(compute_context, task_rx, result_tx))
        .map_err(|e| RunError::Setup(format!("cannot start the compute thread: {e}")))?;

    transport.send(MASTER, encode(&ToMaster::Ready { room: buffers }))?;
    let mut idle = Idle::default();
    let mut task_time = TaskTime::default();
    // Tasks handed to the compute thread whose result has not come back.
    let mut computing = 0usize;
    // Batches asked for and not received: while none is, the master can only say stop,
    // so its messages are polled seldom (a finished task still wakes this thread at once).
    let mut asked = buffers;
    loop {
        let mut active = false;
        while let Ok(computed) = result_rx.try_recv() {
            computing -= 1;
            task_time.observe(&computed);
            asked += send_result(transport, computed)?;
            active = true;
        }
        if let Some(envelope) = transport.try_recv()? {
            active = true;
            let message =
                decode(&envelope.bytes, "message to a worker").map_err(RunError::decoding(rank))?;
            let batch = match message {
                ToWorker::Tasks(batch) => batch,
                ToWorker::Stop => break,
            };
            asked = asked.saturating_sub(1);
            let last = batch.len().saturating_sub(1);
            for (i, task) in batch.into_iter().enumerate() {
                let queued = Queued {
                    task,
                    closes_batch: i == last,
                };
                if computing == 0 && task_time.is_tiny() {
                    let computed = execute::<T>(context, queued);
                    task_time.observe(&computed);
                    asked += send_result(transport, computed)?;
                } else {
                    computing += 1;
                    // The compute thread only exits when this channel closes.
                    let _ = task_tx.send(queued);
                }
            }
        }
        if active {
            idle.reset();
            continue;
        }
        let pause = if asked == 0 {
            FULL_PAUSE
        } else {
            idle.next_pause()
        };
        if pause.is_zero() {
            // Polling the transport again is what a yield would be for: MPI's progress
            // engine yields the CPU itself when ranks outnumber cores.
            continue;
        }
        // Sleep on the result channel: a finished task wakes us at once; the master's
        // messages are polled at the end of each pause.
        match result_rx.recv_timeout(pause) {
            Ok(computed) => {
                idle.reset();
                computing -= 1;
                task_time.observe(&computed);
                asked += send_result(transport, computed)?;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(RunError::Setup(format!(
                    "rank {rank}: the compute thread ended unexpectedly"
                ))
                .into())
            }
        }
    }
    transport.send(MASTER, encode(&ToMaster::Bye { report: None }))?;
    transport.flush()?;
    Ok(())
}

/// A running mean of the time tasks take, to spot tasks too short to be worth a thread
/// hand-off: handing a task to the compute thread and its result back costs two thread
/// wake-ups (several microseconds on a loaded host), more than a tiny task itself.
#[derive(Debug, Default)]
struct TaskTime {
    mean_s: Option<f64>,
}

impl TaskTime {
    /// Tasks shorter than this on average run on the communication thread itself.
    const INLINE_BELOW_S: f64 = 20e-6;

    fn observe(&mut self, computed: &Computed) {
        if let Ok(result) = &computed.result {
            self.mean_s = Some(match self.mean_s {
                Some(mean) => 0.8 * mean + 0.2 * result.busy_s,
                None => result.busy_s,
            });
        }
    }

    fn is_tiny(&self) -> bool {
        self.mean_s.is_some_and(|mean| mean < Self::INLINE_BELOW_S)
    }
}

/// Return a result to the master; gives the room it frees (1 when it closes a batch). A task
/// that failed is reported to the master instead.
fn send_result(transport: &mut dyn Transport, computed: Computed) -> Result<u32, Failure> {
    let room = u32::from(computed.closes_batch);
    match computed.result {
        Ok(result) => {
            let size = result.body.len() + 64;
            let message = encode_with_capacity(&ToMaster::Result { result, room }, size);
            transport.send(MASTER, message)?;
            Ok(room)
        }
        Err(error) => {
            let message = match &error {
                RunError::Failed { message, .. } => message.clone(),
                other => other.to_string(),
            };
            transport.send(MASTER, encode(&ToMaster::Failed { message }))?;
            transport.flush()?;
            Err(Failure::Reported(error))
        }
    }
}

/// The compute thread: one task after another.
fn compute<T: Task>(context: WorkerContext, tasks: Receiver<Queued>, results: Sender<Computed>) {
    for queued in tasks {
        if results.send(execute::<T>(&context, queued)).is_err() {
            return;
        }
    }
}

/// Decode, execute and encode one task, timing each step. A panic inside the application's
/// code becomes an error naming the task.
fn execute<T: Task>(context: &WorkerContext, queued: Queued) -> Computed {
    let Queued { task, closes_batch } = queued;
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        let start = Instant::now();
        let decoded = decode::<T>(&task.body, "task")?;
        let executing = Instant::now();
        let output = decoded.execute(context);
        let encoding = Instant::now();
        let body = encode(&output);
        Ok(WireResult {
            ids: vec![task.id],
            // The work the result says was done, else the task's estimate.
            operations: output.operations().unwrap_or(task.operations),
            busy_s: (encoding - executing).as_secs_f64(),
            decode_s: (executing - start).as_secs_f64(),
            encode_s: encoding.elapsed().as_secs_f64(),
            body,
        })
    }));
    let result = match outcome {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(source)) => Err(RunError::Decode {
            rank: context.rank,
            source,
        }),
        Err(payload) => Err(RunError::Failed {
            rank: context.rank,
            host: context.line.host.clone(),
            message: format!("task {} panicked: {}", task.id, panic_text(&*payload)),
        }),
    };
    Computed {
        result,
        closes_batch,
    }
}

/// The message of a panic, when it has one.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
