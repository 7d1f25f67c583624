//! The right-hand column: the legend (a mark and a wrapped label per entry) and the figures.

use plotters::{
    coord::Shift,
    element::{DashedPathElement, PathElement, Rectangle, Text},
    prelude::*,
    style::{FontStyle, RGBColor, ShapeStyle},
};

use super::style::{drawn, BAND, END_LINE, FAMILY, LINK_UP, SILENCE, TOLERANCE, TOTAL};
use crate::report::{
    comparison::MAKESPAN_SLACK,
    document::{Report, ReportError},
    observed::SilenceKind,
};

impl Report {
    pub(super) fn draw_side<DB: DrawingBackend>(
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
        let events = &self.observed.cluster_events;
        if !events.is_empty() {
            let count = |what: &str| events.iter().filter(|e| e.event == what).count();
            side.entry(
                Mark::Vertical(END_LINE),
                &format!(
                    "clusters lost {} and back {} times (ticks at the bottom, thick when back: \
                     a cluster started again is both at once)",
                    count("lost"),
                    count("back")
                ),
            )?;
        }
        if let Some((tasks, before_s)) = self.observed.resumed {
            side.entry(
                Mark::Vertical(END_LINE),
                &format!(
                    "resumed from its journal: {tasks} tasks gathered by the runs before, the \
                     first started {before_s:.1} s before this one (time 0 here)"
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
pub(super) fn wrap(text: &str, width: usize) -> Vec<String> {
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
