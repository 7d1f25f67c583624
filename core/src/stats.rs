//! Run statistics: the progress line, the end summary and their JSON form, over the records
//! of [`crate::protocol::report`] (which sub-masters send up the tree).

use std::{fmt::Write as _, time::Duration};

use crate::live::Estimate;
pub use crate::protocol::report::{
    sample_scv, Adaptation, ClusterEstimate, ClusterEvent, ClusterReport, ClusterStats,
    JournalStats, LinkSummary, Outage, ProgressSample, RankPlacement, ResultGaps, RunStats,
    WorkerStats,
};

impl WorkerStats {
    /// Fill the derived figures from the counts, given the run's wall time.
    pub fn derive(&mut self, wall: Duration) {
        let computed = self.tasks_computed as f64;
        (self.tasks_per_s, self.ops_per_s) = if self.busy_s > 0.0 {
            (computed / self.busy_s, self.operations / self.busy_s)
        } else {
            (0.0, 0.0)
        };
        self.efficiency = ratio(self.busy_s, wall.as_secs_f64());
    }
}

impl ClusterStats {
    /// Sum up the workers of a cluster over a run of `wall` seconds doing `operations`.
    pub fn from_workers(workers: &[WorkerStats], wall: Duration, useful_operations: f64) -> Self {
        let wall_s = wall.as_secs_f64();
        let tasks_done = workers.iter().map(|w| w.tasks_done).sum();
        ClusterStats {
            workers: workers.len(),
            tasks_done,
            discharged: workers.iter().map(|w| w.discharged).sum(),
            tasks_per_s: ratio(tasks_done as f64, wall_s),
            ops_per_s: ratio(useful_operations, wall_s),
            available_tasks_per_s: workers.iter().map(|w| w.tasks_per_s).sum(),
            efficiency: ratio(
                workers.iter().map(|w| w.efficiency).sum(),
                workers.len() as f64,
            ),
        }
    }
}

impl ProgressSample {
    /// The progress after `elapsed` with `done` of `total` tasks gathered, with the live
    /// prediction.
    pub fn new(elapsed: Duration, done: u64, total: Option<u64>, live: Estimate) -> Self {
        let t_s = elapsed.as_secs_f64();
        let tasks_per_s = ratio(done as f64, t_s);
        let average_eta = total
            .filter(|_| tasks_per_s > 0.0)
            .map(|total| total.saturating_sub(done) as f64 / tasks_per_s);
        ProgressSample {
            t_s,
            tasks_done: done,
            tasks_per_s,
            eta_s: live.remaining_s.or(average_eta),
            predicted_total_s: live.remaining_s.map(|r| t_s + r),
            predicted_total_interval_s: None,
            predicted_efficiency: live.efficiency,
            clusters: live.clusters,
        }
    }

    /// The human progress line.
    pub fn line(&self, total: Option<u64>) -> String {
        let mut line = format!("[{:>8.1} s] {} ", self.t_s, self.tasks_done);
        if let Some(total) = total {
            let _ = write!(
                line,
                "/ {total} tasks ({:.1}%)",
                100.0 * ratio(self.tasks_done as f64, total as f64)
            );
        } else {
            line.push_str("tasks");
        }
        let _ = write!(line, ", {:.2} tasks/s", self.tasks_per_s);
        if let Some(eta) = self.eta_s {
            let _ = write!(line, ", ETA {}", span(eta));
        }
        if let Some(total) = self.predicted_total_s {
            let _ = write!(line, " (total {}", span(total));
            if let Some((low, high)) = self.predicted_total_interval_s {
                let _ = write!(line, " in [{}, {}]", span(low), span(high));
            }
            if let Some(efficiency) = self.predicted_efficiency {
                let _ = write!(line, ", efficiency {efficiency:.2}");
            }
            line.push(')');
        }
        for c in &self.clusters {
            let _ = write!(
                line,
                " | {} {} ({:.2}/s, {}",
                c.name,
                c.tasks_done,
                c.tasks_per_s,
                c.bottleneck.as_deref().unwrap_or("-")
            );
            if let Some(left) = c.remaining_tasks {
                let _ = write!(line, ", {left:.0} left");
            }
            line.push(')');
        }
        line
    }
}

impl RunStats {
    /// The end summary: one row per worker, then the cluster.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>5}  {:<16} {:>8} {:>10} {:>10} {:>11} {:>12} {:>6}",
            "rank", "host", "tasks", "discharged", "busy_s", "tasks/s", "ops/s", "eff"
        );
        for w in &self.workers {
            let _ = writeln!(
                out,
                "{:>5}  {:<16} {:>8} {:>10} {:>10.3} {:>11.3} {:>12.4e} {:>5.1}%",
                w.rank,
                w.host,
                w.tasks_done,
                w.discharged,
                w.busy_s,
                w.tasks_per_s,
                w.ops_per_s,
                100.0 * w.efficiency
            );
        }
        let c = &self.cluster;
        let _ = writeln!(
            out,
            "cluster {}: {} workers, {} tasks ({} discharged) in {:.3} s = {}: {:.3} tasks/s, \
             {:.4e} ops/s; available {:.3} tasks/s; mean efficiency {:.1}%",
            self.name,
            c.workers,
            c.tasks_done,
            c.discharged,
            self.wall_s,
            hms(self.wall_s),
            c.tasks_per_s,
            c.ops_per_s,
            c.available_tasks_per_s,
            100.0 * c.efficiency
        );
        if !self.clusters.is_empty() {
            let _ = writeln!(
                out,
                "  its share: {:.1}% of the run's {} tasks",
                100.0 * ratio(c.tasks_done as f64, self.tasks as f64),
                self.tasks
            );
        }
        if let Some(up) = self.links_up_s {
            let _ = writeln!(out, "  every link to another cluster up after {up:.2} s");
        }
        cluster_lines(&mut out, &self.clusters, 0);
        if self.reassigned > 0 {
            let _ = write!(
                out,
                "reassigned {} tasks from lost clusters",
                self.reassigned
            );
            if self.redivided > 0 {
                let _ = write!(out, " ({} of them divided again)", self.redivided);
            }
            let _ = writeln!(out);
        }
        if self.tail_copies > 0 {
            let _ = writeln!(
                out,
                "{} copies of tail tasks handed to idle workers and clusters (reassign_last_task)",
                self.tail_copies
            );
        }
        out
    }
}

/// The summary lines of the clusters behind a master, and of those behind them, indented by
/// depth.
fn cluster_lines(out: &mut String, clusters: &[ClusterReport], depth: usize) {
    let indent = "  ".repeat(depth);
    for cluster in clusters {
        let _ = write!(
            out,
            "{indent}cluster {} (through rank {}): {} tasks = {:.1}% of {}, {} discharged",
            cluster.name,
            cluster.cm_rank,
            cluster.tasks_done,
            100.0 * cluster.share,
            if depth == 0 {
                "the run"
            } else {
                "its parent's"
            },
            cluster.discharged
        );
        if cluster.lost {
            let _ = write!(out, ", LOST ({} tasks taken back)", cluster.taken_back);
        } else if cluster.rejoins > 0 {
            let _ = write!(
                out,
                ", lost {} time(s) and back ({} tasks taken back, {} done since it came back)",
                cluster.rejoins, cluster.taken_back, cluster.tasks_done_after_rejoin
            );
        }
        if let Some(stats) = &cluster.stats {
            let _ = write!(
                out,
                "; its {} workers: mean efficiency {:.1}%",
                stats.cluster.workers,
                100.0 * stats.cluster.efficiency
            );
        }
        out.push('\n');
        if let Some(link) = &cluster.link {
            if link.connections_established == 0 {
                let _ = writeln!(
                    out,
                    "{indent}  link: never connected ({} connection attempts refused)",
                    link.refused
                );
            } else {
                let _ = writeln!(
                    out,
                    "{indent}  link: out {:.0} B/s, in {:.0} B/s; {} disconnections, {:.1} s \
                     disconnected; {} blocks resent after reconnecting, {} packets lost; {} \
                     connections refused",
                    link.send_bytes_per_s,
                    link.recv_bytes_per_s,
                    link.disconnections,
                    link.disconnected_s,
                    link.blocks_retransmitted,
                    link.packets_lost,
                    link.refused
                );
            }
        }
        if cluster.task_bytes_sent < cluster.task_bytes {
            let _ = writeln!(
                out,
                "{indent}  tasks crossed the WAN as {} of {} bytes ({:.1}% left out by the \
                 application's splitter)",
                cluster.task_bytes_sent,
                cluster.task_bytes,
                100.0 * (1.0 - cluster.task_bytes_sent as f64 / cluster.task_bytes as f64)
            );
        }
        if let Some(stats) = &cluster.stats {
            cluster_lines(out, &stats.clusters, depth + 1);
        }
    }
}

/// `a / b`, or 0 when `b` is 0.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// A duration for a person: tenths of a second under ten minutes, `h:mm:ss` above.
pub fn span(seconds: f64) -> String {
    if seconds < 600.0 {
        format!("{seconds:.1} s")
    } else {
        hms(seconds)
    }
}

/// Seconds as `h:mm:ss`.
pub fn hms(seconds: f64) -> String {
    let total = seconds.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_figures() {
        let mut w = WorkerStats {
            tasks_done: 8,
            discharged: 3,
            tasks_computed: 10,
            busy_s: 5.0,
            operations: 20.0,
            ..Default::default()
        };
        w.derive(Duration::from_secs(10));
        assert_eq!((w.tasks_per_s, w.ops_per_s, w.efficiency), (2.0, 4.0, 0.5));
        let c = ClusterStats::from_workers(&[w.clone(), w], Duration::from_secs(10), 32.0);
        assert_eq!(c.tasks_done, 16);
        assert_eq!(c.discharged, 6);
        assert_eq!(c.tasks_per_s, 1.6);
        assert_eq!(c.ops_per_s, 3.2);
        assert_eq!(c.available_tasks_per_s, 4.0);
        assert_eq!(c.efficiency, 0.5);
    }

    #[test]
    fn progress_line_and_eta() {
        let p = ProgressSample::new(Duration::from_secs(10), 25, Some(100), Estimate::default());
        assert_eq!(p.tasks_per_s, 2.5);
        assert_eq!(p.eta_s, Some(30.0));
        assert_eq!(
            p.line(Some(100)),
            "[    10.0 s] 25 / 100 tasks (25.0%), 2.50 tasks/s, ETA 30.0 s"
        );
        let unknown = ProgressSample::new(Duration::ZERO, 0, None, Estimate::default());
        assert_eq!(unknown.eta_s, None);
        let cluster = |name: &str, done, bottleneck: Option<&str>| ClusterEstimate {
            name: name.into(),
            tasks_done: done,
            tasks_per_s: done as f64 / 10.0,
            ops_per_s: done as f64 / 10.0,
            bottleneck: bottleneck.map(str::to_owned),
            ..Default::default()
        };
        let two = ProgressSample::new(
            Duration::from_secs(10),
            25,
            None,
            Estimate {
                clusters: vec![
                    ClusterEstimate {
                        remaining_tasks: Some(12.4),
                        ..cluster("main", 20, Some("compute"))
                    },
                    cluster("spain", 5, None),
                ],
                remaining_s: Some(20.0),
                efficiency: Some(0.93),
            },
        );
        assert_eq!(two.eta_s, Some(20.0));
        assert_eq!(two.predicted_total_s, Some(30.0));
        assert!(
            two.line(None).ends_with(
                "(total 30.0 s, efficiency 0.93) | main 20 (2.00/s, compute, 12 left) | \
             spain 5 (0.50/s, -)"
            ),
            "{}",
            two.line(None)
        );
        let mut with_interval = two.clone();
        with_interval.predicted_total_interval_s = Some((25.0, 41.5));
        assert!(
            with_interval
                .line(None)
                .contains("(total 30.0 s in [25.0 s, 41.5 s], efficiency 0.93)"),
            "{}",
            with_interval.line(None)
        );
        assert_eq!(span(3725.0), "1:02:05");
        assert_eq!(hms(3725.0), "1:02:05");
    }
}
