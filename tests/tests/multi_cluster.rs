//! Several clusters on this machine, each its own `mpirun`, bridged by communication managers
//! over QUIC through WAN emulators, started by `hmw launch` from a plan.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use hmw_tests::{bin, cluster, json, mpirun, scratch, write, Finished, Scratch, Spawned};
use serde_json::Value;

/// Start `hmw launch` on `plan` (written to DIR/plan.toml), its files in DIR/run.
fn start_launch(dir: &std::path::Path, plan: &str) -> Spawned {
    let plan_path = write(dir, "plan.toml", plan);
    let mut command = Command::new(bin("hmw"));
    command
        .args(["launch", &plan_path, "--work-dir"])
        .arg(dir.join("run"));
    Spawned::start(command)
}

/// Wait (a minute at most) until the launch in DIR has started every cluster of `names`, then
/// `settle` more, for them to compute a little.
fn wait_started(dir: &std::path::Path, names: &[&str], settle: Duration) {
    let pid_files: Vec<_> = names
        .iter()
        .map(|n| dir.join(format!("run/{n}.pid")))
        .collect();
    let start = Instant::now();
    while !pid_files.iter().all(|f| f.exists()) && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(settle);
}

/// Run `hmw launch` on `plan` and return the run and the main cluster's statistics.
fn launch(dir: &std::path::Path, plan: &str, limit: Duration) -> (hmw_tests::Finished, Value) {
    let run = start_launch(dir, plan).finish(limit);
    let stats = json(&dir.join("run/main.stats.json"));
    (run, stats)
}

/// The command `hmw launch PLAN --print` shows for each cluster: `(name, command line)`.
fn printed_commands(dir: &std::path::Path, plan: &str) -> Vec<(String, String)> {
    let plan_path = write(dir, "plan.toml", plan);
    let printed = Command::new(bin("hmw"))
        .args(["launch", &plan_path, "--print", "--work-dir"])
        .arg(dir.join("print"))
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&printed.stdout).into_owned();
    let mut lines = printed.lines();
    let mut commands = Vec::new();
    while let Some(line) = lines.next() {
        if let Some(name) = line
            .strip_prefix("# cluster ")
            .and_then(|l| l.split(':').next())
        {
            commands.push((name.to_owned(), lines.next().unwrap_or_default().to_owned()));
        }
    }
    commands
}

/// Plan text of a cluster: a head, `workers` workers, a CM.
fn cluster_table(name: &str, head_role: &str, workers: usize, extra: &str) -> String {
    let mut machines = format!(
        "  {{ host = \"{name}-head\", role = \"{head_role}\" }},\n  {{ host = \"{name}-cm\", role = \"cm\" }},\n"
    );
    for w in 1..=workers {
        machines.push_str(&format!(
            "  {{ host = \"{name}-{w}\", role = \"worker\", perf = 10.0 }},\n"
        ));
    }
    format!(
        "[[cluster]]\nname = \"{name}\"\nlan_bytes_per_s = 1e9\n{extra}\nmachines = [\n{machines}]\n"
    )
}

/// The synthetic application: `tasks` sleeping tasks; a worker of `perf` 10 tasks/s runs at
/// speed 1, and `[launch.application]` follows.
fn synthetic(tasks: u64, task_seconds: f64) -> String {
    format!(
        "[application]\nname = \"synthetic\"\ntasks = {tasks}\noper = 1.0\ntask_bytes = 100\n\
         result_bytes = 100\n[launch]\nbinary = \"hmw-synthetic\"\nreference_perf = 10.0\n\
         [launch.application]\ntasks = {tasks}\ntask_seconds = {task_seconds}\n"
    )
}

#[test]
fn matmul_across_three_clusters_is_verified() {
    let dir = scratch("three-clusters");
    let plan = format!(
        "[application]\nname = \"matmul\"\ntasks = 64\noper = 4177920\ntask_bytes = 262168\n\
         result_bytes = 131100\nresult_bytes_inter = 131100\n\
         [run]\nstatistics_interval = 1\nwait_for_links = true\n\
         [launch]\nbinary = \"hmw-matmul\"\n\
         [launch.application]\nm = 512\nb = 128\nsub_b = 64\n\
         [launch.cm]\nlost_after_s = 60\n\
         {}{}[cluster.launch]\nwan_delay_ms = 5\n{}[cluster.launch]\nwan_delay_ms = 10\nwan_loss = 0.001\n",
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            2,
            "wan_in_bytes_per_s = 50e6\nwan_out_bytes_per_s = 50e6"
        ),
        cluster_table(
            "brazil",
            "submaster",
            2,
            "wan_in_bytes_per_s = 50e6\nwan_out_bytes_per_s = 50e6\n\
             tasks_per_inter_task = 4\nresults_per_inter_result = 4"
        ),
    );
    let (run, stats) = launch(&dir, &plan, Duration::from_secs(240));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    assert_eq!(stats["tasks"], 64);
    for name in ["spain", "brazil"] {
        let c = cluster(&stats, name);
        let done = c["tasks_done"].as_u64().unwrap();
        let discharged = c["discharged"].as_u64().unwrap();
        // Computed, whether first or not: on a fast machine the main cluster's tail copies
        // of brazil's last tasks (4 joined per result) can all come back before brazil's
        // results do (a CI run: 20 of its tasks, all discharged).
        assert!(done + discharged > 0, "{name} did nothing: {c:#}");
        assert_eq!(c["lost"], false);
        // The external clusters split each 128-block task into (128/64)^3 = 8 local tasks:
        // 8 for each useful one, and up to 8 for each discharged one (a copy computed for
        // nothing, or a task it still held unstarted when the run stopped).
        let local = c["stats"]["tasks"].as_u64().unwrap();
        assert!(local > 0, "{name} computed nothing: {c:#}");
        assert!(
            8 * done <= local && local <= 8 * (done + discharged),
            "{local} local tasks for {done} useful and {discharged} discharged: {c:#}"
        );
        // Operand blocks cross each link once: the tasks that crossed are smaller than those
        // the master produced.
        let (produced, sent) = (
            c["task_bytes"].as_u64().unwrap(),
            c["task_bytes_sent"].as_u64().unwrap(),
        );
        assert!(sent < produced, "{name}: {sent} bytes sent of {produced}");
    }
    assert!(
        run.stdout
            .contains("left out by the application's splitter"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_depth_two_tree_runs_the_synthetic_app() {
    let dir = scratch("tree");
    let plan = format!(
        "{}[run]\nstatistics_interval = 0\nwait_for_links = true\n[launch.cm]\nlost_after_s = 60\n\
         {}{}[cluster.launch]\nwan_delay_ms = 5\n{}[cluster.launch]\nparent = \"spain\"\nwan_delay_ms = 5\n",
        synthetic(60, 0.1),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table("spain", "submaster", 1, "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"),
        cluster_table(
            "portugal",
            "submaster",
            2,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let (run, stats) = launch(&dir, &plan, Duration::from_secs(240));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let spain = cluster(&stats, "spain");
    let portugal = cluster(&spain["stats"], "portugal");
    assert!(
        portugal["tasks_done"].as_u64().unwrap() > 0,
        "the grandchild cluster computed nothing: {stats:#}"
    );
    assert!(spain["tasks_done"].as_u64().unwrap() >= portugal["tasks_done"].as_u64().unwrap());
}

/// The CMs of a cluster's links in one process (`links_in_one_process`), in the main cluster
/// and in an external MPI cluster that feeds two more: each MPI job has one process for its
/// links (`mpirun -np` of the head, the workers and one), every cluster computes, the answer
/// is verified.
#[test]
fn the_cms_of_a_cluster_s_links_share_one_process() {
    let dir = scratch("links-in-one-process");
    let rates = "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7";
    let plan = format!(
        "{}[run]\nstatistics_interval = 0\nwait_for_links = true\n[launch.cm]\nlost_after_s = 60\n\
         {}[cluster.launch]\nlinks_in_one_process = true\n\
         {}[cluster.launch]\nwan_delay_ms = 5\nlinks_in_one_process = true\n\
         {}[cluster.launch]\nlauncher = \"threads\"\nwan_delay_ms = 5\n\
         {}[cluster.launch]\nlauncher = \"threads\"\nparent = \"spain\"\nwan_delay_ms = 5\n\
         {}[cluster.launch]\nlauncher = \"threads\"\nparent = \"spain\"\nwan_delay_ms = 5\n",
        synthetic(120, 0.05),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table("spain", "submaster", 1, rates),
        cluster_table("france", "submaster", 1, rates),
        cluster_table("portugal", "submaster", 1, rates),
        cluster_table("andorra", "submaster", 1, rates),
    );
    let commands = printed_commands(&dir, &plan);
    // The head, one worker, spain's upstream CM, and one process for two links.
    for (name, np) in [("main", 3), ("spain", 4)] {
        let (_, command) = commands.iter().find(|(n, _)| n == name).unwrap();
        assert!(
            command.contains(&format!(" -np {np} ")),
            "{name}: {commands:?}"
        );
    }
    let (run, stats) = launch(&dir, &plan, Duration::from_secs(240));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let spain = cluster(&stats, "spain");
    for (name, c) in [
        ("spain", &spain),
        ("france", &cluster(&stats, "france")),
        ("portugal", &cluster(&spain["stats"], "portugal")),
        ("andorra", &cluster(&spain["stats"], "andorra")),
    ] {
        assert!(
            c["tasks_done"].as_u64().unwrap() > 0,
            "{name} computed nothing: {stats:#}"
        );
        assert_eq!(c["lost"], false, "{name}");
    }
}

/// External clusters of threads (`launcher = "threads"`: each one process running its
/// sub-master, CM and workers over the in-process transport, no mpirun) beside an MPI main
/// cluster, in a tree: every cluster computes, the answer is verified, and `--print` shows
/// each cluster of threads as the application with `--threads`, the main one under mpirun.
#[test]
fn clusters_of_threads_run_beside_an_mpi_cluster() {
    let dir = scratch("threads");
    let threads = "launcher = \"threads\"\nwan_delay_ms = 5\n";
    let plan = format!(
        "{}[run]\nstatistics_interval = 0\nwait_for_links = true\n[launch.cm]\nlost_after_s = 60\n\
         {}{}[cluster.launch]\n{threads}{}[cluster.launch]\n{threads}parent = \"spain\"\n",
        synthetic(80, 0.05),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            2,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
        cluster_table(
            "portugal",
            "submaster",
            2,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let commands = printed_commands(&dir, &plan);
    let command_of = |name: &str| {
        let found = commands.iter().find(|(n, _)| n == name);
        found.map(|(_, c)| c.as_str()).unwrap_or_default()
    };
    assert!(command_of("main").starts_with("mpirun "), "{commands:?}");
    for name in ["spain", "portugal"] {
        let command = command_of(name);
        assert!(
            command.contains("hmw-synthetic") && command.ends_with(" --threads"),
            "{commands:?}"
        );
        assert!(!command.contains("mpirun"), "{commands:?}");
    }
    let (run, stats) = launch(&dir, &plan, Duration::from_secs(240));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let spain = cluster(&stats, "spain");
    let portugal = cluster(&spain["stats"], "portugal");
    for (name, c) in [("spain", &spain), ("portugal", &portugal)] {
        assert!(
            c["tasks_done"].as_u64().unwrap() > 0,
            "{name} computed nothing: {stats:#}"
        );
        assert_eq!(c["lost"], false, "{name}");
    }
}

/// Sixteen clusters in one run: the main one under mpirun holds fifteen links, one CM rank
/// each, to clusters of threads (a sub-master, a CM and two workers in one process each)
/// behind WANs of round trips from 10 to 300 ms and rates from 2 to 20 MB/s, every CM's
/// memory capped. Every link comes up, every cluster computes, the answer is verified.
#[test]
fn sixteen_clusters_hold_their_links() {
    let dir = scratch("sixteen");
    let mut plan = format!(
        "{}[run]\nstatistics_interval = 0\nwait_for_links = true\n\
         [launch.cm]\nlost_after_s = 120\nsend_memory = 1048576\nrecv_memory = 1048576\n\
         max_memory = 41943040\n{}",
        synthetic(600, 0.1),
        cluster_table("main", "master", 2, "main = true"),
    );
    for k in 1..16 {
        // One-way delays 5 to 150 ms, rates 2 to 20 MB/s.
        let delay_ms = 5 + (145 * (k - 1)) / 14;
        let rate = 2e6 * (1 + (k * 7) % 10) as f64;
        let name = format!("c{k:02}");
        plan.push_str(&cluster_table(
            &name,
            "submaster",
            2,
            &format!("wan_in_bytes_per_s = {rate}\nwan_out_bytes_per_s = {rate}"),
        ));
        plan.push_str(&format!(
            "[cluster.launch]\nlauncher = \"threads\"\nwan_delay_ms = {delay_ms}\n"
        ));
    }
    let (run, stats) = launch(&dir, &plan, Duration::from_secs(170));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let clusters = stats["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 15, "{stats:#}");
    for c in clusters {
        assert!(
            c["tasks_done"].as_u64().unwrap() > 0,
            "{} computed nothing: {c:#}",
            c["name"]
        );
        assert_eq!(c["lost"], false, "{}", c["name"]);
    }
}

#[test]
fn a_wan_outage_costs_time_and_nothing_else() {
    let dir = scratch("outage");
    // 120 tasks of 0.25 s on 1 + 2 workers: about 10 s of work; the external link goes down
    // from 3 s to 23 s after the launch, so the run lasts past the outage.
    let plan = format!(
        "{}[run]\nstatistics_interval = 2\nreassign_last_task = false\nwait_for_links = true\n\
         [launch.cm]\nlost_after_s = 120\n\
         inactivity_timeout_ms = 2000\n\
         {}{}[cluster.launch]\nwan_delay_ms = 5\nwan_outages = [\"3-23\"]\n",
        synthetic(120, 0.25),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            2,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let (run, stats) = launch(&dir, &plan, Duration::from_secs(240));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    let spain = cluster(&stats, "spain");
    let link = &spain["link"];
    assert!(link["disconnections"].as_u64().unwrap() >= 1, "{spain:#}");
    assert!(
        link["disconnected_s"].as_f64().unwrap() >= 10.0,
        "{spain:#}"
    );
    assert_eq!(spain["lost"], false);
    let link_line = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("link:"))
        .expect("the summary has the link's line");
    assert!(
        !link_line.contains(" 0 disconnections"),
        "the summary shows the disconnection: {link_line}"
    );
    // The outage fell in the middle of the run: Spain had delivered tasks, then delivered
    // nothing for at least 10 s, then delivered again.
    let spain_done: Vec<(f64, u64)> = stats["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| {
            let c = p["clusters"]
                .as_array()?
                .iter()
                .find(|c| c["name"] == "spain")?;
            Some((p["t_s"].as_f64()?, c["tasks_done"].as_u64()?))
        })
        .collect();
    let longest_silence = spain_done
        .iter()
        .filter(|(_, done)| *done > 0)
        .fold(
            (0.0f64, None::<(f64, u64)>),
            |(longest, start), &(t, done)| match start {
                Some((t0, d0)) if d0 == done => (longest.max(t - t0), start),
                _ => (longest, Some((t, done))),
            },
        )
        .0;
    let final_done = spain["tasks_done"].as_u64().unwrap();
    assert!(
        longest_silence >= 10.0 && spain_done.iter().any(|&(_, d)| d < final_done),
        "Spain worked, went silent for {longest_silence:.1} s, worked again: {spain_done:?}"
    );
    assert_eq!(stats["reassigned"], 0);
    // Without tail reassignment, nothing is computed twice: the outage cost only time.
    let spain_own = &spain["stats"]["cluster"];
    for discharged in [
        &stats["cluster"]["discharged"],
        &spain["discharged"],
        &spain_own["discharged"],
    ] {
        assert_eq!(discharged, 0, "{stats:#}");
    }
    assert_eq!(
        stats["cluster"]["tasks_done"].as_u64().unwrap() + spain["tasks_done"].as_u64().unwrap(),
        120
    );
}

/// Three clusters of which brazil's job is killed once it has worked a little, with
/// `restarts` restarts allowed in the run: the launch's folder and its output.
fn brazil_killed(name: &str, restarts: u32) -> (Scratch, Finished) {
    let dir = scratch(name);
    let plan = format!(
        "{}[run]\nstatistics_interval = 1\n[launch.cm]\nlost_after_s = 3\n\
         inactivity_timeout_ms = 1000\n\
         {}{}[cluster.launch]\nwan_delay_ms = 5\n{}[cluster.launch]\nwan_delay_ms = 5\n",
        synthetic(200, 0.2).replace(
            "reference_perf = 10.0\n",
            &format!("reference_perf = 10.0\nrestarts = {restarts}\n")
        ),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            2,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
        cluster_table(
            "brazil",
            "submaster",
            2,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let running = start_launch(&dir, &plan);
    // Once brazil has worked a little, kill its mpirun's process group (from NAME.pid): it
    // holds mpirun alone, each rank being in a group of its own; the ranks abort when their
    // mpirun is gone, and the launcher kills any left at its end.
    wait_started(&dir, &["brazil"], Duration::from_secs(3));
    let pid = std::fs::read_to_string(dir.join("run/brazil.pid")).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", pid.trim())])
        .status()
        .unwrap();
    assert!(killed.success());
    let run = running.finish(Duration::from_secs(240));
    run.assert_success();
    assert!(run.stdout.contains("verified=true"), "{}", run.stdout);
    (dir, run)
}

#[test]
fn an_external_cluster_killed_without_restarts_loses_no_work() {
    let (dir, run) = brazil_killed("kill", 0);
    let stats = json(&dir.join("run/main.stats.json"));
    let brazil = cluster(&stats, "brazil");
    assert_eq!(brazil["lost"], true, "{brazil:#}");
    assert_eq!(stats["tasks"], 200);
    assert!(run.stdout.contains("LOST"), "{}", run.stdout);
    // Brazil had delivered work and held more when it died: the master took those tasks back
    // and handed them to the others.
    assert!(brazil["tasks_done"].as_u64().unwrap() > 0, "{brazil:#}");
    let taken_back = brazil["taken_back"].as_u64().unwrap();
    assert!(taken_back > 0, "{brazil:#}");
    assert_eq!(stats["reassigned"].as_u64().unwrap(), taken_back);
    // The launcher said so when it happened, not only at the end.
    let early = run
        .stdout
        .find("== cluster brazil: failed while the main cluster runs")
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        early < run.stdout.find("LOST").unwrap(),
        "reported before the summary: {}",
        run.stdout
    );
}

/// With restarts allowed (the default), brazil's job is started again: its CM's new session
/// tells the master at once, which takes back what brazil held, and brazil rejoins.
#[test]
fn an_external_cluster_killed_is_started_again_and_rejoins() {
    let (dir, run) = brazil_killed("restart", 3);
    assert!(
        run.stdout.contains("== cluster brazil: failed") && run.stdout.contains("started again"),
        "{}",
        run.stdout
    );
    let stats = json(&dir.join("run/main.stats.json"));
    let brazil = cluster(&stats, "brazil");
    assert_eq!(brazil["lost"], false, "back: {brazil:#}");
    assert!(brazil["rejoins"].as_u64().unwrap() >= 1, "{brazil:#}");
    assert!(brazil["taken_back"].as_u64().unwrap() > 0, "{brazil:#}");
    assert!(
        brazil["tasks_done_after_rejoin"].as_u64().unwrap() > 0,
        "it computed again: {brazil:#}"
    );
    assert_eq!(stats["tasks"], 200);
    let events: Vec<&str> = stats["cluster_events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cluster"] == "brazil")
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["lost", "back"], "{stats:#}");
}

#[test]
fn a_cm_with_an_untrusted_certificate_is_refused() {
    let dir = scratch("untrusted");
    let trusted = dir.join("trusted");
    let stranger = dir.join("stranger");
    // Two CAs: the main cluster's CM trusts only the first.
    for (folder, name) in [(&trusted, "main-spain"), (&stranger, "spain-main")] {
        let status = Command::new(bin("hmw-cm"))
            .args(["keygen", "--out"])
            .arg(folder)
            .arg(name)
            .status()
            .unwrap();
        assert!(status.success());
    }
    // The stranger trusts the main cluster's CA (so it accepts the server), but its own
    // certificate comes from another CA: the main cluster's CM must refuse it.
    std::fs::copy(trusted.join("ca.pem"), stranger.join("ca.pem")).unwrap();
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = |certs: &std::path::Path| {
        format!(
            "[run]\nstatistics_interval = 1\n[cm]\ncerts = \"{}\"\nlost_after_s = 4\n\
             [application]\ntasks = 20\ntask_seconds = 0.05\n",
            certs.display()
        )
    };
    let main_config = write(&dir, "main.toml", &config(&trusted));
    let spain_config = write(&dir, "spain.toml", &config(&stranger));
    let main_hosts = write(
        &dir,
        "main.hosts",
        &format!(
            "localhost # cluster=main\nlocalhost\n\
             localhost # M 1 {port} bind=127.0.0.1 name=main-spain cluster=spain\n"
        ),
    );
    let spain_hosts = write(
        &dir,
        "spain.hosts",
        &format!(
            "localhost # cluster=spain\nlocalhost\n\
             localhost # S 0 {port} 127.0.0.1 name=spain-main peer=main-spain\n"
        ),
    );
    let spain = mpirun(
        3,
        "hmw-synthetic",
        &["-m", &spain_hosts, "-c", &spain_config],
    );
    let main = mpirun(3, "hmw-synthetic", &["-m", &main_hosts, "-c", &main_config])
        .finish(Duration::from_secs(120));
    main.assert_success();
    assert!(main.stdout.contains("verified=true"), "{}", main.stdout);
    assert!(
        main.stderr.contains("refused connection from 127.0.0.1"),
        "the refusal names the peer: {}",
        main.stderr
    );
    // The main cluster does not wait for it: the run ends without it.
    assert!(
        main.stdout.contains("link: never connected (")
            && !main
                .stdout
                .contains("never connected (0 connection attempts refused)"),
        "{}",
        main.stdout
    );
    drop(spain); // the stranger never gets a task; its processes are killed with their group
}

#[test]
fn calibration_measures_what_the_emulation_gives_and_feeds_predict() {
    let dir = scratch("calibrate");
    // Workers of perf 10 and 5 tasks/s; the external link limited to 1 MB/s each way. Three
    // workers in main: the LAN is measured with 1, 2 and 3 of them.
    let plan = format!(
        "{}[run]\nstatistics_interval = 0\n[launch.cm]\nconnections = 1\n{}{}[cluster.launch]\n\
         wan_delay_ms = 5\n",
        synthetic(20, 0.05),
        cluster_table("main", "master", 3, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            1,
            "wan_in_bytes_per_s = 1e6\nwan_out_bytes_per_s = 1e6"
        )
        .replace("perf = 10.0", "perf = 5.0"),
    );
    let plan_path = write(&dir, "plan.toml", &plan);
    let out = dir.join("system.toml");
    let mut command = Command::new(bin("hmw"));
    command
        .args([
            "calibrate",
            &plan_path,
            "--tasks",
            "4",
            "--worker-seconds",
            "0.5",
            "--lan-seconds",
            "0.3",
            "--lan-runs",
            "2",
            "--out",
        ])
        .arg(&out);
    let running = Spawned::start(command);
    let temporary = std::env::temp_dir().join(format!("hmw-calibrate-synthetic-{}", running.pid()));
    let run = running.finish(Duration::from_secs(240));
    run.assert_success();
    assert!(!temporary.exists(), "{} left behind", temporary.display());
    let text = std::fs::read_to_string(&out).unwrap();
    let system: toml::Table = text.parse().unwrap();
    let clusters = system["clusters"].as_array().unwrap();
    let perf = |c: usize| clusters[c]["workers"][0]["perf"].as_float().unwrap();
    // reference_perf 10 = speed 1: 0.05 s tasks at 20/s; perf 5 = speed 0.5: 10/s.
    assert!((perf(0) - 20.0).abs() < 1.5, "{system}");
    assert!((perf(1) - 10.0).abs() < 1.0, "{system}");
    let wan_in = clusters[1]["wan_in_bytes_per_s"].as_float().unwrap();
    assert!((0.3e6..=1.05e6).contains(&wan_in), "{system}");
    let wan_out = clusters[1]["wan_out_bytes_per_s"].as_float().unwrap();
    assert!((0.3e6..=1.05e6).contains(&wan_out), "{system}");
    // The LAN: each worker count's runs, the value used the mean with every worker.
    let main_lan = clusters[0]["lan_bytes_per_s"].as_float().unwrap();
    assert!(main_lan > 0.0);
    let runs = clusters[0]["lan_runs"].as_array().expect("the LAN runs");
    let field = |r: &toml::Value, key: &str| {
        r[key]
            .as_float()
            .or_else(|| r[key].as_integer().map(|i| i as f64))
            .unwrap()
    };
    assert_eq!(
        runs.iter().map(|r| field(r, "workers")).collect::<Vec<_>>(),
        [1.0, 2.0, 3.0],
        "{text}"
    );
    for r in runs {
        assert_eq!(field(r, "runs"), 2.0, "{text}");
        assert!(
            field(r, "min") <= field(r, "mean")
                && field(r, "mean") <= field(r, "max")
                && field(r, "std_dev") >= 0.0,
            "{text}"
        );
    }
    assert!(
        (field(&runs[2], "mean") - main_lan).abs() <= 1e-9 * main_lan,
        "the value used is the mean with all workers: {text}"
    );
    assert!(text.contains("# lan_bytes_per_s: the mean of the LAN runs with all"));
    let mut predict = Command::new(bin("hmw"));
    predict
        .args(["predict", &plan_path, "--measured"])
        .arg(&out);
    Spawned::start(predict)
        .finish(Duration::from_secs(30))
        .assert_success();
}

/// State and process group of a process, from /proc; `None` when it is gone.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let group = fields.nth(2)?.parse().ok()?;
    Some((state, group))
}

/// Whether a process still runs (a zombie waiting for its parent to reap it does not).
fn alive(pid: u32) -> bool {
    proc_state(pid).is_some_and(|(state, _)| state != 'Z')
}

/// Live processes whose process group is one of `groups`.
fn live_members(groups: &[u32]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            proc_state(pid).is_some_and(|(state, group)| state != 'Z' && groups.contains(&group))
        })
        .collect()
}

/// Every process below `pid`.
fn family(pid: u32) -> Vec<u32> {
    let mut found = hmw_tests::children(pid);
    let mut at = 0;
    while at < found.len() {
        let more = hmw_tests::children(found[at]);
        found.extend(more);
        at += 1;
    }
    found
}

/// A launch of two clusters caught mid-run: the launcher, each cluster's process group
/// (from `NAME.pid`: main's first) and every process of the run (each `mpirun` and its ranks).
struct MidRun {
    launcher: Spawned,
    groups: Vec<u32>,
    processes: Vec<u32>,
    /// The run's folder, kept while the launcher writes into it.
    _dir: Scratch,
}

/// Start `hmw launch` on two clusters (400 tasks of 0.1 s: 20 s of work) and return once both
/// clusters have computed for 3 s. No cluster is started again when it fails (`[launch]
/// restarts = 0`): these runs check how the launcher meets a failure or a signal; restarts
/// have their own checks (`brazil_killed` here, `scripts/faults.sh`).
fn launch_mid_run(name: &str) -> MidRun {
    let dir = scratch(name);
    let plan = format!(
        "{}[run]\nstatistics_interval = 1\n[launch.cm]\nlost_after_s = 60\n\
         {}{}[cluster.launch]\nwan_delay_ms = 5\n",
        synthetic(400, 0.1).replacen("[launch]\n", "[launch]\nrestarts = 0\n", 1),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            1,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let launcher = start_launch(&dir, &plan);
    wait_started(&dir, &["main", "spain"], Duration::from_secs(3));
    let groups: Vec<u32> = ["main", "spain"]
        .iter()
        .map(|n| {
            let pid = std::fs::read_to_string(dir.join(format!("run/{n}.pid"))).unwrap();
            pid.trim().parse().unwrap()
        })
        .collect();
    let mut processes = groups.clone();
    for &group in &groups {
        processes.extend(family(group));
    }
    // mpirun and three ranks per cluster (head, CM, worker).
    assert!(
        processes.len() >= 8 && processes.iter().all(|&p| alive(p)),
        "not every process of the run is up: {processes:?}"
    );
    MidRun {
        launcher,
        groups,
        processes,
        _dir: dir,
    }
}

/// Wait until every process in `processes` and `groups` is gone, at most `within` after
/// `since` (`what` happened then).
fn assert_all_gone(
    groups: &[u32],
    processes: &[u32],
    since: Instant,
    within: Duration,
    what: &str,
) {
    loop {
        let left: Vec<u32> = processes.iter().copied().filter(|&p| alive(p)).collect();
        let members = live_members(groups);
        if left.is_empty() && members.is_empty() {
            return;
        }
        assert!(
            since.elapsed() < within,
            "{:?} after {what}: still running {left:?}, in the groups {members:?}",
            since.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Send the launcher of a run caught mid-run `signal`; check that it fails and that every
/// process it started is gone within `within`.
fn signal_the_launcher(name: &str, signal: &str, within: Duration) -> hmw_tests::Finished {
    let run = launch_mid_run(name);
    let sent = Command::new("kill")
        .args([signal, &run.launcher.pid().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let signalled = Instant::now();
    let MidRun {
        launcher,
        groups,
        processes,
        ..
    } = run;
    let finished = launcher.finish(Duration::from_secs(30));
    assert!(!finished.status.success(), "{finished:#?}");
    assert_all_gone(&groups, &processes, signalled, within, signal);
    finished
}

#[test]
fn a_terminated_launcher_stops_every_cluster_at_once() {
    let run = signal_the_launcher("sigterm", "-TERM", Duration::from_secs(3));
    assert!(
        run.elapsed < Duration::from_secs(3),
        "the launcher took {:?} to stop",
        run.elapsed
    );
    assert!(run.stdout.contains("== interrupted"), "{}", run.stdout);
}

#[test]
fn a_killed_launcher_still_takes_its_clusters() {
    // SIGKILL cannot be caught: the kernel sends each mpirun SIGTERM (PR_SET_PDEATHSIG), and
    // mpirun stops its ranks.
    signal_the_launcher("sigkill", "-KILL", Duration::from_secs(10));
}

#[test]
fn a_failed_main_cluster_stops_the_others_without_a_grace_period() {
    let run = launch_mid_run("main-fails");
    // Kill the main cluster's mpirun alone: its ranks go with it, the launcher must see it
    // fail and stop the external cluster at once rather than wait --grace-s (30 s).
    let killed = Command::new("kill")
        .args(["-KILL", &run.groups[0].to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let since = Instant::now();
    let MidRun {
        launcher,
        groups,
        processes,
        ..
    } = run;
    let finished = launcher.finish(Duration::from_secs(60));
    assert!(!finished.status.success(), "{finished:#?}");
    assert!(
        since.elapsed() < Duration::from_secs(5),
        "the launcher took {:?} after the main cluster failed",
        since.elapsed()
    );
    assert!(
        finished.stdout.contains("== cluster main: failed"),
        "{}",
        finished.stdout
    );
    assert_all_gone(
        &groups,
        &processes,
        since,
        Duration::from_secs(5),
        "the main cluster's failure",
    );
}

/// The parent of a process, from /proc.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Processes SIGKILLed by id when dropped, should a failed test leave them behind.
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in self.0.iter().filter(|&&p| alive(p)) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

#[test]
fn ranks_whose_mpirun_died_are_killed_with_the_launcher() {
    let run = launch_mid_run("orphans");
    let spain = run.groups[1];
    let ranks = family(spain);
    assert!(ranks.len() >= 3, "spain's ranks: {ranks:?}");
    let _guard = KillOnDrop(ranks.clone());
    // Stopped, the ranks cannot notice that their mpirun died (OpenMPI's ranks otherwise
    // abort on their own): like ranks stuck in a computation. Then mpirun alone dies.
    for signal in [("-STOP", &ranks), ("-KILL", &vec![spain])] {
        let mut kill = Command::new("kill");
        kill.arg(signal.0);
        for pid in signal.1 {
            kill.arg(pid.to_string());
        }
        assert!(kill.status().unwrap().success());
    }
    // The launcher reaps mpirun (and reports the cluster failed); its ranks, each in a
    // process group of its own, are now the launcher's children, not init's.
    let launcher = run.launcher.pid();
    let start = Instant::now();
    while proc_state(spain).is_some() || ranks.iter().any(|&r| parent(r) != Some(launcher)) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "mpirun {spain} not reaped, or its ranks {ranks:?} not re-parented to the \
             launcher {launcher}: parents {:?}",
            ranks.iter().map(|&r| parent(r)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ranks.iter().all(|&r| alive(r)), "the stopped ranks live on");
    let sent = Command::new("kill")
        .args(["-TERM", &launcher.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let signalled = Instant::now();
    let MidRun {
        launcher,
        groups,
        processes,
        ..
    } = run;
    let finished = launcher.finish(Duration::from_secs(30));
    assert!(!finished.status.success(), "{finished:#?}");
    assert!(
        finished
            .stdout
            .contains("== cluster spain: failed while the main cluster runs"),
        "{}",
        finished.stdout
    );
    assert_all_gone(
        &groups,
        &processes,
        signalled,
        Duration::from_secs(5),
        "stopping the launcher",
    );
}

/// A plan whose first calibration run (main's worker alone, 0.5 s tasks) outlasts a test.
fn slow_calibration(dir: &std::path::Path, extra: &[&str]) -> Spawned {
    let plan = format!(
        "{}[run]\nstatistics_interval = 0\n{}",
        synthetic(1000, 0.5),
        cluster_table("main", "master", 1, "main = true"),
    );
    let plan_path = write(dir, "plan.toml", &plan);
    let mut command = Command::new(bin("hmw"));
    command
        .args(["calibrate", &plan_path, "--tasks", "1000", "--out"])
        .arg(dir.join("system.toml"))
        .args(extra);
    Spawned::start(command)
}

/// Wait (a minute at most) until `pid` runs mpirun and its ranks (head and worker); return
/// them.
fn calibration_run_of(pid: u32) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let below = family(pid);
        if below.len() >= 3 {
            return below;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no calibration run started: {below:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_terminated_calibration_stops_its_run() {
    let dir = scratch("calibrate-sigterm");
    let running = slow_calibration(&dir, &[]);
    let pid = running.pid();
    let temporary = std::env::temp_dir().join(format!("hmw-calibrate-synthetic-{pid}"));
    let processes = calibration_run_of(pid);
    let _guard = KillOnDrop(processes.clone());
    std::thread::sleep(Duration::from_secs(1));
    let sent = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let signalled = Instant::now();
    let finished = running.finish(Duration::from_secs(30));
    assert!(!finished.status.success(), "{finished:#?}");
    assert!(finished.stderr.contains("interrupted"), "{finished:#?}");
    assert!(
        finished.elapsed < Duration::from_secs(5),
        "hmw calibrate took {:?} to stop",
        finished.elapsed
    );
    assert_all_gone(
        &[],
        &processes,
        signalled,
        Duration::from_secs(5),
        "SIGTERM",
    );
    assert!(!temporary.exists(), "{} left behind", temporary.display());
}

#[test]
fn a_calibration_run_past_its_time_limit_is_killed() {
    let dir = scratch("calibrate-timeout");
    let running = slow_calibration(&dir, &["--run-timeout", "3"]);
    let temporary = std::env::temp_dir().join(format!("hmw-calibrate-synthetic-{}", running.pid()));
    let processes = calibration_run_of(running.pid());
    let _guard = KillOnDrop(processes.clone());
    let finished = running.finish(Duration::from_secs(60));
    assert!(!finished.status.success(), "{finished:#?}");
    assert!(
        finished
            .stderr
            .contains("still running after 3 s: killed (--run-timeout)"),
        "{finished:#?}"
    );
    assert_all_gone(
        &[],
        &processes,
        Instant::now(),
        Duration::from_secs(1),
        "the calibration's end",
    );
    // A failed calibration keeps its files for a look, and says where.
    assert!(
        finished.stderr.contains(&format!(
            "calibration files kept in {}",
            temporary.display()
        )),
        "{finished:#?}"
    );
    std::fs::remove_dir_all(&temporary).unwrap();
}

#[test]
fn launch_print_says_which_certificates_go_to_which_host() {
    let dir = scratch("launch-print");
    let plan = format!(
        "{}{}{}",
        synthetic(10, 0.01),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            1,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let plan_path = write(&dir, "plan.toml", &plan);
    let work = dir.join("run");
    let mut command = Command::new(bin("hmw"));
    command
        .args(["launch", &plan_path, "--print", "--work-dir"])
        .arg(&work);
    let run = Spawned::start(command).finish(Duration::from_secs(30));
    run.assert_success();
    let certs = work.canonicalize().unwrap().join("certs");
    assert!(
        run.stdout.contains(&format!(
            "# certificates in {}: copy each host's files",
            certs.display()
        )),
        "{}",
        run.stdout
    );
    for line in [
        "#   main-cm (cluster main, CM main-spain): ca.pem main-spain.pem main-spain.key.pem",
        "#   spain-cm (cluster spain, CM spain-main): ca.pem spain-main.pem spain-main.key.pem",
    ] {
        assert!(
            run.stdout.contains(line),
            "{line:?} missing: {}",
            run.stdout
        );
    }
    // The files listed are the ones written, of the CA that signed them: not a new one.
    for file in ["ca.pem", "main-spain.pem", "spain-main.key.pem"] {
        assert!(certs.join(file).exists(), "{file}");
    }
    assert!(!run.stdout.contains("hmw keygen"), "{}", run.stdout);
}

#[test]
fn keygen_writes_a_certificate_per_cm_as_launch_names_them() {
    let dir = scratch("keygen");
    let plan = format!(
        "{}{}{}{}[cluster.launch]\nparent = \"spain\"\n",
        synthetic(10, 0.01),
        cluster_table("main", "master", 1, "main = true"),
        cluster_table(
            "spain",
            "submaster",
            1,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
        cluster_table(
            "portugal",
            "submaster",
            1,
            "wan_in_bytes_per_s = 1e7\nwan_out_bytes_per_s = 1e7"
        ),
    );
    let plan_path = write(&dir, "plan.toml", &plan);
    let out = dir.join("certs");
    let mut command = Command::new(bin("hmw"));
    command.args(["keygen", &plan_path, "--out"]).arg(&out);
    let run = Spawned::start(command).finish(Duration::from_secs(30));
    run.assert_success();
    // spain's CM faces both main and portugal: it holds two certificates.
    for name in [
        "main-spain",
        "spain-main",
        "spain-portugal",
        "portugal-spain",
    ] {
        for file in [format!("{name}.pem"), format!("{name}.key.pem")] {
            assert!(out.join(&file).exists(), "{file} missing: {}", run.stdout);
        }
    }
    assert!(out.join("ca.pem").exists());
    assert!(
        run.stdout.contains(
            "spain-cm (cluster spain, CM spain-main, spain-portugal): ca.pem spain-main.pem \
             spain-main.key.pem spain-portugal.pem spain-portugal.key.pem"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("each names its CM and its own host only as subject alternative names"),
        "{}",
        run.stdout
    );
}
