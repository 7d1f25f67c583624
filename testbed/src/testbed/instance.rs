//! Where a testbed is: its name and state dir, found by name, by dir or as the only one up.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::state::{self, State};

/// Where a testbed is: its name and state dir.
#[derive(Debug, Clone)]
pub struct Instance {
    /// The instance name.
    pub name: String,
    /// Its state dir.
    pub dir: PathBuf,
}

impl Instance {
    /// Finds an existing instance: by `name`, by `dir`, or the only one registered.
    pub fn find(name: Option<&str>, dir: Option<&Path>) -> anyhow::Result<Instance> {
        if let Some(dir) = dir {
            let st = State::load(dir)?;
            return Ok(Instance {
                name: st.name,
                dir: dir.to_path_buf(),
            });
        }
        let name = match name {
            Some(n) => n.to_string(),
            None => {
                let all = state::instances();
                match all.as_slice() {
                    [one] => one.clone(),
                    [] => bail!("no testbed is up (nothing under {})", state::INDEX_DIR),
                    many => bail!(
                        "several testbeds are up ({}): name one with --name",
                        many.join(", ")
                    ),
                }
            }
        };
        let dir = state::default_state_dir(&name);
        let dir = fs::canonicalize(&dir).unwrap_or(dir);
        if !dir.join(state::STATE_FILE).exists() {
            bail!(
                "no testbed named `{name}` (no {})",
                dir.join(state::STATE_FILE).display()
            );
        }
        Ok(Instance { name, dir })
    }

    /// Its state.
    pub fn state(&self) -> anyhow::Result<State> {
        State::load(&self.dir)
    }

    /// An exclusive lock on its state, held until the file returned is dropped: a command
    /// that reads, changes and saves the state while the testbed runs takes it, so that
    /// several run at once (`set-perf` on each host of a cluster) do not save over each
    /// other's changes.
    pub fn lock_state(&self) -> anyhow::Result<fs::File> {
        let path = self.dir.join("state.lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock on a descriptor this function owns; the lock goes with the file.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } != 0 {
            bail!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(file)
    }
}
