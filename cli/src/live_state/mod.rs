//! The live state file: what `hmw launch` knows of its run now, rewritten whole at most once a
//! second in the run's work folder ([`FILE_NAME`]), read by `hmw top`.
//!
//! - [`format`]: the serde types of the file, versioned;
//! - [`read`]: reading it back, with the file's name and age in every error.

pub mod format;
mod read;

pub use format::*;
pub(crate) use read::{age_s, ago};
pub use read::{read, Loaded};
