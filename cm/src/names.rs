//! Peer names as certificates and configurations write them.

/// `name` without the trailing dot of an absolute DNS name (`cm-main.` is `cm-main`).
pub fn without_trailing_dot(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}
