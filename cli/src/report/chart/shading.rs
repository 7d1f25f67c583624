//! What both charts over time shade: the tolerance on the makespan, the predicted range, the
//! links' outages (hatched) and inferred silences, the end of the run, re-planning ticks.

use plotters::{
    element::{PathElement, Rectangle},
    prelude::*,
    series::DashedLineSeries,
};

use super::style::{drawn, TimeChart, BAND, END_LINE, SILENCE, TOLERANCE, TOLERANCE_EDGE};
use crate::report::document::{Report, ReportError};

impl Report {
    /// Shading shared by both charts: the tolerance on the makespan and the predicted range
    /// inside it, the links' outages (or the inferred silences), the end of the run.
    pub(super) fn draw_shading<DB: DrawingBackend>(
        &self,
        chart: &mut TimeChart<'_, DB>,
        y_top: f64,
    ) -> Result<(), ReportError> {
        if let Some((low, high)) = self.tolerance() {
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(low, 0.0), (high, y_top)],
                TOLERANCE.mix(0.3).filled(),
            ))))?;
            for t in [low, high] {
                drawn(chart.draw_series(DashedLineSeries::new(
                    vec![(t, 0.0), (t, y_top)],
                    6,
                    4,
                    TOLERANCE_EDGE.stroke_width(1),
                )))?;
            }
        }
        if let Some(p) = &self.predicted {
            let (best, worst) = (p.t_ex_best.min(p.t_ex_worst), p.t_ex_best.max(p.t_ex_worst));
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(best, 0.0), (worst, y_top)],
                BAND.mix(0.35).filled(),
            ))))?;
            for t in [best, worst] {
                drawn(chart.draw_series(std::iter::once(PathElement::new(
                    vec![(t, 0.0), (t, y_top)],
                    BAND.stroke_width(1),
                ))))?;
            }
        }
        // Where a link was down: hatched in its cluster's colour (a flat band is the
        // tolerance), and on the cluster's row of the links strip.
        let x_end = self.time_axis_end();
        for c in &self.observed.clusters {
            let colour = self.colour_of(&c.name);
            for d in &c.outages {
                drawn(chart.draw_series(std::iter::once(Rectangle::new(
                    [(d.from_s, 0.0), (d.to_s, y_top)],
                    colour.mix(0.08).filled(),
                ))))?;
                hatch(
                    chart,
                    (d.from_s, d.to_s),
                    (0.0, y_top),
                    x_end / 90.0,
                    colour.mix(0.35),
                )?;
            }
        }
        for silence in self.observed.inferred_silences() {
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(silence.from_s, 0.0), (silence.to_s, y_top)],
                SILENCE.mix(0.10).filled(),
            ))))?;
        }
        let wall = self.observed.wall_s;
        drawn(chart.draw_series(std::iter::once(PathElement::new(
            vec![(wall, 0.0), (wall, y_top)],
            END_LINE.stroke_width(2),
        ))))?;
        // A cluster lost, then back (started again, or its link back): a tick up from the
        // bottom in its colour, thick when it came back.
        for e in &self.observed.cluster_events {
            let width = if e.event == "back" { 3 } else { 1 };
            drawn(chart.draw_series(std::iter::once(PathElement::new(
                vec![(e.t_s, 0.0), (e.t_s, y_top * 0.1)],
                self.colour_of(&e.cluster).stroke_width(width),
            ))))?;
        }
        // Each re-planning decision: a tick down from the top, in its cluster's colour
        // (thicker for a drop or a re-admission).
        for a in &self.observed.adaptations {
            let width = if a.action.starts_with("credit") || a.action.starts_with("nt") {
                1
            } else {
                3
            };
            drawn(chart.draw_series(std::iter::once(PathElement::new(
                vec![(a.t_s, y_top), (a.t_s, y_top * 0.9)],
                self.colour_of(&a.cluster).stroke_width(width),
            ))))?;
        }
        Ok(())
    }
}

/// Diagonal hatching over `[x.0, x.1] x [y.0, y.1]`, a line every `step` seconds.
pub(super) fn hatch<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    x: (f64, f64),
    y: (f64, f64),
    step: f64,
    colour: RGBAColor,
) -> Result<(), ReportError> {
    if step <= 0.0 {
        return Ok(());
    }
    let slant = 0.6 * step;
    let mut at = x.0;
    while at < x.1 {
        let end = (at + slant).min(x.1);
        // Shortened where the span ends, so the slope stays the same.
        let top = y.0 + (y.1 - y.0) * (end - at) / slant;
        drawn(chart.draw_series(std::iter::once(PathElement::new(
            vec![(at, y.0), (end, top)],
            colour.stroke_width(1),
        ))))?;
        at += step;
    }
    Ok(())
}
