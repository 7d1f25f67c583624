//! `hmw report`: a run's statistics against the model's prediction, as a table and a chart.
//!
//! Pure: statistics (and a prediction) in, figures and a picture out; the command line reads
//! the files.
//!
//! - [`observed`]: the run's timeline from its progress samples (rates per interval, tasks
//!   done, stretches where a cluster delivered nothing);
//! - [`predicted`]: the model's prediction as curves over time;
//! - [`comparison`]: predicted against measured (makespan, efficiency, error, targets);
//! - [`chart`]: the picture (SVG or PNG, through plotters);
//! - `html`: the whole report as one self-contained HTML page (`--html`).

pub mod chart;
mod command;
pub mod comparison;
mod document;
mod html;
pub mod observed;
pub mod predicted;
pub mod workers;

pub(crate) use command::{run, ReportArgs};
