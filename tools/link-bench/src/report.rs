//! The JSON reports: written, read back, the best run of a `wan` report, and the summary line
//! of all of them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

pub(crate) fn write_report(report: Value, path: Option<PathBuf>) -> Result<()> {
    let text = serde_json::to_string_pretty(&report)?;
    if let Some(path) = path {
        std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The connection count of the run with the highest fraction of the link.
pub(crate) fn best_connections(wan: &Value) -> Result<u64> {
    let runs = wan["runs"]
        .as_array()
        .context("not a `wan` report: no `runs`")?;
    let fraction = |r: &Value| r["fraction_of_link"].as_f64().unwrap_or(0.0);
    runs.iter()
        .max_by(|a, b| fraction(a).total_cmp(&fraction(b)))
        .and_then(|r| r["connections"].as_u64())
        .context("the `wan` report has no run with a connection count")
}

/// The reports of the `cold` runs the summary line reads: 1 MB messages over 8 MB/s and a
/// 120 ms round trip, and over 1 Gbit/s and 100 ms; each a report of the link as a run starts
/// it (with the plan's path hint).
pub(crate) struct ColdReports<'a> {
    pub(crate) cold: &'a Path,
    pub(crate) cold1g: &'a Path,
}

pub(crate) fn summary(
    loopback: &Path,
    wan: &Path,
    outage: &Path,
    wan1g: Option<&Path>,
    lossy200: Option<&Path>,
    ceiling: Option<&Path>,
    cold: Option<ColdReports<'_>>,
) -> Result<()> {
    let (l, w, o) = (read_json(loopback)?, read_json(wan)?, read_json(outage)?);
    let num = |v: &Value| v.as_f64().map_or("NaN".to_string(), |x| format!("{x:.2}"));
    let mut line = format!(
        "lds loopback_vs_quinn={} loopback_cpu_vs_quinn={} wan_best_fraction={} wan_gain_vs_1conn={} outage_lost={} outage_recovery_s={}",
        num(&l["loopback_vs_quinn"]),
        num(&l["loopback_cpu_efficiency_vs_quinn"]),
        num(&w["wan_best_fraction"]),
        num(&w["wan_gain_vs_1conn"]),
        o["outage_lost"],
        num(&o["outage_recovery_s"]),
    );
    if let (Some(d), Some(e), Some(f)) = (wan1g, lossy200, ceiling) {
        let (d, e, f) = (read_json(d)?, read_json(e)?, read_json(f)?);
        let reconnects =
            d["reconnections"].as_u64().unwrap_or(0) + e["reconnections"].as_u64().unwrap_or(0);
        line += &format!(
            " wan1g_100ms_mbit={:.0} lossy200_fraction={} emulator_ceiling_mbit={:.0} reconnects={reconnects} window_grew={}",
            d["best_goodput_mbit_s"].as_f64().unwrap_or(f64::NAN),
            num(&e["wan_best_fraction"]),
            f["emulator_ceiling_mbit"].as_f64().unwrap_or(f64::NAN),
            d["window_grew"].as_bool().unwrap_or(false),
        );
    }
    if let Some(cold) = cold {
        let (a, c) = (read_json(cold.cold)?, read_json(cold.cold1g)?);
        let seconds = |v: &Value| {
            v.as_f64()
                .map_or("never".to_string(), |x| format!("{x:.3}"))
        };
        line += &format!(
            " cold_first_task_s={} cold_to_90pct_s={} cold1g_to_90pct_s={}",
            seconds(&a["first_message_s"]),
            seconds(&a["to_90pct_s"]),
            seconds(&c["to_90pct_s"]),
        );
    }
    // The line `scripts/bench-lds.sh` ends with; its format is read by other scripts.
    println!("{line}");
    Ok(())
}
