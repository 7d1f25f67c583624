//! Changing a running testbed's conditions: requests to the WAN emulator's control socket, a
//! host's `perf` (its CPU quota).

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use anyhow::{bail, Context};

use super::{
    cpu::{apply_quota, cgroups_of},
    instance::Instance,
};
use crate::state::State;

/// One request to the emulator's control socket; its reply.
pub fn control(st: &State, request: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    if st.wan != "emulated" {
        bail!(
            "testbed `{}` runs without the WAN emulator (wan={}): no control",
            st.name,
            st.wan
        );
    }
    let mut s = std::os::unix::net::UnixStream::connect(&st.control).with_context(|| {
        format!(
            "connecting to the emulator's control socket {}",
            st.control.display()
        )
    })?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    writeln!(s, "{request}")?;
    let mut line = String::new();
    BufReader::new(&s)
        .read_line(&mut line)
        .context("reading the emulator's reply")?;
    let reply: serde_json::Value = serde_json::from_str(line.trim())
        .with_context(|| format!("the emulator's reply `{}`", line.trim()))?;
    if reply.get("ok").and_then(|v| v.as_bool()) != Some(true) {
        bail!("the emulator refused {request}: {reply}");
    }
    Ok(reply)
}

/// Changes a host's `perf` (its CPU quota) while the testbed runs.
pub fn set_perf(inst: &Instance, host: &str, perf: f64) -> anyhow::Result<Option<f64>> {
    let _locked = inst.lock_state()?;
    let mut st = inst.state()?;
    if !(perf.is_finite() && perf > 0.0) {
        bail!("perf {perf} must be positive");
    }
    let cg = cgroups_of(&st);
    let idx = st
        .hosts
        .iter()
        .position(|h| h.host == host)
        .with_context(|| format!("no host `{host}`"))?;
    let mut total = 0.0;
    for (i, h) in st.hosts.iter().enumerate() {
        let p = if i == idx { Some(perf) } else { h.perf };
        total += st.layout.cores_of(p).unwrap_or(0.0);
    }
    if total > crate::layout::MAX_WORKER_CORES + 1e-9 {
        bail!(
            "with perf {perf} on `{host}` the hosts would ask for {total:.3} cores in all, more than {}",
            crate::layout::MAX_WORKER_CORES
        );
    }
    let cores = st.layout.cores_of(Some(perf));
    apply_quota(&cg, &st.hosts[idx].cgroup, cores)?;
    st.hosts[idx].perf = Some(perf);
    st.save()?;
    Ok(cores)
}
