//! The local (main) cluster: the master and its workers share one LAN
//! (`docs/model.md` section 2, "Local cluster").

use super::execution::{buffered_last_task_tail, reassigned_last_task_tail};

/// Equation (11): `tc_task = s_task / tput_lan`, the time to send one task on the LAN.
pub fn task_transfer_time(task_bytes: f64, lan_bytes_per_s: f64) -> f64 {
    task_bytes / lan_bytes_per_s
}

/// Equation (12): `T_up = tc_task * (W + 1) / 2`, the mean wait of the `W` workers for their
/// first task.
pub fn startup_time(task_transfer_time: f64, workers: usize) -> f64 {
    task_transfer_time * (workers as f64 + 1.0) / 2.0
}

/// The LAN's limit on the steady performance, second argument of (26):
/// `oper * tput_lan / s_comm`; infinite (no limit) when tasks and results have no bytes.
pub fn lan_performance_limit(oper: f64, comm_bytes: f64, lan_bytes_per_s: f64) -> f64 {
    link_limit(oper * lan_bytes_per_s, comm_bytes)
}

/// A link's limit on the steady performance, `(oper * multiplier * tput) / bytes` as in (26),
/// (32) and (36): infinite when nothing crosses the link (`bytes == 0`), whatever the
/// numerator (which keeps an underflowed `0 / 0` from becoming NaN).
pub(crate) fn link_limit(operations_times_throughput: f64, bytes: f64) -> f64 {
    if bytes == 0.0 {
        f64::INFINITY
    } else {
        operations_times_throughput / bytes
    }
}

/// Equation (25): `T_ste = max(tasks*oper / cperf, tasks*s_comm / tput_lan)`.
pub fn steady_time(
    tasks: f64,
    oper: f64,
    comm_bytes: f64,
    cluster_performance: f64,
    lan_bytes_per_s: f64,
) -> f64 {
    (tasks * oper / cluster_performance).max(tasks * comm_bytes / lan_bytes_per_s)
}

/// Equation (26): `perf_ste = min(cperf, oper * tput_lan / s_comm)`.
pub fn steady_performance(
    cluster_performance: f64,
    oper: f64,
    comm_bytes: f64,
    lan_bytes_per_s: f64,
) -> f64 {
    cluster_performance.min(lan_performance_limit(oper, comm_bytes, lan_bytes_per_s))
}

/// Equation (37): `T_best_end = s_result * (W + 1) / (2 * tput_lan)`.
pub fn best_end_time(result_bytes: f64, lan_bytes_per_s: f64, workers: usize) -> f64 {
    result_bytes * (workers as f64 + 1.0) / (2.0 * lan_bytes_per_s)
}

/// Equation (39): worst end of a computation-bound cluster without reassignment,
/// `(oper / min(perf)) * (W - 1)/W + s_result / tput_lan`.
///
/// With `worker_buffers` tasks held per worker the first term is (99)'s (one buffer: (39)).
pub fn worst_end_time_computation_bound(
    oper: f64,
    perfs: &[f64],
    worker_buffers: u32,
    result_bytes: f64,
    lan_bytes_per_s: f64,
) -> f64 {
    buffered_last_task_tail(oper, perfs, worker_buffers) + result_bytes / lan_bytes_per_s
}

/// Equation (43): worst end of a computation-bound cluster with reassignment,
/// `s_result / tput_lan + (1/W) * sum_{i != fastest} oper / perf[i]`.
pub fn worst_end_time_computation_bound_reassigned(
    oper: f64,
    perfs: &[f64],
    result_bytes: f64,
    lan_bytes_per_s: f64,
) -> f64 {
    result_bytes / lan_bytes_per_s + reassigned_last_task_tail(oper, perfs)
}

/// Equation (44): worst end of a communication-bound cluster, `W * s_result / tput_lan`.
pub fn worst_end_time_communication_bound(
    result_bytes: f64,
    lan_bytes_per_s: f64,
    workers: usize,
) -> f64 {
    workers as f64 * result_bytes / lan_bytes_per_s
}

#[cfg(test)]
mod tests {
    use super::*;

    // Test vectors: the Argentinian cluster of the first example (LAN 1,068,674 B/s, workers
    // 0.7909e-3 and 0.7951e-3 tasks/s, task 4 B, result 2,310,244 B), and the Brazilian
    // workers on their LAN (987,614 B/s); expected values computed by hand from the equations.
    const LAN: f64 = 1_068_674.0;
    const TASK: f64 = 4.0;
    const RESULT: f64 = 2_310_244.0;
    const ARGENTINA: [f64; 2] = [0.7909e-3, 0.7951e-3];
    const BRAZIL_LAN: f64 = 987_614.0;
    const BRAZIL: [f64; 5] = [0.4683e-3, 1.4845e-3, 0.3642e-3, 0.3750e-3, 0.3743e-3];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    #[test]
    fn task_transfer_and_startup_eq11_eq12() {
        let tc = task_transfer_time(TASK, LAN);
        assert!(close(tc, 3.742_956_224_255_479e-6));
        assert!(close(startup_time(tc, 2), 5.614_434_336_383_219e-6));
    }

    #[test]
    fn steady_time_and_performance_eq25_eq26() {
        let cperf: f64 = ARGENTINA.iter().sum();
        let comm = TASK + RESULT;
        assert!(close(
            lan_performance_limit(1.0, comm, LAN),
            0.462_579_774_985_196_37
        ));
        // computation bound: perf_ste == cperf
        assert_eq!(steady_performance(cperf, 1.0, comm, LAN), cperf);
        assert!(close(
            steady_time(500.0, 1.0, comm, cperf, LAN),
            315_258.511_979_823_47
        ));
        // communication bound: a LAN 1,000 times slower
        let slow_lan = LAN / 1000.0;
        let perf_ste = steady_performance(cperf, 1.0, comm, slow_lan);
        assert!(close(perf_ste, 0.462_579_774_985_196_37e-3));
        // (25) equals tasks*oper / perf_ste in both regimes
        for lan in [LAN, slow_lan] {
            let perf_ste = steady_performance(cperf, 1.0, comm, lan);
            assert!(close(
                steady_time(500.0, 1.0, comm, cperf, lan),
                500.0 / perf_ste
            ));
        }
    }

    #[test]
    fn best_end_eq37() {
        assert!(close(
            best_end_time(RESULT, LAN, 2),
            3.242_678_309_755_828_3
        ));
    }

    #[test]
    fn worst_ends_eq39_eq43_eq44() {
        assert!(close(
            worst_end_time_computation_bound(1.0, &ARGENTINA, 1, RESULT, LAN),
            634.352_960_151_039_6
        ));
        assert!(close(
            worst_end_time_computation_bound(1.0, &BRAZIL, 1, RESULT, BRAZIL_LAN),
            2_198.934_494_868_710_3
        ));
        assert!(close(
            worst_end_time_computation_bound_reassigned(1.0, &BRAZIL, RESULT, BRAZIL_LAN),
            2_046.228_781_207_149_5
        ));
        assert!(close(
            worst_end_time_communication_bound(RESULT, LAN, 2),
            4.323_571_079_674_438
        ));
        assert!(close(
            worst_end_time_communication_bound(RESULT, BRAZIL_LAN, 5),
            11.696_087_742_782_1
        ));
    }
}
