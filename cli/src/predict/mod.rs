//! `hmw predict PLAN.toml [--json] [--measured FILE]`: evaluate the analytical model on a plan
//! before touching a machine — local cluster analysis, per-cluster and whole-run predictions,
//! and tuning advice (format: `docs/model.md`).
//!
//! The parts, each a file: `command.rs` (the arguments and the command), `source.rs` (the
//! measured-system file a prediction used), `json.rs` (the prediction as one JSON object),
//! `text.rs` (the prediction as text, in the order of the methodology), `format.rs` (numbers,
//! times and links as the text prints them), `pipeline.rs` (a pipeline plan's prediction),
//! `compare.rs` (other shapes of the federation beside it, `--compare`).

mod command;
mod compare;
mod format;
mod json;
pub mod pipeline;
mod source;
#[cfg(test)]
mod tests;
mod text;

pub use command::{pipeline_system, run, PredictArgs};
// For `hmw launch`, which prints the prediction before a run.
#[cfg(feature = "mpi")]
pub use source::MeasuredSource;
#[cfg(feature = "mpi")]
pub use text::to_text;
