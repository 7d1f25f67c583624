//! The sub-master's driver: an external cluster's master, the master's loop
//! ([`crate::roles::master::Master`]) around a [`crate::core::SubMasterCore`], which asks its
//! communication manager (the *upstream* rank) for inter-cluster tasks. At the end it sends
//! its cluster's statistics up; if it cannot go on, it tells its parent cluster first.

use crate::{
    app::{Splitter, Task},
    config::ConfigFile,
    core::{MasterCore, SubMasterCore, SubMasterSource},
    error::RunError,
    idle::Idle,
    machinefile::MachineFile,
    protocol::{decode, encode, ToMaster, ToWorker},
    roles::master::Master,
    scheduler::Scheduler,
    stats::{ClusterReport, RunStats},
    transport::Transport,
};

/// The core of the sub-master of `machines` (whose upstream CM is `upstream`), as the MPI
/// driver, the in-process one and a simulator build it: joining `nr` results (the upstream
/// CM's `nr=`), keeping enough local tasks queued to keep every rank it feeds busy.
pub fn core<T: Task>(
    machines: &MachineFile,
    config: &ConfigFile,
    upstream: usize,
    scheduler: Box<dyn Scheduler>,
    splitter: Option<Box<dyn Splitter<T>>>,
) -> SubMasterCore<T> {
    let nr = machines.ranks[upstream].annotations.nr.unwrap_or(1);
    // Tasks to keep queued: a batch per buffer of each worker, and what each CM to a further
    // cluster sends ahead (its window of batches of nt tasks).
    let depth = machines.worker_ranks().len() * config.run.worker_buffers as usize
        + machines
            .master_facing_cms()
            .into_iter()
            .map(|rank| {
                let cm = &machines.ranks[rank].annotations;
                cm.window.map_or(config.cm.tasks_window, |w| w as usize) * cm.nt.unwrap_or(1)
            })
            .sum::<usize>();
    let source = SubMasterSource::<T>::new(upstream, nr, depth, splitter);
    MasterCore::new(machines, config.run.clone(), scheduler, source)
}

/// Play the sub-master of `machines` until its CM says stop; then send the cluster's
/// statistics up. Returns them.
pub fn run<T: Task>(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    config: &ConfigFile,
    scheduler: Box<dyn Scheduler>,
    splitter: Option<Box<dyn Splitter<T>>>,
) -> Result<RunStats, RunError> {
    let upstream = machines.upstream().ok_or_else(|| {
        RunError::Setup("the master of a cluster without upstream has no problem".into())
    })?;
    let core = core::<T>(machines, config, upstream, scheduler, splitter);
    let (stats, _) = match Master::with_core(transport, core).run() {
        Ok(ran) => ran,
        Err(error) => {
            report_lost(transport, upstream);
            return Err(error);
        }
    };
    let report = ClusterReport {
        name: stats.name.clone(),
        stats: Some(Box::new(stats.clone())),
        ..Default::default()
    };
    let bye = ToMaster::Bye {
        report: Some(Box::new(report)),
    };
    transport.send(upstream, encode(&bye))?;
    transport.flush()?;
    Ok(stats)
}

/// A sub-master that cannot go on tells its parent cluster at once, through its CM, so the
/// parent takes its tasks back now rather than after the link's deadline; it waits (a little)
/// for the CM to have passed it on.
fn report_lost(transport: &mut dyn Transport, upstream: usize) {
    if transport.send(upstream, encode(&ToMaster::Lost)).is_err() {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut idle = Idle::default();
    while std::time::Instant::now() < deadline {
        match transport.wait(idle.next_pause()) {
            Ok(Some(envelope)) if envelope.from == upstream => {
                if matches!(decode(&envelope.bytes, "message"), Ok(ToWorker::Stop)) {
                    return; // the CM's answer: passed on
                }
            }
            Ok(_) => {}
            Err(_) => return,
        }
    }
}
