//! The testbed's named network namespaces: where they are, whether they (and their links)
//! exist, the processes in them.

use std::path::Path;

use crate::sys::{run, run_quiet};

pub(super) fn netns_path(netns: &str) -> String {
    format!("/run/netns/{netns}")
}

/// Whether a named network namespace exists.
pub fn netns_exists(name: &str) -> bool {
    Path::new(&netns_path(name)).exists()
}

pub(super) fn link_exists(netns: &str, dev: &str) -> bool {
    run_quiet("ip", &["-n", netns, "link", "show", "dev", dev])
}

/// The processes in a named network namespace.
pub fn netns_pids(name: &str) -> Vec<u32> {
    if !netns_exists(name) {
        return Vec::new();
    }
    run("ip", &["netns", "pids", name])
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}
