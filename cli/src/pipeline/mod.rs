//! What `hmw launch` and `hmw calibrate` do differently for a pipeline plan (one with
//! `[pipeline]`, `docs/guide/pipeline.md`): the pipeline model's prediction printed first, the
//! run configuration's `[pipeline]` table (the calibration and mapping the run starts with,
//! [`run_config`]), the outcome read from the controller's statistics. `hmw predict` on a
//! pipeline plan is `crate::predict::pipeline`, `hmw calibrate` `crate::calibrate::pipeline`.

pub(crate) mod run_config;

use std::path::Path;

use anyhow::Result;
use hmw_core::pipeline::PipelineStats;
use hmw_model::{
    pipeline::{PipelinePrediction, PipelineSystem},
    plan::{PipelinePlan, Plan},
};

/// What a launch is for (`hmw launch`, or `hmw calibrate` on a pipeline plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// The plan's run.
    Run,
    /// `hmw calibrate` on a pipeline plan: every node times `repeats` items of every stage,
    /// then the run stops.
    PipelineCalibration {
        /// Items each node times.
        repeats: u64,
    },
}

/// The pipeline model's prediction for `plan` (with the measured values of `measured`),
/// printed under its heading.
pub(crate) fn predicted(
    plan: &Plan,
    plan_path: &Path,
    measured: Option<&Path>,
) -> Result<(PipelineSystem, PipelinePrediction)> {
    let system = crate::predict::pipeline_system(plan, plan_path, measured)?;
    let prediction = crate::predict::pipeline::predict(plan, &system, None)?;
    match measured {
        Some(file) => println!(
            "== predicted ({}, measured values from {})",
            plan_path.display(),
            file.display()
        ),
        None => println!("== predicted ({})", plan_path.display()),
    }
    print!(
        "{}",
        crate::predict::pipeline::to_text(plan, &system, &prediction)
    );
    Ok((system, prediction))
}

/// The run configuration's `[pipeline]` for `purpose`: for a run, the prediction's
/// calibration and mapping; for a calibration, none (every node is timed) and a stop after.
pub(crate) fn run_table(
    plan: &Plan,
    pipeline: &PipelinePlan,
    predicted: Option<&(PipelineSystem, PipelinePrediction)>,
    purpose: Purpose,
) -> Result<toml::Table> {
    let config = match (predicted, purpose) {
        (Some((system, prediction)), Purpose::Run) => {
            run_config::pipeline_config(pipeline, system, Some(&prediction.chosen.mapping))
        }
        (_, Purpose::PipelineCalibration { repeats }) => {
            let mut config = run_config::pipeline_config(pipeline, &skeleton(pipeline), None);
            config.calibrate_only = true;
            config.calibration_repeats = repeats;
            config.cluster = run_config::cluster_entries(plan)?;
            config
        }
        (None, Purpose::Run) => anyhow::bail!("a pipeline run without its prediction"),
    };
    run_config::as_table(&config)
}

/// A system of `pipeline`'s stages alone: what a calibration's run configuration needs.
fn skeleton(pipeline: &PipelinePlan) -> PipelineSystem {
    PipelineSystem {
        app: hmw_model::pipeline::PipelineApp {
            items: pipeline.items,
            item_bytes: pipeline.item_bytes,
            stages: pipeline.stages.clone(),
        },
        nodes: Vec::new(),
        clusters: Vec::new(),
        options: pipeline.options.clone(),
    }
}

/// The predicted makespan, as the launcher's (best, worst) pair.
pub(crate) fn predicted_makespan(predicted: &(PipelineSystem, PipelinePrediction)) -> (f64, f64) {
    let makespan = predicted.1.chosen.evaluation.makespan_s;
    (makespan, makespan)
}

/// The end of a pipeline run, from the controller's statistics.
pub(crate) fn print_outcome(
    stats: &PipelineStats,
    predicted: Option<(f64, f64)>,
    clusters: usize,
    path: &Path,
) {
    if let Some((makespan, _)) = predicted.filter(|_| stats.items > 0) {
        println!(
            "== makespan: predicted {makespan:.3} s, measured {:.3} s ({:+.1}%), {} remaps",
            stats.makespan_s,
            100.0 * (stats.makespan_s - makespan) / makespan,
            stats.remaps()
        );
    }
    println!(
        "launch clusters={clusters} items={} makespan_s={:.3} remaps={} stats={}",
        stats.items,
        stats.makespan_s,
        stats.remaps(),
        path.display()
    );
}
