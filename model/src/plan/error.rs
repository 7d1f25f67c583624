//! [`PlanError`]: a bad plan or measured-system file, one error naming the file, the cluster,
//! the machine and the key; and the errors of a key's value.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

/// A bad plan (or measured-system file): one error naming the file, the cluster and the key.
#[derive(Debug, Error)]
pub enum PlanError {
    /// The file cannot be read.
    #[error("cannot read `{}`: {io}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        io: std::io::Error,
    },
    /// An error inside a named file.
    #[error("{}: {error}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error.
        error: Box<PlanError>,
    },
    /// Not TOML, or a key of the wrong type, missing or unknown.
    #[error(
        "line {line}, column {column}: {}{message}",
        syntax_context(cluster, machine, key)
    )]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The `[[cluster]]` where it happened, when inside one.
        cluster: Option<String>,
        /// The machine entry's `host`, when inside one.
        machine: Option<String>,
        /// The key whose value is wrong (`perf`, `role`, `application.tasks`); `None` when the
        /// message names it already (a missing or unknown key) or the error is in no value.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A well-formed plan with a value that cannot be right.
    #[error("{}", InvalidDisplay { cluster, machine, key, message })]
    Invalid {
        /// The cluster's name, for a key of a `[[cluster]]`.
        cluster: Option<String>,
        /// The machine's host, for a key of a machine entry.
        machine: Option<String>,
        /// The key, as written in the plan (`application.tasks`, `wan_in_bytes_per_s`, ...).
        key: String,
        /// What is wrong.
        message: String,
    },
}

fn syntax_context(
    cluster: &Option<String>,
    machine: &Option<String>,
    key: &Option<String>,
) -> String {
    let parts: Vec<String> = [
        cluster.as_ref().map(|c| format!("cluster `{c}`")),
        machine.as_ref().map(|m| format!("machine `{m}`")),
        key.as_ref().map(|k| format!("key `{k}`")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("{}: ", parts.join(", "))
    }
}

struct InvalidDisplay<'a> {
    cluster: &'a Option<String>,
    machine: &'a Option<String>,
    key: &'a str,
    message: &'a str,
}

impl fmt::Display for InvalidDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(cluster) = self.cluster {
            write!(f, "cluster `{cluster}`, ")?;
        }
        if let Some(machine) = self.machine {
            write!(f, "machine `{machine}`, ")?;
        }
        write!(f, "key `{}`: {}", self.key, self.message)
    }
}

pub(super) fn invalid(cluster: Option<&str>, key: &str, message: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        cluster: cluster.map(str::to_string),
        machine: None,
        key: key.to_string(),
        message: message.into(),
    }
}

pub(super) fn invalid_machine(
    cluster: &str,
    host: &str,
    key: &str,
    message: impl Into<String>,
) -> PlanError {
    PlanError::Invalid {
        cluster: Some(cluster.to_string()),
        machine: Some(host.to_string()),
        key: key.to_string(),
        message: message.into(),
    }
}

pub(super) fn check_positive(
    cluster: Option<&str>,
    key: &str,
    value: f64,
    unit: &str,
) -> Result<(), PlanError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(invalid(
            cluster,
            key,
            format!("must be a positive number of {unit}, got {value}"),
        ))
    }
}

pub(super) fn check_size(key: &str, value: f64) -> Result<(), PlanError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(
            None,
            key,
            format!("must be a number of bytes, 0 or more, got {value}"),
        ))
    }
}
