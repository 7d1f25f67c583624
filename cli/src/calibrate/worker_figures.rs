//! What the model takes of a worker from the workers' run: its `perf`, and its own
//! communication `tput_own` (100) at its capacity (106).

use hmw_core::stats::WorkerStats;

use crate::capacity::{perf_at_capacity, perf_at_share, working_share};

/// What the model takes of a worker from the workers' run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct WorkerFigures {
    /// `perf`: basic operations per second of its time, at its capacity when its own
    /// communication is counted, else per busy second.
    pub(super) perf: f64,
    /// Its own communication, when counted.
    pub(super) own: Option<OwnCommunication>,
}

/// A worker's own communication (100) and the capacity (106) it was taken at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct OwnCommunication {
    /// `tput_own` (100).
    pub(super) bytes_per_s: f64,
    /// `a` (106), cores.
    pub(super) capacity: f64,
}

/// `perf` and `tput_own` (100) of a worker from the workers' run, whose tasks and results
/// carried `comm_bytes` each and executed `repeats` times.
///
/// Its own communication is the CPU time it spent on its messages per task — its process's
/// beside its compute thread's, and its compute thread's decoding of the task (once) and
/// encoding of the result. The compute thread is taken to decode and encode at the share of a
/// core it executed at (its CPU time over its decoding, busy and encoding seconds; on a CPU
/// quota every step is throttled alike: a worker of a tenth of a core whose decoding took as
/// many seconds as its compute thread's CPU time still executed at a tenth). Of the
/// communication thread's waiting while the tasks compute (`waiting_cpu_s`), which grows with
/// time, only a run's share counts: a task of the workers' run lasts `repeats` executions, a
/// task of a run one.
///
/// A run spends that CPU time and the executions' at the worker's capacity (106): `perf` is
/// the busy-second rate scaled from the compute thread's share to the capacity, and
/// `tput_own` moves `comm_bytes` per `own_cpu / capacity` seconds. With `capacity` false (the
/// plan's `[model] capacity`, off in the thesis's form) both are taken at the share instead,
/// the count before (106). Nothing is counted (`perf`
/// per busy second, no `tput_own`) when its tasks wait rather than compute
/// ([`hmw_core::Task::waits`]: its CPU is free for its messages meanwhile), when the run measured
/// no CPU time, when nothing was spent on messages, or when the compute thread used under 5 %
/// of a core (its tasks ran on the communication thread).
pub(super) fn worker_figures(
    worker: &WorkerStats,
    comm_bytes: f64,
    repeats: u32,
    capacity: bool,
) -> WorkerFigures {
    let (_, share) = working_share(worker);
    let coding_cpu_s = (worker.decode_s / f64::from(repeats) + worker.encode_s) * share;
    let waiting_cpu_s = worker.waiting_cpu_s * (1.0 - 1.0 / f64::from(repeats));
    let own_cpu_s = (worker.cpu_s - worker.compute_cpu_s - waiting_cpu_s + coding_cpu_s)
        / worker.tasks_computed as f64;
    let per_busy_second = WorkerFigures {
        perf: worker.ops_per_s,
        own: None,
    };
    let taken = if capacity {
        perf_at_capacity(worker)
    } else {
        perf_at_share(worker)
    };
    let Some((perf, capacity)) = taken.filter(|_| own_cpu_s > 0.0 && comm_bytes > 0.0) else {
        return per_busy_second;
    };
    let own = OwnCommunication {
        bytes_per_s: comm_bytes * capacity / own_cpu_s,
        capacity,
    };
    if !own.bytes_per_s.is_finite() {
        return per_busy_second;
    }
    WorkerFigures {
        perf,
        own: Some(own),
    }
}
