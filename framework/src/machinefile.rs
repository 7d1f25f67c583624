//! The enhanced MPI machine file: one rank per line, in rank order.
//!
//! ```text
//! # a full-line comment
//! nodeA                         master (first rank line; the sub-master in an external cluster)
//! nodeB # speed=0.5             a worker, with an annotation
//! nodeC # M 1 7000              a communication manager facing a master, QUIC server on 7000
//! nodeX # S 0 7000 nodeC        a CM facing a sub-master, client of nodeC:7000
//! nodeY # speed=2 # free text   a second `#` starts a free comment
//! ```
//! Everything after the first `#` is a comment to MPI, so the file stays a valid plain hostfile.
//! After it: optionally the CM fields `M|S 1|0 PORT [SERVER_HOST]`, then `key=value`
//! annotations; a second `#` ends the annotations.

use std::{collections::BTreeMap, fmt, path::Path, path::PathBuf};

/// An error in a machine file, naming the file and the line.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct MachineFileError {
    pub path: PathBuf,
    /// 1-based line number (0 when the error is about the whole file).
    pub line: usize,
    pub message: String,
}

/// Which side a communication manager faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Facing {
    /// `M`: the CM sits in the cluster of a master and forwards that master's tasks out.
    Master,
    /// `S`: the CM sits in an external cluster and feeds its sub-master.
    SubMaster,
}

/// The QUIC endpoint role of a communication manager.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Endpoint {
    /// `1`: listens on `port`.
    Server { port: u16 },
    /// `0`: connects to `host:port`.
    Client { host: String, port: u16 },
}

/// The `M|S 1|0 PORT [HOST]` annotation of a communication-manager line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CmSpec {
    pub facing: Facing,
    pub endpoint: Endpoint,
}

/// One rank line of a machine file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankLine {
    /// 1-based line number in the file.
    pub line_no: usize,
    pub host: String,
    pub cm: Option<CmSpec>,
    /// `key=value` annotations, e.g. `speed=0.5`.
    pub annotations: BTreeMap<String, String>,
}

impl RankLine {
    /// The emulated speed factor (`speed=`, validated positive at parse time; 1.0 when absent).
    pub fn speed(&self) -> f64 {
        self.annotations
            .get("speed")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1.0)
    }
}

/// The role of a rank, decided by its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The first rank line: the master (or the sub-master of an external cluster).
    Master,
    /// A plain line.
    Worker,
    /// A line with a CM annotation.
    CommunicationManager,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Master => "master",
            Role::Worker => "worker",
            Role::CommunicationManager => "communication manager",
        })
    }
}

/// A parsed machine file.
#[derive(Debug, Clone)]
pub struct MachineFile {
    pub path: PathBuf,
    pub ranks: Vec<RankLine>,
}

impl MachineFile {
    /// Read and parse a machine file.
    pub fn load(path: &Path) -> Result<Self, MachineFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| MachineFileError {
            path: path.to_owned(),
            line: 0,
            message: format!("cannot read machine file: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Parse the text of a machine file; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, MachineFileError> {
        let error = |line: usize, message: String| MachineFileError {
            path: path.to_owned(),
            line,
            message,
        };
        let mut ranks = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line_no = index + 1;
            let (before, after) = match raw.split_once('#') {
                Some((b, a)) => (b, Some(a)),
                None => (raw, None),
            };
            let mut host_fields = before.split_whitespace();
            let Some(host) = host_fields.next() else {
                continue; // blank or full-line comment
            };
            if let Some(extra) = host_fields.next() {
                return Err(error(
                    line_no,
                    format!(
                        "unexpected '{extra}' after host '{host}': one rank per line, \
                         annotations go after '#'"
                    ),
                ));
            }
            let annotation = after.map(|a| a.split('#').next().unwrap_or(""));
            let (cm, annotations) =
                parse_annotation(annotation.unwrap_or("")).map_err(|m| error(line_no, m))?;
            ranks.push(RankLine {
                line_no,
                host: host.to_owned(),
                cm,
                annotations,
            });
        }
        let file = MachineFile {
            path: path.to_owned(),
            ranks,
        };
        file.validate()?;
        Ok(file)
    }

    fn validate(&self) -> Result<(), MachineFileError> {
        let Some(first) = self.ranks.first() else {
            return Err(MachineFileError {
                path: self.path.clone(),
                line: 0,
                message: "no rank lines: the first line must name the master".into(),
            });
        };
        if first.cm.is_some() {
            return Err(MachineFileError {
                path: self.path.clone(),
                line: first.line_no,
                message: "the first rank line is the master and cannot be a communication \
                          manager"
                    .into(),
            });
        }
        if self.ranks.len() < 2 {
            return Err(MachineFileError {
                path: self.path.clone(),
                line: first.line_no,
                message: "only a master: add at least one worker or communication manager line"
                    .into(),
            });
        }
        Ok(())
    }

    /// Number of ranks the MPI job must have.
    pub fn rank_count(&self) -> usize {
        self.ranks.len()
    }

    /// The role of `rank`.
    pub fn role(&self, rank: usize) -> Role {
        match (rank, &self.ranks[rank].cm) {
            (0, _) => Role::Master,
            (_, Some(_)) => Role::CommunicationManager,
            (_, None) => Role::Worker,
        }
    }

    /// The communication manager facing this cluster's sub-master (`# S ...`), if any: then
    /// rank 0 is a sub-master fed through it. At most one is allowed.
    pub fn upstream(&self) -> Result<Option<usize>, MachineFileError> {
        let mut facing_sub_master = (0..self.ranks.len())
            .filter(|&r| matches!(&self.ranks[r].cm, Some(cm) if cm.facing == Facing::SubMaster));
        let first = facing_sub_master.next();
        if let Some(second) = facing_sub_master.next() {
            return Err(MachineFileError {
                path: self.path.clone(),
                line: self.ranks[second].line_no,
                message: "a second CM facing the sub-master: a cluster has one upstream".into(),
            });
        }
        Ok(first)
    }

    /// Communication managers facing this cluster's master: its links to further clusters.
    pub fn master_facing_cms(&self) -> Vec<usize> {
        (0..self.ranks.len())
            .filter(|&r| matches!(&self.ranks[r].cm, Some(cm) if cm.facing == Facing::Master))
            .collect()
    }

    /// Ranks that compute tasks.
    pub fn worker_ranks(&self) -> Vec<usize> {
        (0..self.ranks.len())
            .filter(|&r| self.role(r) == Role::Worker)
            .collect()
    }
}

/// Parse what follows `#` on a rank line: optional CM fields, then `key=value` annotations.
fn parse_annotation(text: &str) -> Result<(Option<CmSpec>, BTreeMap<String, String>), String> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let mut rest = &tokens[..];
    let cm = match rest.first() {
        Some(&t @ ("M" | "S")) => {
            let facing = if t == "M" {
                Facing::Master
            } else {
                Facing::SubMaster
            };
            let (endpoint, used) = parse_endpoint(&rest[1..])?;
            rest = &rest[1 + used..];
            Some(CmSpec { facing, endpoint })
        }
        _ => None,
    };
    let mut annotations = BTreeMap::new();
    for token in rest {
        let Some((key, value)) = token.split_once('=') else {
            return Err(format!(
                "unexpected annotation '{token}': expected 'M|S 1|0 PORT [HOST]' first, then \
                 key=value pairs (a second '#' starts a free comment)"
            ));
        };
        if key.is_empty() || value.is_empty() {
            return Err(format!("annotation '{token}' needs a key and a value"));
        }
        if key == "speed" {
            match value.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => {}
                _ => return Err(format!("speed={value}: expected a positive number")),
            }
        }
        if annotations
            .insert(key.to_owned(), value.to_owned())
            .is_some()
        {
            return Err(format!("annotation '{key}' given twice"));
        }
    }
    Ok((cm, annotations))
}

/// Parse `1|0 PORT [HOST]`; returns the endpoint and how many tokens it used.
fn parse_endpoint(tokens: &[&str]) -> Result<(Endpoint, usize), String> {
    let usage = "a CM line reads 'M|S 1 PORT' (server) or 'M|S 0 PORT SERVER_HOST' (client)";
    let (Some(server), Some(port)) = (tokens.first(), tokens.get(1)) else {
        return Err(format!("incomplete CM annotation: {usage}"));
    };
    let port: u16 = match port.parse() {
        Ok(p) if p > 0 => p,
        _ => return Err(format!("CM port '{port}' is not a port number (1-65535)")),
    };
    match *server {
        "1" => Ok((Endpoint::Server { port }, 2)),
        "0" => match tokens.get(2) {
            Some(host) if !host.contains('=') => Ok((
                Endpoint::Client {
                    host: (*host).to_owned(),
                    port,
                },
                3,
            )),
            _ => Err(format!("a client CM needs the server host: {usage}")),
        },
        other => Err(format!(
            "CM endpoint '{other}' must be 1 (server) or 0 (client): {usage}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MachineFile, MachineFileError> {
        MachineFile::parse(Path::new("hosts"), text)
    }

    #[test]
    fn roles_follow_lines() {
        let file = parse(
            "# comment\n\nnodeA\nnodeB # speed=0.5\nnodeC # M 1 7000 # CM facing master\n\
             nodeX # S 0 7000 nodeC speed=2\n",
        )
        .unwrap();
        assert_eq!(file.rank_count(), 4);
        assert_eq!(file.role(0), Role::Master);
        assert_eq!(file.role(1), Role::Worker);
        assert_eq!(file.role(2), Role::CommunicationManager);
        assert_eq!(file.role(3), Role::CommunicationManager);
        assert_eq!(file.ranks[1].speed(), 0.5);
        assert_eq!(file.ranks[0].speed(), 1.0);
        assert_eq!(file.ranks[2].line_no, 5);
        assert_eq!(
            file.ranks[2].cm,
            Some(CmSpec {
                facing: Facing::Master,
                endpoint: Endpoint::Server { port: 7000 }
            })
        );
        assert_eq!(
            file.ranks[3].cm,
            Some(CmSpec {
                facing: Facing::SubMaster,
                endpoint: Endpoint::Client {
                    host: "nodeC".into(),
                    port: 7000
                }
            })
        );
        assert_eq!(file.ranks[3].annotations["speed"], "2");
        assert_eq!(file.worker_ranks(), vec![1]);
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            ("a\nb slots=4\n", 2, "one rank per line"),
            ("a\nb # speed=-1\n", 2, "positive"),
            ("a\nb # speed=fast\n", 2, "positive"),
            ("a\nb # M 1\n", 2, "incomplete"),
            ("a\nb # M 1 99999\n", 2, "port"),
            ("a\nb # S 0 7000\n", 2, "server host"),
            ("a\nb # M 2 7000\n", 2, "must be 1"),
            ("a\nb # fast\n", 2, "unexpected annotation"),
            ("a\nb # x=1 x=2\n", 2, "twice"),
            ("a # M 1 7000\nb\n", 1, "master"),
            ("a\n", 1, "only a master"),
            ("# nothing\n", 0, "no rank lines"),
        ];
        for (text, line, needle) in cases {
            let err = parse(text).unwrap_err();
            assert_eq!(err.line, line, "{text:?}: {err}");
            let shown = err.to_string();
            assert!(shown.starts_with("hosts:"), "{shown}");
            assert!(shown.contains(needle), "{text:?}: {shown}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn never_panics_on_annotation_like_text(
            lines in proptest::collection::vec("[a-z]{1,3}( # [MS01 =a-z0-9.#-]{0,20})?", 0..6)
        ) {
            let _ = parse(&lines.join("\n"));
        }
    }
}
