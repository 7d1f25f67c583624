//! The live feed's record ([`crate::live_feed`]): the progress line just made, with what the
//! master holds of each worker and each cluster behind it.

use super::state::{Kind, MasterCore};
use crate::live_feed::{LinkedLive, LiveRecord, WorkerLive};
use crate::roles::task_source::TaskSource;

impl<S: TaskSource> MasterCore<S> {
    /// The live feed's record of the last progress line, with the re-planning decisions from
    /// the `adaptations_from`-th on; none before the first progress line.
    pub fn live_record(&self, adaptations_from: usize) -> Option<LiveRecord> {
        let sample = self.progress.last()?.clone();
        let mut workers = Vec::new();
        let mut linked = Vec::new();
        for (rank, tally) in self.tallies.iter() {
            let held = tally.outstanding.len() as u64;
            match &tally.kind {
                Kind::Worker => workers.push(WorkerLive {
                    rank,
                    host: tally.stats.host.clone(),
                    tasks_done: tally.counts.tasks_done,
                    held,
                    busy_s: tally.counts.busy_s,
                    tasks_computed: tally.counts.tasks_computed,
                    lost: tally.gone,
                }),
                Kind::Cm { name, workers, .. } => linked.push(LinkedLive {
                    name: name.clone(),
                    cm_rank: rank,
                    workers: *workers,
                    tasks_done: tally.counts.tasks_done,
                    held,
                    lost: tally.gone,
                    dropped: tally.dropped,
                    rejoins: tally.rejoins,
                    link: tally.link,
                }),
            }
        }
        Some(LiveRecord {
            cluster: self.name.clone(),
            started_unix_s: self.started_unix_s,
            total_tasks: self.source.task_count(),
            sample,
            workers,
            linked,
            adaptations: self
                .adaptations
                .get(adaptations_from..)
                .unwrap_or_default()
                .to_vec(),
        })
    }

    /// The re-planning decisions made so far.
    pub fn adaptations_made(&self) -> usize {
        self.adaptations.len()
    }
}
