//! The master core's inputs and outputs: starting, each message, timers, failing and
//! finishing, and the steps of a run (start, stop, report upstream).

use std::{
    collections::{BTreeSet, VecDeque},
    fmt::Write as _,
    time::Duration,
};

use rustc_hash::FxHashMap;

use super::state::{Counts, Held, Kind, MasterCore, Phase, Tally, Window, LOST_PATIENCE};
use crate::roles::{
    busy_since::BusySince, iterations::IterationTracker, output::Output, rank_table::RankTable,
    task_source::TaskSource, under_way::UnderWay,
};
use crate::{
    adapt::Adapter,
    config::RunConfig,
    error::CoreError,
    estimator::WorkEstimator,
    machinefile::{Facing, MachineFile},
    protocol::{encode, ToMaster, ToMasterRef, ToWorker},
    scheduler::{Scheduler, Waiting},
    spare::SpareBuffers,
    stats::{ClusterReport, ResultGaps, RunStats, WorkerStats},
};

impl<S: TaskSource> MasterCore<S> {
    /// A master feeding the workers and master-facing communication managers of `machines`,
    /// its tasks from `source`, its dispatch decided by `scheduler`.
    pub fn new(
        machines: &MachineFile,
        config: RunConfig,
        scheduler: Box<dyn Scheduler>,
        mut source: S,
    ) -> Self {
        let mut tallies = RankTable::with_ranks(machines.ranks.len());
        let mut waiting = Waiting::default();
        waiting.reserve_ranks(machines.ranks.len());
        for (rank, line) in machines.ranks.iter().enumerate().skip(1) {
            let kind = match &line.cm {
                None => Kind::Worker,
                Some(cm) if cm.facing == Facing::Master => Kind::Cm {
                    name: line
                        .annotations
                        .cluster
                        .clone()
                        .unwrap_or_else(|| format!("cm{rank}")),
                    nt: line.annotations.nt.unwrap_or(1),
                    max_tasks: line.annotations.max_tasks,
                    workers: line.annotations.workers,
                    credit: None,
                },
                Some(_) => continue, // the upstream CM of a sub-master
            };
            waiting.register(rank, matches!(kind, Kind::Worker));
            let under_way = UnderWay::new(match &kind {
                Kind::Worker => 1,
                Kind::Cm { workers, .. } => workers.unwrap_or(0),
            });
            let stats = WorkerStats {
                rank,
                host: line.host.clone(),
                ..Default::default()
            };
            tallies.insert(
                rank,
                Tally {
                    kind,
                    stats,
                    counts: Counts::default(),
                    outstanding: Held::default(),
                    handed: 0,
                    gone: false,
                    dropped: false,
                    parked_room: 0,
                    rejoins: 0,
                    done_at_rejoin: 0,
                    heard: false,
                    taken_back: 0,
                    report: None,
                    window: Window::default(),
                    last_window: Window::default(),
                    link: None,
                    under_way,
                    busy: BusySince::default(),
                },
            );
        }
        let workers = tallies
            .values()
            .filter(|t| matches!(t.kind, Kind::Worker))
            .count();
        let cms = tallies.len() - workers;
        let feeds_clusters = !config.wait_for_links && cms > 0;
        let iterations = source.iterations_completed().map(|_| {
            let ranks = tallies
                .iter()
                .filter(|(_, t)| matches!(t.kind, Kind::Worker))
                .map(|(rank, _)| rank)
                .collect();
            let tracker = IterationTracker::new(&config, ranks);
            source.set_active_workers(tracker.active());
            tracker
        });
        let adapter = config
            .adapt_settings()
            .filter(|_| cms > 0)
            .map(Adapter::new);
        let estimator =
            WorkEstimator::new().later_tasks_may_do_less(source.later_tasks_may_do_less());
        let live = config.statistics_interval > 0.0;
        MasterCore {
            source,
            scheduler,
            config,
            name: machines.ranks[0]
                .annotations
                .cluster
                .clone()
                .unwrap_or_else(|| "main".to_owned()),
            phase: Phase::Gathering,
            in_flight: FxHashMap::default(),
            tail: None,
            retry: VecDeque::new(),
            next_id: 0,
            skipped: 0,
            exhausted: false,
            waiting,
            tallies,
            gathered: 0,
            local_operations: 0.0,
            local_busy: BusySince::default(),
            useful_operations: 0.0,
            estimator,
            live,
            reassigned: 0,
            redivided: 0,
            tail_copies: 0,
            workers,
            batch: Vec::new(),
            spare: SpareBuffers::default(),
            started_at: Duration::ZERO,
            now: Duration::ZERO,
            wall: Duration::ZERO,
            links_up: None,
            last_result_at: None,
            result_gaps: ResultGaps::default(),
            feeds_clusters,
            next_report: Duration::MAX,
            progress: Vec::new(),
            stopping: BTreeSet::new(),
            unheard_workers: workers,
            unheard_cms: cms,
            iterations,
            adapter,
            adaptations: Vec::new(),
            cluster_events: Vec::new(),
            acknowledgements: Default::default(),
            started_unix_s: None,
            reported: None,
        }
    }

    /// Begin at time `now`: a sub-master asks its upstream for work. The run itself starts
    /// once every worker has asked for work (they do at once), so the first tasks are shared
    /// fairly; with `wait_for_links` also once every link to another cluster is up (its CM
    /// offered room) or given up (its CM reported the cluster lost), so the time to connect
    /// is not the run's. Otherwise each cluster joins when its link is up.
    pub fn start(&mut self, now: Duration, out: &mut Vec<Output>) -> Result<(), CoreError> {
        self.now = now;
        self.transmit_upstream(out);
        self.step(now, out)
    }

    /// Take in the message `bytes` from rank `from` at time `now`.
    pub fn handle(
        &mut self,
        now: Duration,
        from: usize,
        bytes: &[u8],
        out: &mut Vec<Output>,
    ) -> Result<(), CoreError> {
        self.now = now;
        if let Phase::Failing(_) = self.phase {
            // Only the CM's word that the `Lost` left matters now.
            if Some(from) == self.source.upstream()
                && matches!(ToWorker::decode(bytes, ""), Ok(ToWorker::Stop))
            {
                self.phase = Phase::Done;
            }
            return Ok(());
        }
        if Some(from) == self.source.upstream() {
            // Once stopping, upstream has nothing more to say that matters.
            if matches!(self.phase, Phase::Gathering | Phase::Running) {
                let message: ToWorker = ToWorker::decode(bytes, "message from upstream")
                    .map_err(CoreError::decoding(from))?;
                self.source.on_upstream(message)?;
            }
        } else {
            match ToMaster::read(bytes, "message to the master")
                .map_err(CoreError::decoding(from))?
            {
                ToMasterRef::Result { result, room } => self.on_result(from, result, room)?,
                ToMasterRef::Owned(message) => self.handle_message(from, message)?,
            }
        }
        if self.acknowledgements.owed() {
            let durable = self.source.durable_results();
            self.acknowledgements.send(now, durable, out);
        }
        self.step(now, out)
    }

    /// Time `now` has come: a progress line when one is due.
    pub fn on_timer(&mut self, now: Duration, out: &mut Vec<Output>) {
        if let Phase::Failing(until) = self.phase {
            if now >= until {
                self.phase = Phase::Done;
            }
            return;
        }
        if self.phase != Phase::Running {
            return;
        }
        self.now = now;
        if self.acknowledgements.owed() {
            let durable = self.source.durable_results();
            self.acknowledgements.send(now, durable, out);
        }
        if self.config.statistics_interval > 0.0 && now >= self.next_report {
            let interval = self.config.statistics_interval;
            let sample = self.progress(now.saturating_sub(self.started_at), interval);
            let mut line = sample.line(self.source.task_count());
            for decision in self.replan(&sample) {
                let _ = write!(line, " | adapt {decision}");
                self.adapt(now, &decision, out);
            }
            out.push(Output::Progress(line));
            self.progress.push(sample);
            self.next_report += Duration::from_secs_f64(interval);
        }
    }

    /// When [`on_timer`](Self::on_timer) next has something to do, if ever.
    pub fn poll_timeout(&self) -> Option<Duration> {
        match self.phase {
            Phase::Failing(until) => Some(until),
            Phase::Running => {
                let report = (self.config.statistics_interval > 0.0).then_some(self.next_report);
                match (report, self.acknowledgements.due()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            _ => None,
        }
    }

    /// Every fed rank has said `Bye` (a sub-master has then sent its statistics to its
    /// parent cluster), or the run failed ([`fail`](Self::fail)): the run is over.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The run's clock started at this wall-clock time (seconds since the Unix epoch), as
    /// the driver read it when it performed [`Output::Started`]: the statistics record it.
    pub fn started_at_unix_s(&mut self, unix_s: f64) {
        self.started_unix_s = Some(unix_s);
        self.source.run_started(unix_s);
    }

    /// The run cannot go on (a message broke the protocol, a rank failed, the driver cannot
    /// send). A sub-master tells its parent cluster at once, through its CM, that it is lost,
    /// so that the parent takes its tasks back now rather than after the link's deadline; it
    /// is done once its CM answers that the message left (its `Stop`), or at the deadline
    /// [`poll_timeout`](Self::poll_timeout) gives. A main master is done at once.
    pub fn fail(&mut self, now: Duration, out: &mut Vec<Output>) {
        self.now = now;
        match self.source.upstream() {
            Some(upstream) if !matches!(self.phase, Phase::Done | Phase::Failing(_)) => {
                out.push(Output::Send {
                    to: upstream,
                    bytes: encode(&ToMaster::Lost),
                });
                self.phase = Phase::Failing(now.saturating_add(LOST_PATIENCE));
            }
            _ => self.phase = Phase::Done,
        }
    }

    /// The run's statistics and the task source (which holds the gathered results), once
    /// [`is_done`](Self::is_done).
    pub fn finish(mut self) -> (RunStats, S) {
        let stats = match self.reported.take() {
            Some(stats) => stats,
            None => self.statistics(),
        };
        (stats, self.source)
    }

    /// The task source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Tasks gathered so far.
    pub fn gathered(&self) -> u64 {
        self.gathered
    }

    /// After each input: start the run, hand tasks out, end the run, as due.
    pub(super) fn step(&mut self, now: Duration, out: &mut Vec<Output>) -> Result<(), CoreError> {
        if self.phase == Phase::Gathering {
            let waiting_for_someone =
                self.unheard_workers > 0 || (self.config.wait_for_links && self.unheard_cms > 0);
            if self.source.stopped() || !waiting_for_someone {
                self.phase = Phase::Running;
                self.started_at = now;
                self.next_report =
                    now.saturating_add(Duration::from_secs_f64(self.config.statistics_interval));
                if let Some(tracker) = &mut self.iterations {
                    tracker.start(now);
                }
                out.push(Output::Started);
            }
        }
        match self.phase {
            Phase::Gathering | Phase::Failing(_) | Phase::Done => {}
            Phase::Running => {
                if self.feeds_clusters
                    && self.links_up.is_none()
                    && self.unheard_workers + self.unheard_cms == 0
                {
                    self.links_up = Some(now.saturating_sub(self.started_at));
                }
                self.track_iterations(now);
                if !self.source.stopped() {
                    self.dispatch(out);
                }
                self.transmit_upstream(out);
                if self.finished() {
                    // Results that still arrive are handled as usual: at the main master
                    // every task is gathered by then, so they are discharged; a stopping
                    // sub-master takes them in but sends nothing more up.
                    self.wall = now.saturating_sub(self.started_at);
                    self.phase = Phase::Stopping;
                    for rank in self.tallies.keys() {
                        out.push(Output::Send {
                            to: rank,
                            bytes: encode(&ToWorker::Stop),
                        });
                        self.stopping.insert(rank);
                    }
                    self.transmit_upstream(out);
                }
            }
            Phase::Stopping => self.transmit_upstream(out),
        }
        if self.phase == Phase::Stopping && self.stopping.is_empty() {
            self.phase = Phase::Done;
            self.report_upstream(out);
        }
        Ok(())
    }

    /// A sub-master whose run is over sends its cluster's statistics to its parent cluster,
    /// after its last results.
    pub(super) fn report_upstream(&mut self, out: &mut Vec<Output>) {
        let Some(upstream) = self.source.upstream() else {
            return;
        };
        let stats = self.statistics();
        let report = ClusterReport {
            name: stats.name.clone(),
            stats: Some(Box::new(stats.clone())),
            ..Default::default()
        };
        out.push(Output::Send {
            to: upstream,
            bytes: encode(&ToMaster::Bye {
                report: Some(Box::new(report)),
            }),
        });
        self.reported = Some(stats);
    }

    /// An iterative problem passed a barrier: record the iteration; when the tuner changed
    /// the active count, the problem divides its next iteration for it and every rank set
    /// aside is looked at again.
    pub(super) fn track_iterations(&mut self, now: Duration) {
        let (Some(tracker), Some(completed)) =
            (&mut self.iterations, self.source.iterations_completed())
        else {
            return;
        };
        if let Some(active) = tracker.progressed(now, completed) {
            self.source.set_active_workers(active);
            self.waiting.restore_all();
        }
    }

    /// Upstream said stop, or every task is gathered.
    pub(super) fn finished(&self) -> bool {
        self.source.stopped() || (self.exhausted && self.in_flight.is_empty())
    }

    pub(super) fn transmit_upstream(&mut self, out: &mut Vec<Output>) {
        if let Some(upstream) = self.source.upstream() {
            while let Some(bytes) = self.source.poll_transmit() {
                out.push(Output::Send {
                    to: upstream,
                    bytes,
                });
            }
        }
    }

    /// A buffer of a message sent, which the transport no longer reads: the task source may
    /// encode a task into it ([`TaskSource::recycle`]).
    pub fn recycle(&mut self, buffer: Vec<u8>) {
        self.source.recycle(buffer);
    }
}
