//! The testbed's CPU: its cgroup's weight, a host's quota and weight, the hierarchy a state
//! was built on.

use crate::cgroup::CpuCgroups;
use crate::state::State;

/// The weight of a testbed's cgroup against the machine's other processes (v1 scale).
pub const TESTBED_WEIGHT: u64 = 8192;

/// A host's quota (`cores`, none when `None`) and its weight among the hosts: proportional to
/// its quota (1024 per core), so that under contention the hosts still share the CPU in the
/// ratio of their `perf`; hosts without quota keep the default 1024.
pub fn apply_quota(cg: &CpuCgroups, rel: &str, cores: Option<f64>) -> anyhow::Result<()> {
    cg.set_quota(rel, cores)?;
    cg.set_weight(
        rel,
        cores.map(|c| (c * 1024.0).round() as u64).unwrap_or(1024),
    )
}

/// The CPU hierarchy a state was built on.
pub fn cgroups_of(st: &State) -> CpuCgroups {
    if st.cgroup_version == "v2" {
        CpuCgroups::V2(st.cgroup_root.clone())
    } else {
        CpuCgroups::V1(st.cgroup_root.clone())
    }
}
