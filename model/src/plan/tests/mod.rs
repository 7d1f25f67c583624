//! Plan parsing and validation: the shipped examples load, every kind of bad plan gets one error
//! naming its key and cluster, and no input makes the parser panic.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::params::{
    MeasuredCluster, MeasuredSystem, MeasuredWorker, SelectionRequest, DEFAULT_EXHAUSTIVE_LIMIT,
};

const ALL: &str = include_str!("../../../../configs/srmsd-three-clusters-all.toml");
const PINNED: &str = include_str!("../../../../configs/srmsd-three-clusters-pinned.toml");
const AUTO: &str = include_str!("../../../../configs/srmsd-three-clusters-auto.toml");
const NR3: &str = include_str!("../../../../configs/srmsd-three-clusters-nr3.toml");
const MATMUL: &str = include_str!("../../../../configs/matmul-two-clusters-grain.toml");

/// A small valid plan the error tests edit.
const SMALL: &str = r#"
[application]
name = "small"
tasks = 10
task_bytes = 4
result_bytes = 100

[model]
selection = "pinned"

[[cluster]]
name = "home"
main = true
lan_bytes_per_s = 1000
machines = [
  { host = "m", role = "master" },
  { host = "w1", role = "worker", perf = 1.0 },
]

[[cluster]]
name = "away"
lan_bytes_per_s = 1000
wan_in_bytes_per_s = 100
wan_out_bytes_per_s = 100
use_workers = ["x1"]
machines = [
  { host = "s", role = "submaster" },
  { host = "c", role = "cm" },
  { host = "x1", role = "worker", perf = 2.0 },
  { host = "x2", role = "worker", perf = 3.0 },
]
"#;

fn error_of(text: &str) -> String {
    Plan::from_toml_str(text).unwrap_err().to_string()
}

#[test]
fn the_examples_load() {
    for text in [ALL, PINNED, AUTO, NR3, MATMUL] {
        let plan = Plan::from_toml_str(text).unwrap();
        plan.model_input(None).unwrap();
    }
    let plan = Plan::from_toml_str(PINNED).unwrap();
    assert_eq!(plan.name, "srmsd");
    assert_eq!(plan.selection, SelectionMode::Pinned);
    assert_eq!(plan.clusters.len(), 3);
    assert_eq!(plan.clusters[0].name, "argentina");
    assert_eq!(plan.clusters[2].workers().count(), 8);
    let input = plan.model_input(None).unwrap();
    assert_eq!(
        input.selection,
        SelectionRequest::Pinned(vec![vec![0, 1], vec![0, 1, 2, 3, 4], vec![0, 4, 6]])
    );
    assert_eq!(input.system.clusters[2].workers[5].perf, 6.1301e-3);
    let nr3 = Plan::from_toml_str(NR3).unwrap().model_input(None).unwrap();
    let spain = nr3.system.clusters[2].external.as_ref().unwrap();
    assert_eq!(spain.results_per_inter_result, 3);
    assert_eq!(nr3.application.result_bytes_inter, Some(2_310_244.0));
    let matmul = Plan::from_toml_str(MATMUL).unwrap();
    assert_eq!(
        matmul.grains.iter().map(|g| g.grain).collect::<Vec<_>>(),
        [400, 800, 2000, 4000, 4400, 4800]
    );
    assert_eq!(matmul.clusters[0].workers().count(), 0);
}

#[test]
fn auto_selection_of_the_shipped_example_is_no_worse_than_the_pinned_one() {
    let predict = |text: &str| {
        let input = Plan::from_toml_str(text)
            .unwrap()
            .model_input(None)
            .unwrap();
        crate::predict(&input).unwrap()
    };
    let auto = predict(AUTO);
    let pinned = predict(PINNED);
    assert!(auto.run.t_ex_worst <= pinned.run.t_ex_worst);
    assert!(auto.run.efficiency_worst >= 0.8);
    assert!(auto.clusters.iter().all(|c| c.efficiency_worst >= 0.8));
    // the matrix product: the advice names G = 4400, the smallest computation-bound grain
    let matmul = predict(MATMUL);
    let grain = matmul
        .advice
        .iter()
        .find(|a| a.kind == crate::AdviceKind::Granularity)
        .unwrap();
    assert_eq!(grain.value, crate::AdviceValue::Count(4400));
}

#[test]
fn the_main_cluster_comes_first_whatever_the_order() {
    let home_start = SMALL.find("[[cluster]]\nname = \"home\"").unwrap();
    let away_start = SMALL.find("[[cluster]]\nname = \"away\"").unwrap();
    let reordered = format!(
        "{}{}\n{}",
        &SMALL[..home_start],
        &SMALL[away_start..],
        &SMALL[home_start..away_start]
    );
    let plan = Plan::from_toml_str(&reordered).unwrap();
    assert_eq!(plan.clusters[0].name, "home");
    assert!(plan.clusters[0].main);
    assert_eq!(plan.clusters[1].name, "away");
}

#[test]
fn defaults_and_reserved_tables() {
    let text = SMALL.replace("[model]\nselection = \"pinned\"\n", "")
        + "\n[launch]\nanything = 1\n[run]\nmore = \"x\"\n";
    let text = text.replace(
        "name = \"home\"\n",
        "name = \"home\"\nlaunch = { machine_file = \"home.hosts\" }\n",
    );
    let plan = Plan::from_toml_str(&text).unwrap();
    assert_eq!(plan.efficiency_threshold, 0.8);
    assert!(plan.reassign_last_task);
    assert_eq!(plan.selection, SelectionMode::All);
    assert_eq!(plan.exhaustive_limit, DEFAULT_EXHAUSTIVE_LIMIT);
    assert_eq!(plan.application.oper, 1.0);
    assert!(plan.launch.is_some() && plan.run.is_some());
    assert!(plan.clusters[0].launch.is_some());
}

#[test]
fn missing_key_names_the_key_and_the_cluster() {
    let err = error_of(&SMALL.replace("tasks = 10\n", ""));
    assert!(err.contains("missing key `tasks`"), "{err}");
    let err = error_of(&SMALL.replace(
        "  { host = \"s\", role = \"submaster\" },",
        "  { role = \"submaster\" },",
    ));
    assert!(err.contains("cluster `away`: missing key `host`"), "{err}");
    // a throughput may come from a measured system: it is missing only for the model input
    let without_lan = SMALL.replace(
        "name = \"away\"\nlan_bytes_per_s = 1000\n",
        "name = \"away\"\n",
    );
    let plan = Plan::from_toml_str(&without_lan).unwrap();
    let err = plan.model_input(None).unwrap_err().to_string();
    assert_eq!(
        err,
        "cluster `away`, key `lan_bytes_per_s`: missing: give it in the plan or in a measured \
         system file"
    );
}

#[test]
fn negative_throughput() {
    let err = error_of(&SMALL.replace("wan_in_bytes_per_s = 100", "wan_in_bytes_per_s = -100"));
    assert_eq!(
        err,
        "cluster `away`, key `wan_in_bytes_per_s`: must be a positive number of bytes per second, \
         got -100"
    );
    let err = error_of(&SMALL.replace("perf = 3.0", "perf = nan"));
    assert!(
        err.starts_with("cluster `away`, machine `x2`, key `perf`"),
        "{err}"
    );
}

#[test]
fn no_workers() {
    let err = error_of(
        &SMALL
            .replace("  { host = \"x1\", role = \"worker\", perf = 2.0 },\n", "")
            .replace("  { host = \"x2\", role = \"worker\", perf = 3.0 },\n", ""),
    );
    assert!(err.starts_with("cluster `away`, key `machines`"), "{err}");
    assert!(
        err.contains("at least one machine with role = \"worker\""),
        "{err}"
    );
}

#[test]
fn unknown_role() {
    let err = error_of(&SMALL.replace("role = \"cm\"", "role = \"comm\""));
    assert!(err.contains("cluster `away`"), "{err}");
    assert!(err.contains("unknown variant `comm`"), "{err}");
    assert!(
        err.starts_with(
            "line 28, column 24: cluster `away`, machine `c`, key `role`: unknown variant `comm`"
        ),
        "{err}"
    );
}

#[test]
fn type_and_enum_errors_name_the_key_cluster_and_machine() {
    let err = error_of(&SMALL.replace("perf = 3.0", "perf = \"fast\""));
    assert_eq!(
        err,
        "line 30, column 42: cluster `away`, machine `x2`, key `perf`: invalid type: string \
         \"fast\", expected f64"
    );
    let err = error_of(&SMALL.replace("role = \"master\"", "role = \"manager\""));
    assert!(
        err.starts_with(
            "line 16, column 24: cluster `home`, machine `m`, key `role`: unknown variant \
             `manager`"
        ),
        "{err}"
    );
    let err = error_of(&SMALL.replace("tasks = 10", "tasks = -3"));
    assert_eq!(
        err,
        "line 4, column 9: key `application.tasks`: invalid value: integer `-3`, expected u64"
    );
    let err = error_of(&SMALL.replace("selection = \"pinned\"", "selection = \"best\""));
    assert!(
        err.starts_with("line 9, column 13: key `model.selection`: unknown variant `best`"),
        "{err}"
    );
    let err = error_of(&SMALL.replace("use_workers = [\"x1\"]", "use_workers = [\"x1\", 3]"));
    assert_eq!(
        err,
        "line 25, column 22: cluster `away`, key `use_workers`: invalid type: integer `3`, \
         expected a string"
    );
    let err = error_of(&SMALL.replace(
        "lan_bytes_per_s = 1000\nwan_in",
        "lan_bytes_per_s = \"1000\"\nwan_in",
    ));
    assert!(
        err.starts_with("line 22, column 19: cluster `away`, key `lan_bytes_per_s`: invalid type"),
        "{err}"
    );
    let grain = SMALL.replace(
        "result_bytes = 100\n",
        "result_bytes = 100\ngrain = [ { grain = 400, tasks = 1, oper = \"big\", task_bytes = 1, \
         result_bytes = 1 } ]\n",
    );
    let err = error_of(&grain);
    assert!(
        err.contains("key `application.grain[grain = 400].oper`: invalid type: string \"big\""),
        "{err}"
    );
    let err = error_of(&SMALL.replace("main = true", "main = \"yes\""));
    assert!(
        err.contains(
            "cluster `home`, key `main`: invalid type: string \"yes\", expected a boolean"
        ),
        "{err}"
    );
}

#[test]
fn pinned_host_that_is_not_a_worker() {
    let err = error_of(&SMALL.replace("use_workers = [\"x1\"]", "use_workers = [\"c\"]"));
    assert_eq!(
        err,
        "cluster `away`, key `use_workers`: host `c` is not a worker of this cluster (its role \
         here is cm)"
    );
    let err = error_of(&SMALL.replace("use_workers = [\"x1\"]", "use_workers = [\"x9\"]"));
    assert!(err.contains("host `x9` is not a worker"), "{err}");
    // only read when pinned
    let text = SMALL
        .replace("selection = \"pinned\"", "selection = \"auto\"")
        .replace("use_workers = [\"x1\"]", "use_workers = [\"c\"]");
    assert!(Plan::from_toml_str(&text).is_ok());
}

#[test]
fn typos_are_rejected_with_the_key_and_cluster() {
    let err = error_of(&SMALL.replace("perf = 3.0", "perff = 3.0"));
    assert!(err.contains("cluster `away`"), "{err}");
    assert!(err.contains("unknown key `perff`"), "{err}");
    let err = error_of(&SMALL.replace("wan_out_bytes_per_s", "wan_ot_bytes_per_s"));
    assert!(
        err.contains("cluster `away`: unknown key `wan_ot_bytes_per_s`"),
        "{err}"
    );
    let err = error_of(&SMALL.replace("[model]", "[modle]"));
    assert!(err.contains("unknown key `modle`"), "{err}");
    let err = error_of(&SMALL.replace("selection = \"pinned\"", "selection = \"best\""));
    assert!(err.contains("unknown variant `best`"), "{err}");
}

#[test]
fn cluster_structure_errors() {
    let err = error_of(&SMALL.replace("name = \"away\"\n", "name = \"away\"\nmain = true\n"));
    assert!(
        err.contains("only one cluster may be the main one"),
        "{err}"
    );
    let err = error_of(&SMALL.replace("main = true\n", ""));
    assert!(err.contains("no cluster has `main = true`"), "{err}");
    let err = error_of(&SMALL.replace("name = \"away\"", "name = \"home\""));
    assert!(err.contains("two clusters have this name"), "{err}");
    let err = error_of(&SMALL.replace(
        "lan_bytes_per_s = 1000\nmachines = [\n  { host = \"m\"",
        "lan_bytes_per_s = 1000\nwan_in_bytes_per_s = 5\nmachines = [\n  { host = \"m\"",
    ));
    assert!(
        err.starts_with("cluster `home`, key `wan_in_bytes_per_s`"),
        "{err}"
    );
    let err = error_of(&SMALL.replace("role = \"submaster\"", "role = \"worker\", perf = 1.0"));
    assert!(
        err.contains("exactly one machine with role = \"submaster\""),
        "{err}"
    );
    let err = error_of(&SMALL.replace(
        "wan_out_bytes_per_s = 100\n",
        "wan_out_bytes_per_s = 100\nresults_per_inter_result = 0\n",
    ));
    assert!(
        err.starts_with("cluster `away`, key `results_per_inter_result`"),
        "{err}"
    );
    let err = error_of(&SMALL.replace("tasks = 10", "tasks = -3"));
    assert!(err.contains("line 4"), "{err}");
    let err = error_of(&SMALL.replace("[model]\n", "[model]\nefficiency_threshold = 1.5\n"));
    assert!(err.starts_with("key `model.efficiency_threshold`"), "{err}");
}

#[test]
fn load_plan_names_the_file() {
    let err = load_plan(Path::new("/nonexistent/plan.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("cannot read `/nonexistent/plan.toml`"),
        "{err}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC*") {
        let _ = Plan::from_toml_str(&text);
    }

    #[test]
    fn edited_plans_never_panic(
        edits in prop::collection::vec((0usize..60, "[ -~]{0,12}", any::<bool>()), 1..4),
    ) {
        let mut lines: Vec<String> = SMALL.lines().map(str::to_string).collect();
        for (at, replacement, delete) in edits {
            let at = at % lines.len();
            if delete {
                lines.remove(at);
            } else {
                let line = &lines[at];
                let keep = line.find('=').map(|i| i + 1).unwrap_or(0);
                lines[at] = format!("{}{}", &line[..keep], replacement);
            }
            if lines.is_empty() {
                break;
            }
        }
        let text = lines.join("\n");
        if let Ok(plan) = Plan::from_toml_str(&text) {
            if let Ok(input) = plan.model_input(None) {
                let _ = crate::predict(&input);
            }
        }
    }
}

#[test]
fn a_host_may_appear_twice() {
    // the sub-master machine s also runs a worker: two entries with the same host
    let text = SMALL.replace(
        "  { host = \"c\", role = \"cm\" },\n",
        "  { host = \"c\", role = \"cm\" },\n  { host = \"s\", role = \"worker\", perf = 0.5 },\n",
    );
    let plan = Plan::from_toml_str(&text).unwrap();
    let away = &plan.clusters[1];
    let roles: Vec<(&str, Role)> = away
        .machines
        .iter()
        .filter(|m| m.host == "s")
        .map(|m| (m.host.as_str(), m.role))
        .collect();
    assert_eq!(roles, [("s", Role::Submaster), ("s", Role::Worker)]);
    let input = plan.model_input(None).unwrap();
    let hosts: Vec<&str> = input.system.clusters[1]
        .workers
        .iter()
        .map(|w| w.host.as_str())
        .collect();
    assert_eq!(hosts, ["s", "x1", "x2"]);
    assert_eq!(input.system.clusters[1].workers[0].perf, 0.5);
    // use_workers naming it selects its worker entry, not the sub-master
    let pinned = text.replace("use_workers = [\"x1\"]", "use_workers = [\"s\"]");
    let input = Plan::from_toml_str(&pinned)
        .unwrap()
        .model_input(None)
        .unwrap();
    assert_eq!(
        input.selection,
        SelectionRequest::Pinned(vec![vec![0], vec![0]])
    );
    crate::predict(&input).unwrap();
    // a host listed twice with the same role is two workers too
    let twice = SMALL.replace(
        "  { host = \"x2\", role = \"worker\", perf = 3.0 },\n",
        "  { host = \"x2\", role = \"worker\", perf = 3.0 },\n  { host = \"x2\", role = \"worker\", perf = 3.0 },\n",
    );
    let input = Plan::from_toml_str(&twice)
        .unwrap()
        .model_input(None)
        .unwrap();
    assert_eq!(input.system.clusters[1].workers.len(), 3);
}

/// `host = "x[3-5]"` is three worker entries with the role and `perf` written once, which
/// `use_workers` names one by one; a bad range is an error naming the cluster and the key.
#[test]
fn a_host_range_is_one_entry_per_host() {
    let text = SMALL.replace(
        "  { host = \"x2\", role = \"worker\", perf = 3.0 },\n",
        "  { host = \"x2\", role = \"worker\", perf = 3.0 },\n  { host = \"x[03-5]\", role = \"worker\", perf = 4.0 },\n",
    );
    let plan = Plan::from_toml_str(&text).unwrap();
    let workers: Vec<(&str, Option<f64>)> = plan.clusters[1]
        .workers()
        .map(|m| (m.host.as_str(), m.perf))
        .collect();
    assert_eq!(
        workers,
        [
            ("x1", Some(2.0)),
            ("x2", Some(3.0)),
            ("x03", Some(4.0)),
            ("x04", Some(4.0)),
            ("x05", Some(4.0))
        ]
    );
    let pinned = text.replace("use_workers = [\"x1\"]", "use_workers = [\"x04\"]");
    let input = Plan::from_toml_str(&pinned)
        .unwrap()
        .model_input(None)
        .unwrap();
    assert_eq!(
        input.selection,
        SelectionRequest::Pinned(vec![vec![0], vec![3]])
    );
    assert_eq!(
        error_of(&text.replace("x[03-5]", "x[5-3]")),
        "cluster `away`, key `machines.host`: `x[5-3]`: the range `5-3` runs backwards"
    );
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> TempFile {
        let path = std::env::temp_dir().join(format!("hmw-plan-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn the_model_input_from_files_names_the_file_of_each_error() {
    let plan_file = TempFile::new("small.toml", SMALL);
    let plan = load_plan(&plan_file.0).unwrap();
    let system = TempFile::new("fits.toml", &toml::to_string(&calibrated()).unwrap());
    let (input, measured) =
        model_input_with_measured(&plan, &plan_file.0, Some(&system.0)).unwrap();
    assert_eq!(measured, Some(calibrated()));
    assert_eq!(input.system.clusters[0].workers[0].perf, 1.25);
    let (input, measured) = model_input_with_measured(&plan, &plan_file.0, None).unwrap();
    assert_eq!(measured, None);
    assert_eq!(input.system.clusters[0].workers[0].perf, 1.0);
    // A measured file naming a worker the plan does not have: its error names that file.
    let mut stranger = calibrated();
    stranger.clusters[0].workers[0].host = "nobody".into();
    let misfit = TempFile::new("misfit.toml", &toml::to_string(&stranger).unwrap());
    let err = model_input_with_measured(&plan, &plan_file.0, Some(&misfit.0))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("{}: ", misfit.0.display())),
        "{err}"
    );
    assert!(err.contains("nobody"), "{err}");
    // A measured value out of the model's range: an error of the input, naming the plan.
    let mut tiny = calibrated();
    tiny.clusters[1].workers[0].perf = 1e-320;
    let tiny_file = TempFile::new("tiny.toml", &toml::to_string(&tiny).unwrap());
    let err = model_input_with_measured(&plan, &plan_file.0, Some(&tiny_file.0))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "{}: cluster `away`, machine `x1`",
            plan_file.0.display()
        )),
        "{err}"
    );
}

#[test]
fn values_that_leave_the_working_range_are_rejected_with_their_key() {
    let err = error_of_input(&SMALL.replace("perf = 3.0", "perf = 1e-320"));
    assert!(
        err.starts_with("cluster `away`, machine `x2`, key `perf`: perf = 1e-320"),
        "{err}"
    );
    assert!(!err.contains("measured"), "{err}");
    let err = error_of_input(&SMALL.replace(
        "name = \"away\"\nlan_bytes_per_s = 1000",
        "name = \"away\"\nlan_bytes_per_s = 9.56e-320",
    ));
    assert!(
        err.starts_with("cluster `away`, key `lan_bytes_per_s`: lan_bytes_per_s = 9.56e-320"),
        "{err}"
    );
    let err = error_of_input(&SMALL.replace("tasks = 10\n", "tasks = 10\noper = 1e308\n"));
    assert!(err.starts_with("key `application.oper`"), "{err}");
    // large real-world values stay valid: 10,000 tasks of 1e15 operations
    let big = SMALL
        .replace("tasks = 10\n", "tasks = 10000\noper = 1e15\n")
        .replace("perf = 1.0", "perf = 1e10")
        .replace("perf = 2.0", "perf = 2e10")
        .replace("perf = 3.0", "perf = 3e10");
    let input = Plan::from_toml_str(&big)
        .unwrap()
        .model_input(None)
        .unwrap();
    crate::predict(&input).unwrap();
}

fn error_of_input(text: &str) -> String {
    Plan::from_toml_str(text)
        .unwrap()
        .model_input(None)
        .unwrap_err()
        .to_string()
}

#[test]
fn the_wan_round_trip_comes_from_the_measurement_the_plan_or_the_emulator() {
    let plan = Plan::from_toml_str(SMALL).unwrap();
    assert_eq!(plan.clusters[0].wan_rtt_s(None), 0.0);
    assert_eq!(plan.clusters[1].wan_rtt_s(None), 0.0);
    let delayed = format!("{SMALL}[cluster.launch]\nwan_delay_ms = 25\n");
    let plan = Plan::from_toml_str(&delayed).unwrap();
    assert_eq!(plan.clusters[1].wan_rtt_s(None), 0.05);
    let given = SMALL.replace(
        "wan_out_bytes_per_s = 100\n",
        "wan_out_bytes_per_s = 100\nwan_rtt_s = 0.2\n",
    );
    let plan =
        Plan::from_toml_str(&format!("{given}[cluster.launch]\nwan_delay_ms = 25\n")).unwrap();
    assert_eq!(plan.clusters[1].wan_rtt_s(None), 0.2);
    let mut measured = MeasuredSystem::default();
    measured.clusters.push(MeasuredCluster {
        name: "away".into(),
        lan_bytes_per_s: None,
        wan_in_bytes_per_s: None,
        wan_out_bytes_per_s: None,
        wan_rtt_s: Some(0.07),
        wan_in_ramp_s: None,
        wan_out_ramp_s: None,
        workers: Vec::new(),
        lan_runs: Vec::new(),
        master_cpu_per_task_s: None,
        cm_cpu_per_task_s: None,
        lan_scv: None,
    });
    plan.check_measured(&measured).unwrap();
    assert_eq!(plan.clusters[1].wan_rtt_s(Some(&measured)), 0.07);
    measured.clusters[0].wan_rtt_s = Some(-1.0);
    let err = plan.check_measured(&measured).unwrap_err().to_string();
    assert!(err.contains("key `wan_rtt_s`"), "{err}");
    let err = error_of(&SMALL.replace(
        "wan_out_bytes_per_s = 100\n",
        "wan_out_bytes_per_s = 100\nwan_rtt_s = -0.1\n",
    ));
    assert!(
        err.starts_with("cluster `away`, key `wan_rtt_s`: must be a number of seconds"),
        "{err}"
    );
    let err = error_of(&SMALL.replace(
        "lan_bytes_per_s = 1000\nmachines = [\n  { host = \"m\"",
        "lan_bytes_per_s = 1000\nwan_rtt_s = 0.1\nmachines = [\n  { host = \"m\"",
    ));
    assert!(err.contains("cluster `home`, key `wan_rtt_s`"), "{err}");
}

#[test]
fn task_times_may_spread() {
    assert_eq!(Plan::from_toml_str(SMALL).unwrap().application.oper_cv, 0.0);
    let spread = SMALL.replace("tasks = 10\n", "tasks = 10\noper_cv = 0.3\n");
    assert_eq!(
        Plan::from_toml_str(&spread).unwrap().application.oper_cv,
        0.3
    );
    let err = error_of(&SMALL.replace("tasks = 10\n", "tasks = 10\noper_cv = -1\n"));
    assert!(err.contains("key `application.oper_cv`"), "{err}");
}

#[test]
fn iterations_are_from_one_to_the_tasks() {
    assert_eq!(Plan::from_toml_str(SMALL).unwrap().iterations, None);
    let five = SMALL.replace("tasks = 10\n", "tasks = 10\niterations = 5\n");
    assert_eq!(Plan::from_toml_str(&five).unwrap().iterations, Some(5));
    for bad in ["0", "11"] {
        let text = SMALL.replace("tasks = 10\n", &format!("tasks = 10\niterations = {bad}\n"));
        let err = error_of(&text);
        assert!(err.contains("key `application.iterations`"), "{err}");
    }
}

/// A tree whose regional link carries three clusters' tasks: 3 x 60 B/s asked of 100 B/s.
fn regional_tree(shared_links: bool) -> String {
    let cluster = |name: &str, parent: Option<&str>| {
        let parent = parent.map_or(String::new(), |p| format!("parent = \"{p}\"\n"));
        format!(
            "[[cluster]]\nname = \"{name}\"\nlan_bytes_per_s = 1e6\nwan_in_bytes_per_s = 100\n\
             wan_out_bytes_per_s = 100\nmachines = [\n{{ host = \"{name}-s\", role = \"submaster\" }},\n\
             {{ host = \"{name}-1\", role = \"worker\", perf = 1.0 }},\n]\n[cluster.launch]\n{parent}"
        )
    };
    format!(
        "[application]\nname = \"tree\"\ntasks = 200\noper = 1.0\ntask_bytes = 60\n\
         result_bytes = 1\n[model]\nshared_links = {shared_links}\n\
         [[cluster]]\nname = \"home\"\nmain = true\nlan_bytes_per_s = 1e6\nmachines = [\n\
         {{ host = \"m\", role = \"master\" }},\n{{ host = \"w1\", role = \"worker\", perf = 1.0 }},\n]\n{}{}{}",
        cluster("hub", None),
        cluster("leaf1", Some("hub")),
        cluster("leaf2", Some("hub"))
    )
}

#[test]
fn a_regional_link_is_shared_by_its_subtree() {
    let predict = |shared| {
        let plan = Plan::from_toml_str(&regional_tree(shared)).unwrap();
        let input = plan.model_input(None).unwrap();
        let parents: Vec<_> = input
            .system
            .clusters
            .iter()
            .map(|c| c.external.as_ref().and_then(|l| l.parent))
            .collect();
        assert_eq!(parents, vec![None, None, Some(1), Some(1)]);
        crate::methodology::predict(&input).unwrap()
    };
    let alone = predict(false);
    let shared = predict(true);
    // Each external cluster alone draws 60 B/s of its own 100 B/s: computation bound.
    assert!(alone.clusters[1..].iter().all(|c| c.perf_ste == 1.0));
    // Together they ask 180 B/s of the hub's 100: each gets 100/180 of its rate, wan_in bound,
    // and what the three get fills the hub's link.
    for c in &shared.clusters[1..] {
        assert!((c.perf_ste - 100.0 / 180.0).abs() < 1e-12, "{}", c.perf_ste);
        assert_eq!(c.bottleneck.to_string(), "wan_in");
    }
    let bytes: f64 = shared.clusters[1..].iter().map(|c| c.perf_ste * 60.0).sum();
    assert!((bytes - 100.0).abs() < 1e-9);
    assert!(shared.run.t_ex_worst > 1.3 * alone.run.t_ex_worst);
    // The thesis's form counts no shared link.
    let thesis = regional_tree(false).replace("shared_links = false", "form = \"thesis\"");
    let plan = Plan::from_toml_str(&thesis).unwrap();
    assert!(!plan.model_input(None).unwrap().options.terms.shared_links);
}

#[test]
fn a_cluster_down_a_tree_adds_the_round_trips_of_its_path() {
    let far = "\n[[cluster]]\nname = \"far\"\nlan_bytes_per_s = 1000\nwan_in_bytes_per_s = 100\n\
               wan_out_bytes_per_s = 100\nwan_rtt_s = 0.03\nmachines = [\n\
               { host = \"f\", role = \"submaster\" },\n{ host = \"f1\", role = \"worker\", perf = 1.0 },\n]\n\
               [cluster.launch]\nparent = \"away\"\n";
    let text = format!("{SMALL}[cluster.launch]\nwan_delay_ms = 25\n{far}");
    let plan = Plan::from_toml_str(&text).unwrap();
    assert_eq!(plan.round_trip_to_master_s(&plan.clusters[0], None), 0.0);
    assert_eq!(plan.round_trip_to_master_s(&plan.clusters[1], None), 0.05);
    assert!((plan.round_trip_to_master_s(&plan.clusters[2], None) - 0.08).abs() < 1e-12);
    // the model input carries the path's round trip to (96)(97)
    let input = plan.model_input(None).unwrap();
    let rtt = |i: usize| {
        input.system.clusters[i]
            .external
            .as_ref()
            .unwrap()
            .wan_rtt_s
    };
    assert_eq!(rtt(1), 0.05);
    assert!((rtt(2) - 0.08).abs() < 1e-12);
}

#[test]
fn worker_buffers_come_from_the_run_table_or_the_runtime_default() {
    let plan = Plan::from_toml_str(SMALL).unwrap();
    assert_eq!(
        plan.worker_buffers().unwrap(),
        crate::RUNTIME_WORKER_BUFFERS
    );
    assert_eq!(plan.model_input(None).unwrap().options.worker_buffers, 2);
    let one = Plan::from_toml_str(&format!("[run]\nworker_buffers = 1\n{SMALL}")).unwrap();
    assert_eq!(one.model_input(None).unwrap().options.worker_buffers, 1);
    let bad = Plan::from_toml_str(&format!("[run]\nworker_buffers = 0\n{SMALL}")).unwrap();
    let err = bad.model_input(None).unwrap_err().to_string();
    assert!(err.contains("key `run.worker_buffers`"), "{err}");
}

/// SMALL with a `[cluster.launch]` table `launch` after cluster `after` (`home` or `away`),
/// and `more` at the end.
fn with_launch(after: &str, launch: &str, more: &str) -> String {
    let (head, tail) = SMALL.split_at(SMALL.find("[[cluster]]\nname = \"away\"").unwrap());
    match after {
        "home" => format!("{head}[cluster.launch]\n{launch}\n\n{tail}{more}"),
        _ => format!("{head}{tail}[cluster.launch]\n{launch}\n{more}"),
    }
}

#[test]
fn slurm_may_choose_the_hosts_of_a_cluster_whose_cms_are_clients() {
    let leaf = with_launch("away", "launcher = \"slurm\"\nslurm_choose = true", "");
    let plan = Plan::from_toml_str(&leaf).unwrap();
    assert!(plan.clusters[1].launch_settings().unwrap().slurm_choose);
    // Not without Slurm.
    let err = error_of(&with_launch(
        "away",
        "launcher = \"ssh\"\nslurm_choose = true",
        "",
    ));
    assert_eq!(
        err,
        "cluster `away`, machine `c`, key `launch.slurm_choose`: only a cluster with launcher = \
         \"slurm\" can let Slurm choose its hosts"
    );
}

#[test]
fn a_server_cm_must_be_on_a_host_the_allocation_names() {
    // The main cluster's CM (on its master, having no cm) serves away's link.
    let main = with_launch("home", "launcher = \"slurm\"\nslurm_choose = true", "");
    let file = TempFile::new("server-cm.toml", &main);
    let err = load_plan(&file.0).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{}: cluster `home`, machine `m`, key `launch.slurm_choose`: its CM on `m` is the \
             server of the link of cluster away",
            file.0.display()
        )),
        "{err}"
    );
    // A cluster that is another's parent: its CM (the `cm` machine) serves that link.
    let far = "\n[[cluster]]\nname = \"far\"\nwan_in_bytes_per_s = 100\nwan_out_bytes_per_s = \
               100\nmachines = [\n  { host = \"f\", role = \"submaster\" },\n  \
               { host = \"f1\", role = \"worker\", perf = 1.0 },\n]\n[cluster.launch]\n\
               parent = \"away\"\n";
    let parent = with_launch("away", "launcher = \"slurm\"\nslurm_choose = true", far);
    let err = error_of(&parent);
    assert!(
        err.starts_with(
            "cluster `away`, machine `c`, key `launch.slurm_choose`: its CM on `c` is the server \
             of the link of cluster far"
        ),
        "{err}"
    );
    // The child itself, a leaf, may let Slurm choose.
    let child = with_launch(
        "away",
        "launcher = \"slurm\"",
        &format!("{far}launcher = \"slurm\"\nslurm_choose = true\n"),
    );
    Plan::from_toml_str(&child).unwrap();
}

#[test]
fn the_form_sets_the_terms_and_each_key_changes_one() {
    use crate::params::{ModelForm, ModelTerms};
    let extended = Plan::from_toml_str(SMALL).unwrap();
    assert_eq!(extended.form, ModelForm::Extended);
    assert_eq!(extended.terms, ModelTerms::of(ModelForm::Extended));
    assert!(extended.terms.wan_latency && extended.terms.link_ramp);
    let thesis_text = SMALL.replace("[model]\n", "[model]\nform = \"thesis\"\n");
    let thesis = Plan::from_toml_str(&thesis_text).unwrap();
    assert_eq!(thesis.terms, ModelTerms::of(ModelForm::Thesis));
    assert!(!thesis.terms.buffered_workers && !thesis.terms.own_communication);
    // the model's input carries them
    let input = thesis.model_input(None).unwrap();
    assert_eq!(input.options.terms, thesis.terms);
    // a key changes its term from the form's, the others stay
    let one_on = thesis_text.replace("[model]\n", "[model]\nlink_ramp = true\n");
    let terms = Plan::from_toml_str(&one_on).unwrap().terms;
    assert!(terms.link_ramp && !terms.wan_latency);
    let one_off = SMALL.replace("[model]\n", "[model]\nwan_latency = false\n");
    let terms = Plan::from_toml_str(&one_off).unwrap().terms;
    assert!(!terms.wan_latency && terms.submaster_tail);
    let err = error_of(&SMALL.replace("[model]\n", "[model]\nform = \"paper\"\n"));
    assert!(err.contains("form") && err.contains("thesis"), "{err}");
}

fn calibrated() -> MeasuredSystem {
    MeasuredSystem {
        measured_at: Some("2025-01-31T10:00:00+00:00".into()),
        conditions: Some("hmw calibrate small.toml on this machine (2 cores)".into()),
        clusters: vec![
            MeasuredCluster {
                lan_runs: Vec::new(),
                name: "home".into(),
                lan_bytes_per_s: Some(1200.0),
                wan_in_bytes_per_s: None,
                wan_out_bytes_per_s: None,
                wan_rtt_s: None,
                wan_in_ramp_s: None,
                wan_out_ramp_s: None,
                workers: vec![MeasuredWorker {
                    host: "w1".into(),
                    perf: 1.25,
                    own_comm_bytes_per_s: None,
                    cores: None,
                    stage_s: None,
                    chain_cv: None,
                }],
                master_cpu_per_task_s: None,
                cm_cpu_per_task_s: None,
                lan_scv: None,
            },
            MeasuredCluster {
                lan_runs: Vec::new(),
                name: "away".into(),
                lan_bytes_per_s: Some(900.0),
                wan_in_bytes_per_s: Some(80.0),
                wan_out_bytes_per_s: Some(70.0),
                wan_rtt_s: None,
                wan_in_ramp_s: None,
                wan_out_ramp_s: None,
                workers: vec![MeasuredWorker {
                    host: "x1".into(),
                    perf: 2.5,
                    own_comm_bytes_per_s: None,
                    cores: None,
                    stage_s: None,
                    chain_cv: None,
                }],
                master_cpu_per_task_s: None,
                cm_cpu_per_task_s: None,
                lan_scv: None,
            },
        ],
        oper_cv: None,
    }
}

mod measured;
