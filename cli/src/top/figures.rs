//! Figures for a person: seconds, rates, clock times, and a cluster's share done.

use crate::live_state::{ClusterPhase, ClusterState, LiveState};

/// `f(value)`, or `-` when there is none.
pub(crate) fn opt<T>(value: Option<T>, f: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| "-".to_owned(), f)
}

/// Seconds as `12.3 s` (or `h:mm:ss` past ten minutes); `-` when unknown.
pub(crate) fn seconds(s: Option<f64>) -> String {
    opt(s, hmw_core::stats::span)
}

/// Bytes per second with a unit prefix, in at most five characters (`950`, `1.9k`, `12M`).
pub(crate) fn bytes_per_s(b: f64) -> String {
    let (value, unit) = if b >= 1e9 {
        (b / 1e9, "G")
    } else if b >= 1e6 {
        (b / 1e6, "M")
    } else if b >= 1e3 {
        (b / 1e3, "k")
    } else {
        return format!("{b:.0}");
    };
    if value >= 10.0 {
        format!("{value:.0}{unit}")
    } else {
        format!("{value:.1}{unit}")
    }
}

/// The time of day of a UNIX time, `hh:mm:ss`, in the local time zone.
pub(crate) fn clock(unix_s: f64) -> String {
    let time = unix_s as libc::time_t;
    // SAFETY: localtime_r writes the fields of `tm`, which is ours, from `time`, ours too.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&time, &mut tm) }.is_null() {
        return "--:--:--".to_owned();
    }
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
}

/// Seconds since the main master's clock started, at `now`: the makespan once the run ended.
pub(crate) fn elapsed_s(state: &LiveState, now: f64) -> Option<f64> {
    if let Some(end) = &state.end {
        return end.makespan_s.or(state.progress.t_s);
    }
    state.started_unix_s.map(|start| (now - start).max(0.0))
}

/// The share of a cluster's tasks done: of those it has done and those the live balance
/// gives it, else of its predicted share (worst case), else nothing.
pub(crate) fn fraction_done(c: &ClusterState) -> f64 {
    if c.phase == ClusterPhase::Done {
        return 1.0;
    }
    let done = c.tasks_done as f64;
    let target = match (
        c.remaining_tasks,
        c.predicted_tasks_worst,
        c.predicted_tasks_best,
    ) {
        (Some(left), _, _) => done + left,
        (None, Some(worst), Some(best)) => worst.max(best) as f64,
        _ => 0.0,
    };
    if target > 0.0 {
        (done / target).min(1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_seconds() {
        assert_eq!(bytes_per_s(950.0), "950");
        assert_eq!(bytes_per_s(1_940.0), "1.9k");
        assert_eq!(bytes_per_s(12_400_000.0), "12M");
        assert_eq!(seconds(Some(13.46)), "13.5 s");
        assert_eq!(seconds(Some(3725.0)), "1:02:05");
        assert_eq!(seconds(None), "-");
        assert_eq!(clock(f64::NAN).len(), 8);
    }
}
