//! The plan's `[pipeline]` table: the stages of a pipeline application, their costs and
//! message sizes, the items, and how the run maps and remaps them.

use std::collections::HashSet;

use serde::Deserialize;

use super::error::{check_positive, check_size, invalid, PlanError};
use crate::pipeline::{PipelineOptions, Sends, StageParams};

/// `[pipeline]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PipelineTable {
    items: u64,
    #[serde(default)]
    item_bytes: f64,
    #[serde(default)]
    sends: Sends,
    #[serde(default)]
    message_overhead_s: f64,
    #[serde(default)]
    mapping: MappingMode,
    #[serde(default)]
    threshold: Threshold,
    window: Option<u64>,
    #[serde(default = "two")]
    replica_buffers: u64,
    #[serde(default = "three")]
    calibration_repeats: u64,
    #[serde(default = "eight")]
    detection_items: u64,
    #[serde(default = "yes")]
    detection_by_cost: bool,
    #[serde(default = "yes")]
    wan_stage: bool,
    #[serde(default = "yes")]
    remap_cost: bool,
    stage: Vec<StageTable>,
}

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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageTable {
    name: String,
    oper: f64,
    #[serde(default)]
    output_bytes: f64,
}

/// How stages are mapped onto nodes (`[pipeline] mapping`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MappingMode {
    /// The model's best mapping, replicas included (159).
    #[default]
    Model,
    /// Algorithm 5.1's greedy refinement (153)-(155).
    Greedy,
    /// One stage per fittest node.
    Naive,
}

impl MappingMode {
    /// Its name in the plan.
    pub fn name(self) -> &'static str {
        match self {
            MappingMode::Model => "model",
            MappingMode::Greedy => "greedy",
            MappingMode::Naive => "naive",
        }
    }
}

/// When the run remaps (`[pipeline] threshold`): written `"default"`, `"never"` or a number.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Threshold {
    /// (158) from the calibration's dispersion.
    #[default]
    Default,
    /// Never remap.
    Never,
    /// A fixed relative slowdown `X` over the calibrated bottleneck (157).
    Fixed(f64),
}

/// A threshold as written.
#[derive(Deserialize, serde::Serialize)]
#[serde(untagged)]
enum ThresholdText {
    Word(String),
    Number(f64),
}

impl TryFrom<ThresholdText> for Threshold {
    type Error = String;

    fn try_from(text: ThresholdText) -> Result<Self, String> {
        match text {
            ThresholdText::Word(w) if w == "default" => Ok(Threshold::Default),
            ThresholdText::Word(w) if w == "never" => Ok(Threshold::Never),
            ThresholdText::Number(x) if x.is_finite() && x > 0.0 => Ok(Threshold::Fixed(x)),
            ThresholdText::Word(w) => Err(format!(
                "must be \"default\", \"never\" or a relative slowdown above 0, got \"{w}\""
            )),
            ThresholdText::Number(x) => Err(format!(
                "must be \"default\", \"never\" or a relative slowdown above 0, got {x}"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Threshold {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = ThresholdText::deserialize(deserializer)?;
        Threshold::try_from(text).map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Threshold {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Threshold::Default => ThresholdText::Word("default".into()),
            Threshold::Never => ThresholdText::Word("never".into()),
            Threshold::Fixed(x) => ThresholdText::Number(*x),
        }
        .serialize(serializer)
    }
}

/// A validated `[pipeline]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelinePlan {
    /// The stages.
    pub stages: Vec<StageParams>,
    /// `items`.
    pub items: u64,
    /// `item_bytes`.
    pub item_bytes: f64,
    /// `mapping`.
    pub mapping: MappingMode,
    /// `threshold`.
    pub threshold: Threshold,
    /// The model's options.
    pub options: PipelineOptions,
}

pub(super) fn validate_pipeline(table: PipelineTable) -> Result<PipelinePlan, PlanError> {
    let key = |k: &str| format!("pipeline.{k}");
    if table.items == 0 {
        return Err(invalid(None, &key("items"), "must be at least 1"));
    }
    check_size(&key("item_bytes"), table.item_bytes)?;
    if !(table.message_overhead_s.is_finite() && table.message_overhead_s >= 0.0) {
        return Err(invalid(
            None,
            &key("message_overhead_s"),
            format!(
                "must be a number of seconds, 0 or more, got {}",
                table.message_overhead_s
            ),
        ));
    }
    for (name, value) in [
        ("replica_buffers", table.replica_buffers),
        ("calibration_repeats", table.calibration_repeats),
        ("detection_items", table.detection_items),
        ("window", table.window.unwrap_or(1)),
    ] {
        if value == 0 {
            return Err(invalid(None, &key(name), "must be at least 1"));
        }
    }
    let threshold = table.threshold;
    if table.stage.is_empty() {
        return Err(invalid(
            None,
            &key("stage"),
            "the pipeline has no stage: give at least one [[pipeline.stage]]",
        ));
    }
    let mut names = HashSet::new();
    let mut stages = Vec::new();
    for s in table.stage {
        let at = |k: &str| format!("pipeline.stage[name = {}].{k}", s.name);
        if s.name.trim().is_empty() {
            return Err(invalid(None, &key("stage.name"), "must not be empty"));
        }
        if !names.insert(s.name.clone()) {
            return Err(invalid(None, &at("name"), "two stages have this name"));
        }
        check_positive(None, &at("oper"), s.oper, "basic operations per item")?;
        check_size(&at("output_bytes"), s.output_bytes)?;
        stages.push(StageParams {
            name: s.name,
            oper: s.oper,
            output_bytes: s.output_bytes,
        });
    }
    Ok(PipelinePlan {
        stages,
        items: table.items,
        item_bytes: table.item_bytes,
        mapping: table.mapping,
        threshold,
        options: PipelineOptions {
            sends: table.sends,
            message_overhead_s: table.message_overhead_s,
            wan_stage: table.wan_stage,
            remap_cost: table.remap_cost,
            window: table.window,
            replica_buffers: table.replica_buffers,
            calibration_repeats: table.calibration_repeats,
            detection_items: table.detection_items,
            detection_by_cost: table.detection_by_cost,
        },
    })
}

impl PipelinePlan {
    /// The basic operations of one item through every stage.
    pub fn chain_oper(&self) -> f64 {
        self.stages.iter().map(|s| s.oper).sum()
    }
}
