//! The names of what a testbed creates, all carrying its instance name, so that two testbeds
//! never share one: namespaces `hmwtb-NAME-...`, cgroup `hmw-testbed-NAME`, links `NAME...`.

use anyhow::bail;

/// The longest instance name: links are `NAME` + up to 4 characters (`b12`, `l123`), which
/// must fit the kernel's 15.
pub const MAX_NAME: usize = 8;

/// Checks an instance name: 1 to [`MAX_NAME`] lowercase letters and digits.
pub fn check_name(name: &str) -> anyhow::Result<()> {
    if name.is_empty()
        || name.len() > MAX_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        bail!("instance name `{name}`: 1 to {MAX_NAME} lowercase letters and digits");
    }
    Ok(())
}

/// The default instance name of a plan file: its stem's letters and digits, lowercased, at
/// most [`MAX_NAME`] (`demo-three-clusters.toml` -> `demothre`).
pub fn default_name(plan: &std::path::Path) -> String {
    let stem = plan
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        .take(MAX_NAME)
        .collect();
    if name.is_empty() {
        "tb".to_string()
    } else {
        name
    }
}

/// A host's network namespace.
pub fn host_netns(name: &str, host: &str) -> String {
    format!("hmwtb-{name}-h-{host}")
}

/// The namespace of the bridges.
pub fn fabric_netns(name: &str) -> String {
    format!("hmwtb-{name}-fabric")
}

/// The router's namespace.
pub fn router_netns(name: &str) -> String {
    format!("hmwtb-{name}-router")
}

/// The testbed's cgroup (relative to the CPU hierarchy's root).
pub fn cgroup(name: &str) -> String {
    format!("hmw-testbed-{name}")
}

/// Cluster `index`'s bridge.
pub fn lan_bridge(name: &str, index: usize) -> String {
    format!("{name}b{index}")
}

/// The management bridge.
pub fn mgmt_bridge(name: &str) -> String {
    format!("{name}bm")
}

/// Host number `k`'s LAN port on its bridge.
pub fn lan_port(name: &str, k: usize) -> String {
    format!("{name}l{k}")
}

/// Host number `k`'s port on the management bridge.
pub fn mgmt_port(name: &str, k: usize) -> String {
    format!("{name}m{k}")
}

/// The router's port on cluster `index`'s bridge.
pub fn router_port(name: &str, index: usize) -> String {
    format!("{name}r{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit() {
        assert_eq!(
            default_name("configs/demo-three-clusters.toml".as_ref()),
            "demothre"
        );
        assert_eq!(default_name("x/--.toml".as_ref()), "tb");
        check_name("demothre").unwrap();
        assert!(check_name("Demo").is_err());
        assert!(check_name("ninechars").is_err());
        for n in [
            lan_port("abcdefgh", 250),
            mgmt_port("abcdefgh", 250),
            lan_bridge("abcdefgh", 200),
        ] {
            assert!(n.len() <= 15, "{n}");
        }
    }
}
