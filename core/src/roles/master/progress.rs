//! The live prediction's progress lines, and re-planning between clusters.

use std::time::Duration;

use super::state::{local_under_way_s, under_way_s, Kind, MasterCore, Phase};
use crate::roles::{output::Output, task_source::TaskSource};
use crate::{
    adapt::{Action, ClusterSample, Decision, Presence, Sample},
    live::{self, ClusterWindow},
    protocol::{encode, ToWorker},
    stats::{Adaptation, ProgressSample},
};

impl<S: TaskSource> MasterCore<S> {
    /// The progress line, with the live prediction over the interval of `window_s` seconds
    /// that just ended.
    pub(super) fn progress(&mut self, elapsed: Duration, window_s: f64) -> ProgressSample {
        let mut local = ClusterWindow {
            name: self.name.clone(),
            local: true,
            workers: Some(0),
            ..Default::default()
        };
        let mut clusters = Vec::new();
        // Each cluster's busy share since its first result (107), beside `clusters`.
        let mut shares = Vec::new();
        let now = self.now;
        for tally in self.tallies.values_mut() {
            tally.last_window = std::mem::take(&mut tally.window);
            let w = tally.last_window;
            match &tally.kind {
                Kind::Worker => {
                    local.workers = local.workers.map(|n| n + 1);
                    local.tasks_done += tally.counts.tasks_done;
                    local.window_tasks += w.tasks;
                    local.window_operations += w.operations;
                    local.window_busy_s += w.busy_s;
                    local.window_computed += w.computed;
                    local.window_computed_operations += w.computed_operations;
                }
                Kind::Cm { name, workers, .. } if !tally.gone => {
                    shares.push(tally.busy.share(
                        now,
                        workers.unwrap_or(0),
                        under_way_s(tally, now),
                    ));
                    clusters.push(ClusterWindow {
                        name: name.clone(),
                        local: false,
                        workers: *workers,
                        tasks_done: tally.counts.tasks_done,
                        window_tasks: w.tasks,
                        window_operations: w.operations,
                        window_busy_s: w.busy_s,
                        window_computed: w.computed,
                        window_computed_operations: w.computed_operations,
                        link: tally.link,
                        steady_ops_per_s: None,
                        steady_task_s: None,
                    })
                }
                Kind::Cm { .. } => {}
            }
        }
        if let Some(workers) = local.workers.filter(|&w| w > 0) {
            shares.insert(
                0,
                self.local_busy
                    .share(now, workers, local_under_way_s(&self.tallies, now)),
            );
            clusters.insert(0, local);
        }
        // The balance's rate of each cluster: its steady performance (107), its available
        // performance (3) over every result so far (its workers' basic operations per busy
        // second times their number) times the share of their time they were busy since its
        // first result (all of it until a second result). Its end time: their busy seconds
        // per task.
        for (cluster, share) in clusters.iter_mut().zip(shares) {
            let rate = self.estimator.cluster(&cluster.name);
            cluster.steady_ops_per_s = cluster.workers.zip(rate).and_then(|(workers, rate)| {
                Some(workers as f64 * rate.per_busy_s()? * share.unwrap_or(1.0))
            });
            cluster.steady_task_s = rate
                .filter(|rate| rate.tasks > 0)
                .map(|rate| rate.busy_s / rate.tasks as f64);
        }
        // Tasks still to do, from the work of those gathered and of those under way (within
        // its sampling error and any drift along the dispatch order).
        let total = self.source.task_count();
        let under_way = self.work_under_way();
        let remaining = total.and_then(|total| {
            self.estimator
                .remaining_work(total.saturating_sub(self.gathered), &under_way)
        });
        let estimate = live::estimate(
            window_s,
            elapsed.as_secs_f64(),
            &clusters,
            self.useful_operations,
            remaining.map_or(f64::NAN, |work| work.point),
        );
        // The time left scales with the work left: the interval of the work, on the time.
        let interval = remaining
            .zip(estimate.remaining_s)
            .filter(|(work, _)| work.point > 0.0)
            .map(|(work, left_s)| {
                let total = work.scaled(left_s / work.point, elapsed.as_secs_f64());
                (total.low, total.high)
            });
        let mut sample = ProgressSample::new(elapsed, self.gathered, total, estimate);
        sample.predicted_total_interval_s = interval;
        sample
    }

    /// The basic operations each task under way has done so far: how long it has run times its
    /// worker's rate (for a cluster behind a CM, its workers' mean rate), where one is known.
    /// A cluster whose link is down says nothing of its tasks' progress: it is left out.
    pub(super) fn work_under_way(&self) -> Vec<f64> {
        let mut done = Vec::new();
        for (rank, tally) in self.tallies.iter() {
            if tally.gone || tally.link.is_some_and(|link| !link.connected) {
                continue;
            }
            let rate = match &tally.kind {
                Kind::Worker => self.estimator.worker(rank),
                Kind::Cm { name, .. } => self.estimator.cluster(name),
            };
            let Some(per_s) = rate.and_then(|r| r.per_busy_s()) else {
                continue;
            };
            done.extend(
                tally
                    .under_way
                    .ages(self.now)
                    .map(|age| age.as_secs_f64() * per_s),
            );
        }
        done
    }

    /// Apply a re-planning decision ([`crate::adapt`]) at time `now` to the cluster whose CM
    /// is rank `decision.rank`, then serve whoever may be served. A credit or `nt` holds
    /// from the next batch on; a dropped cluster's tasks go back (its late results are
    /// gathered or discharged as a lost cluster's) and the room it offers is kept for its
    /// re-admission. No task is lost or gathered twice whatever the decisions and their
    /// order; a decision for a rank that is not a CM is ignored.
    pub fn adapt(&mut self, now: Duration, decision: &Decision, out: &mut Vec<Output>) {
        let rank = decision.rank;
        let Some(tally) = self.tallies.get_mut(&rank) else {
            return;
        };
        let Kind::Cm { nt, credit, .. } = &mut tally.kind else {
            return;
        };
        match decision.action {
            Action::Credit(tasks) => *credit = Some(tasks.max(1)),
            Action::Nt(tasks) => *nt = tasks.max(1),
            Action::Nr(results) => out.push(Output::Send {
                to: rank,
                bytes: encode(&ToWorker::Join(results.max(1) as u32)),
            }),
            Action::Drop if !tally.dropped => {
                tally.dropped = true;
                tally.parked_room = self.waiting.requests(rank) as u32;
                self.take_back(rank);
            }
            Action::Readmit if tally.dropped => {
                tally.dropped = false;
                let room = std::mem::take(&mut tally.parked_room);
                self.request(rank, room);
            }
            Action::Drop | Action::Readmit => {}
        }
        // A credit raised or a rank re-admitted may be served now.
        self.waiting.restore(rank);
        self.adaptations.push(Adaptation {
            t_s: now.saturating_sub(self.started_at).as_secs_f64(),
            cluster: decision.cluster.clone(),
            action: decision.action.to_string(),
            reason: decision.reason.clone(),
        });
        if self.phase == Phase::Running && !self.source.stopped() {
            self.dispatch(out);
        }
    }

    /// The decisions of re-planning over the progress `sample` just taken, if it is on.
    pub(super) fn replan(&mut self, sample: &ProgressSample) -> Vec<Decision> {
        let Some(adapter) = &mut self.adapter else {
            return Vec::new();
        };
        let per_task = self.useful_operations / self.gathered.max(1) as f64;
        let mut clusters = Vec::new();
        for (rank, tally) in self.tallies.iter() {
            let Kind::Cm {
                name, nt, workers, ..
            } = &tally.kind
            else {
                continue;
            };
            // Lost clusters are not in the live figures.
            let estimate = sample.clusters.iter().find(|c| &c.name == name);
            let window = &tally.last_window;
            clusters.push(ClusterSample {
                rank,
                name: name.clone(),
                presence: match (estimate, tally.gone, tally.dropped) {
                    (None, _, _) | (_, true, _) => Presence::Lost,
                    (_, false, true) => Presence::Dropped,
                    (_, false, false) => Presence::Active,
                },
                tasks_done: tally.counts.tasks_done,
                tasks_per_s: estimate.map_or(0.0, |e| e.tasks_per_s),
                capacity_tasks_per_s: estimate
                    .and_then(|e| e.available_ops_per_s)
                    .filter(|_| per_task > 0.0)
                    .map(|ops| ops / per_task),
                link_bound: estimate.is_some_and(|e| e.bottleneck.as_deref() == Some("wan_in")),
                results_bound: estimate.is_some_and(|e| e.bottleneck.as_deref() == Some("wan_out")),
                nr: estimate
                    .filter(|_| window.messages > 0)
                    .map(|_| window.computed as f64 / window.messages as f64),
                held: estimate.map_or(0, |_| tally.outstanding.len() as u64),
                nt: *nt,
                workers: *workers,
                rtt_s: tally.link.map_or(0.0, |link| link.rtt_s),
            });
        }
        let local_tasks_per_s = sample
            .clusters
            .first()
            .filter(|c| c.name == self.name)
            .map_or(0.0, |local| local.tasks_per_s);
        adapter.decide(&Sample {
            now_s: sample.t_s,
            remaining_tasks: self
                .source
                .task_count()
                .map(|total| total.saturating_sub(self.gathered)),
            local_tasks_per_s,
            clusters,
        })
    }
}
