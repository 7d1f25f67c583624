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
/// CM's `nr=`), keeping queued what its CMs to further clusters send ahead.
pub fn core<T: Task>(
    machines: &MachineFile,
    config: &ConfigFile,
    upstream: usize,
    scheduler: Box<dyn Scheduler>,
    splitter: Option<Box<dyn Splitter<T>>>,
) -> SubMasterCore<T> {
    let nr = machines.ranks[upstream].annotations.nr.unwrap_or(1);
    // Tasks to keep queued: what each CM to a further cluster sends ahead (its window of
    // batches of nt tasks). The workers' own buffers are not queued again here: they fill
    // from the batches the upstream CM's window keeps on their way, and every task queued
    // beyond them is one more this cluster still holds when the run's last task is handed
    // out, computed while the other clusters wait.
    let depth = machines
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

#[cfg(test)]
mod tests {
    use std::{path::Path, time::Duration};

    use super::*;
    use crate::{core::Output, protocol::WireTask, TaskResult};

    #[derive(serde::Serialize, serde::Deserialize)]
    struct One;
    #[derive(serde::Serialize, serde::Deserialize)]
    struct Done;
    impl Task for One {
        type Output = Done;
        fn execute(self, _: &crate::WorkerContext) -> Done {
            Done
        }
    }
    impl TaskResult for Done {
        fn join(&mut self, _: Self) -> Result<(), Self> {
            Ok(())
        }
    }

    /// Room for batches that `out` offers rank `to`.
    fn room_to(out: &[Output], to: usize) -> u32 {
        out.iter()
            .filter_map(|o| match o {
                Output::Send { to: t, bytes } if *t == to => match decode(bytes, "") {
                    Ok(ToMaster::Ready { room }) => Some(room),
                    _ => None,
                },
                _ => None,
            })
            .sum()
    }

    /// Two workers of two buffers, no further cluster: the sub-master asks upstream for its
    /// workers' four tasks and one to queue, not for another four queued behind them (each
    /// of those would be a task this cluster still holds at the end of the run).
    #[test]
    fn a_sub_master_queues_one_task_beyond_its_workers_buffers() {
        let machines = MachineFile::parse(
            Path::new("a.hosts"),
            "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=1\nw\nw\n",
        )
        .unwrap();
        let mut config = ConfigFile::defaults();
        config.run.worker_buffers = 2;
        config.run.wait_for_links = false;
        let upstream = 1;
        let mut core = core::<One>(
            &machines,
            &config,
            upstream,
            config.run.scheduler.scheduler(config.run.chunk_settings()),
            None,
        );
        let now = Duration::ZERO;
        let mut out = Vec::new();
        core.start(now, &mut out).unwrap();
        for worker in [2, 3] {
            core.handle(now, worker, &encode(&ToMaster::Ready { room: 2 }), &mut out)
                .unwrap();
        }
        // Upstream answers every room offered, one task per batch, until no more is asked.
        let mut offered = room_to(&out, upstream);
        let mut sent = 0;
        while sent < offered && sent < 100 {
            out.clear();
            let task = WireTask {
                id: sent as u64,
                operations: 1.0,
                body: encode(&One),
            };
            core.handle(
                now,
                upstream,
                &encode(&ToWorker::Tasks(vec![task])),
                &mut out,
            )
            .unwrap();
            sent += 1;
            offered += room_to(&out, upstream);
        }
        assert_eq!(sent, 5, "4 in the workers' buffers and 1 queued");
    }
}
