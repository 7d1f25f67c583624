//! The statistics of a pipeline run: what each rank did, every mapping and every decision of
//! the controller, and its progress over time (`--stats-json`, `hmw report`).

use serde::{Deserialize, Serialize};

use crate::protocol::pipeline::{Address, GroupRanks};
pub use crate::protocol::pipeline::{PipeRole, RankReport};

/// A mapping the run followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingRecord {
    /// Its epoch (1 for the first).
    pub epoch: u32,
    /// Seconds from the start when it was handed out.
    pub at_s: f64,
    /// Its groups.
    pub groups: Vec<GroupRanks>,
    /// Each group's hosts, as `group: host, host`.
    pub hosts: Vec<String>,
    /// The model's bottleneck time for it, seconds per item (151).
    pub predicted_bottleneck_s: f64,
    /// The model's latency for it (150).
    pub predicted_latency_s: f64,
    /// The threshold `X` in force with it (157); `None`: never.
    pub threshold: Option<f64>,
    /// Items the source keeps in flight with it (166).
    pub window: u64,
    /// Items each group is watched over, the median of their times against the threshold
    /// (176).
    #[serde(default)]
    pub detection_items: u64,
}

/// What the controller decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DecisionKind {
    /// A group passed the threshold: drain.
    Drain {
        /// The group.
        group: u32,
        /// Its measured time per item (the median of its recent items).
        measured_s: f64,
        /// The limit `(1 + X) t_b` it passed.
        limit_s: f64,
    },
    /// Every item in flight is through: calibrate every node.
    Calibrate {
        /// The nodes.
        nodes: usize,
    },
    /// A new mapping handed out.
    Remap {
        /// Its epoch.
        epoch: u32,
        /// The model's bottleneck time for it.
        predicted_bottleneck_s: f64,
    },
    /// Every rank follows the new mapping: items flow again.
    Resume {
        /// The epoch.
        epoch: u32,
    },
}

/// One decision, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipeDecision {
    /// Seconds from the start.
    pub at_s: f64,
    /// Items through the sink by then.
    pub delivered: u64,
    /// What.
    pub decision: DecisionKind,
}

/// The pipeline's progress at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipeProgress {
    /// Seconds from the start.
    pub at_s: f64,
    /// Items through the sink.
    pub delivered: u64,
    /// Items per second over the interval before.
    pub items_per_s: f64,
}

/// One node's calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationRecord {
    /// Seconds from the start when it came.
    pub at_s: f64,
    /// The node.
    pub node: Address,
    /// Its host.
    pub host: String,
    /// Seconds of one item of each stage.
    pub stage_s: Vec<f64>,
    /// Bytes of each stage's output.
    pub output_bytes: Vec<u64>,
    /// The noise of its repeated timings.
    pub chain_cv: f64,
}

/// One stage on one node over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageOnNode {
    /// The stage.
    pub stage: u32,
    /// The node.
    pub node: Address,
    /// Its host.
    pub host: String,
    /// Items.
    pub items: u64,
    /// Mean seconds per item.
    pub mean_s: f64,
}

/// The statistics of a pipeline run (`--stats-json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PipelineStats {
    /// Always `"pipeline"`: tells these statistics from a master-worker run's.
    pub kind: String,
    /// The stages' names.
    pub stages: Vec<String>,
    /// When the run started, seconds since the Unix epoch.
    pub started_unix_s: Option<f64>,
    /// Seconds from the first item handed out to the last through the sink.
    pub makespan_s: f64,
    /// Seconds from the start to the end, calibrations and remaps included.
    pub wall_s: f64,
    /// Items through the sink.
    pub items: u64,
    /// Seconds of calibration before the first item.
    pub calibration_s: f64,
    /// The mappings followed, the first first.
    pub mappings: Vec<MappingRecord>,
    /// Every node's calibrations, in the order they came.
    pub calibrations: Vec<CalibrationRecord>,
    /// Every decision.
    pub decisions: Vec<PipeDecision>,
    /// The progress over time.
    pub progress: Vec<PipeProgress>,
    /// Each stage on each node, from the times that travelled with the items.
    pub stage_times: Vec<StageOnNode>,
    /// What each rank did.
    pub ranks: Vec<(Address, RankReport)>,
}

impl PipelineStats {
    /// Remaps the run made.
    pub fn remaps(&self) -> usize {
        self.mappings.len().saturating_sub(1)
    }

    /// Items per second over the makespan.
    pub fn throughput(&self) -> f64 {
        if self.makespan_s > 0.0 {
            self.items as f64 / self.makespan_s
        } else {
            0.0
        }
    }

    /// The summary printed at the end of a run.
    pub fn summary(&self) -> String {
        let mut text = format!(
            "pipeline: {} items through {} stages in {:.3} s ({:.2} items/s), {} remaps, wall \
             {:.3} s\n",
            self.items,
            self.stages.len(),
            self.makespan_s,
            self.throughput(),
            self.remaps(),
            self.wall_s
        );
        for m in &self.mappings {
            text.push_str(&format!(
                "  mapping {} at {:.3} s: {} (predicted {:.4} s per item)\n",
                m.epoch,
                m.at_s,
                m.hosts.join(" | "),
                m.predicted_bottleneck_s
            ));
        }
        for d in &self.decisions {
            text.push_str(&format!(
                "  [{:>8.3} s] {}\n",
                d.at_s,
                describe(&d.decision)
            ));
        }
        text
    }
}

/// One line for a decision.
pub fn describe(decision: &DecisionKind) -> String {
    match decision {
        DecisionKind::Drain {
            group,
            measured_s,
            limit_s,
        } => format!(
            "group {group} takes {measured_s:.4} s per item, beyond its limit {limit_s:.4} s: drain"
        ),
        DecisionKind::Calibrate { nodes } => format!("drained: calibrate {nodes} nodes"),
        DecisionKind::Remap {
            epoch,
            predicted_bottleneck_s,
        } => {
            format!("mapping {epoch} handed out (predicted {predicted_bottleneck_s:.4} s per item)")
        }
        DecisionKind::Resume { epoch } => format!("every rank follows mapping {epoch}: resume"),
    }
}
