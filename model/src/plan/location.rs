//! Which key of a TOML file a deserialization error is about, in the plan's vocabulary, so that
//! every error names the key (and the cluster and machine it belongs to), not only its line
//! and column.
//!
//! `toml` reports a value of the wrong type or an unknown enum variant with the value's span
//! but without its key; [`deserialize`] records the path of keys and indices that leads to it
//! (`serde_path_to_error`), and [`describe`] turns that path into cluster, machine and key.

use serde::de::DeserializeOwned;
use serde_path_to_error::{Path, Segment};
use toml::{Table, Value};

/// The key an error is about, with its cluster and machine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located {
    /// The `name` of the cluster entry (`[[cluster]]`, or `[[clusters]]` of a measured system).
    pub cluster: Option<String>,
    /// The `host` of the machine entry (`machines`, or `workers` of a measured system).
    pub machine: Option<String>,
    /// The key inside the innermost of those entries, or from the top of the file
    /// (`application.tasks`, `application.grain[grain = 400].oper`, `model.selection`).
    pub key: String,
}

/// A TOML error and where it is, when a key leads to it.
pub(crate) type Failure = Box<(toml::de::Error, Option<Located>)>;

/// Deserialize `text`; on error, the TOML error and where it is.
pub(crate) fn deserialize<T: DeserializeOwned>(text: &str) -> Result<T, Failure> {
    serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|error| {
        let located = describe(text, error.path());
        Box::new((error.into_inner(), located))
    })
}

/// The path of a value in the plan's vocabulary: cluster and machine from their entries'
/// `name` and `host`, the key as the rest of the path (an element of a list of scalars is named
/// by the list). `None` for an empty path (an error about the whole file).
fn describe(text: &str, path: &Path) -> Option<Located> {
    let shape: Table = toml::from_str(text).ok()?;
    let segments: Vec<&Segment> = path
        .iter()
        .filter(|s| matches!(s, Segment::Map { .. } | Segment::Seq { .. }))
        .collect();
    if segments.is_empty() {
        return None;
    }
    let mut cluster = None;
    let mut machine = None;
    let mut pieces: Vec<String> = Vec::new();
    let mut value: Option<&Value> = None;
    let mut parent_key: Option<&str> = None;
    for (depth, segment) in segments.iter().enumerate() {
        match segment {
            Segment::Map { key } => {
                value = match value {
                    None => shape.get(key),
                    Some(Value::Table(t)) => t.get(key),
                    _ => None,
                };
                pieces.push(key.clone());
                parent_key = Some(key);
            }
            Segment::Seq { index } => {
                value = match value {
                    Some(Value::Array(a)) => a.get(*index),
                    _ => None,
                };
                let entry = value.and_then(Value::as_table);
                let field = |name: &str| entry.and_then(|t| t.get(name));
                let text_of = |name: &str| field(name).and_then(Value::as_str).map(str::to_string);
                match parent_key {
                    Some("cluster" | "clusters") if depth == 1 => {
                        cluster =
                            Some(text_of("name").unwrap_or_else(|| format!("#{}", index + 1)));
                        pieces.clear();
                    }
                    Some("machines" | "workers") if cluster.is_some() => {
                        machine = text_of("host");
                        pieces.clear();
                    }
                    // the last step into a list of scalars: the list is the key
                    _ if depth + 1 == segments.len() => {}
                    _ => {
                        let suffix = match field("grain").and_then(Value::as_integer) {
                            Some(grain) => format!("[grain = {grain}]"),
                            None => format!("[{}]", index + 1),
                        };
                        if let Some(last) = pieces.last_mut() {
                            last.push_str(&suffix);
                        }
                    }
                }
                parent_key = None;
            }
            _ => {}
        }
    }
    Some(Located {
        cluster,
        machine,
        key: pieces.join("."),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    const TEXT: &str = r#"
[application]
name = "x"
tasks = 3
grain = [ { grain = 400, oper = "big" } ]

[[cluster]]
name = "spain"
machines = [
  { host = "aoquir1", role = "master" },
  { host = "aoquir3", role = "worker", perf = "fast" },
]
"#;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct File {
        application: Application,
        cluster: Vec<Cluster>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Application {
        name: String,
        tasks: u64,
        grain: Vec<Grain>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Grain {
        grain: u64,
        oper: toml::Value,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Cluster {
        name: String,
        machines: Vec<Machine>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Machine {
        host: String,
        role: String,
        perf: Option<f64>,
    }

    fn located(text: &str) -> Located {
        deserialize::<File>(text)
            .unwrap_err()
            .1
            .expect("a key leads to the error")
    }

    #[test]
    fn errors_are_named_by_their_key_cluster_and_machine() {
        assert_eq!(
            located(TEXT),
            Located {
                cluster: Some("spain".into()),
                machine: Some("aoquir3".into()),
                key: "perf".into()
            }
        );
        let bad_tasks = TEXT.replace("tasks = 3", "tasks = -3");
        assert_eq!(located(&bad_tasks).key, "application.tasks");
        let bad_grain = TEXT.replace("grain = 400", "grain = -400");
        assert_eq!(
            located(&bad_grain).key,
            "application.grain[grain = -400].grain"
        );
    }

    #[test]
    fn a_file_that_is_not_toml_has_no_key() {
        let failure = deserialize::<File>("not = = toml").unwrap_err();
        assert_eq!(failure.1, None);
    }
}
