//! The pipeline's cores in arbitrary interleavings: a controller, a far cluster's head, the
//! nodes of both clusters and the two CMs of the link between them, wired as the drivers wire
//! them, with no clock. Proptest chooses which message is delivered next (each channel keeps
//! its order, as MPI and the link do), which node computes its next job, which nodes slow
//! down (their times travel with the items and the controller remaps on them), and the run's
//! shape (stages, nodes on each side, speeds, items, window, replica buffers, the mapping
//! mode). Whatever the interleaving, the run ends, and the sink receives every item exactly
//! once, in the source's order, with its value through every stage.

use std::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    path::Path,
    time::Duration,
};

use hmw_core::{
    machinefile::MachineFile,
    pipeline::{
        config::{ClusterEntry, PipelineConfig},
        stats::{PipelineStats, RankReport},
    },
    protocol::{
        decode, encode,
        pipeline::{Address, Calibration},
    },
    roles::{
        pipeline::{
            ControllerCore, ControllerSetup, HeadCore, ItemSource, Job, NodeCore, PipeOutput,
            RelayCore, RelayOutput, Routes,
        },
        LinkOutbox, LinkView,
    },
};
use hmw_model::plan::{MappingMode, Threshold};
use proptest::prelude::*;

/// The source: items 0, 1, 2, ...
struct Counting {
    next: u64,
    total: u64,
}

impl ItemSource for Counting {
    fn next_item(&mut self) -> Option<Vec<u8>> {
        (self.next < self.total).then(|| {
            self.next += 1;
            encode(&(self.next - 1))
        })
    }
}

/// Stage `j` of the simulated application.
fn stage(j: usize, x: u64) -> u64 {
    x.wrapping_mul(31).wrapping_add(j as u64 + 1)
}

/// The shape of a run.
#[derive(Debug, Clone)]
struct Shape {
    stages: usize,
    items: u64,
    /// Speed factors of the main cluster's nodes and of the far cluster's (none: no far
    /// cluster).
    main: Vec<f64>,
    far: Vec<f64>,
    window: Option<u64>,
    buffers: u64,
    mapping: MappingMode,
}

/// What proptest chooses next.
#[derive(Debug, Clone)]
enum Op {
    /// Deliver the oldest message of a channel with one (picked among them).
    Deliver(usize),
    /// A node with a job computes it (picked among them).
    Compute(usize),
    /// A node (picked) becomes five times slower, or fast again.
    Slow(usize),
    /// Time passes (milliseconds).
    Tick(u64),
}

/// The cores and what travels between them.
struct Sim {
    now: Duration,
    stages: usize,
    controller: ControllerCore<Counting>,
    heads: BTreeMap<Address, HeadCore>,
    nodes: BTreeMap<Address, NodeCore>,
    relays: BTreeMap<Address, RelayCore>,
    /// Each CM's peer across its link.
    peer: BTreeMap<Address, Address>,
    channels: BTreeMap<(Address, Address), VecDeque<Vec<u8>>>,
    speed: BTreeMap<Address, f64>,
    slow: BTreeSet<Address>,
    delivered: Vec<(u64, u64)>,
}

fn machines(text: &str) -> MachineFile {
    MachineFile::parse(Path::new("hosts"), text).unwrap()
}

impl Sim {
    fn new(shape: &Shape) -> Self {
        let two = !shape.far.is_empty();
        let mut main_text = String::from("m # cluster=main\n");
        for k in 0..shape.main.len() {
            main_text.push_str(&format!("n{k}\n"));
        }
        let mut far_text = String::from("h # cluster=far\nfc # S 0 7000 mc name=b peer=a\n");
        for k in 0..shape.far.len() {
            far_text.push_str(&format!("f{k}\n"));
        }
        if two {
            main_text.push_str("mc # M 1 7000 name=a peer=b cluster=far\n");
        }
        let mut config = PipelineConfig {
            threshold: Threshold::Fixed(0.5),
            detection_items: 2,
            calibration_repeats: 1,
            window: shape.window,
            replica_buffers: shape.buffers,
            mapping: shape.mapping,
            ..PipelineConfig::default()
        };
        if two {
            let cluster = |name: &str, parent: Option<&str>| ClusterEntry {
                name: name.into(),
                parent: parent.map(str::to_string),
                lan_bytes_per_s: Some(1e9),
                wan_in_bytes_per_s: parent.map(|_| 1e6),
                wan_out_bytes_per_s: parent.map(|_| 1e6),
                wan_rtt_s: parent.map(|_| 0.01),
            };
            config.cluster = vec![cluster("main", None), cluster("far", Some("main"))];
        }
        let main = machines(&main_text);
        let routes = Routes::new(&config, &main, 0).unwrap();
        let setup = ControllerSetup {
            config: config.clone(),
            stages: (0..shape.stages).map(|j| (format!("s{j}"), 1.0)).collect(),
            own: routes.cluster_ranks(&main),
            routes,
            statistics_interval: 0.0,
        };
        let source = Counting {
            next: 0,
            total: shape.items,
        };
        let mut sim = Sim {
            now: Duration::ZERO,
            stages: shape.stages,
            controller: ControllerCore::new(setup, source),
            heads: BTreeMap::new(),
            nodes: BTreeMap::new(),
            relays: BTreeMap::new(),
            peer: BTreeMap::new(),
            channels: BTreeMap::new(),
            speed: BTreeMap::new(),
            slow: BTreeSet::new(),
            delivered: Vec::new(),
        };
        let mut clusters = vec![(0, main, shape.main.clone())];
        if two {
            clusters.push((1, machines(&far_text), shape.far.clone()));
        }
        let give_up = Duration::from_secs(3600);
        let mut starts = Vec::new();
        for (c, file, speeds) in &clusters {
            let mut speeds = speeds.iter();
            for rank in 0..file.rank_count() {
                let routes = Routes::new(&config, file, rank).unwrap();
                let at = Address::new(*c, rank);
                match (rank, &file.ranks[rank].cm) {
                    (0, _) if *c == 0 => {}
                    (0, _) => {
                        let ranks = routes.cluster_ranks(file);
                        let mut head = HeadCore::new(routes, ranks, shape.buffers);
                        let mut out = Vec::new();
                        head.start(&mut out).unwrap();
                        starts.push((at, out));
                        sim.heads.insert(at, head);
                    }
                    (_, Some(_)) => {
                        sim.relays.insert(at, RelayCore::new(routes, give_up));
                    }
                    (_, None) => {
                        sim.speed.insert(at, *speeds.next().unwrap());
                        sim.nodes.insert(
                            at,
                            NodeCore::new(routes, &file.ranks[rank].host, shape.stages),
                        );
                    }
                }
            }
        }
        if two {
            let (a, b) = (Address::new(0, shape.main.len() + 1), Address::new(1, 1));
            sim.peer.insert(a, b);
            sim.peer.insert(b, a);
        }
        let mut out = Vec::new();
        sim.controller.start(Duration::ZERO, &mut out).unwrap();
        sim.sent(Address::CONTROLLER, out);
        for (at, out) in starts {
            sim.sent(at, out);
        }
        sim
    }

    /// Queue what `from` sent.
    fn sent(&mut self, from: Address, out: Vec<PipeOutput>) {
        for output in out {
            match output {
                PipeOutput::Send { to, bytes } => self
                    .channels
                    .entry((from, Address::new(from.cluster(), to)))
                    .or_default()
                    .push_back(bytes),
                PipeOutput::Deliver { seq, body } => {
                    let value: u64 = decode(&body, "sink").unwrap();
                    self.delivered.push((seq, value));
                }
                PipeOutput::Progress(_) => {}
            }
        }
    }

    /// Queue what CM `at` did, and move its outbox over the link.
    fn relayed(&mut self, at: Address, out: Vec<RelayOutput>) {
        let mut out = VecDeque::from(out);
        while let Some(output) = out.pop_front() {
            match output {
                RelayOutput::ToRank { rank, bytes } => self
                    .channels
                    .entry((at, Address::new(at.cluster(), rank)))
                    .or_default()
                    .push_back(bytes),
                RelayOutput::Stopped => {
                    let mut more = Vec::new();
                    let relay = self.relays.get_mut(&at).unwrap();
                    relay.finish(RankReport::default(), &mut more).unwrap();
                    out.extend(more);
                }
                RelayOutput::CloseLink(_) => {}
            }
        }
        let peer = self.peer[&at];
        let relay = self.relays.get_mut(&at).unwrap();
        while let Some(bytes) = relay.pop_for_link() {
            self.channels
                .entry((at, peer))
                .or_default()
                .push_back(bytes);
        }
    }

    fn deliver(&mut self, (from, to): (Address, Address)) {
        let bytes = self
            .channels
            .get_mut(&(from, to))
            .and_then(VecDeque::pop_front)
            .unwrap();
        let mut out = Vec::new();
        if to == Address::CONTROLLER {
            self.controller
                .handle(self.now, from.rank(), &bytes, &mut out)
                .unwrap();
            self.sent(to, out);
        } else if let Some(head) = self.heads.get_mut(&to) {
            head.handle(from.rank(), &bytes, &mut out).unwrap();
            self.sent(to, out);
        } else if let Some(node) = self.nodes.get_mut(&to) {
            node.handle(from.rank(), &bytes, &mut out).unwrap();
            self.sent(to, out);
        } else {
            let relay = self.relays.get_mut(&to).unwrap();
            let mut relayed = Vec::new();
            if self.peer.get(&to) == Some(&from) {
                relay.on_link(bytes, &mut relayed).unwrap();
            } else {
                relay.on_cluster(from.rank(), bytes, &mut relayed).unwrap();
            }
            let link = LinkView {
                connected: true,
                ever_connected: true,
                ..LinkView::default()
            };
            relay.on_tick(self.now, &link).unwrap();
            self.relayed(to, relayed);
        }
    }

    /// The seconds stage `j` takes on `node` now.
    fn stage_s(&self, node: Address, j: usize) -> f64 {
        let slow = if self.slow.contains(&node) { 5.0 } else { 1.0 };
        (1.0 + j as f64) * 0.01 * slow / self.speed[&node]
    }

    fn compute(&mut self, at: Address) {
        let Some(job) = self.nodes.get_mut(&at).unwrap().next_job() else {
            return;
        };
        let mut out = Vec::new();
        match job {
            Job::Item { item, first, last } => {
                let mut x: u64 = decode(&item.body, "item").unwrap();
                let mut times = Vec::new();
                for j in first..=last {
                    x = stage(j, x);
                    times.push(self.stage_s(at, j));
                }
                let node = self.nodes.get_mut(&at).unwrap();
                node.on_item_done(item, first, encode(&x), &times, &mut out)
                    .unwrap();
            }
            Job::Calibrate { .. } => {
                let calibration = Calibration {
                    stage_s: (0..self.stages).map(|j| self.stage_s(at, j)).collect(),
                    output_bytes: vec![8; self.stages],
                    chain_cv: 0.0,
                };
                let node = self.nodes.get_mut(&at).unwrap();
                node.on_calibrated(calibration, &mut out).unwrap();
            }
        }
        self.sent(at, out);
    }

    fn busy_channels(&self) -> Vec<(Address, Address)> {
        self.channels
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(&k, _)| k)
            .collect()
    }

    fn working_nodes(&self) -> Vec<Address> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.has_work())
            .map(|(&a, _)| a)
            .collect()
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Deliver(i) => {
                let busy = self.busy_channels();
                if !busy.is_empty() {
                    self.deliver(busy[i % busy.len()]);
                }
            }
            Op::Compute(i) => {
                let working = self.working_nodes();
                if !working.is_empty() {
                    self.compute(working[i % working.len()]);
                }
            }
            Op::Slow(i) => {
                let nodes: Vec<Address> = self.nodes.keys().copied().collect();
                let node = nodes[i % nodes.len()];
                if !self.slow.remove(&node) {
                    self.slow.insert(node);
                }
            }
            Op::Tick(ms) => self.now += Duration::from_millis(ms),
        }
    }

    /// Deliver and compute until nothing moves.
    fn settle(&mut self) {
        for _ in 0..200_000 {
            if let Some(&channel) = self.busy_channels().first() {
                self.deliver(channel);
            } else if let Some(&node) = self.working_nodes().first() {
                self.compute(node);
            } else {
                return;
            }
        }
        panic!("the run did not settle");
    }

    fn all_done(&self) -> bool {
        self.controller.is_done()
            && self.heads.values().all(HeadCore::is_done)
            && self.nodes.values().all(NodeCore::is_done)
            && self.relays.values().all(RelayCore::is_done)
    }

    fn finish(self) -> (PipelineStats, Vec<(u64, u64)>) {
        let (stats, _) = self.controller.finish();
        (stats, self.delivered)
    }
}

fn shapes() -> impl Strategy<Value = Shape> {
    let speeds = |min: usize| {
        proptest::collection::vec(prop_oneof![Just(1.0), Just(2.0), Just(0.5)], min..4)
    };
    (
        1usize..5,
        1u64..25,
        speeds(1),
        prop_oneof![Just(Vec::new()), speeds(1)],
        prop_oneof![Just(None), (1u64..6).prop_map(Some)],
        1u64..3,
        prop_oneof![
            Just(MappingMode::Model),
            Just(MappingMode::Greedy),
            Just(MappingMode::Naive)
        ],
    )
        .prop_map(
            |(stages, items, main, far, window, buffers, mapping)| Shape {
                stages,
                items,
                main,
                far,
                window,
                buffers,
                mapping,
            },
        )
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(
        prop_oneof![
            6 => any::<usize>().prop_map(Op::Deliver),
            3 => any::<usize>().prop_map(Op::Compute),
            1 => any::<usize>().prop_map(Op::Slow),
            1 => (0u64..500).prop_map(Op::Tick),
        ],
        0..400,
    )
}

/// The value item `seq` has after every stage.
fn through(stages: usize, seq: u64) -> u64 {
    (0..stages).fold(seq, |x, j| stage(j, x))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the interleaving and whatever slows down, the run ends, every rank says
    /// `Bye`, and the sink receives every item exactly once, in order, through every stage,
    /// across drains and remaps.
    #[test]
    fn every_item_reaches_the_sink_once_in_order(shape in shapes(), ops in ops()) {
        let mut sim = Sim::new(&shape);
        for op in &ops {
            sim.apply(op);
        }
        sim.settle();
        prop_assert!(sim.all_done(), "the run did not end");
        let (stats, delivered) = sim.finish();
        let expected: Vec<(u64, u64)> =
            (0..shape.items).map(|s| (s, through(shape.stages, s))).collect();
        prop_assert_eq!(delivered, expected);
        prop_assert_eq!(stats.items, shape.items);
        prop_assert_eq!(stats.mappings.len(), stats.remaps() + 1);
    }
}

/// A node slowed five times in the middle of a run makes the controller drain, calibrate,
/// remap onto the other nodes and go on; the items still come once each, in order.
#[test]
fn a_slowed_node_is_remapped_around() {
    let shape = Shape {
        stages: 2,
        items: 60,
        main: vec![1.0, 1.0, 1.0],
        far: Vec::new(),
        window: Some(2),
        buffers: 1,
        mapping: MappingMode::Greedy,
    };
    let mut sim = Sim::new(&shape);
    // Settle the start and a few items, slow the first node of the mapping, go on.
    for _ in 0..60 {
        sim.apply(&Op::Deliver(0));
        sim.apply(&Op::Compute(0));
    }
    let first = *sim.nodes.keys().next().unwrap();
    sim.slow.insert(first);
    sim.settle();
    assert!(sim.all_done());
    let (stats, delivered) = sim.finish();
    assert_eq!(delivered.len(), 60);
    assert!(stats.remaps() >= 1, "{stats:#?}");
    let kinds: Vec<&str> = stats
        .decisions
        .iter()
        .map(|d| match d.decision {
            hmw_core::pipeline::stats::DecisionKind::Drain { .. } => "drain",
            hmw_core::pipeline::stats::DecisionKind::Calibrate { .. } => "calibrate",
            hmw_core::pipeline::stats::DecisionKind::Remap { .. } => "remap",
            hmw_core::pipeline::stats::DecisionKind::Resume { .. } => "resume",
        })
        .collect();
    assert_eq!(
        kinds[..5],
        ["calibrate", "drain", "calibrate", "remap", "resume"]
    );
    // The slowed node no longer computes the bottleneck's stage alone.
    let last = stats.mappings.last().unwrap();
    assert!(
        last.groups.iter().all(|g| g.replicas != vec![first]),
        "{last:?}"
    );
}
