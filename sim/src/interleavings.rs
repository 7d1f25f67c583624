//! The cores in arbitrary interleavings: a [`World`] driven with no clock at all. Proptest
//! chooses which message is delivered next (each channel keeps its order, as MPI and the link
//! do), which worker finishes a task, when time passes, when the link goes down (past the
//! lost-after deadline: the cluster is lost, its tasks taken back, its late results arriving
//! after) and comes back, which re-planning decisions the master takes (credit, `nt`, drop
//! and re-admission of the far cluster), and the run's shape (workers, buffers, `nt`, `nr`, window, bounded
//! share, tail copies, scheduling policy). Whatever the interleaving, the run ends and the
//! problem sees every task exactly once.

use std::{
    collections::{BTreeMap, VecDeque},
    path::Path,
    time::Duration,
};

use hmw_core::{
    adapt::{Action, Decision},
    config::{ConfigFile, RunConfig},
    journal::Record,
    machinefile::MachineFile,
    protocol::{decode, encode, ToMaster, ToWorker, WireResult},
    roles::{MasterCore, Output, ProblemSource, ResumedSource},
    scheduler::{Demand, OnDemand, Policy, Scheduler, Waiting},
    stats::RunStats,
};
use proptest::prelude::*;

use crate::{
    problem::{SimProblem, SimResult, TaskCost},
    spec::{ClusterSetup, Sizes},
    world::{Transfer, Via, World},
};

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
    /// Each task taken back from the far cluster gives way to this many (0: it goes whole).
    redivide: u32,
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
    /// A re-planning decision for the far cluster.
    Adapt(Action),
}

const LOST_AFTER_S: f64 = 10.0;

/// A world whose messages wait in per-channel queues until proptest delivers them; messages
/// over the link move only while it is up.
struct Sim {
    now: Duration,
    world: World,
    channels: BTreeMap<(usize, usize), VecDeque<Transfer>>,
    link_gone: bool,
}

fn config(shape: &Shape) -> ConfigFile {
    let window = shape.far.map_or(0, |far| far.3);
    let mut config = ConfigFile::defaults();
    config.run.worker_buffers = shape.buffers;
    config.run.reassign_last_task = shape.reassign;
    config.run.statistics_interval = 0.5;
    config.run.wait_for_links = false;
    config.run.scheduler = shape.policy;
    config.cm.lost_after_s = LOST_AFTER_S;
    config.run.chunk_overhead_s = Some(1e-3);
    // The window as a setting: the machine file's `window=` is at least 1.
    config.cm.tasks_window = window as usize;
    config
}

impl Sim {
    fn new(shape: &Shape) -> Self {
        let mut main = String::from("master\n");
        for _ in 0..shape.workers {
            main.push_str("w\n");
        }
        let mut clusters = Vec::new();
        let mut far_setup = None;
        if let Some((far_workers, nt, nr, _, max_tasks)) = shape.far {
            let bound = max_tasks.map_or(String::new(), |m| format!(" max_tasks={m}"));
            main.push_str(&format!(
                "c # M 1 7000 name=a peer=b cluster=far nt={nt}{bound}\n"
            ));
            let mut text = format!("sub # cluster=far\nc # S 0 7000 h name=b peer=a nr={nr}\n");
            for _ in 0..far_workers {
                text.push_str("fw\n");
            }
            far_setup = Some(ClusterSetup {
                name: "far".into(),
                machines: MachineFile::parse(Path::new("far.hosts"), &text).unwrap(),
                parent: Some(0),
            });
        }
        clusters.push(ClusterSetup {
            name: "main".into(),
            machines: MachineFile::parse(Path::new("main.hosts"), &main).unwrap(),
            parent: None,
        });
        clusters.extend(far_setup);
        let problem =
            SimProblem::new(shape.tasks, TaskCost::fixed(1.0), 0).redividing(shape.redivide);
        let make = |run: &RunConfig| run.scheduler.scheduler(run.chunk_settings());
        let world =
            World::new(&clusters, &config(shape), problem, Sizes::default(), &make).unwrap();
        let mut sim = Sim {
            now: Duration::ZERO,
            world,
            channels: BTreeMap::new(),
            link_gone: false,
        };
        let sent = sim.world.start(sim.now).unwrap();
        sim.queue(sent);
        sim
    }

    fn queue(&mut self, sent: Vec<Transfer>) {
        for t in sent {
            self.channels
                .entry((t.from, t.to))
                .or_default()
                .push_back(t);
        }
    }

    fn over_link(t: &Transfer) -> bool {
        matches!(t.via, Via::Link { .. })
    }

    /// Channels with a message that can move now.
    fn ready(&self, link: bool) -> Vec<(usize, usize)> {
        let up = self.world.link_up(1);
        self.channels
            .iter()
            .filter(|(_, q)| {
                q.front()
                    .is_some_and(|t| Self::over_link(t) == link && (!link || up))
            })
            .map(|(&k, _)| k)
            .collect()
    }

    fn deliver(&mut self, channel: (usize, usize)) {
        let t = self
            .channels
            .get_mut(&channel)
            .unwrap()
            .pop_front()
            .unwrap();
        let sent = self
            .world
            .deliver(self.now, t)
            .expect("every core takes its messages");
        self.queue(sent);
    }

    fn compute(&mut self, node: usize) {
        if self.world.start_task(node).is_some() {
            let sent = self.world.finish_task(node, 0.001).unwrap();
            self.queue(sent);
        }
    }

    fn link_deliver(&mut self) {
        for channel in self.ready(true) {
            while self.channels[&channel].front().is_some() && self.world.link_up(1) {
                self.deliver(channel);
            }
        }
        self.tick(0);
    }

    fn tick(&mut self, millis: u64) {
        self.now += Duration::from_millis(millis);
        let sent = self.world.tick(self.now);
        self.queue(sent);
    }

    fn set_link(&mut self, up: bool) {
        if self.world.links().next().is_some() {
            self.world.set_link_up(1, up && !self.link_gone);
        }
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Deliver(pick) => {
                let ready = self.ready(false);
                if ready.is_empty() {
                    self.link_deliver();
                } else {
                    self.deliver(ready[pick % ready.len()]);
                }
            }
            Op::Compute(pick) => {
                let busy: Vec<usize> = self
                    .world
                    .workers()
                    .filter(|&n| self.world.holds_tasks(n))
                    .collect();
                if !busy.is_empty() {
                    self.compute(busy[pick % busy.len()]);
                }
            }
            Op::Tick(millis) => {
                self.link_deliver();
                self.tick(millis);
            }
            Op::LinkDown => self.set_link(false),
            Op::LinkUp => self.set_link(true),
            Op::LinkGone => {
                self.link_gone = true;
                self.set_link(false);
            }
            Op::Adapt(action) => self.adapt(action),
        }
    }

    /// Apply `action` to the far cluster (its CM is the main cluster's last rank).
    fn adapt(&mut self, action: Action) {
        if self.world.links().next().is_none() {
            return;
        }
        let rank = self
            .world
            .workers()
            .filter(|&n| self.world.locate(n).0 == 0)
            .count()
            + 1;
        let decision = Decision {
            rank,
            cluster: "far".into(),
            action,
            reason: "chosen by the test".into(),
        };
        let sent = self.world.adapt(self.now, &decision);
        self.queue(sent);
    }

    /// Bring the link up (unless it is gone) and let everything flow until the master is
    /// done.
    fn settle(&mut self) {
        self.set_link(true);
        // A cluster dropped with its master's workers all gone would wait for ever.
        self.adapt(Action::Readmit);
        for _ in 0..10_000 {
            if self.world.is_done() {
                return;
            }
            for channel in self.ready(false) {
                while self.channels[&channel].front().is_some() {
                    self.deliver(channel);
                }
            }
            let workers: Vec<usize> = self.world.workers().collect();
            for node in workers {
                self.compute(node);
            }
            self.link_deliver();
            self.tick(100);
        }
    }

    /// Far workers holding tasks.
    fn far_workers(&self) -> Vec<usize> {
        self.world
            .workers()
            .filter(|&n| self.world.locate(n).0 == 1)
            .collect()
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
    let redivide = prop_oneof![2 => Just(0u32), 1 => 1u32..4];
    (
        0u64..40,
        1usize..4,
        1u32..3,
        any::<bool>(),
        policy,
        far,
        redivide,
    )
        .prop_map(
            |(tasks, workers, buffers, reassign, policy, far, redivide)| Shape {
                tasks,
                workers,
                buffers,
                reassign,
                policy,
                far,
                redivide,
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
        2 => prop_oneof![
            (0u64..6).prop_map(Action::Credit),
            (1usize..5).prop_map(Action::Nt),
            (1usize..5).prop_map(Action::Nr),
            Just(Action::Drop),
            Just(Action::Readmit),
        ]
        .prop_map(Op::Adapt),
    ];
    proptest::collection::vec(op, 0..400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the interleaving, the run ends, and the problem sees every task exactly once:
    /// none lost, none twice, whether copies were handed out at the end, a cluster was lost
    /// and its results came late, results were joined far away, or tasks taken back gave
    /// way to others (those never, the others once).
    #[test]
    fn every_task_is_gathered_exactly_once(shape in shapes(), ops in ops()) {
        let mut sim = Sim::new(&shape);
        for op in &ops {
            sim.apply(op);
        }
        sim.settle();
        prop_assert!(sim.world.is_done(), "the run did not end");
        let (stats, problem) = sim.world.finish().unwrap();
        prop_assert!(problem.each_gathered_once(), "seen {:?}", problem.seen());
        prop_assert_eq!(stats.redivided, problem.redivided());
        let tasks = shape.tasks + u64::from(shape.redivide) * problem.redivided() - problem.redivided();
        prop_assert_eq!(stats.tasks, tasks);
        let done: u64 = stats.workers.iter().map(|w| w.tasks_done).sum::<u64>()
            + stats.clusters.iter().map(|c| c.tasks_done).sum::<u64>();
        prop_assert_eq!(done, tasks);
        if let Some((_, _, _, _, Some(max_tasks))) = shape.far {
            // A bounded share: never more new tasks than allowed (tasks taken back from
            // elsewhere, or the tasks that replaced them, and copies of the last tasks handed
            // out at the end may add to it).
            let back = stats.reassigned * u64::from(shape.redivide.max(1));
            prop_assert!(stats.clusters[0].tasks_done <= max_tasks + back + stats.tail_copies);
        }
    }
}

/// A run of `tasks` tasks, one main worker and a far cluster of two, once the far cluster has
/// taken tasks and computed none; tasks taken back from it give way to `redivide` others (0:
/// they go whole).
fn far_holding_tasks(tasks: u64, redivide: u32) -> Sim {
    let shape = Shape {
        tasks,
        workers: 1,
        buffers: 1,
        reassign: false,
        policy: Policy::OnDemand,
        far: Some((2, 2, 1, 1, None)),
        redivide,
    };
    let mut sim = Sim::new(&shape);
    for _ in 0..200 {
        sim.apply(&Op::Deliver(0));
        sim.apply(&Op::Tick(1));
    }
    assert!(
        sim.far_workers().iter().any(|&n| sim.world.holds_tasks(n)),
        "the far cluster holds tasks"
    );
    sim
}

/// The far cluster holding tasks is lost (its link down past the deadline while its workers
/// compute, their results waiting behind the link), the main cluster's worker computes what
/// was taken back (or what replaced it, with `redivide`), then the link comes back and the run
/// settles.
fn lost_then_back(redivide: u32) -> (RunStats, SimProblem) {
    let mut sim = far_holding_tasks(40, redivide);
    sim.apply(&Op::LinkDown);
    // Far workers compute: their results wait behind the link.
    for _ in 0..50 {
        for node in sim.far_workers() {
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
    assert!(sim.world.is_done());
    sim.world.finish().unwrap()
}

/// The lost cluster case, written out: the master takes its tasks back and its own workers
/// compute them; when the link comes back, the far results arrive late and are discharged,
/// and the cluster rejoins and takes new tasks.
#[test]
fn a_lost_cluster_gives_its_tasks_back_then_rejoins_and_late_results_are_discharged() {
    let (stats, problem) = lost_then_back(0);
    assert!(problem.each_gathered_once());
    let far = &stats.clusters[0];
    assert!(far.taken_back > 0, "{far:?}");
    assert!(stats.reassigned > 0);
    assert_eq!(stats.redivided, 0);
    assert_eq!(stats.tasks, 40);
    assert_eq!((far.lost, far.rejoins), (false, 1), "{far:?}");
    assert!(far.tasks_done_after_rejoin > 0, "{far:?}");
    assert!(far.discharged > 0, "late results discharged: {far:?}");
}

/// The same with a problem that divides each task taken back into three: every task taken
/// back gives way to three, which are gathered in its place; its late result is discharged.
#[test]
fn tasks_taken_back_from_a_lost_cluster_give_way_to_the_problems_division() {
    let (stats, problem) = lost_then_back(3);
    assert!(problem.each_gathered_once(), "seen {:?}", problem.seen());
    let far = &stats.clusters[0];
    assert_eq!(stats.redivided, stats.reassigned, "{stats:?}");
    assert!(stats.redivided > 0);
    assert_eq!(stats.tasks, 40 + 2 * stats.redivided);
    assert!(far.discharged > 0, "late results discharged: {far:?}");
}

/// A link gone for good: the cluster stays lost, the run ends without it.
#[test]
fn a_cluster_whose_link_never_returns_stays_lost() {
    let mut sim = far_holding_tasks(12, 0);
    sim.apply(&Op::LinkGone);
    sim.apply(&Op::Tick(11_000));
    sim.settle();
    let (stats, problem) = sim.world.finish().unwrap();
    assert!(problem.each_gathered_once());
    let far = &stats.clusters[0];
    assert!(
        far.lost && far.rejoins == 0 && far.taken_back > 0,
        "{far:?}"
    );
}

/// The task ids of each batch `out` sends to `rank`.
fn batches_to(out: &[Output], rank: usize) -> Vec<Vec<u64>> {
    out.iter()
        .filter_map(|o| match o {
            Output::Send { to, bytes } if *to == rank => match decode(bytes, "batch").unwrap() {
                ToWorker::Tasks(tasks) => Some(tasks.iter().map(|t| t.id).collect()),
                ToWorker::Stop | ToWorker::Join(_) => None,
            },
            _ => None,
        })
        .collect()
}

/// A CM line of a master's machine file leading to cluster `far`, one task per batch.
const FAR_CM: &str = "c # M 1 7000 name=a peer=b cluster=far nt=1";

type SimMaster = MasterCore<ProblemSource<SimProblem>>;

/// A master core over `tasks` tasks of one operation, fed by the ranks of the machine file
/// `text`, started; and the outputs of its start.
fn started_master(
    text: &str,
    tasks: u64,
    config: RunConfig,
    scheduler: Box<dyn Scheduler>,
) -> (SimMaster, Vec<Output>) {
    let machines = MachineFile::parse(Path::new("m.hosts"), text).unwrap();
    let problem = ProblemSource::new(SimProblem::new(tasks, TaskCost::fixed(1.0), 0));
    let mut master = MasterCore::new(&machines, config, scheduler, problem);
    let mut out = Vec::new();
    master.start(Duration::ZERO, &mut out).unwrap();
    (master, out)
}

/// A rank's offer of room for `room` more batches, encoded.
fn ready(room: u32) -> Vec<u8> {
    encode(&ToMaster::Ready { room })
}

/// A credit bounds what a cluster holds; a drop takes its tasks back and parks the room it
/// offers; a re-admission serves that room with new tasks, not the ones it was dropped with.
#[test]
fn credit_drop_and_readmission_through_the_master_core() {
    let text = format!("m\nw\n{FAR_CM}\n");
    let config = ConfigFile::defaults().run;
    let (mut master, mut out) = started_master(&text, 20, config, Box::new(OnDemand));
    let decision = |action| Decision {
        rank: 2,
        cluster: "far".into(),
        action,
        reason: "test".into(),
    };
    let now = Duration::ZERO;
    master.handle(now, 1, &ready(1), &mut out).unwrap();
    master.adapt(now, &decision(Action::Credit(3)), &mut out);
    master.handle(now, 2, &ready(10), &mut out).unwrap();
    assert_eq!(batches_to(&out, 2), vec![vec![1], vec![2], vec![3]]);
    out.clear();
    master.adapt(now, &decision(Action::Drop), &mut out);
    // Room offered while dropped waits too.
    master.handle(now, 2, &ready(2), &mut out).unwrap();
    assert!(batches_to(&out, 2).is_empty());
    master.adapt(now, &decision(Action::Credit(4)), &mut out);
    master.adapt(now, &decision(Action::Readmit), &mut out);
    assert_eq!(
        batches_to(&out, 2),
        vec![vec![4], vec![5], vec![6], vec![7]]
    );
}

/// At the end a rank holding nothing (a worker, or a CM whose cluster holds nothing) gets a
/// copy of, among the tasks held by the fewest, the one handed out last: its holder computes
/// its tasks in the order it received them and reaches that one last.
#[test]
fn an_idle_rank_copies_the_task_its_holder_reaches_last() {
    for rank_2 in ["w", FAR_CM] {
        let text = format!("m\nw\n{rank_2}\n");
        let config = RunConfig {
            reassign_last_task: true,
            ..ConfigFile::defaults().run
        };
        let (mut master, mut out) = started_master(&text, 3, config, Box::new(OnDemand));
        let now = Duration::ZERO;
        master.handle(now, 1, &ready(2), &mut out).unwrap();
        master.handle(now, 2, &ready(1), &mut out).unwrap();
        let held = batches_to(&out, 1).concat();
        let [done] = batches_to(&out, 2).concat()[..] else {
            panic!("rank 2 should hold one task: {out:?}");
        };
        assert_eq!(held.len(), 2, "rank 1 holds two tasks");
        out.clear();
        let result = WireResult {
            ids: vec![done].into(),
            operations: 1.0,
            busy_s: 1.0,
            decode_s: 0.0,
            encode_s: 0.0,
            body: encode(&SimResult(vec![done])),
        };
        let result = encode(&ToMaster::Result { result, room: 1 });
        master.handle(now, 2, &result, &mut out).unwrap();
        assert_eq!(batches_to(&out, 2), vec![vec![held[1]]], "{rank_2}");
    }
}

/// Serves the highest rank first, rank 1 in batches of three.
struct HighestFirst;

impl Scheduler for HighestFirst {
    fn pick(&mut self, waiting: &Waiting) -> Option<usize> {
        waiting.highest_rank()
    }
    fn batch_size(&mut self, demand: &Demand) -> usize {
        if demand.worker == 1 {
            3
        } else {
            1
        }
    }
}

/// The batches a master core sends when ranks 1, 2, 3 ask for work in that order.
fn first_batches(scheduler: Box<dyn Scheduler>) -> Vec<(usize, usize)> {
    let config = ConfigFile::defaults().run;
    let (mut master, mut out) = started_master("m\nw\nw\nw\n", 20, config, scheduler);
    for rank in 1..=3 {
        master
            .handle(Duration::ZERO, rank, &ready(1), &mut out)
            .unwrap();
    }
    out.into_iter()
        .filter_map(|o| match o {
            Output::Send { to, bytes } => match decode(&bytes, "batch").unwrap() {
                ToWorker::Tasks(tasks) => Some((to, tasks.len())),
                ToWorker::Stop | ToWorker::Join(_) => None,
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

/// A task taken back from a lost cluster is not handed to it again when it comes back: while
/// that cluster is served first, the round goes on to the others, and a worker takes the task.
/// (Found by `every_task_is_gathered_exactly_once` in CI: the round ended at the cluster, the
/// task waited for ever.)
#[test]
fn a_task_a_cluster_lost_goes_to_others_even_when_it_asks_first() {
    let text = format!("m\nw\n{FAR_CM}\n");
    let config = ConfigFile::defaults().run;
    let (mut master, mut out) = started_master(&text, 1, config, Box::new(OnDemand));
    let now = Duration::ZERO;
    // The worker speaks, asking for nothing yet; the cluster takes the task.
    master.handle(now, 1, &ready(0), &mut out).unwrap();
    master.handle(now, 2, &ready(1), &mut out).unwrap();
    let [held] = batches_to(&out, 2).concat()[..] else {
        panic!("the cluster should hold the task: {out:?}");
    };
    master
        .handle(now, 2, &encode(&ToMaster::Lost), &mut out)
        .unwrap();
    master
        .handle(now, 2, &encode(&ToMaster::Back), &mut out)
        .unwrap();
    out.clear();
    // The cluster asks first, then the worker.
    master.handle(now, 2, &ready(1), &mut out).unwrap();
    master.handle(now, 1, &ready(1), &mut out).unwrap();
    assert!(batches_to(&out, 2).is_empty(), "{out:?}");
    assert_eq!(batches_to(&out, 1), vec![vec![held]]);
}

/// A master resumed from its journal gathers a far cluster's result for a task it has not
/// produced yet (the cluster computed it for the master before the restart), and never hands
/// that task out: every task is gathered once over the journal and the run.
#[test]
fn a_resumed_master_adopts_what_a_far_cluster_computed_before_it() {
    let result_of = |k: u64| WireResult {
        ids: vec![k].into(),
        operations: 1.0,
        busy_s: 1.0,
        decode_s: 0.0,
        encode_s: 0.0,
        body: encode(&SimResult(vec![k])),
    };
    let journaled: Vec<Vec<u8>> = [0, 1].map(|k| encode(&SimResult(vec![k]))).into();
    let records: Vec<Record<'_>> = journaled
        .iter()
        .enumerate()
        .map(|(k, body)| Record::Gathered {
            ids: vec![k as u64],
            operations: 1.0,
            body,
        })
        .collect();
    let problem = ProblemSource::new(SimProblem::new(6, TaskCost::fixed(1.0), 0));
    let source = ResumedSource::replay(problem, &records).unwrap();
    let machines = MachineFile::parse(Path::new("m.hosts"), &format!("m\nw\n{FAR_CM}\n")).unwrap();
    let config = ConfigFile::defaults().run;
    let mut master = MasterCore::new(&machines, config, Box::new(OnDemand), source);
    let now = Duration::ZERO;
    let mut out = Vec::new();
    master.start(now, &mut out).unwrap();
    let far = encode(&ToMaster::Result {
        result: result_of(4),
        room: 0,
    });
    master.handle(now, 2, &far, &mut out).unwrap();
    master.handle(now, 1, &ready(1), &mut out).unwrap();
    let mut handed = Vec::new();
    while !master.is_done() {
        let sends: Vec<Output> = std::mem::take(&mut out);
        assert!(!sends.is_empty(), "the run stalled");
        for output in sends {
            let Output::Send { to, bytes } = output else {
                continue;
            };
            let answer = match decode(&bytes, "to a rank").unwrap() {
                ToWorker::Tasks(tasks) => {
                    let [task] = &tasks[..] else {
                        panic!("one task")
                    };
                    handed.push(task.id);
                    ToMaster::Result {
                        result: result_of(task.id),
                        room: 1,
                    }
                }
                ToWorker::Stop => ToMaster::Bye { report: None },
                ToWorker::Join(_) => continue,
            };
            master.handle(now, to, &encode(&answer), &mut out).unwrap();
        }
    }
    assert_eq!(
        handed,
        [2, 3, 5],
        "tasks 0, 1 journaled and 4 adopted are not handed out"
    );
    let (stats, source) = master.finish();
    assert_eq!(
        stats.tasks, 4,
        "the far cluster's result and the worker's three"
    );
    let problem = source.into_inner().into_problem();
    assert!(problem.each_gathered_once(), "{:?}", problem.seen());
}
