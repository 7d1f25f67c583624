//! `hmw launch` run in the background on the testbed's launching machine, each line it prints
//! kept with the time it came, so that a fault can strike once a share of the tasks is in and
//! the restart that follows be timed.

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};

/// Lines printed so far, with when each came.
type Lines = Arc<Mutex<Vec<(Instant, String)>>>;

/// A launch running.
pub(crate) struct Launch {
    child: Child,
    lines: Lines,
    readers: Vec<thread::JoinHandle<()>>,
}

impl Launch {
    /// Starts `command`, its standard output and error also into `log`.
    pub(crate) fn start(command: &mut Command, log: &Path) -> Result<Launch> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run {:?}", command.get_program()))?;
        let lines: Lines = Arc::default();
        let log = Arc::new(Mutex::new(
            File::create(log).with_context(|| format!("cannot write {}", log.display()))?,
        ));
        let mut readers = Vec::new();
        let outputs: [Box<dyn std::io::Read + Send>; 2] = [
            Box::new(child.stdout.take().expect("piped")),
            Box::new(child.stderr.take().expect("piped")),
        ];
        for output in outputs {
            let (lines, log) = (lines.clone(), log.clone());
            readers.push(thread::spawn(move || {
                for line in BufReader::new(output).lines().map_while(Result::ok) {
                    let _ = writeln!(log.lock().unwrap_or_else(|e| e.into_inner()), "{line}");
                    lines
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((Instant::now(), line));
                }
            }));
        }
        Ok(Launch {
            child,
            lines,
            readers,
        })
    }

    /// Tasks the main master has gathered, by its last progress line (`[ T s] N / M tasks`).
    pub(crate) fn gathered(&self) -> Option<u64> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().rev().find_map(|(_, line)| progress(line))
    }

    /// When the first line after `after` containing `text` came.
    pub(crate) fn line_after(&self, after: Instant, text: &str) -> Option<Instant> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .find(|(at, line)| *at >= after && line.contains(text))
            .map(|(at, _)| *at)
    }

    /// The last line starting with `prefix`.
    pub(crate) fn last_line(&self, prefix: &str) -> Option<String> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .rev()
            .find(|(_, line)| line.starts_with(prefix))
            .map(|(_, line)| line.clone())
    }

    /// Whether it has ended.
    pub(crate) fn ended(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_some()
    }

    /// Waits until `gathered` tasks are in (then true), the launch ends or `limit` passes.
    pub(crate) fn wait_for_tasks(&mut self, gathered: u64, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit && !self.ended() {
            if self.gathered().is_some_and(|g| g >= gathered) {
                return true;
            }
            thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Waits for its end (killed after `limit`), its output all read.
    pub(crate) fn wait(&mut self, limit: Duration) -> Result<ExitStatus> {
        let start = Instant::now();
        while !self.ended() && start.elapsed() < limit {
            thread::sleep(Duration::from_millis(100));
        }
        if !self.ended() {
            let _ = self.child.kill();
        }
        let status = self.child.wait()?;
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        Ok(status)
    }
}

/// The tasks gathered in a progress line of the main master.
fn progress(line: &str) -> Option<u64> {
    let rest = line.strip_prefix('[')?.split_once("] ")?.1;
    let (done, rest) = rest.split_once(" / ")?;
    rest.contains("tasks").then(|| done.trim().parse().ok())?
}

/// `key=value` of a line of `key=value` words.
pub(crate) fn value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_give_the_tasks_gathered() {
        assert_eq!(
            progress("[    12.0 s] 53 / 240 tasks (22.1%), 4.42 tasks/s, ETA 38.8 s"),
            Some(53)
        );
        assert_eq!(progress("[ 1.0 s] 0 tasks, 0.00 tasks/s | spain 0"), None);
        assert_eq!(progress("== cluster lyon: started"), None);
        assert_eq!(
            value("synthetic tasks=240 verified=true missing=0", "verified"),
            Some("true")
        );
        assert_eq!(value("synthetic tasks=240", "missing"), None);
    }

    #[test]
    fn a_launch_is_read_as_it_prints() {
        let dir = std::env::temp_dir().join(format!("xtask-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let started = Instant::now();
        let mut launch = Launch::start(
            Command::new("sh").args([
                "-c",
                "echo '[ 1.0 s] 3 / 9 tasks'; sleep 0.3; echo 'restart: started again' >&2; \
                 echo 'synthetic tasks=9 verified=true'",
            ]),
            &dir.join("log"),
        )
        .unwrap();
        assert!(launch.wait_for_tasks(3, Duration::from_secs(5)));
        let status = launch.wait(Duration::from_secs(5)).unwrap();
        assert!(status.success());
        assert!(launch.line_after(started, "started again").is_some());
        assert_eq!(
            launch.last_line("synthetic").as_deref(),
            Some("synthetic tasks=9 verified=true")
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
