//! Two clusters in one process, each on the in-process transport, bridged by communication
//! managers over a real QUIC link on loopback: the hierarchy without `mpirun`.

use std::{net::UdpSocket, path::Path, thread, time::Duration};

use hmw_core::{
    config::ConfigFile, machinefile::MachineFile, Problem, RunStats, Split, Splitter, Task, TaskId,
    TaskResult, WorkerContext,
};

use crate::runner::{play_in_threads, Outcome};
use serde::{Deserialize, Serialize};

/// Sleeps `millis / speed` and counts its `units` of work. `blob` stands for input data that
/// every task needs (a splitter sends it across the WAN once).
#[derive(Serialize, Deserialize)]
struct Nap {
    millis: u64,
    units: u64,
    blob: Option<Vec<u8>>,
}

/// Units of work done: results join by adding up.
#[derive(Serialize, Deserialize)]
struct Count(u64);

impl Task for Nap {
    type Output = Count;
    fn execute(self, worker: &WorkerContext) -> Count {
        assert!(worker.speed() != BROKEN, "this worker is broken");
        thread::sleep(Duration::from_secs_f64(
            self.millis as f64 / 1e3 / worker.speed(),
        ));
        Count(self.units)
    }
}

impl TaskResult for Count {
    fn join(&mut self, other: Count) -> Result<(), Count> {
        self.0 += other.0;
        Ok(())
    }
}

const UNITS: u64 = 4;
/// A worker of this speed panics on every task.
const BROKEN: f64 = 0.25;
const BLOB: usize = 8192;
/// Inter-cluster tasks an external cluster holds at most (`[cm] tasks_window`).
const WINDOW: u64 = 4;

struct Naps {
    tasks: u64,
    millis: u64,
    produced: u64,
    gathered: Vec<u32>,
    /// Sizes of the results gathered (how many tasks each stands for).
    result_sizes: Vec<usize>,
}

impl Naps {
    fn new(tasks: u64) -> Self {
        Naps {
            tasks,
            millis: 20,
            produced: 0,
            gathered: vec![0; tasks as usize],
            result_sizes: Vec::new(),
        }
    }
}

impl Problem for Naps {
    type Task = Nap;
    fn next_task(&mut self) -> Option<Nap> {
        (self.produced < self.tasks).then(|| {
            self.produced += 1;
            Nap {
                millis: self.millis,
                units: UNITS,
                blob: Some(vec![7; BLOB]),
            }
        })
    }
    fn gather(&mut self, id: TaskId, result: Count) {
        self.gather_joined(&[id], result);
    }
    fn gather_joined(&mut self, ids: &[TaskId], result: Count) {
        assert_eq!(
            result.0,
            ids.len() as u64 * UNITS,
            "a result stands for the whole work of its ids"
        );
        self.result_sizes.push(ids.len());
        for &id in ids {
            self.gathered[id as usize] += 1;
        }
    }
    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }
}

/// Splits a nap of `UNITS` units into `UNITS` naps of one unit; sends the blob once.
#[derive(Default)]
struct NapSplitter {
    blob_sent: bool,
    blob: Option<Vec<u8>>,
}

impl Splitter<Nap> for NapSplitter {
    fn split(&mut self, nap: Nap) -> anyhow::Result<Split<Nap>> {
        if let Some(blob) = nap.blob {
            self.blob = Some(blob);
        }
        let blob = self
            .blob
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("a task without its blob, and none kept"))?;
        anyhow::ensure!(blob.len() == BLOB, "the blob kept is whole");
        let parts = (0..nap.units)
            .map(|_| Nap {
                millis: nap.millis / nap.units,
                units: 1,
                blob: None,
            })
            .collect();
        Ok(Split {
            parts,
            whole: Count(0),
        })
    }

    fn combine(&mut self, whole: &mut Count, part: Count) {
        whole.0 += part.0;
    }

    fn outbound(&mut self, mut nap: Nap) -> Nap {
        if self.blob_sent {
            nap.blob = None;
        }
        self.blob_sent = true;
        nap
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A scratch folder holding the certificates of both communication managers.
fn certified(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hmw-{test}-{}", std::process::id()));
    let names = ["main-spain".to_owned(), "spain-main".to_owned()];
    hmw_cm::keygen::generate(&dir, &names, &[]).unwrap();
    dir
}

/// The main cluster: its master, `workers` (machine-file lines), and the CM leading to Spain,
/// a server on `port` with the `extra` annotations.
fn main_cluster(workers: &str, port: u16, extra: &str) -> MachineFile {
    let text = format!(
        "localhost # cluster=main\n{workers}\
         localhost # M 1 {port} name=main-spain peer=spain-main cluster=spain bind=127.0.0.1{extra}\n"
    );
    MachineFile::parse(Path::new("main.hosts"), &text).unwrap()
}

/// Spain: its sub-master, `workers` (machine-file lines), and its CM, a client of `port` with
/// the `extra` annotations.
fn spain_cluster(workers: &str, port: u16, extra: &str) -> MachineFile {
    let text = format!(
        "localhost # cluster=spain\n{workers}\
         localhost # S 0 {port} 127.0.0.1 name=spain-main peer=main-spain{extra}\n"
    );
    MachineFile::parse(Path::new("spain.hosts"), &text).unwrap()
}

/// A splitter for which every task is already done: no parts, the whole result at once.
struct NothingToSplit;

impl Splitter<Nap> for NothingToSplit {
    fn split(&mut self, nap: Nap) -> anyhow::Result<Split<Nap>> {
        Ok(Split {
            parts: Vec::new(),
            whole: Count(nap.units),
        })
    }

    fn combine(&mut self, _whole: &mut Count, _part: Count) {}
}

/// The splitter of these tests, as `play_in_threads` makes them.
fn nap_splitter() -> anyhow::Result<Box<dyn Splitter<Nap>>> {
    Ok(Box::new(NapSplitter::default()))
}

/// The run configuration: the clusters' shares are checked, so the run starts once the link
/// is up (`wait_for_links`).
fn config(dir: &Path) -> ConfigFile {
    let text = format!(
        "[run]\nstatistics_interval = 0\nworker_buffers = 2\nwait_for_links = true\n\
         [cm]\ncerts = \"{}\"\nlost_after_s = 20\ntasks_window = {WINDOW}\n",
        dir.display()
    );
    ConfigFile::parse(&dir.join("run.toml"), &text).unwrap()
}

/// Run 60 naps on a main cluster (one half-speed worker) and an external one (two workers)
/// with `nt` tasks per inter-cluster task and `nr` results joined, optionally with the
/// splitter.
fn run_two_clusters(nt: usize, nr: usize, split: bool) -> (Naps, RunStats, RunStats) {
    let dir = certified(&format!("two-clusters-{nt}-{nr}-{split}"));
    let port = free_udp_port();
    let main = main_cluster("localhost # speed=0.5\n", port, &format!(" nt={nt}"));
    let spain = spain_cluster("localhost\nlocalhost\n", port, &format!(" nr={nr}"));
    let config = config(&dir);
    let splitter = split.then_some(&nap_splitter as &dyn Fn() -> _);
    let external = {
        let config = config.clone();
        thread::spawn(move || {
            let splitter = split.then_some(&nap_splitter as &dyn Fn() -> _);
            play_in_threads::<Naps>(&spain, &config, None, splitter)
        })
    };
    let outcome = play_in_threads(&main, &config, Some(Naps::new(60)), splitter).unwrap();
    let Outcome::Master { problem, stats } = outcome else {
        panic!("rank 0 of the main cluster is its master");
    };
    let Outcome::SubMaster { stats: spain_stats } = external.join().unwrap().unwrap() else {
        panic!("rank 0 of the external cluster is a sub-master");
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        problem.gathered.iter().all(|&n| n == 1),
        "every task gathered once: {:?}",
        problem.gathered
    );
    check_shares(&stats, &spain_stats);
    (problem, stats, spain_stats)
}

/// Most of Spain's results come joined by three, none by more.
fn most_results_joined_by_three(problem: &Naps, stats: &RunStats) {
    let spain = &stats.clusters[0];
    let joined: usize = problem.result_sizes.iter().filter(|&&n| n == 3).sum();
    assert!(
        joined >= spain.tasks_done as usize / 2,
        "{:?}",
        problem.result_sizes
    );
    assert!(problem.result_sizes.iter().all(|&n| n <= 3));
}

#[test]
fn an_external_cluster_computes_joined_batches_and_nothing_is_lost() {
    // Batches of three tasks, the results of one batch joined into one.
    let (problem, stats, _) = run_two_clusters(3, 3, false);
    most_results_joined_by_three(&problem, &stats);
}

#[test]
fn results_join_across_inter_cluster_tasks_when_nr_exceeds_nt() {
    // One task per inter-cluster task, three results per inter-cluster result.
    let (problem, stats, _) = run_two_clusters(1, 3, false);
    most_results_joined_by_three(&problem, &stats);
}

#[test]
fn a_splitter_refines_the_grain_and_sends_shared_data_once() {
    let (_, stats, spain_stats) = run_two_clusters(1, 1, true);
    let spain = &stats.clusters[0];
    // Each inter-cluster task ran as UNITS local tasks over there. At the end the main
    // cluster's tail copies race Spain's last tasks: Spain may also have computed parts of a
    // task gathered from the copy (its result discharged, or still under way at the stop,
    // at most its window of `tasks_window` tasks).
    let delivered = spain.tasks_done * UNITS;
    let at_most = (spain.tasks_done + spain.discharged + WINDOW) * UNITS;
    assert!(
        (delivered..=at_most).contains(&spain_stats.tasks),
        "{} local tasks for {} inter-cluster tasks delivered: {spain_stats:#?}",
        spain_stats.tasks,
        spain.tasks_done
    );
    // The blob crossed the WAN once: the tasks that crossed are a fraction of those produced.
    assert!(
        spain.task_bytes > spain.tasks_done * BLOB as u64,
        "{spain:#?}"
    );
    assert!(
        spain.task_bytes_sent < spain.task_bytes / 4,
        "{} bytes sent of {} produced",
        spain.task_bytes_sent,
        spain.task_bytes
    );
}

fn check_shares(stats: &RunStats, spain_stats: &RunStats) {
    assert_eq!(stats.tasks, 60);
    assert_eq!(stats.clusters.len(), 1);
    let spain = &stats.clusters[0];
    assert_eq!(spain.name, "spain");
    // The main cluster has one half-speed worker, Spain two full-speed ones: Spain does most.
    assert!(spain.tasks_done > 30, "{stats:#?}");
    assert_eq!(spain.tasks_done + stats.cluster.tasks_done, 60);
    let link = spain.link.as_ref().expect("the CM reports its link");
    assert!(link.bytes_sent > 0 && link.bytes_received > 0);
    assert!(link.disconnected_s < 0.5, "no outage in this run: {link:?}");
    let report = spain
        .stats
        .as_ref()
        .expect("the sub-master reports its statistics");
    assert_eq!(report.tasks, spain_stats.tasks);
    assert_eq!(report.name, "spain");
    assert!(!spain.lost);
}

#[test]
fn a_cluster_that_never_connects_does_not_hold_the_run() {
    let dir = certified("never-connects");
    let main = main_cluster("localhost\n", free_udp_port(), "");
    // The default start: local workers begin at once; nobody ever connects to the CM.
    let text = format!(
        "[run]\nstatistics_interval = 0\n[cm]\ncerts = \"{}\"\nlost_after_s = 60\n",
        dir.display()
    );
    let config = ConfigFile::parse(&dir.join("run.toml"), &text).unwrap();
    let start = std::time::Instant::now();
    let outcome = play_in_threads(&main, &config, Some(Naps::new(20)), None).unwrap();
    let elapsed = start.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    let Outcome::Master { problem, stats } = outcome else {
        panic!("rank 0 is the master");
    };
    assert!(problem.gathered.iter().all(|&n| n == 1));
    assert_eq!(stats.cluster.tasks_done, 20);
    assert_eq!(stats.clusters[0].tasks_done, 0);
    assert_eq!(stats.links_up_s, None, "the link never came up");
    // 20 naps of 20 ms on one worker: well under the 60 s the link would be given.
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
}

/// The main master's statistics, once checked that it gathered every task once, that Spain was
/// lost holding tasks (it may have come back since), and that those were handed out again.
fn lost_spain_and_its_tasks_taken_back(outcome: Outcome<Naps>) -> RunStats {
    let Outcome::Master { problem, stats } = outcome else {
        panic!("rank 0 is the master");
    };
    assert!(
        problem.gathered.iter().all(|&n| n == 1),
        "every task gathered once: {:?}",
        problem.gathered
    );
    let spain = &stats.clusters[0];
    assert!(spain.lost || spain.rejoins > 0, "{spain:#?}");
    assert!(
        spain.taken_back > 0,
        "Spain held tasks when lost: {spain:#?}"
    );
    assert_eq!(stats.reassigned, spain.taken_back);
    stats
}

#[test]
fn a_cluster_that_fails_reports_itself_lost_and_its_tasks_go_elsewhere() {
    let dir = certified("fails");
    let port = free_udp_port();
    let main = main_cluster("localhost\n", port, "");
    let spain = spain_cluster(&format!("localhost # speed={BROKEN}\n"), port, "");
    let config = config(&dir); // lost_after_s = 20
    let external = {
        let config = config.clone();
        thread::spawn(move || play_in_threads::<Naps>(&spain, &config, None, None))
    };
    let start = std::time::Instant::now();
    let outcome = play_in_threads(&main, &config, Some(Naps::new(30)), None).unwrap();
    let elapsed = start.elapsed();
    let spain_error = external
        .join()
        .unwrap()
        .err()
        .expect("Spain fails")
        .to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        spain_error.contains("this worker is broken"),
        "{spain_error}"
    );
    let stats = lost_spain_and_its_tasks_taken_back(outcome);
    assert!(
        stats.clusters[0].lost,
        "a failed cluster does not come back"
    );
    assert_eq!(stats.cluster.tasks_done, 30);
    // Reported at once, not after the link's 20 s deadline.
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
}

#[test]
fn a_lost_cluster_gives_its_tasks_back_then_rejoins_when_its_link_returns() {
    use hmw_cm::wanem::{DirectionConfig, Outage, Wanem, WanemConfig};
    let dir = certified("late");
    let port = free_udp_port();
    // Spain reaches the main cluster through an emulated WAN that is down from 1 s to 5 s:
    // longer than the 3 s after which a silent link loses its cluster. The main cluster's
    // worker alone needs about 8 s for the rest of the run: the link is back before the end.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let relay_config = WanemConfig {
        outages: vec![Outage {
            start_s: 1.0,
            end_s: 5.0,
        }],
        ..WanemConfig::symmetric(
            "127.0.0.1:0".parse().unwrap(),
            format!("127.0.0.1:{port}").parse().unwrap(),
            DirectionConfig::default(),
        )
    };
    let relay = runtime.block_on(Wanem::start(relay_config)).unwrap();
    let relay_port = relay.local_addr().port();
    let main = main_cluster("localhost\n", port, "");
    let spain = spain_cluster("localhost\nlocalhost\n", relay_port, "");
    let text = format!(
        "[run]\nstatistics_interval = 0\nwait_for_links = true\nreassign_last_task = false\n\
         [cm]\ncerts = \"{}\"\nlost_after_s = 3\ninactivity_timeout_ms = 500\ntasks_window = 4\n",
        dir.display()
    );
    let config = ConfigFile::parse(&dir.join("run.toml"), &text).unwrap();
    let external = {
        let config = config.clone();
        thread::spawn(move || play_in_threads::<Naps>(&spain, &config, None, None))
    };
    let naps = Naps {
        millis: 50,
        ..Naps::new(200)
    };
    let start = std::time::Instant::now();
    let outcome = play_in_threads(&main, &config, Some(naps), None).unwrap();
    let elapsed = start.elapsed();
    let _ = external.join();
    relay.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
    let stats = lost_spain_and_its_tasks_taken_back(outcome);
    let spain = &stats.clusters[0];
    // The main worker recomputed the tasks taken back before the link came back; the results
    // Spain had computed meanwhile arrived late and were thrown away. Then Spain, whose
    // sub-master waited for its link, came back and took new tasks.
    assert!(
        spain.discharged > 0,
        "no late result was discharged: {spain:#?}"
    );
    assert_eq!((spain.lost, spain.rejoins), (false, 1), "{spain:#?}");
    assert!(spain.tasks_done_after_rejoin > 0, "{spain:#?}");
    assert_eq!(
        stats.cluster.tasks_done + spain.tasks_done,
        200,
        "{stats:#?}"
    );
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
}

#[test]
fn tasks_split_into_nothing_still_come_back() {
    let dir = certified("split-into-nothing");
    let port = free_udp_port();
    let main = main_cluster("localhost # speed=0.5\n", port, "");
    let spain = spain_cluster("localhost\n", port, "");
    let config = config(&dir);
    let nothing = || -> anyhow::Result<Box<dyn Splitter<Nap>>> { Ok(Box::new(NothingToSplit)) };
    let external = {
        let config = config.clone();
        thread::spawn(move || {
            let nothing =
                || -> anyhow::Result<Box<dyn Splitter<Nap>>> { Ok(Box::new(NothingToSplit)) };
            play_in_threads::<Naps>(&spain, &config, None, Some(&nothing))
        })
    };
    let outcome = play_in_threads(&main, &config, Some(Naps::new(30)), Some(&nothing)).unwrap();
    external.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let Outcome::Master { problem, stats } = outcome else {
        panic!("rank 0 is the master");
    };
    assert!(
        problem.gathered.iter().all(|&n| n == 1),
        "{:?}",
        problem.gathered
    );
    assert!(stats.clusters[0].tasks_done > 0, "{stats:#?}");
}
