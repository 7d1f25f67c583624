//! The virtual-time engine: a queue of timed events (a message arrives, a worker finishes its
//! task, a link goes down or comes back, time passes for the timers), each handed to the
//! [`World`] of cores, whose sends become new events at the time the network gives them.
//! No clock and no thread: the same spec and seed give the same run.

use std::{
    cmp::Ordering,
    collections::BinaryHeap,
    time::{Duration, Instant},
};

use hmw::{runner::configured_scheduler, stats::RunStats};

use crate::{
    network::{secs, Serial, WanDirection},
    problem::SimProblem,
    spec::Spec,
    world::{ClusterSetup, SimError, Transfer, Via, World},
};

/// What happens at a time.
enum Event {
    /// A message arrives.
    Arrive(Transfer),
    /// A worker finishes its task, busy this many seconds.
    Computed(usize, f64),
    /// A link goes down or comes back.
    LinkChange(usize),
    /// Time passes: the cores' timers.
    Tick,
}

struct Timed {
    at: Duration,
    seq: u64,
    event: Event,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    /// Earliest first (the heap is a max-heap), then in the order scheduled.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// What one simulated run gave.
#[derive(Debug)]
pub struct Outcome {
    /// The main master's statistics, as a real run's `--stats-json` holds them.
    pub stats: RunStats,
    /// Events processed.
    pub events: u64,
    /// CPU time inside the main master core's `handle`, when asked for.
    pub master_handle: Option<Duration>,
    /// Every task was gathered exactly once.
    pub each_gathered_once: bool,
}

/// How to run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Measure the CPU time the main master's core spends inside `handle`.
    pub measure_master: bool,
}

/// The simulated network: each cluster's LAN both ways, each link's WAN both ways.
struct Network {
    lan_rate: Vec<f64>,
    lan_in: Vec<Serial>,
    lan_out: Vec<Serial>,
    wan_down: Vec<Option<WanDirection>>,
    wan_up: Vec<Option<WanDirection>>,
}

impl Network {
    fn arrival(&mut self, now: Duration, transfer: &Transfer) -> Duration {
        match transfer.via {
            Via::Lan { cluster, to_head } => {
                let seconds = transfer.size / self.lan_rate[cluster];
                let serial = if to_head {
                    &mut self.lan_in[cluster]
                } else {
                    &mut self.lan_out[cluster]
                };
                serial.send(now, seconds)
            }
            Via::Link { link, down } => {
                let direction = if down {
                    &mut self.wan_down[link]
                } else {
                    &mut self.wan_up[link]
                };
                match direction {
                    Some(d) => d.arrival(now, transfer.size),
                    None => now,
                }
            }
        }
    }
}

/// Run `spec` once, its random draws (task times) from `seed`.
pub fn simulate(spec: &Spec, seed: u64, options: Options) -> Result<Outcome, SimError> {
    let setups: Vec<ClusterSetup> = spec
        .clusters
        .iter()
        .map(|c| ClusterSetup {
            name: c.setup.name.clone(),
            machines: c.setup.machines.clone(),
            parent: c.setup.parent,
        })
        .collect();
    let problem = SimProblem::new(spec.tasks, spec.cost, seed);
    let mut world = World::new(
        &setups,
        &spec.config,
        problem,
        spec.sizes,
        &configured_scheduler,
    )?;
    if options.measure_master {
        world.measure_master_handle();
    }
    // Each worker node's performance.
    let mut perf = vec![0.0; world.nodes()];
    for node in world.workers().collect::<Vec<_>>() {
        let (cluster, rank) = world.locate(node);
        perf[node] = spec.clusters[cluster]
            .perf
            .get(rank)
            .copied()
            .unwrap_or(0.0);
        if !(perf[node].is_finite() && perf[node] > 0.0) {
            return Err(SimError::Setup(format!(
                "cluster `{}`, rank {rank}: a worker without a positive perf",
                spec.clusters[cluster].setup.name
            )));
        }
    }
    let mut network = Network {
        lan_rate: spec
            .clusters
            .iter()
            .map(|c| c.lan_bytes_per_s.max(f64::MIN_POSITIVE))
            .collect(),
        lan_in: vec![Serial::default(); spec.clusters.len()],
        lan_out: vec![Serial::default(); spec.clusters.len()],
        wan_down: spec
            .clusters
            .iter()
            .map(|c| {
                c.wan
                    .as_ref()
                    .map(|w| WanDirection::new(w, w.down_bytes_per_s))
            })
            .collect(),
        wan_up: spec
            .clusters
            .iter()
            .map(|c| {
                c.wan
                    .as_ref()
                    .map(|w| WanDirection::new(w, w.up_bytes_per_s))
            })
            .collect(),
    };
    let mut queue = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<Timed>, at: Duration, event: Event| {
        seq += 1;
        queue.push(Timed { at, seq, event });
    };
    let lost_after = secs(spec.config.cm.lost_after_s);
    for link in world.links().collect::<Vec<_>>() {
        let changes: Vec<Duration> = network.wan_down[link]
            .iter()
            .flat_map(|d| d.changes().collect::<Vec<_>>())
            .collect();
        for at in changes {
            push(&mut queue, at, Event::LinkChange(link));
            // The CMs' deadline, just past it.
            let deadline = at + lost_after + Duration::from_millis(1);
            push(&mut queue, deadline, Event::LinkChange(link));
        }
    }
    let interval = spec.config.run.statistics_interval;
    let tick = secs(if interval > 0.0 {
        interval.min(0.5)
    } else {
        0.5
    });
    push(&mut queue, tick, Event::Tick);

    let mut now = Duration::ZERO;
    let mut events = 0u64;
    let mut last_activity = Duration::ZERO;
    // Nothing but timers for this long, and nothing can happen any more.
    let patience = lost_after.max(Duration::from_secs(10)) * 3;
    let mut pending = world.start(now)?;
    loop {
        for transfer in pending.drain(..) {
            let at = network.arrival(now, &transfer);
            push(&mut queue, at, Event::Arrive(transfer));
        }
        if world.is_done() {
            break;
        }
        let Some(Timed { at, event, .. }) = queue.pop() else {
            return Err(SimError::Stalled {
                at_s: now.as_secs_f64(),
                gathered: world.gathered(),
            });
        };
        now = at;
        events += 1;
        match event {
            Event::Arrive(transfer) => {
                last_activity = now;
                let to = transfer.to;
                pending = world.deliver(now, transfer)?;
                if let Some(operations) = world.start_task(to) {
                    let busy = operations / perf[to];
                    push(&mut queue, now + secs(busy), Event::Computed(to, busy));
                }
            }
            Event::Computed(node, busy) => {
                last_activity = now;
                pending = world.finish_task(node, busy)?;
                if let Some(operations) = world.start_task(node) {
                    let busy = operations / perf[node];
                    push(&mut queue, now + secs(busy), Event::Computed(node, busy));
                }
            }
            Event::LinkChange(link) => {
                let down = network.wan_down[link]
                    .as_ref()
                    .is_some_and(|d| d.is_down(now));
                world.set_link_up(link, !down);
                pending = world.tick_link(link, now);
            }
            Event::Tick => {
                pending = world.tick(now);
                if now.saturating_sub(last_activity) > patience && pending.is_empty() {
                    return Err(SimError::Stalled {
                        at_s: now.as_secs_f64(),
                        gathered: world.gathered(),
                    });
                }
                push(&mut queue, now + tick, Event::Tick);
            }
        }
    }
    let master_handle = world.master_handle_time();
    let (stats, problem) = world
        .finish()
        .ok_or_else(|| SimError::Setup("the main cluster has no master".into()))?;
    Ok(Outcome {
        stats,
        events,
        master_handle,
        each_gathered_once: problem.each_gathered_once(),
    })
}

/// Wall-clock seconds a closure takes (for the benchmark's figures).
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let clock = Instant::now();
    let value = f();
    (value, clock.elapsed().as_secs_f64())
}
