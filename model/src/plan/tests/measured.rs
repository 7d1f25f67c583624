//! The measured system (`hmw calibrate`'s file): its values replace the plan's, it reads as
//! calibrate writes it, and each error names its key.

use super::*;

#[test]
fn a_measured_system_replaces_the_hand_written_values() {
    let text = SMALL.replace(", perf = 3.0", "");
    let plan = Plan::from_toml_str(&text).unwrap();
    let err = plan.model_input(None).unwrap_err().to_string();
    assert!(
        err.starts_with("cluster `away`, machine `x2`, key `perf`: missing"),
        "{err}"
    );
    let measured = MeasuredSystem {
        measured_at: None,
        conditions: None,
        clusters: vec![MeasuredCluster {
            lan_runs: Vec::new(),
            name: "away".into(),
            lan_bytes_per_s: None,
            wan_in_bytes_per_s: Some(150.0),
            wan_out_bytes_per_s: None,
            wan_rtt_s: None,
            wan_in_ramp_s: None,
            wan_out_ramp_s: None,
            workers: vec![
                MeasuredWorker {
                    host: "x2".into(),
                    perf: 2.5,
                    own_comm_bytes_per_s: Some(40.0),
                    cores: None,
                    stage_s: None,
                    chain_cv: None,
                },
                MeasuredWorker {
                    host: "x1".into(),
                    perf: 1.5,
                    own_comm_bytes_per_s: None,
                    cores: None,
                    stage_s: None,
                    chain_cv: None,
                },
            ],
            master_cpu_per_task_s: None,
            cm_cpu_per_task_s: None,
            lan_scv: None,
        }],
        oper_cv: None,
    };
    let input = plan.model_input(Some(&measured)).unwrap();
    let away = &input.system.clusters[1];
    assert_eq!(away.workers[0].perf, 1.5);
    assert_eq!(away.workers[1].perf, 2.5);
    assert_eq!(away.workers[0].own_comm_bytes_per_s, None);
    assert_eq!(away.workers[1].own_comm_bytes_per_s, Some(40.0));
    let link = away.external.as_ref().unwrap();
    assert_eq!(link.wan_in_bytes_per_s, 150.0);
    assert_eq!(link.wan_out_bytes_per_s, 100.0);
    let mut wrong = measured.clone();
    wrong.clusters[0].workers[0].own_comm_bytes_per_s = Some(0.0);
    let err = plan.model_input(Some(&wrong)).unwrap_err().to_string();
    assert!(
        err.starts_with("cluster `away`, machine `x2`, key `own_comm_bytes_per_s`"),
        "{err}"
    );
    let mut wrong = measured.clone();
    wrong.clusters[0].workers[0].host = "c".into();
    let err = plan.model_input(Some(&wrong)).unwrap_err().to_string();
    assert!(
        err.starts_with("cluster `away`, machine `c`, key `host`"),
        "{err}"
    );
    let mut wrong = measured;
    wrong.clusters[0].name = "elsewhere".into();
    assert!(plan.model_input(Some(&wrong)).is_err());
}

#[test]
fn the_measured_system_is_read_as_calibrate_writes_it() {
    // hmw calibrate writes `toml::to_string(&MeasuredSystem)` to --out (system.toml by default)
    let written = toml::to_string(&calibrated()).unwrap();
    assert!(written.contains("measured_at = "), "{written}");
    assert!(written.contains("[[clusters.workers]]"), "{written}");
    for name in ["system.toml", "system.out"] {
        let file = TempFile::new(name, &written);
        let measured = load_measured_system(&file.0).unwrap();
        assert_eq!(measured, calibrated(), "{name}");
    }
    let json = TempFile::new(
        "system.json",
        &serde_json::to_string(&calibrated()).unwrap(),
    );
    assert_eq!(load_measured_system(&json.0).unwrap(), calibrated());
    let plan = Plan::from_toml_str(SMALL).unwrap();
    let input = plan.model_input(Some(&calibrated())).unwrap();
    assert_eq!(input.system.clusters[0].workers[0].perf, 1.25);
    assert_eq!(input.system.clusters[1].lan_bytes_per_s, 900.0);
}

#[test]
fn errors_in_the_measured_system_name_the_key() {
    let written = toml::to_string(&calibrated())
        .unwrap()
        .replace("perf = 2.5", "perf = \"fast\"");
    let file = TempFile::new("bad-system.toml", &written);
    let err = load_measured_system(&file.0).unwrap_err().to_string();
    assert!(
        err.contains("cluster `away`, machine `x1`, key `perf`: invalid type: string \"fast\""),
        "{err}"
    );
    assert!(
        err.starts_with(&format!("{}: line ", file.0.display())),
        "{err}"
    );
    // a measured value out of the model's range is named, and said to be measured
    let mut tiny = calibrated();
    tiny.clusters[1].workers[0].perf = 1e-320;
    let plan = Plan::from_toml_str(SMALL).unwrap();
    let err = plan.model_input(Some(&tiny)).unwrap_err().to_string();
    assert!(
        err.starts_with("cluster `away`, machine `x1`, key `perf`: perf = 1e-320"),
        "{err}"
    );
    assert!(
        err.ends_with("(the value comes from the measured system)"),
        "{err}"
    );
    // the cores a worker got, when recorded, are positive
    let mut coreless = calibrated();
    coreless.clusters[1].workers[0].cores = Some(0.0);
    let err = plan.model_input(Some(&coreless)).unwrap_err().to_string();
    assert!(
        err.starts_with("cluster `away`, machine `x1`, key `cores`: the cores a worker got"),
        "{err}"
    );
}

#[test]
fn a_best_time_out_of_range_says_when_perf_values_are_measured() {
    // One task of 5.5e-150 operations: each worker's time and each cluster's steady time stay
    // in range, but the best time over every worker, 5.5e-150 / (1.25 + 2.5 + 3) s, does not.
    let text = SMALL.replace("tasks = 10\n", "tasks = 1\noper = 5.5e-150\n");
    let plan = Plan::from_toml_str(&text).unwrap();
    let err = plan
        .model_input(Some(&calibrated()))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("key `perf`: the workers' perf values sum to 6.75"),
        "{err}"
    );
    assert!(
        err.ends_with("(perf values come from the measured system)"),
        "{err}"
    );
    // Without measured values, nothing is said about them.
    let err = plan.model_input(None).unwrap_err().to_string();
    assert!(err.starts_with("key `perf`: "), "{err}");
    assert!(!err.contains("measured"), "{err}");
}

#[test]
fn contention_and_the_dispatch_costs_are_read_and_checked() {
    use crate::params::Contention;
    let text = SMALL
        .replace("[model]\n", "[model]\ncontention = \"mva\"\n")
        .replace(
            "lan_bytes_per_s = 1000\nmachines = [\n  { host = \"m\"",
            "lan_bytes_per_s = 1000\nmaster_cpu_per_task_s = 0.002\nmachines = [\n  { host = \"m\"",
        )
        .replace(
            "wan_out_bytes_per_s = 100\n",
            "wan_out_bytes_per_s = 100\nmaster_cpu_per_task_s = 0.001\ncm_cpu_per_task_s = 0.0005\n",
        )
        .replace("result_bytes = 100\n", "result_bytes = 100\noper_cv = 0.5\n");
    let plan = Plan::from_toml_str(&text).unwrap();
    assert_eq!(plan.terms.contention, Contention::Mva);
    assert!(plan.terms.network);
    let input = plan.model_input(None).unwrap();
    assert_eq!(input.application.oper_cv, 0.5);
    assert_eq!(input.system.clusters[0].dispatch.master_s, 0.002);
    assert_eq!(input.system.clusters[1].dispatch.cm_s, 0.0005);
    // a measured system's values replace them
    let measured = MeasuredSystem {
        oper_cv: Some(1.0),
        clusters: vec![MeasuredCluster {
            name: "home".into(),
            master_cpu_per_task_s: Some(0.003),
            lan_scv: Some(0.4),
            ..MeasuredCluster::default()
        }],
        ..MeasuredSystem::default()
    };
    let input = plan.model_input(Some(&measured)).unwrap();
    assert_eq!(input.application.oper_cv, 1.0);
    assert_eq!(input.system.clusters[0].dispatch.master_s, 0.003);
    assert_eq!(input.system.clusters[0].lan_scv, Some(0.4));
    assert_eq!(input.system.clusters[1].lan_scv, None);
    let mut negative = measured.clone();
    negative.clusters[0].lan_scv = Some(-0.1);
    let err = plan.check_measured(&negative).unwrap_err().to_string();
    assert!(err.contains("`home`") && err.contains("lan_scv"), "{err}");
    // on the main cluster, its CMs' cost per task of another cluster and per idle link (177)
    let main_cms = text.replace(
        "master_cpu_per_task_s = 0.002\n",
        "cm_cpu_per_task_s = 0.002\ncm_idle_cpu_per_link = 0.01\n",
    );
    let main = Plan::from_toml_str(&main_cms)
        .unwrap()
        .model_input(None)
        .unwrap();
    let dispatch = main.system.clusters[0].dispatch;
    assert_eq!((dispatch.cm_s, dispatch.cm_idle_per_link), (0.002, 0.01));
    // an idle cost on an external cluster, or of a core or more, is an error naming the key
    let err = error_of(&text.replace(
        "cm_cpu_per_task_s = 0.0005\n",
        "cm_idle_cpu_per_link = 0.01\n",
    ));
    assert!(
        err.contains("key `cm_idle_cpu_per_link`") && err.contains("main cluster"),
        "{err}"
    );
    let err = error_of(&main_cms.replace("0.01\n", "1.5\n"));
    assert!(
        err.contains("cluster `home`, key `cm_idle_cpu_per_link`"),
        "{err}"
    );
    // a negative cost, an unknown contention: errors
    let err = error_of(&text.replace("0.0005", "-1"));
    assert!(
        err.contains("key `cm_cpu_per_task_s`: must be a number of seconds"),
        "{err}"
    );
    let err = error_of(&text.replace("\"mva\"", "\"queues\""));
    assert!(err.contains("contention") && err.contains("mva"), "{err}");
    let prediction = crate::predict(&input).unwrap();
    assert!(prediction
        .clusters
        .iter()
        .all(|c| c.network == Some(c.perf_ste)));
}
