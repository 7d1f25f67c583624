//! Steady-state performance limits of a cluster and the bottleneck they name
//! (`docs/model.md` equations (26), (32), (36)).

use serde::{Deserialize, Serialize};

/// What limits a cluster's steady-state performance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// The workers: the cluster is computation bound (`perf_ste == cperf`).
    Compute,
    /// The cluster's LAN.
    Lan,
    /// The CPU of its master (or sub-master) (125).
    Master,
    /// The CPU of its CM (125).
    Cm,
    /// The WAN from the main cluster to this one (tasks).
    WanIn,
    /// The WAN from this cluster to the main one (results).
    WanOut,
}

impl Bottleneck {
    /// The name used in the output and JSON for the argument of (26)/(32)/(36) (and (125))
    /// attaining `perf_ste`: `compute`, `lan`, `master`, `cm`, `wan_in`, `wan_out`.
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::Compute => "compute",
            Bottleneck::Lan => "lan",
            Bottleneck::Master => "master",
            Bottleneck::Cm => "cm",
            Bottleneck::WanIn => "wan_in",
            Bottleneck::WanOut => "wan_out",
        }
    }
}

impl Bottleneck {
    /// The plan key of the link's throughput (section 1): `lan_bytes_per_s`,
    /// `wan_in_bytes_per_s`, `wan_out_bytes_per_s`; `None` for [`Bottleneck::Compute`] and
    /// the CPUs.
    pub fn throughput_key(self) -> Option<&'static str> {
        match self {
            Bottleneck::Compute | Bottleneck::Master | Bottleneck::Cm => None,
            Bottleneck::Lan => Some("lan_bytes_per_s"),
            Bottleneck::WanIn => Some("wan_in_bytes_per_s"),
            Bottleneck::WanOut => Some("wan_out_bytes_per_s"),
        }
    }
}

impl std::fmt::Display for Bottleneck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The arguments of the `min` in (26), (32) and (36), with the master's and CM's (125), each
/// in basic operations per second. A limit that does not apply (the WAN of the main cluster, a
/// CPU per task not known) is `f64::INFINITY`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerformanceLimits {
    /// `cperf`.
    pub compute: f64,
    /// `oper * tput_lan / s_comm`.
    pub lan: f64,
    /// `oper / c_m` (125).
    pub master: f64,
    /// `oper / c_cm` (125).
    pub cm: f64,
    /// `oper * nt * tput_in / s_task_inter`.
    pub wan_in: f64,
    /// `oper * nr * tput_out / s_result_inter`.
    pub wan_out: f64,
}

impl PerformanceLimits {
    /// `perf_ste`: the smallest limit, equations (26), (32), (36), (125).
    pub fn steady_performance(&self) -> f64 {
        self.compute
            .min(self.lan)
            .min(self.master)
            .min(self.cm)
            .min(self.wan_in)
            .min(self.wan_out)
    }

    /// The argument of (26)/(32)/(36) that attains the minimum; ties go to `compute` (a cluster is computation
    /// bound iff `perf_ste == cperf`), then `lan`, `master`, `cm`, `wan_in`, `wan_out`.
    pub fn bottleneck(&self) -> Bottleneck {
        let candidates = [
            (Bottleneck::Compute, self.compute),
            (Bottleneck::Lan, self.lan),
            (Bottleneck::Master, self.master),
            (Bottleneck::Cm, self.cm),
            (Bottleneck::WanIn, self.wan_in),
            (Bottleneck::WanOut, self.wan_out),
        ];
        candidates
            .iter()
            .fold(
                candidates[0],
                |best, &c| if c.1 < best.1 { c } else { best },
            )
            .0
    }

    /// Equation (60): the steady efficiency bound `perf_ste / cperf`.
    pub fn steady_efficiency_bound(&self) -> f64 {
        self.steady_performance() / self.compute
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_limit_names_the_bottleneck() {
        let limits = PerformanceLimits {
            compute: 21.7125e-3,
            lan: 4.155,
            master: f64::INFINITY,
            cm: f64::INFINITY,
            wan_in: 5450.5,
            wan_out: 9.179e-3,
        };
        assert_eq!(limits.steady_performance(), 9.179e-3);
        assert_eq!(limits.bottleneck(), Bottleneck::WanOut);
        assert!((limits.steady_efficiency_bound() - 9.179e-3 / 21.7125e-3).abs() < 1e-12);
    }

    #[test]
    fn ties_go_to_compute() {
        let limits = PerformanceLimits {
            compute: 2.0,
            lan: 2.0,
            master: f64::INFINITY,
            cm: f64::INFINITY,
            wan_in: f64::INFINITY,
            wan_out: f64::INFINITY,
        };
        assert_eq!(limits.bottleneck(), Bottleneck::Compute);
        assert_eq!(limits.steady_efficiency_bound(), 1.0);
    }

    #[test]
    fn names_match_the_output_format() {
        let names: Vec<_> = [
            Bottleneck::Compute,
            Bottleneck::Lan,
            Bottleneck::WanIn,
            Bottleneck::WanOut,
        ]
        .iter()
        .map(|b| serde_json::to_string(b).unwrap())
        .collect();
        assert_eq!(
            names,
            ["\"compute\"", "\"lan\"", "\"wan_in\"", "\"wan_out\""]
        );
        assert_eq!(Bottleneck::WanIn.to_string(), "wan_in");
        assert_eq!(Bottleneck::Compute.throughput_key(), None);
        assert_eq!(
            Bottleneck::WanOut.throughput_key(),
            Some("wan_out_bytes_per_s")
        );
    }
}
