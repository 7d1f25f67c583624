//! `hmw report` on a pipeline run's statistics: the mappings it followed, every decision, each
//! stage's time on each node, the measured against the predicted makespan when the plan is
//! given; and a chart of the items per second over time, each mapping's predicted rate as a
//! dashed step, every decision marked (a drain red, a calibration orange, a new mapping blue,
//! the resumption green) and the time without items between a drain and its resumption
//! shaded.

use std::{fmt::Write as _, path::Path};

use anyhow::{anyhow, Result};
use hmw_core::pipeline::stats::{describe, DecisionKind, PipelineStats};
use plotters::{
    coord::Shift,
    prelude::*,
    series::{DashedLineSeries, LineSeries},
    style::RGBColor,
};

use super::document::ReportError;

const DRAIN: RGBColor = RGBColor(200, 30, 30);
const CALIBRATE: RGBColor = RGBColor(230, 140, 0);
const REMAP: RGBColor = RGBColor(0, 90, 180);
const RESUME: RGBColor = RGBColor(0, 140, 70);
const MEASURED: RGBColor = RGBColor(20, 20, 20);
const FAMILY: &str = "sans-serif";

/// What the run's plan predicted: its makespan with the mapping the run started with.
pub(crate) struct PipelinePredicted {
    /// Seconds.
    pub makespan_s: f64,
}

/// The colour of a decision's marker.
fn colour(decision: &DecisionKind) -> RGBColor {
    match decision {
        DecisionKind::Drain { .. } => DRAIN,
        DecisionKind::Calibrate { .. } => CALIBRATE,
        DecisionKind::Remap { .. } => REMAP,
        DecisionKind::Resume { .. } => RESUME,
    }
}

/// The report as text, its last line `report ...` for scripts.
pub(crate) fn text(
    name: &str,
    stats: &PipelineStats,
    predicted: Option<&PipelinePredicted>,
) -> String {
    let mut t = format!(
        "== {name}: a pipeline of {} stages ({}), {} items in {:.3} s ({:.2} items/s), {} remaps\n",
        stats.stages.len(),
        stats.stages.join(", "),
        stats.items,
        stats.makespan_s,
        stats.throughput(),
        stats.remaps()
    );
    let _ = writeln!(
        t,
        "calibration before the first item {:.3} s, wall {:.3} s",
        stats.calibration_s, stats.wall_s
    );
    let _ = writeln!(t, "\n== Mappings ==");
    for m in &stats.mappings {
        let threshold = m
            .threshold
            .map_or("never".to_owned(), |x| format!("{x:.3}"));
        let _ = writeln!(
            t,
            "{} at {:.3} s: {} (predicted {:.4} s per item, threshold {threshold}, window {})",
            m.epoch,
            m.at_s,
            m.hosts.join(" | "),
            m.predicted_bottleneck_s,
            m.window
        );
    }
    let _ = writeln!(t, "\n== Decisions ==");
    if stats.decisions.is_empty() {
        let _ = writeln!(t, "none");
    }
    for d in &stats.decisions {
        let _ = writeln!(
            t,
            "[{:>9.3} s, {:>6} items] {}",
            d.at_s,
            d.delivered,
            describe(&d.decision)
        );
    }
    let _ = writeln!(t, "\n== Each stage on each node ==");
    let _ = writeln!(
        t,
        "{:<12} {:<16} {:>8} {:>12}",
        "stage", "host", "items", "mean s"
    );
    for s in &stats.stage_times {
        let stage = stats
            .stages
            .get(s.stage as usize)
            .map_or("?", String::as_str);
        let _ = writeln!(
            t,
            "{:<12} {:<16} {:>8} {:>12.5}",
            stage, s.host, s.items, s.mean_s
        );
    }
    let line = match predicted {
        Some(p) => {
            let err = (stats.makespan_s - p.makespan_s) / p.makespan_s;
            let _ = writeln!(
                t,
                "\nmakespan predicted {:.3} s, measured {:.3} s ({:+.1}%)",
                p.makespan_s,
                stats.makespan_s,
                100.0 * err
            );
            format!(
                "report name={name} items={} makespan_s={:.3} predicted_s={:.3} err={err:.4} \
                 remaps={}",
                stats.items,
                stats.makespan_s,
                p.makespan_s,
                stats.remaps()
            )
        }
        None => format!(
            "report name={name} items={} makespan_s={:.3} remaps={}",
            stats.items,
            stats.makespan_s,
            stats.remaps()
        ),
    };
    let _ = writeln!(t, "{line}");
    t
}

/// The chart on `root`.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    name: &str,
    stats: &PipelineStats,
) -> Result<(), ReportError> {
    let drawn = |e: Result<(), DrawingAreaErrorKind<DB::ErrorType>>| {
        e.map_err(|e| ReportError::Draw(e.to_string()))
    };
    drawn(root.fill(&WHITE))?;
    let end = stats
        .wall_s
        .max(stats.progress.last().map_or(0.0, |p| p.at_s))
        .max(1e-3)
        * 1.04;
    let predicted: Vec<(f64, f64, f64)> = stats
        .mappings
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let until = stats.mappings.get(i + 1).map_or(stats.wall_s, |n| n.at_s);
            (m.at_s, until, 1.0 / m.predicted_bottleneck_s)
        })
        .collect();
    let peak = stats
        .progress
        .iter()
        .map(|p| p.items_per_s)
        .chain(predicted.iter().map(|p| p.2))
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max);
    let top = (peak * 1.15).max(1e-3);
    let mut chart = ChartBuilder::on(root)
        .margin(16)
        .caption(
            format!(
                "{name}: items per second ({} items, {:.2} s, {} remaps)",
                stats.items,
                stats.makespan_s,
                stats.remaps()
            ),
            (FAMILY, 24),
        )
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..end, 0.0..top)
        .map_err(|e| ReportError::Draw(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("time since the start (s)")
        .y_desc("items per second through the sink")
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .draw()
        .map_err(|e| ReportError::Draw(e.to_string()))?;
    // Between a drain and its resumption no item flows: shaded.
    let mut drained = None;
    for d in &stats.decisions {
        match d.decision {
            DecisionKind::Drain { .. } => drained = Some(d.at_s),
            DecisionKind::Resume { .. } => {
                if let Some(from) = drained.take() {
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(from, 0.0), (d.at_s, top)],
                            DRAIN.mix(0.08).filled(),
                        )))
                        .map_err(|e| ReportError::Draw(e.to_string()))?;
                }
            }
            _ => {}
        }
    }
    for (i, &(from, to, rate)) in predicted.iter().enumerate() {
        let series = chart
            .draw_series(DashedLineSeries::new(
                vec![(from, rate), (to, rate)],
                10,
                6,
                REMAP.stroke_width(2),
            ))
            .map_err(|e| ReportError::Draw(e.to_string()))?;
        if i == 0 {
            series.label("predicted (each mapping)").legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], REMAP.stroke_width(2))
            });
        }
    }
    let mut steps = Vec::new();
    let mut from = 0.0;
    for p in &stats.progress {
        steps.push((from, p.items_per_s));
        steps.push((p.at_s, p.items_per_s));
        from = p.at_s;
    }
    chart
        .draw_series(LineSeries::new(steps, MEASURED.stroke_width(3)))
        .map_err(|e| ReportError::Draw(e.to_string()))?
        .label("measured")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], MEASURED.stroke_width(3)));
    for d in &stats.decisions {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(d.at_s, 0.0), (d.at_s, top)],
                colour(&d.decision).stroke_width(2),
            )))
            .map_err(|e| ReportError::Draw(e.to_string()))?;
    }
    for (label, c) in [
        ("drain", DRAIN),
        ("calibrate", CALIBRATE),
        ("new mapping", REMAP),
        ("resume", RESUME),
    ] {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
            .map_err(|e| ReportError::Draw(e.to_string()))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x + 10, y - 8), (x + 10, y + 8)], c.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| ReportError::Draw(e.to_string()))?;
    drawn(root.present())
}

/// The chart as SVG.
pub(crate) fn svg(name: &str, stats: &PipelineStats, size: (u32, u32)) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root, name, stats).map_err(|e| anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// The chart as PNG.
pub(crate) fn png(name: &str, stats: &PipelineStats, path: &Path, size: (u32, u32)) -> Result<()> {
    let root = BitMapBackend::new(path, size).into_drawing_area();
    draw(&root, name, stats).map_err(|e| anyhow!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw_core::pipeline::stats::{MappingRecord, PipeDecision, PipeProgress};

    fn stats() -> PipelineStats {
        let mapping = |epoch, at_s, predicted| MappingRecord {
            epoch,
            at_s,
            groups: Vec::new(),
            hosts: vec!["a: n1".into()],
            predicted_bottleneck_s: predicted,
            predicted_latency_s: 0.1,
            threshold: Some(0.4),
            window: 4,
            detection_items: 8,
        };
        let decision = |at_s, decision| PipeDecision {
            at_s,
            delivered: 10,
            decision,
        };
        PipelineStats {
            kind: "pipeline".into(),
            stages: vec!["a".into(), "b".into()],
            makespan_s: 10.0,
            wall_s: 10.5,
            items: 100,
            mappings: vec![mapping(1, 0.5, 0.1), mapping(2, 5.0, 0.08)],
            decisions: vec![
                decision(
                    4.0,
                    DecisionKind::Drain {
                        group: 1,
                        measured_s: 0.3,
                        limit_s: 0.14,
                    },
                ),
                decision(4.5, DecisionKind::Calibrate { nodes: 3 }),
                decision(
                    5.0,
                    DecisionKind::Remap {
                        epoch: 2,
                        predicted_bottleneck_s: 0.08,
                    },
                ),
                decision(5.1, DecisionKind::Resume { epoch: 2 }),
            ],
            progress: (1..=10)
                .map(|s| PipeProgress {
                    at_s: f64::from(s),
                    delivered: 10 * u64::from(s as u32),
                    items_per_s: 10.0,
                })
                .collect(),
            ..PipelineStats::default()
        }
    }

    #[test]
    fn the_text_lists_every_mapping_and_decision() {
        let text = text("p", &stats(), Some(&PipelinePredicted { makespan_s: 8.0 }));
        assert!(
            text.contains("1 at 0.500 s: a: n1 (predicted 0.1000 s per item"),
            "{text}"
        );
        assert!(text.contains("group 1 takes 0.3000 s per item, beyond its limit 0.1400 s: drain"));
        assert!(text.contains("mapping 2 handed out"));
        assert!(text.trim_end().ends_with(
            "report name=p items=100 makespan_s=10.000 predicted_s=8.000 err=0.2500 remaps=1"
        ));
    }

    #[test]
    fn the_chart_marks_every_decision() {
        let svg = svg("p", &stats(), (900, 500)).unwrap();
        for (r, g, b) in [(200, 30, 30), (230, 140, 0), (0, 90, 180), (0, 140, 70)] {
            let hex = format!("#{r:02X}{g:02X}{b:02X}");
            assert!(svg.contains(&hex), "{hex} missing");
        }
        assert!(svg.contains("items per second"));
    }
}
