//! The journal of a master's results: its format, and what a restart reads back from it. No
//! I/O here: records are written into and read from byte buffers; the runtime (`hmw`'s
//! `journal` module) owns the file and the thread that syncs it.
//!
//! A journal is [`MAGIC`] followed by records, each `length: u32 | crc32: u32 | payload`
//! (little-endian; the CRC-32 of the payload, filled in by [`seal`] before the record is
//! written out), the payload's first byte its [`Kind`]:
//!
//! - one [`JournalHeader`] first: what a restart must find unchanged (the application's
//!   parameters, the binary's and the plan's fingerprints);
//! - one [`Record::Gathered`] per result the master gathered, in the order it gathered them:
//!   the tasks it stands for, its basic operations and its body as the master received it;
//! - [`Record::Redivided`] when the problem replaced a task taken back from a lost cluster;
//! - [`Record::Resumed`] each time a run resumed from the journal, and [`Record::Started`]
//!   when each run's clock started (its tasks began to go out).
//!
//! The file is only ever appended to and synced in order, so a crash can only leave its tail
//! torn: a record cut short, or bytes the disk never got (zeros). [`scan`] reads records up to
//! the first that is incomplete or fails its checksum and says where the good part ends; a
//! resumed run truncates the file there before appending.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{app::TaskId, protocol::ResultRef};

/// The first bytes of every journal: the name and the format's version.
pub const MAGIC: &[u8; 8] = b"HMWJRNL\x01";

/// Bytes before a record's payload: its length and checksum.
pub const RECORD_OVERHEAD: usize = 8;

/// The most a record's payload may hold: larger lengths are taken for a torn tail.
const MAX_PAYLOAD: usize = 1 << 31;

/// What a record is: the first byte of its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// [`JournalHeader`], bincode-encoded.
    Header = 1,
    /// [`Record::Gathered`].
    Gathered = 2,
    /// [`Record::Redivided`].
    Redivided = 3,
    /// [`Record::Resumed`].
    Resumed = 4,
    /// [`Record::Started`].
    Started = 5,
}

/// What a restart must find unchanged, written first in every journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalHeader {
    /// The application's parameters: its `[application]` table, as TOML.
    pub application: String,
    /// SHA-256 of the application binary that wrote the journal (hex).
    pub binary_sha256: String,
    /// Other fingerprints the launcher gave (`plan` = SHA-256 of the plan file), by name.
    pub fingerprints: BTreeMap<String, String>,
    /// When the first run started (seconds since the Unix epoch).
    pub started_unix_s: f64,
}

impl JournalHeader {
    /// What differs between the journal's header (`self`) and the run about to resume it
    /// (`now`), one line per difference; empty when nothing does.
    pub fn differences(&self, now: &JournalHeader) -> Vec<String> {
        let mut differences = Vec::new();
        if self.application != now.application {
            differences.push(format!(
                "the application's parameters ([application]) differ: the journal has\n{}\nthis \
                 run has\n{}",
                indent(&self.application),
                indent(&now.application)
            ));
        }
        if self.binary_sha256 != now.binary_sha256 {
            differences.push(format!(
                "the application binary differs: SHA-256 {} in the journal, {} now",
                self.binary_sha256, now.binary_sha256
            ));
        }
        let names: std::collections::BTreeSet<&String> = self
            .fingerprints
            .keys()
            .chain(now.fingerprints.keys())
            .collect();
        for name in names {
            let (then, current) = (self.fingerprints.get(name), now.fingerprints.get(name));
            if then != current {
                differences.push(format!(
                    "the {name} differs: fingerprint {} in the journal, {} now",
                    then.map_or("(none)", String::as_str),
                    current.map_or("(none)", String::as_str)
                ));
            }
        }
        differences
    }
}

fn indent(text: &str) -> String {
    let text = text.trim_end();
    if text.is_empty() {
        return "    (empty)".into();
    }
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A record after the header, as [`scan`] reads it (bodies borrowed from the journal's bytes).
#[derive(Debug, Clone, PartialEq)]
pub enum Record<'a> {
    /// A result gathered: the tasks it stands for (several when a sub-master joined them), its
    /// basic operations and its body.
    Gathered {
        /// The tasks, as the master gathered them.
        ids: Vec<TaskId>,
        /// Basic operations of those tasks.
        operations: f64,
        /// The result, bincode-encoded.
        body: &'a [u8],
    },
    /// Task `id` was taken back from a lost cluster and the problem sent `parts` tasks in its
    /// place (under the next ids the master had).
    Redivided {
        /// The task replaced.
        id: TaskId,
        /// How many replaced it.
        parts: u64,
    },
    /// A run's clock started here (every worker and link ready: its tasks began to go out).
    Started {
        /// When (seconds since the Unix epoch).
        unix_s: f64,
    },
    /// A run resumed from the journal here, having replayed `replayed` results.
    Resumed {
        /// When (seconds since the Unix epoch).
        unix_s: f64,
        /// Results replayed.
        replayed: u64,
    },
}

/// Appends a record of `kind` to `out`, its payload written by `payload` after the kind byte,
/// its length filled in once it is written (no payload is copied twice), its checksum left for
/// [`seal`]: the master appends, the thread that writes the file seals.
fn append_record(out: &mut Vec<u8>, kind: Kind, payload: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_OVERHEAD]);
    out.push(kind as u8);
    payload(out);
    let length = out.len() - start - RECORD_OVERHEAD;
    let length = u32::try_from(length).expect("a journal record over 4 GiB");
    out[start..start + 4].copy_from_slice(&length.to_le_bytes());
}

/// Fills in the checksum of every record of `records` (whole records as the `append_*`
/// functions wrote them, from a record's start), before they are written out; it stops at
/// bytes that are not a whole record. Sealing twice changes nothing.
pub fn seal(records: &mut [u8]) {
    let mut at = 0;
    while at + RECORD_OVERHEAD <= records.len() {
        let length = u32::from_le_bytes(records[at..at + 4].try_into().expect("4 bytes")) as usize;
        let end = at + RECORD_OVERHEAD + length;
        let Some(payload) = records.get(at + RECORD_OVERHEAD..end) else {
            return;
        };
        let crc = crc32fast::hash(payload);
        records[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

/// Appends the header record to `out` (after [`MAGIC`]).
pub fn append_header(out: &mut Vec<u8>, header: &JournalHeader) {
    let encoded = crate::protocol::encode(header);
    append_record(out, Kind::Header, |out| out.extend_from_slice(&encoded));
}

/// Appends the record of a gathered `result` to `out`.
pub fn append_gathered(out: &mut Vec<u8>, result: &ResultRef<'_>) {
    append_record(out, Kind::Gathered, |out| {
        out.extend_from_slice(&(result.ids.len() as u32).to_le_bytes());
        for id in &result.ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend_from_slice(&result.operations.to_le_bytes());
        out.extend_from_slice(result.body);
    });
}

/// Appends the record of task `id` replaced by `parts` tasks.
pub fn append_redivided(out: &mut Vec<u8>, id: TaskId, parts: u64) {
    append_record(out, Kind::Redivided, |out| {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&parts.to_le_bytes());
    });
}

/// Appends the mark of a run resumed at `unix_s` after replaying `replayed` results.
pub fn append_resumed(out: &mut Vec<u8>, unix_s: f64, replayed: u64) {
    append_record(out, Kind::Resumed, |out| {
        out.extend_from_slice(&unix_s.to_le_bytes());
        out.extend_from_slice(&replayed.to_le_bytes());
    });
}

/// Appends the mark of a run's clock started at `unix_s`.
pub fn append_started(out: &mut Vec<u8>, unix_s: f64) {
    append_record(out, Kind::Started, |out| {
        out.extend_from_slice(&unix_s.to_le_bytes())
    });
}

/// A journal's bytes as read back: its header, its records in order, and where its good part
/// ends.
#[derive(Debug)]
pub struct Scan<'a> {
    /// The header.
    pub header: JournalHeader,
    /// Every complete record after it, in order.
    pub records: Vec<Record<'a>>,
    /// Bytes of the journal up to the end of its last complete record: a resumed run
    /// truncates the file there.
    pub good_len: usize,
    /// What follows the good part, when anything does: a torn tail.
    pub torn: Option<Torn>,
}

/// The torn tail of a journal: bytes after the last complete record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torn {
    /// Where it starts.
    pub offset: usize,
    /// How many bytes it holds.
    pub bytes: usize,
    /// Why the record there is not complete.
    pub reason: String,
}

/// A journal that cannot be read at all.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JournalError {
    /// Not a journal, or one of another format version.
    #[error("not an hmw journal (it does not start with the journal's mark, version 1)")]
    NotAJournal,
    /// No complete header: the run that wrote it ended before its first sync.
    #[error("the journal has no complete header (its first run ended before writing one)")]
    NoHeader,
    /// A complete record (its checksum holds) that does not decode: a bug, not a crash.
    #[error("record at byte {offset}: {message}")]
    Malformed {
        /// Where the record starts.
        offset: usize,
        /// What is wrong.
        message: String,
    },
}

/// Reads `journal`'s records up to its first incomplete one.
pub fn scan(journal: &[u8]) -> Result<Scan<'_>, JournalError> {
    if journal.len() < MAGIC.len() || &journal[..MAGIC.len()] != MAGIC {
        return Err(JournalError::NotAJournal);
    }
    let mut at = MAGIC.len();
    let mut header = None;
    let mut records = Vec::new();
    let torn = loop {
        if at == journal.len() {
            break None;
        }
        let payload = match record_at(journal, at) {
            Ok(payload) => payload,
            Err(reason) => {
                break Some(Torn {
                    offset: at,
                    bytes: journal.len() - at,
                    reason,
                })
            }
        };
        let malformed = |message: String| JournalError::Malformed {
            offset: at,
            message,
        };
        let (kind, rest) = (payload[0], &payload[1..]);
        match (kind, &header) {
            (k, None) if k == Kind::Header as u8 => {
                header = Some(
                    crate::protocol::decode::<JournalHeader>(rest, "journal header")
                        .map_err(|e| malformed(e.to_string()))?,
                );
            }
            (_, None) => return Err(malformed("a record before the header".into())),
            (k, Some(_)) if k == Kind::Header as u8 => {
                return Err(malformed("a second header".into()))
            }
            (_, Some(_)) => records.push(decode_record(kind, rest).map_err(malformed)?),
        }
        at += RECORD_OVERHEAD + payload.len();
    };
    let header = header.ok_or(JournalError::NoHeader)?;
    Ok(Scan {
        header,
        records,
        good_len: at,
        torn,
    })
}

/// The payload of the record at `at`, or why it is not complete.
fn record_at(journal: &[u8], at: usize) -> Result<&[u8], String> {
    let rest = &journal[at..];
    if rest.len() < RECORD_OVERHEAD {
        return Err(format!(
            "{} bytes, less than a record's length and checksum",
            rest.len()
        ));
    }
    let length = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
    if length == 0 || length > MAX_PAYLOAD {
        return Err(format!("a record of length {length}"));
    }
    let Some(payload) = rest.get(RECORD_OVERHEAD..RECORD_OVERHEAD + length) else {
        return Err(format!(
            "a record of {length} bytes cut short at {}",
            rest.len() - RECORD_OVERHEAD
        ));
    };
    if crc32fast::hash(payload) != crc {
        return Err("a record whose checksum does not hold".into());
    }
    Ok(payload)
}

fn decode_record(kind: u8, rest: &[u8]) -> Result<Record<'_>, String> {
    let mut reader = Reader(rest);
    let record = match kind {
        k if k == Kind::Gathered as u8 => {
            let count = reader.u32()? as usize;
            if count == 0 || count > rest.len() / 8 {
                return Err(format!("a result standing for {count} tasks"));
            }
            let ids = (0..count).map(|_| reader.u64()).collect::<Result<_, _>>()?;
            let operations = reader.f64()?;
            Record::Gathered {
                ids,
                operations,
                body: reader.0,
            }
        }
        k if k == Kind::Redivided as u8 => Record::Redivided {
            id: reader.u64()?,
            parts: reader.u64()?,
        },
        k if k == Kind::Started as u8 => Record::Started {
            unix_s: reader.f64()?,
        },
        k if k == Kind::Resumed as u8 => Record::Resumed {
            unix_s: reader.f64()?,
            replayed: reader.u64()?,
        },
        other => return Err(format!("unknown record kind {other}")),
    };
    Ok(record)
}

/// Little-endian numbers off the front of a record.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("a record shorter than its fields".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> JournalHeader {
        JournalHeader {
            application: "n = 10\n".into(),
            binary_sha256: "ab".repeat(32),
            fingerprints: [("plan".to_string(), "cd".repeat(32))].into(),
            started_unix_s: 1.5e9,
        }
    }

    fn journal_of(results: &[(Vec<TaskId>, Vec<u8>)]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        append_header(&mut out, &header());
        for (ids, body) in results {
            append_gathered(
                &mut out,
                &ResultRef {
                    ids: ids.iter().copied().collect(),
                    operations: ids.len() as f64,
                    busy_s: 0.0,
                    decode_s: 0.0,
                    encode_s: 0.0,
                    body,
                },
            );
        }
        seal(&mut out[MAGIC.len()..]);
        out
    }

    #[test]
    fn records_read_back_as_written() {
        let mut journal = journal_of(&[(vec![3], vec![1, 2, 3]), (vec![0, 1], vec![])]);
        append_redivided(&mut journal, 7, 4);
        append_resumed(&mut journal, 12.5, 2);
        append_started(&mut journal, 13.5);
        seal(&mut journal[MAGIC.len()..]);
        let scan = scan(&journal).unwrap();
        assert_eq!(scan.header, header());
        assert_eq!(scan.good_len, journal.len());
        assert_eq!(scan.torn, None);
        assert_eq!(
            scan.records,
            vec![
                Record::Gathered {
                    ids: vec![3],
                    operations: 1.0,
                    body: &[1, 2, 3]
                },
                Record::Gathered {
                    ids: vec![0, 1],
                    operations: 2.0,
                    body: &[]
                },
                Record::Redivided { id: 7, parts: 4 },
                Record::Resumed {
                    unix_s: 12.5,
                    replayed: 2
                },
                Record::Started { unix_s: 13.5 },
            ]
        );
    }

    #[test]
    fn a_result_costs_its_body_and_29_bytes() {
        let empty = journal_of(&[]);
        let one = journal_of(&[(vec![9], vec![0; 1000])]);
        assert_eq!(one.len() - empty.len(), 1000 + 29);
    }

    #[test]
    fn no_header_and_no_magic_are_errors() {
        assert_eq!(scan(b"garbage").unwrap_err(), JournalError::NotAJournal);
        assert_eq!(scan(MAGIC).unwrap_err(), JournalError::NoHeader);
    }

    #[test]
    fn a_zeroed_tail_is_torn_not_an_error() {
        let mut journal = journal_of(&[(vec![1], vec![5; 10])]);
        let good = journal.len();
        journal.extend_from_slice(&[0; 4096]);
        let scan = scan(&journal).unwrap();
        assert_eq!(scan.good_len, good);
        assert_eq!(scan.records.len(), 1);
        assert_eq!(scan.torn.unwrap().bytes, 4096);
    }

    #[test]
    fn differences_name_what_changed() {
        let mut now = header();
        assert!(header().differences(&now).is_empty());
        now.binary_sha256 = "ef".repeat(32);
        now.fingerprints.insert("plan".into(), "00".into());
        now.application = "n = 11\n".into();
        let differences = header().differences(&now);
        assert_eq!(differences.len(), 3, "{differences:?}");
        assert!(differences[0].contains("n = 10") && differences[0].contains("n = 11"));
        assert!(differences[1].contains("binary"));
        assert!(differences[2].contains("plan"));
    }

    proptest! {
        /// Cut anywhere, or with its tail overwritten, a journal gives back exactly the
        /// records complete before the cut, and says where they end.
        #[test]
        fn a_cut_journal_keeps_every_record_before_the_cut(
            bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..12),
            cut in any::<prop::sample::Index>(),
            garbage in prop::collection::vec(any::<u8>(), 0..30),
        ) {
            let results: Vec<(Vec<TaskId>, Vec<u8>)> = bodies
                .into_iter()
                .enumerate()
                .map(|(i, body)| (vec![i as TaskId], body))
                .collect();
            let whole = journal_of(&results);
            let header_end = journal_of(&[]).len();
            let cut = header_end + cut.index(whole.len() - header_end + 1);
            let mut journal = whole[..cut].to_vec();
            journal.extend_from_slice(&garbage);
            let scan = scan(&journal).unwrap();
            // Records wholly before the cut survive; garbage after them is at most taken for
            // records if it happens to form one, which a 32-bit checksum makes vanishingly rare.
            let complete = {
                let mut at = header_end;
                let mut n = 0;
                for (ids, body) in &results {
                    let len = RECORD_OVERHEAD + 1 + 4 + 8 * ids.len() + 8 + body.len();
                    if at + len > cut { break; }
                    at += len;
                    n += 1;
                }
                n
            };
            prop_assert!(scan.records.len() >= complete);
            for (record, (ids, body)) in scan.records.iter().zip(&results).take(complete) {
                prop_assert_eq!(record, &Record::Gathered { ids: ids.clone(), operations: ids.len() as f64, body });
            }
            prop_assert!(scan.good_len <= journal.len());
            prop_assert_eq!(scan.torn.is_none(), scan.good_len == journal.len());
        }
    }
}
