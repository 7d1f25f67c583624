//! The master core's cost per task, alone and deterministic: a `MasterCore` feeding four
//! workers of two buffers with the dispatch benchmark's tiny tasks (64-byte task and result,
//! no compute), its workers answered by this program in a fixed order, with no MPI, no clock
//! and no thread. Every call of `MasterCore::handle` goes through [`handle`], never inlined, so
//! that callgrind counts exactly it:
//!
//! ```text
//! cargo build --profile release-lto -p hmw-core --example master_handle
//! valgrind --tool=callgrind --toggle-collect='*master_handle*handle*' \
//!     target/release-lto/examples/master_handle 40000
//! ```
//!
//! (`scripts/bench/callgrind-master.sh --core` runs it and prints the instructions per task.)

use std::{collections::VecDeque, path::Path, time::Duration};

use hmw_core::{
    config::RunConfig,
    machinefile::MachineFile,
    protocol::{decode, encode, TaskIds, ToMaster, ToWorker, WireResult},
    roles::{MasterCore, Output, ProblemSource},
    scheduler::OnDemand,
    Problem, Task, TaskId, TaskResult, WorkerContext,
};
use serde::{Deserialize, Serialize};

/// A task, and its result: 64 bytes, as in `hmw-dispatch`.
#[derive(Serialize, Deserialize)]
struct Tiny(serde_bytes::ByteArray<64>);

impl Task for Tiny {
    type Output = Tiny;
    fn execute(self, _worker: &WorkerContext) -> Tiny {
        self
    }
}

impl TaskResult for Tiny {
    fn join(&mut self, _other: Tiny) -> Result<(), Tiny> {
        Ok(())
    }
}

struct Tasks {
    left: u64,
    gathered: u64,
}

impl Problem for Tasks {
    type Task = Tiny;
    fn next_task(&mut self) -> Option<Tiny> {
        (self.left > 0).then(|| {
            self.left -= 1;
            Tiny(serde_bytes::ByteArray::new([7; 64]))
        })
    }
    fn gather(&mut self, _id: TaskId, _result: Tiny) {
        self.gathered += 1;
    }
}

/// The master core takes in one message: the only place this program calls `handle`.
#[inline(never)]
fn handle(
    core: &mut MasterCore<ProblemSource<Tasks>>,
    from: usize,
    bytes: &[u8],
    out: &mut Vec<Output>,
) {
    core.handle(Duration::ZERO, from, bytes, out)
        .expect("the master takes its workers' messages");
}

fn main() {
    let tasks: u64 = std::env::args()
        .nth(1)
        .map_or(40_000, |n| n.parse().expect("TASKS: a number of tasks"));
    let workers = 4;
    let hosts = "master\n".to_owned() + &"worker\n".repeat(workers);
    let machines = MachineFile::parse(Path::new("bench.hosts"), &hosts).expect("machine file");
    let config = RunConfig {
        statistics_interval: 0.0,
        ..RunConfig::default()
    };
    let buffers = config.worker_buffers;
    let problem = ProblemSource::new(Tasks {
        left: tasks,
        gathered: 0,
    });
    let mut core = MasterCore::new(&machines, config, Box::new(OnDemand), problem);
    let mut out = Vec::new();
    core.start(Duration::ZERO, &mut out).expect("start");
    // The workers' tasks in hand, in the order received; the messages for the master, in
    // the order sent: every worker asks first, then each answers its oldest task in turn.
    let mut held: Vec<VecDeque<u64>> = vec![VecDeque::new(); workers + 1];
    let mut to_master: VecDeque<(usize, Vec<u8>)> = (1..=workers)
        .map(|w| (w, encode(&ToMaster::Ready { room: buffers })))
        .collect();
    let result_body = encode(&Tiny(serde_bytes::ByteArray::new([7; 64])));
    while !core.is_done() {
        let (from, bytes) = to_master.pop_front().expect("a message for the master");
        handle(&mut core, from, &bytes, &mut out);
        for output in out.drain(..) {
            let Output::Send { to, bytes } = output else {
                continue;
            };
            match decode::<ToWorker>(&bytes, "to a worker").expect("a message") {
                ToWorker::Tasks(batch) => held[to].extend(batch.iter().map(|t| t.id)),
                ToWorker::Stop => {
                    to_master.push_back((to, encode(&ToMaster::Bye { report: None })))
                }
                ToWorker::Join(_) | ToWorker::Journaled(_) | ToWorker::Resend => {}
            }
        }
        if to_master.is_empty() {
            // Each worker with a task answers its oldest one, and asks for one more.
            for (worker, queue) in held.iter_mut().enumerate() {
                if let Some(id) = queue.pop_front() {
                    let result = WireResult {
                        ids: TaskIds::from_slice(&[id]),
                        operations: 1.0,
                        busy_s: 1e-6,
                        decode_s: 0.0,
                        encode_s: 0.0,
                        body: result_body.clone(),
                    };
                    to_master.push_back((worker, encode(&ToMaster::Result { result, room: 1 })));
                }
            }
        }
    }
    let (stats, source) = core.finish();
    assert_eq!(source.into_problem().gathered, tasks);
    println!("master_handle tasks={} workers={workers}", stats.tasks);
}
