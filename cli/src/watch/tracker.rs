//! The live state of a run, built from what the launcher sees: the masters' live feeds
//! ([`hmw_core::live_feed`]), the clusters' processes starting and ending, and the
//! statistics at the end. Pure: times come in as arguments, bytes go out.
//!
//! A cluster's figures come from the feed of the master that feeds it: the main master's for
//! the main cluster and the clusters behind it, a sub-master's for the clusters behind that
//! one; its own workers from its own master's feed.

use std::collections::BTreeSet;

use hmw_core::{live_feed::LiveRecord, stats::RunStats};

use crate::live_state::{
    limits::{ADAPTATIONS_KEPT, EVENTS_KEPT, HISTORY_POINTS, MAX_BYTES},
    ClusterPhase, ClusterState, Event, HistoryPoint, LinkState, LiveState, RunEnd, RunPrediction,
    RunProgress, WorkerState, FORMAT, VERSION,
};

/// What the launcher knows of a run before it starts: its clusters, the main one first, and
/// the model's prediction.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunSetup {
    pub(crate) clusters: Vec<ClusterSetup>,
    pub(crate) prediction: Option<RunPrediction>,
}

/// What the launcher knows of a cluster before it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterSetup {
    pub(crate) name: String,
    /// The cluster its link leads to (none for the main cluster, the first).
    pub(crate) parent: Option<String>,
    pub(crate) workers: usize,
    /// Its predicted steady rate (tasks/s), tasks (best, worst) and efficiency (best, worst).
    pub(crate) predicted: Option<PredictedFigures>,
}

/// A cluster's figures from the prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PredictedFigures {
    pub(crate) tasks_per_s: f64,
    pub(crate) tasks: (u64, u64),
    pub(crate) efficiency: (f64, f64),
}

/// A cluster's processes, as the launcher sees them.
#[derive(Debug, Clone, PartialEq)]
enum Process {
    NotStarted,
    Running,
    Ended { success: bool },
}

/// What the tracker keeps beside the state of each cluster.
#[derive(Debug, Clone)]
struct Followed {
    process: Process,
    /// When its own master's feed last gave a record.
    last_record_unix_s: Option<f64>,
    /// Lost, dropped and rejoins as its feeding master last said.
    lost: bool,
    dropped: bool,
    rejoins: u64,
}

/// A run's live state as it is built.
#[derive(Debug, Clone)]
pub(crate) struct Tracker {
    state: LiveState,
    followed: Vec<Followed>,
    /// Where the clusters' logs are, for the warnings.
    work: String,
    /// The warnings already logged as events.
    warned: BTreeSet<String>,
}

impl Tracker {
    /// A run named `run` set up as `setup`, launched at `now` by process `pid`, its masters'
    /// figures every `interval_s`, in the work folder `work`.
    pub(crate) fn new(
        run: &str,
        setup: RunSetup,
        interval_s: f64,
        live_figures: bool,
        work: &str,
        pid: u32,
        now: f64,
    ) -> Tracker {
        let state = LiveState {
            format: FORMAT.to_owned(),
            version: VERSION,
            run: run.to_owned(),
            launcher_pid: pid,
            launched_unix_s: now,
            updated_unix_s: now,
            started_unix_s: None,
            statistics_interval_s: interval_s,
            live_figures,
            progress: RunProgress::default(),
            prediction: setup.prediction,
            history: Vec::new(),
            clusters: setup
                .clusters
                .iter()
                .enumerate()
                .map(cluster_state)
                .collect(),
            links: setup
                .clusters
                .iter()
                .filter_map(|c| {
                    Some(LinkState {
                        cluster: c.name.clone(),
                        parent: c.parent.clone()?,
                        ..LinkState::default()
                    })
                })
                .collect(),
            adaptations: Vec::new(),
            warnings: Vec::new(),
            events: Vec::new(),
            end: None,
        };
        let followed = Followed {
            process: Process::NotStarted,
            last_record_unix_s: None,
            lost: false,
            dropped: false,
            rejoins: 0,
        };
        Tracker {
            followed: vec![followed; state.clusters.len()],
            state,
            work: work.to_owned(),
            warned: BTreeSet::new(),
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.state.clusters.iter().position(|c| c.name == name)
    }

    fn event(&mut self, now: f64, text: String) {
        self.state.events.push(Event { unix_s: now, text });
        let excess = self.state.events.len().saturating_sub(EVENTS_KEPT);
        self.state.events.drain(..excess);
    }

    /// Cluster `name`'s processes started at `now` (process `pid`).
    pub(crate) fn started(&mut self, name: &str, pid: u32, now: f64) {
        let Some(i) = self.index(name) else { return };
        let cluster = &mut self.state.clusters[i];
        cluster.starts += 1;
        cluster.exit = None;
        let again = if cluster.starts > 1 { " again" } else { "" };
        self.followed[i].process = Process::Running;
        self.event(now, format!("cluster {name} started{again} (pid {pid})"));
    }

    /// Cluster `name`'s processes ended, well or not, as `how` says.
    pub(crate) fn ended(&mut self, name: &str, success: bool, how: &str) {
        let Some(i) = self.index(name) else { return };
        if self.followed[i].process != Process::Running {
            return;
        }
        self.followed[i].process = Process::Ended { success };
        self.state.clusters[i].exit = Some(how.to_owned());
    }

    /// A record of the feed of cluster `owner`'s master, read at `now`.
    pub(crate) fn record(&mut self, owner: usize, record: LiveRecord, now: f64) {
        if owner >= self.state.clusters.len() {
            return;
        }
        self.followed[owner].last_record_unix_s = Some(now);
        let elapsed = record.sample.t_s;
        // Its own workers.
        let workers: Vec<WorkerState> = record
            .workers
            .iter()
            .map(|w| WorkerState {
                rank: w.rank,
                host: w.host.clone(),
                tasks_done: w.tasks_done,
                held: w.held,
                tasks_per_s: (w.busy_s > 0.0).then(|| w.tasks_computed as f64 / w.busy_s),
                busy_share: (elapsed > 0.0).then(|| (w.busy_s / elapsed).min(1.0)),
                lost: w.lost,
            })
            .collect();
        let own = &mut self.state.clusters[owner];
        own.held = Some(workers.iter().map(|w| w.held).sum());
        own.workers_omitted = 0;
        own.worker_list = workers;
        if own.main {
            own.in_flight = own.held;
            own.tasks_done = own.worker_list.iter().map(|w| w.tasks_done).sum();
        }
        // The clusters it feeds.
        let owner_name = own.name.clone();
        for linked in &record.linked {
            let Some(i) = self.index(&linked.name) else {
                continue;
            };
            let followed = &mut self.followed[i];
            followed.lost = linked.lost;
            followed.dropped = linked.dropped;
            followed.rejoins = linked.rejoins;
            let cluster = &mut self.state.clusters[i];
            cluster.tasks_done = linked.tasks_done;
            cluster.in_flight = Some(linked.held);
            if let (Some(link), Some(state)) = (
                linked.link,
                self.state
                    .links
                    .iter_mut()
                    .find(|l| l.cluster == linked.name),
            ) {
                *state = LinkState {
                    cluster: linked.name.clone(),
                    parent: owner_name.clone(),
                    reported: true,
                    connected: link.connected,
                    rtt_ms: link.rtt_s * 1e3,
                    out_bytes_per_s: link.send_bytes_per_s,
                    in_bytes_per_s: link.recv_bytes_per_s,
                    tasks_waiting: link.tasks_waiting,
                    reconnections: link.reconnections,
                    blocks_resent: link.blocks_resent,
                    packets_lost: link.packets_lost,
                };
            }
        }
        // The live estimates of the clusters it feeds (and its own, for the main master).
        let is_main = self.state.clusters[owner].main;
        for estimate in &record.sample.clusters {
            if estimate.name == record.cluster && !is_main {
                continue;
            }
            let name = if estimate.name == record.cluster {
                &owner_name
            } else {
                &estimate.name
            };
            let Some(i) = self.index(name) else { continue };
            let cluster = &mut self.state.clusters[i];
            cluster.tasks_per_s = Some(estimate.tasks_per_s);
            cluster.efficiency = estimate.busy_share;
            cluster.bottleneck.clone_from(&estimate.bottleneck);
            cluster.remaining_tasks = estimate.remaining_tasks;
        }
        for a in &record.adaptations {
            self.event(
                now,
                format!("re-planning: {} {} ({})", a.cluster, a.action, a.reason),
            );
        }
        self.state
            .adaptations
            .extend(record.adaptations.iter().cloned());
        let excess = self
            .state
            .adaptations
            .len()
            .saturating_sub(ADAPTATIONS_KEPT);
        self.state.adaptations.drain(..excess);
        if is_main {
            self.main_record(&record);
        }
    }

    /// The whole run's figures, from a record of the main master's feed.
    fn main_record(&mut self, record: &LiveRecord) {
        let s = &record.sample;
        self.state.started_unix_s = record.started_unix_s;
        self.state.progress = RunProgress {
            t_s: Some(s.t_s),
            tasks_done: s.tasks_done,
            tasks_total: record.total_tasks,
            tasks_per_s: s.tasks_per_s,
            predicted_total_s: s.predicted_total_s,
            predicted_low_s: s.predicted_total_interval_s.map(|(low, _)| low),
            predicted_high_s: s.predicted_total_interval_s.map(|(_, high)| high),
            predicted_efficiency: s.predicted_efficiency,
        };
        let p = &self.state.progress;
        self.state.history.push(HistoryPoint {
            t_s: s.t_s,
            tasks_done: s.tasks_done,
            predicted_total_s: p.predicted_total_s,
            predicted_low_s: p.predicted_low_s,
            predicted_high_s: p.predicted_high_s,
            clusters_done: self.state.clusters.iter().map(|c| c.tasks_done).collect(),
        });
        if self.state.history.len() > HISTORY_POINTS {
            thin(&mut self.state.history);
        }
    }

    /// The run ended at `now`, as `outcome` says (`completed`, `failed`, `interrupted`);
    /// `stats` are the main master's statistics, read from `stats_file`, when it wrote them:
    /// each cluster's tasks become those they count.
    pub(crate) fn finish(
        &mut self,
        outcome: &str,
        stats: Option<&RunStats>,
        stats_file: Option<String>,
        now: f64,
    ) {
        if let Some(stats) = stats {
            self.final_counts(stats);
            self.state.progress.tasks_done = stats.tasks;
            self.state.progress.t_s = Some(stats.wall_s);
            if self.state.started_unix_s.is_none() {
                self.state.started_unix_s = stats.started_unix_s;
            }
        }
        for (i, followed) in self.followed.iter_mut().enumerate() {
            if followed.process == Process::Running {
                // Still running at the end: the launcher stops it.
                followed.process = Process::Ended { success: false };
                self.state.clusters[i].exit = Some("stopped at the end of the run".into());
            }
        }
        // The clusters' last changes before the run's end.
        self.state(now);
        let makespan = stats.map(|s| s.wall_s);
        self.event(
            now,
            match makespan {
                Some(m) => format!("run {outcome}: makespan {m:.3} s"),
                None => format!("run {outcome}"),
            },
        );
        self.state.end = Some(RunEnd {
            outcome: outcome.to_owned(),
            unix_s: now,
            makespan_s: makespan,
            tasks: stats.map(|s| s.tasks),
            stats_file: stats.and(stats_file),
        });
    }

    /// Each cluster's tasks as the statistics count them: the main cluster's own workers', and
    /// each cluster behind a CM as its feeding master counted them, down the tree.
    fn final_counts(&mut self, stats: &RunStats) {
        if let Some(main) = self.state.clusters.iter_mut().find(|c| c.main) {
            main.tasks_done = stats.cluster.tasks_done;
            main.in_flight = Some(0);
            main.held = Some(0);
            main.remaining_tasks = Some(0.0);
        }
        let mut below: Vec<&RunStats> = vec![stats];
        while let Some(stats) = below.pop() {
            for report in &stats.clusters {
                if let Some(i) = self.index(&report.name) {
                    let cluster = &mut self.state.clusters[i];
                    cluster.tasks_done = report.tasks_done;
                    cluster.in_flight = Some(0);
                    cluster.held = Some(0);
                    cluster.remaining_tasks = Some(0.0);
                }
                below.extend(report.stats.as_deref());
            }
        }
    }

    /// The state at `now`: each cluster's phase and the warnings, worked out anew; the
    /// warnings not seen before logged as events.
    pub(crate) fn state(&mut self, now: f64) -> &LiveState {
        let mut changes = Vec::new();
        for (cluster, followed) in self.state.clusters.iter_mut().zip(&self.followed) {
            let now_in = phase(cluster, followed);
            if now_in != cluster.phase {
                let how = match (now_in, &cluster.exit) {
                    (ClusterPhase::Done | ClusterPhase::Failed, Some(exit)) => format!(" ({exit})"),
                    _ => String::new(),
                };
                changes.push(format!("cluster {}: {}{how}", cluster.name, now_in.word()));
                cluster.phase = now_in;
            }
        }
        for change in changes {
            self.event(now, change);
        }
        let warnings = self.warnings(now);
        for w in &warnings {
            if self.warned.insert(w.clone()) {
                self.event(now, format!("warning: {w}"));
            }
        }
        self.state.warnings = warnings;
        self.state.updated_unix_s = now;
        &self.state
    }

    fn warnings(&self, now: f64) -> Vec<String> {
        let mut warnings = Vec::new();
        if !self.state.live_figures {
            warnings.push(
                "no live figures: the masters run on other hosts; only the clusters' processes \
                 are followed"
                    .to_owned(),
            );
        }
        let silent_after = 3.0 * self.state.statistics_interval_s + 5.0;
        for (cluster, followed) in self.state.clusters.iter().zip(&self.followed) {
            let name = &cluster.name;
            match cluster.phase {
                ClusterPhase::Failed if self.state.end.is_none() || cluster.main => {
                    warnings.push(format!(
                        "cluster {name} failed ({}); its log: {}/{name}.log",
                        cluster.exit.as_deref().unwrap_or("ended"),
                        self.work
                    ))
                }
                ClusterPhase::Lost => warnings.push(format!(
                    "cluster {name} is lost: its tasks went to the other clusters"
                )),
                _ => {}
            }
            if followed.dropped && followed.process == Process::Running {
                warnings.push(format!("cluster {name} is dropped by re-planning"));
            }
            let silent = followed
                .last_record_unix_s
                .map(|last| now - last)
                .filter(|&s| s > silent_after);
            if let (Some(silent_s), Process::Running) = (silent, &followed.process) {
                warnings.push(format!(
                    "no figures from the master of {name} for {silent_s:.0} s (its feed: \
                     {}/{name}.live.jsonl)",
                    self.work
                ));
            }
        }
        for link in &self.state.links {
            let running = self
                .index(&link.cluster)
                .is_some_and(|i| self.followed[i].process == Process::Running);
            if link.reported && !link.connected && running && self.state.end.is_none() {
                warnings.push(format!(
                    "the link from {} to {} is down",
                    link.parent, link.cluster
                ));
            }
        }
        warnings
    }

    /// The state at `now` as the file's bytes, under [`MAX_BYTES`]: past it, the oldest half
    /// of the history and of the events go, then the per-worker rows of the largest cluster,
    /// until it fits.
    pub(crate) fn bytes(&mut self, now: f64) -> Vec<u8> {
        self.state(now);
        let mut state = self.state.clone();
        loop {
            let bytes = serde_json::to_vec(&state).expect("the live state serialises");
            if bytes.len() <= MAX_BYTES {
                return bytes;
            }
            if state.history.len() > 2 {
                thin(&mut state.history);
            } else if state.events.len() > 1 {
                state.events.drain(..state.events.len() / 2);
            } else if let Some(c) = state
                .clusters
                .iter_mut()
                .filter(|c| !c.worker_list.is_empty())
                .max_by_key(|c| c.worker_list.len())
            {
                let keep = c.worker_list.len() / 2;
                c.workers_omitted += c.worker_list.len() - keep;
                c.worker_list.truncate(keep);
            } else {
                // Nothing left to shed: the plan itself (its clusters' names) is that large.
                return bytes;
            }
        }
    }
}

/// The state of cluster `i` of `clusters` before it starts.
fn cluster_state((i, c): (usize, &ClusterSetup)) -> ClusterState {
    ClusterState {
        name: c.name.clone(),
        main: i == 0,
        parent: c.parent.clone(),
        phase: ClusterPhase::Starting,
        starts: 0,
        exit: None,
        workers: c.workers,
        tasks_done: 0,
        in_flight: None,
        held: None,
        tasks_per_s: None,
        predicted_tasks_per_s: c.predicted.map(|p| p.tasks_per_s),
        predicted_tasks_best: c.predicted.map(|p| p.tasks.0),
        predicted_tasks_worst: c.predicted.map(|p| p.tasks.1),
        remaining_tasks: None,
        efficiency: None,
        predicted_efficiency_best: c.predicted.map(|p| p.efficiency.0),
        predicted_efficiency_worst: c.predicted.map(|p| p.efficiency.1),
        bottleneck: None,
        worker_list: Vec::new(),
        workers_omitted: 0,
    }
}

/// Where a cluster is, from its processes and what its feeding master says of it.
fn phase(cluster: &ClusterState, followed: &Followed) -> ClusterPhase {
    match followed.process {
        Process::NotStarted => ClusterPhase::Starting,
        Process::Ended { .. } if followed.lost => ClusterPhase::Lost,
        Process::Ended { success: true } => ClusterPhase::Done,
        Process::Ended { success: false } => ClusterPhase::Failed,
        Process::Running if followed.lost => ClusterPhase::Lost,
        Process::Running if cluster.starts > 1 => ClusterPhase::Restarted,
        Process::Running if followed.rejoins > 0 => ClusterPhase::Rejoined,
        Process::Running
            if cluster.tasks_done > 0
                || cluster.in_flight.unwrap_or(0) > 0
                || cluster.held.unwrap_or(0) > 0 =>
        {
            ClusterPhase::Computing
        }
        Process::Running => ClusterPhase::Starting,
    }
}

/// Every other point of `history`, the last kept.
fn thin(history: &mut Vec<HistoryPoint>) {
    let last = history.pop();
    let mut i = 0;
    history.retain(|_| {
        i += 1;
        i % 2 == 1
    });
    history.extend(last);
}
