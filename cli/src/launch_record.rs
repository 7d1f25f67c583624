//! What `hmw launch` records of a run in its work folder (`launch.json`), so that
//! `hmw launch --resume WORK_DIR` starts the same run again: the plan, the binary and the
//! measured file it ran with (each with its SHA-256), and whether the main master journals
//! its results (`journal.hmwj` in the same folder, the master's `--journal`).

use std::{
    fs,
    path::{Path, PathBuf},
};

use crate::clock::unix_now;
use anyhow::{bail, Context as _, Result};
use serde::{Deserialize, Serialize};

/// The journal's file in a run's work folder.
pub(crate) const JOURNAL: &str = "journal.hmwj";
/// The record's file in a run's work folder.
const RECORD: &str = "launch.json";

/// A run as `hmw launch` started it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LaunchRecord {
    /// The plan (absolute).
    pub(crate) plan: PathBuf,
    /// Its SHA-256.
    pub(crate) plan_sha256: String,
    /// The application binary, as found (absolute when it is a path).
    pub(crate) binary: PathBuf,
    /// Its SHA-256, when it is a file here.
    pub(crate) binary_sha256: Option<String>,
    /// The measured file (`--measured`), absolute, and its SHA-256.
    pub(crate) measured: Option<(PathBuf, String)>,
    /// Whether the main master journals its results.
    pub(crate) journal: bool,
    /// When each run of it started (seconds since the Unix epoch), the first one first.
    pub(crate) runs_unix_s: Vec<f64>,
}

/// SHA-256 of a file, hex.
pub(crate) fn sha256_of(path: &Path) -> Result<String> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    Ok(digest.as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

fn absolute(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

impl LaunchRecord {
    /// The record of a run of `plan` with `binary` (and `measured`) starting now.
    pub(crate) fn new(
        plan: &Path,
        binary: &Path,
        measured: Option<&Path>,
        journal: bool,
    ) -> Result<Self> {
        let binary = absolute(binary);
        Ok(LaunchRecord {
            plan: absolute(plan),
            plan_sha256: sha256_of(plan)?,
            binary_sha256: binary.is_file().then(|| sha256_of(&binary)).transpose()?,
            binary,
            measured: measured
                .map(|m| Ok::<_, anyhow::Error>((absolute(m), sha256_of(m)?)))
                .transpose()?,
            journal,
            runs_unix_s: vec![unix_now()],
        })
    }

    /// Writes it into `work`.
    pub(crate) fn write(&self, work: &Path) -> Result<()> {
        let path = work.join(RECORD);
        fs::write(&path, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The record of the run in `work`, to resume it: refused when the run kept no journal,
    /// or when the plan, the binary or the measured file changed since (naming which).
    pub(crate) fn to_resume(work: &Path) -> Result<Self> {
        let path = work.join(RECORD);
        let text = fs::read_to_string(&path).with_context(|| {
            format!(
                "cannot resume from {}: no {RECORD} there (is it the work folder of an hmw \
                 launch?)",
                work.display()
            )
        })?;
        let mut record: LaunchRecord = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a launch record", path.display()))?;
        if !record.journal {
            bail!(
                "cannot resume the run of {}: it kept no journal (--no-journal)",
                work.display()
            );
        }
        if !work.join(JOURNAL).is_file() {
            bail!(
                "cannot resume the run of {}: its journal {} is missing",
                work.display(),
                work.join(JOURNAL).display()
            );
        }
        let changed = |what: &str, file: &Path, then: &str| -> Result<()> {
            let now = sha256_of(file)
                .with_context(|| format!("cannot resume: the {what} {}", file.display()))?;
            if now != then {
                bail!(
                    "cannot resume: the {what} {} changed since the run started (SHA-256 {then} \
                     then, {now} now); a resumed run must be the same run",
                    file.display()
                );
            }
            Ok(())
        };
        changed("plan", &record.plan, &record.plan_sha256)?;
        if let Some(then) = &record.binary_sha256 {
            changed("application binary", &record.binary, then)?;
        }
        if let Some((file, then)) = &record.measured {
            changed("measured file", file, then)?;
        }
        record.runs_unix_s.push(unix_now());
        Ok(record)
    }

    /// What the main cluster's command adds: the journal at `path` (`WORK/journal.hmwj`
    /// here, or its copy in the main cluster's own folder), resumed when `resume`.
    pub(crate) fn journal_args(&self, path: &str, resume: bool) -> Vec<String> {
        if !self.journal {
            return Vec::new();
        }
        let mut args = vec![
            "--journal".to_string(),
            path.to_string(),
            "--fingerprint".to_string(),
            format!("plan={}", self.plan_sha256),
        ];
        if resume {
            args.push("--resume".into());
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_plan_is_refused_by_name() {
        let work = std::env::temp_dir().join(format!("hmw-record-{}", std::process::id()));
        fs::create_dir_all(&work).unwrap();
        let plan = work.join("plan.toml");
        fs::write(&plan, "name = \"a\"\n").unwrap();
        let binary = work.join("app");
        fs::write(&binary, b"binary").unwrap();
        let record = LaunchRecord::new(&plan, &binary, None, true).unwrap();
        record.write(&work).unwrap();
        fs::write(work.join(JOURNAL), b"").unwrap();
        let resumed = LaunchRecord::to_resume(&work).unwrap();
        assert_eq!(resumed.runs_unix_s.len(), 2);
        assert_eq!(
            resumed.journal_args("/w/journal.hmwj", true),
            [
                "--journal",
                "/w/journal.hmwj",
                "--fingerprint",
                &format!("plan={}", record.plan_sha256),
                "--resume"
            ]
        );
        fs::write(&binary, b"another binary").unwrap();
        let error = LaunchRecord::to_resume(&work).unwrap_err().to_string();
        assert!(error.contains("application binary") && error.contains("changed"));
        fs::write(&binary, b"binary").unwrap();
        fs::write(&plan, "name = \"b\"\n").unwrap();
        let error = LaunchRecord::to_resume(&work).unwrap_err().to_string();
        assert!(
            error.contains("the plan") && error.contains("changed"),
            "{error}"
        );
        fs::remove_dir_all(work).unwrap();
    }
}
