//! A mapping's times: each group's production time and latency, the WANs between groups on
//! different clusters as stages of their own, the bottleneck, the latency, the throughput
//! and the makespan (`docs/model.md`, "Pipelines", (148)-(152), (166)).

use serde::Serialize;

use super::production::{
    combined_time, dependent_production_times, merged_production_time, replicas_fed,
    replicated_production_time, Sends,
};
use super::system::{Mapping, MappingError, PipelineSystem};

/// What a part of the pipeline is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Part {
    /// A group of the mapping (its index).
    Group {
        /// Index in [`Mapping::groups`].
        group: usize,
    },
    /// A WAN crossed between two groups (or the source and the first, or the last and the
    /// sink): the link of cluster `cluster` to its parent, up or down.
    Wan {
        /// The child cluster whose link it is.
        cluster: usize,
        /// Towards the main cluster.
        up: bool,
        /// Bytes of one item crossing it.
        bytes: f64,
    },
}

/// One part's times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartTimes {
    /// What it is.
    pub part: Part,
    /// Its production time `Tr`: seconds between two items it passes on, at full rate.
    pub production_s: f64,
    /// Seconds one item spends in it when the pipeline is empty.
    pub latency_s: f64,
    /// Its dependent production time (142).
    pub held_s: f64,
}

/// A group's replicas and its manager.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupDetail {
    /// Each replica's production time (140)(141).
    pub replica_s: Vec<f64>,
    /// What its manager spends per item (`tg`), when it has one.
    pub manager_s: Option<f64>,
    /// The replicas the manager keeps busy (145).
    pub replicas_fed: usize,
}

/// A mapping's times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The parts in the order an item crosses them.
    pub parts: Vec<PartTimes>,
    /// Per group, its replicas and manager.
    pub groups: Vec<GroupDetail>,
    /// Index in `parts` of the slowest part (the first of equals).
    pub bottleneck: usize,
    /// Its production time, `max Tr`.
    pub bottleneck_s: f64,
    /// (150) latency: seconds one item takes through the empty pipeline.
    pub latency_s: f64,
    /// (151) throughput: items per second, `1 / max Tr`.
    pub throughput: f64,
    /// (152) makespan of the application's items.
    pub makespan_s: f64,
}

/// Equation (148): a WAN crossed between stages is a stage of its own, whose production time
/// is the time its bytes occupy the link, `Tr_w = v / rate`.
pub fn wan_production_time(bytes: f64, bytes_per_s: f64) -> f64 {
    bytes / bytes_per_s
}

/// Equation (149): the WAN stage's latency adds the one-way delay, `v / rate + rtt / 2`.
pub fn wan_latency(bytes: f64, bytes_per_s: f64, rtt_s: f64) -> f64 {
    wan_production_time(bytes, bytes_per_s) + rtt_s / 2.0
}

/// Equation (152), ASPARA's (5.2): `T_par = sum_i t_i + (S - 1) max_i t_i`, with the sum the
/// latency (150) of the parts and the maximum their largest production time.
pub fn makespan(latency_s: f64, bottleneck_s: f64, items: u64) -> f64 {
    if items == 0 {
        return 0.0;
    }
    latency_s + (items - 1) as f64 * bottleneck_s
}

/// The times of `mapping` on `system` (148)-(152); the parts follow an item from the source,
/// on the main cluster, through the groups to the sink, on the main cluster again.
pub fn evaluate(system: &PipelineSystem, mapping: &Mapping) -> Result<Evaluation, MappingError> {
    mapping.check(system)?;
    let app = &system.app;
    let mut parts = Vec::new();
    let mut groups = Vec::new();
    let mut at_cluster = 0;
    let crossing = |parts: &mut Vec<PartTimes>, from: usize, to: usize, bytes: f64| {
        if !system.options.wan_stage {
            return;
        }
        for (cluster, up) in system.wan_hops(from, to) {
            let c = &system.clusters[cluster];
            let rate = if up {
                c.wan_out_bytes_per_s
            } else {
                c.wan_in_bytes_per_s
            };
            parts.push(PartTimes {
                part: Part::Wan { cluster, up, bytes },
                production_s: wan_production_time(bytes, rate),
                latency_s: wan_latency(bytes, rate, c.wan_rtt_s),
                held_s: 0.0,
            });
        }
    };
    for (index, g) in mapping.groups.iter().enumerate() {
        let cluster = system.nodes[g.replicas[0]].cluster;
        let in_bytes = app.input_bytes(g.first);
        let out_bytes = app.stages[g.last].output_bytes;
        crossing(&mut parts, at_cluster, cluster, in_bytes);
        at_cluster = cluster;
        let cost = system.lan_cost(cluster);
        let replica_s: Vec<f64> = g
            .replicas
            .iter()
            .map(|&k| {
                let node = &system.nodes[k];
                merged_production_time(&node.stage_s[g.first..=g.last], Some(out_bytes), &cost)
            })
            .collect();
        let fastest = replica_s.iter().copied().fold(f64::INFINITY, f64::min);
        let on_wire = match cost.sends {
            Sends::Async => cost.wire_s(out_bytes),
            Sends::Sync => 0.0,
        };
        let (production_s, latency_s, manager_s, fed) = if g.managed() {
            let handing = cost.manager_s(in_bytes);
            (
                replicated_production_time(&replica_s, in_bytes, out_bytes, &cost),
                handing + cost.wire_s(in_bytes) + fastest + on_wire,
                Some(handing),
                replicas_fed(&replica_s, in_bytes, &cost),
            )
        } else {
            (replica_s[0], replica_s[0] + on_wire, None, 1)
        };
        parts.push(PartTimes {
            part: Part::Group { group: index },
            production_s,
            latency_s,
            held_s: 0.0,
        });
        groups.push(GroupDetail {
            replica_s,
            manager_s,
            replicas_fed: fed,
        });
    }
    let last_bytes = app.stages.last().map_or(app.item_bytes, |s| s.output_bytes);
    crossing(&mut parts, at_cluster, 0, last_bytes);
    let production: Vec<f64> = parts.iter().map(|p| p.production_s).collect();
    for (part, held) in parts
        .iter_mut()
        .zip(dependent_production_times(&production))
    {
        part.held_s = held;
    }
    let (bottleneck, bottleneck_s) =
        production
            .iter()
            .copied()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |best, (i, t)| {
                if t > best.1 {
                    (i, t)
                } else {
                    best
                }
            });
    let latency_s: f64 = parts.iter().map(|p| p.latency_s).sum();
    Ok(Evaluation {
        parts,
        groups,
        bottleneck,
        bottleneck_s,
        latency_s,
        throughput: 1.0 / bottleneck_s,
        makespan_s: makespan(latency_s, bottleneck_s, app.items),
    })
}

/// Equation (166): the items the source keeps in flight, `W = ceil(L / max Tr) + R (b - 1)`:
/// by Little's law an item takes `L` to cross and one leaves every `max Tr`, so `L / max Tr`
/// items fill the pipeline; each of the `R` replicas holds `b - 1` more waiting, so none
/// idles while its next item travels. At least one.
pub fn window_items(system: &PipelineSystem, mapping: &Mapping, evaluation: &Evaluation) -> u64 {
    if let Some(window) = system.options.window {
        return window.max(1);
    }
    let filling = (evaluation.latency_s / evaluation.bottleneck_s).ceil();
    let replicas = mapping.nodes().count() as u64;
    let waiting = replicas * system.options.replica_buffers.saturating_sub(1);
    let filling = if filling.is_finite() && filling >= 0.0 {
        filling.min(1e9) as u64
    } else {
        1
    };
    (filling + waiting).max(1)
}

/// The time between items of a group whose replicas' times are `replica_s`, without a
/// manager's limit: what a group of replicas working side by side delivers.
pub fn side_by_side_s(replica_s: &[f64]) -> f64 {
    combined_time(replica_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::system::{
        Group, PipelineApp, PipelineCluster, PipelineNode, PipelineOptions, StageParams,
    };

    fn cluster(name: &str, parent: Option<usize>) -> PipelineCluster {
        PipelineCluster {
            name: name.into(),
            parent,
            lan_bytes_per_s: 1e6,
            wan_in_bytes_per_s: 1e5,
            wan_out_bytes_per_s: 2e5,
            wan_rtt_s: 0.1,
        }
    }

    /// Three stages; nodes 0 and 1 on the main cluster, 2 and 3 behind a WAN.
    fn system() -> PipelineSystem {
        let stage = |name: &str, bytes: f64| StageParams {
            name: name.into(),
            oper: 1.0,
            output_bytes: bytes,
        };
        let node = |cluster: usize, host: &str, stage_s: [f64; 3]| PipelineNode {
            cluster,
            host: host.into(),
            stage_s: stage_s.to_vec(),
            repeat_cv: 0.0,
        };
        PipelineSystem {
            app: PipelineApp {
                items: 101,
                item_bytes: 1000.0,
                stages: vec![stage("a", 10_000.0), stage("b", 2000.0), stage("c", 100.0)],
            },
            nodes: vec![
                node(0, "m1", [0.1, 0.4, 0.05]),
                node(0, "m2", [0.1, 0.4, 0.05]),
                node(1, "x1", [0.2, 0.8, 0.1]),
                node(1, "x2", [0.2, 0.8, 0.1]),
            ],
            clusters: vec![cluster("main", None), cluster("far", Some(0))],
            options: PipelineOptions {
                message_overhead_s: 0.001,
                ..PipelineOptions::default()
            },
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn a_wan_between_clusters_is_a_stage() {
        let s = system();
        // a on m1; b on x1 and x2 behind a manager; c on m2.
        let mapping = Mapping {
            groups: vec![
                Group {
                    first: 0,
                    last: 0,
                    replicas: vec![0],
                },
                Group {
                    first: 1,
                    last: 1,
                    replicas: vec![2, 3],
                },
                Group {
                    first: 2,
                    last: 2,
                    replicas: vec![1],
                },
            ],
        };
        let e = evaluate(&s, &mapping).unwrap();
        assert_eq!(e.parts.len(), 5);
        // a: 0.1 + 1 ms; its 10,000 bytes cross the WAN down at 1e5 B/s: 0.1 s (+ 50 ms).
        assert!(close(e.parts[0].production_s, 0.101));
        assert!(close(e.parts[0].latency_s, 0.101 + 0.01));
        assert!(matches!(
            e.parts[1].part,
            Part::Wan {
                cluster: 1,
                up: false,
                ..
            }
        ));
        assert!(close(e.parts[1].production_s, 0.1));
        assert!(close(e.parts[1].latency_s, 0.15));
        // b: replicas 0.801 s each, side by side 0.4005; manager 1 ms; + 2,000 B on the LAN.
        assert!(close(e.parts[2].production_s, 0.001 + 0.4005 + 0.002));
        assert_eq!(e.groups[1].manager_s, Some(0.001));
        assert_eq!(e.groups[1].replicas_fed, 2);
        // Back up at 2e5 B/s: 2,000 B take 10 ms.
        assert!(close(e.parts[3].production_s, 0.01));
        assert!(close(e.parts[4].production_s, 0.051));
        assert_eq!(e.bottleneck, 2);
        assert!(close(e.bottleneck_s, 0.4035));
        let latency = 0.111 + 0.15 + (0.001 + 0.01 + 0.801 + 0.002) + 0.06 + (0.051 + 0.0001);
        assert!(close(e.latency_s, latency), "{} {latency}", e.latency_s);
        assert!(close(e.makespan_s, latency + 100.0 * 0.4035));
        assert!(close(e.throughput, 1.0 / 0.4035));
        // The WAN's 0.1 s is held to the slower neighbours' (142).
        assert!(close(e.parts[1].held_s, 0.4035));
        // Little's law: 1.1861 / 0.4035 -> 3 items, plus one per replica (4).
        assert_eq!(window_items(&s, &mapping, &e), 3 + 4);
    }

    #[test]
    fn without_the_wan_stage_only_groups_count() {
        let mut s = system();
        s.options.wan_stage = false;
        let mapping = Mapping::one_stage_per_node(&[0, 2, 1]);
        let e = evaluate(&s, &mapping).unwrap();
        assert_eq!(e.parts.len(), 3);
        assert!(close(e.bottleneck_s, 0.801));
    }

    #[test]
    fn merged_stages_pay_one_message() {
        let s = system();
        let mapping = Mapping {
            groups: vec![Group {
                first: 0,
                last: 2,
                replicas: vec![0],
            }],
        };
        let e = evaluate(&s, &mapping).unwrap();
        assert_eq!(e.parts.len(), 1);
        assert!(close(e.bottleneck_s, 0.551));
        assert!(close(e.makespan_s, 0.551 + 0.0001 + 100.0 * 0.551));
    }

    #[test]
    fn bad_mappings_are_refused() {
        let s = system();
        let gap = Mapping {
            groups: vec![
                Group {
                    first: 0,
                    last: 0,
                    replicas: vec![0],
                },
                Group {
                    first: 2,
                    last: 2,
                    replicas: vec![1],
                },
            ],
        };
        assert!(matches!(
            evaluate(&s, &gap),
            Err(MappingError::Coverage { .. })
        ));
        let split = Mapping {
            groups: vec![Group {
                first: 0,
                last: 2,
                replicas: vec![0, 2],
            }],
        };
        assert!(matches!(
            evaluate(&s, &split),
            Err(MappingError::Replicas { .. })
        ));
        let twice = Mapping::one_stage_per_node(&[0, 0, 1]);
        assert!(evaluate(&s, &twice).is_err());
        assert!(evaluate(&s, &Mapping::one_stage_per_node(&[0, 1])).is_err());
    }

    #[test]
    fn hops_follow_the_tree() {
        let mut s = system();
        s.clusters.push(cluster("farther", Some(1)));
        s.clusters.push(cluster("aside", Some(0)));
        assert_eq!(s.wan_hops(0, 2), vec![(1, false), (2, false)]);
        assert_eq!(s.wan_hops(2, 3), vec![(2, true), (1, true), (3, false)]);
        assert_eq!(s.wan_hops(1, 1), vec![]);
    }
}
