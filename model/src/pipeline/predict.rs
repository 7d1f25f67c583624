//! A pipeline plan's prediction: the three mappings (naive, Algorithm 5.1, the model's), the
//! one the run uses with its times, window and threshold, the advice, and what a remap
//! would bring under a slowdown.

use serde::Serialize;

use super::advice::{advise, PipelineAdvice};
use super::calibration::{greedy, naive, pool_times, relative_threshold};
use super::flow::{evaluate, window_items, Evaluation};
use super::gain::{detection_items, remap_gain, RemapGain, Slowdown};
use super::mate::model_mapping;
use super::system::{Mapping, MappingError, PipelineSystem};
use crate::plan::{MappingMode, Threshold};

/// A mapping and its times.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MappedPipeline {
    /// How it was chosen.
    pub mode: MappingMode,
    /// The mapping.
    pub mapping: Mapping,
    /// Its times.
    pub evaluation: Evaluation,
}

/// Everything `hmw predict` says of a pipeline plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelinePrediction {
    /// The mapping the run starts with (`[pipeline] mapping`).
    pub chosen: MappedPipeline,
    /// The three mappings, naive, greedy and model, for comparison.
    pub alternatives: Vec<MappedPipeline>,
    /// Items the source keeps in flight (166).
    pub window: u64,
    /// Items each group is watched over against the threshold (176).
    pub detection_items: u64,
    /// The threshold `X` of (157) the run uses; `None`: never.
    pub threshold: Option<f64>,
    /// The advice on the chosen mapping.
    pub advice: Vec<PipelineAdvice>,
    /// What a remap brings under the slowdown asked for.
    pub gain: Option<RemapGain>,
}

/// The mapping `mode` chooses on `system`, with its times; `None` when there are no nodes.
pub fn mapping_for(system: &PipelineSystem, mode: MappingMode) -> Option<(Mapping, Evaluation)> {
    if system.nodes.is_empty() || system.app.stages.is_empty() {
        return None;
    }
    match mode {
        MappingMode::Model => model_mapping(system),
        MappingMode::Greedy | MappingMode::Naive => {
            let mapping = if mode == MappingMode::Greedy {
                greedy(system)
            } else {
                naive(system)
            };
            let evaluation = evaluate(system, &mapping).ok()?;
            Some((mapping, evaluation))
        }
    }
}

/// The threshold `X` of (157) for `threshold` on `system`: (158) from the pool's dispersion
/// and the median of the nodes' repeat noise for the default.
pub fn threshold_value(system: &PipelineSystem, threshold: Threshold) -> Option<f64> {
    match threshold {
        Threshold::Never => None,
        Threshold::Fixed(x) => Some(x),
        Threshold::Default => {
            let mut noise: Vec<f64> = system.nodes.iter().map(|n| n.repeat_cv).collect();
            noise.sort_by(f64::total_cmp);
            let median = noise.get(noise.len() / 2).copied().unwrap_or(0.0);
            Some(relative_threshold(&pool_times(system), median))
        }
    }
}

/// The prediction of `system` mapped by `mode`, remapping by `threshold`; with `slowdown`,
/// the gain of a remap under it (167).
pub fn predict_pipeline(
    system: &PipelineSystem,
    mode: MappingMode,
    threshold: Threshold,
    slowdown: Option<Slowdown>,
) -> Result<PipelinePrediction, MappingError> {
    let mut alternatives = Vec::new();
    for m in [MappingMode::Naive, MappingMode::Greedy, MappingMode::Model] {
        if let Some((mapping, evaluation)) = mapping_for(system, m) {
            alternatives.push(MappedPipeline {
                mode: m,
                mapping,
                evaluation,
            });
        }
    }
    let chosen = alternatives
        .iter()
        .find(|a| a.mode == mode)
        .cloned()
        .ok_or_else(|| MappingError::Coverage {
            last: system.app.stages.len().saturating_sub(1),
            found: "no node can run a stage".into(),
        })?;
    let threshold = threshold_value(system, threshold);
    let gain = slowdown
        .map(|s| {
            remap_gain(system, &chosen.mapping, threshold, &s, |slowed| {
                mapping_for(slowed, mode)
            })
        })
        .transpose()?;
    let window = window_items(system, &chosen.mapping, &chosen.evaluation);
    Ok(PipelinePrediction {
        window,
        detection_items: detection_items(system, window, &chosen.evaluation),
        advice: advise(system, &chosen.mapping, &chosen.evaluation),
        threshold,
        gain,
        chosen,
        alternatives,
    })
}
