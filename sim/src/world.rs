//! The cores of a tree of clusters, wired as the MPI drivers wire them, with no clock and no
//! transport: a [`World`] takes a message for a node, calls that node's core, and returns what
//! the core sends as [`Transfer`]s. When a transfer arrives, and when a worker finishes a task,
//! is the business of whoever drives the world: the virtual-time engine ([`crate::engine`]),
//! or a property test choosing an arbitrary interleaving.
//!
//! Each cluster is laid out by its machine file, as `hmw launch` writes it: rank 0 is the
//! master (the main cluster) or the sub-master, a `# M` line a CM leading to a child cluster
//! ([`CmMasterSide`]), a `# S` line the CM facing the cluster's parent ([`CmSubMasterSide`]),
//! other lines workers ([`WorkerCore`]). The cores are the types the drivers of
//! `hmw` run: [`MasterCore`] over the application's problem, the sub-master core
//! [`SubMasterCore::for_cluster`] builds.

use std::{borrow::Borrow, collections::VecDeque, time::Duration};

use hmw_core::{
    config::{ConfigFile, RunConfig},
    machinefile::{Facing, MachineFile},
    protocol::{decode, encode, tasks_in_batch, tasks_in_result, TaskIds, WireResult},
    roles::{
        CmMasterSide, CmOutput, CmSubMasterSide, Computed, LinkOutbox, LinkView, MasterCore,
        Output, ProblemSource, Queued, Received, SubMasterCore, TaskSource, WorkerCore,
    },
    scheduler::Scheduler,
    stats::{LinkSummary, RunStats},
    CoreError, Task, WorkerContext,
};

use crate::{
    problem::{SimProblem, SimTask},
    spec::{ClusterSetup, Sizes},
};

/// Something went wrong in a simulated run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The clusters do not fit together.
    #[error("{0}")]
    Setup(String),
    /// A core refused a message (a bug in a core, or in the simulator).
    #[error("node {node} (cluster `{cluster}`, rank {rank}): {error}")]
    Core {
        /// The node.
        node: usize,
        /// Its cluster.
        cluster: String,
        /// Its rank there.
        rank: usize,
        /// What the core said.
        error: CoreError,
    },
    /// Nothing more can happen and the master is not done.
    #[error("the simulated run stalled at t = {at_s:.3} s with {gathered} tasks gathered")]
    Stalled {
        /// Virtual time, seconds.
        at_s: f64,
        /// Tasks gathered by then.
        gathered: u64,
    },
}

/// Makes the scheduler of a master or sub-master from the run's configuration.
pub type MakeScheduler<'a> = &'a dyn Fn(&RunConfig) -> Box<dyn Scheduler>;

/// How a transfer travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Over the LAN of `cluster`, to or from its head (rank 0).
    Lan {
        /// The cluster.
        cluster: usize,
    },
    /// Over link `link` (the link of cluster `link` to its parent), down (tasks, parent to
    /// child) or up.
    Link {
        /// The child cluster whose link it is.
        link: usize,
        /// Parent to child.
        down: bool,
    },
}

/// A message on its way from one node to another.
#[derive(Debug, Clone)]
pub struct Transfer {
    /// Sending node.
    pub from: usize,
    /// Receiving node.
    pub to: usize,
    /// The encoded message.
    pub bytes: Vec<u8>,
    /// Its size as the plan counts it (`task_bytes` per task, ...), bytes.
    pub size: f64,
    /// Its way.
    pub via: Via,
}

/// A worker's core and the tasks it holds.
struct SimWorker {
    core: WorkerCore,
    queue: VecDeque<Queued>,
    /// The task it computes, and whether it runs inline.
    running: Option<bool>,
    stopped: bool,
}

/// The role of a node.
enum Slot {
    Master(Box<MasterCore<ProblemSource<SimProblem>>>),
    /// A sub-master.
    Sub(Box<SubMasterCore<SimTask>>),
    /// A CM in the parent cluster, leading to child cluster `link`.
    CmUp {
        core: Box<CmMasterSide>,
        link: usize,
        bye_sent: bool,
    },
    /// The CM of cluster `link` facing its parent.
    CmDown {
        core: Box<CmSubMasterSide>,
        link: usize,
    },
    Worker(SimWorker),
}

/// The link of a child cluster to its parent.
struct Link {
    /// The parent's CM (a `CmUp` node) and the child's (a `CmDown` node).
    parent_cm: usize,
    child_cm: usize,
    /// Tasks per inter-cluster task.
    nt: usize,
    up: bool,
    /// Its round trip, seconds, as the CMs' link measures it.
    rtt_s: f64,
    bytes_down: f64,
    bytes_up: f64,
    /// Bytes in each direction's send buffer (down, up), as the plan counts them: messages
    /// sent over the link and not yet arrived (their acknowledgement is taken as instant).
    buffered: [f64; 2],
}

impl Link {
    /// The index of a direction in `buffered`.
    fn way(down: bool) -> usize {
        usize::from(!down)
    }
}

/// The cores of a tree of clusters.
pub struct World {
    names: Vec<String>,
    /// First node of each cluster (its rank 0).
    base: Vec<usize>,
    slots: Vec<Slot>,
    /// The nodes with timers (masters, sub-masters, CMs), in order: not the workers, which
    /// may be a million.
    timed: Vec<usize>,
    cluster_of: Vec<usize>,
    /// Indexed by the child cluster; `None` for the main cluster.
    links: Vec<Option<Link>>,
    sizes: Sizes,
    /// Bytes a link's send buffer holds each way (`[cm] send_memory`).
    send_buffer: f64,
    out: Vec<Output>,
    cm_out: Vec<CmOutput>,
    sent: Vec<Transfer>,
    /// CPU time spent inside the main master core's `handle`, when measured.
    master_handle: Option<Duration>,
    /// What a simulated worker's tasks see of their worker.
    context: WorkerContext,
    /// The latest time the world was given.
    now: Duration,
}

impl World {
    /// The cores of `clusters` (the main one first; owned or borrowed), with `config`, the
    /// main master's `problem`, messages counted at `sizes`, schedulers made by
    /// `make_scheduler`.
    pub fn new<C: Borrow<ClusterSetup>>(
        clusters: &[C],
        config: &ConfigFile,
        problem: SimProblem,
        sizes: Sizes,
        make_scheduler: MakeScheduler<'_>,
    ) -> Result<Self, SimError> {
        let clusters: &[&ClusterSetup] = &clusters.iter().map(Borrow::borrow).collect::<Vec<_>>();
        let setup = |m: String| SimError::Setup(m);
        let mut base = Vec::new();
        let mut next = 0;
        for c in clusters {
            base.push(next);
            next += c.machines.ranks.len();
        }
        let lost_after = Duration::from_secs_f64(config.cm.lost_after_s.max(0.0));
        let mut links: Vec<Option<Link>> = (0..clusters.len()).map(|_| None).collect();
        for (i, c) in clusters.iter().enumerate() {
            let Some(parent) = c.parent else {
                if i != 0 {
                    return Err(setup(format!("cluster `{}` has no parent", c.name)));
                }
                continue;
            };
            let p = clusters
                .get(parent)
                .ok_or_else(|| setup(format!("cluster `{}`: no parent {parent}", c.name)))?;
            let cm = p
                .machines
                .master_facing_cms()
                .into_iter()
                .find(|&r| p.machines.ranks[r].annotations.cluster.as_deref() == Some(&c.name))
                .ok_or_else(|| {
                    setup(format!(
                        "cluster `{}` has no CM line `cluster={}`",
                        p.name, c.name
                    ))
                })?;
            let up = c.machines.upstream().ok_or_else(|| {
                setup(format!("cluster `{}` has no CM facing its parent", c.name))
            })?;
            links[i] = Some(Link {
                parent_cm: base[parent] + cm,
                child_cm: base[i] + up,
                nt: p.machines.ranks[cm].annotations.nt.unwrap_or(1),
                up: true,
                rtt_s: 0.0,
                bytes_down: 0.0,
                bytes_up: 0.0,
                buffered: [0.0; 2],
            });
        }
        let mut problem = Some(problem);
        let mut slots = Vec::with_capacity(next);
        let mut cluster_of = Vec::with_capacity(next);
        for (i, c) in clusters.iter().enumerate() {
            for (rank, line) in c.machines.ranks.iter().enumerate() {
                cluster_of.push(i);
                let slot = match (&line.cm, rank) {
                    (_, 0) if i == 0 => {
                        let problem = problem.take().expect("one main master");
                        let core = master_core(&c.machines, config, problem, make_scheduler);
                        Slot::Master(Box::new(core))
                    }
                    (_, 0) => Slot::Sub(Box::new(sub_master_core(
                        &c.machines,
                        config,
                        make_scheduler,
                    ))),
                    (Some(cm), _) if cm.facing == Facing::Master => {
                        let link = links
                            .iter()
                            .position(|l| l.as_ref().is_some_and(|l| l.parent_cm == base[i] + rank))
                            .ok_or_else(|| {
                                setup(format!(
                                    "cluster `{}`, rank {rank}: a CM leading to no cluster of \
                                     the tree",
                                    c.name
                                ))
                            })?;
                        let window = line
                            .annotations
                            .window
                            .unwrap_or(config.cm.tasks_window as u64);
                        Slot::CmUp {
                            core: Box::new(CmMasterSide::new(rank, window, lost_after, None)),
                            link,
                            bye_sent: false,
                        }
                    }
                    (Some(_), _) => Slot::CmDown {
                        core: Box::new(CmSubMasterSide::new(rank, config.cm.give_up_after())),
                        link: i,
                    },
                    (None, _) => Slot::Worker(SimWorker {
                        core: WorkerCore::new(config.run.worker_buffers),
                        queue: VecDeque::new(),
                        running: None,
                        stopped: false,
                    }),
                };
                slots.push(slot);
            }
        }
        let timed = (0..slots.len())
            .filter(|&n| !matches!(slots[n], Slot::Worker(_)))
            .collect();
        Ok(World {
            names: clusters.iter().map(|c| c.name.clone()).collect(),
            base,
            slots,
            timed,
            cluster_of,
            links,
            sizes,
            send_buffer: config.cm.send_buffer_bytes() as f64,
            out: Vec::new(),
            cm_out: Vec::new(),
            sent: Vec::new(),
            master_handle: None,
            context: WorkerContext::localhost(),
            now: Duration::ZERO,
        })
    }

    /// Measure the CPU time the main master's core spends inside `handle` from now on.
    pub fn measure_master_handle(&mut self) {
        self.master_handle = Some(Duration::ZERO);
    }

    /// Time spent inside the main master core's `handle`, when measured.
    pub fn master_handle_time(&self) -> Option<Duration> {
        self.master_handle
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.slots.len()
    }

    /// The worker nodes.
    pub fn workers(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots.len()).filter(|&n| matches!(self.slots[n], Slot::Worker(_)))
    }

    /// The clusters with a link to their parent.
    pub fn links(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.links.len()).filter(|&l| self.links[l].is_some())
    }

    /// The cluster of `node` and its rank there.
    pub fn locate(&self, node: usize) -> (usize, usize) {
        let cluster = self.cluster_of[node];
        (cluster, node - self.base[cluster])
    }

    /// The name of cluster `cluster`.
    pub fn cluster_name(&self, cluster: usize) -> &str {
        &self.names[cluster]
    }

    /// Start every core at `now`: masters and sub-masters, workers (they ask for work), CMs.
    pub fn start(&mut self, now: Duration) -> Result<Vec<Transfer>, SimError> {
        for node in 0..self.slots.len() {
            match &mut self.slots[node] {
                Slot::Master(core) => {
                    let r = core.start(now, &mut self.out);
                    self.check(node, r)?;
                    self.flush_head(node);
                }
                Slot::Sub(core) => {
                    let r = core.start(now, &mut self.out);
                    self.check(node, r)?;
                    self.flush_head(node);
                }
                Slot::Worker(worker) => {
                    worker.core.start(&mut self.out);
                    self.flush_worker(node);
                }
                _ => {}
            }
        }
        // The CMs' first turn; returns everything sent so far.
        Ok(self.tick(now))
    }

    /// Link `link` goes up or down: its CMs are told at their next tick.
    pub fn set_link_up(&mut self, link: usize, up: bool) {
        if let Some(l) = &mut self.links[link] {
            l.up = up;
        }
    }

    /// Link `link`'s round trip is `rtt_s` seconds: its CMs see it at their next tick.
    pub fn set_link_round_trip(&mut self, link: usize, rtt_s: f64) {
        if let Some(l) = &mut self.links[link] {
            l.rtt_s = rtt_s;
        }
    }

    /// Whether link `link` is up.
    pub fn link_up(&self, link: usize) -> bool {
        self.links
            .get(link)
            .and_then(Option::as_ref)
            .is_some_and(|l| l.up)
    }

    /// Time `now` has come for every core: progress lines of masters, deadlines and credit
    /// of CMs. Returns what they send.
    pub fn tick(&mut self, now: Duration) -> Vec<Transfer> {
        self.now = self.now.max(now);
        for at in 0..self.timed.len() {
            let node = self.timed[at];
            match &mut self.slots[node] {
                Slot::Master(core) => {
                    core.on_timer(now, &mut self.out);
                    self.flush_head(node);
                }
                Slot::Sub(core) => {
                    core.on_timer(now, &mut self.out);
                    self.flush_head(node);
                }
                Slot::CmUp { .. } | Slot::CmDown { .. } => self.tick_cm(node, now),
                _ => {}
            }
        }
        std::mem::take(&mut self.sent)
    }

    /// The CMs of link `link` take their turn at `now` (after a change of the link).
    pub fn tick_link(&mut self, link: usize, now: Duration) -> Vec<Transfer> {
        if let Some(l) = &self.links[link] {
            let (a, b) = (l.parent_cm, l.child_cm);
            self.tick_cm(a, now);
            self.tick_cm(b, now);
        }
        std::mem::take(&mut self.sent)
    }

    /// Apply a re-planning decision to the main master at `now`, as its own re-planning
    /// does (for tests that choose decisions themselves). Returns what it sends.
    pub fn adapt(&mut self, now: Duration, decision: &hmw_core::adapt::Decision) -> Vec<Transfer> {
        self.now = self.now.max(now);
        if let Slot::Master(core) = &mut self.slots[0] {
            core.adapt(now, decision, &mut self.out);
            self.flush_head(0);
        }
        std::mem::take(&mut self.sent)
    }

    /// The main master is done: the run is over.
    pub fn is_done(&self) -> bool {
        matches!(&self.slots[0], Slot::Master(core) if core.is_done())
    }

    /// Tasks the main master has gathered.
    pub fn gathered(&self) -> u64 {
        match &self.slots[0] {
            Slot::Master(core) => core.gathered(),
            _ => 0,
        }
    }

    /// The main master's statistics and its problem (what it gathered).
    pub fn finish(self) -> Option<(RunStats, SimProblem)> {
        let mut slots = self.slots;
        match slots.swap_remove(0) {
            Slot::Master(core) => {
                let (stats, source) = core.finish();
                Some((stats, source.into_problem()))
            }
            _ => None,
        }
    }

    /// Bytes carried by link `link` so far, down (tasks) and up (results), as the plan
    /// counts them.
    pub fn link_bytes(&self, link: usize) -> (f64, f64) {
        self.links[link]
            .as_ref()
            .map_or((0.0, 0.0), |l| (l.bytes_down, l.bytes_up))
    }

    /// The oldest task of worker `node` starts, unless it computes one already or holds
    /// none: its basic operations.
    pub fn start_task(&mut self, node: usize) -> Option<f64> {
        let Slot::Worker(worker) = &mut self.slots[node] else {
            return None;
        };
        if worker.running.is_some() || worker.stopped {
            return None;
        }
        let operations = worker.queue.front()?.task.operations;
        worker.running = Some(worker.core.run_inline());
        Some(operations)
    }

    /// Worker `node` finished the task it started, having been busy `busy_s` seconds.
    pub fn finish_task(&mut self, node: usize, busy_s: f64) -> Result<Vec<Transfer>, SimError> {
        let Slot::Worker(worker) = &mut self.slots[node] else {
            return Ok(Vec::new());
        };
        let (Some(inline), Some(Queued { task, closes_batch })) =
            (worker.running.take(), worker.queue.pop_front())
        else {
            return Ok(Vec::new());
        };
        if worker.stopped {
            return Ok(Vec::new());
        }
        let body = match decode::<SimTask>(&task.body, "task") {
            Ok(job) => encode(&job.execute(&self.context)),
            Err(e) => {
                let r = Err(CoreError::decoding(0)(e));
                return self.check(node, r).map(|()| Vec::new());
            }
        };
        let result = WireResult {
            ids: TaskIds::from_slice(&[task.id]),
            operations: task.operations,
            busy_s,
            decode_s: 0.0,
            encode_s: 0.0,
            body,
        };
        let computed = Computed {
            result: Ok(result),
            closes_batch,
        };
        let r = worker.core.on_computed(computed, inline, &mut self.out);
        self.check(node, r)?;
        self.flush_worker(node);
        Ok(std::mem::take(&mut self.sent))
    }

    /// Hand back a list of transfers a call returned, emptied: the next call fills it rather
    /// than a new one (an engine makes millions of calls).
    pub fn recycle(&mut self, mut spent: Vec<Transfer>) {
        if self.sent.capacity() == 0 {
            spent.clear();
            self.sent = spent;
        }
    }

    /// Whether worker `node` holds tasks it has not finished.
    pub fn holds_tasks(&self, node: usize) -> bool {
        matches!(&self.slots[node], Slot::Worker(w) if !w.queue.is_empty() && !w.stopped)
    }

    /// `transfer` arrives at `now`. Returns what the receiving core sends.
    pub fn deliver(
        &mut self,
        now: Duration,
        transfer: Transfer,
    ) -> Result<Vec<Transfer>, SimError> {
        self.now = self.now.max(now);
        let Transfer {
            from,
            to,
            bytes,
            size,
            via,
        } = transfer;
        let (_, from_rank) = self.locate(from);
        if let Via::Link { link, down } = via {
            // Arrived: out of the sender's buffer, which may take more now.
            if let Some(l) = &mut self.links[link] {
                let way = Link::way(down);
                l.buffered[way] = (l.buffered[way] - size).max(0.0);
            }
        }
        match &mut self.slots[to] {
            Slot::Master(core) => {
                let r = match &mut self.master_handle {
                    Some(spent) => {
                        let clock = std::time::Instant::now();
                        let r = main_master_handle(core, now, from_rank, &bytes, &mut self.out);
                        *spent += clock.elapsed();
                        r
                    }
                    None => main_master_handle(core, now, from_rank, &bytes, &mut self.out),
                };
                self.check(to, r)?;
                self.flush_head(to);
            }
            Slot::Sub(core) => {
                if !core.is_done() {
                    let r = core.handle(now, from_rank, &bytes, &mut self.out);
                    self.check(to, r)?;
                }
                self.flush_head(to);
            }
            Slot::CmUp { core, .. } => {
                if !core.is_done() {
                    let r = if self.cluster_of[from] == self.cluster_of[to] {
                        core.on_cluster(&bytes)
                    } else {
                        core.on_link(&bytes, &mut self.cm_out)
                    };
                    self.check(to, r)?;
                    self.flush_cm(to);
                    self.tick_cm(to, now);
                }
            }
            Slot::CmDown { core, .. } => {
                if !core.is_done() {
                    let r = if self.cluster_of[from] == self.cluster_of[to] {
                        core.on_cluster(&bytes, &mut self.cm_out)
                    } else {
                        core.on_link(bytes)
                    };
                    self.check(to, r)?;
                    self.flush_cm(to);
                    self.tick_cm(to, now);
                }
            }
            Slot::Worker(worker) => {
                if !worker.stopped {
                    let rank = to - self.base[self.cluster_of[to]];
                    let r = worker.core.handle(bytes, rank, &mut worker.queue);
                    if let Ok(Received::Stop) = r {
                        worker.stopped = true;
                        worker.queue.clear();
                        worker.core.bye(None, &mut self.out);
                        self.flush_worker(to);
                    }
                    self.check(to, r.map(|_| ()))?;
                }
            }
        }
        if matches!(via, Via::Link { .. }) {
            // The sender's buffer has room again: its CM takes its turn.
            self.tick_cm(from, now);
        }
        Ok(std::mem::take(&mut self.sent))
    }

    fn check(&self, node: usize, result: Result<(), CoreError>) -> Result<(), SimError> {
        result.map_err(|error| {
            let (cluster, rank) = self.locate(node);
            SimError::Core {
                node,
                cluster: self.names[cluster].clone(),
                rank,
                error,
            }
        })
    }

    fn tick_cm(&mut self, node: usize, now: Duration) {
        let capacity = self.send_buffer;
        let view = |link: Option<&Link>, down: bool| LinkView {
            connected: link.is_some_and(|l| l.up),
            ever_connected: true,
            rtt_s: link.map_or(0.0, |l| l.rtt_s),
            send_fill: link.map_or(0.0, |l| l.buffered[Link::way(down)] / capacity),
            ..LinkView::default()
        };
        match &mut self.slots[node] {
            Slot::CmUp { core, link, .. } if !core.is_done() => {
                let up = self.links[*link].as_ref();
                core.on_tick(now, &view(up, true), &mut self.cm_out);
            }
            Slot::CmDown { core, link } if !core.is_done() => {
                let up = self.links[*link].as_ref();
                core.on_tick(now, &view(up, false), &mut self.cm_out);
            }
            // A CM that is done still moves what its outbox holds.
            _ => {}
        }
        self.flush_cm(node);
    }

    /// Route what a master or sub-master core at `node` sent.
    fn flush_head(&mut self, node: usize) {
        let cluster = self.cluster_of[node];
        // Towards its upstream CM a sub-master speaks as a worker (ToMaster).
        let upstream = match &self.slots[node] {
            Slot::Sub(core) => core.source().upstream(),
            _ => None,
        };
        for output in std::mem::take(&mut self.out) {
            if let Output::Send { to, bytes } = output {
                let to_worker = upstream != Some(to);
                let to = self.base[cluster] + to;
                self.lan(node, to, bytes, to_worker);
            }
        }
    }

    fn flush_worker(&mut self, node: usize) {
        let head = self.base[self.cluster_of[node]];
        for output in std::mem::take(&mut self.out) {
            if let Output::Send { bytes, .. } = output {
                self.lan(node, head, bytes, false);
            }
        }
    }

    fn flush_cm(&mut self, node: usize) {
        let cluster = self.cluster_of[node];
        let head = self.base[cluster];
        let (link, down) = match &self.slots[node] {
            Slot::CmUp { link, .. } => (*link, true),
            Slot::CmDown { link, .. } => (*link, false),
            _ => return,
        };
        let peer = self.links[link]
            .as_ref()
            .map(|l| if down { l.child_cm } else { l.parent_cm })
            .expect("a CM's link exists");
        for output in std::mem::take(&mut self.cm_out) {
            match output {
                // To the master a CM is a fed rank; to its sub-master, the upstream.
                CmOutput::ToCluster(bytes) => self.lan(node, head, bytes, !down),
                CmOutput::SnapshotLink => {
                    let summary = self.link_summary(link);
                    if let Slot::CmUp { core, .. } = &mut self.slots[node] {
                        core.set_far_link(summary);
                    }
                }
                CmOutput::CloseLink(_) => {}
            }
        }
        self.fill_send_buffer(node, link, down, peer);
        let done = matches!(&self.slots[node], Slot::CmUp { core, bye_sent, .. }
            if core.is_done() && !*bye_sent);
        if !done {
            return;
        }
        // Its cluster's run is over: its statistics go to the master with the link's.
        let summary = self.link_summary(link);
        if let Slot::CmUp { core, bye_sent, .. } = &mut self.slots[node] {
            *bye_sent = true;
            let bye = core.bye(summary);
            self.lan(node, head, bye, false);
        }
    }

    /// Move what link `link`'s send buffer (`down` or up) has room for from the outbox of its
    /// CM at `node` onto the link, oldest first, as the CM's driver does: a message waits in
    /// the outbox while the buffer would overflow (one larger than the buffer goes alone).
    fn fill_send_buffer(&mut self, node: usize, link: usize, down: bool, peer: usize) {
        let way = Link::way(down);
        loop {
            let outbox: &dyn LinkOutbox = match &self.slots[node] {
                Slot::CmUp { core, .. } => &**core,
                Slot::CmDown { core, .. } => &**core,
                _ => return,
            };
            let Some(next) = outbox.next_for_link() else {
                return;
            };
            let size = self.size_of(next, down, true, link);
            let buffered = self.links[link].as_ref().map_or(0.0, |l| l.buffered[way]);
            if buffered > 0.0 && buffered + size > self.send_buffer {
                return;
            }
            let bytes = match &mut self.slots[node] {
                Slot::CmUp { core, .. } => core.pop_for_link(),
                Slot::CmDown { core, .. } => core.pop_for_link(),
                _ => None,
            }
            .expect("the message just looked at");
            let l = self.links[link].as_mut().expect("a CM's link exists");
            l.buffered[way] += size;
            if down {
                l.bytes_down += size;
            } else {
                l.bytes_up += size;
            }
            self.sent.push(Transfer {
                from: node,
                to: peer,
                bytes,
                size,
                via: Via::Link { link, down },
            });
        }
    }

    fn link_summary(&self, link: usize) -> LinkSummary {
        let (down, up) = self.link_bytes(link);
        let seconds = self.now.as_secs_f64();
        let rate = |bytes: f64| if seconds > 0.0 { bytes / seconds } else { 0.0 };
        LinkSummary {
            bytes_sent: down as u64,
            bytes_received: up as u64,
            send_bytes_per_s: rate(down),
            recv_bytes_per_s: rate(up),
            connections_established: 1,
            ..LinkSummary::default()
        }
    }

    /// A LAN transfer from `from` to `to` (one of them the head) of a `ToWorker` message
    /// (`to_worker`) or a `ToMaster` one.
    fn lan(&mut self, from: usize, to: usize, bytes: Vec<u8>, to_worker: bool) {
        let cluster = self.cluster_of[from];
        let size = self.size_of(&bytes, to_worker, false, 0);
        self.sent.push(Transfer {
            from,
            to,
            bytes,
            size,
            via: Via::Lan { cluster },
        });
    }

    /// The size the plan gives a message: tasks at `task_bytes` each (a batch crossing a
    /// link at `task_bytes_inter` per `nt` tasks, when given), a result at `result_bytes`
    /// per task (a joined result, or any crossing a link, at `result_bytes_inter` when
    /// given); other messages as encoded.
    fn size_of(&self, bytes: &[u8], to_worker: bool, over_link: bool, link: usize) -> f64 {
        let s = &self.sizes;
        if to_worker {
            if let Some(n) = tasks_in_batch(bytes) {
                let n = n as f64;
                let nt = self.links[link].as_ref().map_or(1, |l| l.nt).max(1) as f64;
                return match s.task_bytes_inter {
                    Some(inter) if over_link => inter * n / nt,
                    _ => n * s.task_bytes,
                };
            }
        } else if let Some(n) = tasks_in_result(bytes) {
            let n = n as f64;
            return match s.result_bytes_inter {
                Some(inter) if over_link || n > 1.0 => inter,
                _ => n * s.result_bytes,
            };
        }
        bytes.len() as f64
    }
}

/// The main master's core handles a message: every call goes through this function, never
/// inlined, so that callgrind counts the main master's work alone
/// (`--toggle-collect='*main_master_handle*'`, `scripts/bench/callgrind-simulate.sh`).
#[inline(never)]
fn main_master_handle(
    core: &mut MasterCore<ProblemSource<SimProblem>>,
    now: Duration,
    from_rank: usize,
    bytes: &[u8],
    out: &mut Vec<Output>,
) -> Result<(), CoreError> {
    core.handle(now, from_rank, bytes, out)
}

/// The main master's core, as the master's driver builds it (with the same constructor).
pub fn master_core(
    machines: &MachineFile,
    config: &ConfigFile,
    problem: SimProblem,
    make_scheduler: MakeScheduler<'_>,
) -> MasterCore<ProblemSource<SimProblem>> {
    MasterCore::new(
        machines,
        config.run.clone(),
        make_scheduler(&config.run),
        ProblemSource::new(problem),
    )
}

/// A sub-master's core, built by the function its driver uses
/// ([`SubMasterCore::for_cluster`]).
pub fn sub_master_core(
    machines: &MachineFile,
    config: &ConfigFile,
    make_scheduler: MakeScheduler<'_>,
) -> SubMasterCore<SimTask> {
    SubMasterCore::for_cluster(
        machines,
        config,
        machines.upstream().unwrap_or(1),
        make_scheduler(&config.run),
        None,
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::problem::TaskCost;
    use hmw_core::protocol::ToWorker;

    /// The batches on their way down link `link` among `transfers`.
    fn batches_down(transfers: &[Transfer]) -> usize {
        transfers
            .iter()
            .filter(|t| matches!(t.via, Via::Link { down: true, .. }))
            .filter(|t| matches!(decode(&t.bytes, ""), Ok(ToWorker::Tasks(_))))
            .count()
    }

    /// A link's send buffer bounds what a CM puts on the link, in virtual time: with room for
    /// one batch, the CM facing the master keeps its next batches in its outbox while the
    /// first crosses, and sends the next as soon as the first has arrived.
    #[test]
    fn a_full_send_buffer_holds_a_batch_back_until_the_first_arrives() {
        let parse = |text: &str| MachineFile::parse(Path::new("t.hosts"), text).unwrap();
        let clusters = [
            ClusterSetup {
                name: "main".into(),
                machines: parse(
                    "m # cluster=main\nw\nc # M 1 7000 name=main-a peer=a-main cluster=a nt=1\n",
                ),
                parent: None,
            },
            ClusterSetup {
                name: "a".into(),
                machines: parse(
                    "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=1\nw\nw\n",
                ),
                parent: Some(0),
            },
        ];
        let mut config = ConfigFile::defaults();
        config.run.wait_for_links = false;
        config.cm.send_memory = Some(1500);
        let sizes = Sizes {
            task_bytes: 1000.0,
            result_bytes: 10.0,
            ..Sizes::default()
        };
        let problem = SimProblem::new(20, TaskCost::fixed(1.0), 0);
        let make: MakeScheduler<'_> = &|run| run.configured_scheduler();
        let mut world = World::new(&clusters, &config, problem, sizes, make).unwrap();
        let now = Duration::ZERO;
        // Everything inside the clusters is delivered; what goes on the link is held.
        let mut pending = world.start(now).unwrap();
        let mut on_link = Vec::new();
        while let Some(transfer) = pending.pop() {
            if matches!(transfer.via, Via::Link { .. }) {
                on_link.push(transfer);
            } else {
                pending.extend(world.deliver(now, transfer).unwrap());
            }
        }
        let cm = 2;
        let held = |world: &World| match &world.slots[cm] {
            Slot::CmUp { core, .. } => core.next_for_link().is_some(),
            _ => false,
        };
        assert_eq!(batches_down(&on_link), 1, "one batch fits the buffer");
        assert!(held(&world), "the next batches wait in the CM's outbox");
        // The first batch arrives: the buffer frees, and the next batch leaves at once.
        let first = on_link
            .iter()
            .position(|t| matches!(t.via, Via::Link { down: true, .. }))
            .unwrap();
        let arrived = on_link.remove(first);
        let later = Duration::from_millis(300);
        let sent = world.deliver(later, arrived).unwrap();
        assert_eq!(batches_down(&sent), 1, "released when the first arrived");
        assert!(held(&world), "and the rest still wait");
    }
}
