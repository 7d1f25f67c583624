//! Bringing a plan's testbed up: its name and state, then everything built, or, on a failure,
//! everything created taken down again.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::{build::build, down::down, instance::Instance, preflight::preflight};
use crate::cgroup::CpuCgroups;
use crate::layout::Layout;
use crate::names;
use crate::state::{self, Resource, State};
use crate::sys;

/// A 64-bit FNV-1a hash, hex: tells one plan's text from another.
pub fn fnv_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// What `up` did.
#[derive(Debug)]
pub enum UpOutcome {
    /// The testbed was built.
    Built(Box<State>),
    /// The same plan's testbed was up already: nothing done.
    AlreadyUp(Box<State>),
}

/// Options of `up`.
#[derive(Debug, Clone, Default)]
pub struct UpOptions {
    /// The instance name (default: from the plan's file name).
    pub name: Option<String>,
    /// The state dir (default: `/var/lib/hmw-testbed/NAME`).
    pub state_dir: Option<PathBuf>,
    /// The emulator's binary (default: next to this binary, then PATH).
    pub router: Option<PathBuf>,
    /// Require the emulator (no fallback to plain forwarding).
    pub require_router: bool,
}

/// Brings a plan's testbed up. On a failure, removes what it created and returns the error.
pub fn up(plan_path: &Path, opts: &UpOptions) -> anyhow::Result<UpOutcome> {
    let plan = hmw_model::plan::load_plan(plan_path)?;
    let layout = Layout::from_plan(&plan)?;
    let text = fs::read(plan_path).with_context(|| format!("reading {}", plan_path.display()))?;
    let hash = fnv_hex(&text);
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| names::default_name(plan_path));
    names::check_name(&name)?;
    let cg = CpuCgroups::detect(Path::new("/sys/fs/cgroup"));
    preflight(&layout, &cg)?;
    let cg = cg?;

    let index = state::default_state_dir(&name);
    let dir = opts.state_dir.clone().unwrap_or_else(|| index.clone());
    let existing = if index.join(state::STATE_FILE).exists() {
        Some(fs::canonicalize(&index)?)
    } else if dir.join(state::STATE_FILE).exists() {
        Some(dir.clone())
    } else {
        None
    };
    if let Some(existing) = existing {
        let st = State::load(&existing)?;
        if st.plan_hash == hash && st.complete {
            return Ok(UpOutcome::AlreadyUp(Box::new(st)));
        }
        if st.plan_hash == hash {
            bail!(
                "testbed `{name}` was left half built (state {}): run `hmw-testbed down --name {name}` first",
                existing.display()
            );
        }
        bail!(
            "testbed `{name}` is up with another plan ({}): take it down first \
             (`hmw-testbed down --name {name}`) or choose another --name",
            st.plan_path.display()
        );
    }
    // One cluster has no WAN: nothing to emulate, no router to start.
    let joins_clusters = layout.clusters.len() > 1;
    let router_bin = find_router(opts.router.as_deref()).filter(|_| joins_clusters);
    if opts.require_router && joins_clusters && router_bin.is_none() {
        bail!("hmw-wan-router is neither next to hmw-testbed nor on PATH (and --require-router was given)");
    }

    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = fs::canonicalize(&dir)?;
    let mut st = State {
        name: name.clone(),
        dir: dir.clone(),
        plan_path: fs::canonicalize(plan_path)?,
        plan_hash: hash,
        layout: layout.clone(),
        cgroup_version: cg.version().to_string(),
        cgroup_root: cg.path(""),
        cgroup: names::cgroup(&name),
        fabric_netns: names::fabric_netns(&name),
        router_netns: names::router_netns(&name),
        hosts: Vec::new(),
        wan: if !joins_clusters {
            "none"
        } else if router_bin.is_some() {
            "emulated"
        } else {
            "unemulated"
        }
        .to_string(),
        control: dir.join("router/control.sock"),
        complete: false,
        resources: vec![Resource::Dir { path: dir.clone() }],
    };
    st.save()?;
    if dir != index {
        fs::create_dir_all(state::INDEX_DIR)?;
        std::os::unix::fs::symlink(&dir, &index)
            .with_context(|| format!("registering {} as {}", dir.display(), index.display()))?;
    }
    match build(&mut st, &cg, router_bin.as_deref()) {
        Ok(()) => {
            st.complete = true;
            st.save()?;
            Ok(UpOutcome::Built(Box::new(st)))
        }
        Err(e) => {
            eprintln!("hmw-testbed: up failed, removing what was created: {e:#}");
            let inst = Instance {
                name: name.clone(),
                dir: dir.clone(),
            };
            if let Err(d) = down(&inst) {
                eprintln!("hmw-testbed: down after the failure: {d:#}");
            }
            Err(e)
        }
    }
}

/// The emulator's binary: `explicit`, else next to this program, else on PATH.
pub fn find_router(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return p.exists().then(|| p.to_path_buf());
    }
    if let Ok(me) = std::env::current_exe() {
        let next = me.with_file_name("hmw-wan-router");
        if next.is_file() {
            return Some(next);
        }
    }
    sys::which("hmw-wan-router")
}
