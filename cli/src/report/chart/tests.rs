//! The chart drawn from a two-cluster run: its series, labels, colours and verdict, with and
//! without a prediction, re-planning ticks, outages recorded or inferred, the legend's wrapping.

use super::{side::wrap, style::DEFAULT_SIZE};
use crate::report::{
    comparison::tests::two_cluster_prediction, document::Report, observed::tests::two_cluster_stats,
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
fn restarts_and_a_resume_are_marked_and_said() {
    let mut stats = two_cluster_stats();
    stats.cluster_events = ["lost", "back"]
        .iter()
        .enumerate()
        .map(|(i, event)| hmw_core::stats::ClusterEvent {
            t_s: 2.0 + i as f64,
            cluster: "spain".into(),
            event: (*event).into(),
        })
        .collect();
    stats.journal = Some(hmw_core::stats::JournalStats {
        resumed_tasks: 40,
        started_unix_s: vec![100.0, 130.5],
        ..Default::default()
    });
    let bare = report(false).svg(DEFAULT_SIZE).unwrap();
    let observed = super::super::observed::Observed::from_stats(&stats);
    let svg = Report::from_parts("restarts", observed, None, 80)
        .svg(DEFAULT_SIZE)
        .unwrap();
    assert!(
        svg.contains("clusters lost 1 and back 1 times"),
        "the legend"
    );
    assert!(
        svg.contains("resumed from its journal: 40 tasks") && svg.contains("started 30.5 s"),
        "the resume"
    );
    let ticks = |svg: &str| svg.matches("stroke=\"#E69F00\"").count();
    assert!(
        ticks(&svg) >= ticks(&bare) + 4,
        "a tick per event and chart"
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
