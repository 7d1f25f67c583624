//! The links strip: one row per cluster behind a communication manager, its link up, down
//! (recorded) or silent (inferred).

use plotters::{
    coord::Shift,
    element::{Rectangle, Text},
    prelude::*,
    style::RGBColor,
};

use super::{
    shading::hatch,
    style::{drawn, FAMILY, LINK_UP, SILENCE},
    time_charts::tick,
};
use crate::report::document::{Report, ReportError};

impl Report {
    /// One row per cluster behind a communication manager: light grey while its link was up,
    /// its colour while the link was down (recorded by the CM), red hatching where it only
    /// delivered nothing while others did (statistics without outage records).
    pub(super) fn draw_links<DB: DrawingBackend>(
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
}
