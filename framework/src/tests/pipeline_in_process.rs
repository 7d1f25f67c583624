//! Pipeline runs in this process: one cluster over the in-process transport, with a node
//! slowed during the run (the controller drains, re-calibrates, remaps and goes on); and two
//! clusters bridged by their CMs over a real QUIC link on loopback, items crossing it.

use std::{
    net::UdpSocket,
    path::Path,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    thread,
    time::Duration,
};

use hmw_core::{
    config::ConfigFile,
    machinefile::MachineFile,
    pipeline::{stats::DecisionKind, Complete, Pipeline, PipelineConfig, Sink, Source, Stage},
};

use crate::pipeline_runner::{play_in_threads, PipeOutcome, Prepared};

/// Items 0..n.
struct Numbers(u64, u64);

impl Source for Numbers {
    type Item = u64;
    fn next_item(&mut self) -> Option<u64> {
        (self.0 < self.1).then(|| {
            self.0 += 1;
            self.0 - 1
        })
    }
}

/// The rank of the node whose compute thread runs this (`stages-RANK`).
fn node_rank() -> u64 {
    thread::current()
        .name()
        .and_then(|n| n.strip_prefix("stages-"))
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// No node is slowed.
const NONE: u64 = 0;
/// The next node to compute the heavy stage is slowed.
const ARMED: u64 = u64::MAX;

/// Sleeps `millis` (five times longer on the slowed node), then adds `add`.
struct Nap {
    millis: u64,
    add: u64,
    /// Whether it is the heavy stage, whose node is slowed once armed.
    heavy: bool,
    /// [`NONE`], [`ARMED`], or the rank of the node slowed five times.
    slowed: Arc<AtomicU64>,
}

impl Stage for Nap {
    type In = u64;
    type Out = u64;
    fn process(&self, x: u64) -> u64 {
        let rank = node_rank();
        if self.heavy {
            let _ = self
                .slowed
                .compare_exchange(ARMED, rank, Ordering::Relaxed, Ordering::Relaxed);
        }
        let slow = if rank == self.slowed.load(Ordering::Relaxed) {
            5
        } else {
            1
        };
        thread::sleep(Duration::from_millis(self.millis * slow));
        x * 10 + self.add
    }
}

/// The items received, in the order received; after `slow_after` of them, the node of the
/// heavy stage is slowed.
struct Collect {
    seen: Arc<Mutex<Vec<(u64, u64)>>>,
    slow_after: Option<(usize, Arc<AtomicU64>)>,
}

impl Sink<u64> for Collect {
    fn receive(&mut self, seq: u64, item: u64) {
        let mut seen = self.seen.lock().unwrap();
        seen.push((seq, item));
        if let Some((after, slowed)) = &self.slow_after {
            if seen.len() == *after {
                slowed.store(ARMED, Ordering::Relaxed);
            }
        }
    }
}

/// Three stages of 4, 16 and 4 ms over `items` numbers.
fn pipeline(items: u64, slowed: Arc<AtomicU64>, sink: Collect) -> Complete<Numbers, Collect, u64> {
    let nap = |millis, add| Nap {
        millis,
        add,
        heavy: millis == 16,
        slowed: slowed.clone(),
    };
    Pipeline::source(Numbers(0, items))
        .stage("a", nap(4, 1))
        .stage("b", nap(16, 2))
        .stage("c", nap(4, 3))
        .sink(sink)
}

fn expected(items: u64) -> Vec<(u64, u64)> {
    (0..items)
        .map(|x| (x, ((x * 10 + 1) * 10 + 2) * 10 + 3))
        .collect()
}

fn machines(name: &str, text: &str) -> MachineFile {
    MachineFile::parse(Path::new(name), text).unwrap()
}

/// One cluster of four nodes; the node computing the heavy stage slows five times after 40
/// items: the controller drains, re-calibrates, remaps it away, and every item comes once,
/// in order.
#[test]
fn a_slowed_node_is_remapped_and_every_item_comes_once_in_order() {
    let items = 120;
    let slowed = Arc::new(AtomicU64::new(NONE));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Collect {
        seen: seen.clone(),
        slow_after: Some((40, slowed.clone())),
    };
    let config = ConfigFile::parse(
        Path::new("run.toml"),
        "[run]\nstatistics_interval = 0\n[pipeline]\nthreshold = 1.5\ndetection_items = 4\n\
         mapping = \"greedy\"\n",
    )
    .unwrap();
    let prepared = Prepared {
        pipeline: config.pipeline().unwrap(),
        config,
        machines: machines("main.hosts", "localhost # cluster=main\nn1\nn2\nn3\nn4\n"),
        complete: pipeline(items, slowed.clone(), sink),
    };
    let outcome = play_in_threads(prepared).unwrap();
    let PipeOutcome::Controller { stats, .. } = outcome else {
        panic!("rank 0 is the controller");
    };
    assert_eq!(*seen.lock().unwrap(), expected(items));
    assert_eq!(stats.items, items);
    let rank = slowed.load(Ordering::Relaxed);
    assert!((1..=4).contains(&rank), "a node was slowed: {rank}");
    let heavy_on = |hosts: &[String]| hosts.iter().any(|h| *h == format!("b: n{rank}"));
    assert!(heavy_on(&stats.mappings[0].hosts), "{}", stats.summary());
    assert!(stats.remaps() >= 1, "{}", stats.summary());
    assert!(stats
        .decisions
        .iter()
        .any(|d| matches!(d.decision, DecisionKind::Drain { group: 1, .. })));
    // Algorithm 5.1 on the new calibration leaves the slowest node out.
    let last = stats.mappings.last().unwrap();
    assert!(
        !last.hosts.iter().any(|h| h.ends_with(&format!("n{rank}"))),
        "the slowed node is left out: {:?}",
        last.hosts
    );
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two clusters: the main one's controller and one node, a far one's head and three nodes,
/// over a QUIC link on loopback; the model maps stages on the far nodes, so items cross the
/// link both ways, and come once each, in order.
#[test]
fn items_cross_a_link_between_two_clusters() {
    let dir = std::env::temp_dir().join(format!("hmw-pipeline-two-{}", std::process::id()));
    let names = ["main-far".to_owned(), "far-main".to_owned()];
    hmw_cm::keygen::generate(&dir, &names, &[]).unwrap();
    let port = free_udp_port();
    let main = machines(
        "main.hosts",
        &format!(
            "localhost # cluster=main\nm1\nlocalhost # M 1 {port} name=main-far peer=far-main \
             cluster=far bind=127.0.0.1\n"
        ),
    );
    let far = machines(
        "far.hosts",
        &format!(
            "localhost # cluster=far\nf1\nf2\nf3\nlocalhost # S 0 {port} 127.0.0.1 \
             name=far-main peer=main-far\n"
        ),
    );
    let text = format!(
        "[run]\nstatistics_interval = 0\n[cm]\ncerts = \"{}\"\nlost_after_s = 20\n\
         [pipeline]\nthreshold = \"never\"\n\
         [[pipeline.cluster]]\nname = \"main\"\nlan_bytes_per_s = 1e9\n\
         [[pipeline.cluster]]\nname = \"far\"\nlan_bytes_per_s = 1e9\nwan_in_bytes_per_s = 1e8\n\
         wan_out_bytes_per_s = 1e8\nwan_rtt_s = 0.001\n",
        dir.display()
    );
    let config = ConfigFile::parse(&dir.join("run.toml"), &text).unwrap();
    let pipeline_config: PipelineConfig = config.pipeline().unwrap();
    let items = 60;
    let slowed = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let far_run = {
        let (config, pipeline_config, slowed) =
            (config.clone(), pipeline_config.clone(), slowed.clone());
        thread::spawn(move || {
            let sink = Collect {
                seen: Arc::default(),
                slow_after: None,
            };
            play_in_threads(Prepared {
                config,
                pipeline: pipeline_config,
                machines: far,
                complete: pipeline(0, slowed, sink),
            })
            .map(|_| ())
        })
    };
    let sink = Collect {
        seen: seen.clone(),
        slow_after: None,
    };
    let outcome = play_in_threads(Prepared {
        config,
        pipeline: pipeline_config,
        machines: main,
        complete: pipeline(items, slowed, sink),
    })
    .unwrap();
    far_run.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let PipeOutcome::Controller { stats, .. } = outcome else {
        panic!("rank 0 of the main cluster is the controller");
    };
    assert_eq!(*seen.lock().unwrap(), expected(items));
    let mapping = &stats.mappings[0];
    assert!(
        mapping
            .groups
            .iter()
            .any(|g| g.replicas.iter().any(|r| r.cluster == 1)),
        "some stage runs on the far cluster: {:?}",
        mapping.hosts
    );
    let cms: Vec<_> = stats
        .ranks
        .iter()
        .filter_map(|(_, r)| r.link.as_ref())
        .collect();
    assert_eq!(cms.len(), 2, "both CMs report their link");
    assert!(cms.iter().all(|l| l.bytes_sent > 0 && l.bytes_received > 0));
}
