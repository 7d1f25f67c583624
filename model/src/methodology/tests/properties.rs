//! Property tests of the methodology on random systems: the model's invariants, clear errors
//! on extreme inputs, and branch and bound against the exhaustive search.

use super::*;

/// A random system of a main cluster (0 to 3 workers) and 0 to 2 external clusters (1 to 3
/// workers each), at most 9 workers so that `auto` stays exhaustive.
fn random_input() -> impl Strategy<Value = ModelInput> {
    let worker = 1e-3f64..10.0;
    let external = (
        prop::collection::vec(worker.clone(), 1..4),
        1e3f64..1e8,
        1e2f64..1e7,
        1e2f64..1e7,
        1u64..4,
        1u64..4,
    );
    (
        prop::collection::vec(worker, 0..4),
        1e3f64..1e8,
        prop::collection::vec(external, 0..3),
        (1u64..3000, 0.1f64..100.0, 0.0f64..1e6, 0.0f64..1e6),
        (0.0f64..0.95, any::<bool>(), 0u8..3),
    )
        .prop_filter("at least one worker", |(main, _, ext, _, _)| {
            !main.is_empty() || !ext.is_empty()
        })
        .prop_map(
            |(
                main,
                lan,
                externals,
                (tasks, oper, task_bytes, result_bytes),
                (threshold, reassign, mode),
            )| {
                let named = |prefix: &str, perfs: &[f64]| -> Vec<WorkerParams> {
                    perfs
                        .iter()
                        .enumerate()
                        .map(|(i, &perf)| WorkerParams {
                            host: format!("{prefix}{i}"),
                            perf,
                            own_comm_bytes_per_s: None,
                        })
                        .collect()
                };
                let mut clusters = vec![ClusterParams {
                    name: "main".into(),
                    lan_bytes_per_s: lan,
                    workers: named("m", &main),
                    external: None,
                    dispatch: Default::default(),
                    lan_scv: None,
                }];
                for (k, (perfs, lan, wan_in, wan_out, nt, nr)) in externals.into_iter().enumerate()
                {
                    clusters.push(ClusterParams {
                        name: format!("ext{k}"),
                        lan_bytes_per_s: lan,
                        workers: named("e", &perfs),
                        external: Some(ExternalLink {
                            tasks_per_inter_task: nt,
                            results_per_inter_result: nr,
                            ..ExternalLink::new(wan_in, wan_out)
                        }),
                        dispatch: Default::default(),
                        lan_scv: None,
                    });
                }
                let selection = match mode {
                    0 => SelectionRequest::All,
                    1 => SelectionRequest::Auto,
                    _ => SelectionRequest::Pinned(
                        clusters
                            .iter()
                            .map(|c| (0..c.workers.len()).step_by(2).collect())
                            .collect(),
                    ),
                };
                ModelInput {
                    application: ApplicationParams {
                        tasks,
                        oper,
                        task_bytes,
                        result_bytes,
                        task_bytes_inter: None,
                        result_bytes_inter: None,
                        oper_cv: 0.0,
                    },
                    grains: vec![],
                    system: SystemParams { clusters },
                    options: ModelOptions {
                        efficiency_threshold: threshold,
                        reassign_last_task: reassign,
                        exhaustive_limit: DEFAULT_EXHAUSTIVE_LIMIT,
                        selection_budget_s: crate::params::DEFAULT_SELECTION_BUDGET_S,
                        worker_buffers: 1,
                        terms: Default::default(),
                    },
                    selection,
                }
            },
        )
}

/// A value `10^(z * spread)`, log-uniform over `10^-spread..10^spread`, at most `f64::MAX`.
fn scaled(z: f64, spread: f64) -> f64 {
    10f64.powf(z * spread).min(f64::MAX)
}

/// Systems like [`random_input`] whose every number is log-uniform over up to 640 decades
/// (`spread` 320: from subnormal 1e-320 to `f64::MAX`; 40 and 10 keep more of them in the
/// working range), sizes sometimes zero, and tasks log-uniform up to 1e12.
fn extreme_input() -> impl Strategy<Value = ModelInput> {
    let z = -1.0f64..1.0;
    let size = prop_oneof![Just(None), z.clone().prop_map(Some)];
    let external = (
        prop::collection::vec(z.clone(), 1..4),
        (z.clone(), z.clone(), z.clone()),
        (1u64..5, 1u64..5),
    );
    (
        prop_oneof![Just(320.0f64), Just(40.0), Just(10.0)],
        prop::collection::vec(z.clone(), 0..4),
        z.clone(),
        prop::collection::vec(external, 0..3),
        (0.0f64..12.0, z, size.clone(), size),
        (0.0f64..0.95, any::<bool>(), 0u8..3),
    )
        .prop_filter("at least one worker", |(_, main, _, ext, _, _)| {
            !main.is_empty() || !ext.is_empty()
        })
        .prop_map(
            |(
                spread,
                main,
                lan,
                externals,
                (tasks, oper, task, result),
                (threshold, reassign, mode),
            )| {
                let v = |z: f64| scaled(z, spread);
                let named = |prefix: &str, zs: &[f64]| -> Vec<WorkerParams> {
                    zs.iter()
                        .enumerate()
                        .map(|(i, &z)| WorkerParams {
                            host: format!("{prefix}{i}"),
                            perf: v(z),
                            own_comm_bytes_per_s: None,
                        })
                        .collect()
                };
                let mut clusters = vec![ClusterParams {
                    name: "main".into(),
                    lan_bytes_per_s: v(lan),
                    workers: named("m", &main),
                    external: None,
                    dispatch: Default::default(),
                    lan_scv: None,
                }];
                for (k, (perfs, (lan, wan_in, wan_out), (nt, nr))) in
                    externals.into_iter().enumerate()
                {
                    clusters.push(ClusterParams {
                        name: format!("ext{k}"),
                        lan_bytes_per_s: v(lan),
                        workers: named("e", &perfs),
                        external: Some(ExternalLink {
                            tasks_per_inter_task: nt,
                            results_per_inter_result: nr,
                            ..ExternalLink::new(v(wan_in), v(wan_out))
                        }),
                        dispatch: Default::default(),
                        lan_scv: None,
                    });
                }
                let selection = match mode {
                    0 => SelectionRequest::All,
                    1 => SelectionRequest::Auto,
                    _ => SelectionRequest::Pinned(
                        clusters
                            .iter()
                            .map(|c| (0..c.workers.len()).step_by(2).collect())
                            .collect(),
                    ),
                };
                ModelInput {
                    application: ApplicationParams {
                        tasks: (10f64.powf(tasks) as u64).max(1),
                        oper: v(oper),
                        task_bytes: task.map_or(0.0, v),
                        result_bytes: result.map_or(0.0, v),
                        task_bytes_inter: None,
                        result_bytes_inter: None,
                        oper_cv: 0.0,
                    },
                    grains: vec![],
                    system: SystemParams { clusters },
                    options: ModelOptions {
                        efficiency_threshold: threshold,
                        reassign_last_task: reassign,
                        exhaustive_limit: DEFAULT_EXHAUSTIVE_LIMIT,
                        selection_budget_s: crate::params::DEFAULT_SELECTION_BUDGET_S,
                        worker_buffers: 1,
                        terms: Default::default(),
                    },
                    selection,
                }
            },
        )
}

/// Every number of a cluster prediction is finite.
fn finite_cluster(c: &ClusterPrediction) -> bool {
    [
        c.cperf,
        c.perf_ste,
        c.t_up,
        c.t_end_best,
        c.t_end_worst,
        c.t_ex_best,
        c.t_ex_worst,
        c.efficiency_best,
        c.efficiency_worst,
    ]
    .iter()
    .all(|x| x.is_finite())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Extreme but positive and finite numbers: either a clear error naming a key, or a
    /// prediction whose every number is finite and which keeps the invariants.
    #[test]
    fn extreme_inputs_give_a_clear_error_or_a_finite_prediction(input in extreme_input()) {
        let auto = input.selection == SelectionRequest::Auto;
        match predict(&input) {
            Ok(p) => {
                let run = &p.run;
                for c in p.clusters.iter().chain(&p.local) {
                    prop_assert!(finite_cluster(c), "{c:?}");
                    prop_assert!(c.efficiency_best <= 1.0 + 1e-12 && c.efficiency_worst <= 1.0 + 1e-12, "{c:?}");
                    prop_assert!(c.efficiency_best >= 0.0 && c.efficiency_worst >= 0.0);
                }
                for x in [run.t_best, run.t_ex_best, run.t_ex_worst, run.efficiency_best, run.efficiency_worst] {
                    prop_assert!(x.is_finite() && x > 0.0, "{run:?}");
                }
                for x in [run.speedup_best, run.speedup_worst].into_iter().flatten() {
                    prop_assert!(x.is_finite() && x > 0.0, "{run:?}");
                }
                prop_assert!(run.efficiency_best <= 1.0 + 1e-12 && run.efficiency_worst <= 1.0 + 1e-12, "{run:?}");
                prop_assert!(run.t_ex_best >= run.t_best * (1.0 - 1e-12), "{run:?}");
                prop_assert!(run.t_ex_worst >= run.t_best * (1.0 - 1e-12), "{run:?}");
                let tasks = input.application.tasks;
                prop_assert_eq!(p.clusters.iter().map(|c| c.tasks_best).sum::<u64>(), tasks);
                prop_assert_eq!(p.clusters.iter().map(|c| c.tasks_worst).sum::<u64>(), tasks);
                for a in &p.advice {
                    match a.value {
                        AdviceValue::Count(n) => prop_assert!((1..=MAX_TASKS_PER_UNIT).contains(&n) || a.kind == AdviceKind::Granularity, "{a:?}"),
                        AdviceValue::Seconds(t) => prop_assert!(t.is_finite() && t > 0.0, "{a:?}"),
                    }
                }
            }
            Err(ModelError::OutOfRange(e)) => {
                prop_assert!(!e.key.is_empty() && e.message.contains("1e150"), "{e}");
            }
            Err(ModelError::NoSelectionReachesThreshold { best_efficiency, threshold }) => {
                prop_assert!(auto);
                prop_assert!(best_efficiency < threshold);
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn predictions_keep_the_model_invariants(input in random_input()) {
        let auto = input.selection == SelectionRequest::Auto;
        let threshold = input.options.efficiency_threshold;
        match predict(&input) {
            Ok(p) => {
                let run = &p.run;
                // efficiency never above 1
                for c in p.clusters.iter().chain(&p.local) {
                    prop_assert!(c.efficiency_best <= 1.0 + 1e-12 && c.efficiency_worst <= 1.0 + 1e-12);
                    prop_assert!(c.efficiency_best >= 0.0 && c.efficiency_worst >= 0.0);
                }
                prop_assert!(run.efficiency_best <= 1.0 + 1e-12 && run.efficiency_worst <= 1.0 + 1e-12);
                // T_ex never below T_best
                prop_assert!(run.t_ex_best >= run.t_best * (1.0 - 1e-12));
                prop_assert!(run.t_ex_worst >= run.t_best * (1.0 - 1e-12));
                // integer workloads sum to the problem
                let tasks = input.application.tasks;
                prop_assert_eq!(p.clusters.iter().map(|c| c.tasks_best).sum::<u64>(), tasks);
                prop_assert_eq!(p.clusters.iter().map(|c| c.tasks_worst).sum::<u64>(), tasks);
                // the multi-cluster time is the largest cluster time
                let largest = p.clusters.iter().map(|c| c.t_ex_worst).fold(0.0, f64::max);
                prop_assert_eq!(largest, run.t_ex_worst);
                // auto never reports a selection below the threshold
                if auto {
                    for c in &p.clusters {
                        prop_assert!(c.efficiency_worst >= threshold, "{}: {}", c.name, c.efficiency_worst);
                    }
                    prop_assert!(run.efficiency_worst >= threshold);
                }
            }
            Err(ModelError::NoSelectionReachesThreshold { best_efficiency, .. }) => {
                prop_assert!(auto);
                prop_assert!(best_efficiency < threshold);
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn branch_and_bound_selection_never_reports_below_the_threshold(input in random_input()) {
        let mut input = input;
        input.selection = SelectionRequest::Auto;
        input.options.exhaustive_limit = 1;
        // Whether the search proves its optimum or stops at its budget, what it reports
        // keeps the threshold; a short budget keeps 256 cases of extreme plans quick.
        input.options.selection_budget_s = 0.02;
        if let Ok(p) = predict(&input) {
            let threshold = input.options.efficiency_threshold;
            let bnb = matches!(p.selection.method, SelectionMethod::BranchAndBound { .. });
            prop_assert!(bnb);
            for c in &p.clusters {
                prop_assert!(c.efficiency_worst >= threshold);
            }
            prop_assert!(p.run.efficiency_worst >= threshold);
        }
    }

    #[test]
    fn adding_a_machine_never_lowers_available_performance(
        input in random_input(),
        extra in 1e-3f64..10.0,
    ) {
        for params in &input.system.clusters {
            let perfs: Vec<f64> = params.workers.iter().map(|w| w.perf).collect();
            let Some(before) = ClusterModel::new(&input.application, params, &perfs, true) else {
                continue;
            };
            let mut more = perfs.clone();
            more.push(extra);
            let after = ClusterModel::new(&input.application, params, &more, true).unwrap();
            prop_assert!(after.cperf >= before.cperf);
            prop_assert!(after.perf_ste >= before.perf_ste);
        }
    }
}

/// A heterogeneous plan small enough for the exhaustive search: 2 to 4 clusters, 10 to 14
/// workers in all, speeds over an order of magnitude, LANs that sometimes bind, WAN-out limits
/// from 0.3 to 3 times an external cluster's full `cperf`, `nr` and `nt` 1 or 2, thresholds 0.7 to 0.9,
/// 50 to 5,000 tasks, WAN round trips of 0 to 2 s (96)(97), one or two tasks per worker (99).
fn small_heterogeneous_plan() -> impl Strategy<Value = ModelInput> {
    let cluster = (
        1usize..=5,
        prop::collection::vec(1.0f64..10.0, 5),
        0.1f64..1.0,
        0.5f64..20.0,
        0.3f64..3.0,
        3.0f64..30.0,
        1u64..=2,
        1u64..=2,
    );
    (
        prop::collection::vec(cluster, 2..=4),
        50u64..5_000,
        1e5f64..5e6,
        1e3f64..1e6,
        0.7f64..0.9,
        prop::bool::weighted(0.8),
        (0.0f64..2.0, 1u32..=2),
    )
        .prop_filter("10 to 14 workers", |(clusters, ..)| {
            (10..=14).contains(&clusters.iter().map(|c| c.0).sum::<usize>())
        })
        .prop_map(
            |(clusters, tasks, result_bytes, task_bytes, threshold, reassign, (rtt, buffers))| {
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
                    system: SystemParams {
                        clusters: clusters
                            .iter()
                            .enumerate()
                            .map(|(c, (n, spread, base, lan, wan_out, wan_in, nr, nt))| {
                                let workers: Vec<WorkerParams> = (0..*n)
                                    .map(|i| WorkerParams {
                                        host: format!("c{c}w{i}"),
                                        perf: base * spread[i],
                                        own_comm_bytes_per_s: None,
                                    })
                                    .collect();
                                let cperf: f64 = workers.iter().map(|w| w.perf).sum();
                                ClusterParams {
                                    name: format!("c{c}"),
                                    lan_bytes_per_s: cperf * (task_bytes + result_bytes) * lan,
                                    workers,
                                    external: (c > 0).then(|| ExternalLink {
                                        tasks_per_inter_task: *nt,
                                        results_per_inter_result: *nr,
                                        wan_rtt_s: rtt * c as f64,
                                        ..ExternalLink::new(
                                            cperf * task_bytes * wan_in,
                                            cperf * result_bytes * wan_out,
                                        )
                                    }),
                                    dispatch: Default::default(),
                                    lan_scv: None,
                                }
                            })
                            .collect(),
                    },
                    options: ModelOptions {
                        efficiency_threshold: threshold,
                        reassign_last_task: reassign,
                        exhaustive_limit: DEFAULT_EXHAUSTIVE_LIMIT,
                        selection_budget_s: 60.0,
                        worker_buffers: buffers,
                        terms: Default::default(),
                    },
                    selection: SelectionRequest::Auto,
                }
            },
        )
}

/// The exhaustive search's prediction and the branch and bound's (forced by an exhaustive limit
/// of 1) on `input`: the same worst-case makespan (relative 1e-9), the branch and bound proved
/// optimal with the same number of machines, or no selection for both. Returns the exhaustive
/// one's clusters when there is a selection.
fn same_optimum(input: &ModelInput) -> Result<Vec<ClusterPrediction>, TestCaseError> {
    let exhaustive = predict(input);
    let mut forced = input.clone();
    forced.options.exhaustive_limit = 1;
    match (exhaustive, predict(&forced)) {
        (Ok(e), Ok(b)) => {
            let proved = matches!(
                b.selection.method,
                SelectionMethod::BranchAndBound { proved_optimal: true, gap: Some(g), .. }
                    if g == 0.0
            );
            prop_assert!(proved, "{:?}", b.selection.method);
            let (te, tb) = (e.run.t_ex_worst, b.run.t_ex_worst);
            prop_assert!((te - tb).abs() <= 1e-9 * te.max(tb), "{te} != {tb}");
            let machines =
                |p: &Prediction| p.clusters.iter().map(|c| c.workers.len()).sum::<usize>();
            prop_assert_eq!(machines(&e), machines(&b));
            Ok(e.clusters)
        }
        (
            Err(ModelError::NoSelectionReachesThreshold { .. }),
            Err(ModelError::NoSelectionReachesThreshold { .. }),
        ) => Ok(Vec::new()),
        (e, b) => Err(TestCaseError::fail(format!(
            "exhaustive {e:?}, branch and bound {b:?}"
        ))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// The branch and bound proves the exhaustive search's optimum: the same worst-case
    /// makespan (relative 1e-9) and the same number of machines, or no selection for both.
    #[test]
    fn branch_and_bound_equals_the_exhaustive_search(input in small_heterogeneous_plan()) {
        same_optimum(&input)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// With `contention = "mva"` (the network's rate, never above the bottleneck formulas',
    /// so the bounds still hold) and a master's CPU per task up to a tenth of the fastest
    /// worker's task time, the branch and bound still finds the exhaustive search's optimum.
    #[test]
    fn branch_and_bound_equals_the_exhaustive_search_with_the_network(
        input in small_heterogeneous_plan(),
        master in 0.0f64..0.1,
        oper_cv in 0.0f64..1.5,
    ) {
        let mut input = input;
        input.options.terms.contention = crate::params::Contention::Mva;
        input.application.oper_cv = oper_cv;
        for cluster in &mut input.system.clusters {
            let fastest = cluster.workers.iter().map(|w| w.perf).fold(0.0, f64::max);
            cluster.dispatch.master_s = master / fastest;
        }
        for c in same_optimum(&input)? {
            let bound = c.limits.steady_performance();
            prop_assert!(c.network.is_some_and(|n| n <= bound && n == c.perf_ste));
        }
    }
}
