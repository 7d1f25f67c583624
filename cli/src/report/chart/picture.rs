//! The whole picture: SVG, PNG or pixels; its layout (title, the two charts over time, the
//! links strip, the side column); its title with the verdict; what the other parts ask of the
//! report (its clusters and their colours, the time axis, the tolerance).

use std::path::Path;

use plotters::{
    coord::Shift,
    element::Text,
    prelude::*,
    style::{FontStyle, RGBColor},
};

use super::style::{
    colour, drawn, ensure_font, FAIL, FAMILY, LINK_ROW, PASS, SIDE_WIDTH, TITLE_HEIGHT,
};
use crate::report::{
    document::{Report, ReportError},
    observed::ObservedCluster,
};

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
    pub(crate) fn cluster_names(&self) -> Vec<String> {
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

    pub(super) fn colour_of(&self, name: &str) -> RGBColor {
        colour(self.palette.iter().position(|n| n == name).unwrap_or(0))
    }

    /// The end of the time axis: the later of the run, the prediction and the tolerance,
    /// plus a margin.
    pub(super) fn time_axis_end(&self) -> f64 {
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
    pub(super) fn linked(&self) -> Vec<&ObservedCluster> {
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
                    100.0 * crate::report::comparison::EFFICIENCY_POINTS,
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
    pub(super) fn tolerance(&self) -> Option<(f64, f64)> {
        self.comparison.as_ref().map(|c| c.tolerance())
    }
}
