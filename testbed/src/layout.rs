//! What a plan becomes on the testbed, before anything is created: the hosts with their
//! addresses and CPU quotas, the clusters with their LANs and WAN conditions, and the
//! emulator's configuration. Pure data, tested without root.
//!
//! Addresses (one private subnet, `[testbed] subnet_prefix`, default `10.213`, used only inside
//! the testbed's own namespaces):
//! - `10.213.0.0/24`: the management LAN. The launching machine (`launch`) is `.1`; cluster
//!   *i*'s entry host (its head, or its gateway when it has one) is `.(10 + i)`.
//! - `10.213.i.0/24`, *i* = 1, 2, ... in the plan's order: cluster *i*'s LAN. Its hosts take
//!   `.1`, `.2`, ... in the order of its machines (the head first); its gateway `.253`; the
//!   router `.254`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use anyhow::{bail, Context};
use hmw_model::plan::{Plan, Role};
use hmw_wan::{DirectionConfig, Outage};
use serde::{Deserialize, Serialize};

/// Default `[testbed] cores_per_perf`: a worker of `perf` 10 gets 0.15 of a core, so the demo
/// plan's workers (perf 90 in all) ask for 1.35 cores, under [`MAX_WORKER_CORES`].
pub const DEFAULT_CORES_PER_PERF: f64 = 0.015;
/// The most the workers of a plan may ask for in all, in cores: this machine has 2, and the
/// masters, CMs, the emulator and the daemons need the rest.
pub const MAX_WORKER_CORES: f64 = 1.4;
/// The least quota a host with a `perf` gets, in cores.
pub const MIN_CORES: f64 = 0.05;
/// The most clusters one testbed has (one /24 each).
pub const MAX_CLUSTERS: usize = 200;

/// The `[testbed]` table of a plan.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestbedTable {
    /// Cores of a host's quota per unit of its `perf`.
    pub cores_per_perf: f64,
    /// Limit each cluster's LAN ports to its `lan_bytes_per_s` (tc `tbf`).
    pub shape_lan: bool,
    /// Gateways: cluster name -> the gateway host's name. The cluster's head is then reached
    /// from the launching machine only through it (ssh `ProxyJump`).
    pub gateways: BTreeMap<String, String>,
    /// The first two octets of the testbed's private subnet (`10.213` = `10.213.0.0/16`).
    pub subnet_prefix: String,
    /// Hosts whose CPU quota is made from this perf instead of the plan's (host name ->
    /// perf, in the plan's units): the plan's `perf` is then what the user wrote by hand, and
    /// the host's real speed differs from it, for `hmw calibrate` to find.
    pub quota_perf: BTreeMap<String, f64>,
}

impl Default for TestbedTable {
    fn default() -> Self {
        TestbedTable {
            cores_per_perf: DEFAULT_CORES_PER_PERF,
            shape_lan: false,
            gateways: BTreeMap::new(),
            subnet_prefix: "10.213".to_string(),
            quota_perf: BTreeMap::new(),
        }
    }
}

/// What a host is on the testbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostKind {
    /// A machine of the plan.
    Machine,
    /// A gateway in front of a cluster (`[testbed] gateways`).
    Gateway,
    /// The launching machine (the user's workstation).
    Launch,
}

/// One emulated host.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostSpec {
    /// Its host name.
    pub name: String,
    /// Machine, gateway or the launching machine.
    pub kind: HostKind,
    /// Index of its cluster in [`Layout::clusters`] (`None` for `launch`).
    pub cluster: Option<usize>,
    /// Its roles in the plan (a host named twice has several).
    pub roles: Vec<String>,
    /// Its `perf` (the sum when named twice), `None` when it has none.
    pub perf: Option<f64>,
    /// Address on its cluster's LAN.
    pub lan_addr: Option<Ipv4Addr>,
    /// Address on the management LAN (launch, entry hosts).
    pub mgmt_addr: Option<Ipv4Addr>,
    /// The first machine of its cluster.
    pub head: bool,
    /// Runs an sshd (every host but `launch`).
    pub sshd: bool,
}

/// One cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterSpec {
    /// Its name.
    pub name: String,
    /// 1-based index: the third octet of its subnet.
    pub index: usize,
    /// The main cluster.
    pub main: bool,
    /// Its LAN, `a.b.i.0/24`.
    pub subnet: String,
    /// The router's address on its LAN.
    pub router_addr: Ipv4Addr,
    /// LAN rate for tc, bytes per second (when shaped).
    pub lan_bytes_per_s: Option<f64>,
    /// How its ranks start.
    pub launcher: String,
    /// Its head host.
    pub head: String,
    /// Its gateway host, if any.
    pub gateway: Option<String>,
    /// The WAN towards the cluster (tasks).
    pub to_cluster: Option<DirectionConfig>,
    /// The WAN from the cluster (results).
    pub from_cluster: Option<DirectionConfig>,
}

/// A plan's testbed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Layout {
    /// Every host, `launch` first.
    pub hosts: Vec<HostSpec>,
    /// Every cluster, in the plan's order.
    pub clusters: Vec<ClusterSpec>,
    /// Cores of quota per unit of `perf`.
    pub cores_per_perf: f64,
    /// tc on the LAN ports.
    pub shape_lan: bool,
    /// `a.b` of the subnet.
    pub subnet_prefix: String,
}

/// The name of the launching machine's host.
pub const LAUNCH: &str = "launch";

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Master => "master",
        Role::Submaster => "submaster",
        Role::Cm => "cm",
        Role::Worker => "worker",
    }
}

/// Mbit/s from bytes per second.
pub fn mbit(bytes_per_s: f64) -> f64 {
    bytes_per_s * 8.0 / 1e6
}

impl Layout {
    /// The testbed of a plan; refuses a plan whose workers ask for more than
    /// [`MAX_WORKER_CORES`].
    pub fn from_plan(plan: &Plan) -> anyhow::Result<Layout> {
        let table: TestbedTable = match &plan.testbed {
            Some(t) => toml::Value::Table(t.clone())
                .try_into()
                .context("the plan's [testbed] table")?,
            None => TestbedTable::default(),
        };
        if !(table.cores_per_perf.is_finite() && table.cores_per_perf > 0.0) {
            bail!(
                "[testbed] cores_per_perf = {} must be positive",
                table.cores_per_perf
            );
        }
        let octets: Vec<u8> = table
            .subnet_prefix
            .split('.')
            .map(|o| o.parse::<u8>())
            .collect::<Result<_, _>>()
            .ok()
            .filter(|v: &Vec<u8>| v.len() == 2)
            .with_context(|| {
                format!(
                    "[testbed] subnet_prefix = `{}` is not two octets such as 10.213",
                    table.subnet_prefix
                )
            })?;
        let addr = |c: u8, h: u8| Ipv4Addr::new(octets[0], octets[1], c, h);
        if plan.clusters.len() > MAX_CLUSTERS {
            bail!("the testbed holds at most {MAX_CLUSTERS} clusters");
        }
        for (cluster, gw) in &table.gateways {
            if !plan.clusters.iter().any(|c| &c.name == cluster) {
                bail!("[testbed] gateways: no cluster `{cluster}` in the plan (gateway `{gw}`)");
            }
        }
        for (host, perf) in &table.quota_perf {
            let machine = plan
                .clusters
                .iter()
                .flat_map(|c| &c.machines)
                .find(|m| &m.host == host && m.perf.is_some());
            if machine.is_none() {
                bail!("[testbed] quota_perf: `{host}` is no host with a perf in the plan");
            }
            if !(perf.is_finite() && *perf > 0.0) {
                bail!("[testbed] quota_perf: {host} = {perf} must be positive");
            }
        }
        let mut hosts = vec![HostSpec {
            name: LAUNCH.to_string(),
            kind: HostKind::Launch,
            cluster: None,
            roles: vec![],
            perf: None,
            lan_addr: None,
            mgmt_addr: Some(addr(0, 1)),
            head: false,
            sshd: false,
        }];
        let mut clusters = Vec::new();
        for (ci, c) in plan.clusters.iter().enumerate() {
            let index = ci + 1;
            let launch = c
                .launch_settings()
                .with_context(|| format!("cluster `{}`: its [cluster.launch] table", c.name))?;
            let gateway = table.gateways.get(&c.name).cloned();
            let mut order: Vec<String> = Vec::new();
            let mut by_name: BTreeMap<String, (Vec<String>, Option<f64>)> = BTreeMap::new();
            for m in &c.machines {
                let entry = by_name.entry(m.host.clone()).or_insert_with(|| {
                    order.push(m.host.clone());
                    (Vec::new(), None)
                });
                entry.0.push(role_name(m.role).to_string());
                if let Some(p) = m.perf {
                    entry.1 = Some(entry.1.unwrap_or(0.0) + p);
                }
            }
            if order.len() > 250 {
                bail!("cluster `{}`: at most 250 hosts", c.name);
            }
            let head = order
                .first()
                .with_context(|| format!("cluster `{}` has no machines", c.name))?
                .clone();
            for (hi, name) in order.iter().enumerate() {
                if name == LAUNCH || hosts.iter().any(|h| &h.name == name) {
                    bail!(
                        "host `{name}` of cluster `{}` is named elsewhere in the plan or is reserved",
                        c.name
                    );
                }
                let (roles, plan_perf) = by_name[name].clone();
                let perf = table.quota_perf.get(name).copied().or(plan_perf);
                let is_head = hi == 0;
                hosts.push(HostSpec {
                    name: name.clone(),
                    kind: HostKind::Machine,
                    cluster: Some(ci),
                    roles,
                    perf,
                    lan_addr: Some(addr(index as u8, hi as u8 + 1)),
                    mgmt_addr: (is_head && gateway.is_none()).then(|| addr(0, 10 + index as u8)),
                    head: is_head,
                    sshd: true,
                });
            }
            if let Some(gw) = &gateway {
                if gw == LAUNCH || hosts.iter().any(|h| &h.name == gw) {
                    bail!("gateway `{gw}` of cluster `{}` is already a host", c.name);
                }
                hosts.push(HostSpec {
                    name: gw.clone(),
                    kind: HostKind::Gateway,
                    cluster: Some(ci),
                    roles: vec!["gateway".to_string()],
                    perf: None,
                    lan_addr: Some(addr(index as u8, 253)),
                    mgmt_addr: Some(addr(0, 10 + index as u8)),
                    head: false,
                    sshd: true,
                });
            }
            let outages = launch
                .wan_outages
                .iter()
                .map(|o| o.parse::<Outage>().map_err(anyhow::Error::msg))
                .collect::<anyhow::Result<Vec<Outage>>>()
                .with_context(|| format!("cluster `{}`: wan_outages", c.name))?;
            let direction = |bytes: Option<f64>| DirectionConfig {
                rate_mbit: if launch.emulate_rates {
                    bytes.map(mbit).unwrap_or(0.0)
                } else {
                    0.0
                },
                delay_ms: launch.wan_delay_ms,
                jitter_ms: launch.wan_jitter_ms,
                loss: launch.wan_loss,
                outages: outages.clone(),
                ..DirectionConfig::default()
            };
            let (to_cluster, from_cluster) = if c.main {
                (None, None)
            } else {
                (
                    Some(direction(c.wan_in_bytes_per_s)),
                    Some(direction(c.wan_out_bytes_per_s)),
                )
            };
            clusters.push(ClusterSpec {
                name: c.name.clone(),
                index,
                main: c.main,
                subnet: format!("{}.{}.{index}.0/24", octets[0], octets[1]),
                router_addr: addr(index as u8, 254),
                lan_bytes_per_s: c.lan_bytes_per_s,
                launcher: launch.launcher.name().to_string(),
                head,
                gateway,
                to_cluster,
                from_cluster,
            });
        }
        let layout = Layout {
            hosts,
            clusters,
            cores_per_perf: table.cores_per_perf,
            shape_lan: table.shape_lan,
            subnet_prefix: table.subnet_prefix,
        };
        let total = layout.worker_cores();
        if total > MAX_WORKER_CORES + 1e-9 {
            bail!(
                "the plan's workers ask for {total:.3} cores in all (perf {:.3} x cores_per_perf {}), \
                 more than the limit of {MAX_WORKER_CORES} cores of this 2-core machine: lower \
                 [testbed] cores_per_perf or the perfs",
                layout.hosts.iter().filter_map(|h| h.perf).sum::<f64>(),
                layout.cores_per_perf
            );
        }
        Ok(layout)
    }

    /// A host's CPU quota in cores: `perf x cores_per_perf`, at least [`MIN_CORES`]; `None`
    /// (no quota) for a host without `perf`.
    pub fn cores_of(&self, perf: Option<f64>) -> Option<f64> {
        perf.map(|p| (p * self.cores_per_perf).max(MIN_CORES))
    }

    /// The quotas of all hosts with a `perf`, in cores, summed.
    pub fn worker_cores(&self) -> f64 {
        self.hosts
            .iter()
            .filter_map(|h| self.cores_of(h.perf))
            .sum()
    }

    /// A host by name.
    pub fn host(&self, name: &str) -> Option<&HostSpec> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// A cluster by name.
    pub fn cluster(&self, name: &str) -> Option<&ClusterSpec> {
        self.clusters.iter().find(|c| c.name == name)
    }

    /// The hosts of a cluster, machines first, then its gateway.
    pub fn hosts_of(&self, cluster: usize) -> impl Iterator<Item = &HostSpec> {
        self.hosts
            .iter()
            .filter(move |h| h.cluster == Some(cluster))
    }

    /// The emulator's configuration file (TOML).
    pub fn router_config(&self, tun: &str, seed: u64) -> String {
        #[derive(Serialize)]
        struct RouterCluster<'a> {
            name: &'a str,
            subnet: &'a str,
            dev: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            to_cluster: Option<&'a DirectionConfig>,
            #[serde(skip_serializing_if = "Option::is_none")]
            from_cluster: Option<&'a DirectionConfig>,
        }
        #[derive(Serialize)]
        struct RouterConfig<'a> {
            tun: &'a str,
            seed: u64,
            cluster: Vec<RouterCluster<'a>>,
        }
        let config = RouterConfig {
            tun,
            seed,
            cluster: self
                .clusters
                .iter()
                .map(|c| RouterCluster {
                    name: &c.name,
                    subnet: &c.subnet,
                    dev: router_dev(c.index),
                    to_cluster: c.to_cluster.as_ref(),
                    from_cluster: c.from_cluster.as_ref(),
                })
                .collect(),
        };
        toml::to_string(&config).expect("the router's configuration serializes")
    }

    /// The hosts file every emulated host sees: every host's LAN address.
    pub fn hosts_file(&self) -> String {
        let mut s =
            String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
        for h in &self.hosts {
            if let Some(a) = h.lan_addr {
                s.push_str(&format!("{a}\t{}\n", h.name));
            }
        }
        s
    }

    /// The launching machine's hosts file: the entry hosts' management addresses.
    pub fn launch_hosts_file(&self) -> String {
        let mut s = String::from(
            "127.0.0.1\tlocalhost launch\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        );
        for h in &self.hosts {
            if let (Some(a), false) = (h.mgmt_addr, h.kind == HostKind::Launch) {
                s.push_str(&format!("{a}\t{}\n", h.name));
            }
        }
        s
    }
}

/// The router's interface on cluster `index`'s LAN (inside the router namespace).
pub fn router_dev(index: usize) -> String {
    format!("lan{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(extra: &str) -> Plan {
        let text = format!(
            r#"
[application]
name = "t"
tasks = 10
oper = 1.0
task_bytes = 10
result_bytes = 10
[[cluster]]
name = "a"
main = true
lan_bytes_per_s = 1e8
machines = [{{ host = "a-head", role = "master" }}, {{ host = "a-1", role = "worker", perf = 10.0 }}, {{ host = "a-1", role = "cm" }}]
[[cluster]]
name = "b"
lan_bytes_per_s = 1e8
wan_in_bytes_per_s = 2e6
wan_out_bytes_per_s = 1e6
machines = [{{ host = "b-head", role = "submaster" }}, {{ host = "b-1", role = "worker", perf = 20.0 }}]
[cluster.launch]
launcher = "slurm"
wan_delay_ms = 20
wan_outages = ["30-50"]
{extra}
"#
        );
        Plan::from_toml_str(&text).unwrap()
    }

    #[test]
    fn hosts_addresses_and_router() {
        let l = Layout::from_plan(&plan("[testbed]\ngateways = { b = \"b-gw\" }")).unwrap();
        let names: Vec<&str> = l.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["launch", "a-head", "a-1", "b-head", "b-1", "b-gw"]);
        let a1 = l.host("a-1").unwrap();
        assert_eq!(a1.roles, ["worker", "cm"]);
        assert_eq!(a1.lan_addr, Some("10.213.1.2".parse().unwrap()));
        assert_eq!(
            l.host("a-head").unwrap().mgmt_addr,
            Some("10.213.0.11".parse().unwrap())
        );
        // behind its gateway, b's head has no management address; the gateway has b's.
        assert_eq!(l.host("b-head").unwrap().mgmt_addr, None);
        assert_eq!(
            l.host("b-gw").unwrap().mgmt_addr,
            Some("10.213.0.12".parse().unwrap())
        );
        assert_eq!(
            l.host("b-gw").unwrap().lan_addr,
            Some("10.213.2.253".parse().unwrap())
        );
        let b = l.cluster("b").unwrap();
        assert_eq!(b.launcher, "slurm");
        assert_eq!(b.to_cluster.as_ref().unwrap().rate_mbit, 16.0);
        assert_eq!(b.from_cluster.as_ref().unwrap().rate_mbit, 8.0);
        assert_eq!(b.to_cluster.as_ref().unwrap().outages[0].end_s, 50.0);
        let cfg: toml::Table = toml::from_str(&l.router_config("wan0", 1)).unwrap();
        let cl = cfg["cluster"].as_array().unwrap();
        assert_eq!(cl.len(), 2);
        assert!(cl[0].get("to_cluster").is_none());
        assert_eq!(cl[1]["dev"].as_str(), Some("lan2"));
        assert_eq!(cl[1]["to_cluster"]["delay_ms"].as_float(), Some(20.0));
        assert!(l.hosts_file().contains("10.213.2.253\tb-gw"));
        assert!(l.launch_hosts_file().contains("10.213.0.12\tb-gw"));
        assert!(!l.launch_hosts_file().contains("b-head"));
    }

    #[test]
    fn quotas_and_the_limit() {
        let l = Layout::from_plan(&plan("")).unwrap();
        assert!((l.worker_cores() - 0.45).abs() < 1e-9);
        assert_eq!(l.cores_of(Some(1.0)), Some(MIN_CORES));
        assert_eq!(l.cores_of(None), None);
        let err = Layout::from_plan(&plan("[testbed]\ncores_per_perf = 0.1")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("3.000 cores") && msg.contains("1.4"), "{msg}");
    }

    #[test]
    fn a_quota_from_its_own_perf() {
        let l = Layout::from_plan(&plan("[testbed]\nquota_perf = { b-1 = 16.0 }")).unwrap();
        assert_eq!(l.host("b-1").unwrap().perf, Some(16.0));
        assert_eq!(l.host("a-1").unwrap().perf, Some(10.0));
        assert!((l.worker_cores() - 0.39).abs() < 1e-9);
        // Only a host with a perf in the plan, and a positive one.
        let err =
            Layout::from_plan(&plan("[testbed]\nquota_perf = { b-head = 16.0 }")).unwrap_err();
        assert!(err.to_string().contains("`b-head`"), "{err}");
        let err = Layout::from_plan(&plan("[testbed]\nquota_perf = { b-1 = 0.0 }")).unwrap_err();
        assert!(err.to_string().contains("positive"), "{err}");
        // The limit counts the quotas given.
        assert!(Layout::from_plan(&plan("[testbed]\nquota_perf = { b-1 = 90.0 }")).is_err());
    }
}
