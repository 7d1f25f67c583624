//! A node's driver: the communication thread around a [`NodeCore`] (the only thread that
//! touches the transport), and a compute thread that runs the stages of each job, timing
//! each stage; a calibration runs every stage on the source's first item, `repeats` times.

use std::{
    panic::{self, AssertUnwindSafe},
    thread,
    time::Instant,
};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError, Sender};
use hmw_core::{
    pipeline::Chain,
    protocol::{
        pipeline::{Calibration, Item},
        DecodeError,
    },
    roles::pipeline::{calibration_of, Job, NodeCore, PipeOutput},
};
use hmw_transport::{idle::Idle, Transport};

use super::send_all;
use crate::{drivers::worker::panic_text, error::RunError};

/// What the compute thread gives back.
enum Computed {
    /// An item through the group's stages.
    Item {
        item: Item,
        first: usize,
        output: Vec<u8>,
        stage_s: Vec<f64>,
    },
    /// A calibration.
    Calibrated(Calibration),
    /// A stage panicked, or its input did not decode.
    Failed(String),
}

/// Run the node until the controller stops it.
pub(crate) fn run(
    transport: &mut dyn Transport,
    mut core: NodeCore,
    chain: Chain,
) -> Result<(), RunError> {
    let (job_tx, job_rx) = unbounded::<Job>();
    let (done_tx, done_rx) = unbounded::<Computed>();
    let rank = transport.rank();
    // Detached: it ends when its job channel closes, as this function returns.
    thread::Builder::new()
        .name(format!("stages-{rank}"))
        .spawn(move || compute(&chain, &job_rx, &done_tx))
        .map_err(|e| RunError::setup(format!("cannot start the compute thread: {e}")))?;
    let mut out = Vec::new();
    let mut idle = Idle::default();
    loop {
        let mut active = false;
        while let Some(envelope) = transport.try_recv()? {
            active = true;
            core.handle(envelope.from, &envelope.bytes, &mut out)?;
            transport.recycle(envelope.bytes);
            send_all(transport, &mut out)?;
        }
        while let Ok(computed) = done_rx.try_recv() {
            active = true;
            finished(transport, &mut core, computed, &mut out)?;
        }
        if let Some(job) = core.next_job() {
            active = true;
            job_tx
                .send(job)
                .map_err(|_| RunError::setup("the compute thread is gone"))?;
        }
        if core.is_done() {
            break;
        }
        if active {
            idle.reset();
            continue;
        }
        let pause = idle.next_pause();
        if core.has_work() {
            // Computing: a finished job wakes this thread at once; messages wait a pause.
            match done_rx.recv_timeout(pause) {
                Ok(computed) => {
                    idle.reset();
                    finished(transport, &mut core, computed, &mut out)?;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::setup("the compute thread is gone"));
                }
            }
        } else if let Some(envelope) = transport.wait(pause)? {
            idle.reset();
            core.handle(envelope.from, &envelope.bytes, &mut out)?;
            transport.recycle(envelope.bytes);
            send_all(transport, &mut out)?;
        }
    }
    transport.flush()?;
    Ok(())
}

/// Pass what the compute thread gave back to the core, and send what it says.
fn finished(
    transport: &mut dyn Transport,
    core: &mut NodeCore,
    computed: Computed,
    out: &mut Vec<PipeOutput>,
) -> Result<(), RunError> {
    match computed {
        Computed::Item {
            item,
            first,
            output,
            stage_s,
        } => core.on_item_done(item, first, output, &stage_s, out)?,
        Computed::Calibrated(calibration) => core.on_calibrated(calibration, out)?,
        Computed::Failed(message) => {
            core.failed(&message, out)?;
            send_all(transport, out)?;
            transport.flush()?;
            return Err(RunError::setup(format!("a stage failed: {message}")));
        }
    }
    send_all(transport, out)?;
    Ok(())
}

/// The compute thread: each job in turn, a panic reported as a failure.
fn compute(chain: &Chain, jobs: &Receiver<Job>, done: &Sender<Computed>) {
    for job in jobs {
        let computed = match panic::catch_unwind(AssertUnwindSafe(|| run_job(chain, job))) {
            Ok(Ok(computed)) => computed,
            Ok(Err(e)) => Computed::Failed(e.to_string()),
            Err(payload) => {
                Computed::Failed(format!("a stage panicked: {}", panic_text(&*payload)))
            }
        };
        if done.send(computed).is_err() {
            return;
        }
    }
}

fn run_job(chain: &Chain, job: Job) -> Result<Computed, DecodeError> {
    match job {
        Job::Item {
            mut item,
            first,
            last,
        } => {
            let mut bytes = std::mem::take(&mut item.body);
            let mut stage_s = Vec::with_capacity(last + 1 - first);
            for stage in &chain.stages()[first..=last] {
                let start = Instant::now();
                bytes = stage.run(&bytes)?;
                stage_s.push(start.elapsed().as_secs_f64());
            }
            Ok(Computed::Item {
                item,
                first,
                output: bytes,
                stage_s,
            })
        }
        Job::Calibrate { sample, repeats } => {
            let stages = chain.len();
            let mut times = vec![Vec::new(); stages];
            let mut output_bytes = vec![0u64; stages];
            let mut chains = Vec::new();
            for _ in 0..repeats.max(1) {
                let mut bytes = sample.clone();
                let mut total = 0.0;
                for (j, stage) in chain.stages().iter().enumerate() {
                    let start = Instant::now();
                    bytes = stage.run(&bytes)?;
                    let seconds = start.elapsed().as_secs_f64();
                    total += seconds;
                    times[j].push(seconds);
                    output_bytes[j] = bytes.len() as u64;
                }
                chains.push(total);
            }
            Ok(Computed::Calibrated(calibration_of(
                times,
                output_bytes,
                &chains,
            )))
        }
    }
}
