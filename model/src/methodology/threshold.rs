//! The minimum workload that keeps a cluster at the efficiency threshold
//! (`docs/model.md` section 3.1 step 2, equations (58) and (59)).

/// Equation (58): the smallest workload (basic operations) at which a cluster running alone
/// reaches efficiency `E`:
/// `workload_min = (T_up + T_worst_end) * perf_ste * cperf * E / (perf_ste - cperf * E)`.
///
/// `None` when `perf_ste <= cperf * E`: no workload reaches the threshold. When the product
/// overflows in that order it is computed as `(T_up + T_worst_end) * cperf * E * (perf_ste /
/// (perf_ste - cperf * E))`; a minimum beyond the largest finite number is infinite.
pub fn minimum_workload(
    startup: f64,
    worst_end: f64,
    steady_performance: f64,
    cluster_performance: f64,
    threshold: f64,
) -> Option<f64> {
    let margin = steady_performance - cluster_performance * threshold;
    if margin.is_nan() || margin <= 0.0 {
        return None;
    }
    let overhead = startup + worst_end;
    let minimum = overhead * steady_performance * cluster_performance * threshold / margin;
    if minimum.is_finite() {
        return Some(minimum);
    }
    let rearranged = overhead * cluster_performance * threshold * (steady_performance / margin);
    if rearranged.is_nan() {
        None
    } else {
        Some(rearranged)
    }
}

/// Equation (59): (58) for a computation-bound cluster (`perf_ste == cperf`),
/// `workload_min = (T_up + T_worst_end) * cperf * E / (1 - E)`; `None` when `E >= 1`.
pub fn minimum_workload_computation_bound(
    startup: f64,
    worst_end: f64,
    cluster_performance: f64,
    threshold: f64,
) -> Option<f64> {
    if threshold >= 1.0 {
        return None;
    }
    Some((startup + worst_end) * cluster_performance * threshold / (1.0 - threshold))
}

/// Section 3.1 step 2: minimum tasks `ceil(workload_min / oper)`; `None` when that is not a
/// number of tasks a problem can have (more than `u64::MAX`, infinite or not a number), so
/// that no problem reaches the threshold.
pub fn minimum_tasks(minimum_workload: f64, oper: f64) -> Option<u64> {
    let tasks = (minimum_workload / oper).ceil();
    // 2^64 is the first float beyond u64::MAX
    if (0.0..18_446_744_073_709_551_616.0).contains(&tasks) {
        Some(tasks as u64)
    } else if tasks < 0.0 {
        Some(0)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The Argentinian cluster alone: T_up = 5.6144e-6 s, worst end (43) = 634.35 s,
    // cperf = 1.586e-3 tasks/s, E = 0.8; expected values computed by hand.
    const T_UP: f64 = 5.614_434_336_383_219e-6;
    const T_END: f64 = 634.352_960_151_039_6;
    const CPERF: f64 = 1.586e-3;

    #[test]
    fn computation_bound_minimum_eq58_equals_eq59() {
        let general = minimum_workload(T_UP, T_END, CPERF, CPERF, 0.8).unwrap();
        let special = minimum_workload_computation_bound(T_UP, T_END, CPERF, 0.8).unwrap();
        assert!((general - 4.024_335_214_816_168).abs() < 1e-12);
        assert!((general - special).abs() < 1e-12);
        assert_eq!(minimum_tasks(general, 1.0), Some(5));
    }

    #[test]
    fn communication_bound_minimum_eq58() {
        // perf_ste = 0.9, cperf = 1, E = 0.8: (T_up + T_end) * 0.72 / 0.1
        let w = minimum_workload(1.0, 2.0, 0.9, 1.0, 0.8).unwrap();
        assert!((w - 21.6).abs() < 1e-9);
        assert_eq!(minimum_tasks(w, 2.0), Some(11));
    }

    #[test]
    fn unreachable_threshold() {
        assert_eq!(minimum_workload(1.0, 2.0, 0.8, 1.0, 0.8), None);
        assert_eq!(minimum_workload(1.0, 2.0, 0.5, 1.0, 0.8), None);
        assert_eq!(minimum_workload_computation_bound(1.0, 2.0, 1.0, 1.0), None);
        assert_eq!(minimum_workload(1.0, 2.0, 1.0, 1.0, 0.0), Some(0.0));
        assert_eq!(minimum_workload(1.0, 2.0, f64::NAN, 1.0, 0.8), None);
    }

    #[test]
    fn overflowing_minimums_are_rearranged_or_beyond_any_problem() {
        // (1e200 + 0) * 1e200 * 1e200 * 0.5 overflows in the written order; rearranged it is
        // 1e200 * 1e200 * 0.5 * (1e200 / (1e200 - 0.5e200)) = 1e400 / ... still infinite
        let huge = minimum_workload(1e200, 0.0, 1e200, 1e200, 0.5).unwrap();
        assert_eq!(huge, f64::INFINITY);
        assert_eq!(minimum_tasks(huge, 1.0), None);
        // (1e100 + 0) * 1e300 * 1e-100 * 0.5 / (1e300 - 0.5e-100): the written order overflows
        // (1e100 * 1e300), the rearranged one gives 1e100 * 1e-100 * 0.5 * 1 = 0.5
        let rearranged = minimum_workload(1e100, 0.0, 1e300, 1e-100, 0.5).unwrap();
        assert!((rearranged - 0.5).abs() < 1e-12, "{rearranged}");
        assert_eq!(minimum_tasks(rearranged, 1.0), Some(1));
        // counts beyond u64 are no number of tasks; 2^63 still is
        assert_eq!(minimum_tasks(1.9e19, 1.0), None);
        assert_eq!(minimum_tasks((1u64 << 63) as f64, 1.0), Some(1 << 63));
        assert_eq!(minimum_tasks(f64::NAN, 1.0), None);
        assert_eq!(minimum_tasks(0.0, 1.0), Some(0));
    }
}
