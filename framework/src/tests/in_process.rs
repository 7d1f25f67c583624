//! Master and workers on the in-process transport: dispatch, gathering, reassignment and
//! batching, without `mpirun`.

use std::{path::Path, sync::Arc, thread, time::Duration};

use hmw_core::{
    config::{ConfigFile, RunConfig},
    machinefile::MachineFile,
    roles::{MasterCore, ProblemSource},
    scheduler::{Demand, OnDemand, Scheduler, Waiting},
    Problem, RunStats, Task, TaskId, TaskResult, WorkerContext,
};
use hmw_transport::local::LocalTransport;

use crate::{
    drivers::{master::Master, worker::Worker},
    runner::{play_in_threads, play_in_threads_with, MakeScheduler, Outcome},
};
use serde::{Deserialize, Serialize};

/// Sleeps `millis / speed` and returns its index; panics if it is task `panic_at`.
#[derive(Serialize, Deserialize)]
struct Nap {
    index: u64,
    millis: u64,
    panic_at: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct Woke(u64);

impl Task for Nap {
    type Output = Woke;
    fn execute(self, worker: &WorkerContext) -> Woke {
        if self.panic_at == Some(self.index) {
            panic!("nap {} cannot sleep", self.index);
        }
        thread::sleep(Duration::from_secs_f64(
            self.millis as f64 / 1e3 / worker.speed(),
        ));
        Woke(self.index)
    }
}

impl TaskResult for Woke {
    fn join(&mut self, other: Woke) -> Result<(), Woke> {
        Err(other)
    }
}

struct Naps {
    tasks: u64,
    millis: u64,
    /// Time the master takes to produce a task (reading its input, say).
    produce_millis: u64,
    panic_at: Option<u64>,
    produced: u64,
    /// How often each task's result was gathered.
    gathered: Vec<u32>,
}

impl Naps {
    fn new(tasks: u64, millis: u64) -> Self {
        Naps {
            tasks,
            millis,
            produce_millis: 0,
            panic_at: None,
            produced: 0,
            gathered: vec![0; tasks as usize],
        }
    }
}

impl Problem for Naps {
    type Task = Nap;
    fn next_task(&mut self) -> Option<Nap> {
        (self.produced < self.tasks).then(|| {
            thread::sleep(Duration::from_millis(self.produce_millis));
            self.produced += 1;
            Nap {
                index: self.produced - 1,
                millis: self.millis,
                panic_at: self.panic_at,
            }
        })
    }
    fn gather(&mut self, id: TaskId, result: Woke) {
        assert_eq!(id, result.0, "a result is gathered under its own task id");
        self.gathered[id as usize] += 1;
    }
    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }
}

/// Run `problem` on a master and one worker per entry of `speeds`.
fn run_cluster(
    problem: Naps,
    speeds: &[f64],
    config: RunConfig,
    scheduler: Box<dyn Scheduler>,
) -> (RunStats, Naps) {
    let mut text = String::from("master\n");
    for speed in speeds {
        text.push_str(&format!("worker # speed={speed}\n"));
    }
    let machines = MachineFile::parse(Path::new("test.hosts"), &text).unwrap();
    let mut transports = LocalTransport::cluster(machines.rank_count()).into_iter();
    let mut master_transport = transports.next().unwrap();
    let workers: Vec<_> = transports
        .map(|mut transport| {
            let context = WorkerContext::of(&machines, hmw_transport::Transport::rank(&transport));
            let buffers = config.worker_buffers;
            thread::spawn(move || Worker::<Nap>::new(&mut transport, context, buffers).run())
        })
        .collect();
    let master = Master::new(
        &mut master_transport,
        &machines,
        config,
        scheduler,
        ProblemSource::new(problem),
    )
    .unwrap();
    let (stats, source) = master.run().unwrap();
    let problem = source.into_problem();
    for worker in workers {
        worker.join().unwrap().unwrap();
    }
    (stats, problem)
}

fn quiet(buffers: u32, reassign: bool) -> RunConfig {
    RunConfig {
        statistics_interval: 0.0,
        worker_buffers: buffers,
        reassign_last_task: reassign,
        ..RunConfig::default()
    }
}

#[test]
fn every_task_is_gathered_exactly_once() {
    for buffers in [1, 2] {
        for reassign in [false, true] {
            let (stats, problem) = run_cluster(
                Naps::new(50, 2),
                &[1.0, 1.0, 0.5],
                quiet(buffers, reassign),
                Box::new(OnDemand),
            );
            assert!(
                problem.gathered.iter().all(|&n| n == 1),
                "{:?}",
                problem.gathered
            );
            assert_eq!(stats.tasks, 50);
            let done: u64 = stats.workers.iter().map(|w| w.tasks_done).sum();
            assert_eq!(done, 50);
            if !reassign {
                assert_eq!(stats.cluster.discharged, 0);
            }
        }
    }
}

#[test]
fn an_empty_problem_ends_at_once() {
    let (stats, _) = run_cluster(
        Naps::new(0, 1),
        &[1.0, 1.0],
        quiet(2, true),
        Box::new(OnDemand),
    );
    assert_eq!(stats.tasks, 0);
}

#[test]
fn reassignment_shortens_a_slow_tail_and_counts_discharged_copies() {
    // Four tasks of 100 ms on a fast worker and a very slow one (1 s a task): without
    // reassignment the run waits for the slow worker's task; with it, the fast worker computes
    // a copy and the slow one's copy is discharged.
    let (slow_tail, _) = run_cluster(
        Naps::new(4, 100),
        &[1.0, 0.1],
        quiet(1, false),
        Box::new(OnDemand),
    );
    let (reassigned, problem) = run_cluster(
        Naps::new(4, 100),
        &[1.0, 0.1],
        quiet(1, true),
        Box::new(OnDemand),
    );
    assert!(problem.gathered.iter().all(|&n| n == 1));
    assert!(
        slow_tail.wall_s >= 0.95,
        "slow tail took {} s",
        slow_tail.wall_s
    );
    assert!(
        reassigned.wall_s < 0.6,
        "reassigned run took {} s",
        reassigned.wall_s
    );
    assert_eq!(reassigned.workers[0].tasks_done, 4);
    assert_eq!(reassigned.workers[1].tasks_done, 0);
    assert_eq!(reassigned.workers[1].discharged, 1);
}

/// Batches of three tasks per message.
struct ThreeAtATime;

impl Scheduler for ThreeAtATime {
    fn batch_size(&mut self, _demand: &Demand) -> usize {
        3
    }
}

#[test]
fn batches_from_a_scheduler_are_all_computed() {
    let (stats, problem) = run_cluster(
        Naps::new(20, 1),
        &[1.0, 1.0],
        quiet(2, false),
        Box::new(ThreeAtATime),
    );
    assert!(problem.gathered.iter().all(|&n| n == 1));
    assert_eq!(
        stats.workers.iter().map(|w| w.tasks_computed).sum::<u64>(),
        20
    );
}

#[test]
fn every_scheduling_policy_computes_every_task_once() {
    use hmw_core::scheduler::Policy;
    for policy in [
        Policy::FixedSize,
        Policy::KruskalWeiss,
        Policy::Factoring,
        Policy::AdaptiveFactoring,
        Policy::AdaptiveMultiRound,
    ] {
        let (stats, problem) = run_cluster(
            Naps::new(60, 1),
            &[1.0, 0.5, 0.25],
            quiet(2, false),
            policy.scheduler(hmw_core::scheduler::ChunkSettings {
                fraction: 0.5,
                overhead_s: 1e-3,
            }),
        );
        assert!(problem.gathered.iter().all(|&n| n == 1), "{policy:?}");
        assert_eq!(
            stats.workers.iter().map(|w| w.tasks_computed).sum::<u64>(),
            60
        );
    }
}

#[test]
fn progress_lines_are_recorded() {
    let config = RunConfig {
        statistics_interval: 0.05,
        ..quiet(2, false)
    };
    let (stats, _) = run_cluster(Naps::new(20, 20), &[1.0, 1.0], config, Box::new(OnDemand));
    assert!(stats.progress.len() >= 2, "{:?}", stats.progress);
    assert!(stats
        .progress
        .windows(2)
        .all(|w| w[0].tasks_done <= w[1].tasks_done && w[0].t_s < w[1].t_s));
}

#[test]
fn every_worker_gets_its_first_task_before_any_gets_a_second() {
    // Four workers with two buffers each and four tasks of 200 ms: one task each, so the run
    // takes one task time, not two.
    let (stats, problem) = run_cluster(
        Naps::new(4, 200),
        &[1.0, 1.0, 1.0, 1.0],
        quiet(2, false),
        Box::new(OnDemand),
    );
    assert!(problem.gathered.iter().all(|&n| n == 1));
    let done: Vec<u64> = stats.workers.iter().map(|w| w.tasks_done).collect();
    assert_eq!(done, vec![1, 1, 1, 1], "{stats:#?}");
    assert!(stats.wall_s < 0.35, "took {} s", stats.wall_s);
}

#[test]
fn a_second_buffer_overlaps_the_next_task_with_computing() {
    // The master takes 40 ms to produce each task, a worker 40 ms to compute it. With one
    // buffer the worker waits for each task to be produced (about 80 ms a task); with two,
    // the next task is produced while the current one computes (about 40 ms a task).
    let run = |buffers| {
        let naps = Naps {
            produce_millis: 40,
            ..Naps::new(12, 40)
        };
        let (stats, problem) = run_cluster(naps, &[1.0], quiet(buffers, false), Box::new(OnDemand));
        assert!(problem.gathered.iter().all(|&n| n == 1));
        stats.wall_s
    };
    let (one, two) = (run(1), run(2));
    assert!(
        two < 0.75 * one,
        "one buffer {one:.3} s, two buffers {two:.3} s"
    );
}

#[test]
fn a_panicking_task_fails_the_run_with_its_message() {
    let machines = MachineFile::parse(Path::new("test.hosts"), "master\nw1\nw2\nw3\n").unwrap();
    let config =
        ConfigFile::parse(Path::new("run.toml"), "[run]\nstatistics_interval = 0\n").unwrap();
    let naps = Naps {
        panic_at: Some(5),
        ..Naps::new(40, 5)
    };
    let start = std::time::Instant::now();
    let error = match play_in_threads(&machines, &config, Some(naps), None) {
        Ok(_) => panic!("the run should fail"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains("task 5 panicked: nap 5 cannot sleep") && error.contains("rank"),
        "{error}"
    );
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_result_for_no_task_is_a_protocol_error_not_a_panic() {
    use hmw_core::protocol::{encode, ToMaster, WireResult};
    use hmw_transport::Transport;
    let machines = MachineFile::parse(Path::new("test.hosts"), "master\nrogue\n").unwrap();
    let mut transports = LocalTransport::cluster(2).into_iter();
    let mut master_transport = transports.next().unwrap();
    let mut rogue = transports.next().unwrap();
    // A peer that asks for work, then answers with a result that stands for no task.
    rogue.send(0, encode(&ToMaster::Ready { room: 1 })).unwrap();
    let empty = WireResult {
        ids: Default::default(),
        operations: 0.0,
        busy_s: 0.0,
        decode_s: 0.0,
        encode_s: 0.0,
        body: vec![],
    };
    rogue
        .send(
            0,
            encode(&ToMaster::Result {
                result: empty,
                room: 0,
            }),
        )
        .unwrap();
    let master = Master::new(
        &mut master_transport,
        &machines,
        quiet(1, false),
        Box::new(OnDemand),
        ProblemSource::new(Naps::new(3, 1)),
    )
    .unwrap();
    let error = master.run().err().expect("the run fails").to_string();
    assert!(
        error.contains("protocol violation") && error.contains("rank 1"),
        "{error}"
    );
}

/// An application's own scheduler: never serves rank 1, prefers the highest rank, and gives
/// rank 3 batches of three.
struct NotRankOne;

impl Scheduler for NotRankOne {
    fn pick(&mut self, waiting: &Waiting) -> Option<usize> {
        waiting.highest_rank().filter(|&rank| rank != 1)
    }

    fn batch_size(&mut self, demand: &Demand) -> usize {
        if demand.worker == 3 {
            3
        } else {
            1
        }
    }
}

#[test]
fn an_application_scheduler_decides_who_gets_work() {
    let machines = MachineFile::parse(Path::new("test.hosts"), "master\nw1\nw2\nw3\n").unwrap();
    let config =
        ConfigFile::parse(Path::new("run.toml"), "[run]\nstatistics_interval = 0\n").unwrap();
    let make: MakeScheduler = Arc::new(|_run: &RunConfig| Box::new(NotRankOne) as Box<_>);
    let outcome = play_in_threads_with(
        &machines,
        &config,
        Some(Naps::new(30, 2)),
        None,
        Some(make),
        None,
    )
    .unwrap();
    let Outcome::Master { problem, stats } = outcome else {
        panic!("rank 0 is the master");
    };
    assert!(problem.gathered.iter().all(|&n| n == 1));
    let done: Vec<u64> = stats.workers.iter().map(|w| w.tasks_done).collect();
    // The default would have given every worker some: this one gives rank 1 none.
    assert_eq!(done[0], 0, "{done:?}");
    assert_eq!(done.iter().sum::<u64>(), 30);
    assert!(done[2] > 0 && done[1] > 0, "{done:?}");
}

#[test]
fn the_driver_runs_the_core_a_simulator_builds() {
    // The core is built alone, as the property tests and a simulator build it, then handed
    // to the driver that runs under MPI (here over the in-process transport).
    let machines = MachineFile::parse(Path::new("test.hosts"), "master\nw1\nw2\n").unwrap();
    let config = quiet(2, true);
    let core: MasterCore<ProblemSource<Naps>> = MasterCore::new(
        &machines,
        config.clone(),
        Box::new(OnDemand),
        ProblemSource::new(Naps::new(10, 1)),
    );
    let mut transports = LocalTransport::cluster(3).into_iter();
    let mut master_transport = transports.next().unwrap();
    let workers: Vec<_> = transports
        .map(|mut transport| {
            let rank = hmw_transport::Transport::rank(&transport);
            let context = WorkerContext::of(&machines, rank);
            thread::spawn(move || Worker::<Nap>::new(&mut transport, context, 2).run())
        })
        .collect();
    let master = Master::with_core(&mut master_transport, core);
    let (stats, source) = master.run().unwrap();
    for worker in workers {
        worker.join().unwrap().unwrap();
    }
    assert_eq!(stats.tasks, 10);
    assert!(source.into_problem().gathered.iter().all(|&n| n == 1));
}
