//! The model-based mapping (the dynamic-tuning thesis's MATE: replicate the slowest stage by
//! what PL(4)/(5) say, merge what is light), as a search for the mapping whose predicted
//! throughput (151) is highest (`docs/model.md`, "Pipelines", (159)).
//!
//! Where it differs from Algorithm 5.1 ([`super::calibration`]): the greedy refinement sees
//! one time per node and stages of equal cost, never replicates a stage, and does not know
//! that consecutive stages on two clusters pay a WAN; this search sees each stage's time on
//! each node, replicates behind a manager (143) while that helps, merges light stages to free
//! nodes for it (141), and counts every WAN crossed (148).

use super::flow::{evaluate, Evaluation};
use super::system::{Group, Mapping, PipelineSystem};

/// The most stage-to-cluster assignments tried one by one; beyond it only those that visit
/// the clusters in plan order, each once, are.
const ASSIGNMENT_LIMIT: usize = 4096;

/// Equation (159): the mapping that maximises the throughput `1 / max Tr` (151), the
/// latency (150) breaking ties, then the fewer nodes. For every assignment of the stages to
/// clusters that have nodes, and every count of groups each cluster's stages may be merged
/// into (adjacent stages, lightest pair first (141)): the heaviest group takes the node
/// fastest for it, and so on down; then, while the bottleneck is a group with nodes to spare
/// in its cluster, it takes the spare node that lowers its time most (143), as long as one
/// does. `None` when no node can run a stage.
pub fn model_mapping(system: &PipelineSystem) -> Option<(Mapping, Evaluation)> {
    let clusters: Vec<usize> = (0..system.clusters.len())
        .filter(|&c| system.nodes_of(c).next().is_some())
        .collect();
    let stages = system.app.stages.len();
    if clusters.is_empty() || stages == 0 {
        return None;
    }
    let mut best: Option<(Mapping, Evaluation)> = None;
    for assignment in assignments(&clusters, stages) {
        let runs_per_cluster = group_counts(system, &assignment);
        for mapping in candidates(system, &assignment, &runs_per_cluster) {
            let Ok(evaluation) = evaluate(system, &mapping) else {
                continue;
            };
            if better(&mapping, &evaluation, best.as_ref()) {
                best = Some((mapping, evaluation));
            }
        }
    }
    best
}

fn better(mapping: &Mapping, e: &Evaluation, best: Option<&(Mapping, Evaluation)>) -> bool {
    let Some((best_mapping, b)) = best else {
        return true;
    };
    let near = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs());
    if !near(e.bottleneck_s, b.bottleneck_s) {
        return e.bottleneck_s < b.bottleneck_s;
    }
    if !near(e.latency_s, b.latency_s) {
        return e.latency_s < b.latency_s;
    }
    mapping.nodes().count() < best_mapping.nodes().count()
}

/// Every assignment of `stages` stages to `clusters`, or beyond [`ASSIGNMENT_LIMIT`] those
/// that go through the clusters in order, each a run of consecutive stages (possibly empty).
fn assignments(clusters: &[usize], stages: usize) -> Vec<Vec<usize>> {
    let count = (clusters.len() as f64).powi(stages as i32);
    if count <= ASSIGNMENT_LIMIT as f64 {
        let mut all = vec![Vec::new()];
        for _ in 0..stages {
            all = all
                .into_iter()
                .flat_map(|prefix: Vec<usize>| {
                    clusters.iter().map(move |&c| {
                        let mut next = prefix.clone();
                        next.push(c);
                        next
                    })
                })
                .collect();
        }
        return all;
    }
    // Non-decreasing positions in `clusters`: compositions of the stages into runs.
    let mut all = Vec::new();
    let mut current = vec![0usize; stages];
    loop {
        all.push(current.iter().map(|&i| clusters[i]).collect());
        let Some(bump) = (0..stages).rev().find(|&i| current[i] + 1 < clusters.len()) else {
            break;
        };
        let value = current[bump] + 1;
        for slot in &mut current[bump..] {
            *slot = value;
        }
    }
    all
}

/// For each cluster of `assignment`, the counts of groups its stages may form: from one per
/// stage (or per node, when it has fewer) down to one per run of consecutive stages.
fn group_counts(system: &PipelineSystem, assignment: &[usize]) -> Vec<(usize, Vec<usize>)> {
    let mut counts = Vec::new();
    for cluster in 0..system.clusters.len() {
        let stages = assignment.iter().filter(|&&c| c == cluster).count();
        if stages == 0 {
            continue;
        }
        let runs = runs_of(assignment, cluster).len();
        let nodes = system.nodes_of(cluster).count();
        let most = stages.min(nodes);
        counts.push((cluster, (runs..=most).rev().collect()));
    }
    counts
}

/// The runs of consecutive stages `assignment` puts on `cluster`, as stage ranges.
fn runs_of(assignment: &[usize], cluster: usize) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (stage, &c) in assignment.iter().enumerate() {
        match (c == cluster, start) {
            (true, None) => start = Some(stage),
            (false, Some(s)) => {
                runs.push((s, stage - 1));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, assignment.len() - 1));
    }
    runs
}

/// The mappings of one assignment: every combination of each cluster's group counts.
fn candidates(
    system: &PipelineSystem,
    assignment: &[usize],
    counts: &[(usize, Vec<usize>)],
) -> Vec<Mapping> {
    if counts.iter().any(|(_, options)| options.is_empty()) {
        return Vec::new(); // a cluster with more runs than nodes
    }
    let mut choice = vec![0usize; counts.len()];
    let mut mappings = Vec::new();
    loop {
        let mut groups = Vec::new();
        for (i, (cluster, options)) in counts.iter().enumerate() {
            groups.extend(cluster_groups(
                system,
                assignment,
                *cluster,
                options[choice[i]],
            ));
        }
        groups.sort_by_key(|g: &Group| g.first);
        let mut mapping = Mapping { groups };
        replicate_bottleneck(system, &mut mapping);
        mappings.push(mapping);
        let Some(next) = (0..counts.len()).find(|&i| choice[i] + 1 < counts[i].1.len()) else {
            break;
        };
        choice[next] += 1;
        for slot in &mut choice[..next] {
            *slot = 0;
        }
    }
    mappings
}

/// A group's time on `node`: its stages one after the other (the message cost is the same on
/// every node of a cluster and does not change the choice).
fn group_time(system: &PipelineSystem, first: usize, last: usize, node: usize) -> f64 {
    system.nodes[node].stage_s[first..=last].iter().sum()
}

/// `cluster`'s stages as `count` groups (adjacent stages merged, the lightest pair first,
/// weighed by their mean time on the cluster's nodes), each on one node: the heaviest group
/// first takes the node fastest for it.
fn cluster_groups(
    system: &PipelineSystem,
    assignment: &[usize],
    cluster: usize,
    count: usize,
) -> Vec<Group> {
    let nodes: Vec<usize> = system.nodes_of(cluster).collect();
    let mean = |first: usize, last: usize| {
        nodes
            .iter()
            .map(|&k| group_time(system, first, last, k))
            .sum::<f64>()
            / nodes.len() as f64
    };
    let mut ranges: Vec<(usize, usize)> = runs_of(assignment, cluster)
        .into_iter()
        .flat_map(|(a, b)| (a..=b).map(|s| (s, s)))
        .collect();
    while ranges.len() > count {
        let lightest = (0..ranges.len() - 1)
            .filter(|&i| ranges[i].1 + 1 == ranges[i + 1].0)
            .min_by(|&i, &j| {
                let pair = |i: usize| mean(ranges[i].0, ranges[i + 1].1);
                pair(i).total_cmp(&pair(j))
            });
        let Some(i) = lightest else {
            break;
        };
        ranges[i].1 = ranges[i + 1].1;
        ranges.remove(i + 1);
    }
    let mut by_weight: Vec<(usize, usize)> = ranges;
    by_weight.sort_by(|a, b| mean(b.0, b.1).total_cmp(&mean(a.0, a.1)));
    let mut free = nodes;
    by_weight
        .into_iter()
        .filter_map(|(first, last)| {
            let pick = (0..free.len()).min_by(|&i, &j| {
                group_time(system, first, last, free[i])
                    .total_cmp(&group_time(system, first, last, free[j]))
            })?;
            Some(Group {
                first,
                last,
                replicas: vec![free.remove(pick)],
            })
        })
        .collect()
}

/// While the bottleneck is a group with nodes to spare in its cluster, give it the spare node
/// that lowers its production time most (143), as long as one lowers it.
fn replicate_bottleneck(system: &PipelineSystem, mapping: &mut Mapping) {
    loop {
        let Ok(evaluation) = evaluate(system, mapping) else {
            return;
        };
        let super::flow::Part::Group { group } = evaluation.parts[evaluation.bottleneck].part
        else {
            return;
        };
        let cluster = system.nodes[mapping.groups[group].replicas[0]].cluster;
        let used: Vec<usize> = mapping.nodes().collect();
        let spare: Vec<usize> = system
            .nodes_of(cluster)
            .filter(|k| !used.contains(k))
            .collect();
        let mut best: Option<(usize, f64)> = None;
        for node in spare {
            mapping.groups[group].replicas.push(node);
            if let Ok(e) = evaluate(system, mapping) {
                let time = e.parts[evaluation.bottleneck].production_s;
                if best.is_none_or(|(_, t)| time < t) {
                    best = Some((node, time));
                }
            }
            mapping.groups[group].replicas.pop();
        }
        match best {
            Some((node, time)) if time < evaluation.bottleneck_s * (1.0 - 1e-9) => {
                mapping.groups[group].replicas.push(node);
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::calibration::greedy;
    use crate::pipeline::flow::Part;
    use crate::pipeline::system::{
        PipelineApp, PipelineCluster, PipelineNode, PipelineOptions, StageParams,
    };

    fn system(clusters: usize, nodes: &[(usize, f64)], oper: &[f64]) -> PipelineSystem {
        PipelineSystem {
            app: PipelineApp {
                items: 1000,
                item_bytes: 1000.0,
                stages: oper
                    .iter()
                    .enumerate()
                    .map(|(i, &oper)| StageParams {
                        name: format!("s{i}"),
                        oper,
                        output_bytes: 1000.0,
                    })
                    .collect(),
            },
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(k, &(cluster, perf))| PipelineNode {
                    cluster,
                    host: format!("n{k}"),
                    stage_s: oper.iter().map(|o| o / perf).collect(),
                    repeat_cv: 0.0,
                })
                .collect(),
            clusters: (0..clusters)
                .map(|c| PipelineCluster {
                    name: format!("c{c}"),
                    parent: (c > 0).then_some(0),
                    lan_bytes_per_s: 1e9,
                    wan_in_bytes_per_s: 1e5,
                    wan_out_bytes_per_s: 1e5,
                    wan_rtt_s: 0.02,
                })
                .collect(),
            options: PipelineOptions::default(),
        }
    }

    #[test]
    fn on_equal_nodes_a_farm_of_the_whole_chain_wins() {
        // Stages of 1, 4, 1 operations on four equal nodes and a manager that costs
        // nothing: every node runs the whole chain (6 s), an item every 1.5 s, against 2 s
        // for the heavy stage replicated on two nodes and 4 s for Algorithm 5.1, which sees
        // three equal stages of 2 s and gives each a node.
        let s = system(1, &[(0, 1.0); 4], &[1.0, 4.0, 1.0]);
        let (mapping, e) = model_mapping(&s).unwrap();
        assert_eq!(mapping.groups.len(), 1);
        assert_eq!(mapping.groups[0].replicas.len(), 4);
        assert!((e.bottleneck_s - 1.5).abs() < 1e-5, "{}", e.bottleneck_s);
        let g = evaluate(&s, &greedy(&s)).unwrap();
        assert!((g.bottleneck_s - 4.0).abs() < 1e-5);
    }

    #[test]
    fn nodes_fast_at_the_heavy_stage_take_it_side_by_side() {
        // Stages of 1, 1, 8 operations; two nodes take 8 s for the heavy one, two take 2 s.
        // The farm of the whole chain gives an item every 1 / (2/10 + 2/4) = 1.43 s; the
        // light stages on the slow nodes and the heavy one on both fast nodes, every 1 s.
        let mut s = system(1, &[(0, 1.0); 4], &[1.0, 1.0, 8.0]);
        for node in &mut s.nodes[2..] {
            node.stage_s[2] = 2.0;
        }
        let (mapping, e) = model_mapping(&s).unwrap();
        assert_eq!(mapping.groups.len(), 3, "{mapping:?}");
        assert_eq!(mapping.groups[2].replicas, vec![2, 3]);
        assert!((e.bottleneck_s - 1.0).abs() < 1e-5, "{}", e.bottleneck_s);
    }

    #[test]
    fn the_fastest_node_takes_the_heaviest_stage() {
        let s = system(1, &[(0, 1.0), (0, 4.0)], &[1.0, 4.0]);
        let (mapping, e) = model_mapping(&s).unwrap();
        assert_eq!(mapping.groups[1].replicas, vec![1]);
        assert!((e.bottleneck_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_wan_is_crossed_only_when_it_pays() {
        // One main node; far nodes behind a WAN of 10 ms per item each way. Stages of 1 s:
        // the far nodes take two stages, and the pipeline crosses the WAN twice.
        let s = system(2, &[(0, 1.0), (1, 1.0), (1, 1.0)], &[1.0, 1.0, 1.0]);
        let (mapping, e) = model_mapping(&s).unwrap();
        assert_eq!(mapping.groups.len(), 3);
        let wans = e
            .parts
            .iter()
            .filter(|p| matches!(p.part, Part::Wan { .. }))
            .count();
        assert_eq!(wans, 2);
        assert!((e.bottleneck_s - 1.0).abs() < 1e-9);
        // A WAN far slower than the stages keeps everything on the main cluster.
        let mut slow = s.clone();
        for c in &mut slow.clusters {
            c.wan_in_bytes_per_s = 100.0;
            c.wan_out_bytes_per_s = 100.0;
        }
        let (mapping, _) = model_mapping(&slow).unwrap();
        assert!(mapping.nodes().all(|k| slow.nodes[k].cluster == 0));
    }

    #[test]
    fn assignments_beyond_the_limit_visit_clusters_in_order() {
        let all = assignments(&[0, 1], 3);
        assert_eq!(all.len(), 8);
        let ordered = assignments(&[0, 1, 2], 9);
        assert_eq!(ordered.len(), 55); // compositions of 9 stages into 3 runs
        assert!(ordered.iter().all(|a| a.windows(2).all(|w| w[0] <= w[1])));
        assert_eq!(runs_of(&[0, 1, 1, 0, 1], 1), vec![(1, 2), (4, 4)]);
    }
}
