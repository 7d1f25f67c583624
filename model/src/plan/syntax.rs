//! TOML errors in the plan's vocabulary: the line and column, and the key (with its cluster
//! and machine) whose value is wrong, or else the cluster or table it is in.

use serde::Deserialize;

use super::{error::PlanError, location};

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}

/// The TOML error as one line, in the plan's vocabulary: the line and column, and the key (with
/// its cluster and machine) whose value is wrong, or else the cluster or table it is in.
pub(super) fn syntax_error(
    text: &str,
    error: &toml::de::Error,
    located: Option<location::Located>,
    clusters: &[(String, std::ops::Range<usize>)],
) -> PlanError {
    let span = error.span().unwrap_or(0..0);
    let (line, column) = line_column(text, span.start);
    let message = error
        .message()
        .trim()
        .replace("unknown field", "unknown key")
        .replace("missing field", "missing key")
        .replace("duplicate field", "duplicate key")
        .replace('\n', "; ");
    // The key whose value is wrong; an unknown, duplicate or missing key is named by the
    // message itself.
    let names_a_key = !(message.starts_with("unknown key")
        || message.starts_with("duplicate key")
        || message.starts_with("missing key"));
    if let Some(found) = located.filter(|f| f.cluster.is_some() || names_a_key) {
        return PlanError::Syntax {
            line,
            column,
            cluster: found.cluster,
            machine: found.machine,
            key: Some(found.key).filter(|k| names_a_key && !k.is_empty()),
            message,
        };
    }
    let cluster = clusters
        .iter()
        .find(|(_, range)| range.start <= span.start && span.start < range.end.max(range.start + 1))
        .map(|(name, _)| name.clone());
    let table = match &cluster {
        Some(_) => String::new(),
        None => enclosing_table(text, span.start)
            .map(|t| format!("{t}: "))
            .unwrap_or_default(),
    };
    PlanError::Syntax {
        line,
        column,
        cluster,
        machine: None,
        key: None,
        message: format!("{table}{message}"),
    }
}

/// The header (`[application]`, `[model]`, ...) of the table holding byte `offset`, if any.
fn enclosing_table(text: &str, offset: usize) -> Option<String> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    text[..line_end]
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with('['))
        .map(|line| line.split('#').next().unwrap_or(line).trim().to_string())
}

/// Where each `[[cluster]]` is in the text and what it is called, for error messages.
pub(super) fn cluster_spans(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    #[derive(Deserialize)]
    struct Skeleton {
        #[serde(default)]
        cluster: Vec<toml::Spanned<toml::Table>>,
    }
    let Ok(skeleton) = toml::from_str::<Skeleton>(text) else {
        return Vec::new();
    };
    skeleton
        .cluster
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = c
                .get_ref()
                .get("name")
                .and_then(|n| n.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| format!("#{}", i + 1));
            (name, c.span())
        })
        .collect()
}
