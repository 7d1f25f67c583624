//! The routing inside the router namespace that forces every inter-cluster packet through
//! the TUN device, and its removal. See the crate documentation for the rules and tables.

use crate::config::Config;
use crate::packet::Subnet;
use crate::sys;

/// The routing table of packets arriving on a cluster's interface: everything into the TUN
/// device.
pub const TABLE_TO_TUN: u32 = 2131;
/// The routing table of packets the emulator writes back to the TUN device: each cluster's
/// subnet through its interface, everything else dropped.
pub const TABLE_FROM_TUN: u32 = 2130;
/// Priority of the rule `iif TUN lookup TABLE_FROM_TUN`.
pub const PREF_FROM_TUN: u32 = 2130;
/// Priority of the rules `iif DEV lookup TABLE_TO_TUN`.
pub const PREF_TO_TUN: u32 = 2131;

/// What the router changed in the namespace, undone by [`Routing::teardown`] (or on drop).
#[derive(Debug, Default)]
pub struct Routing {
    /// Sysctls with their value before, in the order they were set.
    sysctls: Vec<(String, String)>,
    /// `ip rule add` arguments of each rule added (the same with `del` removes it).
    rules: Vec<Vec<String>>,
    /// Whether routes went into the two tables.
    tables: bool,
}

/// Removes rules and routes left in the two tables by a router that did not exit cleanly
/// (killed) in this namespace. The TUN device of such a router went away with its process.
pub fn remove_stale() -> usize {
    let mut removed = 0;
    for pref in [PREF_FROM_TUN, PREF_TO_TUN] {
        let pref = pref.to_string();
        while removed < 1024 && sys::ip(&["-4", "rule", "del", "pref", &pref]).is_ok() {
            removed += 1;
        }
    }
    for table in [TABLE_FROM_TUN, TABLE_TO_TUN] {
        let _ = sys::ip(&["-4", "route", "flush", "table", &table.to_string()]);
    }
    removed
}

/// Checks what must exist before anything changes: `ip`, each cluster's device, and no
/// device already named like the TUN device.
pub fn preflight(config: &Config) -> Result<(), String> {
    sys::ip(&["-V"])?;
    for c in &config.clusters {
        if !sys::dev_exists(&c.dev) {
            return Err(format!(
                "cluster `{}`: dev `{}` does not exist in this network namespace (the router's \
                 interface on the cluster's bridge must exist before the router starts)",
                c.name, c.dev
            ));
        }
    }
    if sys::dev_exists(&config.tun) {
        return Err(format!(
            "`tun`: a device named `{}` already exists in this network namespace",
            config.tun
        ));
    }
    // A rule `iif TUN lookup 2130` whose TUN device still exists belongs to a router that
    // runs (its device goes away with its process): removing it as stale would break it.
    let rules = sys::ip(&["-4", "rule", "show", "pref", &PREF_FROM_TUN.to_string()])?;
    if let Some(other) = rule_iifs(&rules).into_iter().find(|d| sys::dev_exists(d)) {
        return Err(format!(
            "another hmw-wan-router seems to run in this network namespace: the rule at \
             priority {PREF_FROM_TUN} reads from `{other}`, which exists"
        ));
    }
    Ok(())
}

/// The `iif` devices of the rules `ip rule show` printed.
fn rule_iifs(rules: &str) -> Vec<String> {
    rules
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.by_ref().find(|w| *w == "iif")?;
            Some(words.next()?.to_string())
        })
        .collect()
}

/// The device `ip route get` reports on the first line of its output, and whether the
/// destination is local (or broadcast).
fn route_dev(output: &str) -> (Option<&str>, bool) {
    let first = output.lines().next().unwrap_or("");
    let mut words = first.split_whitespace();
    let local = matches!(first.split_whitespace().next(), Some("local" | "broadcast"));
    let dev = words.by_ref().skip_while(|w| *w != "dev").nth(1);
    (dev, local)
}

impl Routing {
    /// Sets up forwarding through the TUN device `config.tun` (already created): sysctls,
    /// the device up, the two tables, the rules; then checks with `ip route get` that every
    /// pair of clusters routes through the TUN device both ways. On error, what was done is
    /// undone.
    pub fn setup(config: &Config, mtu: usize) -> Result<Self, String> {
        let mut routing = Routing::default();
        routing.apply(config, mtu)?;
        Ok(routing)
    }

    fn set_sysctl(&mut self, key: String, value: &str) -> Result<(), String> {
        let before =
            sys::read_sysctl(&key).map_err(|e| format!("cannot read sysctl {key}: {e}"))?;
        sys::write_sysctl(&key, value)
            .map_err(|e| format!("cannot set sysctl {key} to {value}: {e}"))?;
        self.sysctls.push((key, before));
        Ok(())
    }

    fn add_rule(&mut self, args: &[&str]) -> Result<(), String> {
        let mut full = vec!["-4", "rule", "add"];
        full.extend_from_slice(args);
        sys::ip(&full)?;
        self.rules
            .push(args.iter().map(|s| s.to_string()).collect());
        Ok(())
    }

    fn apply(&mut self, config: &Config, mtu: usize) -> Result<(), String> {
        let tun = config.tun.as_str();
        // Neither IPv6 nor its neighbour discovery on the TUN device (optional: a kernel
        // without IPv6 has no such key).
        let v6 = format!("net/ipv6/conf/{tun}/disable_ipv6");
        if sys::read_sysctl(&v6).is_ok() {
            self.set_sysctl(v6, "1")?;
        }
        self.set_sysctl("net/ipv4/ip_forward".into(), "1")?;
        self.set_sysctl("net/ipv4/conf/all/rp_filter".into(), "0")?;
        for dev in config.clusters.iter().map(|c| c.dev.as_str()).chain([tun]) {
            self.set_sysctl(format!("net/ipv4/conf/{dev}/rp_filter"), "0")?;
        }
        let mtu = mtu.to_string();
        sys::ip(&[
            "link",
            "set",
            "dev",
            tun,
            "mtu",
            &mtu,
            "txqueuelen",
            "1000",
            "up",
        ])?;
        self.tables = true;
        let to_tun = TABLE_TO_TUN.to_string();
        let from_tun = TABLE_FROM_TUN.to_string();
        sys::ip(&[
            "-4", "route", "add", "default", "dev", tun, "table", &to_tun,
        ])?;
        for c in &config.clusters {
            let subnet = c.subnet.to_string();
            sys::ip(&[
                "-4", "route", "add", &subnet, "dev", &c.dev, "table", &from_tun,
            ])?;
        }
        sys::ip(&[
            "-4",
            "route",
            "add",
            "blackhole",
            "default",
            "table",
            &from_tun,
        ])?;
        let pref = PREF_FROM_TUN.to_string();
        self.add_rule(&["pref", &pref, "iif", tun, "lookup", &from_tun])?;
        let pref = PREF_TO_TUN.to_string();
        for c in &config.clusters {
            self.add_rule(&["pref", &pref, "iif", &c.dev, "lookup", &to_tun])?;
        }
        verify(config)
    }

    /// Removes the rules and routes and restores the sysctls (idempotent).
    pub fn teardown(&mut self) {
        for rule in self.rules.drain(..).rev() {
            let mut args = vec!["-4", "rule", "del"];
            args.extend(rule.iter().map(String::as_str));
            let _ = sys::ip(&args);
        }
        if std::mem::take(&mut self.tables) {
            for table in [TABLE_FROM_TUN, TABLE_TO_TUN] {
                let _ = sys::ip(&["-4", "route", "flush", "table", &table.to_string()]);
            }
        }
        for (key, before) in self.sysctls.drain(..).rev() {
            // The TUN device's keys are gone with it once its descriptor is closed.
            let _ = sys::write_sysctl(&key, &before);
        }
    }
}

impl Drop for Routing {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The IPv4 addresses of this namespace (`ip -4 -o addr show`).
fn local_addresses() -> Result<Vec<String>, String> {
    let out = sys::ip(&["-4", "-o", "addr", "show"])?;
    Ok(out
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.by_ref().find(|w| *w == "inet")?;
            Some(words.next()?.split('/').next()?.to_string())
        })
        .collect())
}

/// A host address of `subnet` that is not one of the router's, if the subnet has one.
fn probe_address(subnet: Subnet, locals: &[String]) -> Option<String> {
    if subnet.prefix() >= 31 {
        return None;
    }
    let size = 1u32 << (32 - u32::from(subnet.prefix()));
    [2, 3, size - 2, 1, 4, 5]
        .into_iter()
        .filter_map(|n| subnet.nth(n))
        .map(|a| a.to_string())
        .find(|a| !locals.contains(a))
}

/// Checks with `ip route get` that a packet from every cluster to every other enters the TUN
/// device, and that one coming out of the TUN device leaves through the destination's dev.
pub fn verify(config: &Config) -> Result<(), String> {
    let tun = config.tun.as_str();
    let locals = local_addresses()?;
    for a in &config.clusters {
        let Some(src) = probe_address(a.subnet, &locals) else {
            continue;
        };
        for b in &config.clusters {
            if a.name == b.name {
                continue;
            }
            let Some(dst) = probe_address(b.subnet, &locals) else {
                continue;
            };
            let to_tun = sys::ip(&["-4", "route", "get", &dst, "from", &src, "iif", &a.dev])?;
            let (dev, local) = route_dev(&to_tun);
            if !local && dev != Some(tun) {
                return Err(format!(
                    "routing check: a packet from cluster `{}` ({src}, arriving on `{}`) to \
                     cluster `{}` ({dst}) would leave through `{}`, not the TUN device `{tun}`; \
                     another rule or route takes precedence: `ip route get` said: {}",
                    a.name,
                    a.dev,
                    b.name,
                    dev.unwrap_or("no device"),
                    to_tun.trim()
                ));
            }
            let from_tun = sys::ip(&["-4", "route", "get", &dst, "from", &src, "iif", tun])?;
            let (dev, local) = route_dev(&from_tun);
            if !local && dev != Some(b.dev.as_str()) {
                return Err(format!(
                    "routing check: a packet from the TUN device `{tun}` to cluster `{}` \
                     ({dst}) would leave through `{}`, not `{}`: `ip route get` said: {}",
                    b.name,
                    dev.unwrap_or("no device"),
                    b.dev,
                    from_tun.trim()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_devices_are_read() {
        let rules = "2130:\tfrom all iif wan0 lookup 2130 \n2130:\tfrom all iif tun9 [detached] lookup 2130\n";
        assert_eq!(rule_iifs(rules), vec!["wan0", "tun9"]);
        assert!(rule_iifs("").is_empty());
    }

    #[test]
    fn route_get_output_is_read() {
        let out = "10.213.2.2 from 10.213.1.2 dev wan0 table 2131 \n    cache iif rt-c1 \n";
        assert_eq!(route_dev(out), (Some("wan0"), false));
        let out =
            "local 10.213.2.1 from 10.213.1.2 dev lo table local \n    cache <local> iif rt-c1\n";
        assert_eq!(route_dev(out), (Some("lo"), true));
        let out = "blackhole 8.8.8.8 from 10.213.1.2 table 2130 \n";
        assert_eq!(route_dev(out), (None, false));
    }
}
