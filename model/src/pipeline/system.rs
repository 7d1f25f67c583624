//! What the pipeline model reads: the application's stages, the nodes that may run them
//! (each with its time for one item of every stage), the clusters and their links, and the
//! options; and a mapping of stages onto nodes.

use serde::Serialize;

use super::production::{MessageCost, Sends};

/// One stage of the pipeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageParams {
    /// Its name.
    pub name: String,
    /// Basic operations one item costs it.
    pub oper: f64,
    /// `v_i`: bytes of one item it sends on.
    pub output_bytes: f64,
}

/// The application: the stages in order, the items, and the bytes of an item from the
/// source.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineApp {
    /// `S`: items the source produces.
    pub items: u64,
    /// Bytes of an item the source sends to the first stage.
    pub item_bytes: f64,
    /// The stages, first to last.
    pub stages: Vec<StageParams>,
}

impl PipelineApp {
    /// The bytes of one item entering stage `stage` (the source's for the first).
    pub fn input_bytes(&self, stage: usize) -> f64 {
        match stage {
            0 => self.item_bytes,
            s => self.stages[s - 1].output_bytes,
        }
    }
}

/// A node that may run stages: a worker of a cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineNode {
    /// Index of its cluster in [`PipelineSystem::clusters`].
    pub cluster: usize,
    /// Its host.
    pub host: String,
    /// `tc`: seconds one item of each stage takes on it (`oper / perf`, or measured).
    pub stage_s: Vec<f64>,
    /// The coefficient of variation of its repeated calibration timings (0 when unknown):
    /// the noise of (158).
    pub repeat_cv: f64,
}

impl PipelineNode {
    /// The seconds one item of every stage takes on it, one after the other: the time of
    /// one item of the whole pipeline, what a calibration of this node measures.
    pub fn chain_s(&self) -> f64 {
        self.stage_s.iter().sum()
    }
}

/// A cluster: its LAN, and the WAN to its parent (none for the main cluster, which holds
/// the source and the sink).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineCluster {
    /// Its name.
    pub name: String,
    /// Index of the cluster its WAN leads to; `None` for the main cluster.
    pub parent: Option<usize>,
    /// `lambda = 1 / lan_bytes_per_s` inside it.
    pub lan_bytes_per_s: f64,
    /// The WAN's rate from the parent to this cluster, bytes per second.
    pub wan_in_bytes_per_s: f64,
    /// The WAN's rate from this cluster to the parent, bytes per second.
    pub wan_out_bytes_per_s: f64,
    /// The WAN's round trip to the parent, seconds.
    pub wan_rtt_s: f64,
}

/// The model's options (`[pipeline]` keys of the plan).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineOptions {
    /// PL(1)'s sends.
    pub sends: Sends,
    /// `m_o`, seconds.
    pub message_overhead_s: f64,
    /// Count a WAN between stages on different clusters as a stage of its own (148)(149);
    /// `false` gives ASPARA's (5.2) over the compute stages alone.
    pub wan_stage: bool,
    /// Count what a remap costs (detection, drain, re-calibration, (162)-(164)) in the gain
    /// a remap brings (167); `false` gives the gain of the better mapping alone.
    pub remap_cost: bool,
    /// Items in flight; `None`: the window (166).
    pub window: Option<u64>,
    /// Items of each stage a replica holds (one computing, the others waiting).
    pub replica_buffers: u64,
    /// Items of the whole pipeline each node computes when it is calibrated (the first warms
    /// up and is not counted).
    pub calibration_repeats: u64,
    /// Recent items whose median time the runtime sets against its threshold: `k` of (162),
    /// or the least of it with `detection_by_cost` (176).
    pub detection_items: u64,
    /// Watch a group over as many items as a remap costs (176), at least `detection_items`.
    pub detection_by_cost: bool,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            sends: Sends::Async,
            message_overhead_s: 0.0,
            wan_stage: true,
            remap_cost: true,
            window: None,
            replica_buffers: 2,
            calibration_repeats: 3,
            detection_items: 8,
            detection_by_cost: true,
        }
    }
}

/// Everything the pipeline model reads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineSystem {
    /// The application.
    pub app: PipelineApp,
    /// The nodes that may run stages.
    pub nodes: Vec<PipelineNode>,
    /// The clusters; the first is the main one (source and sink).
    pub clusters: Vec<PipelineCluster>,
    /// The options.
    pub options: PipelineOptions,
}

impl PipelineSystem {
    /// A message's cost inside cluster `cluster`.
    pub fn lan_cost(&self, cluster: usize) -> MessageCost {
        MessageCost {
            overhead_s: self.options.message_overhead_s,
            per_byte_s: 1.0 / self.clusters[cluster].lan_bytes_per_s,
            sends: self.options.sends,
        }
    }

    /// The WAN hops from cluster `from` to cluster `to` up and down the tree: each hop the
    /// child cluster whose link it crosses and whether it goes up (towards the main cluster).
    pub fn wan_hops(&self, from: usize, to: usize) -> Vec<(usize, bool)> {
        let path_up = |mut c: usize| {
            let mut path = vec![c];
            while let Some(p) = self.clusters[c].parent {
                if path.contains(&p) || path.len() > self.clusters.len() {
                    break;
                }
                path.push(p);
                c = p;
            }
            path
        };
        let (up, down) = (path_up(from), path_up(to));
        let common = up.iter().position(|c| down.contains(c));
        let Some(common_at) = common else {
            return Vec::new();
        };
        let meet = up[common_at];
        let mut hops: Vec<(usize, bool)> = up[..common_at].iter().map(|&c| (c, true)).collect();
        let down_at = down.iter().position(|&c| c == meet).unwrap_or(0);
        hops.extend(down[..down_at].iter().rev().map(|&c| (c, false)));
        hops
    }

    /// The nodes of cluster `cluster`.
    pub fn nodes_of(&self, cluster: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(move |&k| self.nodes[k].cluster == cluster)
    }
}

/// Consecutive stages run together on the same replicas: one replica alone, or several
/// behind a stage manager on their cluster's first rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Group {
    /// The first stage (index).
    pub first: usize,
    /// The last stage (index), `>= first`.
    pub last: usize,
    /// The nodes (indices into [`PipelineSystem::nodes`]) computing its items; several
    /// share them behind a manager. All of one cluster.
    pub replicas: Vec<usize>,
}

impl Group {
    /// Whether a stage manager feeds its replicas.
    pub fn managed(&self) -> bool {
        self.replicas.len() > 1
    }
}

/// Stages onto nodes: the groups cover the stages in order, each stage once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
pub struct Mapping {
    /// The groups, first stages first.
    pub groups: Vec<Group>,
}

/// A mapping that does not fit the system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// Groups that leave a stage out, repeat one, or run backwards.
    #[error("the groups must cover stages 0 to {last} in order, each once; {found}")]
    Coverage {
        /// The last stage.
        last: usize,
        /// What was found instead.
        found: String,
    },
    /// A group without a replica, a replica that is not a node, or replicas on two clusters.
    #[error("group of stages {first}..={last}: {message}")]
    Replicas {
        /// Its first stage.
        first: usize,
        /// Its last stage.
        last: usize,
        /// What is wrong.
        message: String,
    },
}

impl Mapping {
    /// One group per stage, each on one node, in order.
    pub fn one_stage_per_node(nodes: &[usize]) -> Mapping {
        Mapping {
            groups: nodes
                .iter()
                .enumerate()
                .map(|(stage, &node)| Group {
                    first: stage,
                    last: stage,
                    replicas: vec![node],
                })
                .collect(),
        }
    }

    /// Every node the mapping uses.
    pub fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.groups.iter().flat_map(|g| g.replicas.iter().copied())
    }

    /// Checks that the mapping covers `system`'s stages in order with its nodes, each group
    /// on one cluster and each node in one group.
    pub fn check(&self, system: &PipelineSystem) -> Result<(), MappingError> {
        let stages = system.app.stages.len();
        let mut next = 0;
        let mut used = vec![false; system.nodes.len()];
        for g in &self.groups {
            if g.first != next || g.last < g.first || g.last >= stages {
                return Err(MappingError::Coverage {
                    last: stages.saturating_sub(1),
                    found: format!(
                        "a group of stages {}..={} after stage {next}",
                        g.first, g.last
                    ),
                });
            }
            next = g.last + 1;
            let bad = |message: String| MappingError::Replicas {
                first: g.first,
                last: g.last,
                message,
            };
            let Some(&first) = g.replicas.first() else {
                return Err(bad("no replica".into()));
            };
            for &k in &g.replicas {
                let Some(node) = system.nodes.get(k) else {
                    return Err(bad(format!("node {k} does not exist")));
                };
                if node.cluster != system.nodes[first].cluster {
                    return Err(bad("replicas on two clusters".into()));
                }
                if std::mem::replace(&mut used[k], true) {
                    return Err(bad(format!("node {} is in two groups", node.host)));
                }
            }
        }
        if next != stages {
            return Err(MappingError::Coverage {
                last: stages.saturating_sub(1),
                found: format!("the groups end at stage {next}"),
            });
        }
        Ok(())
    }
}

/// A system for tests: `items` items, stages of one operation, `nodes` nodes of one cluster
/// each taking `stage_s` for them, with `options`.
#[cfg(test)]
pub(crate) fn one_cluster(
    items: u64,
    stage_s: &[f64],
    nodes: usize,
    options: PipelineOptions,
) -> PipelineSystem {
    PipelineSystem {
        app: PipelineApp {
            items,
            item_bytes: 0.0,
            stages: (0..stage_s.len())
                .map(|i| StageParams {
                    name: format!("s{i}"),
                    oper: 1.0,
                    output_bytes: 0.0,
                })
                .collect(),
        },
        nodes: (0..nodes)
            .map(|k| PipelineNode {
                cluster: 0,
                host: format!("n{k}"),
                stage_s: stage_s.to_vec(),
                repeat_cv: 0.0,
            })
            .collect(),
        clusters: vec![PipelineCluster {
            name: "main".into(),
            parent: None,
            lan_bytes_per_s: 1e9,
            wan_in_bytes_per_s: 1.0,
            wan_out_bytes_per_s: 1.0,
            wan_rtt_s: 0.0,
        }],
        options,
    }
}
