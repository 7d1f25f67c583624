//! The testbed: emulated hosts (`hmw-testbed`: a network namespace per host, a CPU quota per
//! worker, the WAN emulator between the clusters) for the scenarios whose plan has a
//! `[testbed]` table. One at a time: brought up for a scenario, taken down before the next
//! one's, and on every way out: when the [`Testbed`] is dropped, and on Ctrl-C, SIGTERM or
//! SIGHUP (after the tool running then is stopped).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{Context, Result};

use super::process::{cat_to_stderr, run_logged, run_unrecorded, stop_tools, tail_to_stderr};

/// Where `hmw-testbed` keeps an instance's state.
const STATE_DIR: &str = "/var/lib/hmw-testbed";

/// How long an interrupted tool is given to stop before the teardown.
const GRACE: Duration = Duration::from_secs(30);

/// The exit status after an interruption (as a shell reports SIGINT).
const INTERRUPTED: i32 = 130;

/// One testbed instance, by name; up or not.
struct Instance {
    /// `hmw-testbed`.
    bin: PathBuf,
    /// The instance's name, unique to this process.
    name: String,
    /// Where the teardown's log goes.
    work: PathBuf,
    /// The plan whose testbed is up.
    plan: Option<String>,
}

impl Instance {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.bin);
        command.arg("--name").arg(&self.name);
        command
    }

    /// Takes the testbed down if it is up (or if its state says so); says why on standard
    /// error when that fails.
    fn down(&mut self) {
        let state = Path::new(STATE_DIR).join(&self.name).join("state.json");
        if self.plan.is_some() || state.exists() {
            let log = self.work.join("testbed-down.log");
            match run_unrecorded(self.command().arg("down"), &log) {
                Ok(status) if status.success() => {}
                Ok(_) => cat_to_stderr(&log),
                Err(error) => eprintln!("validate: the testbed's teardown: {error:#}"),
            }
        }
        self.plan = None;
    }
}

/// The testbed of this suite: taken down when dropped.
pub(crate) struct Testbed {
    instance: Arc<Mutex<Instance>>,
}

impl Testbed {
    /// The testbed `name` of `hmw-testbed` at `bin`, its teardown's log in `work`; nothing is
    /// brought up yet.
    pub(crate) fn new(bin: PathBuf, name: String, work: PathBuf) -> Testbed {
        Testbed {
            instance: Arc::new(Mutex::new(Instance {
                bin,
                name,
                work,
                plan: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Instance> {
        self.instance.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// On Ctrl-C, SIGTERM or SIGHUP: stop the tool running, take the testbed down, exit with
    /// status 130.
    pub(crate) fn tear_down_on_signals(&self) -> Result<()> {
        let instance = Arc::clone(&self.instance);
        ctrlc::set_handler(move || {
            eprintln!("validate: interrupted; stopping and taking the testbed down");
            stop_tools(GRACE);
            instance.lock().unwrap_or_else(|e| e.into_inner()).down();
            std::process::exit(INTERRUPTED);
        })
        .context("cannot catch Ctrl-C and SIGTERM")
    }

    /// The testbed of `plan` up (the one up before taken down), its log in `log`: whether it
    /// came up (the end of its log on standard error otherwise).
    pub(crate) fn up(&self, plan: &str, log: &Path) -> Result<bool> {
        let mut instance = self.lock();
        if instance.plan.as_deref() == Some(plan) {
            return Ok(true);
        }
        instance.down();
        let mut up = instance.command();
        up.args([
            OsStr::new("up"),
            OsStr::new(plan),
            OsStr::new("--require-router"),
        ]);
        if !run_logged(&mut up, log)? {
            tail_to_stderr(log, 20);
            return Ok(false);
        }
        instance.plan = Some(plan.to_owned());
        Ok(true)
    }

    /// `hmw-testbed --name NAME`, for its other commands.
    pub(crate) fn tool(&self) -> Command {
        self.lock().command()
    }

    /// `program` run on `host` of the testbed (`hmw-testbed exec HOST --`).
    pub(crate) fn exec(&self, host: &str, program: &str) -> Command {
        let mut command = self.lock().command();
        command.args(["exec", host, "--", program]);
        command
    }

    /// `program` run from the testbed's launching machine (`hmw-testbed exec launch --`) when
    /// `on_testbed`, here otherwise.
    pub(crate) fn on_host(&self, on_testbed: bool, program: &str) -> Command {
        if on_testbed {
            let mut command = self.lock().command();
            command.args(["exec", "launch", "--", program]);
            command
        } else {
            Command::new(program)
        }
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        self.lock().down();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::scratch::Scratch;

    #[test]
    fn commands_on_the_testbed_and_here() {
        let testbed = Testbed::new("/t/hmw-testbed".into(), "val123".into(), "/w".into());
        let here = testbed.on_host(false, "timeout");
        assert_eq!(here.get_program(), "timeout");
        assert_eq!(here.get_args().count(), 0);
        let there = testbed.on_host(true, "timeout");
        assert_eq!(there.get_program(), "/t/hmw-testbed");
        let args: Vec<_> = there.get_args().collect();
        assert_eq!(
            args,
            ["--name", "val123", "exec", "launch", "--", "timeout"]
        );
        // Never brought up: dropping it runs nothing (the binary does not exist).
        drop(testbed);
    }

    #[test]
    fn up_down_and_a_failed_up() {
        // A stand-in for hmw-testbed that records its arguments and fails `up` of a plan named
        // `bad`.
        let dir = Scratch::new();
        let calls = dir.path().join("calls");
        let bin = dir.write(
            "fake-testbed",
            &format!(
                "#!/bin/sh\necho \"$@\" >>{}\ncase \"$4\" in bad) echo no router; exit 1;; esac\n",
                calls.display()
            ),
        );
        std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let testbed = Testbed::new(bin, "t1".into(), dir.path().to_path_buf());
        let log = dir.path().join("up.log");
        assert!(testbed.up("a.toml", &log).unwrap());
        assert!(
            testbed.up("a.toml", &log).unwrap(),
            "the same plan's testbed stays up"
        );
        assert!(testbed.up("b.toml", &log).unwrap());
        assert!(!testbed.up("bad", &log).unwrap());
        assert!(std::fs::read_to_string(&log).unwrap().contains("no router"));
        assert!(testbed.up("c.toml", &log).unwrap());
        drop(testbed);
        let calls = std::fs::read_to_string(&calls).unwrap();
        assert_eq!(
            calls,
            "--name t1 up a.toml --require-router\n\
             --name t1 down\n\
             --name t1 up b.toml --require-router\n\
             --name t1 down\n\
             --name t1 up bad --require-router\n\
             --name t1 up c.toml --require-router\n\
             --name t1 down\n"
        );
    }
}
