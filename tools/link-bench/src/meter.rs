//! What a run measures: the bytes received, sampled at a fixed interval, the goodput between
//! two times, the CPU time of this process.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

/// CPU time (user + system) used by this process so far, in seconds (Linux).
pub(crate) fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are the
    // 12th and 13th of them, in clock ticks of 1/100 s.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Bytes received, sampled at a fixed interval.
#[derive(Default)]
pub(crate) struct Meter {
    pub(crate) bytes: AtomicU64,
}

#[derive(Serialize, Clone, Copy)]
pub(crate) struct Sample {
    pub(crate) t_s: f64,
    pub(crate) bytes: u64,
}

pub(crate) async fn sample_meter(
    meter: &Meter,
    clock: impl Fn() -> Duration,
    interval: Duration,
    until: Duration,
) -> Vec<Sample> {
    let mut samples = vec![Sample {
        t_s: clock().as_secs_f64(),
        bytes: meter.bytes.load(Ordering::Relaxed),
    }];
    while clock() < until {
        tokio::time::sleep(interval).await;
        samples.push(Sample {
            t_s: clock().as_secs_f64(),
            bytes: meter.bytes.load(Ordering::Relaxed),
        });
    }
    samples
}

/// Goodput in bytes per second between times `from` and `to` (seconds) of the samples.
pub(crate) fn goodput(samples: &[Sample], from: f64, to: f64) -> f64 {
    let at = |t: f64| {
        samples
            .iter()
            .min_by(|a, b| (a.t_s - t).abs().total_cmp(&(b.t_s - t).abs()))
            .copied()
            .expect("samples")
    };
    let (a, b) = (at(from), at(to));
    if b.t_s <= a.t_s {
        return 0.0;
    }
    (b.bytes - a.bytes) as f64 / (b.t_s - a.t_s)
}

pub(crate) fn per_interval_mbit(samples: &[Sample]) -> Vec<Value> {
    samples
        .windows(2)
        .map(|w| {
            let rate = (w[1].bytes - w[0].bytes) as f64 * 8.0 / 1e6 / (w[1].t_s - w[0].t_s);
            json!({"t_s": (w[1].t_s * 100.0).round() / 100.0, "mbit_s": (rate * 100.0).round() / 100.0})
        })
        .collect()
}
