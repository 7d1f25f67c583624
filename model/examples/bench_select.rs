//! Benchmark of the automatic selection (`scripts/bench-select.sh`, `docs/benchmarks.md`,
//! "Selection"): the branch and bound on five plans of 3 clusters x 64 workers of distinct
//! speeds (the longest time to prove the optimum), on two plans of 8 x 128 (the longest time,
//! the largest gap left when the budget stops it), and its result against the exhaustive
//! search on random plans small enough for it.
//!
//! Plans come from a fixed seed: per cluster a LAN and WAN throughput, so that some external
//! clusters are WAN bound with all their workers; worker speeds spread over an order of
//! magnitude; thresholds 0.7 to 0.9.
//!
//! Usage: `bench_select [--checks N] [--budget-s S] [--seed N] [--tasks N]` (`--tasks`: every
//! large plan with N tasks, to explore other regimes; `BENCH_DEBUG=1`: the
//! selections on stderr); the last line is
//! `select c3x64_s=T1 c3x64_gap=G1 c8x128_s=T2 c8x128_gap=G2 optimal_checked=N/M`.

use std::time::Instant;

use hmw_model::methodology::selection::select_workers;
use hmw_model::{
    predict, ApplicationParams, ClusterParams, ExternalLink, ModelError, ModelInput, ModelOptions,
    SelectionMethod, SelectionRequest, SystemParams, WorkerParams, DEFAULT_EXHAUSTIVE_LIMIT,
};

/// SplitMix64: a small deterministic generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn log_uniform(&mut self, low: f64, high: f64) -> f64 {
        self.uniform(low.ln(), high.ln()).exp()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random heterogeneous plan with `sizes[c]` workers in cluster `c` (cluster 0 is the main
/// one). Tasks of 1 to 10 s on the slowest workers, results of 0.1 to 5 MB, a LAN that does
/// not limit the cluster; each external
/// cluster's WAN-out limit is 0.3 to 3 times its full `cperf` (below 1: WAN bound with all its
/// workers), its WAN-in limit well above.
fn random_plan(rng: &mut Rng, sizes: &[usize], tasks: u64) -> ModelInput {
    let result_bytes = rng.log_uniform(1e5, 5e6);
    let task_bytes = rng.log_uniform(1e3, 1e6);
    let clusters = sizes
        .iter()
        .enumerate()
        .map(|(c, &n)| {
            let base = rng.log_uniform(0.1, 1.0);
            let workers: Vec<WorkerParams> = (0..n)
                .map(|i| WorkerParams {
                    host: format!("c{c}w{i}"),
                    // an order of magnitude between the slowest and the fastest, all distinct
                    perf: base * rng.log_uniform(1.0, 10.0),
                    own_comm_bytes_per_s: None,
                })
                .collect();
            let cperf: f64 = workers.iter().map(|w| w.perf).sum();
            // a LAN from 0.5 to 20 times what all the workers need: sometimes it binds too
            let lan = cperf * (task_bytes + result_bytes) * rng.log_uniform(0.5, 20.0);
            let external = (c > 0).then(|| {
                let nr = 1 + rng.below(2);
                let wan_out_limit = cperf * rng.log_uniform(0.3, 3.0);
                ExternalLink {
                    results_per_inter_result: nr,
                    ..ExternalLink::new(
                        cperf * task_bytes * rng.log_uniform(3.0, 30.0),
                        wan_out_limit * nr as f64 * result_bytes / nr as f64,
                    )
                }
            });
            ClusterParams {
                name: format!("c{c}"),
                lan_bytes_per_s: lan,
                workers,
                external,
                dispatch: Default::default(),
                lan_scv: None,
            }
        })
        .collect();
    ModelInput {
        application: ApplicationParams {
            tasks,
            oper: 1.0,
            task_bytes,
            result_bytes,
            task_bytes_inter: None,
            result_bytes_inter: None,
            oper_cv: 0.0,
        },
        grains: vec![],
        system: SystemParams { clusters },
        options: ModelOptions {
            efficiency_threshold: rng.uniform(0.7, 0.9),
            reassign_last_task: rng.below(5) != 0,
            exhaustive_limit: 1,
            selection_budget_s: 5.0,
            worker_buffers: 1,
            terms: Default::default(),
        },
        selection: SelectionRequest::Auto,
    }
}

fn machines(p: &hmw_model::Prediction) -> usize {
    p.clusters.iter().map(|c| c.workers.len()).sum()
}

/// Whether the branch and bound and the exhaustive search agree on `input`.
fn agrees(input: &ModelInput) -> Result<(), String> {
    let mut exhaustive = input.clone();
    exhaustive.options.exhaustive_limit = DEFAULT_EXHAUSTIVE_LIMIT;
    let mut bnb = input.clone();
    bnb.options.exhaustive_limit = 1;
    match (predict(&exhaustive), predict(&bnb)) {
        (Ok(e), Ok(b)) => {
            assert!(matches!(
                e.selection.method,
                SelectionMethod::Exhaustive { .. }
            ));
            let proved = matches!(
                b.selection.method,
                SelectionMethod::BranchAndBound {
                    proved_optimal: true,
                    ..
                }
            );
            let (te, tb) = (e.run.t_ex_worst, b.run.t_ex_worst);
            if proved && (te - tb).abs() <= 1e-9 * te.max(tb) && machines(&e) == machines(&b) {
                Ok(())
            } else {
                Err(format!(
                    "exhaustive {te} s with {} machines, branch and bound {tb} s with {} (proved {proved})",
                    machines(&e),
                    machines(&b)
                ))
            }
        }
        (
            Err(ModelError::NoSelectionReachesThreshold { .. }),
            Err(ModelError::NoSelectionReachesThreshold { .. }),
        ) => Ok(()),
        (e, b) => Err(format!("exhaustive {e:?}\nbranch and bound {b:?}")),
    }
}

/// Seconds and gap of the branch and bound on `input`.
fn timed(input: &ModelInput) -> (f64, Option<f64>, bool, u64) {
    let started = Instant::now();
    let outcome = select_workers(input);
    let seconds = started.elapsed().as_secs_f64();
    match outcome {
        Ok(o) => match o.method {
            SelectionMethod::BranchAndBound {
                gap,
                proved_optimal,
                nodes,
                ..
            } => (seconds, gap, proved_optimal, nodes),
            other => panic!("expected branch and bound, got {other:?}"),
        },
        Err(e) => {
            eprintln!("{e}");
            (seconds, None, false, 0)
        }
    }
}

/// The longest time, the largest gap (`None`: no feasible selection found in the budget) and
/// whether all were proved.
fn combine(a: (f64, Option<f64>, bool), b: (f64, Option<f64>, bool)) -> (f64, Option<f64>, bool) {
    let gap = match (a.1, b.1) {
        (Some(x), Some(y)) => Some(x.max(y)),
        _ => None,
    };
    (a.0.max(b.0), gap, a.2 && b.2)
}

/// With `BENCH_DEBUG` set, the selection per cluster on stderr.
fn debug(plan: &ModelInput) {
    if std::env::var_os("BENCH_DEBUG").is_none() {
        return;
    }
    let Ok(p) = predict(plan) else {
        return;
    };
    for c in &p.clusters {
        eprintln!(
            "  {}: {} workers, cperf {:.3}, perf_ste {:.3} ({}), efficiency {:.4}, tasks {}",
            c.name,
            c.workers.len(),
            c.cperf,
            c.perf_ste,
            c.bottleneck,
            c.efficiency_worst,
            c.tasks_worst
        );
    }
    eprintln!(
        "  run {:.4} s, efficiency {:.4}, threshold {:.4}",
        p.run.t_ex_worst, p.run.efficiency_worst, plan.options.efficiency_threshold
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |key: &str, default: f64| {
        args.iter()
            .position(|a| a == key)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let checks = value("--checks", 100.0) as usize;
    let budget = value("--budget-s", 5.0);
    let seed = value("--seed", 2026.0) as u64;

    // 3 x 64: five plans from 5,000 to 100,000 tasks; the time is the longest, the gap the
    // largest ("0" only when every one is proved optimal)
    let override_tasks = value("--tasks", 0.0) as u64;
    let pick = |t: u64| {
        if override_tasks > 0 {
            override_tasks
        } else {
            t
        }
    };
    let mut worst3 = (0.0f64, Some(0.0f64), true);
    for (i, tasks) in [5_000u64, 10_000, 20_000, 50_000, 100_000]
        .map(pick)
        .into_iter()
        .enumerate()
    {
        let mut rng = Rng(seed + 100 + i as u64);
        let mut plan = random_plan(&mut rng, &[64, 64, 64], tasks);
        plan.options.selection_budget_s = budget;
        let (t, g, proved, nodes) = timed(&plan);
        debug(&plan);
        eprintln!("3 x 64, {tasks} tasks: {t:.3} s, {nodes} nodes, proved {proved}, gap {g:?}");
        worst3 = combine(worst3, (t, g, proved));
    }
    // 8 x 128: two plans, 20,000 and 100,000 tasks
    let mut worst8 = (0.0f64, Some(0.0f64), true);
    for (i, tasks) in [20_000u64, 100_000].map(pick).into_iter().enumerate() {
        let mut rng = Rng(seed + 200 + i as u64);
        let mut plan = random_plan(&mut rng, &[128; 8], tasks);
        plan.options.selection_budget_s = budget;
        let (t, g, proved, nodes) = timed(&plan);
        debug(&plan);
        eprintln!("8 x 128, {tasks} tasks: {t:.3} s, {nodes} nodes, proved {proved}, gap {g:?}");
        worst8 = combine(worst8, (t, g, proved));
    }
    let (t1, g1, p1) = worst3;
    let (t2, g2, p2) = worst8;

    let mut rng = Rng(seed + 2);
    let mut agreed = 0;
    for k in 0..checks {
        let clusters = 2 + rng.below(3) as usize;
        let total = 12 + rng.below(5) as usize; // 12 to 16 workers: up to 65,536 combinations
        let mut sizes = vec![1; clusters];
        for _ in clusters..total {
            sizes[rng.below(clusters as u64) as usize] += 1;
        }
        let tasks = 200 + rng.below(5_000);
        let input = random_plan(&mut rng, &sizes, tasks);
        match agrees(&input) {
            Ok(()) => agreed += 1,
            Err(e) => eprintln!("plan {k} ({sizes:?}, {tasks} tasks): {e}"),
        }
    }
    let gap = |g: Option<f64>, proved: bool| match (g, proved) {
        (_, true) => "0".to_string(),
        (Some(g), false) => format!("{g:.4}"),
        (None, false) => "inf".to_string(),
    };
    println!(
        "select c3x64_s={t1:.3} c3x64_gap={} c8x128_s={t2:.3} c8x128_gap={} optimal_checked={agreed}/{checks}",
        gap(g1, p1),
        gap(g2, p2)
    );
}
