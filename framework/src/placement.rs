//! Where a rank runs: the host it observes itself on, and the check that it is the host its
//! machine-file line names (`--check-placement`, given by `hmw launch` on real hosts).
//!
//! MPI places ranks, not hmw: a hostfile without a sequential mapping fills the first host's
//! slots, and a server CM would then listen on the wrong machine. Each rank therefore checks,
//! from its own host name and addresses (never from the machine file), that it runs where its
//! line says. The check is off on one machine, where the machine file's host names are labels.

use std::net::{IpAddr, ToSocketAddrs, UdpSocket};

use hmw_core::stats::RankPlacement;

/// This host's name, as the kernel has it (`gethostname`, per UTS namespace).
pub(crate) fn observed_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

/// Whether `line_host` names this host: its host name (or the short form of either), or a name
/// or address that resolves to an address of this host other than loopback (one a socket can
/// be bound to here; every host can bind loopback addresses).
pub(crate) fn is_this_host(line_host: &str, observed: &str) -> bool {
    if RankPlacement::same_host(line_host, observed) {
        return true;
    }
    let Ok(addresses) = (line_host, 0).to_socket_addrs() else {
        return false;
    };
    addresses
        .map(|a| a.ip())
        .filter(|ip: &IpAddr| !ip.is_loopback() && !ip.is_unspecified())
        .any(|ip| UdpSocket::bind((ip, 0)).is_ok())
}

/// The error of a rank that runs on another host than its line's.
pub(crate) fn misplaced(rank: usize, line_no: usize, line_host: &str, observed: &str) -> String {
    format!(
        "rank {rank} runs on host `{observed}` but line {line_no} of the machine file names \
         `{line_host}`: MPI placed it elsewhere (start it with `mpirun --map-by seq` and a \
         hostfile of one rank per line, as hmw launch does); the cluster stops"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_is_on_its_own_host_by_name_or_address() {
        let me = observed_host();
        assert!(!me.is_empty());
        assert!(is_this_host(&me, &me));
        assert!(is_this_host(&format!("{me}.example.org"), &me));
        assert!(!is_this_host("no-such-host.invalid", &me));
        // Loopback names resolve on every host: they do not place a rank anywhere.
        assert!(!is_this_host("localhost", "elsewhere"));
        assert!(!is_this_host("127.0.0.1", "elsewhere"));
        let placed = RankPlacement {
            rank: 1,
            line_host: "lyon-1.site".into(),
            observed_host: "lyon-1".into(),
        };
        assert!(placed.matches());
        let message = misplaced(1, 3, "lyon-1", "lyon-2");
        assert!(
            message.contains("line 3") && message.contains("lyon-2"),
            "{message}"
        );
    }
}
