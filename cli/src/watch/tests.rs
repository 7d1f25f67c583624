//! The tracker on scripted runs: phases, figures merged from the feeds, warnings, the end,
//! and the file's bound.

use hmw_core::{
    live_feed::{LinkedLive, LiveRecord, WorkerLive},
    protocol::LinkState as WireLink,
    stats::{Adaptation, ClusterEstimate, ClusterReport, ClusterStats, ProgressSample, RunStats},
};

use super::tracker::{ClusterSetup, PredictedFigures, RunSetup, Tracker};
use crate::live_state::{
    limits::{EVENTS_KEPT, HISTORY_POINTS, MAX_BYTES},
    ClusterPhase, LiveState,
};

const T0: f64 = 1_000_000.0;

/// lyon (main, 2 workers) feeding spain (3 workers) feeding far (1 worker).
fn tracker() -> Tracker {
    let setup = |name: &str, parent: Option<&str>, workers| ClusterSetup {
        name: name.into(),
        parent: parent.map(str::to_owned),
        workers,
        predicted: Some(PredictedFigures {
            tasks_per_s: 10.0 * workers as f64,
            tasks: (100, 110),
            efficiency: (0.99, 0.95),
        }),
    };
    let run = RunSetup {
        clusters: vec![
            setup("lyon", None, 2),
            setup("spain", Some("lyon"), 3),
            setup("far", Some("spain"), 1),
        ],
        prediction: None,
    };
    Tracker::new("run", run, 1.0, true, "/work", 42, T0)
}

fn sample(t_s: f64, done: u64, clusters: Vec<ClusterEstimate>) -> ProgressSample {
    ProgressSample {
        t_s,
        tasks_done: done,
        tasks_per_s: done as f64 / t_s,
        eta_s: None,
        predicted_total_s: Some(20.0),
        predicted_total_interval_s: Some((19.0, 22.0)),
        predicted_efficiency: Some(0.9),
        clusters,
    }
}

fn worker(rank: usize, done: u64, held: u64) -> WorkerLive {
    WorkerLive {
        rank,
        host: format!("host-{rank}"),
        tasks_done: done,
        held,
        busy_s: done as f64 / 10.0,
        tasks_computed: done,
        lost: false,
    }
}

fn estimate(name: &str, rate: f64) -> ClusterEstimate {
    ClusterEstimate {
        name: name.into(),
        tasks_per_s: rate,
        busy_share: Some(0.75),
        bottleneck: Some("compute".into()),
        remaining_tasks: Some(50.0),
        ..Default::default()
    }
}

/// The main master's record at `t_s`: its workers did `own` tasks in all, spain `spain`.
fn main_record(t_s: f64, own: u64, spain: u64, spain_link: Option<WireLink>) -> LiveRecord {
    LiveRecord {
        cluster: "lyon".into(),
        started_unix_s: Some(T0 + 2.0),
        total_tasks: Some(300),
        sample: sample(
            t_s,
            own + spain,
            vec![estimate("lyon", 20.0), estimate("spain", 30.0)],
        ),
        workers: vec![worker(1, own / 2, 2), worker(2, own - own / 2, 1)],
        linked: vec![LinkedLive {
            name: "spain".into(),
            cm_rank: 3,
            workers: Some(4),
            tasks_done: spain,
            held: 9,
            link: spain_link,
            ..Default::default()
        }],
        adaptations: Vec::new(),
    }
}

/// spain's sub-master's record: its own 3 workers, and far behind it.
fn spain_record(t_s: f64) -> LiveRecord {
    LiveRecord {
        cluster: "spain".into(),
        started_unix_s: Some(T0 + 2.5),
        total_tasks: None,
        sample: sample(t_s, 12, vec![estimate("spain", 99.0), estimate("far", 5.0)]),
        workers: vec![worker(1, 4, 2), worker(2, 4, 2), worker(3, 4, 1)],
        linked: vec![LinkedLive {
            name: "far".into(),
            cm_rank: 5,
            tasks_done: 3,
            held: 2,
            ..Default::default()
        }],
        adaptations: vec![Adaptation {
            t_s,
            cluster: "far".into(),
            action: "credit 4".into(),
            reason: "slow".into(),
        }],
    }
}

fn cluster<'a>(state: &'a LiveState, name: &str) -> &'a crate::live_state::ClusterState {
    state.clusters.iter().find(|c| c.name == name).unwrap()
}

fn phases(state: &LiveState) -> Vec<ClusterPhase> {
    state.clusters.iter().map(|c| c.phase).collect()
}

#[test]
fn each_cluster_takes_its_figures_from_the_master_that_feeds_it() {
    let mut t = tracker();
    for name in ["far", "spain", "lyon"] {
        t.started(name, 7, T0 + 1.0);
    }
    let link = WireLink {
        connected: true,
        rtt_s: 0.04,
        send_bytes_per_s: 1000.0,
        recv_bytes_per_s: 5000.0,
        reconnections: 1,
        blocks_resent: 2,
        packets_lost: 3,
        ..WireLink::default()
    };
    t.record(0, main_record(1.0, 10, 5, Some(link)), T0 + 3.0);
    t.record(1, spain_record(1.0), T0 + 3.1);
    let state = t.state(T0 + 3.2).clone();
    assert_eq!(state.started_unix_s, Some(T0 + 2.0));
    assert_eq!(state.progress.tasks_done, 15);
    assert_eq!(state.progress.tasks_total, Some(300));
    assert_eq!(state.progress.predicted_low_s, Some(19.0));
    let lyon = cluster(&state, "lyon");
    assert_eq!(
        (lyon.tasks_done, lyon.in_flight, lyon.held),
        (10, Some(3), Some(3))
    );
    assert_eq!(lyon.tasks_per_s, Some(20.0));
    assert_eq!(lyon.predicted_tasks_per_s, Some(20.0));
    assert_eq!(lyon.worker_list.len(), 2);
    // spain: done and in flight as lyon counts them, held as its own master does; its rate
    // from lyon's estimate, not its own master's (99).
    let spain = cluster(&state, "spain");
    assert_eq!(
        (spain.tasks_done, spain.in_flight, spain.held),
        (5, Some(9), Some(5))
    );
    assert_eq!(spain.tasks_per_s, Some(30.0));
    assert_eq!(spain.efficiency, Some(0.75));
    assert_eq!(spain.worker_list[0].busy_share, Some(0.4));
    let far = cluster(&state, "far");
    assert_eq!(
        (far.tasks_done, far.in_flight, far.held),
        (3, Some(2), None)
    );
    assert_eq!(far.tasks_per_s, Some(5.0));
    assert_eq!(phases(&state), [ClusterPhase::Computing; 3]);
    let spain_link = &state.links[0];
    assert_eq!(
        (spain_link.cluster.as_str(), spain_link.parent.as_str()),
        ("spain", "lyon")
    );
    assert!(spain_link.reported && spain_link.connected);
    assert_eq!(spain_link.rtt_ms, 40.0);
    assert_eq!(
        (
            spain_link.reconnections,
            spain_link.blocks_resent,
            spain_link.packets_lost
        ),
        (1, 2, 3)
    );
    assert!(!state.links[1].reported, "far's link: no report yet");
    assert_eq!(state.adaptations.len(), 1);
    assert!(state
        .events
        .iter()
        .any(|e| e.text == "re-planning: far credit 4 (slow)"));
    assert_eq!(state.history.len(), 1);
    // Taken at the main master's record, before spain's told of far.
    assert_eq!(state.history[0].clusters_done, [10, 5, 0]);
    assert!(state.warnings.is_empty(), "{:?}", state.warnings);
}

#[test]
fn phases_from_the_processes_and_the_feeding_master() {
    let mut t = tracker();
    assert_eq!(phases(t.state(T0)), [ClusterPhase::Starting; 3]);
    for name in ["far", "spain", "lyon"] {
        t.started(name, 7, T0 + 1.0);
    }
    assert_eq!(phases(t.state(T0 + 1.0)), [ClusterPhase::Starting; 3]);
    let mut lost = main_record(2.0, 10, 0, None);
    lost.linked[0].lost = true;
    t.record(0, lost, T0 + 2.0);
    let state = t.state(T0 + 2.0);
    assert_eq!(state.clusters[0].phase, ClusterPhase::Computing);
    assert_eq!(state.clusters[1].phase, ClusterPhase::Lost);
    assert!(state.warnings.iter().any(|w| w.contains("spain is lost")));
    let mut back = main_record(3.0, 12, 1, None);
    back.linked[0].rejoins = 1;
    t.record(0, back, T0 + 3.0);
    assert_eq!(t.state(T0 + 3.0).clusters[1].phase, ClusterPhase::Rejoined);
    // far ends with an error, then the launcher starts it again.
    t.ended("far", false, "exit status: 1");
    let state = t.state(T0 + 3.5);
    assert_eq!(state.clusters[2].phase, ClusterPhase::Failed);
    let failed = "cluster far failed (exit status: 1); its log: /work/far.log";
    assert!(
        state.warnings.iter().any(|w| w == failed),
        "{:?}",
        state.warnings
    );
    assert!(state
        .events
        .iter()
        .any(|e| e.text == "cluster far: failed (exit status: 1)"));
    t.started("far", 8, T0 + 4.0);
    let state = t.state(T0 + 4.0);
    assert_eq!(state.clusters[2].phase, ClusterPhase::Restarted);
    assert_eq!(state.clusters[2].starts, 2);
    assert!(state
        .events
        .iter()
        .any(|e| e.text == "cluster far started again (pid 8)"));
    // A warning is logged once, however many states repeat it.
    let logged = |t: &mut Tracker| {
        t.state(T0 + 5.0)
            .events
            .iter()
            .filter(|e| e.text.contains("spain is lost"))
            .count()
    };
    assert_eq!(logged(&mut t), 1);
    assert_eq!(logged(&mut t), 1);
}

#[test]
fn a_link_down_and_a_silent_master_are_warned() {
    let mut t = tracker();
    t.started("lyon", 1, T0);
    t.started("spain", 2, T0);
    let down = WireLink {
        connected: false,
        ..WireLink::default()
    };
    t.record(0, main_record(1.0, 4, 1, Some(down)), T0 + 1.0);
    let state = t.state(T0 + 1.0);
    assert!(state
        .warnings
        .contains(&"the link from lyon to spain is down".to_owned()));
    // Figures every second: silent past 3 intervals and 5 s.
    assert!(!t
        .state(T0 + 8.9)
        .warnings
        .iter()
        .any(|w| w.contains("no figures")));
    let silent = t.state(T0 + 10.0).warnings.clone();
    assert!(
        silent
            .iter()
            .any(|w| w
                == "no figures from the master of lyon for 9 s (its feed: /work/lyon.live.jsonl)"),
        "{silent:?}"
    );
}

#[test]
fn the_end_takes_each_clusters_tasks_from_the_statistics() {
    let mut t = tracker();
    for name in ["far", "spain", "lyon"] {
        t.started(name, 7, T0);
    }
    t.record(0, main_record(1.0, 10, 5, None), T0 + 1.0);
    t.ended("lyon", true, "exit status: 0");
    t.ended("spain", true, "exit status: 0");
    let far = ClusterReport {
        name: "far".into(),
        tasks_done: 20,
        ..Default::default()
    };
    let spain_stats = RunStats {
        name: "spain".into(),
        clusters: vec![far],
        ..Default::default()
    };
    let stats = RunStats {
        name: "lyon".into(),
        wall_s: 12.5,
        tasks: 100,
        cluster: ClusterStats {
            tasks_done: 30,
            ..Default::default()
        },
        clusters: vec![ClusterReport {
            name: "spain".into(),
            tasks_done: 70,
            stats: Some(Box::new(spain_stats)),
            ..Default::default()
        }],
        ..Default::default()
    };
    t.finish(
        "completed",
        Some(&stats),
        Some("/work/lyon.stats.json".into()),
        T0 + 15.0,
    );
    let state = t.state(T0 + 15.0).clone();
    let done: Vec<u64> = state.clusters.iter().map(|c| c.tasks_done).collect();
    assert_eq!(done, [30, 70, 20]);
    assert_eq!(state.progress.tasks_done, 100);
    let end = state.end.as_ref().unwrap();
    assert_eq!(
        (end.outcome.as_str(), end.makespan_s, end.tasks),
        ("completed", Some(12.5), Some(100))
    );
    assert_eq!(end.stats_file.as_deref(), Some("/work/lyon.stats.json"));
    // far was still running: the launcher stopped it.
    assert_eq!(
        phases(&state),
        [ClusterPhase::Done, ClusterPhase::Done, ClusterPhase::Failed]
    );
    assert_eq!(
        state.clusters[2].exit.as_deref(),
        Some("stopped at the end of the run")
    );
    assert_eq!(
        state.events.last().unwrap().text,
        "run completed: makespan 12.500 s"
    );
}

#[test]
fn the_file_stays_under_its_bound_and_reads_back() {
    let mut t = tracker();
    t.started("lyon", 1, T0);
    let mut big = main_record(4000.0, 10, 5, None);
    big.workers = (1..=10_000).map(|r| worker(r, 3, 1)).collect();
    for i in 0..(3 * HISTORY_POINTS) {
        let mut record = main_record(1.0 + i as f64, 10, 5, None);
        record.adaptations = vec![Adaptation {
            t_s: i as f64,
            cluster: "spain".into(),
            action: "nt 2".into(),
            reason: "x".repeat(300),
        }];
        t.record(0, record, T0 + i as f64);
    }
    t.record(0, big, T0 + 5000.0);
    let state = t.state(T0 + 5000.0).clone();
    assert!(state.history.len() <= HISTORY_POINTS);
    assert!(state.history.windows(2).all(|w| w[0].t_s < w[1].t_s));
    assert_eq!(
        state.history.last().unwrap().t_s,
        4000.0,
        "the newest point is kept"
    );
    assert_eq!(state.events.len(), EVENTS_KEPT);
    let bytes = t.bytes(T0 + 5000.0);
    assert!(bytes.len() <= MAX_BYTES, "{}", bytes.len());
    let back: LiveState = serde_json::from_slice(&bytes).unwrap();
    let lyon = &back.clusters[0];
    assert_eq!(lyon.worker_list.len() + lyon.workers_omitted, 10_000);
    assert!(lyon.workers_omitted > 0, "10,000 workers do not fit");
}
