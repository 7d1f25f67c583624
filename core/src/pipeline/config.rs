//! The run configuration's `[pipeline]` table: what every rank of a pipeline run reads beside
//! its machine file. A hand-written one may hold nothing (the run calibrates every node first
//! and maps by the model); `hmw launch` writes the plan's clusters, stages and options, the
//! calibration it predicted from and the mapping it predicted.
//!
//! ```toml
//! [pipeline]
//! items = 1000                  # at most this many items from the source (default: all)
//! mapping = "model"             # "model" | "greedy" | "naive"
//! threshold = "default"         # "default" | "never" | a relative slowdown
//! window = 12                   # items in flight (default: (166))
//! replica_buffers = 2
//! calibration_repeats = 3       # the first warms up; the others are timed
//! detection_items = 8           # the least; with detection_by_cost, as a remap costs (176)
//! detection_by_cost = true
//! sends = "async"
//! message_overhead_s = 0.0
//! wan_stage = true
//! calibrate_only = false        # calibrate every node, then stop (hmw calibrate)
//! [[pipeline.cluster]]          # the clusters, the main one first (default: one, "main")
//! name = "lyon"
//! lan_bytes_per_s = 1e8
//! [[pipeline.cluster]]
//! name = "spain"
//! parent = "lyon"               # default: the first cluster
//! lan_bytes_per_s = 1e8
//! wan_in_bytes_per_s = 2e6
//! wan_out_bytes_per_s = 2e6
//! wan_rtt_s = 0.04
//! [[pipeline.stage]]            # the stages' costs and sizes for the model, in order
//! name = "fft"
//! oper = 4e6
//! output_bytes = 65536
//! [[pipeline.node]]             # a calibration made before the run: each worker's times
//! cluster = "spain"
//! rank = 2
//! stage_s = [0.01, 0.04, 0.01]
//! chain_cv = 0.02
//! [[pipeline.group]]            # the mapping to start with
//! first = 0
//! last = 1
//! replicas = [{ cluster = "spain", rank = 2 }]
//! ```

use serde::{Deserialize, Serialize};

use hmw_model::pipeline::Sends;
use hmw_model::plan::{MappingMode, Threshold};

fn two() -> u64 {
    2
}
fn three() -> u64 {
    3
}
fn eight() -> u64 {
    8
}
fn yes() -> bool {
    true
}

/// `[pipeline]` of the run configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// At most this many items from the source.
    #[serde(default)]
    pub items: Option<u64>,
    /// How stages are mapped at each calibration.
    #[serde(default)]
    pub mapping: MappingMode,
    /// When the run remaps.
    #[serde(default)]
    pub threshold: Threshold,
    /// Items in flight; default the window (166) of the mapping.
    #[serde(default)]
    pub window: Option<u64>,
    /// Items a replica holds from its manager.
    #[serde(default = "two")]
    pub replica_buffers: u64,
    /// Items of the chain each node times when calibrated (the first warms up, uncounted).
    #[serde(default = "three")]
    pub calibration_repeats: u64,
    /// Recent times per replica whose median meets the threshold: the least of them, with
    /// `detection_by_cost`.
    #[serde(default = "eight")]
    pub detection_items: u64,
    /// Watch a group over as many items as a remap costs (`docs/model.md` (176)).
    #[serde(default = "yes")]
    pub detection_by_cost: bool,
    /// How stages send, for the model.
    #[serde(default)]
    pub sends: Sends,
    /// `m_o`, for the model.
    #[serde(default)]
    pub message_overhead_s: f64,
    /// A WAN between stages is a stage of the model.
    #[serde(default = "yes")]
    pub wan_stage: bool,
    /// Calibrate every node, then stop (`hmw calibrate` on a pipeline plan): the statistics
    /// hold the calibration.
    #[serde(default)]
    pub calibrate_only: bool,
    /// The clusters, the main one first.
    #[serde(default)]
    pub cluster: Vec<ClusterEntry>,
    /// The stages' costs and sizes, in order.
    #[serde(default)]
    pub stage: Vec<StageEntry>,
    /// A calibration made before the run.
    #[serde(default)]
    pub node: Vec<NodeEntry>,
    /// The mapping to start with.
    #[serde(default)]
    pub group: Vec<GroupEntry>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        toml::from_str("").expect("every key has a default")
    }
}

/// A cluster of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterEntry {
    /// Its name (the `cluster=` of its machine file's first line).
    pub name: String,
    /// The cluster its WAN leads to (default: the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Its LAN, bytes per second (default: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lan_bytes_per_s: Option<f64>,
    /// Its WAN from the parent, bytes per second (default: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan_in_bytes_per_s: Option<f64>,
    /// Its WAN to the parent, bytes per second (default: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan_out_bytes_per_s: Option<f64>,
    /// Its WAN's round trip, seconds (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wan_rtt_s: Option<f64>,
}

/// A stage's cost and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageEntry {
    /// Its name, as the application names it.
    pub name: String,
    /// Basic operations of one item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oper: Option<f64>,
    /// Bytes of one item it sends on (default: measured by the calibration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<f64>,
}

/// A rank of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankRef {
    /// The cluster's name.
    pub cluster: String,
    /// The rank in it.
    pub rank: u32,
}

/// A node's calibration made before the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// The cluster's name.
    pub cluster: String,
    /// The rank in it.
    pub rank: u32,
    /// Seconds of one item of each stage.
    pub stage_s: Vec<f64>,
    /// The noise of its repeated timings.
    #[serde(default)]
    pub chain_cv: f64,
}

/// A group of the mapping to start with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupEntry {
    /// Its first stage.
    pub first: u32,
    /// Its last stage.
    pub last: u32,
    /// Its nodes.
    pub replicas: Vec<RankRef>,
}

impl PipelineConfig {
    /// The index of cluster `name` in the run (the main one 0; with no cluster list, the one
    /// cluster of the run whatever its name).
    pub fn cluster_index(&self, name: Option<&str>) -> Option<usize> {
        if self.cluster.is_empty() {
            return Some(0);
        }
        let name = name?;
        self.cluster.iter().position(|c| c.name == name)
    }

    /// Checks what the table says against itself: cluster names unique and known parents,
    /// positive rates, a calibration of `stages` times per node, groups covering the stages.
    /// The error names the key.
    pub fn check(&self, stages: usize) -> Result<(), String> {
        let mut names = std::collections::HashSet::new();
        for (i, c) in self.cluster.iter().enumerate() {
            if !names.insert(c.name.as_str()) {
                return Err(format!("pipeline.cluster: `{}` is listed twice", c.name));
            }
            if let Some(parent) = &c.parent {
                if i == 0 || !self.cluster[..i].iter().any(|p| &p.name == parent) {
                    return Err(format!(
                        "pipeline.cluster[name = {}].parent: `{parent}` is not a cluster listed \
                         before it",
                        c.name
                    ));
                }
            }
            for (key, value) in [
                ("lan_bytes_per_s", c.lan_bytes_per_s),
                ("wan_in_bytes_per_s", c.wan_in_bytes_per_s),
                ("wan_out_bytes_per_s", c.wan_out_bytes_per_s),
            ] {
                if value.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                    return Err(format!(
                        "pipeline.cluster[name = {}].{key}: must be a positive number of bytes \
                         per second",
                        c.name
                    ));
                }
            }
        }
        for (key, value) in [
            ("replica_buffers", self.replica_buffers),
            ("calibration_repeats", self.calibration_repeats),
            ("detection_items", self.detection_items),
            ("window", self.window.unwrap_or(1)),
        ] {
            if value == 0 {
                return Err(format!("pipeline.{key}: must be at least 1"));
            }
        }
        if !self.stage.is_empty() && self.stage.len() != stages {
            return Err(format!(
                "pipeline.stage: {} stages listed, the application has {stages}",
                self.stage.len()
            ));
        }
        let known = |cluster: &str| self.cluster.is_empty() || names.contains(cluster);
        for n in &self.node {
            if !known(&n.cluster) {
                return Err(format!("pipeline.node: no cluster `{}`", n.cluster));
            }
            if n.stage_s.len() != stages || n.stage_s.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
                return Err(format!(
                    "pipeline.node[cluster = {}, rank = {}].stage_s: expected {stages} positive \
                     times, one per stage",
                    n.cluster, n.rank
                ));
            }
        }
        let mut next = 0;
        for g in &self.group {
            if g.first != next || g.last < g.first || g.last as usize >= stages {
                return Err(format!(
                    "pipeline.group: the groups must cover stages 0 to {} in order; found \
                     {}..={} after stage {next}",
                    stages.saturating_sub(1),
                    g.first,
                    g.last
                ));
            }
            next = g.last + 1;
            if g.replicas.is_empty() {
                return Err(format!(
                    "pipeline.group[first = {}].replicas: at least one",
                    g.first
                ));
            }
        }
        if !self.group.is_empty() && next as usize != stages {
            return Err(format!(
                "pipeline.group: the groups end at stage {next}, the application has {stages}"
            ));
        }
        if !self.group.is_empty() && self.node.is_empty() {
            return Err(
                "pipeline.group: a mapping to start with needs the calibration it came from \
                 ([[pipeline.node]])"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> PipelineConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn an_empty_table_takes_every_default() {
        let config = PipelineConfig::default();
        assert_eq!(config.mapping, MappingMode::Model);
        assert_eq!(config.threshold, Threshold::Default);
        assert_eq!(config.detection_items, 8);
        assert!(config.check(3).is_ok());
        assert_eq!(config.cluster_index(Some("anything")), Some(0));
    }

    #[test]
    fn it_round_trips_and_checks() {
        let config = parse(
            "threshold = 0.4\n[[cluster]]\nname = \"a\"\n[[cluster]]\nname = \"b\"\nparent = \
             \"a\"\nwan_in_bytes_per_s = 1e6\n[[node]]\ncluster = \"b\"\nrank = 1\nstage_s = \
             [0.1, 0.2]\n[[group]]\nfirst = 0\nlast = 1\nreplicas = [{ cluster = \"b\", rank = \
             1 }]\n",
        );
        assert_eq!(config.threshold, Threshold::Fixed(0.4));
        assert_eq!(config.cluster_index(Some("b")), Some(1));
        assert!(config.check(2).is_ok());
        let again: PipelineConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
        assert_eq!(again, config);
        assert!(config
            .check(3)
            .unwrap_err()
            .starts_with("pipeline.node[cluster = b, rank = 1].stage_s"));
        let mut gap = config.clone();
        gap.group[0].last = 0;
        assert!(gap.check(2).unwrap_err().contains("end at stage 1"));
        let mut orphan = config.clone();
        orphan.cluster[1].parent = Some("z".into());
        assert!(orphan.check(2).unwrap_err().contains("parent"));
        let bad: Result<PipelineConfig, _> = toml::from_str("treshold = 1\n");
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("unknown field `treshold`"));
    }
}
