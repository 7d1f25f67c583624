//! The worker's core: its requests for work and its buffers, without threads or I/O.
//!
//! With `worker_buffers = 2` a worker asks for two batches up front and one more each time it
//! finishes a batch, so the next batch travels while the current one computes; with 1 it asks
//! only once the current batch is done. Tasks whose running mean time is under 20 µs run on
//! the communication thread itself (a thread hand-off would cost more than the task): the
//! core decides where each task runs ([`WorkerCore::run_inline`]); the driver
//! (`hmw::drivers::worker`) executes them and passes each result back.

use std::collections::VecDeque;

use super::output::Output;
use crate::{
    error::CoreError,
    machinefile::MASTER,
    protocol::{encode, ToMaster, ToWorker, WireResult, WireTask, WorkerUsage},
};

/// A task to execute.
#[derive(Debug)]
pub struct Queued {
    /// The task.
    pub task: WireTask,
    /// The last task of its batch: finishing it frees a batch of room.
    pub closes_batch: bool,
}

/// A task executed: its result (or why it failed), and whether it closed its batch.
#[derive(Debug)]
pub struct Computed {
    /// The result, or the failure (a panic in the application's code names the task).
    pub result: Result<WireResult, CoreError>,
    /// As [`Queued::closes_batch`].
    pub closes_batch: bool,
}

/// What a message from the master asks of the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// Tasks, queued for execution.
    Tasks,
    /// Stop: answer `Bye` ([`WorkerCore::bye`]) and end.
    Stop,
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

/// A worker's requests and buffers.
#[derive(Debug)]
pub struct WorkerCore {
    buffers: u32,
    /// Batches asked for and not received: while none is, the master can only say stop.
    asked: u32,
    /// Tasks handed to the compute thread whose result has not come back.
    computing: usize,
    task_time: TaskTime,
}

impl WorkerCore {
    /// A worker holding up to `buffers` batches (`run.worker_buffers`).
    pub fn new(buffers: u32) -> Self {
        let buffers = buffers.max(1);
        WorkerCore {
            buffers,
            asked: 0,
            computing: 0,
            task_time: TaskTime::default(),
        }
    }

    /// Ask for as many batches as there are buffers.
    pub fn start(&mut self, out: &mut Vec<Output>) {
        self.asked = self.buffers;
        out.push(Output::Send {
            to: MASTER,
            bytes: encode(&ToMaster::Ready { room: self.buffers }),
        });
    }

    /// Take in a message from the master: a batch's tasks go to the back of `tasks` (the
    /// last task's body in the message's own buffer).
    pub fn handle(
        &mut self,
        bytes: Vec<u8>,
        rank: usize,
        tasks: &mut VecDeque<Queued>,
    ) -> Result<Received, CoreError> {
        let before = tasks.len();
        let mut queue = |task| {
            tasks.push_back(Queued {
                task,
                closes_batch: false,
            })
        };
        if let Err(bytes) = ToWorker::take_tasks(bytes, &mut queue) {
            match ToWorker::decode(&bytes, "message to a worker")
                .map_err(CoreError::decoding(rank))?
            {
                ToWorker::Tasks(batch) => batch.into_iter().for_each(queue),
                ToWorker::Stop => return Ok(Received::Stop),
                ToWorker::Join(_) | ToWorker::Journaled(_) | ToWorker::Resend => {
                    return Err(CoreError::Protocol {
                        rank,
                        message: "a worker was sent what only a sub-master takes".into(),
                    })
                }
            }
        }
        self.asked = self.asked.saturating_sub(1);
        if tasks.len() > before {
            tasks.back_mut().expect("a task was queued").closes_batch = true;
        }
        Ok(Received::Tasks)
    }

    /// Whether a task is on the compute thread, its result still to come.
    pub fn computing(&self) -> bool {
        self.computing > 0
    }

    /// Where the next task runs: on the communication thread (`true`: the driver executes it
    /// now and passes its result to [`on_computed`](Self::on_computed)), or on the compute
    /// thread, when tasks are long enough to overlap, or one is computing already.
    pub fn run_inline(&mut self) -> bool {
        if self.computing == 0 && self.task_time.is_tiny() {
            true
        } else {
            self.computing += 1;
            false
        }
    }

    /// A task was computed (`inline`: on the communication thread): its result goes to the
    /// master, with the room it frees. A task that failed is reported to the master instead,
    /// and its error returned: the master decides how the run ends.
    pub fn on_computed(
        &mut self,
        computed: Computed,
        inline: bool,
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        if !inline {
            self.computing = self.computing.saturating_sub(1);
        }
        self.task_time.observe(&computed);
        let room = u32::from(computed.closes_batch);
        match computed.result {
            Ok(result) => {
                let bytes = result.into_message(room);
                out.push(Output::Send { to: MASTER, bytes });
                self.asked += room;
                Ok(())
            }
            Err(error) => {
                let message = match &error {
                    CoreError::Failed { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                out.push(Output::Send {
                    to: MASTER,
                    bytes: encode(&ToMaster::Failed { message }),
                });
                Err(error)
            }
        }
    }

    /// The answer to `Stop`: the CPU time the worker used, when its driver measured it,
    /// then `Bye`.
    pub fn bye(&self, usage: Option<WorkerUsage>, out: &mut Vec<Output>) {
        if let Some(usage) = usage {
            out.push(Output::Send {
                to: MASTER,
                bytes: encode(&ToMaster::Usage(usage)),
            });
        }
        out.push(Output::Send {
            to: MASTER,
            bytes: encode(&ToMaster::Bye { report: None }),
        });
    }

    /// Whether only `Stop` can come: the worker holds every batch it asked for. Its driver
    /// may then wait longer between polls than its idle backoff would.
    pub fn holds_all_it_asked_for(&self) -> bool {
        self.asked == 0
    }
}
