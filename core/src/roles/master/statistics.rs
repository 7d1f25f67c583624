//! The run's statistics, per worker and per cluster behind a CM.

use super::state::{Kind, MasterCore};
use crate::roles::{iterations::IterationTracker, task_source::TaskSource};
use crate::stats::{ClusterReport, ClusterStats, RunStats};

impl<S: TaskSource> MasterCore<S> {
    pub(super) fn statistics(&mut self) -> RunStats {
        let wall = self.wall;
        let total = self.gathered.max(1) as f64;
        let mut workers = Vec::new();
        let mut clusters = Vec::new();
        for tally in self.tallies.values_mut() {
            // Copies still out when the run ended were computed for nothing.
            tally.stats.discharged += tally.outstanding.len() as u64;
            tally.counts.copy_into(&mut tally.stats);
            tally.stats.derive(wall);
            match &tally.kind {
                Kind::Worker => workers.push(tally.stats.clone()),
                Kind::Cm { name, .. } => {
                    // The CM's report carries its link and the far cluster's statistics.
                    let report = tally.report.take().unwrap_or_default();
                    clusters.push(ClusterReport {
                        name: name.clone(),
                        cm_rank: tally.stats.rank,
                        tasks_done: tally.stats.tasks_done,
                        discharged: tally.stats.discharged,
                        share: tally.stats.tasks_done as f64 / total,
                        lost: tally.gone,
                        taken_back: tally.taken_back,
                        rejoins: tally.rejoins,
                        tasks_done_after_rejoin: if tally.rejoins > 0 {
                            tally.stats.tasks_done - tally.done_at_rejoin
                        } else {
                            0
                        },
                        ..*report
                    })
                }
            }
        }
        let (iterations, tuner) = self
            .iterations
            .as_ref()
            .map(IterationTracker::report)
            .unwrap_or_default();
        RunStats {
            name: self.name.clone(),
            started_unix_s: self.started_unix_s,
            wall_s: wall.as_secs_f64(),
            tasks: self.gathered,
            cluster: ClusterStats::from_workers(&workers, wall, self.local_operations),
            workers,
            clusters,
            reassigned: self.reassigned,
            redivided: self.redivided,
            tail_copies: self.tail_copies,
            links_up_s: self.links_up.map(|d| d.as_secs_f64()),
            join_s: self.source.join_s(),
            progress: std::mem::take(&mut self.progress),
            placement: Vec::new(),
            iterations,
            tuner,
            adaptations: std::mem::take(&mut self.adaptations),
            parts_per_task: self.source.parts_per_task(),
            master_cpu_s: None,
            result_gaps: (self.result_gaps.count > 0).then_some(self.result_gaps),
            journal: None,
            cluster_events: std::mem::take(&mut self.cluster_events),
        }
    }
}
