//! A result that reports the work its task actually did (`TaskResult::operations`) replaces
//! the task's estimate in the statistics; without one the estimate stands.

use std::{path::Path, thread};

use hmw_core::{
    config::RunConfig, machinefile::MachineFile, roles::ProblemSource, scheduler::OnDemand,
    Problem, RunStats, Task, TaskId, TaskResult, WorkerContext,
};
use hmw_transport::{local::LocalTransport, Transport};

use crate::drivers::{master::Master, worker::Worker};
use serde::{Deserialize, Serialize};

/// A search whose estimate is 1000 basic operations; it does `index + 1` of them, and says
/// so when `report` is set.
#[derive(Serialize, Deserialize)]
struct Search {
    index: u64,
    report: bool,
}

#[derive(Serialize, Deserialize)]
struct Found {
    done: u64,
    report: bool,
}

impl Task for Search {
    type Output = Found;
    fn execute(self, _: &WorkerContext) -> Found {
        Found {
            done: self.index + 1,
            report: self.report,
        }
    }
    fn operations(&self) -> f64 {
        1000.0
    }
}

impl TaskResult for Found {
    fn join(&mut self, other: Found) -> Result<(), Found> {
        self.done += other.done;
        Ok(())
    }
    fn operations(&self) -> Option<f64> {
        self.report.then_some(self.done as f64)
    }
}

struct Searches {
    tasks: u64,
    produced: u64,
    report: bool,
}

impl Problem for Searches {
    type Task = Search;
    fn next_task(&mut self) -> Option<Search> {
        (self.produced < self.tasks).then(|| {
            self.produced += 1;
            Search {
                index: self.produced - 1,
                report: self.report,
            }
        })
    }
    fn gather(&mut self, _: TaskId, _: Found) {}
}

fn run(report: bool) -> RunStats {
    let machines = MachineFile::parse(Path::new("test.hosts"), "master\nworker\nworker\n").unwrap();
    let mut transports = LocalTransport::cluster(machines.rank_count()).into_iter();
    let mut master_transport = transports.next().unwrap();
    let workers: Vec<_> = transports
        .map(|mut transport| {
            let rank = transport.rank();
            let context = WorkerContext::of(&machines, rank);
            thread::spawn(move || Worker::<Search>::new(&mut transport, context, 2).run())
        })
        .collect();
    let config = RunConfig {
        statistics_interval: 0.0,
        reassign_last_task: false,
        ..RunConfig::default()
    };
    let problem = Searches {
        tasks: 20,
        produced: 0,
        report,
    };
    let master = Master::new(
        &mut master_transport,
        &machines,
        config,
        Box::new(OnDemand),
        ProblemSource::new(problem),
    )
    .unwrap();
    let (stats, _) = master.run().unwrap();
    for worker in workers {
        worker.join().unwrap().unwrap();
    }
    stats
}

#[test]
fn a_result_reports_the_work_done_in_place_of_the_estimate() {
    let total = |stats: &RunStats| stats.workers.iter().map(|w| w.operations).sum::<f64>();
    // 1 + 2 + ... + 20 operations done.
    assert_eq!(total(&run(true)), 210.0);
    // Without a report, the estimates: 20 tasks of 1000.
    assert_eq!(total(&run(false)), 20_000.0);
}
