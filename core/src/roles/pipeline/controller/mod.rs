//! The controller's core, on the main cluster's first rank: the source and the sink, the
//! managers of the main cluster's replicated groups, and every decision of the run.
//!
//! It waits for every other cluster's head to say which ranks it has, then starts with the
//! mapping the configuration gives (a calibration made before the run) or calibrates every
//! node first and maps by the model. While items flow it keeps `W` of them in flight (166),
//! puts what reaches the sink back in the source's order, and reads the times that travel
//! with them: when a group's recent time passes `(1 + X) t_b` (157) it stops the source,
//! waits until every item in flight is through (drain), calibrates every node again, hands
//! out the mapping the model chooses on what it measured, waits until every rank follows it,
//! and goes on. When the last item is through it stops the nodes and heads, then the CMs,
//! the far side of each link first.
//!
//! - `items.rs`: items handed out and gathered, the sink's order;
//! - `phases.rs`: calibrations, mappings, drains, the end;
//! - `model.rs`: the pipeline model's input from the calibrations, and mappings as ranks.

mod items;
mod model;
mod phases;

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    time::Duration,
};

use super::{managers::Managers, monitor::Monitor, output::PipeOutput, routes::Routes};
use crate::{
    error::CoreError,
    pipeline::{
        config::PipelineConfig,
        stats::{PipeRole, PipelineStats, RankReport},
    },
    protocol::{
        decode,
        pipeline::{Address, Assignment, Calibration, ClusterRanks, PipeMessage},
    },
};

/// The source's items, encoded, as the controller's core pulls them.
pub trait ItemSource {
    /// The next item, or `None` when there are no more.
    fn next_item(&mut self) -> Option<Vec<u8>>;
}

/// What the controller is doing.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Waiting for every other cluster's `Hello`.
    Gathering,
    /// Waiting for these nodes' calibrations.
    Calibrating { pending: BTreeSet<Address> },
    /// Waiting for these ranks to follow the new mapping.
    Assigning { pending: BTreeSet<Address> },
    /// Items flow.
    Running,
    /// No new item until every one in flight is through.
    Draining,
    /// Waiting for the nodes' and heads' `Bye`.
    StoppingRanks { pending: BTreeSet<Address> },
    /// Stopping the CMs one after the other.
    StoppingCms {
        order: VecDeque<Address>,
        waiting: Option<Address>,
    },
    /// Every rank said `Bye`.
    Done,
}

/// What the controller starts with.
#[derive(Debug, Clone)]
pub struct ControllerSetup {
    /// The run configuration's `[pipeline]`.
    pub config: PipelineConfig,
    /// The application's stages: names and basic operations per item.
    pub stages: Vec<(String, f64)>,
    /// The controller's routes.
    pub routes: Routes,
    /// The main cluster's ranks.
    pub own: ClusterRanks,
    /// Seconds between progress lines (0: none).
    pub statistics_interval: f64,
}

/// The controller of a pipeline run.
pub struct ControllerCore<S> {
    setup: ControllerSetup,
    source: S,
    clusters: Vec<Option<ClusterRanks>>,
    managers: Managers,
    phase: Phase,
    /// The source's first item, kept to calibrate with.
    sample: Option<Vec<u8>>,
    /// An item pulled from the source and not handed out yet.
    held: Option<Vec<u8>>,
    next_seq: u64,
    source_done: bool,
    in_flight: u64,
    reorder: BTreeMap<u64, Vec<u8>>,
    delivered: u64,
    assignment: Assignment,
    /// The model's bottleneck time of the mapping, `t_b` of (157).
    bottleneck_s: f64,
    threshold: Option<f64>,
    window: u64,
    /// Items each group is watched over (176).
    detection_items: u64,
    monitor: Monitor,
    calibrations: BTreeMap<Address, Calibration>,
    /// The address of each node of the model's input, in its order.
    model_nodes: Vec<Address>,
    stats: PipelineStats,
    /// Per stage and node: items and seconds.
    stage_sums: BTreeMap<(u32, Address), (u64, f64)>,
    first_issue: Option<Duration>,
    last_delivery: Duration,
    next_progress: Option<Duration>,
    last_progress: (Duration, u64),
}

impl<S: ItemSource> ControllerCore<S> {
    /// A controller pulling items from `source`.
    pub fn new(setup: ControllerSetup, source: S) -> Self {
        let mut clusters = vec![None; setup.routes.clusters()];
        clusters[0] = Some(setup.own.clone());
        let stats = PipelineStats {
            kind: "pipeline".into(),
            stages: setup.stages.iter().map(|(n, _)| n.clone()).collect(),
            ..PipelineStats::default()
        };
        ControllerCore {
            clusters,
            managers: Managers::default(),
            phase: Phase::Gathering,
            sample: None,
            held: None,
            next_seq: 0,
            source_done: false,
            in_flight: 0,
            reorder: BTreeMap::new(),
            delivered: 0,
            assignment: Assignment::default(),
            bottleneck_s: 0.0,
            threshold: None,
            window: 1,
            detection_items: 1,
            monitor: Monitor::default(),
            calibrations: BTreeMap::new(),
            model_nodes: Vec::new(),
            stats,
            stage_sums: BTreeMap::new(),
            first_issue: None,
            last_delivery: Duration::ZERO,
            next_progress: None,
            last_progress: (Duration::ZERO, 0),
            setup,
            source,
        }
    }

    fn me(&self) -> Address {
        self.setup.routes.me()
    }

    /// The run starts at `now`.
    pub fn start(&mut self, now: Duration, out: &mut Vec<PipeOutput>) -> Result<(), CoreError> {
        if self.setup.statistics_interval > 0.0 {
            self.next_progress =
                Some(now + Duration::from_secs_f64(self.setup.statistics_interval));
        }
        self.begin_when_gathered(now, out)
    }

    /// The start time of the run, seconds since the Unix epoch, for the statistics.
    pub fn started_at_unix_s(&mut self, unix_s: f64) {
        self.stats.started_unix_s = Some(unix_s);
    }

    /// A message from rank `from` of the main cluster.
    pub fn handle(
        &mut self,
        now: Duration,
        from: usize,
        bytes: &[u8],
        out: &mut Vec<PipeOutput>,
    ) -> Result<(), CoreError> {
        let message: PipeMessage =
            decode(bytes, "message to the controller").map_err(CoreError::decoding(from))?;
        match message {
            PipeMessage::Hello { cluster, ranks } => {
                let slot =
                    self.clusters
                        .get_mut(cluster as usize)
                        .ok_or_else(|| CoreError::Protocol {
                            rank: from,
                            message: format!("hello from cluster {cluster}, which the run lacks"),
                        })?;
                *slot = Some(ranks);
                self.begin_when_gathered(now, out)
            }
            PipeMessage::Item(item) => self.on_item(now, item, out),
            PipeMessage::Done {
                epoch,
                group,
                replica,
            } => self
                .managers
                .on_done(epoch, group, replica, &self.setup.routes, out),
            PipeMessage::Calibrated { node, calibration } => {
                self.on_calibrated(now, node, calibration, out)
            }
            PipeMessage::Assigned { epoch, from } => self.on_assigned(now, epoch, from, out),
            PipeMessage::Bye { from, report } => self.on_bye(now, from, report, out),
            PipeMessage::Failed { from, message } => Err(CoreError::Failed {
                rank: from.rank(),
                host: format!("{} of cluster {}", self.host_of(from), from.cluster),
                message,
            }),
            other => Err(CoreError::Protocol {
                rank: from,
                message: format!("the controller does not take {other:?}"),
            }),
        }
    }

    /// When [`on_timer`](Self::on_timer) wants to be called.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.next_progress.filter(|_| self.phase != Phase::Done)
    }

    /// The timer fired at `now`: a progress line.
    pub fn on_timer(&mut self, now: Duration, out: &mut Vec<PipeOutput>) {
        let Some(at) = self.next_progress else {
            return;
        };
        if now < at {
            return;
        }
        let interval = Duration::from_secs_f64(self.setup.statistics_interval);
        self.next_progress = Some(at + interval);
        let (then, delivered_then) = self.last_progress;
        let span = now.saturating_sub(then).as_secs_f64();
        let rate = if span > 0.0 {
            (self.delivered - delivered_then) as f64 / span
        } else {
            0.0
        };
        self.last_progress = (now, self.delivered);
        self.stats
            .progress
            .push(crate::pipeline::stats::PipeProgress {
                at_s: now.as_secs_f64(),
                delivered: self.delivered,
                items_per_s: rate,
            });
        let slowest = match self.monitor.slowest() {
            Some((g, t)) => format!(", slowest group {g} {t:.4} s per item"),
            None => String::new(),
        };
        out.push(PipeOutput::Progress(format!(
            "[{:>8.1} s] {} items through, {:.2} items/s, mapping {} ({:.4} s per item \
             predicted){slowest}, {}",
            now.as_secs_f64(),
            self.delivered,
            rate,
            self.assignment.epoch,
            self.bottleneck_s,
            self.phase_name()
        )));
    }

    fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::Gathering => "waiting for the clusters",
            Phase::Calibrating { .. } => "calibrating",
            Phase::Assigning { .. } => "mapping",
            Phase::Running => "running",
            Phase::Draining => "draining",
            Phase::StoppingRanks { .. } | Phase::StoppingCms { .. } => "stopping",
            Phase::Done => "done",
        }
    }

    /// Every rank has said `Bye`.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The statistics and the source.
    pub fn finish(mut self) -> (PipelineStats, S) {
        self.stats.items = self.delivered;
        for (&(stage, node), &(items, seconds)) in &self.stage_sums {
            self.stats
                .stage_times
                .push(crate::pipeline::stats::StageOnNode {
                    stage,
                    node,
                    host: self.host_of(node),
                    items,
                    mean_s: seconds / items.max(1) as f64,
                });
        }
        let report = RankReport {
            host: self.host_of(self.me()),
            role: PipeRole::Controller,
            handed: self.managers.handed,
            ..RankReport::default()
        };
        self.stats.ranks.insert(0, (self.me(), report));
        (self.stats, self.source)
    }

    /// The host of rank `at`, as its cluster's machine file names it.
    fn host_of(&self, at: Address) -> String {
        self.clusters
            .get(at.cluster())
            .and_then(Option::as_ref)
            .and_then(|c| c.hosts.get(at.rank()))
            .cloned()
            .unwrap_or_else(|| at.to_string())
    }

    /// Every node of the run.
    fn nodes(&self) -> Vec<Address> {
        self.clusters
            .iter()
            .enumerate()
            .flat_map(|(c, ranks)| {
                ranks
                    .iter()
                    .flat_map(move |r| r.nodes.iter().map(move |&n| Address::new(c, n as usize)))
            })
            .collect()
    }

    /// Every rank that follows the mapping: the nodes and the other clusters' heads.
    fn followers(&self) -> BTreeSet<Address> {
        let heads = (1..self.clusters.len()).map(|c| Address::new(c, 0));
        self.nodes().into_iter().chain(heads).collect()
    }
}
