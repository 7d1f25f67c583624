//! Mapping by calibration (ASPARA, the adaptive-skeletons source, chapter 5): one item of the
//! stage function timed on every node of the pool, the naive mapping onto the fittest nodes,
//! its greedy refinement (Algorithm 5.1), the threshold `1/sigma` and the rule that calls for
//! a remap; and the runtime's dimensionless threshold (`docs/model.md`, "Pipelines",
//! (153)-(158)).
//!
//! The seed's stages all cost the same, so one time per node says everything: `t_i`, the
//! time of one item of the stage function on node `i`. A node holding `x_i` stages takes
//! `T_i = x_i t_i` per item.

use serde::Serialize;

use super::flow::makespan;
use super::system::{Group, Mapping, PipelineSystem};

/// A node of the pool and the stages it holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NodeLoad {
    /// Its index in the pool.
    pub node: usize,
    /// `t_i`: its calibration time, one item of one stage.
    pub time_s: f64,
    /// `x_i`: the stages it holds.
    pub stages: u64,
}

impl NodeLoad {
    /// Equation (154): `T_i = x_i t_i`, the node's time per item.
    pub fn current_s(&self) -> f64 {
        self.stages as f64 * self.time_s
    }
}

/// The pool's nodes from the fastest, ties in list order (a stable sort).
pub fn fittest(pool_s: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pool_s.len()).collect();
    order.sort_by(|&a, &b| pool_s[a].total_cmp(&pool_s[b]));
    order
}

/// The naive mapping: the `stages` fittest nodes of the pool, one stage each, sorted by time
/// (the last is the bottleneck). A pool with fewer nodes than stages gives every node one
/// stage and each stage left to the node whose time it raises least (`(x_i + 1) t_i`, ties to
/// the faster node): the seed assumes a pool at least as large as the pipeline.
pub fn naive_mapping(pool_s: &[f64], stages: usize) -> Vec<NodeLoad> {
    let mut loads: Vec<NodeLoad> = fittest(pool_s)
        .into_iter()
        .take(stages)
        .map(|node| NodeLoad {
            node,
            time_s: pool_s[node],
            stages: 1,
        })
        .collect();
    for _ in loads.len()..stages {
        let Some(least) = (0..loads.len()).min_by(|&a, &b| {
            let after = |l: &NodeLoad| (l.stages + 1) as f64 * l.time_s;
            after(&loads[a]).total_cmp(&after(&loads[b]))
        }) else {
            break;
        };
        loads[least].stages += 1;
    }
    sort_by_current(&mut loads);
    loads
}

fn sort_by_current(loads: &mut [NodeLoad]) {
    loads.sort_by(|a, b| a.current_s().total_cmp(&b.current_s()));
}

/// Equation (155): a node of current time `T_i` and stage time `t_i` can take one stage of
/// the bottleneck node's, of current time `T_b`, when `floor((T_b - T_i) / t_i) >= 1`: its
/// new time `(x_i + 1) t_i` is at most `T_b`.
pub fn can_take_a_stage(bottleneck_s: f64, current_s: f64, time_s: f64) -> bool {
    ((bottleneck_s - current_s) / time_s).floor() >= 1.0
}

/// Algorithm 5.1, the greedy refinement of a mapping sorted by current time: while the
/// bottleneck node (the last) holds one stage, walk the other nodes in ascending current
/// time and move that stage to the first that can take it (155); drop the emptied node and
/// sort again (a stable sort: ties stay in list order). Stops when the bottleneck node holds
/// more than one stage or no node can take its stage.
pub fn refine(mut loads: Vec<NodeLoad>) -> Vec<NodeLoad> {
    sort_by_current(&mut loads);
    while let Some(bottleneck) = loads.last().copied() {
        if bottleneck.stages > 1 {
            break;
        }
        let last = loads.len() - 1;
        let taker = loads[..last]
            .iter()
            .position(|l| can_take_a_stage(bottleneck.current_s(), l.current_s(), l.time_s));
        let Some(taker) = taker else {
            break;
        };
        loads[taker].stages += 1;
        loads.pop();
        sort_by_current(&mut loads);
    }
    loads
}

/// Equation (153), ASPARA's (5.9): the makespan of a mapping by calibration,
/// `sum_i x_i t_i + (S - 1) max_i x_i t_i` ((152) with each node's time per item; for the
/// naive mapping, `sum_i t_i + (S - 1) t_b`). Every stage is counted once, and the maximum is
/// over the nodes' times per item.
pub fn calibration_estimate(loads: &[NodeLoad], items: u64) -> f64 {
    let sum: f64 = loads.iter().map(NodeLoad::current_s).sum();
    let max = loads.iter().map(NodeLoad::current_s).fold(0.0, f64::max);
    makespan(sum, max, items)
}

/// The sample standard deviation (`N - 1`) of `times`; 0 for fewer than two.
pub fn sample_std_dev(times: &[f64]) -> f64 {
    let n = times.len();
    if n < 2 {
        return 0.0;
    }
    let mean = times.iter().sum::<f64>() / n as f64;
    let squares: f64 = times.iter().map(|t| (t - mean).powi(2)).sum();
    (squares / (n - 1) as f64).sqrt()
}

/// Equation (156): ASPARA's threshold `X = 1/sigma`, `sigma` the sample standard deviation of
/// the pool's calibration times, in seconds (so `X` depends on the unit of time: see (158)).
pub fn inverse_sigma_threshold(pool_s: &[f64]) -> f64 {
    1.0 / sample_std_dev(pool_s)
}

/// Equation (157): a stage whose time per item `t_i` exceeds `(1 + X) t_b`, `t_b` the
/// calibrated bottleneck's, calls for a remap (drain, re-calibrate, remap, resume). `None`
/// (`threshold = "never"`) never does.
pub fn calls_for_remap(stage_s: f64, calibrated_bottleneck_s: f64, threshold: Option<f64>) -> bool {
    threshold.is_some_and(|x| stage_s > (1.0 + x) * calibrated_bottleneck_s)
}

/// The coefficient of variation (standard deviation over mean) of `times`; 0 for fewer than
/// two or a mean of zero.
pub fn coefficient_of_variation(times: &[f64]) -> f64 {
    let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
    if mean > 0.0 {
        sample_std_dev(times) / mean
    } else {
        0.0
    }
}

/// Equation (158): the runtime's default threshold, dimensionless,
/// `X = min(1, max(cv_pool, 3 cv_repeat))`: `cv_pool` the coefficient of variation of the
/// pool's calibration times (the seed's `sigma` over their mean: a stage slowed by more than
/// the pool's relative spread may now be slower than nodes the mapping left out or gave less
/// work), `cv_repeat` that of one node's repeated timings (three of its standard deviations
/// are noise, not a slowdown), at most 1 (a stage taking twice the bottleneck's time halves
/// the throughput: never wait for more).
pub fn relative_threshold(pool_s: &[f64], repeat_cv: f64) -> f64 {
    let pool = coefficient_of_variation(pool_s);
    pool.max(3.0 * repeat_cv).min(1.0)
}

/// A mapping by calibration as groups: the nodes of `loads` in cluster order (the main
/// cluster first, so that the pipeline crosses each WAN as few times as it can), then in the
/// order of `loads`; each takes its `x_i` stages, consecutive, first stages first.
pub fn loads_to_mapping(system: &PipelineSystem, loads: &[NodeLoad]) -> Mapping {
    let mut ordered: Vec<&NodeLoad> = loads.iter().filter(|l| l.stages > 0).collect();
    ordered.sort_by_key(|l| system.nodes[l.node].cluster);
    let mut first = 0;
    let groups = ordered
        .into_iter()
        .map(|l| {
            let last = first + l.stages as usize - 1;
            let group = Group {
                first,
                last,
                replicas: vec![l.node],
            };
            first = last + 1;
            group
        })
        .collect();
    Mapping { groups }
}

/// The pool's calibration times in ASPARA's sense: each node's time for one item of a stage
/// of mean cost (its chain of every stage over their number), equal stages being the seed's
/// case.
pub fn pool_times(system: &PipelineSystem) -> Vec<f64> {
    let stages = system.app.stages.len().max(1) as f64;
    system.nodes.iter().map(|n| n.chain_s() / stages).collect()
}

/// The naive mapping of `system` (one stage per fittest node).
pub fn naive(system: &PipelineSystem) -> Mapping {
    loads_to_mapping(
        system,
        &naive_mapping(&pool_times(system), system.app.stages.len()),
    )
}

/// The mapping of Algorithm 5.1 on `system`.
pub fn greedy(system: &PipelineSystem) -> Mapping {
    let naive = naive_mapping(&pool_times(system), system.app.stages.len());
    loads_to_mapping(system, &refine(naive))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(loads: &[NodeLoad], hosts: &[&str]) -> Vec<String> {
        loads.iter().map(|l| hosts[l.node].to_string()).collect()
    }

    /// The seed's Example 1: the 16 fittest of a pool of 32 (the other 16 are not
    /// published), for 16 stages.
    #[test]
    fn seed_example_1() {
        let hosts = [
            "p7", "p5", "p15", "p6", "p2", "p11", "p14", "p4", "p9", "p32", "p18", "p20", "p8",
            "p17", "p31", "p21",
        ];
        let times = [
            1.0, 5.0, 10.0, 11.0, 13.0, 14.0, 15.0, 16.0, 17.0, 17.0, 18.0, 18.0, 19.0, 19.0, 19.0,
            20.0,
        ];
        let naive = naive_mapping(&times, 16);
        assert_eq!(naive.last().map(|l| l.current_s()), Some(20.0));
        let refined = refine(naive);
        assert_eq!(names(&refined, &hosts), ["p5", "p15", "p6", "p7"]);
        let x: Vec<u64> = refined.iter().map(|l| l.stages).collect();
        assert_eq!(x, [2, 1, 1, 12]);
        let current: Vec<f64> = refined.iter().map(NodeLoad::current_s).collect();
        assert_eq!(current, [10.0, 10.0, 11.0, 12.0]);
        let threshold = inverse_sigma_threshold(&times);
        assert_eq!(format!("{threshold:.3}"), "0.185");
    }

    /// The seed's Listing 5.1: eight nodes of two clusters, five stages.
    #[test]
    fn seed_listing_5_1() {
        let hosts = [
            "bw240n04", "bw240n02", "bw240n03", "bw240n21", "bw530n05", "bw530n10", "bw530n07",
            "bw240n23",
        ];
        let times = [
            4.24372, 4.25524, 4.36799, 4.73571, 8.21054, 9.10425, 9.25595, 11.18540,
        ];
        let refined = refine(naive_mapping(&times, 8));
        assert_eq!(
            names(&refined, &hosts),
            ["bw240n21", "bw530n05", "bw240n04", "bw240n02", "bw240n03"]
        );
        let x: Vec<u64> = refined.iter().map(|l| l.stages).collect();
        assert_eq!(x, [1, 1, 2, 2, 2]);
        let threshold = inverse_sigma_threshold(&times);
        assert_eq!(format!("{threshold:.6}"), "0.354714");
        // (5.9): the naive mapping's estimate for 512 items.
        let naive = naive_mapping(&times, 8);
        assert_eq!(
            format!("{:.1}", calibration_estimate(&naive, 512)),
            "5771.1"
        );
        // The refined mapping, each stage counted once and its bottleneck the slowest node
        // per item (bw240n03, 8.73598 s): 38.68015 + 511 * 8.73598.
        let refined_estimate = calibration_estimate(&refined, 512);
        assert_eq!(format!("{refined_estimate:.2}"), "4502.77");
        // The dimensionless threshold (158) on the same pool: its spread over its mean.
        assert_eq!(format!("{:.3}", relative_threshold(&times, 0.0)), "0.407");
    }

    #[test]
    fn the_remap_rule_and_never() {
        assert!(calls_for_remap(15.2, 11.1854, Some(0.354714)));
        assert!(!calls_for_remap(15.1, 11.1854, Some(0.354714)));
        assert!(!calls_for_remap(1e9, 1.0, None));
    }

    #[test]
    fn the_relative_threshold_is_bounded() {
        // Identical nodes: the noise alone.
        assert_eq!(
            relative_threshold(&[2.0, 2.0, 2.0], 0.05),
            0.15000000000000002
        );
        assert_eq!(relative_threshold(&[1.0, 9.0], 0.0), 1.0);
        assert_eq!(relative_threshold(&[1.0], 0.0), 0.0);
    }

    #[test]
    fn a_small_pool_holds_several_stages_a_node() {
        // Three stages on two nodes: the third goes where it costs least, (1 + 1) * 1.0.
        let loads = naive_mapping(&[1.0, 3.0], 3);
        let x: Vec<(usize, u64)> = loads.iter().map(|l| (l.node, l.stages)).collect();
        assert_eq!(x, [(0, 2), (1, 1)]);
        assert!(can_take_a_stage(12.0, 10.0, 2.0));
        assert!(!can_take_a_stage(11.9, 10.0, 2.0));
    }
}
