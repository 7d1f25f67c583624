//! The cores the simulator builds are the types the drivers run.

use std::path::Path;

use hmw_core::{config::ConfigFile, machinefile::MachineFile, roles::SubMasterCore, WorkerContext};
use hmw_sim::{master_core, sub_master_core, SimProblem, SimTask, TaskCost};
use hmw_transport::local::LocalTransport;

use crate::drivers::{master::Master, worker::Worker};

/// The core the simulator builds for a main master is the type the master's driver runs:
/// handed to the driver, over the in-process transport, with worker drivers on threads, it
/// runs a real run to the end.
#[test]
fn the_drivers_run_the_cores_the_simulator_builds() {
    let machines = MachineFile::parse(Path::new("t.hosts"), "m\nw\nw\n").unwrap();
    let mut config = ConfigFile::defaults();
    config.run.statistics_interval = 0.0;
    let problem = SimProblem::new(40, TaskCost::fixed(1.0), 0);
    let core = master_core(&machines, &config, problem, &|run| {
        run.configured_scheduler()
    });
    let mut transports = LocalTransport::cluster(3).into_iter();
    let mut master_transport = transports.next().unwrap();
    let workers: Vec<_> = transports
        .enumerate()
        .map(|(i, mut transport)| {
            let context = WorkerContext::of(&machines, i + 1);
            std::thread::spawn(move || Worker::<SimTask>::new(&mut transport, context, 1).run())
        })
        .collect();
    let (stats, source) = Master::with_core(&mut master_transport, core)
        .run()
        .unwrap();
    for worker in workers {
        worker.join().unwrap().unwrap();
    }
    assert_eq!(stats.tasks, 40);
    assert!(source.into_problem().each_gathered_once());
    // The sub-master's core is what its driver's own constructor builds.
    let far = MachineFile::parse(
        Path::new("f.hosts"),
        "s\nc # S 0 7000 h name=b peer=a nr=2\nw\n",
    )
    .unwrap();
    let sub: SubMasterCore<SimTask> =
        sub_master_core(&far, &config, &|run| run.configured_scheduler());
    assert!(!sub.is_done());
}
