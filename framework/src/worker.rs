//! The worker role: executes tasks and returns their results.
//!
//! Two threads: this one talks to the master (the only thread that touches the transport, as
//! MPI's funneled mode requires), a compute thread executes. With `worker_buffers = 2` the
//! worker asks for a second batch up front, so the next task arrives while the current one
//! computes; with 1 it asks only once the current batch is done.

use std::{
    marker::PhantomData,
    thread,
    time::{Duration, Instant},
};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};

use crate::{
    app::{Task, WorkerContext},
    error::RunError,
    idle::Idle,
    protocol::{decode, encode, ToMaster, ToWorker, WireResult, WireTask},
    transport::Transport,
};

/// The rank of the master inside a cluster.
pub const MASTER: usize = 0;

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
    pub fn new(transport: &'a mut dyn Transport, context: WorkerContext, buffers: u32) -> Self {
        Worker {
            transport,
            context,
            buffers: buffers.max(1),
            task_type: PhantomData,
        }
    }

    /// Serve the master until it says stop.
    pub fn run(self) -> Result<(), RunError> {
        let Worker {
            transport,
            context,
            buffers,
            ..
        } = self;
        let (task_tx, task_rx) = unbounded::<Queued>();
        let (result_tx, result_rx) = unbounded::<Computed>();
        let rank = context.rank;
        // Detached on purpose: at the end it may be computing a duplicate nobody needs; the
        // process exits without waiting for it.
        thread::Builder::new()
            .name(format!("compute-{rank}"))
            .spawn(move || compute::<T>(context, task_rx, result_tx))
            .map_err(|e| RunError::Setup(format!("cannot start the compute thread: {e}")))?;

        transport.send(MASTER, encode(&ToMaster::Ready { room: buffers }))?;
        let mut idle = Idle::default();
        loop {
            let mut active = false;
            while let Ok(computed) = result_rx.try_recv() {
                send_result(transport, computed)?;
                active = true;
            }
            if let Some(envelope) = transport.try_recv()? {
                active = true;
                let message = decode(&envelope.bytes, "message to a worker")
                    .map_err(|source| RunError::Decode { rank, source })?;
                match message {
                    ToWorker::Tasks(batch) => {
                        let last = batch.len().saturating_sub(1);
                        for (i, task) in batch.into_iter().enumerate() {
                            let queued = Queued {
                                task,
                                closes_batch: i == last,
                            };
                            // The compute thread only exits when this channel closes.
                            let _ = task_tx.send(queued);
                        }
                    }
                    ToWorker::Stop => break,
                }
            }
            if active {
                idle.reset();
                continue;
            }
            // Sleep on the result channel: a finished task wakes us at once; the master's
            // messages are polled at the end of each pause.
            match result_rx.recv_timeout(idle.next_pause().max(Duration::from_micros(1))) {
                Ok(computed) => {
                    idle.reset();
                    send_result(transport, computed)?;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::Setup(format!(
                        "rank {rank}: the compute thread died (a task panicked?)"
                    )))
                }
            }
        }
        transport.send(MASTER, encode(&ToMaster::Bye))?;
        transport.flush()?;
        Ok(())
    }
}

fn send_result(transport: &mut dyn Transport, computed: Computed) -> Result<(), RunError> {
    let message = ToMaster::Result {
        result: computed.result?,
        room: u32::from(computed.closes_batch),
    };
    transport.send(MASTER, encode(&message))?;
    Ok(())
}

/// The compute thread: decode, execute, encode, one task after another.
fn compute<T: Task>(context: WorkerContext, tasks: Receiver<Queued>, results: Sender<Computed>) {
    for Queued { task, closes_batch } in tasks {
        let result = decode::<T>(&task.body, "task")
            .map_err(|source| RunError::Decode {
                rank: context.rank,
                source,
            })
            .map(|decoded| {
                let start = Instant::now();
                let output = decoded.execute(&context);
                let busy_s = start.elapsed().as_secs_f64();
                WireResult {
                    id: task.id,
                    operations: task.operations,
                    busy_s,
                    body: encode(&output),
                }
            });
        if results
            .send(Computed {
                result,
                closes_batch,
            })
            .is_err()
        {
            return;
        }
    }
}
