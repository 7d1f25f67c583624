//! What a calibration run starts with: the application's binary, the lines of its machine
//! file, its launch configuration.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use crate::{launch::find_binary, layout::Layout};

/// A rank line of a machine file written back, annotations included.
pub(super) fn rank_line(line: &hmw_core::machinefile::RankLine) -> String {
    let annotations = line.annotations.to_string();
    if annotations.is_empty() {
        line.host.clone()
    } else {
        format!("{} # {annotations}", line.host)
    }
}

/// The launch configuration for a calibration run: silent, no tail reassignment, and
/// `application` replacing the application's settings when given.
pub(super) fn app_config(config: &toml::Table, application: Option<&str>) -> Result<toml::Table> {
    let mut config = config.clone();
    config.remove("cm");
    let mut run = config
        .get("run")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    run.insert("statistics_interval".into(), toml::Value::Integer(0));
    run.insert("reassign_last_task".into(), toml::Value::Boolean(false));
    run.remove("load_balance");
    config.insert("run".into(), toml::Value::Table(run));
    if let Some(text) = application {
        config.insert("application".into(), toml::Value::Table(text.parse()?));
    }
    Ok(config)
}

/// The launch configuration for the workers' run: each task executed `repeats` times; with
/// `split`, the run's master splits its tasks as an external cluster's sub-master does (the
/// workers then compute, and move, the parts they do in a run).
pub(super) fn workers_config(
    config: &toml::Table,
    repeats: u32,
    split: bool,
) -> Result<toml::Table> {
    let mut config = app_config(config, None)?;
    if let Some(run) = config.get_mut("run").and_then(toml::Value::as_table_mut) {
        run.insert("repeat_tasks".into(), toml::Value::Integer(repeats.into()));
        run.insert("master_cpu".into(), toml::Value::Boolean(true));
        if split {
            run.insert("split_tasks".into(), toml::Value::Boolean(true));
        }
    }
    Ok(config)
}

/// The plan's application binary (`[launch] binary`), found as `hmw launch` finds it.
pub(super) fn application_binary(layout: &Layout, plan_dir: &Path) -> Result<PathBuf> {
    find_binary(
        layout
            .binary
            .as_deref()
            .context("no application binary: set [launch] binary in the plan")?,
        plan_dir,
    )
}
