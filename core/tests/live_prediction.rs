//! The master's live prediction counts the work its tasks under way have done: scripted runs
//! of the master's core, its ranks answered by hand, checked against the model page's
//! (102)-(105) worked out by hand.

use std::{collections::BTreeMap, path::Path, time::Duration};

use hmw_core::{
    config::RunConfig,
    live_feed::LiveRecord,
    machinefile::MachineFile,
    protocol::{decode, encode, LinkState, ToMaster, ToWorker, WireResult},
    roles::{MasterCore, Output, ProblemSource},
    scheduler::OnDemand,
    stats::ProgressSample,
    Problem, Task, TaskId, TaskResult, WorkerContext,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Unit;

impl Task for Unit {
    type Output = Unit;
    fn execute(self, _: &WorkerContext) -> Unit {
        Unit
    }
}

impl TaskResult for Unit {
    fn join(&mut self, _: Unit) -> Result<(), Unit> {
        Ok(())
    }
}

/// `tasks` tasks whose work only their results tell.
struct Units {
    tasks: u64,
    handed: u64,
}

impl Problem for Units {
    type Task = Unit;
    fn next_task(&mut self) -> Option<Unit> {
        (self.handed < self.tasks).then(|| {
            self.handed += 1;
            Unit
        })
    }
    fn gather(&mut self, _: TaskId, _: Unit) {}
    fn task_count(&self) -> Option<u64> {
        Some(self.tasks)
    }
}

/// The progress sample at 6 s of [`run`].
fn sample_at_6(
    hosts: &str,
    seconds: impl Fn(usize, u64) -> u64,
    extra: Vec<(u64, usize, ToMaster)>,
) -> ProgressSample {
    run(hosts, seconds, extra)
        .into_iter()
        .map(|record| record.sample)
        .find(|s| (s.t_s - 6.0).abs() < 1e-9)
        .expect("a progress sample at 6 s")
}

/// Runs 12 tasks on the ranks of `hosts` (rank 0 the master), a progress line every second:
/// each rank answers `Ready` at 0 s, and its `n`-th task (from 1) after `seconds(rank, n)`
/// seconds with as many basic operations; `extra` messages come at the seconds given. Returns
/// the live feed's record of each progress line, checked against the statistics' timeline.
fn run(
    hosts: &str,
    seconds: impl Fn(usize, u64) -> u64,
    extra: Vec<(u64, usize, ToMaster)>,
) -> Vec<LiveRecord> {
    let machines = MachineFile::parse(Path::new("hosts"), hosts).unwrap();
    let config = RunConfig {
        statistics_interval: 1.0,
        worker_buffers: 1,
        reassign_last_task: false,
        ..Default::default()
    };
    let problem = Units {
        tasks: 12,
        handed: 0,
    };
    let mut master = MasterCore::new(
        &machines,
        config,
        Box::new(OnDemand),
        ProblemSource::new(problem),
    );
    let mut out = Vec::new();
    master.start(Duration::ZERO, &mut out).unwrap();
    // Messages to the master by the second they arrive at.
    let mut due: BTreeMap<u64, Vec<(usize, ToMaster)>> = BTreeMap::new();
    let ranks = machines.ranks.len();
    due.entry(0)
        .or_default()
        .extend((1..ranks).map(|rank| (rank, ToMaster::Ready { room: 1 })));
    for (at, rank, message) in extra {
        due.entry(at).or_default().push((rank, message));
    }
    let mut tasks_of = vec![0u64; ranks];
    let mut records = Vec::new();
    let mut second = 0;
    while !master.is_done() {
        let now = Duration::from_secs(second);
        for (from, message) in due.remove(&second).unwrap_or_default() {
            master
                .handle(now, from, &encode(&message), &mut out)
                .unwrap();
        }
        master.on_timer(now, &mut out);
        if out.iter().any(|o| matches!(o, Output::Progress(_))) {
            records.push(
                master
                    .live_record(0)
                    .expect("a record after a progress line"),
            );
        }
        for output in out.drain(..) {
            let Output::Send { to, bytes } = output else {
                continue;
            };
            let (after, reply) = match decode::<ToWorker>(&bytes, "to worker").unwrap() {
                ToWorker::Tasks(tasks) => {
                    tasks_of[to] += 1;
                    let took = seconds(to, tasks_of[to]);
                    let result = WireResult {
                        ids: vec![tasks[0].id].into(),
                        operations: took as f64,
                        busy_s: took as f64,
                        decode_s: 0.0,
                        encode_s: 0.0,
                        body: encode(&Unit),
                    };
                    (took, ToMaster::Result { result, room: 1 })
                }
                ToWorker::Stop => (0, ToMaster::Bye { report: None }),
                ToWorker::Join(_) => panic!("no join factor here"),
            };
            // A result comes when its task is done; a stop is answered at once.
            due.entry(second + after).or_default().push((to, reply));
        }
        if due.keys().next().is_some_and(|&next| next == second) {
            continue;
        }
        second += 1;
        assert!(second < 60, "the run does not end");
    }
    let (stats, _) = master.finish();
    let samples: Vec<&ProgressSample> = records.iter().map(|r| &r.sample).collect();
    assert_eq!(samples, stats.progress.iter().collect::<Vec<_>>());
    records
}

/// Two workers of one basic operation per second. Worker 1's tasks take 1 s each; worker 2's
/// first takes 1 s and its second 7 s. At 6 s seven results of one operation are in, worker 1
/// has just started its seventh task and worker 2 has run its second for 5 s. With it censored
/// at 5 (102)-(105): the largest observation is censored and counts as an event (Efron),
/// S = 1/8 from 1 to 5, so a task's mean work is 1 + 4/8 = 1.5; the 3 tasks not started at 1.5,
/// worker 1's (just begun) at 1.5 more and worker 2's at 0 more: 6 operations left, 3 s at 2
/// per second, plus one task time (1 s) to finish: 10 s in all. The results alone (5 tasks
/// left at 1 each) said 9.5 s.
#[test]
fn the_prediction_counts_the_work_of_the_tasks_under_way() {
    let at_6 = sample_at_6(
        &"localhost\n".repeat(3),
        |rank, n| if rank == 2 && n == 2 { 7 } else { 1 },
        Vec::new(),
    );
    assert_eq!(at_6.tasks_done, 7, "{at_6:?}");
    let total = at_6.predicted_total_s.expect("a prediction");
    assert!((total - 10.0).abs() < 1e-9, "{at_6:?}");
}

/// The same with worker 2 a cluster behind a CM of one worker: while its link is up its task
/// under way counts as above; once its CM reports the link down (at 3 s), nothing is known of
/// its progress and it counts as a task not started: the prediction is the results' alone.
#[test]
fn a_cluster_whose_link_is_down_tells_nothing_of_its_tasks_under_way() {
    let hosts = "localhost\nlocalhost\nlocalhost # M 1 7000 name=far workers=1\n";
    let link = |connected| LinkState {
        connected,
        tasks_waiting: false,
        send_bytes_per_s: 0.0,
        recv_bytes_per_s: 0.0,
        rtt_s: 0.0,
        ..LinkState::default()
    };
    let seconds = |rank, n| if rank == 2 && n == 2 { 7 } else { 1 };
    let up = sample_at_6(hosts, seconds, vec![(3, 2, ToMaster::Link(link(true)))]);
    let down = sample_at_6(hosts, seconds, vec![(3, 2, ToMaster::Link(link(false)))]);
    assert_eq!((up.tasks_done, down.tasks_done), (7, 7));
    let (up, down) = (
        up.predicted_total_s.unwrap(),
        down.predicted_total_s.unwrap(),
    );
    assert!((up - 10.0).abs() < 1e-9, "{up}");
    assert!((down - 9.5).abs() < 1e-9, "{down}");
}

/// The live feed's record at 6 s of the run above whose CM reported its link down at 3 s:
/// worker 1 delivered six tasks and computes its seventh; the cluster behind the CM delivered
/// one and holds its second, its link down as last reported.
#[test]
fn the_live_record_tells_each_worker_and_each_cluster_behind_a_cm() {
    let hosts = "localhost\nlocalhost\nlocalhost # M 1 7000 name=cm cluster=far workers=1\n";
    let down = LinkState {
        connected: false,
        reconnections: 2,
        ..LinkState::default()
    };
    let records = run(
        hosts,
        |rank, n| if rank == 2 && n == 2 { 7 } else { 1 },
        vec![(3, 2, ToMaster::Link(down))],
    );
    let at_6 = records
        .iter()
        .find(|r| (r.sample.t_s - 6.0).abs() < 1e-9)
        .unwrap();
    assert_eq!(at_6.total_tasks, Some(12));
    assert!(at_6.adaptations.is_empty());
    let [worker] = &at_6.workers[..] else {
        panic!("one worker: {at_6:?}")
    };
    assert_eq!(
        (worker.rank, worker.tasks_done, worker.held, worker.lost),
        (1, 6, 1, false)
    );
    assert_eq!(worker.busy_s, 6.0);
    let [far] = &at_6.linked[..] else {
        panic!("one cluster behind a CM: {at_6:?}")
    };
    assert_eq!(
        (
            far.name.as_str(),
            far.cm_rank,
            far.workers,
            far.tasks_done,
            far.held
        ),
        ("far", 2, Some(1), 1, 1)
    );
    assert_eq!(far.link, Some(down));
    // Before the report at 3 s the master knew nothing of the link.
    assert_eq!(records[0].linked[0].link, None);
}
