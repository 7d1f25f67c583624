//! What remapping brings when a node slows down during the run: the makespan with the
//! mapping kept (`never`) against the one with a remap, what the remap costs counted
//! (`docs/model.md`, "Pipelines", (160)-(165), (167)).

use serde::Serialize;

use super::calibration::calls_for_remap;
use super::flow::{evaluate, window_items, Evaluation, Part};
use super::system::{Mapping, MappingError, PipelineSystem};

/// A node slowed during the run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slowdown {
    /// The node (index into [`PipelineSystem::nodes`]).
    pub node: usize,
    /// Its times are multiplied by this (3: slowed to a third).
    pub factor: f64,
    /// Seconds from the start.
    pub at_s: f64,
}

/// The prediction of a run under a slowdown, with and without a remap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemapGain {
    /// The slowdown.
    pub slowdown: Slowdown,
    /// (160): items through the pipeline when the node slows.
    pub items_before: f64,
    /// The mapping kept, on the slowed system.
    pub slowed: Evaluation,
    /// (161): the makespan with the mapping kept.
    pub never_s: f64,
    /// Whether the threshold (157) calls for a remap.
    pub remaps: bool,
    /// (162): from the slowdown to the decision.
    pub detect_s: f64,
    /// (163): draining the items in flight.
    pub drain_s: f64,
    /// (164): re-calibrating every node and handing the new mapping out.
    pub calibrate_s: f64,
    /// The new mapping and its times on the slowed system.
    pub remapped: Option<(Mapping, Evaluation)>,
    /// (165): the makespan with the remap.
    pub adaptive_s: f64,
    /// (167): `1 - adaptive / never`.
    pub gain: f64,
}

/// `system` with `slowdown`'s node slowed.
pub fn slowed_system(system: &PipelineSystem, slowdown: &Slowdown) -> PipelineSystem {
    let mut slowed = system.clone();
    if let Some(node) = slowed.nodes.get_mut(slowdown.node) {
        for t in &mut node.stage_s {
            *t *= slowdown.factor;
        }
    }
    slowed
}

/// Equation (160): the items through a pipeline of latency `L` and bottleneck `Tr` by `t_c`,
/// `n_1 = (t_c - L) / Tr + 1`, from 0 to `S`.
pub fn items_done_by(at_s: f64, latency_s: f64, bottleneck_s: f64, items: u64) -> f64 {
    if at_s < latency_s {
        return 0.0;
    }
    ((at_s - latency_s) / bottleneck_s + 1.0).min(items as f64)
}

/// Equation (161): the makespan with the mapping kept, `T_never = t_c + (S - n_1) Tr'`, the
/// items left passing at the slowed bottleneck `Tr'` (the makespan (152) unslowed when the run
/// ends first).
pub fn never_makespan(at_s: f64, items_before: f64, items: u64, slowed_bottleneck_s: f64) -> f64 {
    at_s + (items as f64 - items_before).max(0.0) * slowed_bottleneck_s
}

/// Equation (162): from the slowdown to the decision, `t_detect = (floor(k/2) + 1) Tr' +
/// L_after` (`k` of (176)): the median of the last `k` times of the slowed stage passes the
/// threshold once more than half of them are slowed, one every `Tr'`, and the last of them
/// reaches the sink (where the times are read) after the latency of the parts behind the
/// stage.
pub fn detection_time(detection_items: u64, slowed_bottleneck_s: f64, latency_after_s: f64) -> f64 {
    (detection_items / 2 + 1) as f64 * slowed_bottleneck_s + latency_after_s
}

/// Equation (176): the items a group is watched over, `k = max(k_min, ceil(2 (t_drain +
/// t_cal) / t_b))` with `detection_by_cost`, else `k_min` (`detection_items`): `t_drain`
/// (163) and `t_cal` (164) of the mapping unslowed, `t_b` its bottleneck. The median of the
/// last `k` times passes the threshold once more than half are slow, so a slowdown must
/// have lasted about `k t_b / 2`, what a remap costs, before the run pays for one: a slowdown
/// shorter than a remap is not worth a remap, and one that lasts pays for its remap's cost at
/// most twice (waiting as long as a change costs, the rent-or-buy rule).
pub fn detection_items(system: &PipelineSystem, window: u64, evaluation: &Evaluation) -> u64 {
    let least = system.options.detection_items.max(1);
    if !system.options.detection_by_cost || evaluation.bottleneck_s <= 0.0 {
        return least;
    }
    let remap_s = drain_time(window, evaluation.bottleneck_s, evaluation.latency_s)
        + calibration_time(system);
    let items = (2.0 * remap_s / evaluation.bottleneck_s).ceil();
    if items.is_finite() {
        least.max(items.min(1e9) as u64)
    } else {
        least
    }
}

/// Equation (163): the drain, `t_drain = (W - 1) Tr' + L'`: the last of the `W` items in
/// flight waits behind the others at the slowed bottleneck, then crosses the pipeline.
pub fn drain_time(window: u64, slowed_bottleneck_s: f64, slowed_latency_s: f64) -> f64 {
    window.saturating_sub(1) as f64 * slowed_bottleneck_s + slowed_latency_s
}

/// Equation (164): re-calibrating and remapping,
/// `t_cal = max_k (r chain_k + rtt_k) + max_k rtt_k`: every node computes `r` items of the
/// whole pipeline at once (the slowest decides), each answer a round trip away from the
/// controller, then the new mapping goes out and every node acknowledges it.
pub fn calibration_time(system: &PipelineSystem) -> f64 {
    let repeats = system.options.calibration_repeats as f64;
    let rtt = |cluster: usize| -> f64 {
        system
            .wan_hops(0, cluster)
            .iter()
            .map(|&(c, _)| system.clusters[c].wan_rtt_s)
            .sum()
    };
    let slowest = system
        .nodes
        .iter()
        .map(|n| repeats * n.chain_s() + rtt(n.cluster))
        .fold(0.0, f64::max);
    let farthest = system
        .nodes
        .iter()
        .map(|n| rtt(n.cluster))
        .fold(0.0, f64::max);
    slowest + farthest
}

/// Equation (165): the makespan with a remap, `T_adapt = t_c + t_detect + t_drain + t_cal +
/// L_new + (S - n_2 - 1) Tr_new`, `n_2 = n_1 + t_detect / Tr' + W` the items done by the end
/// of the drain; the run ends with the mapping kept when `n_2` reaches `S`.
#[allow(clippy::too_many_arguments)]
pub fn adaptive_makespan(
    at_s: f64,
    overhead_s: f64,
    items_at_remap: f64,
    items: u64,
    new_latency_s: f64,
    new_bottleneck_s: f64,
    never_s: f64,
) -> f64 {
    let left = items as f64 - items_at_remap;
    if left <= 0.0 {
        return never_s;
    }
    at_s + overhead_s + new_latency_s + (left - 1.0).max(0.0) * new_bottleneck_s
}

/// The run under `slowdown`: with `mapping` kept, and with the remap `threshold` calls for
/// (157) to the mapping `remap` chooses on the slowed system; (167) the gain
/// `G = 1 - T_adapt / T_never`.
pub fn remap_gain(
    system: &PipelineSystem,
    mapping: &Mapping,
    threshold: Option<f64>,
    slowdown: &Slowdown,
    remap: impl Fn(&PipelineSystem) -> Option<(Mapping, Evaluation)>,
) -> Result<RemapGain, MappingError> {
    let before = evaluate(system, mapping)?;
    let slowed_system = slowed_system(system, slowdown);
    let slowed = evaluate(&slowed_system, mapping)?;
    let items = system.app.items;
    let items_before = items_done_by(slowdown.at_s, before.latency_s, before.bottleneck_s, items);
    let never_s = if items_before >= items as f64 {
        before.makespan_s
    } else {
        never_makespan(slowdown.at_s, items_before, items, slowed.bottleneck_s)
    };
    // The runtime's `t_b`: the bottleneck the calibration predicts, a WAN included.
    let calibrated_bottleneck = before.bottleneck_s;
    let tripped = slowed.parts.iter().position(|p| {
        matches!(p.part, Part::Group { .. })
            && calls_for_remap(p.production_s, calibrated_bottleneck, threshold)
    });
    let mut gain = RemapGain {
        slowdown: *slowdown,
        items_before,
        never_s,
        remaps: false,
        detect_s: 0.0,
        drain_s: 0.0,
        calibrate_s: 0.0,
        remapped: None,
        adaptive_s: never_s,
        gain: 0.0,
        slowed,
    };
    let Some(tripped) = tripped.filter(|_| items_before < items as f64) else {
        return Ok(gain);
    };
    let Some((new_mapping, new)) = remap(&slowed_system) else {
        return Ok(gain);
    };
    let window = window_items(system, mapping, &before);
    let slow = &gain.slowed;
    let (overhead_s, items_at_remap) = if system.options.remap_cost {
        let after: f64 = slow.parts[tripped + 1..].iter().map(|p| p.latency_s).sum();
        let k = detection_items(system, window, &before);
        gain.detect_s = detection_time(k, slow.bottleneck_s, after);
        gain.drain_s = drain_time(window, slow.bottleneck_s, slow.latency_s);
        gain.calibrate_s = calibration_time(&slowed_system);
        (
            gain.detect_s + gain.drain_s + gain.calibrate_s,
            items_before + gain.detect_s / slow.bottleneck_s + window as f64,
        )
    } else {
        (0.0, items_before)
    };
    gain.adaptive_s = adaptive_makespan(
        slowdown.at_s,
        overhead_s,
        items_at_remap,
        items,
        new.latency_s,
        new.bottleneck_s,
        never_s,
    );
    gain.remaps = items_at_remap < items as f64;
    gain.gain = 1.0 - gain.adaptive_s / gain.never_s;
    gain.remapped = Some((new_mapping, new));
    Ok(gain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::mate::model_mapping;
    use crate::pipeline::system::{one_cluster, PipelineOptions};

    /// Two stages of 1 s on nodes 0 and 1, a spare node 2; groups watched over 4 items.
    fn system() -> PipelineSystem {
        let options = PipelineOptions {
            calibration_repeats: 1,
            detection_items: 4,
            detection_by_cost: false,
            ..PipelineOptions::default()
        };
        one_cluster(100, &[1.0, 1.0], 3, options)
    }

    #[test]
    fn a_remap_to_the_spare_node_pays() {
        let s = system();
        let mapping = Mapping::one_stage_per_node(&[0, 1]);
        // Node 1 three times slower after 20.5 s: 20 items are through (L = 2, Tr = 1).
        let slowdown = Slowdown {
            node: 1,
            factor: 3.0,
            at_s: 21.0,
        };
        let g = remap_gain(&s, &mapping, Some(0.5), &slowdown, model_mapping).unwrap();
        assert_eq!(g.items_before, 20.0);
        assert_eq!(g.never_s, 21.0 + 80.0 * 3.0);
        assert!(g.remaps);
        // Detection: 3 slowed items at 3 s, nothing behind the last stage.
        assert_eq!(g.detect_s, 9.0);
        // Window: L / Tr = 2, plus one per replica: 4 items; the last waits 3 * 3 s, then
        // crosses (4 s).
        assert_eq!(g.drain_s, 3.0 * 3.0 + 4.0);
        // The slowed node's chain, 6 s, decides the calibration.
        assert_eq!(g.calibrate_s, 6.0);
        // The new mapping runs both stages on the three nodes behind a manager (an item
        // every 1 / (1/2 + 1/2 + 1/6) = 0.857 s); 20 + 3 + 4 items are done before it.
        let (_, new) = g.remapped.as_ref().unwrap();
        assert!((new.bottleneck_s - 6.0 / 7.0).abs() < 1e-12);
        let adaptive =
            21.0 + 9.0 + 13.0 + 6.0 + new.latency_s + (100.0 - 27.0 - 1.0) * new.bottleneck_s;
        assert!(
            (g.adaptive_s - adaptive).abs() < 1e-9,
            "{} {adaptive}",
            g.adaptive_s
        );
        assert!((g.gain - (1.0 - adaptive / 261.0)).abs() < 1e-12);
        // Without the remap's cost, the better mapping alone.
        let mut free = s.clone();
        free.options.remap_cost = false;
        let g = remap_gain(&free, &mapping, Some(0.5), &slowdown, model_mapping).unwrap();
        assert!((g.adaptive_s - (21.0 + new.latency_s + 79.0 * new.bottleneck_s)).abs() < 1e-9);
    }

    #[test]
    fn groups_are_watched_over_as_many_items_as_a_remap_costs() {
        let mut s = system();
        let mapping = Mapping::one_stage_per_node(&[0, 1]);
        let before = evaluate(&s, &mapping).unwrap();
        let window = window_items(&s, &mapping, &before);
        assert_eq!(window, 4);
        assert_eq!(detection_items(&s, window, &before), 4);
        // (176): a drain of 3 * 1 + 2 s and a calibration of 2 s, twice over, at 1 s an item
        s.options.detection_by_cost = true;
        assert_eq!(detection_items(&s, window, &before), 14);
        // never fewer than detection_items
        s.options.detection_items = 20;
        assert_eq!(detection_items(&s, window, &before), 20);
        // and (162) detects over them: 8 slowed items at 3 s
        s.options.detection_items = 4;
        let slowdown = Slowdown {
            node: 1,
            factor: 3.0,
            at_s: 21.0,
        };
        let g = remap_gain(&s, &mapping, Some(0.5), &slowdown, model_mapping).unwrap();
        assert_eq!(g.detect_s, 24.0);
    }

    #[test]
    fn never_and_a_high_threshold_keep_the_mapping() {
        let s = system();
        let mapping = Mapping::one_stage_per_node(&[0, 1]);
        let slowdown = Slowdown {
            node: 1,
            factor: 3.0,
            at_s: 21.0,
        };
        for threshold in [None, Some(2.5)] {
            let g = remap_gain(&s, &mapping, threshold, &slowdown, model_mapping).unwrap();
            assert!(!g.remaps);
            assert_eq!(g.gain, 0.0);
            assert_eq!(g.adaptive_s, g.never_s);
        }
        // A slowdown after the end changes nothing.
        let late = Slowdown {
            at_s: 1e6,
            ..slowdown
        };
        let g = remap_gain(&s, &mapping, Some(0.5), &late, model_mapping).unwrap();
        assert_eq!(g.never_s, 101.0);
        assert!(!g.remaps);
    }
}
