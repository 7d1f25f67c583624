//! What the runs left on disk, judged: a model-derived cap in what `hmw launch` ran with,
//! whether the prediction's calibration was measured before every run, and the workers' CPU
//! time per basic operation in the runs against the calibration's.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde_json::Value;

use super::calendar::iso8601_unix;

/// The files under `dir` (at any depth, symbolic links not followed), sorted; nothing when
/// `dir` cannot be read.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(entry.path()),
                Ok(t) if t.is_file() => out.push(entry.path()),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// The files directly in `dir` whose names end with `suffix`, sorted (names starting with a
/// dot skipped, as a shell's glob skips them); nothing when `dir` cannot be read.
fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.ends_with(suffix) && !name.starts_with('.')
        })
        .map(|entry| entry.path())
        .collect();
    out.sort();
    out
}

pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether the runs in `folders` had a model-derived cap, from the run configurations and
/// machine files `hmw launch` wrote for them: `load_balance = true` in a `run.toml`'s `[run]`,
/// a `max_tasks=` on a line of a `*.hosts` or `machines` file.
pub(crate) fn runs_capped(folders: &[PathBuf]) -> Result<bool> {
    let mut capped = false;
    for file in folders.iter().flat_map(|folder| files_below(folder)) {
        let name = name_of(&file);
        if name == "run.toml" {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let config: toml::Table = text
                .parse()
                .with_context(|| format!("{} is not TOML", file.display()))?;
            capped |= config
                .get("run")
                .and_then(|run| run.get("load_balance"))
                .and_then(toml::Value::as_bool)
                == Some(true);
        } else if name.ends_with(".hosts") || name == "machines" {
            let text = fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            capped |= text.lines().any(|line| line.contains("max_tasks="));
        }
    }
    Ok(capped)
}

/// Whether the prediction `predict` (`hmw predict --json`) used the calibration file `system`,
/// and that file was measured before each run in `folders` started (the `started_unix_s` of
/// the statistics there): `Ok(false)` when it did not; an error when a file cannot be read.
pub(crate) fn calibrated_before(
    predict: &Path,
    system: &Path,
    folders: &[PathBuf],
) -> Result<bool> {
    let prediction = read_json(predict)?;
    let Some(measured) = prediction.get("measured").filter(|m| !m.is_null()) else {
        return Ok(false);
    };
    let Some(file) = measured
        .get("file")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
    else {
        return Ok(false);
    };
    if resolved(Path::new(file)) != resolved(system) {
        return Ok(false);
    }
    let at = measured
        .get("measured_at")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("{}: no `measured.measured_at` date", predict.display()))?;
    let at = iso8601_unix(at).with_context(|| format!("in {}", predict.display()))?;
    let mut first: Option<f64> = None;
    for folder in folders {
        for stats in files_ending(folder, ".stats.json") {
            if let Some(started) = read_json(&stats)?
                .get("started_unix_s")
                .and_then(Value::as_f64)
            {
                first = Some(first.map_or(started, |f| f.min(started)));
            }
        }
    }
    Ok(first.is_some_and(|first| at <= first))
}

/// `path` absolute, its symbolic links resolved where it exists.
fn resolved(path: &Path) -> PathBuf {
    fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The workers' CPU seconds per basic operation in each run folder of `runs` (its
/// `*.stats.json`) over those of the calibration's workers' run (`calibration`, its
/// `*.perf.stats.json`): above 1 the same computation took more CPU time than when it was
/// calibrated. `None` for a run, or for all, when a side has no CPU time or no operations.
pub(crate) fn cpu_per_operation_drift(
    calibration: &Path,
    runs: &[PathBuf],
) -> Result<Vec<Option<f64>>> {
    let calibrated = per_operation(&files_ending(calibration, ".perf.stats.json"))?;
    runs.iter()
        .map(|run| {
            let run = per_operation(&files_ending(run, ".stats.json"))?;
            Ok(calibrated
                .zip(run)
                .map(|(calibrated, run)| run / calibrated))
        })
        .collect()
}

/// The CPU seconds of computing per basic operation of every worker in these statistics.
fn per_operation(files: &[PathBuf]) -> Result<Option<f64>> {
    let (mut cpu, mut operations) = (0.0, 0.0);
    for file in files {
        let stats = read_json(file)?;
        let workers = match stats.get("workers") {
            None => &[][..],
            Some(Value::Array(workers)) => workers,
            Some(_) => return Err(anyhow!("{}: `workers` is not a list", file.display())),
        };
        for worker in workers {
            cpu += worker
                .get("compute_cpu_s")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            operations += worker
                .get("operations")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
        }
    }
    Ok((cpu > 0.0 && operations > 0.0).then(|| cpu / operations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::scratch::Scratch;

    #[test]
    fn caps_from_what_launch_wrote() {
        let dir = Scratch::new();
        let run = dir.path().join("run1");
        dir.write("run1/lyon/run.toml", "[run]\nload_balance = false\n");
        dir.write("run1/lyon.hosts", "head\nw1\n");
        assert!(!runs_capped(&[run.clone(), dir.path().join("missing")]).unwrap());
        dir.write("run2/spain/run.toml", "[run]\nload_balance = true\n");
        assert!(runs_capped(&[run.clone(), dir.path().join("run2")]).unwrap());
        dir.write("run3/spain/machines", "head\n# M cm max_tasks=12\n");
        assert!(runs_capped(&[dir.path().join("run3")]).unwrap());
        dir.write("run4/run.toml", "[run\n");
        let error = runs_capped(&[dir.path().join("run4")]).unwrap_err();
        assert!(format!("{error:#}").contains("run4/run.toml is not TOML"));
    }

    #[test]
    fn calibration_dated_before_the_runs() {
        let dir = Scratch::new();
        let system = dir.write("s.system.toml", "");
        let predict = |file: &Path, at: &str| {
            let json = serde_json::json!({ "measured": { "file": file, "measured_at": at } });
            dir.write("p.json", &json.to_string())
        };
        dir.write(
            "run1/lyon.stats.json",
            r#"{"started_unix_s": 1795808700.5}"#,
        );
        dir.write(
            "run2/lyon.stats.json",
            r#"{"started_unix_s": 1795808800.0}"#,
        );
        dir.write("run2/spain.stats.json", r#"{"started_unix_s": null}"#);
        let runs = [dir.path().join("run1"), dir.path().join("run2")];
        let p = predict(&system, "2026-11-27T19:44:59+00:00");
        assert!(calibrated_before(&p, &system, &runs).unwrap());
        // Measured after the first run started.
        let p = predict(&system, "2026-11-27T19:45:01+00:00");
        assert!(!calibrated_before(&p, &system, &runs).unwrap());
        // Another file, or no run statistics.
        let p = predict(Path::new("/elsewhere.toml"), "2026-11-27T19:44:59+00:00");
        assert!(!calibrated_before(&p, &system, &runs).unwrap());
        let p = predict(&system, "2026-11-27T19:44:59+00:00");
        assert!(!calibrated_before(&p, &system, &[dir.path().join("none")]).unwrap());
        // No calibration used, or the prediction unreadable.
        let p = dir.write("p.json", r#"{"measured": null}"#);
        assert!(!calibrated_before(&p, &system, &runs).unwrap());
        let p = dir.write("p.json", "error: no such plan\n");
        assert!(calibrated_before(&p, &system, &runs).is_err());
    }

    #[test]
    fn cpu_time_per_operation_against_the_calibration() {
        let dir = Scratch::new();
        dir.write(
            "cal/lyon.perf.stats.json",
            r#"{"workers": [{"compute_cpu_s": 1.0, "operations": 100}, {"compute_cpu_s": 1.0, "operations": 100}]}"#,
        );
        dir.write(
            "cal/lyon.stats.json",
            r#"{"workers": [{"compute_cpu_s": 50.0, "operations": 1}]}"#,
        );
        dir.write(
            "r1/lyon.stats.json",
            r#"{"workers": [{"compute_cpu_s": 1.1, "operations": 100}]}"#,
        );
        dir.write(
            "r1/spain.stats.json",
            r#"{"workers": [{"compute_cpu_s": 1.1, "operations": 100}]}"#,
        );
        dir.write("r2/lyon.stats.json", r#"{"workers": []}"#);
        let runs = [dir.path().join("r1"), dir.path().join("r2")];
        let drift = cpu_per_operation_drift(&dir.path().join("cal"), &runs).unwrap();
        assert_eq!(drift.len(), 2);
        assert!((drift[0].unwrap() - 1.1).abs() < 1e-12);
        assert_eq!(drift[1], None);
        let none = cpu_per_operation_drift(&dir.path().join("r2"), &runs).unwrap();
        assert_eq!(none, vec![None, None]);
        dir.write("r3/lyon.stats.json", r#"{"workers": 3}"#);
        assert!(
            cpu_per_operation_drift(&dir.path().join("cal"), &[dir.path().join("r3")]).is_err()
        );
    }
}
