//! `hmw predict` itself: its arguments, the plan (and the measured system) read, the
//! prediction printed as text or JSON.

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};

use hmw_model::plan::{load_plan, model_input_with_measured};
use hmw_model::predict;

use super::{
    compare::{self, Shape},
    json::to_json,
    pipeline::{self, SlowdownSpec},
    source::MeasuredSource,
    text::to_text,
};

/// Arguments of `hmw predict`.
#[derive(clap::Args)]
pub struct PredictArgs {
    /// The run plan (TOML).
    pub plan: PathBuf,
    /// Print the prediction as one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// System parameters measured by `hmw calibrate`: the TOML file it writes (with its date
    /// and conditions; a name ending in .json is read as JSON with the same keys), used in
    /// place of the plan's `perf` and throughput values.
    #[arg(long, value_name = "FILE")]
    pub measured: Option<PathBuf>,
    /// A pipeline plan: the gain of a remap when a node slows down, `HOST=FACTOR@WHEN`
    /// (`HOST` a worker or `bottleneck`, `FACTOR` times slower, `WHEN` seconds or a
    /// percentage of the predicted makespan), e.g. `bottleneck=3@30%`.
    #[arg(long, value_name = "SPEC")]
    pub slowdown: Option<SlowdownSpec>,
    /// Other plans of the same application on another shape of the federation (a star, a
    /// tree of regions): each predicted, then all side by side with why the fastest wins
    /// (text: a last section; JSON: `compare`). The measured system, if given, serves all.
    #[arg(long, value_name = "PLAN", num_args = 1..)]
    pub compare: Vec<PathBuf>,
}

/// Runs `hmw predict`.
pub fn run(args: PredictArgs) -> Result<()> {
    let plan = load_plan(&args.plan)?;
    if plan.pipeline.is_some() {
        return predict_pipeline(&args, &plan);
    }
    if args.slowdown.is_some() {
        return pipeline::not_a_pipeline("--slowdown");
    }
    // The other shapes first, so that an error in one comes before any output.
    let others = args
        .compare
        .iter()
        .map(|path| Shape::predicted(path, args.measured.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    let (input, measured) = model_input_with_measured(&plan, &args.plan, args.measured.as_deref())?;
    let prediction = predict(&input).map_err(|e| anyhow!("{}: {e}", args.plan.display()))?;
    let source = args
        .measured
        .as_deref()
        .zip(measured.as_ref())
        .map(|(path, system)| MeasuredSource { path, system });
    let row_column = crate::row_column::predict(&plan, &input, &prediction)
        .with_context(|| format!("{}", args.plan.display()))?;
    if args.json {
        let mut json = serde_json::to_value(to_json(&plan, &prediction, source))?;
        if !row_column.is_empty() {
            json["row_column"] = serde_json::to_value(&row_column)?;
        }
        if !others.is_empty() {
            let shapes = compare::shapes(&args.plan, input, prediction, others);
            json["compare"] = compare::to_json(&shapes);
        }
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", to_text(&plan, &prediction, source));
        print!("{}", crate::row_column::to_text(&row_column));
        if !others.is_empty() {
            let shapes = compare::shapes(&args.plan, input, prediction, others);
            print!("{}", compare::to_text(&shapes));
        }
    }
    Ok(())
}

/// `hmw predict` on a pipeline plan.
fn predict_pipeline(args: &PredictArgs, plan: &hmw_model::plan::Plan) -> Result<()> {
    let system = pipeline_system(plan, &args.plan, args.measured.as_deref())?;
    let prediction = pipeline::predict(plan, &system, args.slowdown.as_ref())
        .with_context(|| format!("{}", args.plan.display()))?;
    if args.json {
        let json = pipeline::to_json(&system, &prediction)?;
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", pipeline::to_text(plan, &system, &prediction));
    }
    Ok(())
}

/// The pipeline model's input for `plan`, with the values of the measured-system file
/// `measured` when given; errors name their file.
pub fn pipeline_system(
    plan: &hmw_model::plan::Plan,
    plan_path: &std::path::Path,
    measured: Option<&std::path::Path>,
) -> Result<hmw_model::pipeline::PipelineSystem> {
    let system = match measured {
        Some(file) => {
            let system = hmw_model::plan::load_measured_system(file)?;
            plan.check_measured(&system)
                .map_err(|e| anyhow!("{}: {e}", file.display()))?;
            Some(system)
        }
        None => None,
    };
    plan.pipeline_system(system.as_ref())
        .map_err(|e| anyhow!("{}: {e}", plan_path.display()))
}
