//! Helpers for the multi-process tests: find the workspace's binaries, run them under
//! `mpirun` with a time limit, and clean up every process they started.
//!
//! Each run gets its own process group; on timeout or drop the whole group is killed by its
//! id (never by name), so no rank outlives its test.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

use std::os::unix::process::CommandExt as _;

/// The directory of the workspace's binaries (`target/debug` for `cargo test`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/debug/deps/<test> -> target/debug
    exe.parent()
        .and_then(Path::parent)
        .expect("test executable under target/<profile>/deps")
        .to_owned()
}

/// Path of a workspace binary; it must have been built (`cargo build --workspace --bins --examples`).
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --workspace --bins --examples` first (scripts/test.sh does)",
        path.display()
    );
    path
}

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// A fresh scratch directory for one test, removed when the test is done with it, unless the
/// test failed (it is then left for a look, and named in the failure's output).
pub fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("hmw-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// See [`scratch`].
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("scratch directory kept: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A started command in its own process group, killed (group and all) when dropped.
pub struct Spawned {
    child: Child,
    stdout: Option<thread::JoinHandle<String>>,
    stderr: Option<thread::JoinHandle<String>>,
}

/// How a run ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Finished {
    /// Panics with the run's output unless it succeeded.
    pub fn assert_success(&self) -> &Self {
        assert!(self.status.success(), "run failed: {self:#?}");
        self
    }
}

fn collect(mut reader: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        let _ = reader.read_to_string(&mut text);
        text
    })
}

impl Spawned {
    /// Start `command` with MPI's root permission set, output captured.
    pub fn start(mut command: Command) -> Spawned {
        command
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_btl", "self,vader,tcp")
            .env("OMPI_MCA_btl_tcp_if_include", "lo")
            .env("OMPI_MCA_oob_tcp_if_include", "lo")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("cannot start command");
        let stdout = Some(collect(child.stdout.take().unwrap()));
        let stderr = Some(collect(child.stderr.take().unwrap()));
        Spawned {
            child,
            stdout,
            stderr,
        }
    }

    /// Process id of the command (and id of its process group).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Wait for the end, at most `limit`; on timeout the group is killed and the test fails.
    pub fn finish(mut self, limit: Duration) -> Finished {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > limit {
                self.kill();
                let out = self.stdout.take().unwrap().join().unwrap_or_default();
                let err = self.stderr.take().unwrap().join().unwrap_or_default();
                panic!("timed out after {limit:?}\nstdout:\n{out}\nstderr:\n{err}");
            }
            thread::sleep(Duration::from_millis(20));
        };
        // Ranks that outlived mpirun (there should be none) go with the group.
        self.kill();
        Finished {
            status,
            stdout: self.stdout.take().unwrap().join().unwrap_or_default(),
            stderr: self.stderr.take().unwrap().join().unwrap_or_default(),
            elapsed: start.elapsed(),
        }
    }

    fn kill(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.stdout.is_some() {
            self.kill();
        }
    }
}

/// `mpirun --oversubscribe -np RANKS BINARY ARGS...`, started.
pub fn mpirun(ranks: usize, binary: &str, args: &[&str]) -> Spawned {
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "-np", &ranks.to_string()])
        .arg(bin(binary))
        .args(args);
    Spawned::start(command)
}

/// Write `text` to `dir/name` and return the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// CPU time (user + system) consumed so far by process `pid`, from /proc, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second (`getconf CLK_TCK`).
pub fn ticks_per_second() -> f64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Direct children of `pid` (from /proc).
pub fn children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if parent == Some(pid) {
            found.push(child);
        }
    }
    found
}

/// Read a JSON file.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The external cluster `name` in a run's statistics (`clusters`, as `--stats-json` writes
/// them).
pub fn cluster<'a>(stats: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    stats["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no cluster {name} in {stats:#}"))
}
