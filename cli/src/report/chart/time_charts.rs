//! The two charts over time: the completion rate per cluster and the tasks done, measured
//! (solid) and predicted (dashed, the worst case dotted).

use plotters::{
    coord::Shift,
    prelude::*,
    series::{DashedLineSeries, LineSeries},
    style::RGBColor,
};

use super::style::{drawn, TimeChart, FAMILY, TOTAL};
use crate::report::{
    document::{Report, ReportError},
    observed::rate_steps,
    predicted::{sample_times, Profile},
};

impl Report {
    pub(super) fn draw_rates<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x_end: f64,
    ) -> Result<(), ReportError> {
        let predicted_peak = self.predicted.as_ref().map_or(0.0, |p| p.peak_rate());
        let y_top = (self.observed.peak_rate().max(predicted_peak) * 1.12).max(1e-3);
        let mut chart = drawn(
            ChartBuilder::on(area)
                .margin_left(12)
                .margin_right(16)
                .margin_top(8)
                .caption(
                    "Completion rate per cluster (over each sampling interval)",
                    (FAMILY, 20),
                )
                .x_label_area_size(48)
                .y_label_area_size(78)
                .build_cartesian_2d(0.0..x_end, 0.0..y_top),
        )?;
        drawn(
            chart
                .configure_mesh()
                .x_desc("time since the master's first dispatch (s)")
                .y_desc("tasks per second")
                .x_label_formatter(&|x| tick(*x, x_end))
                .y_label_formatter(&|y| tick(*y, y_top))
                .label_style((FAMILY, 15))
                .axis_desc_style((FAMILY, 17))
                .max_light_lines(2)
                .light_line_style(RGBColor(240, 240, 240))
                .bold_line_style(RGBColor(215, 215, 215))
                .draw(),
        )?;
        self.draw_shading(&mut chart, y_top)?;

        let several = self.cluster_names().len() > 1;
        if let Some(p) = &self.predicted {
            for c in &p.clusters {
                let colour = self.colour_of(&c.name);
                draw_predicted(&mut chart, &c.best, &c.worst, colour, |profile| {
                    profile.rate_points()
                })?;
            }
            if several {
                let corners: Vec<f64> = p
                    .clusters
                    .iter()
                    .flat_map(|c| c.best.rate_points())
                    .map(|(t, _)| t)
                    .collect();
                let times = sample_times(x_end, 400, corners);
                let total: Vec<(f64, f64)> = times
                    .iter()
                    .map(|&t| (t, p.clusters.iter().map(|c| c.best.rate_at(t)).sum()))
                    .collect();
                drawn(chart.draw_series(DashedLineSeries::new(
                    total,
                    14,
                    8,
                    TOTAL.stroke_width(2),
                )))?;
            }
        }
        for c in &self.observed.clusters {
            let colour = self.colour_of(&c.name);
            drawn(chart.draw_series(LineSeries::new(steps(&c.done), colour.stroke_width(3))))?;
        }
        if several {
            drawn(chart.draw_series(LineSeries::new(
                steps(&self.observed.total),
                TOTAL.stroke_width(2),
            )))?;
        }
        Ok(())
    }

    pub(super) fn draw_done<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x_end: f64,
    ) -> Result<(), ReportError> {
        let several = self.cluster_names().len() > 1;
        let predicted_total = self.predicted.as_ref().map_or(0.0, |p| {
            let best: u64 = p.clusters.iter().map(|c| c.best.tasks).sum();
            let worst: u64 = p.clusters.iter().map(|c| c.worst.tasks).sum();
            best.max(worst) as f64
        });
        let y_top = ((self.observed.tasks as f64).max(predicted_total) * 1.06).max(1.0);
        let mut chart = drawn(
            ChartBuilder::on(area)
                .margin_left(12)
                .margin_right(16)
                .margin_top(8)
                .margin_bottom(6)
                .caption("Tasks done", (FAMILY, 20))
                .x_label_area_size(48)
                .y_label_area_size(78)
                .build_cartesian_2d(0.0..x_end, 0.0..y_top),
        )?;
        drawn(
            chart
                .configure_mesh()
                .x_desc("time since the master's first dispatch (s)")
                .y_desc("tasks")
                .x_label_formatter(&|x| tick(*x, x_end))
                .y_label_formatter(&|y| tick(*y, y_top))
                .label_style((FAMILY, 15))
                .axis_desc_style((FAMILY, 17))
                .max_light_lines(2)
                .light_line_style(RGBColor(240, 240, 240))
                .bold_line_style(RGBColor(215, 215, 215))
                .draw(),
        )?;
        self.draw_shading(&mut chart, y_top)?;
        if let Some(p) = &self.predicted {
            for c in &p.clusters {
                let colour = self.colour_of(&c.name);
                draw_predicted(&mut chart, &c.best, &c.worst, colour, |profile| {
                    let corners = profile.rate_points().into_iter().map(|(t, _)| t);
                    sample_times(x_end, 300, corners)
                        .into_iter()
                        .map(|t| (t, profile.done_at(t)))
                        .collect()
                })?;
            }
            if several {
                let times = sample_times(x_end, 400, []);
                let total: Vec<(f64, f64)> = times
                    .iter()
                    .map(|&t| (t, p.clusters.iter().map(|c| c.best.done_at(t)).sum()))
                    .collect();
                drawn(chart.draw_series(DashedLineSeries::new(
                    total,
                    14,
                    8,
                    TOTAL.stroke_width(2),
                )))?;
            }
        }
        for c in &self.observed.clusters {
            let colour = self.colour_of(&c.name);
            drawn(chart.draw_series(LineSeries::new(
                c.done.iter().map(|&(t, d)| (t, d as f64)),
                colour.stroke_width(3),
            )))?;
        }
        if several {
            drawn(chart.draw_series(LineSeries::new(
                self.observed.total.iter().map(|&(t, d)| (t, d as f64)),
                TOTAL.stroke_width(2),
            )))?;
        }
        Ok(())
    }
}

/// The predicted curve of one cluster: the best case dashed, the worst case dotted where it
/// differs from the best.
fn draw_predicted<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    best: &Profile,
    worst: &Profile,
    colour: RGBColor,
    curve: impl Fn(&Profile) -> Vec<(f64, f64)>,
) -> Result<(), ReportError> {
    drawn(chart.draw_series(DashedLineSeries::new(
        curve(best),
        14,
        8,
        colour.stroke_width(2),
    )))?;
    if worst != best {
        // From just before the earlier of the two ends: before it the curves coincide.
        let from = best.end_starts().min(worst.end_starts());
        let points = curve(worst);
        let first = points.iter().position(|&(t, _)| t >= from).unwrap_or(0);
        drawn(chart.draw_series(DashedLineSeries::new(
            points[first.saturating_sub(1)..].to_vec(),
            2,
            5,
            colour.stroke_width(3),
        )))?;
    }
    Ok(())
}

/// A tick label with as many decimals as an axis running to `end` needs.
pub(super) fn tick(value: f64, end: f64) -> String {
    let decimals = if end >= 20.0 {
        0
    } else if end >= 2.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$}")
}

/// The rate of a `(seconds, tasks done)` series as a staircase, each interval's rate held
/// across it. A last interval shorter than half the one before (the run ended just after a
/// sample) is merged into it: over a fraction of a sampling interval, a few results arriving
/// together would read as a spike.
fn steps(done: &[(f64, u64)]) -> Vec<(f64, f64)> {
    let mut points = done.to_vec();
    let n = points.len();
    if n >= 3 {
        let (t0, t1, t2) = (points[n - 3].0, points[n - 2].0, points[n - 1].0);
        if t2 - t1 < 0.5 * (t1 - t0) {
            points.remove(n - 2);
        }
    }
    rate_steps(&points)
        .iter()
        .flat_map(|s| [(s.from_s, s.tasks_per_s), (s.to_s, s.tasks_per_s)])
        .collect()
}
