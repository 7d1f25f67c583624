//! A summary of a testbed for `status`: its plan, WAN and cgroup, and each host's addresses,
//! quota and processes.

use super::cpu::cgroups_of;
use crate::state::State;

/// A summary of a testbed for `status`.
pub fn status_text(st: &State) -> String {
    let cg = cgroups_of(st);
    let mut s = format!(
        "testbed {} ({}): plan {}, wan={}, cgroup {} ({}), state {}\n",
        st.name,
        if st.complete { "up" } else { "INCOMPLETE" },
        st.plan_path.display(),
        st.wan,
        st.cgroup,
        st.cgroup_version,
        st.dir.display()
    );
    for h in &st.hosts {
        let spec = st.layout.host(&h.host);
        let quota = cg
            .quota(&h.cgroup)
            .ok()
            .flatten()
            .map(|q| format!("{q:.3} cores"))
            .unwrap_or_else(|| "no quota".into());
        let procs = cg.procs(&h.cgroup).len();
        let (lan, mgmt, cluster) = spec
            .map(|s| {
                (
                    s.lan_addr.map(|a| a.to_string()).unwrap_or("-".into()),
                    s.mgmt_addr.map(|a| a.to_string()).unwrap_or("-".into()),
                    s.cluster
                        .map(|c| st.layout.clusters[c].name.clone())
                        .unwrap_or("-".into()),
                )
            })
            .unwrap_or_default();
        s.push_str(&format!(
            "  {:<14} cluster {:<10} lan {:<14} mgmt {:<12} {:<12} processes {procs}  netns {}\n",
            h.host, cluster, lan, mgmt, quota, h.netns
        ));
    }
    s
}
