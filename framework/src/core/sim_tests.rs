//! The cores in a simulated world, with no threads, no transport and no clock: a master core,
//! its worker cores, and optionally a CM core leading over a simulated link to a far cluster
//! (CM core, sub-master core, worker cores). Proptest chooses the interleaving: which message
//! is delivered next (each channel keeps its order, as MPI and the link do), which worker
//! finishes a task, when time passes, when the link goes down (past the lost-after deadline:
//! the cluster is lost, its tasks taken back, its late results arriving after) and comes back,
//! and the run's shape (workers, buffers, `nt`, `nr`, window, bounded share, tail copies,
//! scheduling policy). Whatever the interleaving, the run ends and the problem sees every task
//! exactly once.

use std::{
    collections::{BTreeMap, VecDeque},
    path::Path,
    time::Duration,
};

use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use super::{
    CmMasterSide, CmOutput, CmSubMasterSide, Computed, LinkView, MasterCore, Output, ProblemSource,
    Queued, Received, SubMasterCore, WorkerCore,
};
use crate::{
    app::{Problem, Task, TaskId, TaskResult, WorkerContext},
    config::ConfigFile,
    machinefile::MachineFile,
    protocol::{decode, encode, ToMaster, WireResult},
    roles::submaster,
    scheduler::{OnDemand, Policy, Scheduler},
    stats::{ClusterReport, LinkSummary},
};

/// Task `k` of the problem.
#[derive(Serialize, Deserialize)]
struct Job(u64);

/// The problem's task numbers a result stands for.
#[derive(Serialize, Deserialize)]
struct Done(Vec<u64>);

impl Task for Job {
    type Output = Done;
    fn execute(self, _: &WorkerContext) -> Done {
        Done(vec![self.0])
    }
}

impl TaskResult for Done {
    fn join(&mut self, other: Done) -> Result<(), Done> {
        self.0.extend(other.0);
        Ok(())
    }
}

/// Counts how often the problem sees each task.
struct Count {
    tasks: u64,
    produced: u64,
    seen: Vec<u32>,
    /// A joined result whose tasks were not the ids it came with.
    mismatched: bool,
}

impl Problem for Count {
    type Task = Job;
    fn next_task(&mut self) -> Option<Job> {
        (self.produced < self.tasks).then(|| {
            self.produced += 1;
            Job(self.produced - 1)
        })
    }
    fn gather(&mut self, id: TaskId, result: Done) {
        self.gather_joined(&[id], result);
    }
    fn gather_joined(&mut self, ids: &[TaskId], result: Done) {
        let mut sorted = result.0.clone();
        sorted.sort_unstable();
        let mut expected = ids.to_vec();
        expected.sort_unstable();
        self.mismatched |= sorted != expected;
        for k in result.0 {
            self.seen[k as usize] += 1;
        }
    }
    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }
}

/// A worker core and the tasks it holds.
struct SimWorker {
    core: WorkerCore,
    queue: VecDeque<Queued>,
    stopped: bool,
}

impl SimWorker {
    fn new(buffers: u32) -> Self {
        SimWorker {
            core: WorkerCore::new(buffers),
            queue: VecDeque::new(),
            stopped: false,
        }
    }
}

/// The shape of a run.
#[derive(Debug, Clone)]
struct Shape {
    tasks: u64,
    workers: usize,
    buffers: u32,
    reassign: bool,
    policy: Policy,
    /// A far cluster behind a CM: its workers, `nt`, `nr`, window, bounded share.
    far: Option<(usize, usize, usize, u64, Option<u64>)>,
}

/// What proptest chooses next.
#[derive(Debug, Clone)]
enum Op {
    /// Deliver the oldest message of a channel with one (picked among them).
    Deliver(usize),
    /// A worker with a task finishes its oldest (picked among them).
    Compute(usize),
    /// Time passes (milliseconds).
    Tick(u64),
    LinkDown,
    LinkUp,
    /// The link goes down for good: the far cluster never returns.
    LinkGone,
}

const LOST_AFTER: Duration = Duration::from_secs(10);

/// Nodes: the master 0, its workers, its CM; then the far cluster's sub-master, CM, workers.
struct Sim {
    now: Duration,
    master: MasterCore<ProblemSource<Count>>,
    workers: BTreeMap<usize, SimWorker>,
    cm: Option<CmMasterSide>,
    cm_node: usize,
    sub: Option<SubMasterCore<Job>>,
    /// Node of the far cluster's rank 0 (its sub-master); its CM is rank 1.
    far_base: usize,
    far_cm: Option<CmSubMasterSide>,
    sub_bye_sent: bool,
    cm_bye_sent: bool,
    channels: BTreeMap<(usize, usize), VecDeque<Vec<u8>>>,
    to_far: VecDeque<Vec<u8>>,
    to_main: VecDeque<Vec<u8>>,
    link_up: bool,
    link_gone: bool,
    out: Vec<Output>,
    cm_out: Vec<CmOutput>,
}

fn worker_context() -> WorkerContext {
    let machines = MachineFile::parse(Path::new("sim.hosts"), "m\nw\n").unwrap();
    WorkerContext {
        rank: 1,
        line: machines.ranks[1].clone(),
    }
}

impl Sim {
    fn new(shape: &Shape) -> Self {
        let mut main = String::from("master\n");
        for _ in 0..shape.workers {
            main.push_str("w\n");
        }
        let mut config = ConfigFile::defaults();
        config.run.worker_buffers = shape.buffers;
        config.run.reassign_last_task = shape.reassign;
        config.run.statistics_interval = 0.5;
        config.run.wait_for_links = false;
        let cm_node = shape.workers + 1;
        let mut far_base = usize::MAX / 2;
        let (mut cm, mut sub, mut far_cm) = (None, None, None);
        let mut workers = BTreeMap::new();
        for rank in 1..=shape.workers {
            workers.insert(rank, SimWorker::new(shape.buffers));
        }
        if let Some((far_workers, nt, nr, window, max_tasks)) = shape.far {
            let bound = max_tasks.map_or(String::new(), |m| format!(" max_tasks={m}"));
            main.push_str(&format!(
                "c # M 1 7000 name=a peer=b cluster=far nt={nt}{bound}\n"
            ));
            cm = Some(CmMasterSide::new(cm_node, window, LOST_AFTER, None));
            far_base = cm_node + 1;
            let mut text = format!("sub\nc # S 0 7000 h name=b peer=a nr={nr}\n");
            for _ in 0..far_workers {
                text.push_str("fw\n");
            }
            let far = MachineFile::parse(Path::new("far.hosts"), &text).unwrap();
            let scheduler: Box<dyn Scheduler> = Box::new(OnDemand);
            sub = Some(submaster::core::<Job>(&far, &config, 1, scheduler, None));
            far_cm = Some(CmSubMasterSide::new(1, Duration::from_secs(1_000_000)));
            for rank in 2..2 + far_workers {
                workers.insert(far_base + rank, SimWorker::new(shape.buffers));
            }
        }
        let machines = MachineFile::parse(Path::new("main.hosts"), &main).unwrap();
        let problem = Count {
            tasks: shape.tasks,
            produced: 0,
            seen: vec![0; shape.tasks as usize],
            mismatched: false,
        };
        let master = MasterCore::new(
            &machines,
            config.run.clone(),
            shape.policy.scheduler(crate::scheduler::ChunkSettings {
                fraction: 0.5,
                overhead_s: 1e-3,
            }),
            ProblemSource::new(problem),
        );
        let mut sim = Sim {
            now: Duration::ZERO,
            master,
            workers,
            cm,
            cm_node,
            sub,
            far_base,
            far_cm,
            sub_bye_sent: false,
            cm_bye_sent: false,
            channels: BTreeMap::new(),
            to_far: VecDeque::new(),
            to_main: VecDeque::new(),
            link_up: true,
            link_gone: false,
            out: Vec::new(),
            cm_out: Vec::new(),
        };
        sim.master.start(sim.now, &mut sim.out).unwrap();
        sim.flush_master(0);
        if let Some(sub) = &mut sim.sub {
            sub.start(sim.now, &mut sim.out).unwrap();
            sim.flush_master(sim.far_base);
        }
        let nodes: Vec<usize> = sim.workers.keys().copied().collect();
        for node in nodes {
            let worker = sim.workers.get_mut(&node).unwrap();
            worker.core.start(&mut sim.out);
            sim.flush_worker(node);
        }
        sim.tick(0);
        sim
    }

    /// The node of the master a node reports to (its cluster's rank 0).
    fn base_of(&self, node: usize) -> usize {
        if node >= self.far_base {
            self.far_base
        } else {
            0
        }
    }

    fn send(&mut self, from: usize, to: usize, bytes: Vec<u8>) {
        self.channels
            .entry((from, to))
            .or_default()
            .push_back(bytes);
    }

    /// The sends of a master (or sub-master) core at node `base`.
    fn flush_master(&mut self, base: usize) {
        for output in std::mem::take(&mut self.out) {
            if let Output::Send { to, bytes } = output {
                self.send(base, base + to, bytes);
            }
        }
        if base == self.far_base && !self.sub_bye_sent && self.sub.as_ref().unwrap().is_done() {
            // What the sub-master's driver does at the end: its report goes up.
            self.sub_bye_sent = true;
            let bye = ToMaster::Bye {
                report: Some(Box::new(ClusterReport::default())),
            };
            self.send(base, base + 1, encode(&bye));
        }
    }

    fn flush_worker(&mut self, node: usize) {
        let base = self.base_of(node);
        for output in std::mem::take(&mut self.out) {
            if let Output::Send { to, bytes } = output {
                self.send(node, base + to, bytes);
            }
        }
    }

    fn flush_cm(&mut self, far: bool) {
        for output in std::mem::take(&mut self.cm_out) {
            match output {
                CmOutput::ToCluster(bytes) if far => {
                    self.send(self.far_base + 1, self.far_base, bytes)
                }
                CmOutput::ToCluster(bytes) => self.send(self.cm_node, 0, bytes),
                CmOutput::ToLink(bytes) if far => self.to_main.push_back(bytes),
                CmOutput::ToLink(bytes) => self.to_far.push_back(bytes),
                CmOutput::SnapshotLink => {
                    let cm = self.cm.as_mut().unwrap();
                    cm.set_far_link(LinkSummary::default());
                }
                CmOutput::CloseLink(_) => {}
            }
        }
        if let Some(cm) = &mut self.cm {
            if cm.is_done() && !self.cm_bye_sent {
                self.cm_bye_sent = true;
                let bye = cm.bye(LinkSummary::default());
                self.send(self.cm_node, 0, bye);
            }
        }
    }

    fn view(&self) -> LinkView {
        LinkView {
            connected: self.link_up,
            ever_connected: true,
            ..LinkView::default()
        }
    }

    fn tick(&mut self, millis: u64) {
        self.now += Duration::from_millis(millis);
        self.master.on_timer(self.now, &mut self.out);
        self.flush_master(0);
        let view = self.view();
        if let Some(cm) = &mut self.cm {
            if !cm.is_done() {
                cm.on_tick(self.now, &view, &mut self.cm_out);
                self.flush_cm(false);
            }
        }
        if let Some(cm) = &mut self.far_cm {
            if !cm.is_done() {
                cm.on_tick(self.now, &view, &mut self.cm_out);
                self.flush_cm(true);
            }
        }
    }

    /// Deliver the oldest message of channel `(from, to)`.
    fn deliver(&mut self, from: usize, to: usize) {
        let bytes = self
            .channels
            .get_mut(&(from, to))
            .and_then(VecDeque::pop_front)
            .expect("a message waits");
        let base = self.base_of(to);
        let (from_rank, to_rank) = (from - base, to - base);
        if to == 0 {
            self.master
                .handle(self.now, from_rank, &bytes, &mut self.out)
                .expect("the master takes every message in");
            self.flush_master(0);
        } else if to == self.far_base {
            if let Some(sub) = &mut self.sub {
                if !sub.is_done() {
                    sub.handle(self.now, from_rank, &bytes, &mut self.out)
                        .expect("the sub-master takes every message in");
                }
            }
            self.flush_master(self.far_base);
        } else if to == self.cm_node {
            self.cm
                .as_mut()
                .unwrap()
                .on_cluster(&bytes, &mut self.cm_out)
                .unwrap();
            self.flush_cm(false);
            self.tick(0);
        } else if to == self.far_base + 1 {
            let cm = self.far_cm.as_mut().unwrap();
            if !cm.is_done() {
                cm.on_cluster(&bytes, &mut self.cm_out).unwrap();
                self.flush_cm(true);
                self.tick(0);
            }
        } else {
            let worker = self.workers.get_mut(&to).unwrap();
            if worker.stopped {
                return;
            }
            if worker
                .core
                .handle(&bytes, to_rank, &mut worker.queue)
                .unwrap()
                == Received::Stop
            {
                worker.stopped = true;
                worker.queue.clear();
                worker.core.bye(&mut self.out);
                self.flush_worker(to);
            }
        }
    }

    /// Worker `node` finishes its oldest task.
    fn compute(&mut self, node: usize) {
        let context = worker_context();
        let worker = self.workers.get_mut(&node).unwrap();
        let Some(Queued { task, closes_batch }) = worker.queue.pop_front() else {
            return;
        };
        let inline = worker.core.run_inline();
        let job: Job = decode(&task.body, "task").unwrap();
        let result = WireResult {
            ids: vec![task.id],
            operations: task.operations,
            busy_s: 0.001,
            decode_s: 0.0,
            encode_s: 0.0,
            body: encode(&job.execute(&context)),
        };
        let computed = Computed {
            result: Ok(result),
            closes_batch,
        };
        worker
            .core
            .on_computed(computed, inline, &mut self.out)
            .unwrap();
        self.flush_worker(node);
    }

    fn link_deliver(&mut self) {
        if !self.link_up {
            return;
        }
        while let Some(bytes) = self.to_far.pop_front() {
            if let Some(cm) = &mut self.far_cm {
                if !cm.is_done() {
                    cm.on_link(bytes).unwrap();
                }
            }
        }
        while let Some(bytes) = self.to_main.pop_front() {
            let cm = self.cm.as_mut().unwrap();
            if !cm.is_done() {
                cm.on_link(&bytes, &mut self.cm_out).unwrap();
                self.flush_cm(false);
            }
        }
        self.tick(0);
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Deliver(pick) => {
                let ready: Vec<(usize, usize)> = self
                    .channels
                    .iter()
                    .filter(|(_, q)| !q.is_empty())
                    .map(|(&k, _)| k)
                    .collect();
                if ready.is_empty() {
                    self.link_deliver();
                } else {
                    let (from, to) = ready[pick % ready.len()];
                    self.deliver(from, to);
                }
            }
            Op::Compute(pick) => {
                let busy: Vec<usize> = self
                    .workers
                    .iter()
                    .filter(|(_, w)| !w.queue.is_empty())
                    .map(|(&n, _)| n)
                    .collect();
                if !busy.is_empty() {
                    self.compute(busy[pick % busy.len()]);
                }
            }
            Op::Tick(millis) => {
                self.link_deliver();
                self.tick(millis);
            }
            Op::LinkDown => self.link_up = false,
            Op::LinkUp => self.link_up = !self.link_gone,
            Op::LinkGone => {
                self.link_up = false;
                self.link_gone = true;
            }
        }
    }

    /// Bring the link up (unless it is gone) and let everything flow until the master is
    /// done.
    fn settle(&mut self) {
        self.link_up = !self.link_gone;
        for _ in 0..10_000 {
            if self.master.is_done() {
                return;
            }
            let ready: Vec<(usize, usize)> = self
                .channels
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .map(|(&k, _)| k)
                .collect();
            for (from, to) in ready {
                while self.channels[&(from, to)].front().is_some() {
                    self.deliver(from, to);
                }
            }
            let nodes: Vec<usize> = self.workers.keys().copied().collect();
            for node in nodes {
                self.compute(node);
            }
            self.link_deliver();
            self.tick(100);
        }
    }
}

fn shapes() -> impl Strategy<Value = Shape> {
    let policy = prop_oneof![
        4 => Just(Policy::OnDemand),
        1 => Just(Policy::FixedSize),
        1 => Just(Policy::KruskalWeiss),
        1 => Just(Policy::Factoring),
        1 => Just(Policy::AdaptiveFactoring),
        1 => Just(Policy::AdaptiveMultiRound),
    ];
    let far = proptest::option::weighted(
        0.6,
        (
            1usize..4,
            1usize..4,
            1usize..6,
            0u64..3,
            proptest::option::weighted(0.3, 0u64..12),
        ),
    );
    (0u64..40, 1usize..4, 1u32..3, any::<bool>(), policy, far).prop_map(
        |(tasks, workers, buffers, reassign, policy, far)| Shape {
            tasks,
            workers,
            buffers,
            reassign,
            policy,
            far,
        },
    )
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        10 => any::<usize>().prop_map(Op::Deliver),
        4 => any::<usize>().prop_map(Op::Compute),
        2 => (0u64..12_000).prop_map(Op::Tick),
        1 => Just(Op::LinkDown),
        1 => Just(Op::LinkUp),
        1 => Just(Op::LinkGone),
    ];
    proptest::collection::vec(op, 0..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the interleaving, the run ends, and the problem sees every task exactly once:
    /// none lost, none twice, whether copies were handed out at the end, a cluster was lost
    /// and its results came late, or results were joined far away.
    #[test]
    fn every_task_is_gathered_exactly_once(shape in shapes(), ops in ops()) {
        let mut sim = Sim::new(&shape);
        for op in &ops {
            sim.apply(op);
        }
        sim.settle();
        prop_assert!(sim.master.is_done(), "the run did not end");
        let gathered = sim.master.gathered();
        let (stats, source) = sim.master.finish(None);
        let problem = source.into_problem();
        prop_assert!(problem.seen.iter().all(|&n| n == 1), "seen {:?}", problem.seen);
        prop_assert!(!problem.mismatched, "a joined result stood for other tasks");
        prop_assert_eq!(gathered, shape.tasks);
        prop_assert_eq!(stats.tasks, shape.tasks);
        let done: u64 = stats.workers.iter().map(|w| w.tasks_done).sum::<u64>()
            + stats.clusters.iter().map(|c| c.tasks_done).sum::<u64>();
        prop_assert_eq!(done, shape.tasks);
        if let Some((_, _, _, _, Some(max_tasks))) = shape.far {
            // A bounded share: never more new tasks than allowed (tasks taken back from
            // elsewhere may add to it).
            prop_assert!(stats.clusters[0].tasks_done <= max_tasks + stats.reassigned);
        }
    }
}

/// The lost cluster case, written out: the link goes down past the deadline with tasks out
/// there; the master takes them back and its own workers compute them; when the link comes
/// back, the far results arrive late and are discharged, and the cluster rejoins and takes
/// new tasks.
#[test]
fn a_lost_cluster_gives_its_tasks_back_then_rejoins_and_late_results_are_discharged() {
    let shape = Shape {
        tasks: 40,
        workers: 1,
        buffers: 1,
        reassign: false,
        policy: Policy::OnDemand,
        far: Some((2, 2, 1, 1, None)),
    };
    let mut sim = Sim::new(&shape);
    // Let the far cluster take tasks, without computing any.
    for _ in 0..200 {
        sim.apply(&Op::Deliver(0));
        sim.apply(&Op::Tick(1));
    }
    assert!(
        sim.workers
            .iter()
            .any(|(&n, w)| n > sim.far_base && !w.queue.is_empty()),
        "the far cluster holds tasks"
    );
    sim.apply(&Op::LinkDown);
    // Far workers compute: their results wait behind the link.
    for _ in 0..50 {
        let far: Vec<usize> = sim
            .workers
            .keys()
            .copied()
            .filter(|&n| n > sim.far_base)
            .collect();
        for node in far {
            sim.compute(node);
        }
        for _ in 0..20 {
            sim.apply(&Op::Deliver(1));
        }
    }
    sim.apply(&Op::Tick(11_000));
    // Lost: the main cluster's worker computes what was taken back, and more.
    for _ in 0..10 {
        sim.apply(&Op::Deliver(0));
        sim.compute(1);
    }
    sim.settle();
    assert!(sim.master.is_done());
    let (stats, source) = sim.master.finish(None);
    assert!(source.into_problem().seen.iter().all(|&n| n == 1));
    let far = &stats.clusters[0];
    assert!(far.taken_back > 0, "{far:?}");
    assert!(stats.reassigned > 0);
    assert_eq!((far.lost, far.rejoins), (false, 1), "{far:?}");
    assert!(far.tasks_done_after_rejoin > 0, "{far:?}");
    assert!(far.discharged > 0, "late results discharged: {far:?}");
}

/// A link gone for good: the cluster stays lost, the run ends without it.
#[test]
fn a_cluster_whose_link_never_returns_stays_lost() {
    let shape = Shape {
        tasks: 12,
        workers: 1,
        buffers: 1,
        reassign: false,
        policy: Policy::OnDemand,
        far: Some((2, 2, 1, 1, None)),
    };
    let mut sim = Sim::new(&shape);
    for _ in 0..200 {
        sim.apply(&Op::Deliver(0));
        sim.apply(&Op::Tick(1));
    }
    sim.apply(&Op::LinkGone);
    sim.apply(&Op::Tick(11_000));
    sim.settle();
    let (stats, source) = sim.master.finish(None);
    assert!(source.into_problem().seen.iter().all(|&n| n == 1));
    let far = &stats.clusters[0];
    assert!(
        far.lost && far.rejoins == 0 && far.taken_back > 0,
        "{far:?}"
    );
}

/// Serves the highest rank first, rank 1 in batches of three.
struct HighestFirst;

impl Scheduler for HighestFirst {
    fn pick(&mut self, waiting: &crate::scheduler::Waiting) -> Option<usize> {
        waiting.highest_rank()
    }
    fn batch_size(&mut self, demand: &crate::scheduler::Demand) -> usize {
        if demand.worker == 1 {
            3
        } else {
            1
        }
    }
}

/// The batches a master core sends when ranks 1, 2, 3 ask for work in that order.
fn first_batches(scheduler: Box<dyn Scheduler>) -> Vec<(usize, usize)> {
    let machines = MachineFile::parse(Path::new("m.hosts"), "m\nw\nw\nw\n").unwrap();
    let problem = Count {
        tasks: 20,
        produced: 0,
        seen: vec![0; 20],
        mismatched: false,
    };
    let config = ConfigFile::defaults().run;
    let mut master = MasterCore::new(&machines, config, scheduler, ProblemSource::new(problem));
    let mut out = Vec::new();
    master.start(Duration::ZERO, &mut out).unwrap();
    for rank in 1..=3 {
        let ready = encode(&ToMaster::Ready { room: 1 });
        master
            .handle(Duration::ZERO, rank, &ready, &mut out)
            .unwrap();
    }
    out.into_iter()
        .filter_map(|o| match o {
            Output::Send { to, bytes } => match decode(&bytes, "batch").unwrap() {
                crate::protocol::ToWorker::Tasks(tasks) => Some((to, tasks.len())),
                crate::protocol::ToWorker::Stop => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_custom_scheduler_decides_whom_the_core_serves_and_how_much() {
    // The default serves in the order of the requests, one task each; this one the highest
    // rank first, rank 1 three at a time.
    assert_eq!(
        first_batches(Box::new(OnDemand)),
        vec![(1, 1), (2, 1), (3, 1)]
    );
    assert_eq!(
        first_batches(Box::new(HighestFirst)),
        vec![(3, 1), (2, 1), (1, 3)]
    );
}
