//! Everything a report shows, and why it could not be drawn.

use std::path::PathBuf;

use thiserror::Error;

use hmw_core::stats::RunStats;
use hmw_model::Prediction;

use super::{comparison::Comparison, observed::Observed, predicted::Predicted};

/// Why a report could not be drawn.
#[derive(Debug, Error)]
pub enum ReportError {
    /// No font to draw text with.
    #[error(
        "no sans-serif font to draw the chart's text ({0}); install one (Debian: \
         fonts-dejavu-core, which scripts/setup.sh installs)"
    )]
    Font(String),
    /// plotters failed while drawing.
    #[error("drawing the chart: {0}")]
    Draw(String),
    /// The picture could not be written.
    #[error("{}: {message}", .path.display())]
    Write { path: PathBuf, message: String },
}

/// Everything a report shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The picture's title.
    pub title: String,
    pub observed: Observed,
    pub predicted: Option<Predicted>,
    /// Present with a prediction.
    pub comparison: Option<Comparison>,
    /// The clusters in the order of their colours: the whole run's, so that the report of one
    /// cluster ([`Report::of_cluster`]) draws it in its colour of the whole run's chart.
    pub palette: Vec<String>,
}

impl Report {
    /// The report of a run; with `prediction` (for `tasks_planned` tasks of `oper` basic
    /// operations each), compared with the model.
    pub fn new(
        title: &str,
        stats: &RunStats,
        prediction: Option<(&Prediction, f64, u64)>,
    ) -> Report {
        let observed = Observed::from_stats(stats);
        let (predicted, tasks_planned) = match prediction {
            Some((p, oper, tasks)) => (Some(Predicted::new(p, oper)), tasks),
            None => (None, 0),
        };
        Report::from_parts(title, observed, predicted, tasks_planned)
    }

    /// The report of an observed run and, optionally, its predicted curves.
    pub fn from_parts(
        title: &str,
        observed: Observed,
        predicted: Option<Predicted>,
        tasks_planned: u64,
    ) -> Report {
        let comparison = predicted
            .as_ref()
            .map(|p| Comparison::new(title, tasks_planned, p, &observed));
        let mut report = Report {
            title: title.to_owned(),
            observed,
            predicted,
            comparison,
            palette: Vec::new(),
        };
        report.palette = report.cluster_names();
        report
    }

    /// The report of cluster `name` alone: its measured and predicted curves, its link and
    /// outages, the re-planning decisions that concern it, against the run's tolerance.
    pub fn of_cluster(&self, name: &str) -> Report {
        let mut one = self.clone();
        one.title = format!("{}: {name}", self.title);
        let o = &mut one.observed;
        o.clusters.retain(|c| c.name == name);
        o.total = o
            .clusters
            .first()
            .map(|c| c.done.clone())
            .unwrap_or_default();
        o.tasks = o.total.last().map_or(0, |&(_, done)| done);
        o.adaptations.retain(|a| a.cluster == name);
        if let Some(p) = &mut one.predicted {
            p.clusters.retain(|c| c.name == name);
        }
        if let Some(c) = &mut one.comparison {
            c.clusters.retain(|c| c.name == name);
        }
        one
    }
}
