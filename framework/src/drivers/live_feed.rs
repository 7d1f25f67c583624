//! A master's live feed file ([`hmw_core::live_feed`]): a line of JSON per progress line. A
//! write that fails is logged and ends the feed; the run goes on. Past [`LIMIT`] bytes the file
//! starts afresh, so a long run with many workers does not fill the disk: its reader (`hmw
//! launch`, which looks every 200 ms) sees it shrink and reads it from its start.

use std::{
    fs::File,
    io::{self, Seek as _, SeekFrom, Write as _},
    path::{Path, PathBuf},
};

use hmw_core::roles::{MasterCore, TaskSource};

/// The feed starts afresh past this many bytes.
const LIMIT: u64 = 16 << 20;

/// The feed's file.
pub(crate) struct Feed {
    path: PathBuf,
    file: File,
    /// Bytes in the file now, and how many it may hold.
    written: u64,
    limit: u64,
    /// Re-planning decisions already written.
    adaptations: usize,
}

impl Feed {
    /// The feed at `path`, emptied: a rerun's records start afresh.
    pub(crate) fn create(path: &Path) -> Option<Feed> {
        match File::create(path) {
            Ok(file) => Some(Feed {
                path: path.to_owned(),
                file,
                written: 0,
                limit: LIMIT,
                adaptations: 0,
            }),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot create the live feed");
                None
            }
        }
    }

    /// Append the record of the progress line `core` just made; false once the feed failed.
    pub(crate) fn append<S: TaskSource>(&mut self, core: &MasterCore<S>) -> bool {
        let Some(record) = core.live_record(self.adaptations) else {
            return true;
        };
        self.adaptations = core.adaptations_made();
        let written = serde_json::to_vec(&record)
            .map_err(io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                self.append_line(&line)
            });
        if let Err(e) = written {
            tracing::warn!(path = %self.path.display(), error = %e, "live feed stopped");
            return false;
        }
        true
    }

    /// Append `line`, the file emptied first when it would pass its limit.
    fn append_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.written > 0 && self.written + line.len() as u64 > self.limit {
            self.file.set_len(0)?;
            self.file.seek(SeekFrom::Start(0))?;
            self.written = 0;
        }
        self.file.write_all(line)?;
        self.written += line.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_starts_afresh_past_its_limit() {
        let path = std::env::temp_dir().join(format!("hmw-feed-{}.jsonl", std::process::id()));
        let mut feed = Feed::create(&path).unwrap();
        feed.limit = 10;
        feed.append_line(b"{\"a\":1}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        feed.append_line(b"{\"b\":2}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"b\":2}\n");
        // A line longer than the limit is still written whole.
        feed.append_line(b"{\"long\":12345}\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"long\":12345}\n"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
