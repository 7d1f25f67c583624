//! The model's validation suite (`scripts/validate.sh`, `cargo xtask validate`): runs each
//! scenario of `configs/validation/` with the synthetic application on clusters emulated on
//! this machine (`hmw launch`), or, for the tb-* scenarios, with a real application on the
//! testbed's emulated hosts over ssh after `hmw calibrate` on them, compares the measured
//! makespan and efficiency with the model's prediction for the same plan (`hmw predict`,
//! `hmw report`; the same runs again with the plan given `[model] contention = "mva"`) and
//! with `hmw simulate`, and writes the report document with the table and the charts.
//!
//! - `options`: the command line; `scenario`: the scenario table and what is read from a plan;
//! - `tools`: what the tools print, parsed (through `keyvalue`, the one `key=value` parser);
//!   `files`: what the runs left on disk (capped, calibrated before, CPU time per operation);
//! - `judge`: a scenario's row and section from its files; `row`: its runs and row, the
//!   verdicts (with the plan as it is and with `[model] contention = "mva"`); `totals`: the
//!   totals and the last three lines; `numbers`: C's number formats and the medians;
//!   `document`: the document;
//! - `suite`: the whole run; `testbed`: the emulated hosts, taken down on every way out;
//!   `process`: the tools as processes; `machine`: this machine's load; `calendar`: dates.

mod calendar;
mod document;
mod files;
mod judge;
mod keyvalue;
mod machine;
mod numbers;
mod options;
pub(crate) mod process;
mod row;
mod scenario;
#[cfg(test)]
mod scratch;
mod suite;
pub(crate) mod testbed;
mod tools;
mod totals;

pub(crate) use suite::main;
