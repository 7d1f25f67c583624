//! The system-parameter file `hmw calibrate` writes, and when and under what load it was
//! measured.

use std::{fs, process::Command};

use anyhow::Result;
use hmw_model::params::MeasuredSystem;

/// The system file: the measured values as TOML, under a header saying how to read them.
pub(super) fn system_file(measured: &MeasuredSystem) -> Result<String> {
    let mut text = String::from(
        "# System parameters measured by hmw calibrate: hmw predict/launch/report --measured \
         FILE\n# lan_bytes_per_s: the mean of the LAN runs with all of the cluster's workers \
         (lan_runs: every\n# number of workers tried, in bytes per second of tasks and \
         results).\n",
    );
    text.push_str(&toml::to_string(measured)?);
    Ok(text)
}

/// The load average over the last minute, from /proc.
pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The current time, RFC 3339, from the system's `date`.
pub(super) fn now() -> String {
    Command::new("date")
        .arg("--iso-8601=seconds")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
