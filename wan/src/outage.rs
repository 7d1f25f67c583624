//! Outages: periods when a link is down, in seconds from a start signal.

use serde::{Deserialize, Serialize};

use crate::limits;

/// A period when the link is down, in seconds since the emulator started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// Start (inclusive).
    pub start_s: f64,
    /// End (exclusive).
    pub end_s: f64,
}

impl std::str::FromStr for Outage {
    type Err = String;

    /// `START-END` or `START+DURATION`, in seconds: `30-50` and `30+20` are the same outage.
    fn from_str(text: &str) -> Result<Self, String> {
        let parse = |s: &str| {
            s.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{text}` is not an outage such as 30-50 or 30+20 (seconds)"))
        };
        let outage = if let Some((a, b)) = text.split_once('+') {
            let start = parse(a)?;
            Outage {
                start_s: start,
                end_s: start + parse(b)?,
            }
        } else if let Some((a, b)) = text.split_once('-') {
            Outage {
                start_s: parse(a)?,
                end_s: parse(b)?,
            }
        } else {
            return Err(format!(
                "`{text}` is not an outage such as 30-50 or 30+20 (seconds)"
            ));
        };
        limits::outage(outage.start_s, outage.end_s)
            .map_err(|reason| format!("outage `{text}` {reason}"))?;
        Ok(outage)
    }
}
