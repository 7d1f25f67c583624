//! The sub-master's driver: an external cluster's master, the master's loop
//! ([`crate::drivers::master::Master`]) around a [`hmw_core::roles::SubMasterCore`], which
//! asks its communication manager (the *upstream* rank) for inter-cluster tasks. At the end
//! the core sends its cluster's statistics up; if it cannot go on, it tells its parent cluster
//! first.

use hmw_core::{
    app::{Splitter, Task},
    config::ConfigFile,
    machinefile::MachineFile,
    roles::SubMasterCore,
    scheduler::Scheduler,
    stats::RunStats,
};
use hmw_transport::Transport;

use crate::{drivers::master::Master, error::RunError};

/// Play the sub-master of `machines` until its CM says stop; its core then sends the
/// cluster's statistics up (or, if it cannot go on, tells its parent cluster it is lost).
/// Returns them.
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
    let (stats, _) = Master::with_core(transport, core)
        .feeding(config.run.live_json.as_deref())
        .run()?;
    Ok(stats)
}
