//! Drawing a [`Report`]: a title with the headline figures; the completion rate per cluster
//! over time (measured solid, predicted dashed, worst-case end dotted); the tasks done over
//! time, same lines; shaded, the predicted makespan range and the stretches where a cluster
//! delivered nothing while others did; on the right, the legend and the figures.
//!
//! One function draws on any plotters backend; [`Report::svg`] and [`Report::png`] pick one.
//! Text is measured (SVG) and drawn (PNG) with the system's sans-serif font, found through
//! fontconfig (plotters' `ttf` feature).

use std::path::Path;

use plotters::{
    coord::{types::RangedCoordf64, Shift},
    element::{DashedPathElement, PathElement, Rectangle, Text},
    prelude::*,
    series::{DashedLineSeries, LineSeries},
    style::{FontStyle, RGBColor, ShapeStyle},
};

use super::{
    observed::{rate_steps, SilenceKind},
    predicted::{sample_times, Profile},
    Report, ReportError,
};

/// A chart over time.
type TimeChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The font family of every text.
const FAMILY: &str = "sans-serif";

/// Fail early, with a message saying what to install, when there is no font to draw with.
fn ensure_font() -> Result<(), ReportError> {
    FontDesc::new(FontFamily::SansSerif, 12.0, FontStyle::Normal)
        .box_size("0")
        .map(|_| ())
        .map_err(|e| ReportError::Font(format!("{e:?}")))
}

/// Width and height of the picture, pixels.
pub const DEFAULT_SIZE: (u32, u32) = (1500, 950);

/// Cluster colours (a colour-blind-safe qualitative palette), in cluster order.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 94, 240),
    RGBColor(100, 100, 100),
];
const TOTAL: RGBColor = RGBColor(20, 20, 20);
const BAND: RGBColor = RGBColor(150, 150, 150);
const SILENCE: RGBColor = RGBColor(220, 50, 47);
const END_LINE: RGBColor = RGBColor(90, 90, 90);
const SIDE_WIDTH: u32 = 430;

fn drawn<T, E: std::fmt::Display>(result: Result<T, E>) -> Result<T, ReportError> {
    result.map_err(|e| ReportError::Draw(e.to_string()))
}

/// A cluster's colour: its place in the prediction's order, else in the run's.
fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

impl Report {
    /// The chart as an SVG document.
    pub fn svg(&self, size: (u32, u32)) -> Result<String, ReportError> {
        ensure_font()?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            self.draw(&root)?;
            drawn(root.present())?;
        }
        Ok(svg)
    }

    /// The chart as a PNG file.
    pub fn png(&self, path: &Path, size: (u32, u32)) -> Result<(), ReportError> {
        ensure_font()?;
        let root = BitMapBackend::new(path, size).into_drawing_area();
        self.draw(&root)?;
        root.present().map_err(|e| ReportError::Write {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    /// The chart as RGB pixels, row by row.
    pub fn rgb(&self, size: (u32, u32)) -> Result<Vec<u8>, ReportError> {
        ensure_font()?;
        let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
            self.draw(&root)?;
            drawn(root.present())?;
        }
        Ok(pixels)
    }

    /// The clusters to draw, with their colours: the prediction's, then any the run has
    /// that the prediction has not.
    fn cluster_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .predicted
            .iter()
            .flat_map(|p| p.clusters.iter().map(|c| c.name.clone()))
            .collect();
        for c in &self.observed.clusters {
            if !names.contains(&c.name) {
                names.push(c.name.clone());
            }
        }
        names
    }

    fn colour_of(&self, name: &str) -> RGBColor {
        colour(
            self.cluster_names()
                .iter()
                .position(|n| n == name)
                .unwrap_or(0),
        )
    }

    /// The end of the time axis: the later of the run and the prediction, plus a margin.
    fn time_axis_end(&self) -> f64 {
        let predicted = self.predicted.as_ref().map_or(0.0, |p| {
            p.clusters
                .iter()
                .flat_map(|c| [c.best.execution_time(), c.worst.execution_time()])
                .fold(p.t_ex_worst.max(p.t_ex_best), f64::max)
        });
        (self.observed.wall_s.max(predicted) * 1.04).max(1e-3)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        drawn(root.fill(&WHITE))?;
        let (width, height) = root.dim_in_pixel();
        let (head, body) = root.split_vertically(78);
        self.draw_title(&head)?;
        let (charts, side) = body.split_horizontally(width.saturating_sub(SIDE_WIDTH));
        let charts_height = height.saturating_sub(78);
        let (upper, lower) = charts.split_vertically(charts_height * 57 / 100);
        let x_end = self.time_axis_end();
        self.draw_rates(&upper, x_end)?;
        self.draw_done(&lower, x_end)?;
        self.draw_side(&side)
    }

    fn draw_title<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), ReportError> {
        let title = TextStyle::from((FAMILY, 28).into_font().style(FontStyle::Bold)).color(&BLACK);
        drawn(area.draw(&Text::new(self.title.clone(), (24, 12), title)))?;
        let subtitle = match &self.comparison {
            Some(c) => {
                let r = &c.run;
                format!(
                    "makespan: measured {:.2} s, predicted {:.2} to {:.2} s (error {:+.1} %)   \
                     efficiency: measured {:.3}, predicted {:.3} to {:.3}",
                    r.makespan_s,
                    r.makespan_best_s,
                    r.makespan_worst_s,
                    100.0 * r.error,
                    r.efficiency,
                    r.efficiency_worst.min(r.efficiency_best),
                    r.efficiency_worst.max(r.efficiency_best),
                )
            }
            None => format!(
                "makespan {:.2} s, {} tasks, {} cluster{} (no plan given: measured only)",
                self.observed.wall_s,
                self.observed.tasks,
                self.observed.clusters.len(),
                if self.observed.clusters.len() == 1 {
                    ""
                } else {
                    "s"
                }
            ),
        };
        let style = TextStyle::from((FAMILY, 19).into_font()).color(&RGBColor(60, 60, 60));
        drawn(area.draw(&Text::new(subtitle, (24, 48), style)))
    }

    /// Shading shared by both charts: the predicted makespan range, the silences, the end of
    /// the run.
    fn draw_shading<DB: DrawingBackend>(
        &self,
        chart: &mut TimeChart<'_, DB>,
        y_top: f64,
    ) -> Result<(), ReportError> {
        if let Some(p) = &self.predicted {
            let (best, worst) = (p.t_ex_best.min(p.t_ex_worst), p.t_ex_best.max(p.t_ex_worst));
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(best, 0.0), (worst, y_top)],
                BAND.mix(0.25).filled(),
            ))))?;
            for t in [best, worst] {
                drawn(chart.draw_series(std::iter::once(PathElement::new(
                    vec![(t, 0.0), (t, y_top)],
                    BAND.stroke_width(1),
                ))))?;
            }
        }
        for silence in self.observed.silences() {
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(silence.from_s, 0.0), (silence.to_s, y_top)],
                SILENCE.mix(0.13).filled(),
            ))))?;
            let colour = self.colour_of(&silence.cluster);
            // A bar at the top in the cluster's colour says whose silence it is.
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(silence.from_s, y_top * 0.985), (silence.to_s, y_top)],
                colour.filled(),
            ))))?;
        }
        let wall = self.observed.wall_s;
        drawn(chart.draw_series(std::iter::once(PathElement::new(
            vec![(wall, 0.0), (wall, y_top)],
            END_LINE.stroke_width(2),
        ))))?;
        Ok(())
    }

    fn draw_rates<DB: DrawingBackend>(
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

    fn draw_done<DB: DrawingBackend>(
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

    fn draw_side<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), ReportError> {
        let mut side = Side { area, y: 40 };
        side.heading("Legend")?;
        let several = self.cluster_names().len() > 1;
        for name in self.cluster_names() {
            let colour = self.colour_of(&name);
            let observed = self.observed.clusters.iter().find(|c| c.name == name);
            let predicted = self
                .predicted
                .as_ref()
                .and_then(|p| p.clusters.iter().find(|c| c.name == name));
            if observed.is_some() {
                side.entry(Mark::Solid(colour), &format!("{name} measured"))?;
            }
            if let Some(c) = predicted {
                side.entry(
                    Mark::Dashed(colour),
                    &format!(
                        "{name} predicted: {:.2} tasks/s, {} bound",
                        c.best.tasks_per_s,
                        c.bottleneck.name()
                    ),
                )?;
            }
        }
        if several {
            side.entry(Mark::Solid(TOTAL), "all clusters measured")?;
            if self.predicted.is_some() {
                side.entry(Mark::Dashed(TOTAL), "all clusters predicted")?;
            }
        }
        if let Some(p) = &self.predicted {
            if p.clusters.iter().any(|c| c.worst != c.best) {
                side.entry(
                    Mark::Dotted(BAND),
                    "predicted, worst case (where it differs)",
                )?;
            }
            side.entry(
                Mark::Band(BAND.mix(0.25)),
                &format!(
                    "predicted makespan: {:.2} to {:.2} s",
                    p.t_ex_best, p.t_ex_worst
                ),
            )?;
        }
        side.entry(
            Mark::Vertical(END_LINE),
            &format!("measured makespan: {:.2} s", self.observed.wall_s),
        )?;
        let silences = self.observed.silences();
        for cluster in self
            .observed
            .clusters
            .iter()
            .filter(|c| silences.iter().any(|s| s.cluster == c.name))
        {
            let lost = silences
                .iter()
                .any(|s| s.cluster == cluster.name && s.kind == SilenceKind::Lost);
            let link = cluster.link.as_ref().map_or_else(String::new, |l| {
                format!(
                    "; its link: {} disconnection{}, {:.1} s down in all",
                    l.disconnections,
                    if l.disconnections == 1 { "" } else { "s" },
                    l.disconnected_s
                )
            });
            let what = if lost { ", then lost" } else { "" };
            side.entry(
                Mark::Silence(self.colour_of(&cluster.name)),
                &format!(
                    "{}: no result while others delivered{what}{link}",
                    cluster.name
                ),
            )?;
        }
        side.gap(14);
        side.heading("Figures")?;
        match &self.comparison {
            Some(c) => {
                let r = &c.run;
                side.text(&format!(
                    "makespan: measured {:.3} s; predicted",
                    r.makespan_s
                ))?;
                side.text(&format!(
                    "  best {:.3} s, worst {:.3} s; error {:+.1} %",
                    r.makespan_best_s,
                    r.makespan_worst_s,
                    100.0 * r.error
                ))?;
                side.text(&format!(
                    "efficiency: measured {:.3}; predicted {:.3}/{:.3}",
                    r.efficiency, r.efficiency_best, r.efficiency_worst
                ))?;
                side.gap(6);
                side.text("per cluster: tasks predicted best/worst,")?;
                side.text("measured; efficiency predicted, measured")?;
                for cc in &c.clusters {
                    side.text(&format!(
                        "  {}: {}/{}, {}; {:.3}/{:.3}, {:.3}",
                        cc.name,
                        cc.tasks_best,
                        cc.tasks_worst,
                        cc.tasks,
                        cc.efficiency_best,
                        cc.efficiency_worst,
                        cc.efficiency
                    ))?;
                }
            }
            None => {
                side.text(&format!(
                    "{} tasks in {:.3} s",
                    self.observed.tasks, self.observed.wall_s
                ))?;
                for c in &self.observed.clusters {
                    side.text(&format!("  {}: {} tasks", c.name, c.tasks_done()))?;
                }
            }
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
fn tick(value: f64, end: f64) -> String {
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
/// What a legend entry shows.
enum Mark {
    Solid(RGBColor),
    Dashed(RGBColor),
    Dotted(RGBColor),
    Band(RGBAColor),
    Vertical(RGBColor),
    Silence(RGBColor),
}

/// The right-hand column, written top to bottom.
struct Side<'a, DB: DrawingBackend> {
    area: &'a DrawingArea<DB, Shift>,
    y: i32,
}

const SIDE_TEXT: i32 = 15;
const SIDE_LINE: i32 = 22;
const SIDE_WRAP: usize = 46;

impl<DB: DrawingBackend> Side<'_, DB> {
    fn heading(&mut self, text: &str) -> Result<(), ReportError> {
        let style = TextStyle::from((FAMILY, 19).into_font().style(FontStyle::Bold)).color(&BLACK);
        drawn(
            self.area
                .draw(&Text::new(text.to_owned(), (10, self.y), style)),
        )?;
        self.y += 30;
        Ok(())
    }

    fn text(&mut self, text: &str) -> Result<(), ReportError> {
        let style = TextStyle::from((FAMILY, SIDE_TEXT).into_font()).color(&BLACK);
        drawn(
            self.area
                .draw(&Text::new(text.to_owned(), (10, self.y), style)),
        )?;
        self.y += SIDE_LINE;
        Ok(())
    }

    fn gap(&mut self, pixels: i32) {
        self.y += pixels;
    }

    /// A mark 36 pixels wide, then the label, wrapped.
    fn entry(&mut self, mark: Mark, label: &str) -> Result<(), ReportError> {
        let (x0, x1, y) = (10, 46, self.y + SIDE_TEXT / 2);
        let line = |c: RGBColor, w: u32| -> ShapeStyle { c.stroke_width(w) };
        match mark {
            Mark::Solid(c) => drawn(
                self.area
                    .draw(&PathElement::new(vec![(x0, y), (x1, y)], line(c, 3))),
            )?,
            Mark::Dashed(c) => drawn(self.area.draw(&DashedPathElement::new(
                vec![(x0, y), (x1, y)],
                14,
                8,
                line(c, 2),
            )))?,
            Mark::Dotted(c) => drawn(self.area.draw(&DashedPathElement::new(
                vec![(x0, y), (x1, y)],
                2,
                5,
                line(c, 3),
            )))?,
            Mark::Band(c) => drawn(
                self.area
                    .draw(&Rectangle::new([(x0, y - 8), (x1, y + 8)], c.filled())),
            )?,
            Mark::Vertical(c) => drawn(self.area.draw(&PathElement::new(
                vec![(x0 + 18, y - 9), (x0 + 18, y + 9)],
                line(c, 2),
            )))?,
            Mark::Silence(c) => {
                drawn(self.area.draw(&Rectangle::new(
                    [(x0, y - 8), (x1, y + 8)],
                    SILENCE.mix(0.13).filled(),
                )))?;
                drawn(
                    self.area
                        .draw(&Rectangle::new([(x0, y - 8), (x1, y - 5)], c.filled())),
                )?;
            }
        }
        let style = TextStyle::from((FAMILY, SIDE_TEXT).into_font()).color(&BLACK);
        for (i, part) in wrap(label, SIDE_WRAP).into_iter().enumerate() {
            let indent = if i == 0 { 0 } else { 10 };
            drawn(
                self.area
                    .draw(&Text::new(part, (x1 + 10 + indent, self.y), style.clone())),
            )?;
            self.y += SIDE_LINE;
        }
        Ok(())
    }
}

/// Break `text` at spaces into lines of at most `width` characters (longer words stay whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{
        comparison::tests::two_cluster_prediction, observed::tests::two_cluster_stats,
    };

    fn report(with_prediction: bool) -> Report {
        let observed = super::super::observed::Observed::from_stats(&two_cluster_stats());
        let predicted = with_prediction.then(two_cluster_prediction);
        Report::from_parts("two clusters", observed, predicted, 80)
    }

    #[test]
    fn svg_has_the_series_and_the_labels() {
        let svg = report(true).svg(DEFAULT_SIZE).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for label in [
            "two clusters",
            "Completion rate per cluster",
            "Tasks done",
            "tasks per second",
            "time since the master&apos;s first dispatch (s)",
            "main measured",
            "spain predicted: 5.00 tasks/s, wan_out bound",
            "all clusters measured",
            "predicted makespan: 6.30 to 6.40 s",
            "measured makespan: 6.50 s",
            "spain: no result while others",
            "1 disconnection, 2.0 s down",
            "error +2.4 %",
        ] {
            assert!(svg.contains(label), "missing {label:?}");
        }
        // The measured lines in the cluster colours, the dashed predictions, the shading.
        assert!(svg.contains("stroke=\"#0072B2\""), "main's colour");
        assert!(svg.contains("stroke=\"#E69F00\""), "spain's colour");
        // A dashed prediction is one short line per dash.
        assert!(
            svg.matches("stroke=\"#E69F00\"").count() > 20,
            "spain's dashes"
        );
        assert!(svg.contains("fill=\"#DC322F\""), "the silence shading");
    }

    #[test]
    fn without_a_plan_only_the_measured_lines() {
        let svg = report(false).svg(DEFAULT_SIZE).unwrap();
        assert!(svg.contains("no plan given: measured only"));
        assert!(svg.contains("main measured"));
        assert!(!svg.contains("predicted"));
    }

    #[test]
    fn bitmap_has_text_and_lines() {
        let size = (900, 600);
        let pixels = report(true).rgb(size).unwrap();
        let dark = pixels
            .chunks(3)
            .filter(|p| p.iter().all(|&v| v < 80))
            .count();
        let blue = pixels.chunks(3).filter(|p| p == &[0, 114, 178]).count();
        assert!(dark > 2000, "text and axes drawn: {dark} dark pixels");
        assert!(blue > 200, "main's measured line drawn: {blue} pixels");
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(
            wrap("averyveryverylongword x", 5),
            ["averyveryverylongword", "x"]
        );
    }
}
