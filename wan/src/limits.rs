//! Limits of a WAN link's settings, shared by TOML keys and command-line flags: a value
//! inside them never makes the emulator panic.

/// Slowest rate limit, Mbit/s (1 kbit/s); 0 means unlimited.
pub const MIN_RATE_MBIT: f64 = 0.001;
/// Fastest rate limit, Mbit/s (1 Tbit/s).
pub const MAX_RATE_MBIT: f64 = 1e6;
/// Longest one-way delay (and jitter), ms (10 minutes).
pub const MAX_DELAY_MS: f64 = 600_000.0;
/// Longest queue, in ms of traffic at the rate (10 minutes).
pub const MAX_QUEUE_MS: f64 = 600_000.0;
/// Smallest token bucket, bytes (one full-size Ethernet frame).
pub const MIN_BURST_BYTES: usize = 1500;
/// Largest token bucket, bytes (1 GiB).
pub const MAX_BURST_BYTES: usize = 1 << 30;
/// Shortest report interval, s (0 = no reports).
pub const MIN_REPORT_INTERVAL_S: f64 = 0.1;
/// Longest report interval, s (a day).
pub const MAX_REPORT_INTERVAL_S: f64 = 86_400.0;
/// Latest time in an outage schedule or a run duration, s (about 31 years).
pub const MAX_TIME_S: f64 = 1e9;

fn finite(v: f64) -> Result<f64, String> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err("must be a finite number".into())
    }
}

/// Rate limit, Mbit/s.
pub fn rate_mbit(v: f64) -> Result<(), String> {
    let v = finite(v)?;
    if v == 0.0 || (MIN_RATE_MBIT..=MAX_RATE_MBIT).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "must be 0 (unlimited) or {MIN_RATE_MBIT}..={MAX_RATE_MBIT} Mbit/s"
        ))
    }
}

/// One-way delay, ms.
pub fn delay_ms(v: f64) -> Result<(), String> {
    if (0.0..=MAX_DELAY_MS).contains(&finite(v)?) {
        Ok(())
    } else {
        Err(format!("must be 0..={MAX_DELAY_MS} ms"))
    }
}

/// Jitter, ms, for a one-way delay of `delay_ms`.
pub fn jitter_ms(v: f64, delay_ms: f64) -> Result<(), String> {
    if (0.0..=delay_ms).contains(&finite(v)?) {
        Ok(())
    } else {
        Err(format!("must be 0..=the delay ({delay_ms} ms)"))
    }
}

/// Loss probability.
pub fn loss(v: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&finite(v)?) {
        Ok(())
    } else {
        Err("must be a probability 0..=1".into())
    }
}

/// Queue length, ms of traffic at the rate.
pub fn queue_ms(v: f64) -> Result<(), String> {
    let v = finite(v)?;
    if v > 0.0 && v <= MAX_QUEUE_MS {
        Ok(())
    } else {
        Err(format!("must be more than 0 and at most {MAX_QUEUE_MS} ms"))
    }
}

/// Token-bucket depth, bytes.
pub fn burst_bytes(v: usize) -> Result<(), String> {
    if (MIN_BURST_BYTES..=MAX_BURST_BYTES).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "must be {MIN_BURST_BYTES}..={MAX_BURST_BYTES} bytes"
        ))
    }
}

/// Seconds between counter reports.
pub fn report_interval_s(v: f64) -> Result<(), String> {
    let v = finite(v)?;
    if v == 0.0 || (MIN_REPORT_INTERVAL_S..=MAX_REPORT_INTERVAL_S).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "must be 0 (no reports) or {MIN_REPORT_INTERVAL_S}..={MAX_REPORT_INTERVAL_S} s"
        ))
    }
}

/// A run duration, s.
pub fn duration_s(v: f64) -> Result<(), String> {
    let v = finite(v)?;
    if v > 0.0 && v <= MAX_TIME_S {
        Ok(())
    } else {
        Err(format!("must be more than 0 and at most {MAX_TIME_S} s"))
    }
}

/// An outage from `start_s` to `end_s`, seconds.
pub fn outage(start_s: f64, end_s: f64) -> Result<(), String> {
    finite(start_s)?;
    finite(end_s)?;
    if start_s >= 0.0 && end_s > start_s && end_s <= MAX_TIME_S {
        Ok(())
    } else {
        Err(format!(
            "must start at or after 0 and end after it starts, by {MAX_TIME_S} s"
        ))
    }
}

/// A value outside its limits: its key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` {reason}")]
pub struct InvalidValue {
    /// The key, prefixed by its table (`client_to_server.loss`).
    pub key: String,
    /// What is wrong, with the value.
    pub reason: String,
}
