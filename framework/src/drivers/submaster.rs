//! The sub-master's driver: an external cluster's master, the master's loop
//! ([`crate::drivers::master::Master`]) around a [`hmw_core::roles::SubMasterCore`], which asks its
//! communication manager (the *upstream* rank) for inter-cluster tasks. At the end it sends
//! its cluster's statistics up; if it cannot go on, it tells its parent cluster first.

use crate::{drivers::master::Master, error::RunError};
use hmw_core::{
    app::{Splitter, Task},
    config::ConfigFile,
    machinefile::MachineFile,
    protocol::{decode, encode, ToMaster, ToWorker},
    roles::SubMasterCore,
    scheduler::Scheduler,
    stats::{ClusterReport, RunStats},
};
use hmw_transport::{idle::Idle, Transport};

/// Play the sub-master of `machines` until its CM says stop; then send the cluster's
/// statistics up. Returns them.
pub(crate) fn run<T: Task>(
    transport: &mut dyn Transport,
    machines: &MachineFile,
    config: &ConfigFile,
    scheduler: Box<dyn Scheduler>,
    splitter: Option<Box<dyn Splitter<T>>>,
) -> Result<RunStats, RunError> {
    let upstream = machines.upstream().ok_or_else(|| {
        RunError::setup("the master of a cluster without upstream has no problem")
    })?;
    let core = SubMasterCore::<T>::for_cluster(machines, config, upstream, scheduler, splitter);
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
