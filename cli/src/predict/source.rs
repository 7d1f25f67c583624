//! The measured-system file a prediction used, for the header of the text and the JSON.

use std::path::Path;

use hmw_model::MeasuredSystem;

/// The measured-system file a prediction used, for the header.
#[derive(Clone, Copy)]
pub struct MeasuredSource<'a> {
    /// Where it was read.
    pub path: &'a Path,
    /// What it holds.
    pub system: &'a MeasuredSystem,
}
