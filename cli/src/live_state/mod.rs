//! The live state file: what `hmw launch` knows of its run now, rewritten whole at most once a
//! second in the run's work folder ([`FILE_NAME`]), read by `hmw top`.
//!
//! - [`format`]: the serde types of the file, versioned.

pub mod format;

pub use format::*;
