//! `hmw calibrate` itself: the plan read, the calibration on this machine or on the clusters'
//! own hosts, the system file written and read back.

use std::{
    fs,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{anyhow, bail, Context as _, Result};
use hmw_model::plan::{load_measured_system, load_plan};

use super::{
    args::CalibrateArgs, local::calibrate, remote::calibrate_remote, system_file::system_file,
};
use crate::{
    layout::{layout, Target},
    ports::free_port,
    processes::{become_subreaper, catch_signals, interrupted, kill_every_descendant},
    remote::is_remote,
};

/// Where the calibration writes its runs' files; removed on drop unless kept.
struct WorkDir {
    path: PathBuf,
    temporary: bool,
    keep: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.temporary && !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

pub fn run(args: CalibrateArgs) -> Result<()> {
    let started = Instant::now();
    let plan = load_plan(&args.plan)?;
    if plan.pipeline.is_some() {
        let work = args
            .work_dir
            .clone()
            .unwrap_or_else(|| std::path::PathBuf::from("target/calibrate").join(&plan.name));
        fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
        let measured = super::pipeline::calibrate(&args, &plan, &work)?;
        return write_system(&args, &plan, &measured, started);
    }
    let plan_dir = args.plan.parent().unwrap_or(Path::new(".")).to_owned();
    catch_signals()?;
    become_subreaper()?;
    let remote = is_remote(&plan).with_context(|| args.plan.display().to_string())?;
    let target = if remote {
        Target::Deployment
    } else {
        Target::Local
    };
    let layout = layout(&plan, None, target, None, free_port)
        .with_context(|| format!("{}", args.plan.display()))?;
    let mut work = match &args.work_dir {
        Some(dir) => WorkDir {
            path: dir.clone(),
            temporary: false,
            keep: true,
        },
        None => WorkDir {
            path: std::env::temp_dir().join(format!(
                "hmw-calibrate-{}-{}",
                plan.name,
                std::process::id()
            )),
            temporary: true,
            keep: false,
        },
    };
    fs::create_dir_all(&work.path)
        .with_context(|| format!("cannot create {}", work.path.display()))?;
    work.path = work.path.canonicalize()?;
    let result = if remote {
        calibrate_remote(&args, &plan, &plan_dir, &layout, &work.path)
    } else {
        calibrate(&args, &plan, &plan_dir, &layout, &work.path)
    };
    // Whatever the way out, nothing started here outlives it.
    kill_every_descendant(Duration::from_secs(10));
    // Files of a failed calibration are kept for a look; not those of an interrupted one.
    if result.is_err() && work.temporary && !interrupted() {
        work.keep = true;
        eprintln!(
            "calibration files kept in {} for a look",
            work.path.display()
        );
    }
    let measured = result?;
    write_system(&args, &plan, &measured, started)
}

/// Write `measured` to `--out`, check that it reads back as written and fits the plan.
fn write_system(
    args: &CalibrateArgs,
    plan: &hmw_model::plan::Plan,
    measured: &hmw_model::params::MeasuredSystem,
    started: Instant,
) -> Result<()> {
    let text = system_file(measured)?;
    fs::write(&args.out, &text).with_context(|| format!("cannot write {}", args.out.display()))?;
    // What was written must read back as written: the model reads this file.
    let back = load_measured_system(&args.out)?;
    if &back != measured {
        bail!(
            "{}: the file written does not read back as measured",
            args.out.display()
        );
    }
    plan.check_measured(&back)
        .map_err(|e| anyhow!("{}: {e}", args.out.display()))?;
    println!(
        "wrote {} in {:.0} s: use it with hmw predict {} --measured {}",
        args.out.display(),
        started.elapsed().as_secs_f64(),
        args.plan.display(),
        args.out.display()
    );
    Ok(())
}
