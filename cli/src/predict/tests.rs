//! The prediction's JSON (its keys and their order) and text on small plans, and the number
//! formats.

use std::path::Path;

use serde_json::{json, Value};

use hmw_model::plan::Plan;
use hmw_model::{predict, MeasuredSystem, Prediction};

use super::{
    format::{amount, hms, perf, seconds},
    json::to_json,
    source::MeasuredSource,
    text::{to_text, TABLE_WIDTH},
};

fn prediction(text: &str) -> (Plan, Prediction) {
    let plan = Plan::from_toml_str(text).unwrap();
    let prediction = predict(&plan.model_input(None).unwrap()).unwrap();
    (plan, prediction)
}

/// The keys of a JSON object, in the order they are printed.
fn keys_in_order<'a>(printed: &str, object: &'a Value, indent: usize) -> Vec<&'a str> {
    let mut keys: Vec<&str> = object
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let position = |k: &str| printed.find(&format!("\n{}\"{k}\":", " ".repeat(indent)));
    keys.sort_by_key(|k| position(k).expect("key printed"));
    keys
}

#[test]
fn json_has_the_shape_of_the_issue() {
    let (plan, p) = prediction(include_str!(
        "../../../configs/srmsd-three-clusters-all.toml"
    ));
    let printed = serde_json::to_string_pretty(&to_json(&plan, &p, None)).unwrap();
    let value: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(
        keys_in_order(&printed, &value, 2),
        ["clusters", "run", "advice", "selection", "local"]
    );
    assert_eq!(
        keys_in_order(&printed, &value["clusters"][0], 6),
        [
            "name",
            "workers",
            "cperf",
            "perf_ste",
            "perf_ste_bottleneck",
            "perf_ste_network",
            "bottleneck",
            "t_up",
            "t_end_best",
            "t_end_worst",
            "min_tasks",
            "tasks_best",
            "tasks_worst",
            "t_ex_best",
            "t_ex_worst",
            "efficiency_best",
            "efficiency_worst"
        ]
    );
    let run_start = printed.find("\"run\"").unwrap();
    assert_eq!(
        keys_in_order(&printed[run_start..], &value["run"], 4),
        [
            "t_ex_best",
            "t_ex_worst",
            "efficiency_best",
            "efficiency_worst",
            "speedup_worst"
        ]
    );
    assert_eq!(
        value["advice"],
        json!([{"cluster": "spain", "bottleneck": "wan_out",
                "kind": "results_per_inter_result", "value": 3}])
    );
    assert_eq!(value["clusters"][2]["min_tasks"], Value::Null);
    assert_eq!(value["clusters"][0]["workers"], json!(["pgs-1", "pgs-3"]));
}

#[test]
fn granularity_advice_carries_its_startup_and_end_times() {
    let (plan, p) = prediction(include_str!(
        "../../../configs/matmul-two-clusters-grain.toml"
    ));
    let value = serde_json::to_value(to_json(&plan, &p, None)).unwrap();
    let grain = &value["advice"][1];
    assert_eq!(grain["kind"], "granularity");
    assert_eq!(grain["value"], 4400);
    assert!(grain["t_up"].as_f64().unwrap() > 0.0);
    assert!(grain["t_end_worst"].as_f64().unwrap() > grain["t_end_best"].as_f64().unwrap());
    assert_eq!(value["run"]["speedup_worst"], Value::Null);
    assert_eq!(value["local"], Value::Null);
}

#[test]
fn text_follows_the_methodology() {
    let (plan, p) = prediction(include_str!(
        "../../../configs/srmsd-three-clusters-auto.toml"
    ));
    let text = to_text(&plan, &p, None);
    let sections = [
        "== Local cluster analysis ==",
        "== Clusters ==",
        "== Whole run ==",
        "== Tuning advice ==",
    ];
    let positions: Vec<usize> = sections.iter().map(|s| text.find(s).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("exhaustive search over 32767 combinations (limit 65536)"));
    assert!(text.contains("spain workers: aoquir3 aoquir8"));
    assert!(text.contains("results_per_inter_result = 2"));
}

/// Many clusters: the table's columns go in blocks no wider than the limit, every cluster in
/// one of them, in order.
#[test]
fn a_table_of_many_clusters_goes_in_blocks() {
    let mut text = String::from(
        "[application]\nname = \"many\"\ntasks = 4000\noper = 1.0\ntask_bytes = 100\n\
         result_bytes = 100\n",
    );
    for k in 0..24 {
        text.push_str(&format!(
            "[[cluster]]\nname = \"cluster{k:02}\"\nlan_bytes_per_s = 1e9\n"
        ));
        if k == 0 {
            text.push_str(
                "main = true\nmachines = [\n  { host = \"m-head\", role = \"master\" },\n\
                 { host = \"m-cm\", role = \"cm\" },\n",
            );
        } else {
            text.push_str(&format!(
                "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7\nwan_rtt_s = 0.05\n\
                 machines = [\n  {{ host = \"c{k}-head\", role = \"submaster\" }},\n\
                 {{ host = \"c{k}-cm\", role = \"cm\" }},\n"
            ));
        }
        text.push_str(&format!(
            "  {{ host = \"w{k}\", role = \"worker\", perf = 10.0 }},\n]\n"
        ));
    }
    let (plan, p) = prediction(&text);
    let printed = to_text(&plan, &p, None);
    let table =
        &printed[printed.find("== Clusters ==").unwrap()..printed.find("== Whole run ==").unwrap()];
    assert!(table.lines().all(|l| l.len() <= TABLE_WIDTH), "{table}");
    // Header lines start with the labels' blank column; the lines naming workers do not.
    let headers: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with(' ') && l.trim_start().starts_with("cluster"))
        .collect();
    assert!(headers.len() > 1, "{table}");
    let names: Vec<&str> = headers.iter().flat_map(|l| l.split_whitespace()).collect();
    let expected: Vec<String> = (0..24).map(|k| format!("cluster{k:02}")).collect();
    assert_eq!(names, expected);
}

#[test]
fn remarks_and_the_measured_system_are_optional_json_keys() {
    let (plan, p) = prediction(include_str!("../../../configs/validation/local-comm.toml"));
    let measured = MeasuredSystem {
        measured_at: Some("2025-01-31T10:00:00+00:00".into()),
        conditions: Some("hmw calibrate on this machine\n(2 cores)".into()),
        clusters: vec![],
        oper_cv: None,
    };
    let source = MeasuredSource {
        path: Path::new("system.toml"),
        system: &measured,
    };
    let printed = serde_json::to_string_pretty(&to_json(&plan, &p, Some(source))).unwrap();
    let value: Value = serde_json::from_str(&printed).unwrap();
    assert_eq!(
        keys_in_order(&printed, &value, 2),
        [
            "clusters",
            "run",
            "advice",
            "selection",
            "local",
            "remarks",
            "measured"
        ]
    );
    assert_eq!(value["advice"], json!([]));
    let remark = &value["remarks"][0];
    assert_eq!(remark["remark"], "link_needs");
    assert_eq!(remark["bottleneck"], "lan");
    assert_eq!(remark["links"][0]["key"], "lan_bytes_per_s");
    let needed = remark["links"][0]["throughput_needed"].as_f64().unwrap();
    let limit = remark["links"][0]["limit"].as_f64().unwrap();
    let cperf = remark["cperf"].as_f64().unwrap();
    // the limit grows with the throughput: at the needed one it reaches cperf
    let lan = plan.clusters[0].lan_bytes_per_s.unwrap();
    assert!((limit * needed / lan - cperf).abs() < 1e-9 * cperf);
    assert_eq!(
        value["measured"],
        json!({"file": "system.toml", "measured_at": "2025-01-31T10:00:00+00:00",
               "conditions": "hmw calibrate on this machine\n(2 cores)"})
    );
    let text = to_text(&plan, &p, Some(source));
    assert!(
        text.lines().nth(1).unwrap()
            == "measured system: system.toml, measured 2025-01-31T10:00:00+00:00; \
                conditions: hmw calibrate on this machine (2 cores)",
        "{text}"
    );
    assert!(text.contains(&format!(
        "a LAN of at least 4.194e9 B/s (lan_bytes_per_s, now {lan:.3e})"
    )));
    // without them neither key is printed
    let value = serde_json::to_value(to_json(&plan, &p, None)).unwrap();
    assert!(value.get("measured").is_none());
    let (plan, p) = prediction(include_str!(
        "../../../configs/srmsd-three-clusters-pinned.toml"
    ));
    let value = serde_json::to_value(to_json(&plan, &p, None)).unwrap();
    assert!(value.get("remarks").is_none() && value.get("measured").is_none());
    assert!(to_text(&plan, &p, None).contains("\nnone: no cluster taking part"));
}

#[test]
fn number_formats() {
    assert_eq!(amount(2_310_244.0), "2,310,244");
    assert_eq!(amount(4.0), "4");
    assert_eq!(amount(0.5), "0.5000");
    assert_eq!(hms(36_931.9), "10:15:32");
    assert_eq!(hms(362_220.9), "100:37:01");
    assert_eq!(hms(3.6e20), "1.000e17 h");
    assert_eq!(seconds(36_931.9), "36931.9");
    assert_eq!(seconds(2.31e126), "2.3100e126");
    assert_eq!(hms(f64::INFINITY), "inf h");
    assert_eq!(perf(1.586e-3), "1.586e-3");
}
