//! Following a master's live feed: the records appended since the last look, whole lines
//! only. A feed that shrank was written anew (its cluster restarted): it is read again from
//! its start.

use std::{
    fs::File,
    io::{self, Read as _, Seek as _, SeekFrom},
    path::{Path, PathBuf},
};

use hmw_core::live_feed::LiveRecord;

/// The part of a feed read so far.
#[derive(Debug)]
pub(crate) struct FeedTail {
    path: PathBuf,
    /// Bytes of the file consumed, up to the end of the last whole line.
    offset: u64,
    /// Lines that did not decode, and the last one's error.
    pub(crate) bad_lines: u64,
    pub(crate) last_error: Option<String>,
}

impl FeedTail {
    pub(crate) fn new(path: &Path) -> FeedTail {
        FeedTail {
            path: path.to_owned(),
            offset: 0,
            bad_lines: 0,
            last_error: None,
        }
    }

    /// The records appended since the last call (none while the file does not exist).
    pub(crate) fn read_new(&mut self) -> Vec<LiveRecord> {
        match self.read_lines() {
            Ok(lines) => lines
                .iter()
                .filter_map(|line| match serde_json::from_slice(line) {
                    Ok(record) => Some(record),
                    Err(e) => {
                        self.bad_lines += 1;
                        self.last_error = Some(format!("{}: {e}", self.path.display()));
                        None
                    }
                })
                .collect(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                self.last_error = Some(format!("{}: {e}", self.path.display()));
                Vec::new()
            }
        }
    }

    /// The whole lines past `offset`; `offset` moves past them.
    fn read_lines(&mut self) -> io::Result<Vec<Vec<u8>>> {
        let mut file = File::open(&self.path)?;
        let len = file.metadata()?.len();
        if len < self.offset {
            self.offset = 0;
        }
        if len == self.offset {
            return Ok(Vec::new());
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.take(len - self.offset).read_to_end(&mut bytes)?;
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        self.offset += end as u64 + 1;
        Ok(bytes[..end]
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(<[u8]>::to_vec)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use hmw_core::stats::ProgressSample;

    use super::*;

    fn record(done: u64) -> LiveRecord {
        LiveRecord {
            cluster: "main".into(),
            started_unix_s: None,
            total_tasks: Some(10),
            sample: ProgressSample {
                t_s: done as f64,
                tasks_done: done,
                tasks_per_s: 1.0,
                eta_s: None,
                predicted_total_s: None,
                predicted_total_interval_s: None,
                predicted_efficiency: None,
                clusters: Vec::new(),
            },
            workers: Vec::new(),
            linked: Vec::new(),
            adaptations: Vec::new(),
        }
    }

    fn line(done: u64) -> String {
        format!("{}\n", serde_json::to_string(&record(done)).unwrap())
    }

    /// Whole lines only, each once; a line cut in two is read once whole; a bad line is
    /// counted and skipped; a file written anew is read from its start.
    #[test]
    fn new_whole_lines_once_and_a_rewritten_feed_from_its_start() {
        let dir = std::env::temp_dir().join(format!("hmw-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("main.live.jsonl");
        let mut tail = FeedTail::new(&path);
        assert!(tail.read_new().is_empty(), "no file yet");
        let mut file = File::create(&path).unwrap();
        let second = line(2);
        let (head, rest) = second.split_at(10);
        write!(file, "{}{head}", line(1)).unwrap();
        let done = |records: Vec<LiveRecord>| -> Vec<u64> {
            records.iter().map(|r| r.sample.tasks_done).collect()
        };
        assert_eq!(done(tail.read_new()), [1]);
        assert_eq!(done(tail.read_new()), [0u64; 0]);
        write!(file, "{rest}not json\n{}", line(3)).unwrap();
        assert_eq!(done(tail.read_new()), [2, 3]);
        assert_eq!(tail.bad_lines, 1);
        drop(file);
        std::fs::write(&path, line(7)).unwrap();
        assert_eq!(done(tail.read_new()), [7]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
