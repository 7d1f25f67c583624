//! The wall clock as the launcher, `hmw watch` and `hmw top` record it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in seconds since the UNIX epoch (0 on a clock set before it).
pub(crate) fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
