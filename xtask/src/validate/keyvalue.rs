//! The `key=value` lines the tools print for scripts (`launch clusters=2 tasks=80
//! makespan_s=6.500 stats=PATH`, `report name=... err=-0.0123 ...`, `simulate runs=3
//! median_s=...`): one parser for all of them.

use anyhow::{anyhow, Context, Result};

use super::numbers::Figure;

/// The pairs of one line: its words split on spaces, each word holding an `=` a pair (the key
/// before the first `=`, the value after it); words without `=` are not pairs. A key given
/// twice keeps its last value, as the script's `sed 's/.* key=.../'` took the last.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyValues {
    line: String,
    pairs: Vec<(String, String)>,
}

impl KeyValues {
    /// The pairs of `line`.
    pub(crate) fn parse(line: &str) -> KeyValues {
        let pairs = line
            .split(' ')
            .filter_map(|word| word.split_once('='))
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect();
        KeyValues {
            line: line.to_owned(),
            pairs,
        }
    }

    /// The value of `key`, if the line has it.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key`; an error naming the key and the line otherwise.
    pub(crate) fn text(&self, key: &str) -> Result<&str> {
        self.get(key)
            .ok_or_else(|| anyhow!("no `{key}=` in the line `{}`", self.line))
    }

    /// The number `key=` holds.
    pub(crate) fn figure(&self, key: &str) -> Result<Figure> {
        let text = self.text(key)?;
        Figure::parse(text).ok_or_else(|| {
            anyhow!(
                "`{key}={text}` is not a number, in the line `{}`",
                self.line
            )
        })
    }

    /// `key=true` or `key=false`.
    pub(crate) fn boolean(&self, key: &str) -> Result<bool> {
        match self.text(key)? {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(anyhow!(
                "`{key}={other}` is neither true nor false, in the line `{}`",
                self.line
            )),
        }
    }

    /// `key=K/N`.
    pub(crate) fn count(&self, key: &str) -> Result<Count> {
        let text = self.text(key)?;
        Count::parse(text).with_context(|| format!("in the line `{}`", self.line))
    }
}

/// `K/N`: K of N things checked (clusters within 5 points, scenarios within a tolerance).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Count {
    /// How many passed.
    pub(crate) passed: u64,
    /// Out of how many.
    pub(crate) of: u64,
}

impl Count {
    /// `K/N` read.
    pub(crate) fn parse(text: &str) -> Result<Count> {
        let bad = || anyhow!("`{text}` is not a count K/N");
        let (passed, of) = text.split_once('/').ok_or_else(bad)?;
        Ok(Count {
            passed: passed.parse().map_err(|_| bad())?,
            of: of.parse().map_err(|_| bad())?,
        })
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.passed, self.of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_of_a_line() {
        let kv = KeyValues::parse(
            "launch clusters=2 tasks=80 makespan_s=6.500 stats=/tmp/a=b/lyon.stats.json",
        );
        assert_eq!(kv.get("clusters"), Some("2"));
        assert_eq!(kv.get("stats"), Some("/tmp/a=b/lyon.stats.json"));
        assert_eq!(kv.get("launch"), None);
        assert_eq!(kv.figure("makespan_s").unwrap().text(), "6.500");
        assert_eq!(kv.figure("makespan_s").unwrap().value(), 6.5);
    }

    #[test]
    fn keys_match_whole_words_and_the_last_wins() {
        let kv = KeyValues::parse("x err=0.1 sim_err=0.2  inside=true err=0.3 empty=");
        assert_eq!(kv.get("err"), Some("0.3"));
        assert_eq!(kv.get("sim_err"), Some("0.2"));
        assert_eq!(kv.get("empty"), Some(""));
        assert_eq!(kv.get("nside"), None);
        assert!(kv.boolean("inside").unwrap());
    }

    #[test]
    fn errors_name_the_key_and_the_line() {
        let kv = KeyValues::parse("report makespan_s=fast inside=maybe");
        let missing = kv.text("best_s").unwrap_err().to_string();
        assert!(missing.contains("best_s=") && missing.contains("report makespan_s"));
        assert!(kv
            .figure("makespan_s")
            .unwrap_err()
            .to_string()
            .contains("makespan_s=fast"));
        assert!(kv.boolean("inside").is_err());
    }

    #[test]
    fn counts() {
        let kv = KeyValues::parse("shares_within=2/3 clusters_eff_within=x/3");
        assert_eq!(
            kv.count("shares_within").unwrap(),
            Count { passed: 2, of: 3 }
        );
        assert_eq!(Count { passed: 2, of: 3 }.to_string(), "2/3");
        assert!(kv.count("clusters_eff_within").is_err());
        assert!(Count::parse("3").is_err());
    }
}
