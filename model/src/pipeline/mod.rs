//! Pipelines (`docs/model.md`, "Pipelines", (140)-(169)): a linear chain of stages, each item
//! through every stage in order, slow stages replicated behind a stage manager (the
//! dynamic-tuning thesis's PL(1)-PL(5)), mapped onto nodes by calibration (ASPARA's greedy
//! refinement, Algorithm 5.1) or by the model (MATE), with the WAN between stages on two
//! clusters a stage of its own; and what remapping brings when a node slows.
//!
//! - [`production`]: a stage's production time, alone, merged, held by its neighbours,
//!   replicated (140)-(147);
//! - [`system`]: the model's input and a mapping;
//! - [`flow`]: a mapping's times, the WAN stages, latency, throughput, makespan (148)-(152),
//!   the window (166);
//! - [`calibration`]: the mapping by calibration and its threshold (153)-(158);
//! - [`mate`]: the model's mapping (159);
//! - [`gain`]: the gain of a remap under a slowdown (160)-(165), (167);
//! - [`advice`]: replicate, merge, or a WAN that limits (168)(169);
//! - [`predict`]: everything `hmw predict` says of a pipeline plan.

pub mod advice;
pub mod calibration;
pub mod flow;
pub mod gain;
pub mod mate;
pub mod predict;
pub mod production;
pub mod system;

pub use advice::PipelineAdvice;
pub use flow::{evaluate, Evaluation, Part, PartTimes};
pub use gain::{RemapGain, Slowdown};
pub use predict::{mapping_for, predict_pipeline, threshold_value, PipelinePrediction};
pub use production::{MessageCost, Sends};
pub use system::{
    Group, Mapping, MappingError, PipelineApp, PipelineCluster, PipelineNode, PipelineOptions,
    PipelineSystem, StageParams,
};
