//! Drawing a [`Report`]: a title with the verdict (is the measured makespan inside the
//! tolerance?) and the headline figures; the completion rate per cluster over time (measured
//! solid, predicted dashed, worst-case end dotted); the tasks done over time, same lines;
//! shaded, the tolerance on the makespan, the predicted makespan range inside it, and when a
//! cluster's link was down; below, one row per cluster behind a communication manager with its
//! link's outages (recorded by the CM; inferred from a cluster delivering nothing while others
//! did when the statistics have no such records); re-planning decisions (`[run] adapt`) as
//! short ticks at the top of both charts, in the colour of the cluster they concern; on the
//! right, the legend and the figures.
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
    comparison::MAKESPAN_SLACK,
    document::{Report, ReportError},
    observed::{rate_steps, ObservedCluster, SilenceKind},
    predicted::{sample_times, Profile},
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
#[cfg(test)]
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
/// The tolerance on the makespan: a yellow no cluster has, its edges darker.
const TOLERANCE: RGBColor = RGBColor(240, 228, 66);
const TOLERANCE_EDGE: RGBColor = RGBColor(160, 145, 0);
const SILENCE: RGBColor = RGBColor(220, 50, 47);
const PASS: RGBColor = RGBColor(0, 130, 60);
const FAIL: RGBColor = RGBColor(200, 30, 30);
const END_LINE: RGBColor = RGBColor(90, 90, 90);
const LINK_UP: RGBColor = RGBColor(225, 225, 225);
const SIDE_WIDTH: u32 = 430;
const TITLE_HEIGHT: u32 = 78;
/// Height of one cluster's row in the links strip, pixels.
const LINK_ROW: u32 = 30;

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

    /// The chart as RGB pixels, row by row (for the tests, which look at what was drawn).
    #[cfg(test)]
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

    /// The end of the time axis: the later of the run, the prediction and the tolerance,
    /// plus a margin.
    fn time_axis_end(&self) -> f64 {
        let predicted = self.predicted.as_ref().map_or(0.0, |p| {
            p.clusters
                .iter()
                .flat_map(|c| [c.best.execution_time(), c.worst.execution_time()])
                .fold(p.t_ex_worst.max(p.t_ex_best), f64::max)
        });
        let tolerance = self.tolerance().map_or(0.0, |(_, high)| high);
        (self.observed.wall_s.max(predicted).max(tolerance) * 1.04).max(1e-3)
    }

    /// The clusters behind a communication manager: the rows of the links strip.
    fn linked(&self) -> Vec<&ObservedCluster> {
        self.observed
            .clusters
            .iter()
            .filter(|c| c.link.is_some())
            .collect()
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        drawn(root.fill(&WHITE))?;
        let (width, height) = root.dim_in_pixel();
        let (head, body) = root.split_vertically(TITLE_HEIGHT);
        self.draw_title(&head)?;
        let (charts, side) = body.split_horizontally(width.saturating_sub(SIDE_WIDTH));
        let charts_height = height.saturating_sub(TITLE_HEIGHT);
        let rows = self.linked().len() as u32;
        let strip = if rows > 0 { 62 + LINK_ROW * rows } else { 0 };
        let (charts, links) = charts.split_vertically(charts_height.saturating_sub(strip));
        let (upper, lower) =
            charts.split_vertically(charts_height.saturating_sub(strip) * 57 / 100);
        let x_end = self.time_axis_end();
        self.draw_rates(&upper, x_end)?;
        self.draw_done(&lower, x_end)?;
        if rows > 0 {
            self.draw_links(&links, x_end)?;
        }
        self.draw_side(&side)
    }

    fn draw_title<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<(), ReportError> {
        let title = TextStyle::from((FAMILY, 28).into_font().style(FontStyle::Bold)).color(&BLACK);
        drawn(area.draw(&Text::new(self.title.clone(), (24, 10), title.clone())))?;
        if let Some(c) = &self.comparison {
            // The verdict, in the words of the table, after the title.
            let (w, _) = drawn(area.estimate_text_size(&self.title, &title))?;
            let colour = if c.run.inside { PASS } else { FAIL };
            let style =
                TextStyle::from((FAMILY, 28).into_font().style(FontStyle::Bold)).color(&colour);
            drawn(area.draw(&Text::new(
                format!("— {}", c.verdict()),
                (24 + w as i32 + 14, 10),
                style,
            )))?;
        }
        let subtitle = match &self.comparison {
            Some(c) => {
                let r = &c.run;
                format!(
                    "makespan: predicted {:.2} to {:.2} s, error {:+.1} %   efficiency: \
                     measured {:.3}, predicted {:.3} to {:.3}, within {:.0} points: {}",
                    r.makespan_best_s,
                    r.makespan_worst_s,
                    100.0 * r.error,
                    r.efficiency,
                    r.efficiency_worst.min(r.efficiency_best),
                    r.efficiency_worst.max(r.efficiency_best),
                    100.0 * super::comparison::EFFICIENCY_POINTS,
                    if r.efficiency_within { "yes" } else { "no" },
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

    /// The tolerance on the makespan, seconds (with a prediction).
    fn tolerance(&self) -> Option<(f64, f64)> {
        self.comparison.as_ref().map(|c| c.tolerance())
    }

    /// Shading shared by both charts: the tolerance on the makespan and the predicted range
    /// inside it, the links' outages (or the inferred silences), the end of the run.
    fn draw_shading<DB: DrawingBackend>(
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

    /// One row per cluster behind a communication manager: light grey while its link was up,
    /// its colour while the link was down (recorded by the CM), red hatching where it only
    /// delivered nothing while others did (statistics without outage records).
    fn draw_links<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x_end: f64,
    ) -> Result<(), ReportError> {
        let linked = self.linked();
        let rows = linked.len() as f64;
        let mut chart = drawn(
            ChartBuilder::on(area)
                .margin_left(12)
                .margin_right(16)
                .margin_top(4)
                .margin_bottom(4)
                .caption(
                    "Links: down (recorded by the communication manager) or silent (inferred)",
                    (FAMILY, 17),
                )
                .x_label_area_size(26)
                .y_label_area_size(78)
                .build_cartesian_2d(0.0..x_end, 0.0..rows),
        )?;
        drawn(
            chart
                .configure_mesh()
                .disable_y_mesh()
                .disable_y_axis()
                .x_label_formatter(&|x| tick(*x, x_end))
                .label_style((FAMILY, 14))
                .max_light_lines(0)
                .bold_line_style(RGBColor(235, 235, 235))
                .draw(),
        )?;
        let wall = self.observed.wall_s;
        let inferred = self.observed.inferred_silences();
        for (i, c) in linked.iter().enumerate() {
            // Row i from the top.
            let (y0, y1) = (rows - i as f64 - 0.85, rows - i as f64 - 0.15);
            let colour = self.colour_of(&c.name);
            drawn(chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y0), (wall, y1)],
                LINK_UP.filled(),
            ))))?;
            for d in &c.outages {
                drawn(chart.draw_series(std::iter::once(Rectangle::new(
                    [(d.from_s, y0), (d.to_s, y1)],
                    colour.filled(),
                ))))?;
            }
            for s in inferred.iter().filter(|s| s.cluster == c.name) {
                drawn(chart.draw_series(std::iter::once(Rectangle::new(
                    [(s.from_s, y0), (s.to_s, y1)],
                    SILENCE.mix(0.25).filled(),
                ))))?;
                hatch(
                    &mut chart,
                    (s.from_s, s.to_s),
                    (y0, y1),
                    x_end / 150.0,
                    SILENCE.to_rgba(),
                )?;
            }
            // The name, right-aligned in the label area, in the cluster's colour.
            let (px, py) = chart.backend_coord(&(0.0, 0.5 * (y0 + y1)));
            let (bx, by) = area.get_base_pixel();
            let style = TextStyle::from((FAMILY, 15).into_font())
                .color(&colour)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Right,
                    plotters::style::text_anchor::VPos::Center,
                ));
            drawn(area.draw(&Text::new(c.name.clone(), (px - bx - 8, py - by), style)))?;
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
                Mark::Band(BAND.mix(0.35)),
                &format!(
                    "predicted makespan: {:.2} to {:.2} s",
                    p.t_ex_best, p.t_ex_worst
                ),
            )?;
        }
        if let Some((low, high)) = self.tolerance() {
            side.entry(
                Mark::Band(TOLERANCE.mix(0.3)),
                &format!(
                    "tolerance: {:.2} x best to {:.2} x worst, {low:.3} to {high:.3} s",
                    1.0 - MAKESPAN_SLACK,
                    1.0 + MAKESPAN_SLACK
                ),
            )?;
        }
        side.entry(
            Mark::Vertical(END_LINE),
            &format!("measured makespan: {:.2} s", self.observed.wall_s),
        )?;
        let adaptations = &self.observed.adaptations;
        if !adaptations.is_empty() {
            let count = |what: &str| {
                adaptations
                    .iter()
                    .filter(|a| a.action.starts_with(what))
                    .count()
            };
            side.entry(
                Mark::Vertical(END_LINE),
                &format!(
                    "re-planning (ticks at the top, its cluster's colour): {} credit, {} nt, \
                     {} drop, {} readmit",
                    count("credit"),
                    count("nt"),
                    count("drop"),
                    count("readmit")
                ),
            )?;
        }
        if !self.linked().is_empty() {
            side.entry(
                Mark::Band(LINK_UP.to_rgba()),
                "links strip: grey while the link was up",
            )?;
        }
        for cluster in self
            .observed
            .clusters
            .iter()
            .filter(|c| !c.outages.is_empty())
        {
            let down: f64 = cluster.outages.iter().map(|d| d.to_s - d.from_s).sum();
            let n = cluster.outages.len();
            let what = if cluster.lost { ", then lost" } else { "" };
            side.entry(
                Mark::Outage(self.colour_of(&cluster.name)),
                &format!(
                    "{}: link down {n} time{}, {down:.1} s of the run{what} (its row below; \
                     hatched above)",
                    cluster.name,
                    if n == 1 { "" } else { "s" },
                ),
            )?;
        }
        let silences = self.observed.inferred_silences();
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
                Mark::Silence,
                &format!(
                    "{}: no result while others delivered{what}{link} (inferred: no outage \
                     records)",
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
                        "  {}: {}/{}, {}; {:.3}/{:.3}, {}",
                        cc.name,
                        cc.tasks_best,
                        cc.tasks_worst,
                        cc.tasks,
                        cc.efficiency_best,
                        cc.efficiency_worst,
                        cc.efficiency
                            .map_or_else(|| "-".to_owned(), |e| format!("{e:.3} (busy)"))
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

/// Diagonal hatching over `[x.0, x.1] x [y.0, y.1]`, a line every `step` seconds.
fn hatch<DB: DrawingBackend>(
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
    /// A recorded outage: a block in the cluster's colour.
    Outage(RGBColor),
    /// An inferred silence: red hatching.
    Silence,
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
            // As on the cluster's row of the links strip (hatched in the charts above it).
            Mark::Outage(c) => drawn(
                self.area
                    .draw(&Rectangle::new([(x0, y - 8), (x1, y + 8)], c.filled())),
            )?,
            Mark::Silence => {
                drawn(self.area.draw(&Rectangle::new(
                    [(x0, y - 8), (x1, y + 8)],
                    SILENCE.mix(0.25).filled(),
                )))?;
                for x in (x0..x1).step_by(6) {
                    drawn(self.area.draw(&PathElement::new(
                        vec![(x, y + 8), ((x + 4).min(x1), y - 8)],
                        line(SILENCE, 1),
                    )))?;
                }
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
            "(inferred: no outage",
            "1 disconnection,",
            "2.0 s down",
            "error +2.4 %",
            "PASS: measured makespan 6.500 s inside the tolerance 5.985 to 6.720 s",
            "tolerance: 0.95 x best to 1.05 x worst,",
            "5.985 to 6.720 s",
            "Links: down (recorded by the communication manager) or silent (inferred)",
        ] {
            assert!(svg.contains(label), "missing {label:?}");
        }
        // The tolerance band and its dashed edges.
        assert!(svg.contains("fill=\"#F0E442\""), "the tolerance band");
        assert!(svg.contains("stroke=\"#A09100\""), "the tolerance edges");
        // The measured lines in the cluster colours, the dashed predictions, the shading.
        assert!(svg.contains("stroke=\"#0072B2\""), "main's colour");
        assert!(svg.contains("stroke=\"#E69F00\""), "spain's colour");
        // A dashed prediction is one short line per dash.
        assert!(
            svg.matches("stroke=\"#E69F00\"").count() > 20,
            "spain's dashes"
        );
        assert!(
            svg.contains("fill=\"#DC322F\""),
            "the inferred silence shading"
        );
    }

    #[test]
    fn re_planning_decisions_are_marked_and_counted() {
        let mut stats = two_cluster_stats();
        stats.adaptations = ["credit 12", "drop", "readmit"]
            .iter()
            .enumerate()
            .map(|(i, action)| hmw_core::stats::Adaptation {
                t_s: 1.0 + i as f64,
                cluster: "spain".into(),
                action: (*action).into(),
                reason: "test".into(),
            })
            .collect();
        let bare = report(false).svg(DEFAULT_SIZE).unwrap();
        let observed = super::super::observed::Observed::from_stats(&stats);
        let svg = Report::from_parts("adapt", observed, None, 80)
            .svg(DEFAULT_SIZE)
            .unwrap();
        assert!(
            svg.contains("1 credit, 0 nt, 1 drop, 1 readmit"),
            "the legend's count"
        );
        // A tick per decision on each of the two charts, in spain's colour.
        let ticks = |svg: &str| svg.matches("stroke=\"#E69F00\"").count();
        assert!(
            ticks(&svg) >= ticks(&bare) + 6,
            "{} {}",
            ticks(&svg),
            ticks(&bare)
        );
    }

    #[test]
    fn a_makespan_outside_the_tolerance_fails_in_the_title() {
        let mut stats = two_cluster_stats();
        stats.wall_s = 7.0; // past 1.05 x 6.4 = 6.72
        let observed = super::super::observed::Observed::from_stats(&stats);
        let report = Report::from_parts("late", observed, Some(two_cluster_prediction()), 80);
        let svg = report.svg(DEFAULT_SIZE).unwrap();
        assert!(
            svg.contains("FAIL: measured makespan 7.000 s outside the tolerance 5.985 to 6.720 s"),
            "the verdict"
        );
        assert!(svg.contains("fill=\"#C81E1E\""), "in red");
        let text = report.comparison.as_ref().unwrap().to_text();
        assert!(
            text.contains("verdict FAIL: measured makespan 7.000 s outside"),
            "{text}"
        );
    }

    #[test]
    fn recorded_outages_are_drawn_on_their_clusters_row() {
        let mut stats = two_cluster_stats();
        stats.started_unix_s = Some(1.7e9);
        stats.clusters[0].link.as_mut().unwrap().outages = vec![hmw_core::stats::Outage {
            start_unix_s: 1.7e9 + 2.5,
            end_unix_s: Some(1.7e9 + 4.5),
        }];
        let observed = super::super::observed::Observed::from_stats(&stats);
        let report = Report::from_parts("two", observed, Some(two_cluster_prediction()), 80);
        let svg = report.svg(DEFAULT_SIZE).unwrap();
        assert!(svg.contains("spain: link down 1 time, 2.0 s of the run"));
        assert!(
            !svg.contains("(inferred: no outage"),
            "no inference beside records"
        );
        // A block in spain's colour on its row.
        assert!(svg.contains("fill=\"#E69F00\""), "spain's outage");
    }

    #[test]
    fn a_link_recorded_without_outages_has_no_inferred_silence() {
        // spain's link is recorded (the master's start time is there) and never went down:
        // its stall is no outage, and nothing says "no outage records".
        let mut stats = two_cluster_stats();
        stats.started_unix_s = Some(1.7e9);
        assert!(stats.clusters[0].link.as_ref().unwrap().outages.is_empty());
        let observed = super::super::observed::Observed::from_stats(&stats);
        let report = Report::from_parts("two", observed, Some(two_cluster_prediction()), 80);
        let svg = report.svg(DEFAULT_SIZE).unwrap();
        assert!(
            !svg.contains("(inferred: no outage"),
            "no inference beside records"
        );
        assert!(!svg.contains("spain: link down"), "no outage either");
        assert!(!svg.contains("fill=\"#DC322F\""), "no silence shading");
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
