//! The master role: hands tasks out on demand, tracks each until its result is gathered, and
//! measures the run.
//!
//! The master works on serialised tasks through a [`TaskSource`], so the same loop serves a
//! typed [`Problem`] (the main master) and, in a multi-cluster run, inter-cluster tasks that a
//! sub-master re-splits.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    time::{Duration, Instant},
};

use crate::{
    app::{Problem, Task, TaskId},
    config::RunConfig,
    error::RunError,
    idle::Idle,
    machinefile::MachineFile,
    protocol::{decode, encode, ToMaster, ToWorker, WireResult, WireTask},
    scheduler::{Demand, Scheduler},
    stats::{ClusterStats, ProgressSample, RunStats, WorkerStats},
    transport::Transport,
};

/// Where a master's serialised tasks come from and where their results go.
pub trait TaskSource {
    /// The next task (its basic operations and serialised body), or `None` when there is none
    /// left.
    fn next_task(&mut self) -> Option<(f64, Vec<u8>)>;
    /// Gather the serialised result of task `id`; called once per task.
    fn gather(&mut self, id: TaskId, body: &[u8]) -> Result<(), RunError>;
    /// Total number of tasks, when known.
    fn task_count(&self) -> Option<u64>;
}

/// A typed [`Problem`] seen as a [`TaskSource`].
pub struct ProblemSource<P>(pub P);

impl<P: Problem> TaskSource for ProblemSource<P> {
    fn next_task(&mut self) -> Option<(f64, Vec<u8>)> {
        self.0
            .next_task()
            .map(|task| (task.operations(), encode(&task)))
    }

    fn gather(&mut self, id: TaskId, body: &[u8]) -> Result<(), RunError> {
        let result =
            decode(body, "result").map_err(|source| RunError::Decode { rank: 0, source })?;
        self.0.gather(id, result);
        Ok(())
    }

    fn task_count(&self) -> Option<u64> {
        self.0.task_count()
    }
}

/// A task handed out and not yet gathered.
struct InFlight {
    operations: f64,
    body: Vec<u8>,
    /// Ranks holding a copy (more than one after reassignment).
    holders: Vec<usize>,
}

/// The master's running account of one worker.
struct Tally {
    stats: WorkerStats,
    /// Tasks handed to this worker whose result has not come back from it.
    outstanding: BTreeSet<TaskId>,
}

/// The master of one cluster.
pub struct Master<'a, S> {
    transport: &'a mut dyn Transport,
    source: S,
    scheduler: Box<dyn Scheduler>,
    config: RunConfig,
    in_flight: BTreeMap<TaskId, InFlight>,
    next_id: TaskId,
    exhausted: bool,
    /// One entry per batch of room a worker has, in the order the room was offered.
    waiting: VecDeque<usize>,
    tallies: BTreeMap<usize, Tally>,
    gathered: u64,
    useful_operations: f64,
}

impl<'a, S: TaskSource> Master<'a, S> {
    /// A master feeding the worker ranks of `machines` through `transport`.
    pub fn new(
        transport: &'a mut dyn Transport,
        machines: &MachineFile,
        config: RunConfig,
        scheduler: Box<dyn Scheduler>,
        source: S,
    ) -> Self {
        let tallies = machines
            .worker_ranks()
            .into_iter()
            .map(|rank| {
                let stats = WorkerStats {
                    rank,
                    host: machines.ranks[rank].host.clone(),
                    ..Default::default()
                };
                let outstanding = BTreeSet::new();
                (rank, Tally { stats, outstanding })
            })
            .collect();
        Master {
            transport,
            source,
            scheduler,
            config,
            in_flight: BTreeMap::new(),
            next_id: 0,
            exhausted: false,
            waiting: VecDeque::new(),
            tallies,
            gathered: 0,
            useful_operations: 0.0,
        }
    }

    /// Run until every task is gathered, then stop the workers. Returns the statistics and
    /// the task source (which now holds the gathered results).
    pub fn run(mut self) -> Result<(RunStats, S), RunError> {
        let start = Instant::now();
        let total = self.source.task_count();
        let interval = Duration::from_secs_f64(self.config.statistics_interval);
        let mut next_report = start + interval;
        let mut progress = Vec::new();
        let mut idle = Idle::default();
        while !(self.exhausted && self.in_flight.is_empty()) {
            if !interval.is_zero() && Instant::now() >= next_report {
                let sample = ProgressSample::new(start.elapsed(), self.gathered, total);
                println!("{}", sample.line(total));
                progress.push(sample);
                next_report += interval;
            }
            if let Some((from, message)) = self.receive(idle.next_pause())? {
                idle.reset();
                self.handle(from, message)?;
                self.dispatch()?;
            }
        }
        let wall = start.elapsed();
        self.stop_workers()?;
        let stats = self.statistics(wall, progress);
        Ok((stats, self.source))
    }

    /// Wait up to `timeout` for a message from a rank.
    fn receive(&mut self, timeout: Duration) -> Result<Option<(usize, ToMaster)>, RunError> {
        let Some(envelope) = self.transport.wait(timeout)? else {
            return Ok(None);
        };
        let message = decode(&envelope.bytes, "message to the master").map_err(|source| {
            RunError::Decode {
                rank: envelope.from,
                source,
            }
        })?;
        Ok(Some((envelope.from, message)))
    }

    /// Take the next task from the source, if any.
    fn take_task(&mut self) -> Option<WireTask> {
        if self.exhausted {
            return None;
        }
        match self.source.next_task() {
            Some((operations, body)) => {
                let id = self.next_id;
                self.next_id += 1;
                Some(WireTask {
                    id,
                    operations,
                    body,
                })
            }
            None => {
                self.exhausted = true;
                None
            }
        }
    }

    fn handle(&mut self, from: usize, message: ToMaster) -> Result<(), RunError> {
        let Some(tally) = self.tallies.get_mut(&from) else {
            return Err(RunError::Protocol {
                rank: from,
                message: "a message from a rank that is not a worker".into(),
            });
        };
        match message {
            ToMaster::Ready { room } => {
                self.waiting
                    .extend(std::iter::repeat_n(from, room as usize));
            }
            ToMaster::Result { result, room } => {
                let WireResult {
                    id,
                    operations,
                    busy_s,
                    body,
                } = result;
                tally.outstanding.remove(&id);
                tally.stats.tasks_computed += 1;
                tally.stats.busy_s += busy_s;
                tally.stats.operations += operations;
                self.scheduler.observe(from, busy_s);
                if self.in_flight.remove(&id).is_some() {
                    tally.stats.tasks_done += 1;
                    self.gathered += 1;
                    self.useful_operations += operations;
                    self.source.gather(id, &body)?;
                } else {
                    tally.stats.discharged += 1;
                }
                self.waiting
                    .extend(std::iter::repeat_n(from, room as usize));
            }
            ToMaster::Bye => {
                return Err(RunError::Protocol {
                    rank: from,
                    message: "worker left before it was told to stop".into(),
                })
            }
        }
        Ok(())
    }

    /// Serve the waiting workers: new tasks while there are some, then (if enabled) copies of
    /// tasks still in flight elsewhere.
    fn dispatch(&mut self) -> Result<(), RunError> {
        let mut unserved = VecDeque::new();
        while let Some(rank) = self.waiting.pop_front() {
            let mut batch = Vec::new();
            if !self.exhausted {
                let demand = Demand {
                    worker: rank,
                    workers: self.tallies.len(),
                    remaining: self
                        .source
                        .task_count()
                        .map(|total| total.saturating_sub(self.next_id)),
                };
                let size = self.scheduler.batch_size(&demand).max(1);
                batch.extend(std::iter::from_fn(|| self.take_task()).take(size));
            }
            // Only a worker with nothing left to compute is idle; a free second buffer is not.
            let idle = self.tallies[&rank].outstanding.is_empty();
            if batch.is_empty() && idle && self.config.reassign_last_task {
                batch.extend(self.duplicate_for(rank));
            }
            if batch.is_empty() {
                unserved.push_back(rank);
                continue;
            }
            let tally = self
                .tallies
                .get_mut(&rank)
                .expect("waiting ranks are workers");
            for task in &batch {
                tally.outstanding.insert(task.id);
                self.in_flight
                    .entry(task.id)
                    .or_insert_with(|| InFlight {
                        operations: task.operations,
                        body: task.body.clone(),
                        holders: Vec::new(),
                    })
                    .holders
                    .push(rank);
            }
            self.transport.send(rank, encode(&ToWorker::Tasks(batch)))?;
        }
        self.waiting = unserved;
        Ok(())
    }

    /// A copy of the in-flight task with the fewest holders (oldest first) that `rank` does not
    /// already hold.
    fn duplicate_for(&self, rank: usize) -> Option<WireTask> {
        self.in_flight
            .iter()
            .filter(|(_, f)| !f.holders.contains(&rank))
            .min_by_key(|(id, f)| (f.holders.len(), **id))
            .map(|(&id, f)| WireTask {
                id,
                operations: f.operations,
                body: f.body.clone(),
            })
    }

    /// Tell every worker to stop and wait for each to acknowledge; results that still arrive
    /// are duplicates and count as discharged.
    fn stop_workers(&mut self) -> Result<(), RunError> {
        let ranks: Vec<usize> = self.tallies.keys().copied().collect();
        for &rank in &ranks {
            self.transport.send(rank, encode(&ToWorker::Stop))?;
        }
        let mut remaining: BTreeSet<usize> = ranks.into_iter().collect();
        let mut idle = Idle::default();
        while !remaining.is_empty() {
            let Some((from, message)) = self.receive(idle.next_pause())? else {
                continue;
            };
            idle.reset();
            match message {
                ToMaster::Bye => {
                    remaining.remove(&from);
                }
                other => self.handle(from, other)?,
            }
        }
        self.transport.flush()?;
        Ok(())
    }

    fn statistics(&mut self, wall: Duration, progress: Vec<ProgressSample>) -> RunStats {
        let workers: Vec<WorkerStats> = self
            .tallies
            .values_mut()
            .map(|tally| {
                // Copies still out when the run ended were computed for nothing.
                tally.stats.discharged += tally.outstanding.len() as u64;
                tally.stats.derive(wall);
                tally.stats.clone()
            })
            .collect();
        RunStats {
            wall_s: wall.as_secs_f64(),
            tasks: self.gathered,
            cluster: ClusterStats::from_workers(&workers, wall, self.useful_operations),
            workers,
            progress,
        }
    }
}
