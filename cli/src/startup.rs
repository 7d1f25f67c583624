//! How a launch started its clusters: the time from the launch to every link up, and how far
//! the clusters' own starts overlapped, from the links' first connections in the main
//! cluster's statistics (each CM reports its link's, and each sub-master its own CMs').

use hmw_core::stats::RunStats;

/// A launch's startup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Startup {
    /// From the launch to the last link's first connection, seconds.
    pub(crate) all_links_s: f64,
    /// The clusters' own start times (each from its start to its link's first connection)
    /// summed, over `all_links_s`: about 1 when they start one after another, up to the number
    /// of clusters when they start all at once.
    pub(crate) overlap: f64,
}

/// The startup of a launch at `launched_unix_s` whose clusters started at `started(name)`
/// (seconds since the UNIX epoch), from the run's statistics `stats`. `None` without a cluster
/// behind a link, or when a link never connected or a cluster's start is unknown.
pub(crate) fn startup(
    stats: &RunStats,
    launched_unix_s: f64,
    started: impl Fn(&str) -> Option<f64>,
) -> Option<Startup> {
    let mut links = Vec::new();
    linked_clusters(stats, &mut links);
    if links.is_empty() {
        return None;
    }
    let mut own_s = 0.0;
    let mut last_up = launched_unix_s;
    for (name, up) in links {
        let up = up?;
        own_s += (up - started(name)?).max(0.0);
        last_up = last_up.max(up);
    }
    let all_links_s = last_up - launched_unix_s;
    (all_links_s > 0.0).then(|| Startup {
        all_links_s,
        overlap: own_s / all_links_s,
    })
}

/// Every cluster behind a link below `stats`, at any depth, with its link's first connection.
fn linked_clusters<'a>(stats: &'a RunStats, out: &mut Vec<(&'a str, Option<f64>)>) {
    for cluster in &stats.clusters {
        let up = cluster.link.as_ref().and_then(|l| l.first_connected_unix_s);
        out.push((&cluster.name, up));
        if let Some(below) = &cluster.stats {
            linked_clusters(below, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw_core::stats::{ClusterReport, LinkSummary};

    fn behind(name: &str, up: Option<f64>, below: Vec<ClusterReport>) -> ClusterReport {
        ClusterReport {
            name: name.into(),
            link: Some(LinkSummary {
                first_connected_unix_s: up,
                ..Default::default()
            }),
            stats: (!below.is_empty()).then(|| {
                Box::new(RunStats {
                    clusters: below,
                    ..Default::default()
                })
            }),
            ..Default::default()
        }
    }

    fn run(clusters: Vec<ClusterReport>) -> RunStats {
        RunStats {
            clusters,
            ..Default::default()
        }
    }

    #[test]
    fn clusters_started_at_once_overlap_and_one_after_another_do_not() {
        // Launched at 100; three clusters, each up 4 s after its own start.
        let stats = run(vec![
            behind("a", Some(104.0), vec![]),
            behind("b", Some(104.5), vec![behind("c", Some(105.0), vec![])]),
        ]);
        let at_once = startup(&stats, 100.0, |name| match name {
            "a" => Some(100.0),
            "b" => Some(100.5),
            "c" => Some(101.0),
            _ => None,
        })
        .unwrap();
        assert_eq!(at_once.all_links_s, 5.0);
        assert!((at_once.overlap - 12.0 / 5.0).abs() < 1e-12);
        let one_by_one = run(vec![
            behind("a", Some(104.0), vec![]),
            behind("b", Some(108.0), vec![]),
        ]);
        let serial = startup(&one_by_one, 100.0, |name| {
            Some(if name == "a" { 100.0 } else { 104.0 })
        })
        .unwrap();
        assert_eq!(serial.all_links_s, 8.0);
        assert_eq!(serial.overlap, 1.0);
    }

    #[test]
    fn no_startup_without_links_or_with_one_never_up() {
        assert_eq!(startup(&run(vec![]), 100.0, |_| Some(100.0)), None);
        let never = run(vec![behind("a", None, vec![])]);
        assert_eq!(startup(&never, 100.0, |_| Some(100.0)), None);
        let unknown = run(vec![behind("a", Some(104.0), vec![])]);
        assert_eq!(startup(&unknown, 100.0, |_| None), None);
    }
}
