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
//!
//! A rank is a process, except that CMs facing the master may share one: the lines naming
//! the same `process=NAME` (on one host) are one process of the MPI job, which serves all
//! their links ([`ProcessMap`]). A main cluster with 63 links then spends one process slot
//! and one poller of MPI on them rather than 63.

use std::{collections::BTreeMap, fmt, path::Path, path::PathBuf};

/// The rank of a cluster's master (or sub-master): the first rank line.
pub const MASTER: usize = 0;

/// An error in a machine file, naming the file and the line.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct MachineFileError {
    /// The machine file.
    pub path: PathBuf,
    /// 1-based line number (0 when the error is about the whole file).
    pub line: usize,
    /// What is wrong.
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
    Server {
        /// The port it listens on.
        port: u16,
    },
    /// `0`: connects to `host:port`.
    Client {
        /// The server CM's host.
        host: String,
        /// The server CM's port.
        port: u16,
    },
}

/// The `M|S 1|0 PORT [HOST]` annotation of a communication-manager line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CmSpec {
    /// `M` or `S`.
    pub facing: Facing,
    /// `1 PORT` or `0 PORT HOST`.
    pub endpoint: Endpoint,
}

/// One rank line of a machine file.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RankLine {
    /// 1-based line number in the file.
    pub line_no: usize,
    /// The host the rank runs on.
    pub host: String,
    /// The communication-manager annotation, on a CM line.
    pub cm: Option<CmSpec>,
    /// `key=value` annotations, parsed and checked.
    pub annotations: Annotations,
}

impl RankLine {
    /// The emulated speed factor (`speed=`; 1.0 when absent).
    pub fn speed(&self) -> f64 {
        self.annotations.speed.unwrap_or(1.0)
    }
}

/// The `key=value` annotations of a rank line, each parsed and checked where it may appear
/// when the file is read, so a bad value stops every rank before any starts.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Annotations {
    /// `speed=`: emulated speed factor of a worker (> 0): a task of `t` seconds at speed 1
    /// takes `t / speed`.
    pub speed: Option<f64>,
    /// `cluster=`: the name of this cluster (on the first line) or of the cluster behind a
    /// CM facing a master.
    pub cluster: Option<String>,
    /// `name=`: a CM's certificate name (required on every CM line).
    pub name: Option<String>,
    /// `peer=`: the certificate name of the CM at the other end of the link: the server a
    /// client connects to, or the only client a server accepts.
    pub peer: Option<String>,
    /// `bind=`: the address a server CM listens on (default: its host).
    pub bind: Option<String>,
    /// `nt=`: tasks per inter-cluster task, on a CM facing a master (>= 1).
    pub nt: Option<usize>,
    /// `nr=`: local results joined into one inter-cluster result, on a CM facing a
    /// sub-master (>= 1).
    pub nr: Option<usize>,
    /// `window=`: inter-cluster tasks sent ahead of the far side's requests, on a CM facing
    /// a master (>= 1).
    pub window: Option<u64>,
    /// `max_tasks=`: at most this many new tasks go to the cluster behind a CM facing a
    /// master (its balanced share under `load_balance`).
    pub max_tasks: Option<u64>,
    /// `workers=`: workers behind a CM facing a master, for the live prediction (>= 1).
    pub workers: Option<usize>,
    /// `path_send=`, `path_recv=`: bytes per second a CM's link is expected to send and to
    /// receive at, and `path_rtt_ms=` its round trip (from the plan or the calibration): the
    /// three given, the link starts warm (`hmw_cm::PathHint`).
    pub path_send: Option<f64>,
    /// See `path_send`.
    pub path_recv: Option<f64>,
    /// See `path_send`.
    pub path_rtt_ms: Option<f64>,
    /// `process=`: on a CM facing a master, the process it shares with the other such lines
    /// of the same name (and host).
    pub process: Option<String>,
}

/// Which lines an annotation may appear on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Worker,
    First,
    AnyCm,
    MasterCm,
    SubMasterCm,
    ServerCm,
}

impl Place {
    fn describe(places: &[Place]) -> String {
        let names: Vec<&str> = places
            .iter()
            .map(|p| match p {
                Place::Worker => "a worker line",
                Place::First => "the first line",
                Place::AnyCm => "a communication-manager line",
                Place::MasterCm => "a CM facing a master (# M)",
                Place::SubMasterCm => "a CM facing a sub-master (# S)",
                Place::ServerCm => "a server CM (# M|S 1 ...)",
            })
            .collect();
        names.join(" or ")
    }
}

/// Every annotation the framework reads, and where it may appear.
const KNOWN: &[(&str, &[Place])] = &[
    ("speed", &[Place::Worker]),
    ("cluster", &[Place::First, Place::MasterCm]),
    ("name", &[Place::AnyCm]),
    ("peer", &[Place::AnyCm]),
    ("bind", &[Place::ServerCm]),
    ("nt", &[Place::MasterCm]),
    ("nr", &[Place::SubMasterCm]),
    ("window", &[Place::MasterCm]),
    ("max_tasks", &[Place::MasterCm]),
    ("workers", &[Place::MasterCm]),
    ("path_send", &[Place::AnyCm]),
    ("path_recv", &[Place::AnyCm]),
    ("path_rtt_ms", &[Place::AnyCm]),
    ("process", &[Place::MasterCm]),
];

impl Annotations {
    /// Set annotation `key` from its text.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn at_least<T: std::str::FromStr + PartialOrd>(
            key: &str,
            value: &str,
            min: T,
        ) -> Result<T, String> {
            match value.parse::<T>() {
                Ok(n) if n >= min => Ok(n),
                _ => Err(format!(
                    "{key}={value}: expected a whole number >= {}",
                    if key == "max_tasks" { 0 } else { 1 }
                )),
            }
        }
        let name = |value: &str| {
            let valid = value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
            if valid {
                Ok(value.to_owned())
            } else {
                Err(format!(
                    "{key}={value}: use letters, digits, '-', '_' and '.' only"
                ))
            }
        };
        match key {
            "speed" => match value.parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => self.speed = Some(s),
                _ => return Err(format!("speed={value}: expected a positive number")),
            },
            "cluster" => self.cluster = Some(name(value)?),
            "name" => self.name = Some(name(value)?),
            "peer" => self.peer = Some(name(value)?),
            "process" => self.process = Some(name(value)?),
            "bind" => self.bind = Some(value.to_owned()),
            "nt" => self.nt = Some(at_least(key, value, 1)?),
            "nr" => self.nr = Some(at_least(key, value, 1)?),
            "window" => self.window = Some(at_least(key, value, 1)?),
            "max_tasks" => self.max_tasks = Some(at_least(key, value, 0)?),
            "workers" => self.workers = Some(at_least(key, value, 1)?),
            "path_send" | "path_recv" | "path_rtt_ms" => {
                let number = match value.parse::<f64>() {
                    Ok(n) if n.is_finite() && (n > 0.0 || key == "path_rtt_ms" && n == 0.0) => n,
                    _ => {
                        return Err(format!(
                            "{key}={value}: expected a number {}",
                            if key == "path_rtt_ms" {
                                "of milliseconds, 0 or more"
                            } else {
                                "of bytes per second above 0"
                            }
                        ))
                    }
                };
                match key {
                    "path_send" => self.path_send = Some(number),
                    "path_recv" => self.path_recv = Some(number),
                    _ => self.path_rtt_ms = Some(number),
                }
            }
            _ => {
                let known: Vec<&str> = KNOWN.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "unknown annotation '{key}' (known: {})",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The annotations given, as `(key, value)` pairs in a fixed order.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        let mut push = |key: &'static str, value: Option<String>| {
            if let Some(value) = value {
                pairs.push((key, value));
            }
        };
        push("speed", self.speed.map(|v| v.to_string()));
        push("cluster", self.cluster.clone());
        push("name", self.name.clone());
        push("peer", self.peer.clone());
        push("bind", self.bind.clone());
        push("nt", self.nt.map(|v| v.to_string()));
        push("nr", self.nr.map(|v| v.to_string()));
        push("window", self.window.map(|v| v.to_string()));
        push("max_tasks", self.max_tasks.map(|v| v.to_string()));
        push("workers", self.workers.map(|v| v.to_string()));
        push("path_send", self.path_send.map(|v| v.to_string()));
        push("path_recv", self.path_recv.map(|v| v.to_string()));
        push("path_rtt_ms", self.path_rtt_ms.map(|v| v.to_string()));
        push("process", self.process.clone());
        pairs
    }
}

impl fmt::Display for Annotations {
    /// `key=value` pairs separated by spaces, as they appear in a machine file.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text: Vec<String> = self
            .pairs()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&text.join(" "))
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
    /// The file read.
    pub path: PathBuf,
    /// One line per rank, in rank order.
    pub ranks: Vec<RankLine>,
    /// The processes of the MPI job that hold the ranks.
    pub processes: ProcessMap,
}

/// Which process of a cluster's MPI job holds each rank: one rank a process, except the CMs
/// facing a master that name the same `process=`, which share one. Processes are numbered in
/// the order of their first rank; the first line (the master) is never shared, so process 0 is
/// rank 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessMap {
    /// The process of each rank; empty when every rank is a process of its own.
    process_of: Vec<u32>,
    /// The first rank of each process; empty as `process_of`.
    first_rank: Vec<u32>,
    /// The ranks of each process holding several, by process.
    shared: BTreeMap<usize, Vec<usize>>,
    /// Ranks in the file.
    ranks: usize,
}

impl ProcessMap {
    /// The map of `lines`: each `(host, process=)` of a line.
    fn of<'a>(
        lines: impl Iterator<Item = (&'a str, Option<&'a str>, usize)>,
    ) -> Result<Self, (usize, String)> {
        let mut process_of = Vec::new();
        let mut first_rank = Vec::new();
        let mut named: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        let mut shared: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (rank, (host, process, line_no)) in lines.enumerate() {
            let Some(name) = process else {
                process_of.push(first_rank.len() as u32);
                first_rank.push(rank as u32);
                continue;
            };
            match named.get(name) {
                Some(&(_, other)) if other != host => {
                    return Err((
                        line_no,
                        format!(
                            "process={name} is on host {other} already: the CMs sharing a \
                             process run on one host"
                        ),
                    ))
                }
                Some(&(process, _)) => {
                    process_of.push(process as u32);
                    shared.entry(process).or_default().push(rank);
                }
                None => {
                    let process = first_rank.len();
                    named.insert(name, (process, host));
                    process_of.push(process as u32);
                    first_rank.push(rank as u32);
                    shared.insert(process, vec![rank]);
                }
            }
        }
        // A name on one line only: a process of one rank, as any other.
        shared.retain(|_, ranks| ranks.len() > 1);
        let ranks = process_of.len();
        if shared.is_empty() {
            return Ok(ProcessMap {
                ranks,
                ..Default::default()
            });
        }
        Ok(ProcessMap {
            process_of,
            first_rank,
            shared,
            ranks,
        })
    }

    /// Ranks in the machine file.
    pub fn rank_count(&self) -> usize {
        self.ranks
    }

    /// Whether every rank is a process of its own.
    pub fn is_one_rank_each(&self) -> bool {
        self.shared.is_empty()
    }

    /// Processes in the MPI job.
    pub fn count(&self) -> usize {
        if self.is_one_rank_each() {
            self.ranks
        } else {
            self.first_rank.len()
        }
    }

    /// The process holding `rank`.
    pub fn process_of(&self, rank: usize) -> usize {
        if self.is_one_rank_each() {
            rank
        } else {
            self.process_of[rank] as usize
        }
    }

    /// The rank of `process`, or its first one if it holds several.
    pub fn first_rank(&self, process: usize) -> usize {
        if self.is_one_rank_each() {
            process
        } else {
            self.first_rank[process] as usize
        }
    }

    /// The ranks of `process` if it holds several (CMs facing the master), in rank order.
    pub fn shared_ranks(&self, process: usize) -> Option<&[usize]> {
        self.shared.get(&process).map(Vec::as_slice)
    }
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
            let (before, annotation) = split_line(raw);
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
            let (cm, annotations, keys) =
                parse_annotation(annotation).map_err(|m| error(line_no, m))?;
            let first = ranks.is_empty();
            if first && cm.is_some() {
                return Err(error(
                    line_no,
                    "the first rank line is the master and cannot be a communication manager"
                        .into(),
                ));
            }
            check_places(first, cm.as_ref(), &keys).map_err(|m| error(line_no, m))?;
            ranks.push(RankLine {
                line_no,
                host: host.to_owned(),
                cm,
                annotations,
            });
        }
        // A line is some 300 bytes and a file may have a million: none spare.
        ranks.shrink_to_fit();
        let processes = ProcessMap::of(
            ranks
                .iter()
                .map(|r| (r.host.as_str(), r.annotations.process.as_deref(), r.line_no)),
        )
        .map_err(|(line, message)| error(line, message))?;
        let file = MachineFile {
            path: path.to_owned(),
            ranks,
            processes,
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
        let mut facing_sub_master = self
            .ranks
            .iter()
            .filter(|r| matches!(&r.cm, Some(cm) if cm.facing == Facing::SubMaster));
        if let (Some(_), Some(second)) = (facing_sub_master.next(), facing_sub_master.next()) {
            return Err(MachineFileError {
                path: self.path.clone(),
                line: second.line_no,
                message: "a second CM facing the sub-master: a cluster has one upstream".into(),
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

    /// Number of ranks (lines).
    pub fn rank_count(&self) -> usize {
        self.ranks.len()
    }

    /// Number of processes the MPI job must have: the ranks, less those sharing a process.
    pub fn process_count(&self) -> usize {
        self.processes.count()
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
    /// rank 0 is a sub-master fed through it (a file has at most one: checked when read).
    pub fn upstream(&self) -> Option<usize> {
        (0..self.ranks.len())
            .find(|&r| matches!(&self.ranks[r].cm, Some(cm) if cm.facing == Facing::SubMaster))
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

/// The host of each process of the MPI job of a machine file's `text`, in process order: its
/// rank lines' hosts, less the lines after the first of each `process=` (see [`ProcessMap`]).
/// Reads the text as [`MachineFile::parse`] does, without checking it.
pub fn process_hosts(text: &str) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    text.lines()
        .filter_map(|line| {
            let (before, annotation) = split_line(line);
            let host = before.split_whitespace().next()?;
            let process = annotation
                .split_whitespace()
                .find_map(|token| token.strip_prefix("process="));
            match process {
                Some(name) if !seen.insert(name) => None,
                _ => Some(host),
            }
        })
        .collect()
}

/// A line of a machine file cut at its `#`s: what comes before the first (the host, on a rank
/// line), and the annotations, up to a second `#` (the rest is a free comment).
fn split_line(line: &str) -> (&str, &str) {
    match line.split_once('#') {
        Some((before, after)) => (before, after.split('#').next().unwrap_or("")),
        None => (line, ""),
    }
}

/// Parse what follows `#` on a rank line: optional CM fields, then `key=value` annotations.
/// Returns the keys given too, for [`check_places`].
fn parse_annotation(
    text: &str,
) -> Result<(Option<CmSpec>, Annotations, Vec<&'static str>), String> {
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
    let mut annotations = Annotations::default();
    let mut keys: Vec<&'static str> = Vec::new();
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
        annotations.set(key, value)?;
        let known = KNOWN
            .iter()
            .map(|(k, _)| *k)
            .find(|k| *k == key)
            .expect("set() accepts known keys only");
        if keys.contains(&known) {
            return Err(format!("annotation '{key}' given twice"));
        }
        keys.push(known);
    }
    Ok((cm, annotations, keys))
}

/// Check that each annotation given sits on a line where it means something, and that a CM
/// line names its certificate.
fn check_places(first: bool, cm: Option<&CmSpec>, keys: &[&'static str]) -> Result<(), String> {
    let here = |place: Place| match (place, cm) {
        (Place::Worker, None) => !first,
        (Place::First, None) => first,
        (Place::AnyCm, Some(_)) => true,
        (Place::MasterCm, Some(c)) => c.facing == Facing::Master,
        (Place::SubMasterCm, Some(c)) => c.facing == Facing::SubMaster,
        (Place::ServerCm, Some(c)) => matches!(c.endpoint, Endpoint::Server { .. }),
        _ => false,
    };
    for key in keys {
        let (_, places) = KNOWN
            .iter()
            .find(|(k, _)| k == key)
            .expect("keys are known");
        if !places.iter().any(|&p| here(p)) {
            return Err(format!(
                "{key}= does not apply here: it belongs on {}",
                Place::describe(places)
            ));
        }
    }
    if cm.is_some() && !keys.contains(&"name") {
        return Err("a communication manager needs name=NAME (the name of its certificate)".into());
    }
    Ok(())
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
            "# comment\n\nnodeA\nnodeB # speed=0.5\nnodeC # M 1 7000 name=c # CM facing master\n\
             nodeX # S 0 7000 nodeC name=x nr=2\n",
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
        assert_eq!(file.ranks[3].annotations.nr, Some(2));
        assert_eq!(file.ranks[3].annotations.to_string(), "name=x nr=2");
        assert_eq!(file.worker_ranks(), vec![1]);
    }

    /// A CM's path annotations round-trip through their text.
    #[test]
    fn a_cms_path_reads_and_writes_back() {
        let file =
            parse("a\nb # M 1 7000 name=c path_send=8e6 path_recv=1000000 path_rtt_ms=120\n")
                .unwrap();
        let a = &file.ranks[1].annotations;
        assert_eq!(
            (a.path_send, a.path_recv, a.path_rtt_ms),
            (Some(8e6), Some(1e6), Some(120.0))
        );
        assert!(a
            .to_string()
            .ends_with("path_send=8000000 path_recv=1000000 path_rtt_ms=120"));
    }

    /// CMs facing the master that name one `process=` are one process; the others keep one
    /// each, numbered in the order of their first rank.
    #[test]
    fn cms_naming_one_process_share_it() {
        let file = parse(
            "a\nw1\nc # M 1 7000 name=x process=links\nw2\n\
             c # M 1 7001 name=y process=links\nc # M 1 7002 name=z process=alone\n",
        )
        .unwrap();
        let p = &file.processes;
        assert_eq!((file.rank_count(), file.process_count()), (6, 5));
        assert!(!p.is_one_rank_each());
        let of: Vec<usize> = (0..6).map(|r| p.process_of(r)).collect();
        assert_eq!(of, vec![0, 1, 2, 3, 2, 4]);
        let first: Vec<usize> = (0..5).map(|q| p.first_rank(q)).collect();
        assert_eq!(first, vec![0, 1, 2, 3, 5]);
        assert_eq!(p.shared_ranks(2), Some(&[2, 4][..]));
        assert_eq!(p.shared_ranks(4), None);
        assert_eq!(
            file.ranks[2].annotations.to_string(),
            "name=x process=links"
        );

        assert_eq!(
            process_hosts(
                "# c\na # cluster=m\nw1\nc # M 1 7000 name=x process=links\nw2\n\
                 c # M 1 7001 name=y process=links # process=no\n\n"
            ),
            vec!["a", "w1", "c", "w2"]
        );

        let plain = parse("a\nb\nc # M 1 7000 name=x\n").unwrap();
        assert!(plain.processes.is_one_rank_each());
        assert_eq!(plain.process_count(), 3);
        assert_eq!(plain.processes.process_of(2), 2);
    }

    #[test]
    fn errors_name_file_and_line() {
        let cases = [
            ("a\nb slots=4\n", 2, "one rank per line"),
            ("a\nb # speed=-1\n", 2, "positive"),
            ("a\nb # speed=fast\n", 2, "positive"),
            ("a\nb # M 1\n", 2, "incomplete"),
            ("a\nb # M 1 7000\n", 2, "needs name="),
            (
                "a\nb # M 1 7000 name=c nt=abc\n",
                2,
                "nt=abc: expected a whole number >= 1",
            ),
            ("a\nb # M 1 7000 name=c nt=0\n", 2, "nt=0"),
            ("a\nb # M 1 7000 name=c window=0\n", 2, "window=0"),
            ("a\nb # M 1 7000 name=c max_tasks=-3\n", 2, "max_tasks=-3"),
            ("a\nb # M 1 7000 name=c workers=x\n", 2, "workers=x"),
            ("a\nb # S 0 7000 h name=c nr=0\n", 2, "nr=0"),
            (
                "a\nb # M 1 7000 name=c path_send=0\n",
                2,
                "path_send=0: expected a number of bytes per second above 0",
            ),
            (
                "a\nb # S 0 7000 h name=c path_rtt_ms=-5\n",
                2,
                "path_rtt_ms=-5: expected a number of milliseconds, 0 or more",
            ),
            ("a\nb # path_recv=1e6\n", 2, "path_recv= does not apply"),
            (
                "a\nb # M 1 7000 name=c nr=2\n",
                2,
                "nr= does not apply here",
            ),
            (
                "a\nb # S 0 7000 h name=c nt=2\n",
                2,
                "nt= does not apply here",
            ),
            (
                "a\nb # S 0 7000 h name=c bind=0.0.0.0\n",
                2,
                "bind= does not apply",
            ),
            (
                "a\nb # M 1 7000 name=c speed=2\n",
                2,
                "speed= does not apply",
            ),
            ("a # speed=2\nb\n", 1, "speed= does not apply"),
            ("a\nb # cluster=x\n", 2, "cluster= does not apply"),
            ("a\nb # speed2=1\n", 2, "unknown annotation 'speed2'"),
            ("a\nb # foo=bar\n", 2, "unknown annotation"),
            ("a\nb # name=a/b\n", 2, "letters, digits"),
            (
                "a\nb # S 0 7000 h name=c\nc # S 0 7001 h name=d\n",
                3,
                "second CM facing the sub-master",
            ),
            ("a\nb # M 1 99999\n", 2, "port"),
            ("a\nb # S 0 7000\n", 2, "server host"),
            ("a\nb # M 2 7000\n", 2, "must be 1"),
            ("a\nb # fast\n", 2, "unexpected annotation"),
            ("a\nb # speed=1 speed=2\n", 2, "twice"),
            ("a\nb # process=p\n", 2, "process= does not apply"),
            (
                "a\nb # S 0 7000 h name=c process=p\n",
                2,
                "process= does not apply",
            ),
            (
                "a\nb # M 1 7000 name=c process=p\nc # M 1 7001 name=d process=p\n",
                3,
                "process=p is on host b already",
            ),
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
