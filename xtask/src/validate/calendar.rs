//! Dates: the document's `YYYY-MM-DD HH:MM UTC`, and the ISO 8601 dates `hmw calibrate`
//! writes (`date --iso-8601=seconds`) as Unix seconds.

use anyhow::{anyhow, Result};

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a count of days since 1970-01-01: (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// `date -u '+%Y-%m-%d %H:%M UTC'` of Unix time `seconds`.
pub(crate) fn utc_minute(seconds: i64) -> String {
    let (days, second_of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        second_of_day / 3600,
        second_of_day % 3600 / 60
    )
}

/// The Unix time of an ISO 8601 date as Python's `datetime.fromisoformat(...).timestamp()`
/// reads it: `YYYY-MM-DD`, then optionally `T` (or a space) and `HH:MM[:SS[.fff]]`, then
/// optionally `Z` or an offset `+HH:MM` (`+HHMM`, `+HH`); without an offset, local time.
pub(crate) fn iso8601_unix(text: &str) -> Result<f64> {
    let bad = || anyhow!("`{text}` is not an ISO 8601 date");
    let number = |s: &str| -> Result<i64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    let (date, time) = match text.find(['T', ' ']) {
        Some(at) => (&text[..at], &text[at + 1..]),
        None => (text, ""),
    };
    let mut parts = date.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    let (year, month, day) = (number(y)?, number(m)?, number(d)?);
    if y.len() != 4 || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(bad());
    }
    let (clock, offset) = match time.find(['Z', '+', '-']) {
        Some(at) => (&time[..at], Some(&time[at..])),
        None => (time, None),
    };
    let mut seconds_of_day = 0.0;
    if !clock.is_empty() {
        let mut fields = clock.split(':');
        let hour = number(fields.next().ok_or_else(bad)?)?;
        let minute = number(fields.next().ok_or_else(bad)?)?;
        let second: f64 = match fields.next() {
            Some(s) => {
                let whole = s.split('.').next().unwrap_or(s);
                number(whole)?;
                s.parse().map_err(|_| bad())?
            }
            None => 0.0,
        };
        if fields.next().is_some() || hour > 23 || minute > 59 || second >= 61.0 {
            return Err(bad());
        }
        seconds_of_day = (hour * 3600 + minute * 60) as f64 + second;
    }
    let days = days_from_civil(year, month, day);
    let local = days as f64 * 86_400.0 + seconds_of_day;
    match offset {
        Some("Z") => Ok(local),
        Some(offset) => {
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            let digits: String = offset[1..].chars().filter(|&c| c != ':').collect();
            if !matches!(digits.len(), 2 | 4 | 6) {
                return Err(bad());
            }
            let hours = number(&digits[..2])?;
            let minutes = if digits.len() >= 4 {
                number(&digits[2..4])?
            } else {
                0
            };
            let seconds = if digits.len() == 6 {
                number(&digits[4..])?
            } else {
                0
            };
            Ok(local - (sign * (hours * 3600 + minutes * 60 + seconds)) as f64)
        }
        None => Ok(local - local_offset_seconds(days * 86_400 + seconds_of_day as i64) as f64),
    }
}

/// This machine's offset from UTC, in seconds, at the local time `local` (as seconds of a
/// Unix-like count): what `mktime` says.
fn local_offset_seconds(local: i64) -> i64 {
    let (days, second_of_day) = (local.div_euclid(86_400), local.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    // SAFETY: `tm` is a plain C struct, zeroed then filled; `mktime` only reads and normalises it.
    let unix = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = (year - 1900) as libc::c_int;
        tm.tm_mon = (month - 1) as libc::c_int;
        tm.tm_mday = day as libc::c_int;
        tm.tm_hour = (second_of_day / 3600) as libc::c_int;
        tm.tm_min = (second_of_day % 3600 / 60) as libc::c_int;
        tm.tm_sec = (second_of_day % 60) as libc::c_int;
        tm.tm_isdst = -1;
        libc::mktime(&mut tm)
    };
    if unix == -1 {
        0
    } else {
        local - unix as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        for days in [-800_000, -1, 0, 59, 60, 10_957, 20_789, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn minutes_in_utc() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00 UTC");
        // 2026-11-27 19:44:59 UTC
        assert_eq!(utc_minute(1_795_808_699), "2026-11-27 19:44 UTC");
    }

    #[test]
    fn iso_dates() {
        assert_eq!(
            iso8601_unix("2026-11-27T19:44:59+00:00").unwrap(),
            1_795_808_699.0
        );
        assert_eq!(
            iso8601_unix("2026-11-27T19:44:59Z").unwrap(),
            1_795_808_699.0
        );
        assert_eq!(
            iso8601_unix("2026-11-27T20:44:59+01:00").unwrap(),
            1_795_808_699.0
        );
        assert_eq!(
            iso8601_unix("2026-11-27T17:14:59-0230").unwrap(),
            1_795_808_699.0
        );
        assert_eq!(
            iso8601_unix("2026-11-27 19:44:59.25+00").unwrap(),
            1_795_808_699.25
        );
        assert_eq!(iso8601_unix("2026-11-27T19:44Z").unwrap(), 1_795_808_640.0);
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-11-27T25:00Z",
            "2026-11-27T19:44:59+1",
        ] {
            assert!(iso8601_unix(bad).is_err(), "{bad}");
        }
    }
}
