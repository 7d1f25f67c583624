//! Pipeline applications, the second skeleton on hmw's runtime: a source of items, a chain of
//! typed stages, a sink ([`app`]); the run configuration's `[pipeline]` table ([`config`]);
//! the run's statistics ([`stats`]). The roles' cores are in
//! [`crate::roles::pipeline`], their messages in [`crate::protocol::pipeline`], the model in
//! `hmw_model::pipeline`.

pub mod app;
pub mod config;
pub mod stats;

pub use app::{
    deliver, stage_fn, Chain, Complete, ErasedStage, FnStage, Pipeline, Sink, Source, Stage,
};
pub use config::PipelineConfig;
pub use stats::PipelineStats;
