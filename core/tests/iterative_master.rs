//! The master's core with an iterative problem, its workers answering in arbitrary orders and
//! after arbitrary times: every task of every iteration is gathered exactly once, no task of
//! an iteration goes out before the previous one is complete, each iteration has one task per
//! active worker, and no inactive worker gets a task.

use std::{collections::VecDeque, path::Path, time::Duration};

use hmw_core::{
    config::{RunConfig, TuneWorkers},
    machinefile::MachineFile,
    protocol::{decode, encode, ToMaster, ToWorker, WireResult},
    roles::{MasterCore, Output, ProblemSource},
    scheduler::OnDemand,
    Iterations, Iterative, Task, TaskResult, WorkerContext,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// Task `index` of iteration `iteration`.
#[derive(Debug, Serialize, Deserialize)]
struct Part {
    iteration: u64,
    index: usize,
}
#[derive(Debug, Serialize, Deserialize)]
struct Done(u64, usize);

impl Task for Part {
    type Output = Done;
    fn execute(self, _: &WorkerContext) -> Done {
        Done(self.iteration, self.index)
    }
}
impl TaskResult for Done {
    fn join(&mut self, other: Self) -> Result<(), Self> {
        Err(other)
    }
}

/// `steps` iterations, one task per worker; counts what it gathers.
struct Steps {
    steps: u64,
    /// Per iteration: its task count and how often each task was gathered.
    gathered: Vec<Vec<u32>>,
    ended: u64,
}

impl Iterative for Steps {
    type Task = Part;
    fn begin(&mut self, iteration: u64, workers: usize) -> Option<Vec<Part>> {
        assert_eq!(iteration, self.ended, "began before the barrier");
        (iteration < self.steps).then(|| {
            self.gathered.push(vec![0; workers]);
            (0..workers)
                .map(|index| Part { iteration, index })
                .collect()
        })
    }
    fn gather(&mut self, iteration: u64, index: usize, result: Done) {
        assert_eq!((result.0, result.1), (iteration, index));
        self.gathered[iteration as usize][index] += 1;
    }
    fn end(&mut self, iteration: u64) {
        assert!(self.gathered[iteration as usize].iter().all(|&n| n == 1));
        self.ended += 1;
    }
}

/// Run `steps` steps on `workers` workers; `order` picks which pending reply goes next and
/// `delays_ms` how long each task takes. Returns the problem, the workers of each step and the
/// rank each task went to, by its step.
fn run(
    workers: usize,
    steps: u64,
    tune: TuneWorkers,
    active: Option<usize>,
    order: &[usize],
    delays_ms: &[u64],
) -> (Steps, Vec<u64>, Vec<(u64, usize)>) {
    let text = "localhost\n".repeat(workers + 1);
    let machines = MachineFile::parse(Path::new("hosts"), &text).unwrap();
    let config = RunConfig {
        statistics_interval: 0.0,
        worker_buffers: 1,
        reassign_last_task: false,
        tune_workers: tune,
        active_workers: active,
        ..Default::default()
    };
    let problem = Iterations::new(Steps {
        steps,
        gathered: Vec::new(),
        ended: 0,
    });
    let mut master = MasterCore::new(
        &machines,
        config,
        Box::new(OnDemand),
        ProblemSource::new(problem),
    );
    let mut now = Duration::ZERO;
    let mut out = Vec::new();
    master.start(now, &mut out).unwrap();
    // Messages to the master not delivered yet: (from, bytes).
    let mut pending: VecDeque<(usize, Vec<u8>)> = (1..=workers)
        .map(|rank| (rank, encode(&ToMaster::Ready { room: 1 })))
        .collect();
    let mut step = 0;
    let mut handed = Vec::new();
    while !master.is_done() {
        for output in out.drain(..) {
            let Output::Send { to, bytes } = output else {
                continue;
            };
            let reply = match decode::<ToWorker>(&bytes, "to worker").unwrap() {
                ToWorker::Tasks(tasks) => {
                    assert_eq!(tasks.len(), 1);
                    let part: Part = decode(&tasks[0].body, "part").unwrap();
                    handed.push((part.iteration, to));
                    let done = part.execute(&context());
                    ToMaster::Result {
                        result: WireResult {
                            ids: vec![tasks[0].id].into(),
                            operations: 1.0,
                            busy_s: delays_ms[step % delays_ms.len()] as f64 * 1e-3,
                            decode_s: 0.0,
                            encode_s: 0.0,
                            body: encode(&done),
                        },
                        room: 1,
                    }
                }
                ToWorker::Stop => ToMaster::Bye { report: None },
                ToWorker::Join(_) | ToWorker::Journaled(_) | ToWorker::Resend => {
                    panic!("a master of workers only sends tasks and Stop")
                }
            };
            pending.push_back((to, encode(&reply)));
        }
        assert!(!pending.is_empty(), "the master waits for nothing");
        let at = order[step % order.len()] % pending.len();
        let (from, bytes) = pending.remove(at).unwrap();
        now += Duration::from_millis(delays_ms[step % delays_ms.len()]);
        step += 1;
        master.handle(now, from, &bytes, &mut out).unwrap();
    }
    let (stats, source) = master.finish();
    let counts = stats.iterations.iter().map(|it| it.workers).collect();
    (source.into_problem().into_inner(), counts, handed)
}

fn context() -> WorkerContext {
    WorkerContext::localhost()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_task_of_every_iteration_is_gathered_once(
        workers in 1usize..7,
        steps in 1u64..14,
        tune in prop_oneof![Just(TuneWorkers::Off), Just(TuneWorkers::Time), Just(TuneWorkers::Pi)],
        active in proptest::option::of(1usize..7),
        order in proptest::collection::vec(0usize..16, 1..40),
        delays_ms in proptest::collection::vec(1u64..50, 1..20),
    ) {
        let (problem, counts, handed) = run(workers, steps, tune, active, &order, &delays_ms);
        prop_assert_eq!(problem.ended, steps);
        prop_assert_eq!(counts.len() as u64, steps);
        let most = active.unwrap_or(workers).min(workers);
        for (gathered, &n) in problem.gathered.iter().zip(&counts) {
            prop_assert_eq!(gathered.len() as u64, n);
            prop_assert!(n >= 1 && n as usize <= most);
            prop_assert!(gathered.iter().all(|&g| g == 1));
        }
        // The active workers are the lowest ranks: a step of n tasks goes to ranks 1..=n.
        for &(iteration, to) in &handed {
            prop_assert!(to as u64 <= counts[iteration as usize], "step {} to rank {}", iteration, to);
        }
        prop_assert_eq!(handed.len() as u64, counts.iter().sum::<u64>());
        if tune == TuneWorkers::Off {
            prop_assert!(counts.iter().all(|&n| n as usize == most));
        }
    }
}
