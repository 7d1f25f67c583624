//! Plans and measured-system files read from disk, and the model's input from both; errors
//! name the file.

use std::path::Path;

use super::{error::PlanError, location, syntax::syntax_error, validated::Plan};
use crate::params::{MeasuredSystem, ModelInput};

/// Reads and validates the plan at `path`; errors name the file.
pub fn load_plan(path: &Path) -> Result<Plan, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|io| PlanError::Read {
        path: path.to_path_buf(),
        io,
    })?;
    Plan::from_toml_str(&text).map_err(|error| PlanError::InFile {
        path: path.to_path_buf(),
        error: Box::new(error),
    })
}

/// Reads a measured-system file ([`MeasuredSystem`]): TOML as `hmw calibrate` writes it
/// (`measured_at`, `conditions`, `[[clusters]]` with `[[clusters.workers]]`), or JSON with the
/// same keys when its name ends in `.json`; errors name the file.
pub fn load_measured_system(path: &Path) -> Result<MeasuredSystem, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|io| PlanError::Read {
        path: path.to_path_buf(),
        io,
    })?;
    if path.extension().is_none_or(|e| e != "json") {
        return location::deserialize(&text).map_err(|failure| {
            let (e, located) = *failure;
            PlanError::InFile {
                path: path.to_path_buf(),
                error: Box::new(syntax_error(&text, &e, located, &[])),
            }
        });
    }
    serde_json::from_str(&text).map_err(|e| {
        let location = format!(" at line {} column {}", e.line(), e.column());
        let message = e.to_string();
        let message = message.strip_suffix(&location).unwrap_or(&message);
        PlanError::InFile {
            path: path.to_path_buf(),
            error: Box::new(PlanError::Syntax {
                line: e.line(),
                column: e.column(),
                cluster: None,
                machine: None,
                key: None,
                message: message.replace(" field ", " key "),
            }),
        }
    })
}

/// The model's input for `plan` (read from `plan_path`), with the values of the measured-system
/// file `measured`, when one is given, in place of the plan's ([`Plan::model_input`]); and the
/// measured system read, for the commands that say where their values come from. Errors name
/// their file: the measured file for one that cannot be read or does not fit the plan,
/// `plan_path` for an input the model cannot take.
pub fn model_input_with_measured(
    plan: &Plan,
    plan_path: &Path,
    measured: Option<&Path>,
) -> Result<(ModelInput, Option<MeasuredSystem>), PlanError> {
    let measured = match measured {
        Some(file) => {
            let system = load_measured_system(file)?;
            plan.check_measured(&system)
                .map_err(|error| PlanError::InFile {
                    path: file.to_path_buf(),
                    error: Box::new(error),
                })?;
            Some(system)
        }
        None => None,
    };
    let input = plan
        .model_input(measured.as_ref())
        .map_err(|error| PlanError::InFile {
            path: plan_path.to_path_buf(),
            error: Box::new(error),
        })?;
    Ok((input, measured))
}
