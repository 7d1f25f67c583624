//! TSPLIB files: `KEY : VALUE` specification lines, then data sections.
//!
//! Read: `DIMENSION`, `EDGE_WEIGHT_TYPE` `EUC_2D` (nearest integer, `nint`), `CEIL_2D` and
//! `EXPLICIT` with `EDGE_WEIGHT_FORMAT` `FULL_MATRIX`, `UPPER_ROW`, `LOWER_ROW`,
//! `UPPER_DIAG_ROW` or `LOWER_DIAG_ROW`; `TYPE` `TSP` (or `ATSP` with a full matrix);
//! sections `NODE_COORD_SECTION`, `EDGE_WEIGHT_SECTION` (numbers spread over any lines),
//! `DISPLAY_DATA_SECTION` (skipped) and `EOF`. `NAME`, `COMMENT`, `NODE_COORD_TYPE` and
//! `DISPLAY_DATA_TYPE` are accepted and ignored. Every error names the file and the line.

use crate::{euc_2d, Distances};

/// Where a value came from, for errors.
struct At<'a> {
    file: &'a str,
    line: usize,
}

impl At<'_> {
    fn error(&self, message: impl std::fmt::Display) -> anyhow::Error {
        anyhow::anyhow!("{}:{}: {message}", self.file, self.line)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Specification,
    Coordinates,
    Weights,
    Display,
}

/// Parse TSPLIB `text` (read from `file`, named in errors) into a distance matrix.
pub(crate) fn parse(file: &str, text: &str) -> anyhow::Result<Distances> {
    let mut dimension: Option<usize> = None;
    let mut weight_type: Option<String> = None;
    let mut weight_format: Option<String> = None;
    let mut section = Section::Specification;
    let mut coordinates: Vec<Option<(f64, f64)>> = Vec::new();
    let mut weights: Vec<i64> = Vec::new();
    let mut last_line = 0;
    for (index, raw) in text.lines().enumerate() {
        let at = At {
            file,
            line: index + 1,
        };
        last_line = index + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if line == "EOF" {
            break;
        }
        let keyword = line.split([':', ' ', '\t']).next().unwrap_or("");
        let new_section = match keyword {
            "NODE_COORD_SECTION" => Some(Section::Coordinates),
            "EDGE_WEIGHT_SECTION" => Some(Section::Weights),
            "DISPLAY_DATA_SECTION" => Some(Section::Display),
            _ => None,
        };
        if let Some(new) = new_section {
            let n = dimension.ok_or_else(|| at.error(format!("{keyword} before DIMENSION")))?;
            if new == Section::Coordinates {
                coordinates = vec![None; n];
            }
            section = new;
            continue;
        }
        match section {
            Section::Specification => {
                let (key, value) = line
                    .split_once(':')
                    .map(|(k, v)| (k.trim(), v.trim()))
                    .ok_or_else(|| at.error(format!("expected KEY : VALUE, found {line:?}")))?;
                match key {
                    "NAME" | "COMMENT" | "NODE_COORD_TYPE" | "DISPLAY_DATA_TYPE" => {}
                    "TYPE" => {
                        if value != "TSP" && value != "ATSP" {
                            return Err(
                                at.error(format!("TYPE {value} is not supported (TSP or ATSP)"))
                            );
                        }
                    }
                    "DIMENSION" => {
                        let n: usize = value.parse().map_err(|_| {
                            at.error(format!("DIMENSION {value:?} is not a whole number"))
                        })?;
                        if !(2..=crate::MAX_CITIES).contains(&n) {
                            return Err(at.error(format!(
                                "DIMENSION {n}: between 2 and {} cities are supported",
                                crate::MAX_CITIES
                            )));
                        }
                        dimension = Some(n);
                    }
                    "EDGE_WEIGHT_TYPE" => match value {
                        "EUC_2D" | "CEIL_2D" | "EXPLICIT" => weight_type = Some(value.into()),
                        other => {
                            return Err(at.error(format!(
                                "EDGE_WEIGHT_TYPE {other} is not supported \
                                 (EUC_2D, CEIL_2D, EXPLICIT)"
                            )))
                        }
                    },
                    "EDGE_WEIGHT_FORMAT" => match value {
                        "FULL_MATRIX" | "UPPER_ROW" | "LOWER_ROW" | "UPPER_DIAG_ROW"
                        | "LOWER_DIAG_ROW" => weight_format = Some(value.into()),
                        other => {
                            return Err(at.error(format!(
                                "EDGE_WEIGHT_FORMAT {other} is not supported (FULL_MATRIX, \
                                 UPPER_ROW, LOWER_ROW, UPPER_DIAG_ROW, LOWER_DIAG_ROW)"
                            )))
                        }
                    },
                    other => return Err(at.error(format!("unknown keyword {other}"))),
                }
            }
            Section::Coordinates => {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let [id, x, y] = fields[..] else {
                    return Err(at.error(format!(
                        "expected a node's number and two coordinates, found {line:?}"
                    )));
                };
                let id: usize = id
                    .parse()
                    .map_err(|_| at.error(format!("node number {id:?} is not a whole number")))?;
                let number = |v: &str| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| at.error(format!("coordinate {v:?} is not a number")))
                };
                let slot = id
                    .checked_sub(1)
                    .and_then(|i| coordinates.get_mut(i))
                    .ok_or_else(|| {
                        at.error(format!(
                            "node {id} outside 1..={}",
                            dimension.unwrap_or_default()
                        ))
                    })?;
                if slot.is_some() {
                    return Err(at.error(format!("node {id} given twice")));
                }
                *slot = Some((number(x)?, number(y)?));
            }
            Section::Weights => {
                for token in line.split_whitespace() {
                    let w = token
                        .parse::<i64>()
                        .ok()
                        .or_else(|| {
                            // Some files write integral weights as decimals.
                            token
                                .parse::<f64>()
                                .ok()
                                .filter(|v| v.fract() == 0.0 && v.abs() < 1e15)
                                .map(|v| v as i64)
                        })
                        .ok_or_else(|| {
                            at.error(format!("edge weight {token:?} is not a whole number"))
                        })?;
                    weights.push(w);
                }
            }
            Section::Display => {}
        }
    }
    let at = At {
        file,
        line: last_line,
    };
    let n = dimension.ok_or_else(|| at.error("no DIMENSION"))?;
    match weight_type.as_deref() {
        Some(kind @ ("EUC_2D" | "CEIL_2D")) => {
            let missing = coordinates.iter().position(Option::is_none);
            if coordinates.len() != n || missing.is_some() {
                return Err(at.error(format!(
                    "NODE_COORD_SECTION lacks node {} of {n}",
                    missing.unwrap_or(0) + 1
                )));
            }
            let points: Vec<(f64, f64)> = coordinates.into_iter().flatten().collect();
            let mut d = vec![0; n * n];
            for a in 0..n {
                for b in 0..n {
                    let (p, q) = (points[a], points[b]);
                    d[a * n + b] = if kind == "EUC_2D" {
                        euc_2d(p, q)
                    } else {
                        (p.0 - q.0).hypot(p.1 - q.1).ceil() as i64
                    };
                }
            }
            Ok(Distances { n, d })
        }
        Some("EXPLICIT") => {
            let format = weight_format
                .ok_or_else(|| at.error("EDGE_WEIGHT_TYPE EXPLICIT needs EDGE_WEIGHT_FORMAT"))?;
            explicit(&at, n, &format, &weights)
        }
        _ => Err(at.error("no EDGE_WEIGHT_TYPE")),
    }
}

/// The matrix of an `EXPLICIT` file from its weights in `format`.
fn explicit(at: &At<'_>, n: usize, format: &str, weights: &[i64]) -> anyhow::Result<Distances> {
    // The (row, column) pairs the weights fill, in order.
    let cells: Vec<(usize, usize)> = match format {
        "FULL_MATRIX" => (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).collect(),
        "UPPER_ROW" => (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .collect(),
        "UPPER_DIAG_ROW" => (0..n).flat_map(|i| (i..n).map(move |j| (i, j))).collect(),
        "LOWER_ROW" => (0..n).flat_map(|i| (0..i).map(move |j| (i, j))).collect(),
        "LOWER_DIAG_ROW" => (0..n).flat_map(|i| (0..=i).map(move |j| (i, j))).collect(),
        other => {
            return Err(at.error(format!(
                "EDGE_WEIGHT_FORMAT {other} does not go with EXPLICIT"
            )))
        }
    };
    if weights.len() != cells.len() {
        return Err(at.error(format!(
            "EDGE_WEIGHT_SECTION has {} weights; {format} of DIMENSION {n} needs {}",
            weights.len(),
            cells.len()
        )));
    }
    let mut d = vec![0; n * n];
    for (&(i, j), &w) in cells.iter().zip(weights) {
        d[i * n + j] = w;
        if format != "FULL_MATRIX" {
            d[j * n + i] = w;
        }
    }
    Ok(Distances { n, d })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EUC: &str = "NAME : square5
COMMENT : a unit square of 3, a point in the middle
TYPE : TSP
DIMENSION : 5
EDGE_WEIGHT_TYPE : EUC_2D
NODE_COORD_SECTION
1 0 0
2 3 0
3 3 3
4 0 3
5 1.5 1.5
EOF
";

    #[test]
    fn euc_2d_coordinates() {
        let d = parse("square5.tsp", EUC).unwrap();
        assert_eq!(d.n, 5);
        assert_eq!(d.get(0, 1), 3);
        assert_eq!(d.get(0, 2), 4); // 4.24
        assert_eq!(d.get(0, 4), 2); // 2.12
        assert_eq!(d.get(4, 0), 2);
        assert_eq!(crate::held_karp(&d), 3 + 3 + 3 + 2 + 2);
    }

    /// The same 4-city symmetric matrix in each explicit format.
    #[test]
    fn explicit_matrices() {
        let full = [[0, 2, 9, 10], [2, 0, 6, 4], [9, 6, 0, 8], [10, 4, 8, 0]];
        let sections = [
            ("FULL_MATRIX", "0 2 9 10\n2 0 6 4\n9 6 0 8\n10 4 8 0"),
            ("UPPER_ROW", "2 9 10\n6 4\n8"),
            ("LOWER_DIAG_ROW", "0\n2 0\n9 6 0\n10 4\n8 0"),
            ("UPPER_DIAG_ROW", "0 2 9 10 0 6 4 0 8 0"),
            ("LOWER_ROW", "2\n9 6\n10 4 8"),
        ];
        for (format, weights) in sections {
            let text = format!(
                "NAME: four\nTYPE: TSP\nDIMENSION: 4\nEDGE_WEIGHT_TYPE: EXPLICIT\n\
                 EDGE_WEIGHT_FORMAT: {format}\nEDGE_WEIGHT_SECTION\n{weights}\nEOF\n"
            );
            let d = parse("four.tsp", &text).unwrap_or_else(|e| panic!("{format}: {e}"));
            for (i, row) in full.iter().enumerate() {
                for (j, &w) in row.iter().enumerate() {
                    assert_eq!(d.get(i, j), w, "{format} ({i}, {j})");
                }
            }
            // 0-1-3-2-0: 2 + 4 + 8 + 9 = 23.
            assert_eq!(crate::held_karp(&d), 23);
        }
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let cases = [
            (
                EUC.replace("3 3 3", "3 3 x"),
                "square5.tsp:9:",
                "coordinate",
            ),
            (
                EUC.replace("DIMENSION : 5", "DIMENSION : five"),
                "square5.tsp:4:",
                "DIMENSION",
            ),
            (EUC.replace("EUC_2D", "GEO"), "square5.tsp:5:", "GEO"),
            (
                EUC.replace("5 1.5 1.5\n", ""),
                "square5.tsp:",
                "lacks node 5",
            ),
            (EUC.replace("4 0 3", "9 0 3"), "square5.tsp:10:", "node 9"),
            (
                EUC.replace("TYPE : TSP", "TYPO : TSP"),
                "square5.tsp:3:",
                "TYPO",
            ),
            (
                "DIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\n\
                 EDGE_WEIGHT_SECTION\n1 2\n"
                    .to_string(),
                "square5.tsp:5:",
                "has 2 weights",
            ),
        ];
        for (text, place, what) in cases {
            let error = parse("square5.tsp", &text).unwrap_err().to_string();
            assert!(
                error.starts_with(place) && error.contains(what),
                "{place} {what}: {error}"
            );
        }
    }
}
