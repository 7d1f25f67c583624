//! The example applications `hmw-srmsd`, `hmw-tsp`, `hmw-nbody`, `hmw-matmul`'s row/column strategy
//! and `hmw-pipeline`:
//! correctness in one process
//! (`--threads`), under `mpirun`, and across three clusters (`hmw launch` of the plans in
//! `configs/`, at smaller sizes).

use std::{
    process::Command,
    time::{Duration, Instant},
};

use hmw_tests::{bin, cluster, json, mpirun, repo, scratch, write, Finished, Spawned};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);

/// A master and `workers` workers on this machine.
fn hosts(workers: usize) -> String {
    "localhost\n".repeat(workers + 1)
}

/// Run `binary --threads` on a cluster of `workers` workers with the configuration `config`.
fn threads(dir: &std::path::Path, binary: &str, workers: usize, config: &str) -> Finished {
    let hosts = write(dir, "hosts", &hosts(workers));
    let config = write(dir, "run.toml", config);
    let stats = dir.join("stats.json");
    let mut command = Command::new(bin(binary));
    command.args(["--threads", "-m", &hosts, "-c", &config, "--stats-json"]);
    command.arg(&stats);
    Spawned::start(command).finish(LIMIT)
}

/// The last line of a run's output.
fn last_line(run: &Finished) -> &str {
    run.stdout.lines().last().unwrap_or("")
}

/// The value of `key=` in `line`.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line}"))
}

const SRMSD_SMALL: &str = "steps = 10000\nt_off = 50.0\n";

#[test]
fn srmsd_in_one_process_is_verified() {
    let dir = scratch("srmsd-threads");
    let run = threads(
        &dir,
        "hmw-srmsd",
        3,
        &format!("[run]\nstatistics_interval = 0\n[application]\n{SRMSD_SMALL}members = 12\n"),
    );
    run.assert_success();
    assert_eq!(
        last_line(&run),
        "srmsd members=12 verified=true peak_hz=0.500000",
        "{}",
        run.stdout
    );
    let stats = json(&dir.join("stats.json"));
    assert_eq!(stats["tasks"], 12);
}

#[test]
fn srmsd_under_mpirun_is_verified() {
    let dir = scratch("srmsd-mpi");
    let hosts = write(&dir, "hosts", &hosts(3));
    let config = write(
        &dir,
        "run.toml",
        &format!("[run]\nstatistics_interval = 0\n[application]\n{SRMSD_SMALL}members = 8\n"),
    );
    let run = mpirun(4, "hmw-srmsd", &["-m", &hosts, "-c", &config]).finish(LIMIT);
    run.assert_success();
    assert!(
        run.stdout
            .contains("srmsd members=8 verified=true peak_hz=0.500000"),
        "{}",
        run.stdout
    );
}

#[test]
fn srmsd_bad_settings_name_the_key() {
    let dir = scratch("srmsd-bad");
    let run = threads(
        &dir,
        "hmw-srmsd",
        1,
        "[application]\ntau = 0.005\n", // half a step of dt = 0.01
    );
    assert!(!run.status.success());
    assert!(run.stderr.contains("tau = 0.005"), "{}", run.stderr);
}

/// Run each variant on the same cities; returns (length, nodes) per variant, checked.
fn tsp_variants(n: usize, level: usize) -> Vec<(String, i64, u64)> {
    let mut found = Vec::new();
    for variant in ["exhaustive", "task-pruning", "global-pruning"] {
        let dir = scratch(&format!("tsp-{variant}"));
        let run = threads(
            &dir,
            "hmw-tsp",
            3,
            &format!(
                "[run]\nstatistics_interval = 0\nreassign_last_task = false\n\
                 [application]\nvariant = \"{variant}\"\nn = {n}\nseed = 4\nlevel = {level}\n"
            ),
        );
        run.assert_success();
        let line = last_line(&run);
        assert_eq!(field(line, "variant"), variant, "{line}");
        assert_eq!(field(line, "verified"), "true", "{line}");
        let nodes: u64 = field(line, "nodes").parse().unwrap();
        // The workers' statistics count the nodes the results report (TaskResult::operations),
        // not the tasks' estimates; nothing is computed twice without reassignment.
        let stats = json(&dir.join("stats.json"));
        let counted: f64 = stats["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["operations"].as_f64().unwrap())
            .sum();
        assert_eq!(counted, nodes as f64, "{line}");
        found.push((
            variant.to_string(),
            field(line, "length").parse().unwrap(),
            nodes,
        ));
    }
    found
}

#[test]
fn tsp_variants_in_one_process_find_the_optimum() {
    let found = tsp_variants(10, 3);
    // Same optimum; pruning with the master's bound visits no more than within each task,
    // which visits no more than the exhaustive search (9! / 7! * sum_j 7!/(7-j)! nodes).
    assert!(found.iter().all(|f| f.1 == found[0].1), "{found:?}");
    assert_eq!(found[0].2, 72 * 13700, "{found:?}");
    assert!(
        found[0].2 > found[1].2 && found[1].2 >= found[2].2,
        "{found:?}"
    );
}

#[test]
fn tsp_reads_a_tsplib_file() {
    let dir = scratch("tsplib");
    // 6 cities, LOWER_DIAG_ROW; the optimum 0-1-2-3-4-5-0 is 6 x 1 = 6, every other edge 5.
    let file = write(
        &dir,
        "six.tsp",
        "NAME: six\nTYPE: TSP\nDIMENSION: 6\nEDGE_WEIGHT_TYPE: EXPLICIT\n\
         EDGE_WEIGHT_FORMAT: LOWER_DIAG_ROW\nEDGE_WEIGHT_SECTION\n\
         0\n1 0\n5 1 0\n5 5 1 0\n5 5 5 1 0\n1 5 5 5 1 0\nEOF\n",
    );
    let run = threads(
        &dir,
        "hmw-tsp",
        2,
        &format!(
            "[run]\nstatistics_interval = 0\n[application]\nvariant = \"task-pruning\"\n\
             file = \"{file}\"\nlevel = 2\n"
        ),
    );
    run.assert_success();
    let line = last_line(&run);
    assert!(
        line.starts_with("tsp variant=task-pruning n=6 length=6 verified=true"),
        "{line}"
    );
    // A bad weight: the error names the file and the line.
    std::fs::write(
        &file,
        "DIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\n\
         EDGE_WEIGHT_SECTION\n1 x\n3\n",
    )
    .unwrap();
    let run = threads(
        &dir,
        "hmw-tsp",
        1,
        &format!("[application]\nfile = \"{file}\"\nlevel = 1\n"),
    );
    assert!(!run.status.success());
    assert!(
        run.stderr.contains(&format!("{file}:5:")) && run.stderr.contains("\"x\""),
        "{}",
        run.stderr
    );
}

/// `hmw launch` of `plan` (written to DIR/plan.toml), its files in DIR/run; the run and the
/// main cluster's (`lyon`) statistics.
fn launch(dir: &std::path::Path, plan: &str) -> (Finished, Value) {
    let plan_path = write(dir, "plan.toml", plan);
    let mut command = Command::new(bin("hmw"));
    command
        .args(["launch", &plan_path, "--work-dir"])
        .arg(dir.join("run"));
    let start = Instant::now();
    let run = Spawned::start(command).finish(Duration::from_secs(180));
    eprintln!("launch took {:.1} s", start.elapsed().as_secs_f64());
    run.assert_success();
    let stats = json(&dir.join("run/lyon.stats.json"));
    (run, stats)
}

/// A plan of `configs/` with some of its values replaced (each must be there).
fn plan(name: &str, changes: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(repo().join("configs").join(name)).unwrap();
    for (from, to) in changes {
        assert!(text.contains(from), "{name} has no {from:?}");
        text = text.replace(from, to);
    }
    text
}

/// Every external cluster of a launch computed and returned results: useful ones, or ones a
/// tail copy elsewhere beat (short tasks: the main cluster's idle workers may copy and finish
/// every task a far cluster holds before its results cross the WAN, which is no failure).
fn every_cluster_took_part(stats: &Value) {
    for name in ["spain", "brazil"] {
        let cluster = cluster(stats, name);
        let returned =
            cluster["tasks_done"].as_u64().unwrap() + cluster["discharged"].as_u64().unwrap();
        assert!(returned > 0, "{name} did nothing: {cluster:#}");
        assert_eq!(cluster["lost"], false);
    }
}

#[test]
fn srmsd_across_three_clusters_is_verified() {
    let dir = scratch("srmsd-launch");
    let plan = plan(
        "srmsd-ring-three-clusters.toml",
        &[
            ("tasks = 120", "tasks = 24"),
            ("members = 120", "members = 24"),
            ("steps = 200000", "steps = 10000"),
            ("t_off = 1000.0", "t_off = 50.0"),
            ("oper = 1600000", "oper = 80000"),
        ],
    );
    let (run, stats) = launch(&dir, &plan);
    assert!(
        run.stdout
            .contains("srmsd members=24 verified=true peak_hz=0.500000"),
        "{}",
        run.stdout
    );
    assert_eq!(stats["tasks"], 24);
    every_cluster_took_part(&stats);
}

/// The tsp plan at n = 10 with `variant`; `reassign` leaves idle workers recomputing the
/// tasks still out at the end (or not).
fn tsp_across_three_clusters(variant: &str, reassign: bool) -> String {
    let dir = scratch(&format!("tsp-launch-{variant}"));
    let plan = plan(
        "tsp-three-clusters.toml",
        &[
            (
                "reassign_last_task = true",
                &format!("reassign_last_task = {reassign}"),
            ),
            ("tasks = 110", "tasks = 72"),
            ("n = 12", "n = 10"),
            ("oper = 986410", "oper = 13700"),
            (
                "variant = \"exhaustive\"",
                &format!("variant = \"{variant}\""),
            ),
        ],
    );
    let (run, stats) = launch(&dir, &plan);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("tsp variant="))
        .unwrap_or_else(|| panic!("no result line: {}", run.stdout))
        .to_string();
    assert_eq!(field(&line, "verified"), "true", "{line}");
    assert_eq!(stats["tasks"], 72);
    every_cluster_took_part(&stats);
    line
}

#[test]
fn tsp_global_pruning_across_three_clusters_is_verified() {
    // Pruned tasks take microseconds: with reassignment the main cluster would recompute every
    // task still out in the external clusters before their results came back over the WAN.
    let line = tsp_across_three_clusters("global-pruning", false);
    let nodes: u64 = field(&line, "nodes").parse().unwrap();
    assert!(nodes < 72 * 13700, "{line}");
}

#[test]
fn tsp_exhaustive_across_three_clusters_counts_every_node() {
    // Brazil's sub-master joins 4 results into one: the nodes add up all the same.
    let line = tsp_across_three_clusters("exhaustive", true);
    assert_eq!(field(&line, "nodes"), (72 * 13700).to_string(), "{line}");
}

/// `hmw launch` of configs/matmul-row-column.toml at 256 x 256 in 16 x 16 blocks, with
/// `changes` too, in scratch folder `name`: the run (its product checked) and lyon's statistics.
fn matmul_row_column(name: &str, changes: &[(&str, &str)]) -> (Finished, Value) {
    let dir = scratch(name);
    let mut all = vec![
        ("m = 2048", "m = 256"),
        ("b = 128", "b = 16"),
        ("verify_up_to = 2048", "verify_up_to = 256"),
        ("oper = 4177920", "oper = 7936"),
    ];
    all.extend_from_slice(changes);
    let (run, stats) = launch(&dir, &plan("matmul-row-column.toml", &all));
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("matmul m="))
        .unwrap_or_else(|| panic!("no result line: {}", run.stdout));
    assert_eq!(field(line, "verified"), "true", "{line}");
    (run, stats)
}

/// The matrix product with spain on the row/column strategy: the product checked, spain sent
/// row/column pairs (the k-th of which the master makes of 2k - 1 products, unit-tested in
/// the example) and the main cluster and brazil block pairs.
#[test]
fn matmul_row_column_across_three_clusters_is_verified() {
    let (run, stats) = matmul_row_column("matmul-row-column", &[]);
    let pairs = run
        .stdout
        .lines()
        .find(|l| l.starts_with("row_column cluster=spain"))
        .unwrap_or_else(|| panic!("no row/column line: {}", run.stdout));
    assert!(field(pairs, "pairs").parse::<u64>().unwrap() > 0, "{pairs}");
    every_cluster_took_part(&stats);
}

/// The row/column strategy with spain lost while it holds pairs: its WAN in is slow (a pair
/// of this size takes about 2 s to cross it) and goes down 5 s after the emulator starts, for
/// good. The master takes spain's pairs back and each goes out again as the block pairs of
/// its products, which lyon and brazil compute: the product is still right.
#[test]
fn a_lost_row_column_cluster_s_pairs_go_back_as_block_pairs() {
    let (run, stats) = matmul_row_column(
        "matmul-row-column-lost",
        &[
            ("wan_in_bytes_per_s = 12.0e6", "wan_in_bytes_per_s = 3.0e4"),
            (
                "wan_delay_ms = 10",
                "wan_delay_ms = 10\nwan_outages = [\"5-600\"]",
            ),
            (
                "lost_after_s = 30",
                "lost_after_s = 2\ninactivity_timeout_ms = 1000\nrejoin_within_s = 0",
            ),
        ],
    );
    let spain = cluster(&stats, "spain");
    assert_eq!(spain["lost"], true, "{spain:#}");
    let taken_back = spain["taken_back"].as_u64().unwrap();
    assert!(taken_back > 0, "{spain:#}");
    // Spain holds pairs only: every one taken back was divided into block pairs.
    assert_eq!(
        stats["redivided"].as_u64().unwrap(),
        taken_back,
        "{stats:#}"
    );
    assert!(
        run.stdout
            .contains(&format!("({taken_back} of them divided again)")),
        "{}",
        run.stdout
    );
}

/// The iterations of a run's statistics: (workers, tasks) of each.
fn iterations(stats: &Value) -> Vec<(u64, u64)> {
    stats["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            (
                it["workers"].as_u64().unwrap(),
                it["tasks"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn nbody_tuned_in_one_process_is_verified_and_records_its_counts() {
    let dir = scratch("nbody-tuned");
    let run = threads(
        &dir,
        "hmw-nbody",
        4,
        "[run]\nstatistics_interval = 0\nworker_buffers = 1\ntune_workers = \"pi\"\n\
         [application]\nbodies = 64\nsteps = 10\n",
    );
    run.assert_success();
    let line = last_line(&run);
    assert_eq!(field(line, "verified"), "true", "{line}");
    let stats = json(&dir.join("stats.json"));
    let its = iterations(&stats);
    assert_eq!(its.len(), 10);
    // The probes (a warm-up and two at 4, two at 2, two at 1), then the choice; one block per
    // active worker each step.
    let counts: Vec<u64> = its.iter().map(|&(w, _)| w).collect();
    assert_eq!(&counts[..7], &[4, 4, 4, 2, 2, 1, 1], "{counts:?}");
    assert!(its.iter().all(|&(w, t)| w == t), "{its:?}");
    let decisions = stats["tuner"].as_array().unwrap();
    let fit = decisions.iter().find(|d| d["reason"] == "fit").unwrap();
    assert_eq!(fit["after_iteration"], 7);
    assert_eq!(fit["workers"].as_u64(), Some(counts[7]));
    assert_eq!(
        field(line, "workers_per_step"),
        counts
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
}

#[test]
fn nbody_on_fixed_active_workers_leaves_the_others_idle() {
    let dir = scratch("nbody-fixed");
    let run = threads(
        &dir,
        "hmw-nbody",
        4,
        "[run]\nstatistics_interval = 0\nactive_workers = 2\n\
         [application]\nbodies = 50\nsteps = 6\n",
    );
    run.assert_success();
    assert_eq!(field(last_line(&run), "verified"), "true");
    let stats = json(&dir.join("stats.json"));
    assert_eq!(iterations(&stats), vec![(2, 2); 6]);
    let done: Vec<u64> = stats["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["tasks_done"].as_u64().unwrap())
        .collect();
    assert_eq!(done, vec![6, 6, 0, 0]);
}

#[test]
fn nbody_under_mpirun_is_verified() {
    let dir = scratch("nbody-mpi");
    let hosts = write(&dir, "hosts", &hosts(3));
    let config = write(
        &dir,
        "run.toml",
        "[run]\nstatistics_interval = 0\ntune_workers = \"time\"\n\
         [application]\nbodies = 48\nsteps = 9\n",
    );
    let run = mpirun(4, "hmw-nbody", &["-m", &hosts, "-c", &config]).finish(LIMIT);
    run.assert_success();
    assert!(
        run.stdout.contains("nbody bodies=48 steps=9 verified=true"),
        "{}",
        run.stdout
    );
}

/// `hmw launch` of configs/pipeline-two-clusters.toml with 60 small items, threshold never
/// (this machine's shared cores would move the stages' times): the prediction's mapping
/// runs across both clusters, items cross the WAN emulator, and every one is verified.
#[test]
fn the_pipeline_across_two_clusters_is_verified() {
    let dir = scratch("pipeline-launch");
    let plan = plan(
        "pipeline-two-clusters.toml",
        &[
            ("items = 600\nitem_bytes", "items = 60\nitem_bytes"),
            (
                "[launch.application]\nitems = 600",
                "[launch.application]\nitems = 60",
            ),
            ("samples = 8192", "samples = 1024"),
            ("tones = 32", "tones = 4"),
            ("order = 48", "order = 4"),
            ("verify = 32", "verify = 0"),
            ("threshold = \"default\"", "threshold = \"never\""),
        ],
    );
    let (run, stats) = launch(&dir, &plan);
    assert!(
        run.stdout
            .contains("pipeline items=60 verified=true checked=60"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("launch clusters=2 items=60"),
        "{}",
        run.stdout
    );
    assert_eq!(stats["kind"], "pipeline");
    assert_eq!(stats["items"], 60);
    let clusters: std::collections::BTreeSet<u64> = stats["mappings"][0]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["replicas"].as_array().unwrap().iter())
        .map(|r| r["cluster"].as_u64().unwrap())
        .collect();
    assert!(
        clusters.contains(&1),
        "spain computes stages: {:#}",
        stats["mappings"]
    );
}
