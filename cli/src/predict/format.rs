//! Numbers, sizes, times and links as the text of a prediction prints them.

use hmw_model::{Bottleneck, LinkNeed};

/// A number for a table: 4 significant digits, scientific when very large or small.
pub(super) fn num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 {
        "0".into()
    } else if !(1e-2..1e6).contains(&a) {
        format!("{x:.3e}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}

/// A performance (basic operations per second): 4 significant digits, scientific.
pub(super) fn perf(x: f64) -> String {
    format!("{x:.3e}")
}

/// A count or size: whole numbers with thousands separators, others as [`num`].
pub(super) fn amount(x: f64) -> String {
    if x.fract() != 0.0 || x.abs() >= 1e15 {
        return num(x);
    }
    let digits = format!("{}", x.abs() as u64);
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(d);
    }
    if x < 0.0 {
        grouped.insert(0, '-');
    }
    grouped
}

pub(super) fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Seconds: four decimals below 100 s, one up to 1e12 s, scientific beyond.
pub(super) fn seconds(x: f64) -> String {
    if x.is_nan() || x >= 1e12 {
        format!("{x:.4e}")
    } else if x >= 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.4}")
    }
}

/// `h:mm:ss`, hours unbounded; beyond a billion hours, hours in scientific notation.
pub(super) fn hms(x: f64) -> String {
    if x.is_nan() || x >= 3.6e12 {
        return format!("{:.3e} h", x / 3600.0);
    }
    let total = x.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
}

/// The name of a link in sentences.
pub(super) fn link_name(link: Bottleneck) -> &'static str {
    match link {
        Bottleneck::Compute => "computation",
        Bottleneck::Lan => "LAN",
        Bottleneck::Master => "master's CPU",
        Bottleneck::Cm => "CM's CPU",
        Bottleneck::WanIn => "WAN in",
        Bottleneck::WanOut => "WAN out",
    }
}

/// What each limiting link needs, as one clause per link.
pub(super) fn needs_text(needs: &[LinkNeed]) -> String {
    needs
        .iter()
        .map(|n| {
            format!(
                "{link} limit {} ops/s: a {link} of at least {} B/s ({key}, now {}), or a grain \
                 whose tasks carry at least {} basic operations per byte on it (now {})",
                perf(n.limit),
                perf(n.throughput_needed),
                perf(n.throughput),
                perf(n.operations_per_byte_needed),
                perf(n.operations_per_byte),
                link = link_name(n.link),
                key = n.link.throughput_key().unwrap_or("perf"),
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

pub(super) fn fraction(x: f64) -> String {
    format!("{x:.3}")
}

pub(super) fn min_tasks(m: Option<u64>) -> String {
    m.map_or_else(|| "unreachable".into(), |t| t.to_string())
}
