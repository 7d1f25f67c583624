//! One cluster on this machine under `mpirun`: correctness, statistics, bad input, idle CPU.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hmw_tests::{children, cpu_ticks, json, mpirun, repo, scratch, ticks_per_second, write};

const LIMIT: Duration = Duration::from_secs(120);

/// The tests of this file run one at a time: the idle-CPU test measures what waiting ranks
/// use, and the other tests' ranks computing on the same 2 cores meanwhile pushed a waiting
/// rank to 5 % in a CI run (1 % alone).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn hosts(workers: &[&str]) -> String {
    let mut text = String::from("# test cluster\nlocalhost\n");
    for annotation in workers {
        text.push_str(&format!("localhost {annotation}\n"));
    }
    text
}

/// `binary` on `ranks` ranks with machine file `hosts` and configuration `config`, its
/// statistics written to `stats`.
fn run_with_stats(
    ranks: usize,
    binary: &str,
    hosts: &str,
    config: &str,
    stats: &std::path::Path,
) -> hmw_tests::Finished {
    mpirun(
        ranks,
        binary,
        &[
            "-m",
            hosts,
            "-c",
            config,
            "--stats-json",
            stats.to_str().unwrap(),
        ],
    )
    .finish(LIMIT)
}

#[test]
fn matmul_product_is_verified() {
    let _serial = one_at_a_time();
    let dir = scratch("matmul");
    let hosts = write(&dir, "hosts", &hosts(&[""; 4]));
    let config = write(
        &dir,
        "run.toml",
        "[run]\nstatistics_interval = 0\n[application]\nm = 256\nb = 64\n",
    );
    let stats = dir.join("stats.json");
    let run = run_with_stats(5, "hmw-matmul", &hosts, &config, &stats);
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let stats = json(&stats);
    assert_eq!(stats["tasks"], 64);
    let done: u64 = stats["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["tasks_done"].as_u64().unwrap())
        .sum();
    assert_eq!(done, 64, "every task is delivered by exactly one worker");
}

/// `[run] split_tasks` (hmw calibrate's runs of an external cluster's workers): the master
/// splits each task as a sub-master would; the parts' results, combined, still make the
/// product.
#[test]
fn a_master_that_splits_its_tasks_hands_out_parts_and_combines_them() {
    let _serial = one_at_a_time();
    let dir = scratch("matmul-split");
    let hosts = write(&dir, "hosts", &hosts(&[""; 2]));
    let config = write(
        &dir,
        "run.toml",
        "[run]\nstatistics_interval = 0\nsplit_tasks = true\n\
         [application]\nm = 256\nb = 128\nsub_b = 64\n",
    );
    let stats = dir.join("stats.json");
    let run = run_with_stats(3, "hmw-matmul", &hosts, &config, &stats);
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let stats = json(&stats);
    // 8 block products of 128-blocks, each split into (128 / 64)^3 = 8 products of 64-blocks.
    assert_eq!(stats["parts_per_task"], 8.0, "{stats}");
    assert_eq!(stats["tasks"], 64, "{stats}");
    // Each part computed (a tail copy too) is 64^2 x (2 x 64 - 1) flop.
    for w in stats["workers"].as_array().unwrap() {
        let per_part = w["operations"].as_f64().unwrap() / w["tasks_computed"].as_f64().unwrap();
        assert_eq!(per_part, 64.0 * 64.0 * 127.0, "{stats}");
    }
}

#[test]
fn heterogeneous_workers_with_reassignment_lose_nothing() {
    let _serial = one_at_a_time();
    let dir = scratch("hetero");
    let hosts = write(
        &dir,
        "hosts",
        &hosts(&["# speed=1", "# speed=1", "# speed=0.2"]),
    );
    for buffers in [1, 2] {
        let config = write(
            &dir,
            "run.toml",
            &format!(
                "[run]\nstatistics_interval = 0.5\nworker_buffers = {buffers}\n\
                 reassign_last_task = true\n\
                 [application]\ntasks = 13\ntask_seconds = 0.1\n"
            ),
        );
        let stats_path = dir.join(format!("stats{buffers}.json"));
        let run = run_with_stats(4, "hmw-synthetic", &hosts, &config, &stats_path);
        run.assert_success();
        assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
        assert!(
            run.stdout.contains("tasks/s"),
            "progress or summary printed"
        );
        let stats = json(&stats_path);
        let workers = stats["workers"].as_array().unwrap();
        let done: u64 = workers
            .iter()
            .map(|w| w["tasks_done"].as_u64().unwrap())
            .sum();
        assert_eq!(done, 13);
        // The slow worker (speed 0.2: 0.5 s a task) is overtaken at the end: its last task is
        // computed again by an idle fast worker, and one of the two copies is discharged.
        let discharged: u64 = workers
            .iter()
            .map(|w| w["discharged"].as_u64().unwrap())
            .sum();
        assert!(discharged >= 1, "buffers={buffers}: {stats}");
        let slow = &workers[2];
        let fast = &workers[0];
        assert!(
            slow["tasks_per_s"].as_f64().unwrap() < 0.5 * fast["tasks_per_s"].as_f64().unwrap(),
            "measured performance reflects the speed factor: {stats}"
        );
        // Sleep-based tasks of 0.1 s at speed 1 give about 10 tasks/s of busy time.
        let perf = fast["tasks_per_s"].as_f64().unwrap();
        assert!(
            (8.0..=10.5).contains(&perf),
            "fast worker measured {perf} tasks/s"
        );
    }
}

#[test]
fn repeated_tasks_count_every_execution() {
    let _serial = one_at_a_time();
    let dir = scratch("repeat");
    let hosts = write(&dir, "hosts", &hosts(&["", ""]));
    let config = write(
        &dir,
        "run.toml",
        "[run]\nstatistics_interval = 0\nrepeat_tasks = 3\n\
         [application]\ntasks = 6\ntask_seconds = 0.05\n",
    );
    let stats_path = dir.join("stats.json");
    let run = run_with_stats(3, "hmw-synthetic", &hosts, &config, &stats_path);
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let stats = json(&stats_path);
    let workers = stats["workers"].as_array().unwrap();
    let sum = |key: &str| {
        workers
            .iter()
            .map(|w| w[key].as_f64().unwrap())
            .sum::<f64>()
    };
    // Six tasks, each executed three times: 18 operations, 18 sleeps of 0.05 s.
    assert_eq!(sum("operations"), 18.0, "{stats}");
    let busy = sum("busy_s");
    assert!((0.9..1.2).contains(&busy), "busy {busy} s: {stats}");
    for w in workers {
        let perf = w["ops_per_s"].as_f64().unwrap();
        assert!(
            (16.0..=20.5).contains(&perf),
            "{perf} operations per busy second: {stats}"
        );
        // Each worker said what CPU time it used (the calibration's (100)): its tasks
        // sleep, so its compute thread used little of it while busy.
        let (cpu, compute) = (
            w["cpu_s"].as_f64().unwrap(),
            w["compute_cpu_s"].as_f64().unwrap(),
        );
        let busy = w["busy_s"].as_f64().unwrap();
        assert!(cpu > 0.0 && (0.0..=cpu).contains(&compute), "{stats}");
        assert!(compute < 0.25 * busy, "{stats}");
        // And that its tasks wait: the calibration gives it no own communication (100).
        assert_eq!(w["tasks_wait"].as_bool(), Some(true), "{stats}");
        // Its communication thread's waiting while they ran is part of its CPU time beside
        // the compute thread's.
        let waiting = w["waiting_cpu_s"].as_f64().unwrap();
        assert!((0.0..=cpu - compute + 1e-3).contains(&waiting), "{stats}");
        // It worked from its first task's arrival to its last result's sending (the
        // calibration's capacity, (106)): at least its busy seconds.
        let active = w["active_s"].as_f64().unwrap();
        assert!(active >= busy, "{stats}");
    }
}

#[test]
fn a_bad_configuration_starts_no_rank() {
    let _serial = one_at_a_time();
    let dir = scratch("badconfig");
    let hosts_path = write(&dir, "hosts", &hosts(&[""; 2]));
    let config = write(&dir, "run.toml", "[run]\nworker_buffers = 3\n");
    let run = mpirun(3, "hmw-synthetic", &["-m", &hosts_path, "-c", &config]).finish(LIMIT);
    assert!(!run.status.success());
    assert!(run.stderr.contains("run.toml") && run.stderr.contains("worker_buffers = 3"));
    assert_eq!(
        run.stderr.matches("error").count(),
        1,
        "one message: {}",
        run.stderr
    );
    assert!(
        !run.stdout.contains("verified"),
        "no rank ran: {}",
        run.stdout
    );

    let bad_hosts = write(&dir, "bad.hosts", "localhost\nlocalhost # speed=fast\n");
    let run = mpirun(2, "hmw-synthetic", &["-m", &bad_hosts]).finish(LIMIT);
    assert!(!run.status.success());
    assert!(run.stderr.contains("bad.hosts:2") && run.stderr.contains("speed=fast"));

    let run = mpirun(2, "hmw-synthetic", &["-m", &hosts_path]).finish(LIMIT);
    assert!(!run.status.success());
    assert!(run.stderr.contains("3 rank lines") && run.stderr.contains("mpirun -np 3"));

    // An annotation read only by a communication manager is checked before any rank starts.
    let bad_cm = write(
        &dir,
        "cm.hosts",
        "localhost\nlocalhost\nlocalhost # M 1 7311 name=c nt=abc\n",
    );
    let run = mpirun(3, "hmw-synthetic", &["-m", &bad_cm]).finish(LIMIT);
    assert!(!run.status.success());
    assert!(
        run.stderr.contains("cm.hosts:3") && run.stderr.contains("nt=abc"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("error").count(), 1, "{}", run.stderr);
}

#[test]
fn a_task_that_panics_ends_the_run_with_its_message() {
    let _serial = one_at_a_time();
    let dir = scratch("panic");
    let hosts_path = write(&dir, "hosts", &hosts(&[""; 3]));
    let config = write(
        &dir,
        "run.toml",
        "[run]\nstatistics_interval = 0\n[application]\ntasks = 40\ntask_seconds = 0.01\n\
         fail_at = 7\n",
    );
    let start = Instant::now();
    let run = mpirun(4, "hmw-synthetic", &["-m", &hosts_path, "-c", &config]).finish(LIMIT);
    assert!(!run.status.success());
    assert!(
        run.stderr
            .contains("task 7 panicked: this task was configured to fail"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("verified=true"), "{}", run.stdout);
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// The MPI transport delivers two ranks' messages whole and in order across its size classes
/// (a receive posted in advance for small ones, a notice and a body for larger ones), both
/// ranks sending at once (`transport/examples/mpi_transport_order.rs`, built by `cargo test`).
#[test]
fn the_mpi_transport_keeps_each_ranks_order_across_message_sizes() {
    let _serial = one_at_a_time();
    let run = mpirun(2, "examples/mpi_transport_order", &[]).finish(LIMIT);
    run.assert_success();
    assert_eq!(
        run.stdout.matches("transport_order ok messages=70").count(),
        2,
        "{}",
        run.stdout
    );
}

/// A worker waiting on a long task, and the idle master, must not burn a core: with five
/// ranks on two cores, spinning ranks would starve the ones that compute.
#[test]
fn waiting_ranks_use_under_five_percent_of_a_core() {
    let _serial = one_at_a_time();
    let dir = scratch("idle");
    let hosts = write(&dir, "hosts", &hosts(&[""; 4]));
    let config = write(
        &dir,
        "run.toml",
        "[run]\nstatistics_interval = 0\nreassign_last_task = false\n\
         [application]\ntasks = 4\ntask_seconds = 4.0\n",
    );
    let run = mpirun(5, "hmw-synthetic", &["-m", &hosts, "-c", &config]);
    // Let the ranks start and the four long tasks begin.
    std::thread::sleep(Duration::from_millis(1500));
    let ranks = children(run.pid());
    assert_eq!(ranks.len(), 5, "mpirun's children: {ranks:?}");
    let before: Vec<u64> = ranks.iter().map(|&p| cpu_ticks(p).unwrap()).collect();
    let window = Duration::from_secs(2);
    std::thread::sleep(window);
    let after: Vec<u64> = ranks.iter().map(|&p| cpu_ticks(p).unwrap()).collect();
    let shares: Vec<f64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| (a - b) as f64 / ticks_per_second() / window.as_secs_f64())
        .collect();
    run.finish(LIMIT).assert_success();
    println!("CPU share of each waiting rank: {shares:?}");
    for share in shares {
        assert!(
            share < 0.05,
            "a waiting rank used {:.1}% of a core",
            100.0 * share
        );
    }
}

#[test]
fn the_shipped_configurations_are_valid() {
    let _serial = one_at_a_time();
    let hmw = |args: &[&std::ffi::OsStr]| {
        let mut command = std::process::Command::new(hmw_tests::bin("hmw"));
        command.args(args);
        hmw_tests::Spawned::start(command).finish(LIMIT)
    };
    let local_hosts = repo().join("configs/local.hosts");
    let matmul = repo().join("configs/matmul.toml");
    let run = hmw(&[
        "check".as_ref(),
        "-m".as_ref(),
        local_hosts.as_os_str(),
        "-c".as_ref(),
        matmul.as_os_str(),
    ]);
    run.assert_success();
    assert!(run.stdout.contains("5 ranks"), "{}", run.stdout);
    // Every plan the project ships is one the model reads.
    let mut plans = 0;
    for dir in ["configs", "configs/validation"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if path.extension().is_some_and(|e| e == "toml") && text.contains("[[cluster]]") {
                let run = hmw(&["predict".as_ref(), path.as_os_str()]);
                assert!(run.status.success(), "{}: {}", path.display(), run.stderr);
                plans += 1;
            }
        }
    }
    assert!(plans >= 10, "{plans} plans found");
}
