//! The tables of a plan that say how to run it rather than what to predict: `[launch]` and
//! each cluster's `[cluster.launch]`. The model keeps them uninterpreted in [`Plan`]; the
//! commands that run a plan (`hmw launch`, `hmw calibrate`, the testbed) read them here, so
//! that every reader agrees on one format.
//!
//! ```toml
//! [launch]
//! binary = "hmw-synthetic"     # the application: next to `hmw`, or a path
//! reference_perf = 20.0        # a worker whose `perf` is this runs at speed 1 (emulation)
//! [launch.application]         # the application's own [application] settings
//! [launch.cm]                  # [cm] settings of the communication managers
//!
//! [[cluster]]
//! # ...
//! [cluster.launch]
//! launcher = "local"           # how its ranks start: local, ssh or slurm
//! parent = "argentina"         # the cluster it hangs from (default: the main cluster)
//! wan_delay_ms = 25            # one-way delay of the emulated WAN
//! wan_jitter_ms = 0
//! wan_loss = 0.0               # random loss, each way
//! wan_outages = ["30-50"]      # seconds from the start when the link is down
//! emulate_rates = true         # limit each way to wan_in/out_bytes_per_s
//! ```

use serde::Deserialize;

use super::{ClusterPlan, Plan};

/// `[launch]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchTable {
    /// The application binary: a name found next to `hmw` or on `PATH`, or a path.
    pub binary: Option<String>,
    /// Emulation on one machine: a worker whose `perf` is this runs at speed 1.
    pub reference_perf: Option<f64>,
    /// The application's own `[application]` settings.
    #[serde(default)]
    pub application: toml::Table,
    /// The `[cm]` settings of the communication managers.
    #[serde(default)]
    pub cm: toml::Table,
}

/// How a cluster's ranks are started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// `mpirun` on the launching machine (every cluster on this machine).
    #[default]
    Local,
    /// `mpirun` over ssh on the cluster's hosts.
    Ssh,
    /// A Slurm allocation on the cluster's nodes.
    Slurm,
}

/// `[cluster.launch]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterLaunch {
    /// How the cluster's ranks are started.
    pub launcher: Launcher,
    /// The cluster it hangs from (default: the main cluster).
    pub parent: Option<String>,
    /// One-way delay of the WAN to its parent, milliseconds.
    pub wan_delay_ms: f64,
    /// Jitter of that delay, milliseconds.
    pub wan_jitter_ms: f64,
    /// Random loss, each way.
    pub wan_loss: f64,
    /// When the link is down, seconds from the start (`30-50` or `30+20`).
    pub wan_outages: Vec<String>,
    /// Limit each way to the cluster's `wan_in/out_bytes_per_s`.
    pub emulate_rates: bool,
}

impl Default for ClusterLaunch {
    fn default() -> Self {
        ClusterLaunch {
            launcher: Launcher::Local,
            parent: None,
            wan_delay_ms: 0.0,
            wan_jitter_ms: 0.0,
            wan_loss: 0.0,
            wan_outages: Vec::new(),
            emulate_rates: true,
        }
    }
}

impl Plan {
    /// The `[launch]` table, or its defaults when the plan has none.
    pub fn launch_table(&self) -> Result<LaunchTable, toml::de::Error> {
        parse_or_default(self.launch.as_ref())
    }
}

impl ClusterPlan {
    /// The cluster's `launch` table, or its defaults when it has none.
    pub fn launch_settings(&self) -> Result<ClusterLaunch, toml::de::Error> {
        parse_or_default(self.launch.as_ref())
    }
}

fn parse_or_default<T: Default + serde::de::DeserializeOwned>(
    table: Option<&toml::Table>,
) -> Result<T, toml::de::Error> {
    match table {
        Some(table) => toml::Value::Table(table.clone()).try_into(),
        None => Ok(T::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_and_defaults() {
        let table: toml::Table = toml::from_str("launcher = \"slurm\"\nwan_delay_ms = 5").unwrap();
        let l: ClusterLaunch = parse_or_default(Some(&table)).unwrap();
        assert_eq!(l.launcher, Launcher::Slurm);
        assert_eq!(l.wan_delay_ms, 5.0);
        assert!(l.emulate_rates);
        let none: ClusterLaunch = parse_or_default(None).unwrap();
        assert_eq!(none.launcher, Launcher::Local);
        let bad: toml::Table = toml::from_str("launcher = \"pbs\"").unwrap();
        let err = parse_or_default::<ClusterLaunch>(Some(&bad)).unwrap_err();
        assert!(err.to_string().contains("pbs"), "{err}");
    }
}
