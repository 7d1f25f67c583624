//! Why the model cannot predict.

use thiserror::Error;

use crate::range::RangeError;

/// Why the model cannot predict.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ModelError {
    /// The input breaks an invariant the plan loader guarantees (for callers that build
    /// [`ModelInput`](crate::params::ModelInput) themselves).
    #[error("invalid model input: {0}")]
    InvalidInput(String),
    /// `selection = "auto"` found no selection that keeps the threshold.
    #[error(
        "no selection of workers keeps every cluster and the whole run at or above efficiency \
         {threshold} in the worst case (the closest reaches {best_efficiency:.3}); lower \
         [model] efficiency_threshold, or use selection = \"all\" to see the whole prediction"
    )]
    NoSelectionReachesThreshold {
        /// The threshold in force.
        threshold: f64,
        /// The smallest worst-case efficiency of the selection that comes closest.
        best_efficiency: f64,
    },
    /// `selection = "auto"`: the branch and bound ran out of its budget before finding a
    /// selection that keeps the threshold (one may exist).
    #[error(
        "the selection search stopped after its budget of {budget_s} s without finding a \
         selection that keeps every cluster and the whole run at or above efficiency \
         {threshold} in the worst case (the closest seen reaches {best_efficiency:.3}); raise \
         [model] selection_budget_s, lower [model] efficiency_threshold, or pin the selection"
    )]
    SelectionBudgetExhausted {
        /// The threshold in force.
        threshold: f64,
        /// The budget in force, seconds.
        budget_s: f64,
        /// The smallest worst-case efficiency of the closest selection seen.
        best_efficiency: f64,
    },
    /// A derived quantity is outside the model's working range ([`crate::range`]).
    #[error("{0}")]
    OutOfRange(#[from] RangeError),
}
