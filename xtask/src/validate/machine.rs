//! This machine: how busy its processors are (to wait for a quiet machine before a
//! calibration), how many it has, its load.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::{anyhow, Context, Result};

/// Waits until this machine is quiet before a calibration, at most 60 s: dirty pages written
/// back, then a second in which its processors were at most 10 % busy (time stolen by the
/// hypervisor counted as busy). Says how long it waited and how busy the last second was:
/// `waiting N s for a quiet machine: P % busy`. (In two CI runs, the gate's first
/// calibration, just after the release build, put tb-tsp-hetero's hosts 11 % and 29 % slower
/// than its runs measured a few seconds later; on a quiet machine its calibrations and runs
/// agree within 6 %.)
pub(crate) fn settle() -> Result<String> {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let start = Instant::now();
    let mut before = processor_times()?;
    let busy = loop {
        std::thread::sleep(Duration::from_secs(1));
        let after = processor_times()?;
        let busy = busy_share(before, after);
        before = after;
        if busy <= 0.10 || start.elapsed() >= Duration::from_secs(60) {
            break busy;
        }
    };
    Ok(format!(
        "waiting {:.0} s for a quiet machine: {:.0} % busy",
        start.elapsed().as_secs_f64(),
        100.0 * busy
    ))
}

/// How busy this machine's processors are while a run goes: `/proc/stat` read every 200 ms
/// on a thread of its own, from [`start`](Self::start) to [`stop`](Self::stop), and once
/// more as it stops.
pub(crate) struct BusyRecorder {
    running: Arc<AtomicBool>,
    thread: JoinHandle<BusyTrace>,
}

/// What a [`BusyRecorder`] read: `(unix seconds, all ticks, idle ticks)`, in time order.
#[derive(Debug, Default)]
pub(crate) struct BusyTrace(Vec<(f64, u64, u64)>);

impl BusyRecorder {
    /// Starts reading.
    pub(crate) fn start() -> Self {
        let running = Arc::new(AtomicBool::new(true));
        let thread = std::thread::spawn({
            let running = running.clone();
            move || {
                let mut trace = BusyTrace::default();
                while running.load(Ordering::Relaxed) {
                    trace.read();
                    std::thread::sleep(Duration::from_millis(200));
                }
                trace.read();
                trace
            }
        });
        BusyRecorder { running, thread }
    }

    /// Stops reading: what it read.
    pub(crate) fn stop(self) -> BusyTrace {
        self.running.store(false, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

impl BusyTrace {
    /// One more reading, now.
    fn read(&mut self) {
        if let Ok((total, idle)) = processor_times() {
            self.0.push((unix_now(), total, idle));
        }
    }

    /// The processors busy on average from `from` to `to` (unix seconds), in cores of
    /// `cores`: between the first reading at or after `from` and the last at or before `to`;
    /// `None` when fewer than two readings fall in between.
    pub(crate) fn busy_cores(&self, from: f64, to: f64, cores: usize) -> Option<f64> {
        let inside: Vec<&(f64, u64, u64)> = self
            .0
            .iter()
            .filter(|(t, ..)| *t >= from && *t <= to)
            .collect();
        let (&&(_, total0, idle0), &&(_, total1, idle1)) = (inside.first()?, inside.last()?);
        (total1 > total0).then(|| cores as f64 * busy_share((total0, idle0), (total1, idle1)))
    }
}

/// The share of the processors' time that was busy between two readings of
/// [`processor_times`] (all of it busy when no tick passed).
fn busy_share((total0, idle0): (u64, u64), (total1, idle1): (u64, u64)) -> f64 {
    1.0 - idle1.saturating_sub(idle0) as f64 / total1.saturating_sub(total0).max(1) as f64
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The processors' time so far, all of it and idle, in ticks (`/proc/stat`).
fn processor_times() -> Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").context("cannot read /proc/stat")?;
    let first = stat.lines().next().unwrap_or("");
    parse_processor_times(first)
        .ok_or_else(|| anyhow!("/proc/stat: unexpected first line `{first}`"))
}

/// `cpu user nice system idle iowait irq softirq steal ...`: the sum of those eight, and
/// idle plus iowait.
fn parse_processor_times(line: &str) -> Option<(u64, u64)> {
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    (values.len() == 8).then(|| (values.iter().sum(), values[3] + values[4]))
}

/// The processors this process may run on (`nproc`).
pub(crate) fn cores() -> usize {
    // SAFETY: `set` is a plain bit set, zeroed, that sched_getaffinity fills for this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            return libc::CPU_COUNT(&set) as usize;
        }
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The load averages over 1, 5 and 15 minutes, as `/proc/loadavg` writes them.
pub(crate) fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split(' ').take(3).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processor_times_of_proc_stat() {
        assert_eq!(
            parse_processor_times("cpu  10 1 5 100 4 1 1 2 0 0"),
            Some((124, 104))
        );
        assert_eq!(parse_processor_times("cpu  10 1 5"), None);
        assert_eq!(parse_processor_times("cpu  10 x 5 100 4 1 1 2"), None);
        assert!(processor_times().is_ok());
    }

    #[test]
    fn busy_cores_between_two_readings() {
        let trace = BusyTrace(vec![
            (10.0, 1000, 600),
            (10.2, 1040, 610),
            (10.4, 1080, 620),
            (10.6, 1120, 700),
        ]);
        // From 10.1 to 10.5, the readings at 10.2 and 10.4: 40 ticks, 10 idle: 3/4 of two.
        assert_eq!(trace.busy_cores(10.1, 10.5, 2), Some(1.5));
        assert_eq!(trace.busy_cores(10.1, 10.3, 2), None);
        assert_eq!(BusyTrace::default().busy_cores(0.0, 1.0, 2), None);
        let recorder = BusyRecorder::start();
        std::thread::sleep(Duration::from_millis(500));
        let trace = recorder.stop();
        let busy = trace.busy_cores(0.0, f64::MAX, cores()).unwrap();
        assert!((0.0..=cores() as f64).contains(&busy), "{busy}");
    }

    #[test]
    fn this_machine() {
        assert!(cores() >= 1);
        assert_eq!(load_average().split(' ').count(), 3);
    }
}
