//! Numbers as the suite prints and reads them: C's `printf` formats (what the shell script's
//! awk printed, digit for digit), figures kept as the text a tool printed, and the medians.

use std::cmp::Ordering;
use std::fmt;

/// C's `%.Nf`: `nan`, `-nan`, `inf` and `-inf` as C prints them (Rust prints `NaN`).
pub(crate) fn fixed(x: f64, precision: usize) -> String {
    match non_finite(x) {
        Some(text) => text.to_owned(),
        None => format!("{x:.precision$}"),
    }
}

/// C's `%+.Nf`: a sign always (`-0.0` for a negative zero, as C prints it).
pub(crate) fn signed(x: f64, precision: usize) -> String {
    match non_finite(x) {
        Some(text) if text.starts_with('-') => text.to_owned(),
        Some(text) => format!("+{text}"),
        None => format!("{x:+.precision$}"),
    }
}

/// C's `%.Ne`: the exponent signed and of two digits at least (`2.9300e+09`).
pub(crate) fn exponent(x: f64, precision: usize) -> String {
    if let Some(text) = non_finite(x) {
        return text.to_owned();
    }
    let rust = format!("{x:.precision$e}");
    let (mantissa, power) = rust.split_once('e').unwrap_or((&rust, "0"));
    let power: i32 = power.parse().unwrap_or(0);
    let sign = if power < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", power.abs())
}

fn non_finite(x: f64) -> Option<&'static str> {
    match (x.is_nan(), x.is_infinite(), x.is_sign_negative()) {
        (true, _, false) => Some("nan"),
        (true, _, true) => Some("-nan"),
        (_, true, false) => Some("inf"),
        (_, true, true) => Some("-inf"),
        _ => None,
    }
}

/// A computed number as awk's `print` wrote it (`OFMT`, `%.6g`: six significant digits) and
/// the next step read it back.
pub(crate) fn awk_printed(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// A number as it was printed (by a tool, or by the suite in a fixed format) and its value:
/// the text goes to the output lines and the document unchanged, the value to the
/// arithmetic, which therefore works on the rounded figures as the script's awk did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Figure {
    text: String,
    value: f64,
}

impl Figure {
    /// The figure a tool printed; `None` when `text` is not a number.
    pub(crate) fn parse(text: &str) -> Option<Figure> {
        let value = match text {
            "nan" | "+nan" | "NaN" => f64::NAN,
            "-nan" | "-NaN" => -f64::NAN,
            _ => text.parse().ok()?,
        };
        Some(Figure {
            text: text.to_owned(),
            value,
        })
    }

    /// `x` printed with C's `%.Nf`, as the suite prints its own figures.
    pub(crate) fn fixed(x: f64, precision: usize) -> Figure {
        let text = fixed(x, precision);
        Figure::parse(&text).unwrap_or(Figure { text, value: x })
    }

    /// Its value.
    pub(crate) fn value(&self) -> f64 {
        self.value
    }

    /// The text as printed.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `sort -g`'s order of numbers: NaNs first, then ascending (a negative zero before a
/// positive one, as `-0` sorts before `0` when `sort` compares the lines themselves).
pub(crate) fn cmp_g(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (false, false) => a.total_cmp(&b),
    }
}

/// Values sorted in `sort -g`'s order.
pub(crate) fn sort_g(values: &mut [f64]) {
    values.sort_by(|a, b| cmp_g(*a, *b));
}

/// The lower middle of values sorted ascending, `v[int((n + 1) / 2)]` (the median of an odd
/// count): the median run of a scenario, and what the spread and the speed-scaled makespan
/// are taken around.
pub(crate) fn lower_middle(sorted: &[f64]) -> Option<f64> {
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
}

/// The median of values sorted ascending: the middle value, or the mean of the two middle
/// values for an even count.
pub(crate) fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The median and the largest of the absolute values of `figures`, each as `%.4f`;
/// `("nan", "nan")` for none.
pub(crate) fn abs_median_max(figures: &[Figure]) -> (String, String) {
    let mut values: Vec<f64> = figures
        .iter()
        .map(|f| {
            // awk's `a = $1 < 0 ? -$1 : $1; print a`: a negative figure is negated and printed
            // with six digits, any other one printed as it was (a `-0.0000` stays negative).
            if f.value() < 0.0 {
                awk_printed(-f.value())
            } else {
                f.value()
            }
        })
        .collect();
    sort_g(&mut values);
    match (median(&values), values.last()) {
        (Some(m), Some(&max)) => (fixed(m, 4), fixed(max, 4)),
        _ => ("nan".to_owned(), "nan".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_formats() {
        assert_eq!(fixed(0.012_345, 4), "0.0123");
        assert_eq!(fixed(-0.000_01, 4), "-0.0000");
        assert_eq!(fixed(f64::NAN, 1), "nan");
        assert_eq!(fixed(f64::INFINITY, 4), "inf");
        assert_eq!(signed(1.26, 1), "+1.3");
        assert_eq!(signed(-0.04, 1), "-0.0");
        assert_eq!(signed(0.0, 1), "+0.0");
        assert_eq!(signed(f64::NAN, 1), "+nan");
        assert_eq!(exponent(2.93e9, 4), "2.9300e+09");
        assert_eq!(exponent(3_127_456_789.0, 4), "3.1275e+09");
        assert_eq!(exponent(0.000_123_45, 2), "1.23e-04");
        assert_eq!(exponent(5.0e123, 1), "5.0e+123");
        assert_eq!(exponent(0.0, 4), "0.0000e+00");
    }

    #[test]
    fn awk_prints_six_digits() {
        assert_eq!(awk_printed(123.456_789), 123.457);
        assert_eq!(awk_printed(0.548_164_726), 0.548_165);
        assert_eq!(awk_printed(2.0), 2.0);
    }

    #[test]
    fn figures_keep_their_text() {
        let f = Figure::parse("5.010").unwrap();
        assert_eq!((f.text(), f.value()), ("5.010", 5.01));
        assert_eq!(Figure::fixed(0.123_456, 4).to_string(), "0.1235");
        assert_eq!(Figure::fixed(0.123_456, 4).value(), 0.1235);
        assert!(Figure::parse("-nan").unwrap().value().is_nan());
        assert!(Figure::parse("NaN").unwrap().value().is_nan());
        assert_eq!(Figure::parse("fast"), None);
        assert_eq!(Figure::parse(""), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, 2.0, 7.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 3.0, 7.0]), Some(2.5));
        assert_eq!(lower_middle(&[1.0, 2.0, 3.0, 7.0]), Some(2.0));
        assert_eq!(lower_middle(&[1.0, 2.0, 7.0]), Some(2.0));
        assert_eq!(lower_middle(&[]), None);
        let mut v = [3.0, f64::NAN, -0.0, 0.0, -1.0];
        sort_g(&mut v);
        assert!(v[0].is_nan());
        assert_eq!(v[1..], [-1.0, -0.0, 0.0, 3.0]);
        assert!(v[2].is_sign_negative() && !v[3].is_sign_negative());
    }

    #[test]
    fn absolute_median_and_largest() {
        let figures: Vec<Figure> = ["-0.0300", "0.0100", "0.0200", "-0.1000"]
            .iter()
            .map(|t| Figure::parse(t).unwrap())
            .collect();
        assert_eq!(
            abs_median_max(&figures),
            ("0.0250".to_owned(), "0.1000".to_owned())
        );
        assert_eq!(
            abs_median_max(&figures[..3]),
            ("0.0200".to_owned(), "0.0300".to_owned())
        );
        assert_eq!(abs_median_max(&[]), ("nan".to_owned(), "nan".to_owned()));
        // A negative zero is not negated: awk printed it, and the median, as `-0.0000`.
        let zero = [Figure::parse("-0.0000").unwrap()];
        assert_eq!(abs_median_max(&zero).0, "-0.0000");
    }
}
