//! This machine: how busy its processors are (to wait for a quiet machine before a
//! calibration), how many it has, its load.

use std::time::{Duration, Instant};

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
    let (mut total, mut idle) = processor_times()?;
    let busy = loop {
        std::thread::sleep(Duration::from_secs(1));
        let (total2, idle2) = processor_times()?;
        let busy =
            1.0 - idle2.saturating_sub(idle) as f64 / total2.saturating_sub(total).max(1) as f64;
        (total, idle) = (total2, idle2);
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
    fn this_machine() {
        assert!(cores() >= 1);
        assert_eq!(load_average().split(' ').count(), 3);
    }
}
