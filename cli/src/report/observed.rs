//! What a run did over time, from its statistics: tasks done by each cluster at every progress
//! sample, the completion rate over each interval between samples, when each cluster's link
//! was down (recorded by its communication manager), and — for statistics without those
//! records — the stretches where a cluster delivered nothing while others did.

use hmw_core::stats::{LinkSummary, Outage, RunStats};

/// The completion rate of a cluster over one interval between two progress samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStep {
    pub from_s: f64,
    pub to_s: f64,
    pub tasks_per_s: f64,
}

/// One cluster as the main master saw it (a cluster further down counts in the line of the
/// cluster it hangs from).
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedCluster {
    pub name: String,
    /// Tasks done by the cluster at each sample: `(0, 0)` first, the run's end (`wall_s`, the
    /// final count) last, times strictly increasing.
    pub done: Vec<(f64, u64)>,
    /// Its link, for a cluster behind a communication manager.
    pub link: Option<LinkSummary>,
    /// Its link stayed down past the deadline and its tasks went to others.
    pub lost: bool,
    /// Its own workers: how many, their mean busy share of its master's wall time, and that
    /// wall time (from the sub-master's statistics for a cluster behind a CM; `None` when it
    /// never reported).
    pub workers: Option<WorkersSummary>,
    /// When its link was down, in run time (exact: from the link's outage records and the
    /// master's start time); empty when the statistics have no such records.
    pub outages: Vec<Downtime>,
    /// Whether the statistics record its link's outages (the master's start time and the link
    /// are there): then `outages` is the whole story, even when empty.
    pub outages_recorded: bool,
}

/// A stretch the link of a cluster had no connection, seconds since the master's clock
/// started, clipped to the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Downtime {
    pub from_s: f64,
    pub to_s: f64,
    /// Still down when the run ended (no end recorded).
    pub open: bool,
}

/// The outages of a link in run time: `t = unix - started_unix_s`, clipped to `[0, wall_s]`;
/// an outage without an end lasts to the end of the run. Outages wholly outside the run (a
/// link down before the clock started and back before it did) are left out.
pub fn downtimes(outages: &[Outage], started_unix_s: f64, wall_s: f64) -> Vec<Downtime> {
    outages
        .iter()
        .filter_map(|o| {
            let from = (o.start_unix_s - started_unix_s).clamp(0.0, wall_s);
            let to = o
                .end_unix_s
                .map_or(wall_s, |end| (end - started_unix_s).clamp(0.0, wall_s));
            let open = o.end_unix_s.is_none_or(|end| end - started_unix_s > wall_s);
            (to > from).then_some(Downtime {
                from_s: from,
                to_s: to,
                open,
            })
        })
        .collect()
}

/// A cluster's own workers, from the statistics of its (sub-)master.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkersSummary {
    pub workers: usize,
    /// Mean of busy time over the wall time.
    pub busy_share: f64,
    /// The (sub-)master's wall time, seconds.
    pub wall_s: f64,
    /// Tasks its workers computed for nothing (duplicates of reassigned tasks).
    pub discharged: u64,
}

impl WorkersSummary {
    fn of(stats: &RunStats) -> WorkersSummary {
        WorkersSummary {
            workers: stats.cluster.workers,
            busy_share: stats.cluster.efficiency,
            wall_s: stats.wall_s,
            discharged: stats.cluster.discharged,
        }
    }
}

/// Why a cluster delivered nothing during a stretch of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SilenceKind {
    /// Between its first and last results, while another cluster delivered.
    Stalled,
    /// After its last result, the cluster having been declared lost.
    Lost,
}

/// A stretch where a cluster delivered no result while others did. The statistics record how
/// many disconnections a link had and for how long, not when: these stretches are what the
/// timeline shows of them (or of any other stall).
#[derive(Debug, Clone, PartialEq)]
pub struct Silence {
    pub cluster: String,
    pub from_s: f64,
    pub to_s: f64,
    pub kind: SilenceKind,
}

/// The whole run's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The main cluster's name.
    pub name: String,
    /// When the master's clock started, seconds since the UNIX epoch (absent from older
    /// statistics).
    pub started_unix_s: Option<f64>,
    /// The master's wall time, from its first dispatch.
    pub wall_s: f64,
    pub tasks: u64,
    /// The main cluster's own workers first (when it has any), then the clusters behind its
    /// communication managers, in the order of the statistics.
    pub clusters: Vec<ObservedCluster>,
    /// Tasks done by the whole run at each sample, same times as the clusters'.
    pub total: Vec<(f64, u64)>,
    /// The re-planning decisions (`[run] adapt`), in order.
    pub adaptations: Vec<hmw_core::stats::Adaptation>,
    /// Clusters lost and back (started again, or their link down past the deadline).
    pub cluster_events: Vec<hmw_core::stats::ClusterEvent>,
    /// A run resumed from its journal: the tasks gathered before, and the seconds from the
    /// first run's clock start to this one's (the runs before it, the gaps between them).
    pub resumed: Option<(u64, f64)>,
}

impl ObservedCluster {
    /// The rate over each interval between successive samples.
    pub fn rates(&self) -> Vec<RateStep> {
        rate_steps(&self.done)
    }

    /// Tasks the cluster delivered in the whole run.
    pub fn tasks_done(&self) -> u64 {
        self.done.last().map_or(0, |&(_, d)| d)
    }
}

impl Observed {
    /// The timeline of a run from its statistics. Samples after the end (none in practice)
    /// and out-of-order samples are left out.
    pub fn from_stats(stats: &RunStats) -> Observed {
        let wall_s = stats.wall_s.max(0.0);
        let mut samples: Vec<_> = stats
            .progress
            .iter()
            .filter(|s| s.t_s > 0.0 && s.t_s < wall_s)
            .collect();
        samples.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        samples.dedup_by(|a, b| a.t_s == b.t_s);

        let mut names: Vec<(String, u64)> = Vec::new();
        let main_has_workers =
            stats.cluster.workers > 0 || stats.cluster.tasks_done > 0 || stats.clusters.is_empty();
        if main_has_workers {
            names.push((stats.name.clone(), stats.cluster.tasks_done));
        }
        for report in &stats.clusters {
            names.push((report.name.clone(), report.tasks_done));
        }
        let single = names.len() == 1;

        let clusters = names
            .iter()
            .map(|(name, final_done)| {
                let mut done = vec![(0.0, 0)];
                for sample in &samples {
                    let count = if single && sample.clusters.is_empty() {
                        Some(sample.tasks_done)
                    } else {
                        sample
                            .clusters
                            .iter()
                            .find(|c| &c.name == name)
                            .map(|c| c.tasks_done)
                    };
                    if let Some(count) = count {
                        done.push((sample.t_s, count));
                    }
                }
                done.push((wall_s, *final_done));
                let report = stats.clusters.iter().find(|r| &r.name == name);
                // The outage records came with the master's start time: statistics with it
                // have them for every link (an empty list is a link that never went down).
                let (outages, outages_recorded) =
                    match (stats.started_unix_s, report.and_then(|r| r.link.as_ref())) {
                        (Some(started), Some(link)) => {
                            (downtimes(&link.outages, started, wall_s), true)
                        }
                        _ => (Vec::new(), false),
                    };
                ObservedCluster {
                    name: name.clone(),
                    done: strictly_increasing_times(done),
                    link: report.and_then(|r| r.link.clone()),
                    lost: report.is_some_and(|r| r.lost),
                    workers: match report {
                        Some(r) => r.stats.as_deref().map(WorkersSummary::of),
                        None => Some(WorkersSummary::of(stats)),
                    },
                    outages,
                    outages_recorded,
                }
            })
            .collect();

        let mut total = vec![(0.0, 0)];
        total.extend(samples.iter().map(|s| (s.t_s, s.tasks_done)));
        total.push((wall_s, stats.tasks));
        Observed {
            name: stats.name.clone(),
            started_unix_s: stats.started_unix_s,
            wall_s,
            tasks: stats.tasks,
            clusters,
            total: strictly_increasing_times(total),
            adaptations: stats.adaptations.clone(),
            cluster_events: stats.cluster_events.clone(),
            resumed: stats.journal.as_ref().and_then(|j| {
                let (first, last) = (j.started_unix_s.first()?, j.started_unix_s.last()?);
                (j.resumed_tasks > 0).then_some((j.resumed_tasks, last - first))
            }),
        }
    }

    /// The whole run's rate over each interval.
    pub fn total_rates(&self) -> Vec<RateStep> {
        rate_steps(&self.total)
    }

    /// Stretches where one cluster delivered nothing while another delivered: between a
    /// cluster's first and last results (a stall: an outage, or a starved cluster), and after
    /// the last result of a cluster declared lost. Startup (before the first result) and the
    /// end of a cluster that simply finished are not silences. Empty with a single cluster.
    pub fn silences(&self) -> Vec<Silence> {
        if self.clusters.len() < 2 {
            return Vec::new();
        }
        let rates: Vec<Vec<RateStep>> = self.clusters.iter().map(|c| c.rates()).collect();
        let mut silences = Vec::new();
        for (index, cluster) in self.clusters.iter().enumerate() {
            let final_done = cluster.tasks_done();
            let others_deliver = |from: f64, to: f64| {
                rates.iter().enumerate().any(|(other, steps)| {
                    other != index
                        && steps
                            .iter()
                            .any(|s| s.tasks_per_s > 0.0 && s.from_s < to && s.to_s > from)
                })
            };
            let mut open: Option<Silence> = None;
            for (step, window) in rates[index].iter().zip(cluster.done.windows(2)) {
                let (before, after) = (window[0].1, window[1].1);
                let kind = if before > 0 && after < final_done {
                    Some(SilenceKind::Stalled)
                } else if cluster.lost && before > 0 && before == final_done {
                    Some(SilenceKind::Lost)
                } else {
                    None
                };
                let silent = step.tasks_per_s == 0.0
                    && kind.is_some()
                    && others_deliver(step.from_s, step.to_s);
                match (&mut open, silent, kind) {
                    (Some(s), true, Some(kind)) if s.kind == kind => s.to_s = step.to_s,
                    (_, true, Some(kind)) => {
                        silences.extend(open.take());
                        open = Some(Silence {
                            cluster: cluster.name.clone(),
                            from_s: step.from_s,
                            to_s: step.to_s,
                            kind,
                        });
                    }
                    _ => silences.extend(open.take()),
                }
            }
            silences.extend(open);
        }
        silences
    }

    /// The silences of the clusters whose link outages are not recorded (statistics from
    /// before the records, or a cluster without a link summary): the chart's fallback for
    /// outages. A cluster whose outages are recorded shows those instead — none, when its
    /// link never went down: a silence then was no outage.
    pub fn inferred_silences(&self) -> Vec<Silence> {
        self.silences()
            .into_iter()
            .filter(|s| {
                self.clusters
                    .iter()
                    .find(|c| c.name == s.cluster)
                    .is_none_or(|c| !c.outages_recorded)
            })
            .collect()
    }

    /// One line per cluster: its workers' busy share and, for a cluster behind a
    /// communication manager, its link as the main cluster's CM saw it (averages over the
    /// link's life, not its capacity).
    pub fn details_text(&self) -> String {
        let mut out = String::new();
        for c in &self.clusters {
            let mut line = format!("{}:", c.name);
            match &c.workers {
                Some(w) => line.push_str(&format!(
                    " {} workers busy {:.1} % of {:.3} s, {} tasks discharged",
                    w.workers,
                    100.0 * w.busy_share,
                    w.wall_s,
                    w.discharged
                )),
                None => line.push_str(" no statistics from its sub-master"),
            }
            if let Some(link) = &c.link {
                line.push_str(&format!(
                    "; link: results in {:.3} MB ({:.3} MB/s), tasks out {:.3} MB ({:.3} MB/s), \
                     {} disconnections, {:.1} s down, {} blocks retransmitted",
                    link.bytes_received as f64 / 1e6,
                    link.recv_bytes_per_s / 1e6,
                    link.bytes_sent as f64 / 1e6,
                    link.send_bytes_per_s / 1e6,
                    link.disconnections,
                    link.disconnected_s,
                    link.blocks_retransmitted,
                ));
            }
            if !c.outages.is_empty() {
                let spans: Vec<String> = c
                    .outages
                    .iter()
                    .map(|d| {
                        if d.open {
                            format!("{:.1} s to the end", d.from_s)
                        } else {
                            format!("{:.1}-{:.1} s", d.from_s, d.to_s)
                        }
                    })
                    .collect();
                line.push_str(&format!("; link down {}", spans.join(", ")));
            }
            if c.lost {
                line.push_str("; LOST");
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// The largest rate of any cluster or of the whole run over one interval.
    pub fn peak_rate(&self) -> f64 {
        self.clusters
            .iter()
            .flat_map(|c| c.rates())
            .chain(self.total_rates())
            .map(|s| s.tasks_per_s)
            .fold(0.0, f64::max)
    }
}

/// Keep the first of points sharing a time (the end point replaces a sample taken at the very
/// end) and any count that goes down (never in a well-formed file) clamped to the previous.
fn strictly_increasing_times(points: Vec<(f64, u64)>) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = Vec::with_capacity(points.len());
    for (t, d) in points {
        match out.last_mut() {
            Some(last) if t <= last.0 => {
                // Same instant: the later figure (the run's final count) wins.
                last.1 = last.1.max(d);
            }
            Some(last) => {
                let d = d.max(last.1);
                out.push((t, d));
            }
            None => out.push((t, d)),
        }
    }
    out
}

/// The rate over each interval between successive `(seconds, tasks done)` points.
pub fn rate_steps(done: &[(f64, u64)]) -> Vec<RateStep> {
    done.windows(2)
        .map(|w| {
            let ((t0, d0), (t1, d1)) = (w[0], w[1]);
            RateStep {
                from_s: t0,
                to_s: t1,
                tasks_per_s: (d1 - d0) as f64 / (t1 - t0),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hmw_core::stats::{ClusterEstimate, ClusterReport, ClusterStats, ProgressSample};

    fn sample(t_s: f64, clusters: &[(&str, u64)]) -> ProgressSample {
        ProgressSample {
            t_s,
            tasks_done: clusters.iter().map(|c| c.1).sum(),
            tasks_per_s: 0.0,
            eta_s: None,
            predicted_total_s: None,
            predicted_total_interval_s: None,
            predicted_efficiency: None,
            clusters: clusters
                .iter()
                .map(|&(name, tasks_done)| ClusterEstimate {
                    name: name.into(),
                    tasks_done,
                    tasks_per_s: 0.0,
                    ops_per_s: 0.0,
                    ..Default::default()
                })
                .collect(),
        }
    }

    /// Two clusters, 1 s samples: `main` steady at 10 tasks/s; `spain` starts after 1 s, is
    /// silent from 3 s to 5 s (its link had one 2 s disconnection), and ends at 6 s.
    pub(crate) fn two_cluster_stats() -> RunStats {
        let progress = vec![
            sample(1.0, &[("main", 10), ("spain", 0)]),
            sample(2.0, &[("main", 20), ("spain", 5)]),
            sample(3.0, &[("main", 30), ("spain", 10)]),
            sample(4.0, &[("main", 40), ("spain", 10)]),
            sample(5.0, &[("main", 50), ("spain", 10)]),
            sample(6.0, &[("main", 60), ("spain", 15)]),
        ];
        RunStats {
            name: "main".into(),
            wall_s: 6.5,
            tasks: 80,
            cluster: ClusterStats {
                workers: 2,
                tasks_done: 65,
                ..Default::default()
            },
            clusters: vec![ClusterReport {
                name: "spain".into(),
                cm_rank: 3,
                tasks_done: 15,
                link: Some(LinkSummary {
                    disconnections: 1,
                    disconnected_s: 2.0,
                    ..Default::default()
                }),
                ..Default::default()
            }],
            progress,
            ..Default::default()
        }
    }

    #[test]
    fn timeline_per_cluster_and_rates() {
        let observed = Observed::from_stats(&two_cluster_stats());
        assert_eq!(observed.clusters.len(), 2);
        let main = &observed.clusters[0];
        assert_eq!(main.done.first(), Some(&(0.0, 0)));
        assert_eq!(main.done.last(), Some(&(6.5, 65)));
        let rates = main.rates();
        assert_eq!(rates.len(), 7);
        assert_eq!(rates[0].tasks_per_s, 10.0);
        assert_eq!(rates[6].tasks_per_s, 10.0); // 5 tasks in the last half second
        let spain = observed.clusters[1].rates();
        assert_eq!(
            spain.iter().map(|s| s.tasks_per_s).collect::<Vec<_>>(),
            [0.0, 5.0, 5.0, 0.0, 0.0, 5.0, 0.0]
        );
        assert_eq!(observed.total.last(), Some(&(6.5, 80)));
        assert_eq!(observed.peak_rate(), 15.0);
    }

    #[test]
    fn silences_are_stalls_between_first_and_last_results() {
        let observed = Observed::from_stats(&two_cluster_stats());
        // Not the startup (0-1 s) nor after the last result (6-6.5 s): only 3-5 s.
        assert_eq!(
            observed.silences(),
            [Silence {
                cluster: "spain".into(),
                from_s: 3.0,
                to_s: 5.0,
                kind: SilenceKind::Stalled
            }]
        );
    }

    #[test]
    fn a_lost_cluster_is_silent_from_its_last_result() {
        let mut stats = two_cluster_stats();
        stats.clusters[0].lost = true;
        stats.clusters[0].tasks_done = 10;
        stats.cluster.tasks_done = 70;
        for s in &mut stats.progress {
            s.clusters[1].tasks_done = s.clusters[1].tasks_done.min(10);
        }
        let silences = Observed::from_stats(&stats).silences();
        assert_eq!(silences.len(), 1);
        assert_eq!(silences[0].kind, SilenceKind::Lost);
        assert_eq!((silences[0].from_s, silences[0].to_s), (3.0, 6.5));
    }

    #[test]
    fn one_cluster_uses_the_run_totals() {
        let stats = RunStats {
            name: "local".into(),
            wall_s: 2.0,
            tasks: 30,
            cluster: ClusterStats {
                workers: 3,
                tasks_done: 30,
                ..Default::default()
            },
            progress: vec![sample(1.0, &[]), sample(2.0, &[])],
            ..Default::default()
        };
        let mut stats = stats;
        stats.progress[0].tasks_done = 14;
        stats.progress[1].tasks_done = 29; // taken at the very end: the final count wins
        let observed = Observed::from_stats(&stats);
        assert_eq!(observed.clusters.len(), 1);
        assert_eq!(observed.clusters[0].done, [(0.0, 0), (1.0, 14), (2.0, 30)]);
        assert!(observed.silences().is_empty());
        assert_eq!(
            observed.details_text(),
            "local: 3 workers busy 0.0 % of 2.000 s, 0 tasks discharged\n"
        );
    }

    #[test]
    fn outages_in_run_time_clipped_to_the_run() {
        let at = |start: f64, end: Option<f64>| Outage {
            start_unix_s: 1000.0 + start,
            end_unix_s: end.map(|e| 1000.0 + e),
        };
        let spans = downtimes(
            &[
                at(-5.0, Some(-1.0)), // before the clock started: left out
                at(-1.0, Some(2.0)),  // clipped at 0
                at(3.0, Some(5.0)),
                at(6.0, Some(9.0)), // past the end: clipped, and still down then
                at(6.25, None),     // never came back
            ],
            1000.0,
            6.5,
        );
        let span = |from_s, to_s, open| Downtime { from_s, to_s, open };
        assert_eq!(
            spans,
            [
                span(0.0, 2.0, false),
                span(3.0, 5.0, false),
                span(6.0, 6.5, true),
                span(6.25, 6.5, true),
            ]
        );
    }

    #[test]
    fn recorded_outages_replace_the_inferred_silences() {
        let mut stats = two_cluster_stats();
        assert_eq!(Observed::from_stats(&stats).inferred_silences().len(), 1);
        stats.started_unix_s = Some(1.7e9);
        stats.clusters[0].link.as_mut().unwrap().outages = vec![Outage {
            start_unix_s: 1.7e9 + 2.6,
            end_unix_s: Some(1.7e9 + 4.6),
        }];
        let observed = Observed::from_stats(&stats);
        let spain = &observed.clusters[1];
        assert_eq!(spain.outages.len(), 1);
        assert!((spain.outages[0].from_s - 2.6).abs() < 1e-6, "{spain:?}");
        assert!((spain.outages[0].to_s - 4.6).abs() < 1e-6, "{spain:?}");
        assert!(observed.inferred_silences().is_empty());
        // Recorded, and none: the link never went down, so the silence is no outage and
        // nothing is inferred.
        stats.clusters[0].link.as_mut().unwrap().outages.clear();
        let observed = Observed::from_stats(&stats);
        assert!(observed.clusters[1].outages_recorded);
        assert!(observed.clusters[1].outages.is_empty());
        assert_eq!(observed.silences().len(), 1);
        assert!(observed.inferred_silences().is_empty());
        // Still inferred, for statistics without the master's start time (no records).
        stats.started_unix_s = None;
        let observed = Observed::from_stats(&stats);
        assert!(!observed.clusters[1].outages_recorded);
        assert!(observed.clusters[1].outages.is_empty());
        assert_eq!(observed.inferred_silences().len(), 1);
    }

    #[test]
    fn link_lines() {
        let text = Observed::from_stats(&two_cluster_stats()).details_text();
        assert_eq!(
            text,
            "main: 2 workers busy 0.0 % of 6.500 s, 0 tasks discharged\n\
             spain: no statistics from its sub-master; link: results in 0.000 MB (0.000 MB/s), \
             tasks out 0.000 MB (0.000 MB/s), 1 disconnections, 2.0 s down, 0 blocks \
             retransmitted\n"
        );
    }
}
