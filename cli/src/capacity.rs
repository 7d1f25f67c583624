//! A worker's capacity (106): the cores its process gets while it works, and its `perf` taken
//! at them, from a run's statistics. `hmw calibrate` records both for each worker; `hmw report`
//! takes a run's the same way to set it against the calibration.

use hmw_core::stats::WorkerStats;

/// A worker's busy-second rate scaled from its compute thread's share of a core to its
/// capacity (106), and that capacity, as the calibration takes them from a run's statistics;
/// `None` when its CPU time tells nothing: none measured, tasks that wait rather than compute
/// ([`hmw_core::Task::waits`]), or a compute thread under 5 % of a core (its tasks ran on the
/// communication thread).
pub(crate) fn perf_at_capacity(worker: &WorkerStats) -> Option<(f64, f64)> {
    let (working_s, share) = computing_share(worker)?;
    let capacity = capacity(worker, working_s, share);
    Some((worker.ops_per_s * capacity / share, capacity))
}

/// The same without (106) (`[model] capacity = false`, the thesis's form): the busy-second
/// rate and the compute thread's share of a core, the count before (106).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))] // only calibrate
pub(crate) fn perf_at_share(worker: &WorkerStats) -> Option<(f64, f64)> {
    let (_, share) = computing_share(worker)?;
    Some((worker.ops_per_s, share))
}

/// [`working_share`] of a worker whose CPU time tells something ([`perf_at_capacity`]).
fn computing_share(worker: &WorkerStats) -> Option<(f64, f64)> {
    let (working_s, share) = working_share(worker);
    let computes = share >= 0.05 && worker.cpu_s > 0.0;
    (!worker.tasks_wait && computes).then_some((working_s, share))
}

/// The seconds a worker's compute thread spent on its tasks (decoding, executing, encoding),
/// and the share of a core it got meanwhile.
pub(crate) fn working_share(worker: &WorkerStats) -> (f64, f64) {
    let working_s = worker.busy_s + worker.decode_s + worker.encode_s;
    (working_s, worker.compute_cpu_s / working_s)
}

/// (106) `a = max(share, min(cpu_s / working_s, cpu_s / active_s))`: the cores a worker's
/// process gets while it works. Its compute thread executed at `share` because its
/// communication thread took the rest of `a` meanwhile; counted again in (100), that time
/// would be counted twice. `cpu_s / working_s` is `a` when the communication ran while the
/// compute thread worked; when it also ran between tasks (a worker waiting for its next
/// part) it is more, and `cpu_s / active_s` (first task in to last result out) bounds it.
/// Statistics without `active_s` give `share`, the count before (106).
fn capacity(worker: &WorkerStats, working_s: f64, share: f64) -> f64 {
    let over_working = worker.cpu_s / working_s;
    let over_active = if worker.active_s > 0.0 {
        worker.cpu_s / worker.active_s
    } else {
        share
    };
    over_working.min(over_active).max(share)
}
