//! Reading the live state file back: a missing, unreadable, corrupt or foreign file is an
//! error naming the file and its age.

use std::{
    fs, io,
    path::{Path, PathBuf},
    time::SystemTime,
};

use thiserror::Error;

use super::format::{LiveState, FORMAT, VERSION};

/// A live state file as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// What it says.
    pub state: LiveState,
    /// When it was last written (its modification time).
    pub modified: SystemTime,
}

/// Why a live state file could not be read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// No file there.
    #[error(
        "{}: no live state file (hmw launch writes it in the run's work folder while the run \
         goes on)",
        .path.display()
    )]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("{}: cannot read: {source}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The file is not JSON of the live state's shape.
    #[error(
        "{}: corrupt live state file (written {}): {message}",
        .path.display(),
        ago(*.age_s)
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Seconds since it was written.
        age_s: f64,
        /// The parser's message, with its line and column.
        message: String,
    },
    /// The file is another format, or another version of this one.
    #[error(
        "{}: a live state file of format `{format}` version {version} (written {}); this hmw \
         reads `{FORMAT}` version {VERSION}",
        .path.display(),
        ago(*.age_s)
    )]
    Foreign {
        /// The file.
        path: PathBuf,
        /// Seconds since it was written.
        age_s: f64,
        /// The format and version it says it is.
        format: String,
        /// See `format`.
        version: u64,
    },
}

/// "3.2 s ago", for messages.
pub(crate) fn ago(age_s: f64) -> String {
    if age_s < 120.0 {
        format!("{age_s:.1} s ago")
    } else {
        format!("{} ago", hmw_core::stats::hms(age_s))
    }
}

/// Seconds since `time` (0 for a time in the future).
pub(crate) fn age_s(time: SystemTime) -> f64 {
    SystemTime::now()
        .duration_since(time)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Read the live state file at `path`.
pub fn read(path: &Path) -> Result<Loaded, ReadError> {
    let unreadable = |source: io::Error| match source.kind() {
        io::ErrorKind::NotFound => ReadError::Missing {
            path: path.to_owned(),
        },
        _ => ReadError::Unreadable {
            path: path.to_owned(),
            source,
        },
    };
    let modified = fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(unreadable)?;
    let text = fs::read_to_string(path).map_err(unreadable)?;
    let age_s = age_s(modified);
    let corrupt = |message: String| ReadError::Corrupt {
        path: path.to_owned(),
        age_s,
        message,
    };
    // The format and version first: a file of another version is said to be one, not to be
    // missing fields.
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if format != FORMAT || version != u64::from(VERSION) {
        return Err(ReadError::Foreign {
            path: path.to_owned(),
            age_s,
            format: format.to_owned(),
            version,
        });
    }
    let state = serde_path_to_error::deserialize(value)
        .map_err(|e| corrupt(format!("at `{}`: {}", e.path(), e.inner())))?;
    Ok(Loaded { state, modified })
}
