//! Ports for the links of a run on this machine.

use std::{fs, net::UdpSocket};

/// A port for a link: free now, not handed out before by this process, and below the kernel's
/// ephemeral range, from which every socket bound to port 0 (QUIC clients, relays, other
/// runs) takes its port: none of those can take it before the CM that is meant to binds it.
pub(crate) fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    const LOWEST: u16 = 10_000;
    let ephemeral = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768)
        .max(LOWEST + 1);
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut seed = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    for _ in 0..10_000 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let port = LOWEST + ((seed >> 33) % u64::from(ephemeral - LOWEST)) as u16;
        if !handed_out.contains(&port) && UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            handed_out.push(port);
            return port;
        }
    }
    // Nothing free below the ephemeral range: one the kernel picks.
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_ports_are_distinct_free_and_below_the_ephemeral_range() {
        let ephemeral: u16 = fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        for (i, &port) in ports.iter().enumerate() {
            assert!((10_000..ephemeral).contains(&port), "{port}");
            assert!(!ports[..i].contains(&port), "{port} handed out twice");
        }
        // Free when handed out: a CM can bind it.
        UdpSocket::bind(("127.0.0.1", *ports.last().unwrap())).unwrap();
    }
}
