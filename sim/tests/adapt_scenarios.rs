//! The scenarios of `scripts/bench-adapt.sh` in virtual time, against what any dispatch could
//! reach: the demo's three clusters as the testbed runs them (each worker's speed set by its
//! CPU quota: 0.02 s of an unthrottled core per task at 0.015 core per unit of perf, so a
//! perf-10 worker computes 7.5 tasks/s; lyon 15, spain 22.5, brazil 30 tasks/s in all).
//!
//! The bound: no dispatch ends before the work is computed at every worker's full speed from
//! the first instant, `T >= t_c + (tasks - R_before * t_c) / R_after` for a change of the total
//! rate at `t_c`. Static on-demand dispatch already reaches it within a few per cent, so
//! re-planning between clusters cannot gain the 10 % issue 17 asks on these scenarios: these
//! tests say so with the figures and keep it true.

use std::path::Path;

use hmw_core::{config::ConfigFile, machinefile::MachineFile};
use hmw_sim::{
    simulate, ClusterSetup, ClusterSpec, Options, Outcome, Sizes, Spec, SpeedChange, TaskCost,
    WanSpec,
};

const TASKS: u64 = 1200;
/// Tasks per second of a perf-10 worker on the testbed (0.15 core, 0.02 core-second a task).
const PERF_10: f64 = 7.5;

fn cluster(
    name: &str,
    text: &str,
    parent: Option<usize>,
    speeds: &[f64],
    wan: Option<WanSpec>,
) -> ClusterSpec {
    let machines = MachineFile::parse(Path::new(&format!("{name}.hosts")), text).unwrap();
    let mut workers = speeds.iter();
    let perf = machines
        .ranks
        .iter()
        .enumerate()
        .map(|(rank, line)| match (rank, &line.cm) {
            (0, _) | (_, Some(_)) => 0.0,
            _ => *workers.next().expect("a speed per worker"),
        })
        .collect();
    ClusterSpec {
        setup: ClusterSetup {
            name: name.into(),
            machines,
            parent,
        },
        perf,
        lan_bytes_per_s: 1e9,
        wan,
        speed_changes: Vec::new(),
    }
}

/// The demo's plan as `hmw launch` lays it out on the testbed: spain behind 2 MB/s and a 40 ms
/// round trip, brazil behind 1 MB/s, 100 ms and 0.5 % loss with `nt = nr = 4`; each CM's
/// window what its cluster computes in a round trip plus two (the model's (98)).
fn demo(adapt: bool, brazil_bytes_per_s: f64) -> Spec {
    let wan = |rate: f64, rtt_s: f64, loss: f64| WanSpec {
        down_bytes_per_s: Some(rate),
        up_bytes_per_s: Some(rate),
        rtt_s,
        loss,
        outages: Vec::new(),
        rate_changes: Vec::new(),
        ramp_s: (0.0, 0.0),
    };
    let clusters = vec![
        cluster(
            "lyon",
            "head # cluster=lyon\nw1\nw2\n\
             cm # M 1 7000 name=lyon-spain peer=spain-lyon cluster=spain nt=1 window=3 workers=3\n\
             cm # M 1 7001 name=lyon-brazil peer=brazil-lyon cluster=brazil nt=4 window=3 workers=4\n",
            None,
            &[PERF_10, PERF_10],
            None,
        ),
        cluster(
            "spain",
            "head # cluster=spain\ncm # S 0 7000 h name=spain-lyon peer=lyon-spain nr=1\nw1\nw2\nw3\n",
            Some(0),
            &[PERF_10; 3],
            Some(wan(2e6, 0.04, 0.0)),
        ),
        cluster(
            "brazil",
            "head # cluster=brazil\ncm # S 0 7001 h name=brazil-lyon peer=lyon-brazil nr=4\n\
             w1\nw2\nw3\nw4\n",
            Some(0),
            &[PERF_10 / 2.0, PERF_10, PERF_10, 1.5 * PERF_10],
            Some(wan(brazil_bytes_per_s, 0.1, 0.005)),
        ),
    ];
    let mut config = ConfigFile::defaults();
    config.run.statistics_interval = 1.0;
    config.run.worker_buffers = 2;
    config.run.reassign_last_task = true;
    config.run.wait_for_links = true;
    config.run.adapt = adapt;
    config.run.adapt_interval_s = 2.0;
    config.cm.lost_after_s = 3.0;
    Spec {
        clusters,
        config,
        tasks: TASKS,
        iterations: None,
        cost: TaskCost {
            oper: 1.0,
            cv: 0.05,
        },
        sizes: Sizes {
            task_bytes: 1040.0,
            result_bytes: 20040.0,
            task_bytes_inter: None,
            // Joined synthetic results keep one result's size.
            result_bytes_inter: Some(20040.0),
        },
    }
}

fn run(spec: &Spec) -> Outcome {
    let outcome = simulate(spec, 1, Options::default()).unwrap();
    assert!(outcome.each_gathered_once);
    outcome
}

/// The makespan no dispatch can beat: every worker at full speed from the first instant,
/// the total rate going from `before` to `after` tasks/s at `t_c`.
fn bound(before: f64, after: f64, t_c: f64) -> f64 {
    let done_by_change = before * t_c;
    if done_by_change >= TASKS as f64 {
        TASKS as f64 / before
    } else {
        t_c + (TASKS as f64 - done_by_change) / after
    }
}

const TOTAL: f64 = 15.0 + 22.5 + 30.0;

/// Spain's workers slowed to a third at 30 % of the static run: static dispatch ends within
/// 10 % of the bound, so no re-planning can end 10 % before it; re-planning does not make it
/// worse.
#[test]
fn a_cluster_slowed_to_a_third_leaves_static_dispatch_near_the_bound() {
    let base = run(&demo(false, 1e6)).stats.wall_s;
    assert!(base <= 1.1 * bound(TOTAL, TOTAL, 0.0), "base {base:.2} s");
    let t_c = 0.3 * base;
    let slowed = |adapt: bool| {
        let mut spec = demo(adapt, 1e6);
        spec.clusters[1].speed_changes = vec![SpeedChange {
            at_s: t_c,
            host: None,
            factor: 1.0 / 3.0,
        }];
        run(&spec).stats
    };
    let (fixed, adaptive) = (slowed(false), slowed(true));
    let best = bound(TOTAL, TOTAL - 2.0 / 3.0 * 22.5, t_c);
    eprintln!(
        "slowdown at {t_c:.2} s: bound {best:.2} s, static {:.2} s ({:.3} of it), adaptive \
         {:.2} s ({:.3}), {} decisions; base {base:.2} s",
        fixed.wall_s,
        fixed.wall_s / best,
        adaptive.wall_s,
        adaptive.wall_s / best,
        adaptive.adaptations.len()
    );
    assert!(fixed.wall_s >= best && adaptive.wall_s >= best);
    assert!(
        fixed.wall_s <= best / 0.9,
        "static {:.2} s: more than 10 % above the bound {best:.2} s",
        fixed.wall_s
    );
    assert!(!adaptive.adaptations.is_empty());
    assert!(
        adaptive.wall_s <= 1.02 * fixed.wall_s,
        "adaptive {:.2} s, static {:.2} s",
        adaptive.wall_s,
        fixed.wall_s
    );
}

/// Brazil's WAN at a fifth of its rate (200 kB/s) carries what its workers compute: its
/// 30 tasks/s of results, four joined into one of 20 kB, need 150 kB/s. So the link cut to a
/// fifth at 30 % costs nothing: even cut from the start, static dispatch ends as without it.
#[test]
fn brazil_s_wan_at_a_fifth_still_carries_its_results() {
    let full = run(&demo(false, 1e6)).stats;
    let fifth = run(&demo(false, 0.2e6)).stats;
    eprintln!(
        "brazil's WAN at 1 MB/s: {:.2} s, at 200 kB/s from the start: {:.2} s (bound {:.2} s)",
        full.wall_s,
        fifth.wall_s,
        bound(TOTAL, TOTAL, 0.0)
    );
    assert!(
        fifth.wall_s <= 1.03 * full.wall_s,
        "at a fifth {:.2} s, at full rate {:.2} s",
        fifth.wall_s,
        full.wall_s
    );
    let brazil = |stats: &hmw_core::stats::RunStats| {
        stats
            .clusters
            .iter()
            .find(|c| c.name == "brazil")
            .map_or(0, |c| c.tasks_done)
    };
    assert!(
        brazil(&fifth) + 20 >= brazil(&full),
        "brazil kept its share"
    );
}
