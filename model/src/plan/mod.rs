//! The run plan: a TOML file describing the application, the model's settings and the clusters
//! with their machines (format: `docs/model.md`, "The plan file").
//!
//! [`load_plan`] reads and validates a plan; [`Plan::model_input`] turns it into the model's
//! parameter structs, optionally with system parameters measured by a calibration run
//! ([`MeasuredSystem`]) in place of the hand-written ones.
//!
//! Unknown keys: the tables the model reads (`[application]`, `[[application.grain]]`,
//! `[model]`, `[[cluster]]` and its `machines`) reject unknown keys, so a typo is an error that
//! names the key and the cluster; so do `[pipeline]` and its stages. The top level accepts only
//! the tables it knows; `[launch]`, `[run]` and `[testbed]`, and a `launch` table inside a
//! `[[cluster]]`, are reserved for the commands that run a plan and are kept here
//! uninterpreted ([`launch`] reads them).
//!
//! The parts, each a file:
//!
//! - `validated.rs`: the validated plan ([`Plan`], its clusters and machines);
//! - `file.rs`: the plan file as written, before validation;
//! - `hostlist.rs`: host ranges (`node[1-16384]`), one machine entry for many hosts;
//! - `parse.rs`: the file's values checked into a [`Plan`];
//! - `load.rs`: plans and measured-system files read from disk;
//! - `model_input.rs`: a plan, and the values measured, as the model's input;
//! - `pipeline.rs`: the `[pipeline]` table of a pipeline application;
//! - `pipeline_input.rs`: a pipeline plan, and the values measured, as the pipeline model's
//!   input;
//! - `measured.rs`: a measured system checked against the plan;
//! - `error.rs`: [`PlanError`], naming the key, the cluster and the machine;
//! - `syntax.rs`: TOML errors in the plan's vocabulary;
//! - `location.rs`: which key a deserialization error is about;
//! - [`launch`]: the tables that say how to run a plan.
//!
//! [`MeasuredSystem`]: crate::params::MeasuredSystem

mod error;
mod file;
mod hostlist;
pub mod launch;
mod load;
mod location;
mod measured;
mod model_input;
mod parse;
mod pipeline;
mod pipeline_input;
mod syntax;
mod validated;

#[cfg(test)]
mod tests;

pub use error::PlanError;
pub use file::DEFAULT_EFFICIENCY_THRESHOLD;
pub use load::{load_measured_system, load_plan, model_input_with_measured};
pub use pipeline::{MappingMode, PipelinePlan, Threshold};
pub use validated::{ClusterPlan, Machine, Plan, Role, SelectionMode};
