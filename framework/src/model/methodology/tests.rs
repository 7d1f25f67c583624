//! The methodology on the first example of issue 3 (three clusters, 500 stochastic-simulation
//! tasks), with expected values computed by hand from the equations, and property tests on
//! random systems.

use proptest::prelude::*;

use super::advice::{AdviceKind, AdviceValue};
use super::selection::SelectionMethod;
use super::*;
use crate::model::params::{
    ClusterParams, ExternalLink, GrainCandidate, ModelOptions, SystemParams, WorkerParams,
    DEFAULT_EXHAUSTIVE_LIMIT,
};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

fn workers(list: &[(&str, f64)]) -> Vec<WorkerParams> {
    list.iter()
        .map(|&(host, perf)| WorkerParams {
            host: host.into(),
            perf,
        })
        .collect()
}

fn link(wan_in: f64, wan_out: f64) -> Option<ExternalLink> {
    Some(ExternalLink {
        wan_in_bytes_per_s: wan_in,
        wan_out_bytes_per_s: wan_out,
        tasks_per_inter_task: 1,
        results_per_inter_result: 1,
    })
}

/// The first example: argentina (main), brazil, spain.
fn three_clusters(selection: SelectionRequest) -> ModelInput {
    ModelInput {
        application: ApplicationParams {
            tasks: 500,
            oper: 1.0,
            task_bytes: 4.0,
            result_bytes: 2_310_244.0,
            task_bytes_inter: None,
            result_bytes_inter: None,
        },
        grains: vec![],
        system: SystemParams {
            clusters: vec![
                ClusterParams {
                    name: "argentina".into(),
                    lan_bytes_per_s: 1_068_674.0,
                    workers: workers(&[("pgs-1", 0.7909e-3), ("pgs-3", 0.7951e-3)]),
                    external: None,
                },
                ClusterParams {
                    name: "brazil".into(),
                    lan_bytes_per_s: 987_614.0,
                    workers: workers(&[
                        ("infoquir1", 0.4683e-3),
                        ("infoquir3", 1.4845e-3),
                        ("infoquir5", 0.3642e-3),
                        ("infoquir6", 0.3750e-3),
                        ("infoquir7", 0.3743e-3),
                    ]),
                    external: link(26_384.0, 25_430.0),
                },
                ClusterParams {
                    name: "spain".into(),
                    lan_bytes_per_s: 9_599_164.0,
                    workers: workers(&[
                        ("aoquir3", 4.6354e-3),
                        ("aoquir4", 1.8681e-3),
                        ("aoquir5", 1.4706e-3),
                        ("aoquir6", 1.5286e-3),
                        ("aoquir7", 2.0293e-3),
                        ("aoquir8", 6.1301e-3),
                        ("aoquir10", 2.0507e-3),
                        ("aoquir11", 1.9997e-3),
                    ]),
                    external: link(21_802.0, 21_206.0),
                },
            ],
        },
        options: ModelOptions {
            efficiency_threshold: 0.8,
            reassign_last_task: true,
            exhaustive_limit: DEFAULT_EXHAUSTIVE_LIMIT,
        },
        selection,
    }
}

fn pinned() -> SelectionRequest {
    SelectionRequest::Pinned(vec![vec![0, 1], vec![0, 1, 2, 3, 4], vec![0, 4, 6]])
}

#[test]
fn pinned_selection_of_the_first_example() {
    let p = predict(&three_clusters(pinned())).unwrap();
    assert_eq!(p.selection.method, SelectionMethod::Pinned);
    let spain = &p.clusters[2];
    assert_eq!(spain.workers, ["aoquir3", "aoquir7", "aoquir10"]);
    assert_eq!(spain.bottleneck, Bottleneck::Compute);
    let tasks_worst: Vec<u64> = p.clusters.iter().map(|c| c.tasks_worst).collect();
    let tasks_best: Vec<u64> = p.clusters.iter().map(|c| c.tasks_best).collect();
    assert_eq!(tasks_worst, [59, 111, 330]);
    assert_eq!(tasks_best, [59, 114, 327]);
    assert!(close(p.run.t_ex_worst, 38_337.056_860_881_63));
    assert!(close(p.run.t_ex_best, 37_737.919_471_201_41));
    let efficiencies: Vec<f64> = p.clusters.iter().map(|c| c.efficiency_worst).collect();
    for (got, expected) in efficiencies.iter().zip([
        0.970_353_685_433_214,
        0.944_255_594_888_421,
        0.987_660_867_364_014_5,
    ]) {
        assert!(close(*got, expected), "{efficiencies:?}");
    }
    assert!(close(p.run.efficiency_worst, 0.975_651_114_187_764_2));
    assert!(p.advice.is_empty(), "{:?}", p.advice);
}

#[test]
fn local_cluster_analysis_and_speedup() {
    let p = predict(&three_clusters(pinned())).unwrap();
    let local = p.local.as_ref().unwrap();
    assert_eq!(local.name, "argentina");
    assert_eq!(local.tasks_worst, 500);
    assert_eq!(local.min_tasks, Some(5));
    assert!(close(local.t_ex_worst, 315_892.864_945_588_9));
    assert!(close(local.t_ex_best, 315_261.754_663_747_6));
    assert!(close(local.efficiency_worst, 0.997_991_873_080_530_8));
    let speedup = p.run.speedup_worst.unwrap();
    assert!(close(
        speedup,
        315_892.864_945_588_9 / 38_337.056_860_881_63
    ));
}

#[test]
fn all_workers_make_spain_wan_bound_and_the_advice_joins_three_results() {
    let p = predict(&three_clusters(SelectionRequest::All)).unwrap();
    let spain = &p.clusters[2];
    assert_eq!(spain.bottleneck, Bottleneck::WanOut);
    assert_eq!(
        p.clusters.iter().map(|c| c.tasks_worst).collect::<Vec<_>>(),
        [58, 108, 334]
    );
    assert!(close(p.run.t_ex_worst, 37_358.679_011_356_144));
    assert!(close(spain.efficiency_worst, 0.411_760_918_505_823_97));
    assert_eq!(p.advice.len(), 1, "{:?}", p.advice);
    let advice = &p.advice[0];
    assert_eq!(advice.cluster, "spain");
    assert_eq!(advice.kind, AdviceKind::ResultsPerInterResult);
    assert_eq!(advice.value, AdviceValue::Count(3));
}

#[test]
fn auto_selection_of_the_first_example_beats_the_pinned_one() {
    let auto = predict(&three_clusters(SelectionRequest::Auto)).unwrap();
    let pinned = predict(&three_clusters(pinned())).unwrap();
    assert_eq!(
        auto.selection.method,
        SelectionMethod::Exhaustive {
            evaluated: (1 << 15) - 1,
            limit: DEFAULT_EXHAUSTIVE_LIMIT
        }
    );
    assert!(auto.run.t_ex_worst <= pinned.run.t_ex_worst);
    assert!(close(auto.run.t_ex_worst, 36_931.897_836_555_51));
    assert_eq!(auto.clusters[2].workers, ["aoquir3", "aoquir8"]);
    assert_eq!(
        auto.clusters[0].workers.len() + auto.clusters[1].workers.len(),
        7
    );
    for c in &auto.clusters {
        assert!(
            c.efficiency_worst >= 0.8,
            "{}: {}",
            c.name,
            c.efficiency_worst
        );
    }
    assert!(auto.run.efficiency_worst >= 0.8);
}

#[test]
fn greedy_selection_beyond_the_limit_is_feasible_and_no_better_than_exhaustive() {
    let mut input = three_clusters(SelectionRequest::Auto);
    input.options.exhaustive_limit = 1000;
    let greedy = predict(&input).unwrap();
    match greedy.selection.method {
        SelectionMethod::Greedy {
            combinations,
            limit,
            evaluated,
        } => {
            assert_eq!(combinations, Some(1 << 15));
            assert_eq!(limit, 1000);
            assert!(evaluated > 0 && evaluated < 1 << 15, "{evaluated}");
        }
        other => panic!("expected a greedy search, got {other:?}"),
    }
    for c in &greedy.clusters {
        assert!(c.efficiency_worst >= 0.8);
    }
    assert!(greedy.run.efficiency_worst >= 0.8);
    let exhaustive = predict(&three_clusters(SelectionRequest::Auto)).unwrap();
    assert!(greedy.run.t_ex_worst >= exhaustive.run.t_ex_worst * (1.0 - 1e-12));
}

#[test]
fn greedy_search_handles_a_plan_far_beyond_the_exhaustive_limit() {
    // the first example with every worker listed four times: 60 workers, 2^60 combinations
    let mut input = three_clusters(SelectionRequest::Auto);
    for cluster in &mut input.system.clusters {
        let originals = cluster.workers.clone();
        for copy in 1..4 {
            cluster
                .workers
                .extend(originals.iter().map(|w| WorkerParams {
                    host: format!("{}-{copy}", w.host),
                    perf: w.perf,
                }));
        }
    }
    let p = predict(&input).unwrap();
    assert!(matches!(
        p.selection.method,
        SelectionMethod::Greedy { combinations: Some(c), .. } if c == 1 << 60
    ));
    for c in &p.clusters {
        assert!(c.efficiency_worst >= 0.8);
    }
    assert!(p.run.efficiency_worst >= 0.8);
    // four times the machines: the run is faster than the exhaustive optimum on the original
    assert!(p.run.t_ex_worst < 36_931.9);
}

#[test]
fn auto_reports_when_no_selection_reaches_the_threshold() {
    // results of 1 GB on a 1 MB/s LAN take longer than the computation of a task
    let mut input = three_clusters(SelectionRequest::Auto);
    input.application.tasks = 2;
    input.application.result_bytes = 1e9;
    input.system.clusters.truncate(1);
    let err = predict(&input).unwrap_err();
    match err {
        ModelError::NoSelectionReachesThreshold {
            threshold,
            best_efficiency,
        } => {
            assert_eq!(threshold, 0.8);
            assert!(best_efficiency < 0.8);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn nr3_lifts_spain_and_a_granularity_candidate_is_advised_for_a_wan_bound_cluster() {
    let mut input = three_clusters(SelectionRequest::All);
    input.application.result_bytes_inter = Some(2_310_244.0);
    if let Some(link) = input.system.clusters[2].external.as_mut() {
        link.results_per_inter_result = 3;
    }
    let p = predict(&input).unwrap();
    assert_eq!(p.clusters[2].bottleneck, Bottleneck::Compute);

    // grains: a result four times smaller at a coarser grain lifts the all-workers WAN limit
    let mut input = three_clusters(SelectionRequest::All);
    let at = |grain: u64, result_bytes: f64| GrainCandidate {
        grain,
        application: ApplicationParams {
            result_bytes,
            ..input.application.clone()
        },
    };
    input.grains = vec![
        at(2, 2_310_244.0 / 2.0),
        at(4, 2_310_244.0 / 4.0),
        at(1, 2_310_244.0),
    ];
    let p = predict(&input).unwrap();
    let grain = p
        .advice
        .iter()
        .find(|a| a.kind == AdviceKind::Granularity)
        .expect("a granularity advice");
    assert_eq!(grain.cluster, "spain");
    assert_eq!(grain.value, AdviceValue::Count(4));
    assert_eq!(p.grains.len(), 9);
    assert_eq!(p.grains[0].grain, 1);
}

#[test]
fn invalid_inputs_are_errors_not_panics() {
    let mut input = three_clusters(SelectionRequest::Pinned(vec![vec![0], vec![7]]));
    assert!(matches!(predict(&input), Err(ModelError::InvalidInput(_))));
    input.selection = SelectionRequest::Pinned(vec![vec![0], vec![9], vec![]]);
    assert!(matches!(predict(&input), Err(ModelError::InvalidInput(_))));
    input.selection = SelectionRequest::All;
    input.system.clusters[1].lan_bytes_per_s = -1.0;
    assert!(matches!(predict(&input), Err(ModelError::InvalidInput(_))));
    let mut input = three_clusters(SelectionRequest::All);
    input.system.clusters.swap(0, 1);
    assert!(matches!(predict(&input), Err(ModelError::InvalidInput(_))));
}

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
                        })
                        .collect()
                };
                let mut clusters = vec![ClusterParams {
                    name: "main".into(),
                    lan_bytes_per_s: lan,
                    workers: named("m", &main),
                    external: None,
                }];
                for (k, (perfs, lan, wan_in, wan_out, nt, nr)) in externals.into_iter().enumerate()
                {
                    clusters.push(ClusterParams {
                        name: format!("ext{k}"),
                        lan_bytes_per_s: lan,
                        workers: named("e", &perfs),
                        external: Some(ExternalLink {
                            wan_in_bytes_per_s: wan_in,
                            wan_out_bytes_per_s: wan_out,
                            tasks_per_inter_task: nt,
                            results_per_inter_result: nr,
                        }),
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
                    },
                    grains: vec![],
                    system: SystemParams { clusters },
                    options: ModelOptions {
                        efficiency_threshold: threshold,
                        reassign_last_task: reassign,
                        exhaustive_limit: DEFAULT_EXHAUSTIVE_LIMIT,
                    },
                    selection,
                }
            },
        )
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
    fn greedy_selection_never_reports_below_the_threshold(input in random_input()) {
        let mut input = input;
        input.selection = SelectionRequest::Auto;
        input.options.exhaustive_limit = 1;
        if let Ok(p) = predict(&input) {
            let threshold = input.options.efficiency_threshold;
            let greedy = matches!(p.selection.method, SelectionMethod::Greedy { .. });
            prop_assert!(greedy);
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
