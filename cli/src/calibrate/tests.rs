//! The calibration's sizing and arithmetic: the LAN worker counts and runs, a workers' run
//! done again until long enough, and the figures the model takes of a worker.

use std::{cell::Cell, fs};

use anyhow::Result;
use hmw_core::stats::{RunStats, WorkerStats};
use hmw_model::plan::Plan;
use indicatif::ProgressBar;

use super::{
    args::CalibrateArgs,
    lan::{lan_worker_counts, LanCalibration, LanRuns},
    worker_figures::worker_figures,
    workers::WorkerRuns,
};

#[test]
fn worker_counts_one_half_all() {
    assert!(lan_worker_counts(0).is_empty());
    assert_eq!(lan_worker_counts(1), [1]);
    assert_eq!(lan_worker_counts(2), [1, 2]);
    assert_eq!(lan_worker_counts(3), [1, 2, 3]);
    assert_eq!(lan_worker_counts(4), [1, 2, 4]);
    assert_eq!(lan_worker_counts(7), [1, 4, 7]);
}

/// `hmw calibrate` parsed from `args` (the plan's path and options).
fn calibrate_args(args: &[&str]) -> CalibrateArgs {
    #[derive(clap::Parser)]
    struct Command {
        #[command(flatten)]
        args: CalibrateArgs,
    }
    <Command as clap::Parser>::parse_from(std::iter::once("calibrate").chain(args.iter().copied()))
        .args
}

#[test]
fn a_short_workers_run_is_done_again_long_enough() {
    // A worker computes 0.1 s per task: 4 tasks are 0.4 s, under the 2 s asked for.
    let sizing = WorkerRuns::new(&calibrate_args(&["plan.toml", "--tasks", "4"]));
    let runs = std::cell::RefCell::new(Vec::new());
    let run = |tasks: u64| -> Result<f64> {
        runs.borrow_mut().push(tasks);
        Ok(0.1 * tasks as f64)
    };
    let busy_s = sizing.long_enough(run, |busy_s| *busy_s).unwrap();
    assert_eq!(*runs.borrow(), [4, 25]);
    assert!(busy_s >= 2.0);
    // The size found is kept for the next call (the load repeated under the WAN probe).
    sizing.long_enough(run, |busy_s| *busy_s).unwrap();
    assert_eq!(*runs.borrow(), [4, 25, 25]);

    // A run that stays short is given up on after a few tries, not repeated forever.
    let stuck = WorkerRuns::new(&calibrate_args(&["plan.toml", "--tasks", "4"]));
    let tries = Cell::new(0);
    let short = |_| -> Result<()> {
        tries.set(tries.get() + 1);
        Ok(())
    };
    stuck.long_enough(short, |_| 0.01).unwrap();
    assert_eq!(tries.get(), 1 + WorkerRuns::RETRIES);
}

#[test]
fn lan_runs_count_runs_and_zero_measures_no_lan() {
    let plan = Plan::from_toml_str(
        &fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../configs/validation/local-comm.toml"
        ))
        .expect("the scenario is readable"),
    )
    .expect("the scenario is a plan");
    let bar = ProgressBar::hidden();
    let measured = |lan_runs: &str| {
        let args = calibrate_args(&["plan.toml", "--lan-runs", lan_runs, "--lan-seconds", "0"]);
        let mut lan = LanCalibration {
            args: &args,
            plan: &plan,
            bar: &bar,
            rates: [None; 3],
        };
        let mut runs = Vec::new();
        let figures = lan
            .measure("main", 4, |count, tasks| {
                runs.push(count);
                Ok(RunStats {
                    wall_s: tasks as f64 * 1e-3,
                    ..RunStats::default()
                })
            })
            .expect("fake runs measure");
        (
            runs,
            figures.iter().map(|r| r.values.len()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(measured("0"), (vec![], vec![]));
    // One, half and all of four workers, each run twice.
    assert_eq!(measured("2"), (vec![1, 1, 2, 2, 4, 4], vec![2, 2, 2]));
}

#[test]
fn lan_figures() {
    let runs = LanRuns {
        workers: 2,
        tasks_per_run: 10,
        values: vec![1.0, 2.0, 3.0],
        discarded: 0,
        gaps: Default::default(),
    };
    assert_eq!(runs.mean(), 2.0);
    assert_eq!(runs.std_dev(), 1.0);
    assert_eq!((runs.min(), runs.max()), (1.0, 3.0));
    assert_eq!(runs.service_scv(None), None);
    // gaps of 1, 2 and 3 s: mean 2, sample variance 1
    let with_gaps = |gaps_s: &[f64]| {
        let mut gaps = hmw_core::stats::ResultGaps::default();
        for &gap_s in gaps_s {
            gaps.add(gap_s);
        }
        LanRuns {
            gaps,
            values: vec![1.0],
            ..runs
        }
    };
    let lan = with_gaps(&[1.0, 2.0, 3.0]);
    let scv = lan.service_scv(None).unwrap();
    assert!((scv - 0.25).abs() < 1e-12, "{scv}");
    // a master of 0.1 s per task does not pace gaps of 2 s: they are the LAN's
    assert_eq!(lan.service_scv(Some(0.1)), Some(scv));
    assert_eq!(lan.master_paced(Some(0.1)), None);
    // gaps of 50 to 150 us behind a master of 100 us per task are the master's
    let paced = with_gaps(&[5e-5, 1.5e-4, 5e-5, 1.5e-4]);
    assert_eq!(paced.service_scv(Some(1e-4)), None);
    let (gap_s, master_s) = paced.master_paced(Some(1e-4)).unwrap();
    assert!((gap_s - 1e-4).abs() < 1e-12 && master_s == 1e-4);
    // no gap counted: nothing to say
    assert_eq!(with_gaps(&[]).master_paced(Some(1e-4)), None);
}

#[test]
fn the_communication_during_the_work_is_counted_once_at_the_capacity() {
    // 10 tasks executed 4 times on a 0.4-core quota: the compute thread worked 3 s (busy
    // 2.9, decoding 0.08, encoding 0.02) at a share of 0.377 of a core, because the
    // communication thread took the rest of the 0.4 meanwhile (the process used 1.2 s of
    // CPU over the 3 s, the first task in to the last result out 3 s too).
    let worker = WorkerStats {
        tasks_computed: 10,
        busy_s: 2.9,
        decode_s: 0.08,
        encode_s: 0.02,
        compute_cpu_s: 1.13,
        cpu_s: 1.2,
        active_s: 3.0,
        ops_per_s: 2.0e9,
        ..WorkerStats::default()
    };
    let share = 1.13 / 3.0;
    let figures = worker_figures(&worker, 6e6, 4, true);
    let own = figures.own.unwrap();
    assert!((own.capacity - 0.4).abs() < 1e-12, "{own:?}");
    // Executing at 0.4 rather than at the share: 6 % faster.
    assert!(
        (figures.perf - 2.0e9 * 0.4 / share).abs() < 1e-3,
        "{figures:?}"
    );
    // 8.51 ms of CPU per task on messages (0.07 s beside the compute thread, one decoding
    // and the encoding at the share), 21.3 ms at 0.4 of a core.
    let own_cpu_s = (0.07 + (0.02 + 0.02) * share) / 10.0;
    let own_s = 6e6 / own.bytes_per_s;
    assert!((own_s - own_cpu_s / 0.4).abs() < 1e-12, "{own_s}");
    // Without (106) (`[model] capacity = false`): both at the compute thread's share.
    let at_share = worker_figures(&worker, 6e6, 4, false);
    assert_eq!(at_share.perf, 2.0e9);
    let own = at_share.own.unwrap();
    assert_eq!(own.capacity, share);
    assert!((6e6 / own.bytes_per_s - own_cpu_s / share).abs() < 1e-12);
    // Between its parts it waited for the next (3.1 s from first in to last out): some of
    // its communication ran then, and the capacity is bounded by the CPU over that time.
    let waited = WorkerStats {
        active_s: 3.1,
        ..worker.clone()
    };
    let capacity = worker_figures(&waited, 6e6, 4, true).own.unwrap().capacity;
    assert!((capacity - 1.2 / 3.1).abs() < 1e-12, "{capacity}");
    // Never below the share; without `active_s` (older statistics), the share.
    for active_s in [6.0, 0.0] {
        let worker = WorkerStats {
            active_s,
            ..worker.clone()
        };
        let figures = worker_figures(&worker, 6e6, 4, true);
        assert_eq!(figures.own.unwrap().capacity, share);
        assert!((figures.perf - 2.0e9).abs() < 1e-3, "{figures:?}");
    }
}

/// `tput_own` of a worker whose capacity is unknown (no `active_s`), 4 executions a task.
fn own_rate(worker: &WorkerStats, comm_bytes: f64) -> f64 {
    let figures = worker_figures(worker, comm_bytes, 4, true);
    let own = figures.own.expect("a worker that computes");
    assert_eq!(
        own.capacity,
        worker.compute_cpu_s / (worker.busy_s + worker.decode_s + worker.encode_s)
    );
    assert!((figures.perf - worker.ops_per_s).abs() <= 1e-12 * worker.ops_per_s);
    own.bytes_per_s
}

#[test]
fn a_workers_own_communication_is_its_cpu_time_on_messages_at_its_share() {
    // 10 tasks executed 4 times: the compute thread worked 2.1 s (busy 2, decoding 0.08,
    // encoding 0.02) on 0.84 s of CPU, a share of 0.4 of a core; the process used 0.054 s
    // more, and one decoding per task and the encoding 0.04 s of the compute thread's
    // at that share: 7 ms of CPU per task on messages, 17.5 ms of the worker's time.
    let worker = WorkerStats {
        tasks_computed: 10,
        busy_s: 2.0,
        decode_s: 0.08,
        encode_s: 0.02,
        compute_cpu_s: 0.84,
        cpu_s: 0.894,
        ..WorkerStats::default()
    };
    let rate = own_rate(&worker, 6e6);
    assert!((rate - 6e6 / 0.0175).abs() < 1e-6 * rate, "{rate}");
    // Of 0.04 s its communication thread spent waiting while the tasks computed, a run's
    // tasks (one execution, not four) wait a quarter: 0.03 s less, 4 ms of CPU per task,
    // 10 ms of the worker's time.
    let waiting = WorkerStats {
        waiting_cpu_s: 0.04,
        ..worker.clone()
    };
    let rate = own_rate(&waiting, 6e6);
    assert!((rate - 6e6 / 0.010).abs() < 1e-6 * rate, "{rate}");
    // A worker on a tenth of a core whose decoding took about as long as its compute
    // thread's CPU time (tb-matmul-two-clusters' spain-2, its tasks split in 64 parts):
    // it decoded and executed at its share, 0.089 of a core, and spent 1.02 ms of CPU per
    // part on messages, 11.4 ms of its time.
    let throttled = WorkerStats {
        tasks_computed: 247,
        busy_s: 3.8536,
        decode_s: 0.27357,
        encode_s: 0.10317,
        compute_cpu_s: 0.37855,
        cpu_s: 0.61420,
        ..WorkerStats::default()
    };
    let rate = own_rate(&throttled, 98_304.0);
    let own_ms = 1e3 * 98_304.0 / rate;
    assert!((own_ms - 11.36).abs() < 0.01, "{own_ms}");
    // Tasks that sleep leave the CPU free, though the compute thread's CPU (its decoding
    // and encoding, its waits) can be 8 % of its time (local-comm's calibration, 2 MiB
    // tasks of 4 ms of sleep, 4 executions): no rate; no CPU counted, or none on
    // messages: no rate.
    let sleeping = WorkerStats {
        tasks_computed: 149,
        busy_s: 2.555,
        decode_s: 0.120,
        encode_s: 0.013,
        compute_cpu_s: 0.2309,
        cpu_s: 0.3737,
        tasks_wait: true,
        ..worker.clone()
    };
    assert_eq!(worker_figures(&sleeping, 6e6, 4, true).own, None);
    let unmeasured = WorkerStats {
        compute_cpu_s: 0.0,
        cpu_s: 0.0,
        ..worker.clone()
    };
    assert_eq!(worker_figures(&unmeasured, 6e6, 4, true).own, None);
    let nothing_beside = WorkerStats {
        decode_s: 0.0,
        encode_s: 0.0,
        cpu_s: 0.84,
        ..worker
    };
    assert_eq!(worker_figures(&nothing_beside, 6e6, 4, true).own, None);
}
