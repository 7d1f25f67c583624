//! Which key of a TOML file a parse error is about, so that every error names the key (and the
//! cluster and machine it belongs to), not only its line and column.
//!
//! `toml` reports a value of the wrong type or an unknown enum variant with the value's span
//! but without its key. [`locate`] reads the file a second time, recording the span of every
//! scalar value with the path of keys and array indices that leads to it, and returns the
//! path of the value holding the error's position, described in the plan's vocabulary.

use std::fmt;
use std::ops::Range;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize as _;
use toml::{Spanned, Table, Value};

/// One step of the path to a value.
#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// A scalar value of the file: its path and its span.
struct Leaf {
    path: Vec<Segment>,
    span: Range<usize>,
}

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

/// The key of the scalar value of `text` whose span holds byte `offset`; `None` when the
/// offset is in no scalar value (a table, a key) or the file cannot be read again.
pub(crate) fn locate(text: &str, offset: usize) -> Option<Located> {
    let shape: Table = toml::from_str(text).ok()?;
    let mut leaves = Vec::new();
    TableSeed {
        shape: &shape,
        path: Vec::new(),
        leaves: &mut leaves,
    }
    .deserialize(toml::Deserializer::new(text))
    .ok()?;
    let leaf = leaves
        .iter()
        .filter(|l| l.span.start <= offset && offset < l.span.end.max(l.span.start + 1))
        .min_by_key(|l| l.span.len())?;
    Some(describe(&shape, &leaf.path))
}

/// The path of a value in the plan's vocabulary: cluster and machine from their entries'
/// `name` and `host`, the key as the rest of the path (an element of a list of scalars is named
/// by the list).
fn describe(shape: &Table, path: &[Segment]) -> Located {
    let mut cluster = None;
    let mut machine = None;
    let mut pieces: Vec<String> = Vec::new();
    let mut value: Option<&Value> = None;
    let mut parent_key: Option<&str> = None;
    for (depth, segment) in path.iter().enumerate() {
        value = match (segment, value) {
            (Segment::Key(k), None) => shape.get(k),
            (Segment::Key(k), Some(Value::Table(t))) => t.get(k),
            (Segment::Index(n), Some(Value::Array(a))) => a.get(*n),
            _ => None,
        };
        match segment {
            Segment::Key(k) => {
                pieces.push(k.clone());
                parent_key = Some(k);
            }
            Segment::Index(n) => {
                let entry = value.and_then(Value::as_table);
                let field = |name: &str| entry.and_then(|t| t.get(name));
                let text_of = |name: &str| field(name).and_then(Value::as_str).map(str::to_string);
                match parent_key {
                    Some("cluster" | "clusters") if depth == 1 => {
                        cluster = Some(text_of("name").unwrap_or_else(|| format!("#{}", n + 1)));
                        pieces.clear();
                    }
                    Some("machines" | "workers") if cluster.is_some() => {
                        machine = text_of("host");
                        pieces.clear();
                    }
                    // the last step into a list of scalars: the list is the key
                    _ if depth + 1 == path.len() => {}
                    _ => {
                        let suffix = match field("grain").and_then(Value::as_integer) {
                            Some(grain) => format!("[grain = {grain}]"),
                            None => format!("[{}]", n + 1),
                        };
                        if let Some(last) = pieces.last_mut() {
                            last.push_str(&suffix);
                        }
                    }
                }
                parent_key = None;
            }
        }
    }
    Located {
        cluster,
        machine,
        key: pieces.join("."),
    }
}

/// Reads a table whose shape (`toml::Table` of the same text) is known, recording the span of
/// each scalar and reading sub-tables and arrays without asking for theirs (implicit tables
/// have none).
struct TableSeed<'a> {
    shape: &'a Table,
    path: Vec<Segment>,
    leaves: &'a mut Vec<Leaf>,
}

struct ArraySeed<'a> {
    shape: &'a [Value],
    path: Vec<Segment>,
    leaves: &'a mut Vec<Leaf>,
}

/// One value of known shape.
struct ValueSeed<'a> {
    shape: Option<&'a Value>,
    path: Vec<Segment>,
    leaves: &'a mut Vec<Leaf>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.shape {
            Some(Value::Table(table)) => TableSeed {
                shape: table,
                path: self.path,
                leaves: self.leaves,
            }
            .deserialize(deserializer),
            Some(Value::Array(array)) => ArraySeed {
                shape: array,
                path: self.path,
                leaves: self.leaves,
            }
            .deserialize(deserializer),
            // a date has no span of its own; an unexpected value is skipped
            Some(Value::Datetime(_)) | None => {
                IgnoredAny::deserialize(deserializer)?;
                Ok(())
            }
            Some(_) => {
                let spanned = Spanned::<IgnoredAny>::deserialize(deserializer)?;
                self.leaves.push(Leaf {
                    path: self.path,
                    span: spanned.span(),
                });
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for TableSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TableSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let mut path = self.path.clone();
            path.push(Segment::Key(key.clone()));
            map.next_value_seed(ValueSeed {
                shape: self.shape.get(&key),
                path,
                leaves: self.leaves,
            })?;
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for ArraySeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ArraySeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        let mut index = 0;
        loop {
            let mut path = self.path.clone();
            path.push(Segment::Index(index));
            let seed = ValueSeed {
                shape: self.shape.get(index),
                path,
                leaves: self.leaves,
            };
            if seq.next_element_seed(seed)?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"
[application]
name = "x"
tasks = -3
grain = [ { grain = 400, tasks = 1, oper = "big" } ]

[model]
selection = "best"

[launch]
when = 1979-05-27T07:32:00Z
deep.er = { a = [1, 2, "three"] }

[[cluster]]
name = "spain"
use_workers = ["a", 3]
machines = [
  { host = "aoquir1", role = "manager" },
  { host = "aoquir3", role = "worker", perf = "fast" },
]

[[cluster]]
machines = [ { host = "h", perf = true } ]
"#;

    fn at(needle: &str) -> Option<Located> {
        locate(TEXT, TEXT.find(needle).unwrap())
    }

    fn located(cluster: Option<&str>, machine: Option<&str>, key: &str) -> Option<Located> {
        Some(Located {
            cluster: cluster.map(str::to_string),
            machine: machine.map(str::to_string),
            key: key.to_string(),
        })
    }

    #[test]
    fn values_are_named_by_their_key_cluster_and_machine() {
        assert_eq!(at("-3"), located(None, None, "application.tasks"));
        assert_eq!(
            at("\"big\""),
            located(None, None, "application.grain[grain = 400].oper")
        );
        assert_eq!(at("\"best\""), located(None, None, "model.selection"));
        assert_eq!(at("3]"), located(Some("spain"), None, "use_workers"));
        assert_eq!(
            at("\"manager\""),
            located(Some("spain"), Some("aoquir1"), "role")
        );
        assert_eq!(
            at("\"fast\""),
            located(Some("spain"), Some("aoquir3"), "perf")
        );
        assert_eq!(at("true"), located(Some("#2"), Some("h"), "perf"));
        assert_eq!(at("\"three\""), located(None, None, "launch.deep.er.a"));
    }

    #[test]
    fn keys_tables_and_dates_are_no_value() {
        assert_eq!(at("[model]"), None);
        assert_eq!(at("selection"), None);
        assert_eq!(at("1979"), None);
        assert_eq!(locate("not = = toml", 3), None);
        assert_eq!(locate(TEXT, TEXT.len() + 10), None);
    }
}
