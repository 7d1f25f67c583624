//! The virtual-time engine: a queue of timed events (a message arrives, a worker finishes its
//! task, a link goes down or comes back, time passes for the timers), each handed to the
//! [`World`] of cores, whose sends become new events at the time the network gives them.
//! No clock and no thread: the same spec and seed give the same run.

use std::time::{Duration, Instant};

use hmw_core::{config::RunConfig, stats::RunStats};

use crate::{
    agenda::Agenda,
    network::{secs, Serial, WanDirection},
    problem::SimProblem,
    spec::ClusterSetup,
    spec::Spec,
    world::{SimError, Transfer, Via, World},
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

/// The simulated network: each cluster's LAN, each link's WAN both ways.
struct Network {
    lan_rate: Vec<f64>,
    lan: Vec<Serial>,
    wan_down: Vec<Option<WanDirection>>,
    wan_up: Vec<Option<WanDirection>>,
}

impl Network {
    fn arrival(&mut self, now: Duration, transfer: &Transfer) -> Duration {
        match transfer.via {
            Via::Lan { cluster } => {
                let seconds = transfer.size / self.lan_rate[cluster];
                self.lan[cluster].send(now, seconds)
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
    let setups: Vec<&ClusterSetup> = spec.clusters.iter().map(|c| &c.setup).collect();
    let problem = match spec.iterations {
        Some(n) => SimProblem::iterative(n, spec.tasks as f64 / n.max(1) as f64, spec.cost, seed),
        None => SimProblem::new(spec.tasks, spec.cost, seed),
    };
    let mut world = World::new(
        &setups,
        &spec.config,
        problem,
        spec.sizes,
        &RunConfig::configured_scheduler,
    )?;
    if options.measure_master {
        world.measure_master_handle();
    }
    for (link, c) in spec.clusters.iter().enumerate() {
        if let Some(wan) = &c.wan {
            world.set_link_round_trip(link, wan.rtt_s);
        }
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
    let place: Vec<(usize, usize)> = (0..world.nodes()).map(|n| world.locate(n)).collect();
    // Seconds worker `node` takes for `operations` from `now`: its perf, changed as its
    // cluster's speed changes say, during the task too.
    let compute_time = |node: usize, now: Duration, operations: f64| {
        let (cluster, rank) = place[node];
        let c = &spec.clusters[cluster];
        let host = &c.setup.machines.ranks[rank].host;
        c.compute_time(host, perf[node], now.as_secs_f64(), operations)
    };
    let mut network = Network {
        lan_rate: spec
            .clusters
            .iter()
            .map(|c| c.lan_bytes_per_s.max(f64::MIN_POSITIVE))
            .collect(),
        lan: vec![Serial::default(); spec.clusters.len()],
        wan_down: spec
            .clusters
            .iter()
            .map(|c| {
                c.wan
                    .as_ref()
                    .map(|w| WanDirection::new(w, w.down_bytes_per_s, w.ramp_s.0))
            })
            .collect(),
        wan_up: spec
            .clusters
            .iter()
            .map(|c| {
                c.wan
                    .as_ref()
                    .map(|w| WanDirection::new(w, w.up_bytes_per_s, w.ramp_s.1))
            })
            .collect(),
    };
    let mut queue = Agenda::new();
    let lost_after = secs(spec.config.cm.lost_after_s);
    let give_up_after = spec.config.cm.give_up_after();
    // An outage is silence: the link's connections die, and the CMs see it down, only after
    // this much of it (QUIC's idle timeout); shorter ones only delay what was under way.
    let inactivity = spec.config.cm.inactivity_timeout();
    for link in world.links().collect::<Vec<_>>() {
        let outages: Vec<(Duration, Duration)> = network.wan_down[link]
            .iter()
            .flat_map(|d| d.outages().collect::<Vec<_>>())
            .collect();
        for (start, end) in outages {
            // Seen down after the idle timeout, up again when it ends.
            let seen = start.saturating_add(inactivity);
            if seen >= end {
                continue;
            }
            for at in [seen, end] {
                queue.push(at, Event::LinkChange(link));
                // The CMs' deadlines, just past them: the master side's, the far side's.
                for after in [lost_after, give_up_after] {
                    let deadline = at
                        .saturating_add(after)
                        .saturating_add(Duration::from_millis(1));
                    queue.push(deadline, Event::LinkChange(link));
                }
            }
        }
    }
    let interval = spec.config.run.statistics_interval;
    let tick = secs(if interval > 0.0 {
        interval.min(0.5)
    } else {
        0.5
    });
    queue.push(tick, Event::Tick);

    let mut now = Duration::ZERO;
    let mut events = 0u64;
    let mut last_activity = Duration::ZERO;
    // Nothing but timers for this long, and nothing can happen any more.
    let patience = lost_after.max(Duration::from_secs(10)) * 3;
    let mut pending = world.start(now)?;
    loop {
        for transfer in pending.drain(..) {
            let at = network.arrival(now, &transfer);
            queue.push(at, Event::Arrive(transfer));
        }
        world.recycle(std::mem::take(&mut pending));
        if world.is_done() {
            break;
        }
        let Some((at, event)) = queue.pop() else {
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
                    let busy = compute_time(to, now, operations);
                    queue.push(now.saturating_add(secs(busy)), Event::Computed(to, busy));
                }
            }
            Event::Computed(node, busy) => {
                last_activity = now;
                pending = world.finish_task(node, busy)?;
                if let Some(operations) = world.start_task(node) {
                    let busy = compute_time(node, now, operations);
                    queue.push(now.saturating_add(secs(busy)), Event::Computed(node, busy));
                }
            }
            Event::LinkChange(link) => {
                let down = network.wan_down[link]
                    .as_ref()
                    .is_some_and(|d| d.is_down_for(now, inactivity));
                world.set_link_up(link, !down);
                pending = world.tick_link(link, now);
            }
            Event::Tick => {
                pending = world.tick(now);
                let next = queue.next_time();
                if next.is_none()
                    && pending.is_empty()
                    && now.saturating_sub(last_activity) > patience
                {
                    return Err(SimError::Stalled {
                        at_s: now.as_secs_f64(),
                        gathered: world.gathered(),
                    });
                }
                // Nothing for a long while (tasks far longer than the tick): skip to it.
                let mut at = now.saturating_add(tick);
                if let Some(next) = next.filter(|&n| n > now.saturating_add(tick * 1000)) {
                    at = next;
                }
                queue.push(at, Event::Tick);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use hmw_core::{config::ConfigFile, machinefile::MachineFile};

    use super::*;
    use crate::{
        problem::TaskCost,
        spec::{ClusterSpec, Sizes, SpeedChange, WanSpec},
    };

    fn cluster(name: &str, text: &str, parent: Option<usize>, perf: f64) -> ClusterSpec {
        let machines = MachineFile::parse(Path::new("t.hosts"), text).unwrap();
        let perf = machines
            .ranks
            .iter()
            .map(|l| if l.cm.is_none() { perf } else { 0.0 })
            .collect();
        ClusterSpec {
            setup: ClusterSetup {
                name: name.into(),
                machines,
                parent,
            },
            perf,
            lan_bytes_per_s: 1e9,
            speed_changes: Vec::new(),
            wan: parent.map(|_| WanSpec {
                down_bytes_per_s: Some(1e6),
                up_bytes_per_s: Some(1e6),
                rtt_s: 0.04,
                ..WanSpec::default()
            }),
        }
    }

    fn spec(clusters: Vec<ClusterSpec>, tasks: u64, cv: f64) -> Spec {
        let mut config = ConfigFile::defaults();
        config.run.statistics_interval = 1.0;
        config.cm.lost_after_s = 5.0;
        Spec {
            clusters,
            config,
            tasks,
            iterations: None,
            cost: TaskCost { oper: 1.0, cv },
            sizes: Sizes {
                task_bytes: 1000.0,
                result_bytes: 1000.0,
                ..Sizes::default()
            },
        }
    }

    /// Three workers of 1 task/s, 30 tasks: 10 s, give or take the LAN's microseconds.
    #[test]
    fn one_cluster_takes_tasks_over_workers_times_task_time() {
        let s = spec(vec![cluster("main", "m\nw\nw\nw\n", None, 1.0)], 30, 0.0);
        let outcome = simulate(&s, 1, Options::default()).unwrap();
        assert!(outcome.each_gathered_once);
        assert!(
            (outcome.stats.wall_s - 10.0).abs() < 0.01,
            "{}",
            outcome.stats.wall_s
        );
        assert!(outcome.stats.cluster.efficiency > 0.99);
    }

    fn tree() -> Vec<ClusterSpec> {
        vec![
            cluster(
                "main",
                "m # cluster=main\nw\nc # M 1 7000 name=main-a peer=a-main cluster=a nt=2\n",
                None,
                1.0,
            ),
            cluster(
                "a",
                "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=2\nw\nw\n\
                 c # M 1 7001 name=a-b peer=b-a cluster=b nt=1\n",
                Some(0),
                2.0,
            ),
            cluster(
                "b",
                "s # cluster=b\nc # S 0 7001 h name=b-a peer=a-b nr=1\nw\n",
                Some(1),
                1.0,
            ),
        ]
    }

    /// A tree of depth two: every cluster takes part, every task is gathered once, and the
    /// same seed gives the same run while another seed gives another (task times spread).
    #[test]
    fn trees_run_and_a_seed_fixes_the_run() {
        let s = spec(tree(), 200, 0.3);
        let a = simulate(&s, 7, Options::default()).unwrap();
        let b = simulate(&s, 7, Options::default()).unwrap();
        let c = simulate(&s, 8, Options::default()).unwrap();
        assert!(a.each_gathered_once && c.each_gathered_once);
        // The same decisions at the same virtual times (only the cores' readings of the real
        // clock, the time spent joining results, differ).
        let tasks = |o: &Outcome| -> Vec<u64> {
            let mut all: Vec<u64> = o.stats.workers.iter().map(|w| w.tasks_done).collect();
            all.extend(o.stats.clusters.iter().map(|c| c.tasks_done));
            all
        };
        assert_eq!(a.stats.wall_s, b.stats.wall_s);
        assert_eq!(tasks(&a), tasks(&b));
        assert_eq!(a.events, b.events);
        assert_ne!(a.stats.wall_s, c.stats.wall_s);
        let far = &a.stats.clusters[0];
        assert!(far.tasks_done > 0);
        let inner = far.stats.as_ref().expect("the far cluster reported");
        assert!(
            inner.clusters[0].tasks_done > 0,
            "the cluster two links away took part"
        );
        // 1 + 2 x 2 + 1 = 6 tasks/s for 200 tasks: about 33 s, more with the WAN's waits.
        assert!(
            a.stats.wall_s > 30.0 && a.stats.wall_s < 45.0,
            "{}",
            a.stats.wall_s
        );
    }

    /// A link down past the deadline: the cluster behind it is lost, its tasks come back.
    #[test]
    fn an_outage_past_the_deadline_loses_the_cluster() {
        let mut clusters = tree();
        clusters.truncate(2);
        clusters[1].setup.machines = MachineFile::parse(
            Path::new("a.hosts"),
            "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=2\nw\nw\n",
        )
        .unwrap();
        clusters[1].perf = vec![0.0, 0.0, 2.0, 2.0];
        clusters[1].wan.as_mut().unwrap().outages = vec![(3.0, 1e6)];
        let s = spec(clusters, 60, 0.0);
        let outcome = simulate(&s, 1, Options::default()).unwrap();
        assert!(outcome.each_gathered_once);
        let far = &outcome.stats.clusters[0];
        assert!(far.lost && far.taken_back > 0, "{far:?}");
        // The main cluster's worker does the rest alone.
        assert!(outcome.stats.wall_s > 40.0, "{}", outcome.stats.wall_s);
    }

    /// A link down from 3 s to 20 s with `lost_after_s = 5`: the CMs see it down when its
    /// connections die, after the link's idle timeout (5 s by default), so the cluster is lost
    /// at 13 s and its tasks taken back; when the link returns it rejoins and computes tasks
    /// again; every task gathered once. An outage of 9 s (to 12 s) loses nothing: the link
    /// is seen down at 8 s and back before the deadline.
    #[test]
    fn a_cluster_lost_in_an_outage_rejoins_when_its_link_returns() {
        let run = |end: f64| {
            let mut clusters = tree();
            clusters.truncate(2);
            clusters[1].setup.machines = MachineFile::parse(
                Path::new("a.hosts"),
                "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a nr=2\nw\nw\n",
            )
            .unwrap();
            clusters[1].perf = vec![0.0, 0.0, 2.0, 2.0];
            clusters[1].wan.as_mut().unwrap().outages = vec![(3.0, end)];
            let outcome = simulate(&spec(clusters, 100, 0.0), 1, Options::default()).unwrap();
            assert!(outcome.each_gathered_once);
            outcome
        };
        let long = run(20.0);
        let far = &long.stats.clusters[0];
        assert!(far.taken_back > 0, "{far:?}");
        assert!(far.rejoins >= 1, "{far:?}");
        assert!(far.tasks_done_after_rejoin > 0, "{far:?}");
        // 5 tasks/s while all compute: 100 tasks in 20 s without the outage. During it
        // (3 s to 20 s) only the main worker's 1 task/s comes in, less what the far cluster
        // held: the run ends later, and far earlier than the main worker alone would (100 s).
        let t = long.stats.wall_s;
        assert!(t > 25.0 && t < 50.0, "{t}");
        let short = run(12.0);
        let far = &short.stats.clusters[0];
        assert!(far.taken_back == 0 && far.rejoins == 0, "{far:?}");
    }

    /// Two clusters of two workers each, the far one slowed (all its hosts, or one host) or
    /// its WAN's rate dropped at 5 s: each change makes the run longer by what it takes away,
    /// and only the change's own cluster or host slows.
    #[test]
    fn slowdowns_and_rate_drops_at_a_time_lengthen_the_run() {
        let run = |change: &dyn Fn(&mut ClusterSpec)| {
            let mut clusters = tree();
            clusters.truncate(2);
            clusters[1].setup.machines = MachineFile::parse(
                Path::new("a.hosts"),
                "s # cluster=a\nc # S 0 7000 h name=a-main peer=main-a\nw1\nw2\n",
            )
            .unwrap();
            clusters[1].perf = vec![0.0, 0.0, 1.0, 1.0];
            change(&mut clusters[1]);
            let s = spec(clusters, 120, 0.0);
            let outcome = simulate(&s, 1, Options::default()).unwrap();
            assert!(outcome.each_gathered_once);
            let far: Vec<u64> = outcome.stats.clusters[0]
                .stats
                .as_ref()
                .unwrap()
                .workers
                .iter()
                .map(|w| w.tasks_done)
                .collect();
            (outcome.stats.wall_s, far)
        };
        let slow = |host: Option<&str>| {
            let host = host.map(String::from);
            move |c: &mut ClusterSpec| {
                c.speed_changes = vec![SpeedChange {
                    at_s: 5.0,
                    host: host.clone(),
                    factor: 0.25,
                }]
            }
        };
        let (base, _) = run(&|_| {});
        let (cluster_slowed, _) = run(&slow(None));
        let (host_slowed, far) = run(&slow(Some("w2")));
        // 3 tasks/s: 40 s, and the WAN's waits. The far cluster at a quarter from 5 s:
        // 1.5 tasks/s after, so 15 + 105 / 1.5 = 75 s, 35 s more; one host at a quarter:
        // 2.25 tasks/s, 15 + 105 / 2.25 = 51.7 s, 11.7 s more. At the end a slowed worker
        // may still hold a task and its buffered one: up to two slowed tasks (8 s) later.
        let more = |t: f64, steady: f64| t - base > steady - 2.0 && t - base < steady + 8.0;
        assert!(base > 40.0 && base < 45.0, "{base}");
        assert!(more(cluster_slowed, 35.0), "{base} -> {cluster_slowed}");
        assert!(more(host_slowed, 11.7), "{base} -> {host_slowed}");
        assert!(far[0] > 2 * far[1], "the slowed host does less: {far:?}");
        // The WAN dropped to 1/1000 of its 1 MB/s: 1 KB tasks and results then take 1 s each
        // way over a serial link, so the far cluster delivers about one task every 2 s.
        let (dropped, _) = run(&|c: &mut ClusterSpec| {
            c.wan.as_mut().unwrap().rate_changes = vec![(5.0, 0.001)];
        });
        assert!(dropped > base + 15.0, "{base} -> {dropped}");
    }

    /// An iterative problem on a slow LAN (a task message costs the head 10 ms, an
    /// iteration's computation 0.4 s divided among the workers): each iteration is divided
    /// for the workers active, every task is gathered once, and the tuner (`tune_workers =
    /// "time"`) moves the count from all 8 to one nearer the fastest, sqrt(0.4 / 0.01)
    /// workers, making iterations faster than with all 8.
    #[test]
    fn the_tuner_sets_the_active_workers_of_an_iterative_run() {
        let run = |tune: hmw_core::config::TuneWorkers| {
            let mut c = cluster("main", "m\nw\nw\nw\nw\nw\nw\nw\nw\n", None, 10.0);
            c.lan_bytes_per_s = 1e5;
            let mut s = spec(vec![c], 240, 0.0);
            s.iterations = Some(60);
            // An iteration: 4 tasks of 1 operation at 10 per second, 0.4 s of one worker.
            s.sizes.result_bytes = 100.0;
            s.config.run.worker_buffers = 1;
            s.config.run.reassign_last_task = false;
            s.config.run.tune_workers = tune;
            simulate(&s, 1, Options::default()).unwrap()
        };
        let fixed = run(hmw_core::config::TuneWorkers::Off);
        let tuned = run(hmw_core::config::TuneWorkers::Time);
        assert!(fixed.each_gathered_once && tuned.each_gathered_once);
        assert_eq!(fixed.stats.iterations.len(), 60);
        assert!(fixed.stats.iterations.iter().all(|i| i.workers == 8));
        assert_eq!(tuned.stats.iterations.len(), 60);
        let last = tuned.stats.iterations.last().unwrap();
        assert!(
            last.workers < 8 && last.workers > 1,
            "{:?}",
            tuned.stats.tuner
        );
        let median = |o: &Outcome| {
            let mut t: Vec<f64> = o.stats.iterations.iter().map(|i| i.time_s).collect();
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        };
        assert!(
            median(&tuned) < median(&fixed),
            "{} against {}",
            median(&tuned),
            median(&fixed)
        );
    }

    /// Tasks of 1e12 s (a worker of perf 1e-12): the simulation skips the idle ticks and ends.
    #[test]
    fn very_long_tasks_end_without_ticking_through_them() {
        let s = spec(vec![cluster("main", "m\nw\n", None, 1e-12)], 3, 0.0);
        let outcome = simulate(&s, 1, Options::default()).unwrap();
        assert!(outcome.each_gathered_once);
        assert!(
            (outcome.stats.wall_s / 3e12 - 1.0).abs() < 1e-6,
            "{}",
            outcome.stats.wall_s
        );
        assert!(outcome.events < 100_000, "{}", outcome.events);
    }

    #[test]
    fn the_master_core_can_be_timed() {
        let s = spec(vec![cluster("main", "m\nw\n", None, 1e3)], 100, 0.0);
        let options = Options {
            measure_master: true,
        };
        let outcome = simulate(&s, 1, options).unwrap();
        assert!(outcome.master_handle.unwrap() > Duration::ZERO);
    }

    /// Three clusters, one external cluster slowed to a third of its speed at 30 % of the
    /// static run: with `[run] adapt` the master re-plans (its decisions recorded), every
    /// task is still gathered once, and the run ends no later than the static one.
    #[test]
    fn re_planning_runs_in_virtual_time() {
        let three = |adapt: bool| {
            let far = "sub # cluster=x\nc # S 0 7000 h name=b peer=a\nw\nw\nw\nw\n";
            let mut slowed = cluster("slow", far, Some(0), 1.0);
            slowed.speed_changes = vec![SpeedChange {
                at_s: 15.0,
                host: None,
                factor: 1.0 / 3.0,
            }];
            let mut s = spec(
                vec![
                    cluster(
                        "main",
                        "m\nw\nw\nc # M 1 7000 name=a peer=b cluster=slow\n\
                         c # M 1 7001 name=a peer=b cluster=fast\n",
                        None,
                        1.0,
                    ),
                    slowed,
                    cluster("fast", far, Some(0), 1.0),
                ],
                500,
                0.2,
            );
            s.config.run.adapt = adapt;
            s.config.run.adapt_interval_s = 2.0;
            simulate(&s, 1, Options::default()).unwrap()
        };
        let fixed = three(false);
        let adaptive = three(true);
        assert!(fixed.each_gathered_once && adaptive.each_gathered_once);
        assert!(fixed.stats.adaptations.is_empty());
        assert!(
            adaptive
                .stats
                .adaptations
                .iter()
                .any(|a| a.cluster == "slow" && a.action.starts_with("credit")),
            "{:?}",
            adaptive.stats.adaptations
        );
        eprintln!(
            "static {:.2} s, adaptive {:.2} s, {:?}",
            fixed.stats.wall_s, adaptive.stats.wall_s, adaptive.stats.adaptations
        );
        assert!(
            adaptive.stats.wall_s <= fixed.stats.wall_s * 1.02,
            "static {} s, adaptive {} s",
            fixed.stats.wall_s,
            adaptive.stats.wall_s
        );
    }
}
