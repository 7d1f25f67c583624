//! Two clusters in one process, each on the in-process transport, bridged by communication
//! managers over a real QUIC link on loopback: the hierarchy without `mpirun`.

use std::{net::UdpSocket, path::Path, thread, time::Duration};

use hmw::{
    config::ConfigFile,
    machinefile::MachineFile,
    runner::{play_in_threads, Outcome},
    Problem, RunStats, Task, TaskId, TaskResult, WorkerContext,
};
use serde::{Deserialize, Serialize};

/// Sleeps `millis / speed`; its result counts the tasks it stands for.
#[derive(Serialize, Deserialize)]
struct Nap {
    millis: u64,
}

#[derive(Serialize, Deserialize)]
struct Count(u64);

impl Task for Nap {
    type Output = Count;
    fn execute(self, worker: &WorkerContext) -> Count {
        thread::sleep(Duration::from_secs_f64(
            self.millis as f64 / 1e3 / worker.speed(),
        ));
        Count(1)
    }
}

impl TaskResult for Count {
    fn join(&mut self, other: Count) -> Result<(), Count> {
        self.0 += other.0;
        Ok(())
    }
}

struct Naps {
    tasks: u64,
    produced: u64,
    gathered: Vec<u32>,
}

impl Problem for Naps {
    type Task = Nap;
    fn next_task(&mut self) -> Option<Nap> {
        (self.produced < self.tasks).then(|| {
            self.produced += 1;
            Nap { millis: 20 }
        })
    }
    fn gather(&mut self, id: TaskId, result: Count) {
        assert_eq!(result.0, 1);
        self.gathered[id as usize] += 1;
    }
    fn gather_joined(&mut self, ids: &[TaskId], result: Count) {
        assert_eq!(
            result.0,
            ids.len() as u64,
            "a joined result stands for its ids"
        );
        for &id in ids {
            self.gathered[id as usize] += 1;
        }
    }
    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn config(dir: &Path) -> ConfigFile {
    let text = format!(
        "[run]\nstatistics_interval = 0\nworker_buffers = 2\n\
         [cm]\ncerts = \"{}\"\nlost_after_s = 20\ntasks_window = 4\n",
        dir.display()
    );
    ConfigFile::parse(&dir.join("run.toml"), &text).unwrap()
}

#[test]
fn an_external_cluster_computes_joined_batches_and_nothing_is_lost() {
    let dir = std::env::temp_dir().join(format!("hmw-two-clusters-{}", std::process::id()));
    let names = ["main-spain".to_owned(), "spain-main".to_owned()];
    hmw_cm::keygen::generate(&dir, &names, &[]).unwrap();
    let port = free_udp_port();
    let main = MachineFile::parse(
        Path::new("main.hosts"),
        &format!(
            "localhost # cluster=main\nlocalhost # speed=0.5\n\
             localhost # M 1 {port} name=main-spain cluster=spain nt=3 bind=127.0.0.1\n"
        ),
    )
    .unwrap();
    let spain = MachineFile::parse(
        Path::new("spain.hosts"),
        &format!(
            "localhost # cluster=spain\nlocalhost\nlocalhost\n\
             localhost # S 0 {port} 127.0.0.1 name=spain-main peer=main-spain nr=3\n"
        ),
    )
    .unwrap();
    let config = config(&dir);
    let external = {
        let config = config.clone();
        thread::spawn(move || play_in_threads::<Naps>(&spain, &config, None))
    };
    let problem = Naps {
        tasks: 60,
        produced: 0,
        gathered: vec![0; 60],
    };
    let outcome = play_in_threads(&main, &config, Some(problem)).unwrap();
    let Outcome::Master { problem, stats } = outcome else {
        panic!("rank 0 of the main cluster is its master");
    };
    let Outcome::SubMaster { stats: spain_stats } = external.join().unwrap().unwrap() else {
        panic!("rank 0 of the external cluster is a sub-master");
    };
    assert!(
        problem.gathered.iter().all(|&n| n == 1),
        "{:?}",
        problem.gathered
    );
    check_shares(&stats, &spain_stats);
    let _ = std::fs::remove_dir_all(&dir);
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
