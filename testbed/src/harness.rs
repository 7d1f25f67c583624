//! A helper for tests: brings a testbed up for a group of tests and always takes it down, on
//! drop (also when a test panics) and from its state file.
//!
//! ```no_run
//! let tb = hmw_testbed::harness::Testbed::up("configs/testbed/check.toml".as_ref(), "mytest").unwrap();
//! let out = tb.run("lyon-1", &["hostname"]).unwrap();
//! assert_eq!(out.trim(), "lyon-1");
//! // dropped here: down
//! ```

use std::path::Path;

use anyhow::bail;

use crate::state::State;
use crate::testbed::{self, Instance, UpOptions, UpOutcome};

/// A testbed that exists as long as this value does.
pub struct Testbed {
    inst: Instance,
    state: State,
}

impl Testbed {
    /// Brings `plan` up as instance `name` (an instance of that name left by a crashed test is
    /// taken down first).
    pub fn up(plan: &Path, name: &str) -> anyhow::Result<Testbed> {
        if let Ok(old) = Instance::find(Some(name), None) {
            testbed::down(&old)?;
        }
        let opts = UpOptions {
            name: Some(name.to_string()),
            ..UpOptions::default()
        };
        let state = match testbed::up(plan, &opts)? {
            UpOutcome::Built(s) | UpOutcome::AlreadyUp(s) => *s,
        };
        Ok(Testbed {
            inst: Instance {
                name: state.name.clone(),
                dir: state.dir.clone(),
            },
            state,
        })
    }

    /// Its state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Runs a command on a host; its stdout, or an error with its stderr when it fails.
    pub fn run(&self, host: &str, argv: &[&str]) -> anyhow::Result<String> {
        let out = testbed::exec_output(&self.state, host, argv)?;
        if !out.status.success() {
            bail!(
                "`{}` on `{host}` failed ({}): {}",
                argv.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Takes it down now; the error names what remains.
    pub fn down(self) -> anyhow::Result<()> {
        let inst = self.inst.clone();
        std::mem::forget(self);
        testbed::down(&inst).map(|_| ())
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(e) = testbed::down(&self.inst) {
            eprintln!("hmw-testbed harness: down of `{}`: {e:#}", self.inst.name);
        }
    }
}
