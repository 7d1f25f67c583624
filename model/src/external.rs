//! An external cluster: tasks cross the WAN from the master to the sub-master, local tasks the
//! sub-cluster's LAN (`docs/model.md` section 2, "External cluster").
//!
//! The one-to-many forms (`nt` local tasks per inter-cluster task, `nr` local results per
//! inter-cluster result) reduce to the one-to-one forms when `nt = nr = 1`; both are here, and
//! the tests check the reduction.

use super::execution::{buffered_last_task_tail, reassigned_last_task_tail};
use super::limits::PerformanceLimits;
use super::local::link_limit;

/// Equations (15) and (19): `tc_task_msm = s_task_inter / tput_in`, the time to send one
/// inter-cluster task from the master to the sub-master (simplified to the WAN time).
pub fn inter_task_transfer_time(inter_task_bytes: f64, wan_in_bytes_per_s: f64) -> f64 {
    inter_task_bytes / wan_in_bytes_per_s
}

/// Section 2, after (15): `tc_task_sc = s_task / tput_sc` and `tc_result_sc = s_result /
/// tput_sc`, the time of one local message on the sub-cluster's LAN.
pub fn sub_cluster_transfer_time(bytes: f64, lan_bytes_per_s: f64) -> f64 {
    bytes / lan_bytes_per_s
}

/// Equation (18): one-to-one startup, `T_up = tc_task_msm * (W + 1)/2 + tc_task_sc`.
pub fn startup_time_one_to_one(
    inter_task_transfer_time: f64,
    sub_cluster_task_time: f64,
    workers: usize,
) -> f64 {
    inter_task_transfer_time * (workers as f64 + 1.0) / 2.0 + sub_cluster_task_time
}

/// Equation (20): the wait of worker `j` (1-based) for its first task,
/// `ceil(j/nt) * tc_task_msm + ((j-1) mod nt + 1) * tc_task_sc` (`nt` at least 1, `j` at least
/// 1).
pub fn worker_startup_wait(
    worker: u64,
    tasks_per_inter_task: u64,
    inter_task_transfer_time: f64,
    sub_cluster_task_time: f64,
) -> f64 {
    let nt = tasks_per_inter_task.max(1);
    let worker = worker.max(1);
    let inter_tasks_before = worker.div_ceil(nt);
    let position_in_inter_task = (worker - 1) % nt + 1;
    inter_tasks_before as f64 * inter_task_transfer_time
        + position_in_inter_task as f64 * sub_cluster_task_time
}

/// Equations (20)(21): one-to-many startup, the mean over the `W` workers of their wait (20).
pub fn startup_time(
    workers: usize,
    tasks_per_inter_task: u64,
    inter_task_transfer_time: f64,
    sub_cluster_task_time: f64,
) -> f64 {
    if workers == 0 {
        return 0.0;
    }
    let total: f64 = (1..=workers as u64)
        .map(|j| {
            worker_startup_wait(
                j,
                tasks_per_inter_task,
                inter_task_transfer_time,
                sub_cluster_task_time,
            )
        })
        .sum();
    total / workers as f64
}

/// The arguments of the steady-performance `min` of an external cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExternalLimitsInput {
    /// `cperf`.
    pub cluster_performance: f64,
    /// `oper`.
    pub oper: f64,
    /// `s_comm = s_task + s_result`.
    pub comm_bytes: f64,
    /// `s_task_inter`.
    pub inter_task_bytes: f64,
    /// `s_result_inter`.
    pub inter_result_bytes: f64,
    /// `tput_sc`.
    pub lan_bytes_per_s: f64,
    /// `tput_in`.
    pub wan_in_bytes_per_s: f64,
    /// `tput_out`.
    pub wan_out_bytes_per_s: f64,
    /// `nt`.
    pub tasks_per_inter_task: u64,
    /// `nr`.
    pub results_per_inter_result: u64,
}

/// Equations (32) and (36): `perf_ste = min(cperf, oper*tput_sc/s_comm,
/// oper*nt*tput_in/s_task_inter, oper*nr*tput_out/s_result_inter)`, returned as its four
/// arguments (with `nt = nr = 1` and inter sizes equal to the local ones this is (32)). A link
/// nothing crosses (zero bytes) has no limit (infinite).
pub fn performance_limits(input: &ExternalLimitsInput) -> PerformanceLimits {
    PerformanceLimits {
        compute: input.cluster_performance,
        lan: link_limit(input.oper * input.lan_bytes_per_s, input.comm_bytes),
        master: f64::INFINITY,
        cm: f64::INFINITY,
        wan_in: link_limit(
            input.oper * input.tasks_per_inter_task as f64 * input.wan_in_bytes_per_s,
            input.inter_task_bytes,
        ),
        wan_out: link_limit(
            input.oper * input.results_per_inter_result as f64 * input.wan_out_bytes_per_s,
            input.inter_result_bytes,
        ),
    }
}

/// Equation (31): `T_ste = tasks * oper / perf_ste`.
pub fn steady_time(tasks: f64, oper: f64, steady_performance: f64) -> f64 {
    tasks * oper / steady_performance
}

/// Equation (48): `tc_result_smm = s_result_inter / tput_out`, the time to send one
/// inter-cluster result from the sub-master to the master.
pub fn inter_result_transfer_time(inter_result_bytes: f64, wan_out_bytes_per_s: f64) -> f64 {
    inter_result_bytes / wan_out_bytes_per_s
}

/// Best end, one-to-one: `T_best_end = tc_result_sc + (W + 1)/2 * tc_result_smm`.
///
/// The source's closed form (47) prints `(W - 1)/2`; its sum (45) and its tables give
/// `(W + 1)/2`, which is what this implements.
pub fn best_end_time_one_to_one(
    sub_cluster_result_time: f64,
    inter_result_transfer_time: f64,
    workers: usize,
) -> f64 {
    sub_cluster_result_time + (workers as f64 + 1.0) / 2.0 * inter_result_transfer_time
}

/// Equations (52)(53): best end, one-to-many,
/// `T_best_end = (nr + 1)/2 * tc_result_sc + (ceil(W/nr) + 1)/2 * tc_result_smm` (`nr` at
/// least 1).
pub fn best_end_time(
    sub_cluster_result_time: f64,
    inter_result_transfer_time: f64,
    workers: usize,
    results_per_inter_result: u64,
) -> f64 {
    let nr = results_per_inter_result.max(1);
    let inter_results = (workers as u64).div_ceil(nr);
    (nr as f64 + 1.0) / 2.0 * sub_cluster_result_time
        + (inter_results as f64 + 1.0) / 2.0 * inter_result_transfer_time
}

/// Equations (49) and (54): worst end of a computation-bound cluster without reassignment,
/// `(oper / min(perf)) * (W-1)/W + tc_result_sc + tc_result_smm`; with `worker_buffers` tasks
/// held per worker the first term is (99)'s (one buffer: (49)).
pub fn worst_end_time_computation_bound(
    oper: f64,
    perfs: &[f64],
    worker_buffers: u32,
    sub_cluster_result_time: f64,
    inter_result_transfer_time: f64,
) -> f64 {
    buffered_last_task_tail(oper, perfs, worker_buffers)
        + sub_cluster_result_time
        + inter_result_transfer_time
}

/// Equations (50) and (55): worst end of a computation-bound cluster with reassignment,
/// `tc_result_sc + (1/W) * sum_{i != fastest} oper/perf[i] + tc_result_smm`.
pub fn worst_end_time_computation_bound_reassigned(
    oper: f64,
    perfs: &[f64],
    sub_cluster_result_time: f64,
    inter_result_transfer_time: f64,
) -> f64 {
    sub_cluster_result_time + reassigned_last_task_tail(oper, perfs) + inter_result_transfer_time
}

/// Equations (51) and (56): worst end of a communication-bound cluster,
/// `nr * tc_result_sc + ceil(W/nr) * tc_result_smm` (with `nr = 1`: (51); `nr` at least 1).
pub fn worst_end_time_communication_bound(
    sub_cluster_result_time: f64,
    inter_result_transfer_time: f64,
    workers: usize,
    results_per_inter_result: u64,
) -> f64 {
    let nr = results_per_inter_result.max(1);
    let inter_results = (workers as u64).div_ceil(nr);
    nr as f64 * sub_cluster_result_time + inter_results as f64 * inter_result_transfer_time
}

/// Equation (96): startup behind a WAN with latency, `T_up_rtt = T_up + rtt`. The master's
/// clock starts when every worker has asked for work; the sub-master's request then crosses
/// the WAN up (`rtt/2`) and its first inter-cluster task comes back down (`rtt/2` more, its
/// transfer time being in `T_up` already, (18)/(21)): each worker's wait (20) grows by one
/// round trip, and so does their mean.
pub fn startup_time_with_latency(startup_time: f64, round_trip_s: f64) -> f64 {
    startup_time + round_trip_s
}

/// Equation (97): end behind a WAN with latency, `T_end_rtt = T_end + rtt/2`, for the best
/// and the worst end alike. The last inter-cluster result leaves the sub-master after the
/// times (47 corrected)-(56) count, and reaches the master one way later.
pub fn end_time_with_latency(end_time: f64, round_trip_s: f64) -> f64 {
    end_time + round_trip_s / 2.0
}

/// Equation (171): startup behind a link that warms up, `T_up_ramp = T_up_rtt + phi_in *
/// L_in`. `L_in` (170) is what the link, just connected, loses carrying tasks against its
/// steady rate; `phi_in = min(1, perf_ste * s_task_inter / (oper * nt * tput_in))` the share
/// of that rate the cluster's steady state draws ([`link_share`]). With the link's rate rising
/// linearly to its steady value, a cluster that needs a share `phi` of it waits `phi` times
/// the lag before its workers are fed as in the steady state.
pub fn startup_time_with_ramp(startup_time: f64, share_in: f64, ramp_in_s: f64) -> f64 {
    startup_time + share_in.clamp(0.0, 1.0) * ramp_in_s.max(0.0)
}

/// Equation (172): end behind a link that warms up, `T_end_ramp = T_end_rtt + L_out` for a
/// cluster whose results the WAN out holds back (bottleneck `wan_out`), `T_end_rtt` otherwise.
/// The results' link warms when the first results leave; a link with room beyond what the
/// cluster sends catches up on what its ramp held back, one that is the bottleneck never
/// does, and its last result arrives `L_out` (170) later.
pub fn end_time_with_ramp(end_time: f64, results_bound: bool, ramp_out_s: f64) -> f64 {
    if results_bound {
        end_time + ramp_out_s.max(0.0)
    } else {
        end_time
    }
}

/// The share of a link's rate a cluster's steady state draws, `min(1, need / rate)` (171):
/// `need` bytes per second of the link's `rate`; 0 for a link without a rate.
pub fn link_share(need_bytes_per_s: f64, rate_bytes_per_s: f64) -> f64 {
    if rate_bytes_per_s > 0.0 && need_bytes_per_s.is_finite() {
        (need_bytes_per_s / rate_bytes_per_s).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Equation (98): the request window that keeps a WAN with latency busy,
/// `window = ceil(perf_ste * rtt / (oper * nt)) + 2` inter-cluster tasks sent ahead of the
/// sub-master's requests. A CM that sends `w` inter-cluster tasks per round trip delivers at
/// most `w * nt * oper / rtt` basic operations per second, so the cluster keeps its steady
/// performance while `w >= perf_ste * rtt / (oper * nt)` (the bandwidth-delay product in
/// inter-cluster tasks); the two more cover the task in transfer at each end. `hmw launch`
/// gives each CM this window, so the window never lowers `perf_ste` in a run it lays out;
/// `None` without a round trip (the CM's configured window then applies).
pub fn request_window(
    steady_performance: f64,
    oper: f64,
    tasks_per_inter_task: u64,
    round_trip_s: f64,
) -> Option<u64> {
    if !(round_trip_s > 0.0 && steady_performance.is_finite() && oper > 0.0) {
        return None;
    }
    let bdp = steady_performance * round_trip_s / (oper * tasks_per_inter_task.max(1) as f64);
    Some(bdp.ceil() as u64 + 2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Bottleneck;

    // Test vectors: the Spanish cluster of the first example with the pinned workers aoquir3,
    // aoquir7, aoquir10 (LAN 9,599,164 B/s, WAN in 21,802 and out 21,206 B/s, task 4 B,
    // result 2,310,244 B); expected values computed by hand from the equations.
    const TASK: f64 = 4.0;
    const RESULT: f64 = 2_310_244.0;
    const LAN: f64 = 9_599_164.0;
    const WAN_IN: f64 = 21_802.0;
    const WAN_OUT: f64 = 21_206.0;
    const PINNED: [f64; 3] = [4.6354e-3, 2.0293e-3, 2.0507e-3];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    fn limits_input(nt: u64, nr: u64, inter_result: f64) -> ExternalLimitsInput {
        ExternalLimitsInput {
            cluster_performance: PINNED.iter().sum(),
            oper: 1.0,
            comm_bytes: TASK + RESULT,
            inter_task_bytes: nt as f64 * TASK,
            inter_result_bytes: inter_result,
            lan_bytes_per_s: LAN,
            wan_in_bytes_per_s: WAN_IN,
            wan_out_bytes_per_s: WAN_OUT,
            tasks_per_inter_task: nt,
            results_per_inter_result: nr,
        }
    }

    #[test]
    fn transfer_times_eq15_eq48() {
        assert!(close(
            inter_task_transfer_time(TASK, WAN_IN),
            1.834_694_064_764_700_4e-4
        ));
        assert!(close(
            sub_cluster_transfer_time(TASK, LAN),
            4.167_029_545_489_586_5e-7
        ));
        assert!(close(
            sub_cluster_transfer_time(RESULT, LAN),
            0.240_671_375_132_251_1
        ));
        assert!(close(
            inter_result_transfer_time(RESULT, WAN_OUT),
            108.942_940_677_166_85
        ));
    }

    #[test]
    fn startup_one_to_one_eq18_and_its_one_to_many_generalisation_eq20_eq21() {
        let tc_msm = inter_task_transfer_time(TASK, WAN_IN);
        let tc_sc = sub_cluster_transfer_time(TASK, LAN);
        let one_to_one = startup_time_one_to_one(tc_msm, tc_sc, 3);
        assert!(close(one_to_one, 3.673_555_159_074_89e-4));
        assert!(close(startup_time(3, 1, tc_msm, tc_sc), one_to_one));
        // nt = 2, W = 5: waits 1,1 / 2,2 / 3 inter-cluster tasks plus 1,2,1,2,1 local ones
        let tc_msm2 = inter_task_transfer_time(2.0 * TASK, WAN_IN);
        let waits: Vec<f64> = (1..=5)
            .map(|j| worker_startup_wait(j, 2, tc_msm2, tc_sc))
            .collect();
        let expected = [
            3.673_555_159_074_89e-4,
            3.677_722_188_620_38e-4,
            7.342_943_288_604_292e-4,
            7.347_110_318_149_78e-4,
            1.101_233_141_813_369_3e-3,
        ];
        for (w, e) in waits.iter().zip(expected) {
            assert!(close(*w, e), "{w} != {e}");
        }
        assert!(close(
            startup_time(5, 2, tc_msm2, tc_sc),
            6.610_732_474_516_607e-4
        ));
        assert_eq!(startup_time(0, 2, tc_msm2, tc_sc), 0.0);
    }

    #[test]
    fn zero_units_count_as_one_instead_of_dividing_by_zero() {
        assert_eq!(
            worker_startup_wait(3, 0, 2.0, 1.0),
            worker_startup_wait(3, 1, 2.0, 1.0)
        );
        assert_eq!(
            worker_startup_wait(0, 2, 2.0, 1.0),
            worker_startup_wait(1, 2, 2.0, 1.0)
        );
        assert_eq!(best_end_time(1.0, 2.0, 4, 0), best_end_time(1.0, 2.0, 4, 1));
        assert_eq!(
            worst_end_time_communication_bound(1.0, 2.0, 4, 0),
            worst_end_time_communication_bound(1.0, 2.0, 4, 1)
        );
        // nothing crosses a link of zero bytes: no limit, even when oper * tput underflows
        let mut input = limits_input(1, 1, 0.0);
        input.oper = 1e-320;
        input.wan_out_bytes_per_s = 1e-10;
        assert_eq!(performance_limits(&input).wan_out, f64::INFINITY);
    }

    #[test]
    fn steady_performance_and_bottleneck_eq31_eq32_eq36() {
        let limits = performance_limits(&limits_input(1, 1, RESULT));
        assert!(close(limits.compute, 8.715_399_999_999_998e-3));
        assert!(close(limits.lan, 4.155_036_169_277_064));
        assert!(close(limits.wan_in, 5_450.5));
        assert!(close(limits.wan_out, 9.179_117_011_017_018e-3));
        assert_eq!(limits.bottleneck(), Bottleneck::Compute);
        assert!(close(
            steady_time(330.0, 1.0, limits.steady_performance()),
            37_864.010_831_401_894
        ));
        // all eight Spanish workers: WAN-out bound
        let mut all = limits_input(1, 1, RESULT);
        all.cluster_performance = 21.7125e-3;
        assert_eq!(performance_limits(&all).bottleneck(), Bottleneck::WanOut);
        // (36): nt = 2 with default inter sizes leaves the WAN-in limit unchanged...
        let default_sizes = performance_limits(&limits_input(2, 3, 3.0 * RESULT));
        assert!(close(default_sizes.wan_in, 5_450.5));
        assert!(close(default_sizes.wan_out, 9.179_117_011_017_018e-3));
        // ...while three results summed into one of the same size triple the WAN-out limit
        let reduced = performance_limits(&limits_input(1, 3, RESULT));
        assert!(close(reduced.wan_out, 2.753_735_103_305_105_3e-2));
    }

    #[test]
    fn best_end_uses_w_plus_one_eq47_corrected_and_eq52_eq53() {
        let tc_sc = sub_cluster_transfer_time(RESULT, LAN);
        let tc_smm = inter_result_transfer_time(RESULT, WAN_OUT);
        let one_to_one = best_end_time_one_to_one(tc_sc, tc_smm, 3);
        assert!(close(one_to_one, 218.126_552_729_465_94));
        assert!(close(best_end_time(tc_sc, tc_smm, 3, 1), one_to_one));
        let tc_smm3 = inter_result_transfer_time(3.0 * RESULT, WAN_OUT);
        assert!(close(
            best_end_time(tc_sc, tc_smm3, 5, 3),
            490.724_575_797_515_3
        ));
    }

    #[test]
    fn latency_adds_a_round_trip_before_and_half_one_after_eq96_eq97() {
        // two-clusters.toml's spain at a 0.2 s round trip: (18) gives 3.2e-4 s of startup
        let startup = startup_time_one_to_one(1040.0 / 5e6, 1040.0 / 3.1e9, 3);
        assert!(close(startup, 4.163_354_838_709_677e-4));
        assert!(close(
            startup_time_with_latency(startup, 0.2),
            0.200_416_335_483_870_97
        ));
        assert_eq!(end_time_with_latency(0.1, 0.2), 0.2);
        assert_eq!(startup_time_with_latency(1.5, 0.0), 1.5);
        assert_eq!(end_time_with_latency(1.5, 0.0), 1.5);
    }

    #[test]
    fn a_ramp_delays_the_start_by_the_share_needed_and_a_bound_end_eq171_eq172() {
        // Half the link needed, 0.4 s lost to its ramp: 0.2 s more startup.
        assert!(close(startup_time_with_ramp(1.0, 0.5, 0.4), 1.2));
        assert!(close(startup_time_with_ramp(1.0, 1.5, 0.4), 1.4));
        assert_eq!(startup_time_with_ramp(1.0, 0.5, 0.0), 1.0);
        // The results' ramp counts at the end of a cluster they hold back only.
        assert!(close(end_time_with_ramp(0.3, true, 0.2), 0.5));
        assert_eq!(end_time_with_ramp(0.3, false, 0.2), 0.3);
        assert_eq!(link_share(4e6, 8e6), 0.5);
        assert_eq!(link_share(16e6, 8e6), 1.0);
        assert_eq!(link_share(1.0, 0.0), 0.0);
    }

    #[test]
    fn the_window_covers_the_bandwidth_delay_product_eq98() {
        // 30 tasks/s for 0.2 s is 6 tasks in flight: 6 + 2 one by one, 2 + 2 by fours
        assert_eq!(request_window(30.0, 1.0, 1, 0.2), Some(8));
        assert_eq!(request_window(30.0, 1.0, 4, 0.2), Some(4));
        // 6.000001 tasks in flight round up
        assert_eq!(request_window(30.000_005, 1.0, 1, 0.2), Some(9));
        assert_eq!(request_window(30.0, 1.0, 1, 0.0), None);
        assert_eq!(request_window(f64::INFINITY, 1.0, 1, 0.2), None);
        // nt = 0 counts as 1
        assert_eq!(request_window(30.0, 1.0, 0, 0.2), Some(8));
    }

    #[test]
    fn worst_ends_eq49_eq50_eq51_eq56() {
        let tc_sc = sub_cluster_transfer_time(RESULT, LAN);
        let tc_smm = inter_result_transfer_time(RESULT, WAN_OUT);
        assert!(close(
            worst_end_time_computation_bound(1.0, &PINNED, 1, tc_sc, tc_smm),
            437.704_119_945_004_3
        ));
        assert!(close(
            worst_end_time_computation_bound_reassigned(1.0, &PINNED, tc_sc, tc_smm),
            435.989_988_460_900_35
        ));
        assert!(close(
            worst_end_time_communication_bound(tc_sc, tc_smm, 3, 1),
            327.069_493_406_632_8
        ));
        let tc_smm3 = inter_result_transfer_time(3.0 * RESULT, WAN_OUT);
        assert!(close(
            worst_end_time_communication_bound(tc_sc, tc_smm3, 5, 3),
            654.379_658_188_397_8
        ));
    }
}
