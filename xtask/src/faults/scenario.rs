//! The faults, and how a faulted run is judged.
//!
//! Each fault strikes a run of `configs/testbed/faults.toml` once a share of its tasks is
//! gathered. A run *survived* when `hmw launch` (or the `--resume` after a fault that kills
//! the launcher) ended well; it is *verified* when the application gathered every task exactly
//! once (its own count, a sum of ids and of counts, not the journal's); it is *within bound*
//! when its makespan, from its first clock start to its last result, is at most the predicted
//! (worst-case) makespan plus the fault's own duration plus twice the measured restart time.
//! The restart time is what the fault cost before the run could go on: from the fault to the
//! moment the launcher started the cluster again, plus the time the clusters took to start in
//! the run (from its launch to its first clock start); after a fault that kills the launcher,
//! from the fault to the resumed run's clock start (the resume cleans up the killed run on
//! every host, stages and starts the clusters).

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strike {
    /// Every process of `host` killed at once (`hmw-testbed kill-host`), its run folder
    /// emptied when `wipe`; the host comes back (`revive`) once the run is over.
    KillHost { host: &'static str, wipe: bool },
    /// The rank running on `host` (its only application process: a CM) killed with SIGKILL.
    KillRank { host: &'static str },
    /// `host`'s LAN port down for `seconds`.
    CutLan { host: &'static str, seconds: u32 },
    /// `hmw launch` killed with SIGKILL, then `hmw launch --resume`.
    KillLauncher,
    /// Every process of the run on every host and the launcher killed at once, the journal
    /// cut to what its master had synced, then `hmw launch --resume`.
    Power,
}

/// A fault of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) name: &'static str,
    pub(crate) strike: Strike,
}

impl Fault {
    /// Whether the run goes on through `hmw launch --resume` (the launcher is gone).
    pub(crate) fn resumes(&self) -> bool {
        matches!(self.strike, Strike::KillLauncher | Strike::Power)
    }

    /// Seconds the fault itself lasts (a LAN cut), beyond what restarting costs.
    pub(crate) fn duration_s(&self) -> f64 {
        match self.strike {
            Strike::CutLan { seconds, .. } => f64::from(seconds),
            _ => 0.0,
        }
    }
}

/// The faults of the full suite, in the order they run. The LAN cut lasts longer than the
/// plan's `host_timeout_s` (30 s): the expected outcome is the cluster started again without
/// the host, not a stall.
pub(crate) const ALL: [Fault; 8] = [
    Fault {
        name: "ext_worker_host",
        strike: Strike::KillHost {
            host: "spain-2",
            wipe: false,
        },
    },
    Fault {
        name: "main_worker_host",
        strike: Strike::KillHost {
            host: "lyon-2",
            wipe: false,
        },
    },
    Fault {
        name: "master",
        strike: Strike::KillHost {
            host: "lyon-head",
            wipe: true,
        },
    },
    Fault {
        name: "cm_main",
        strike: Strike::KillRank { host: "lyon-cm" },
    },
    Fault {
        name: "cm_ext",
        strike: Strike::KillRank { host: "spain-cm" },
    },
    Fault {
        name: "lan_cut",
        strike: Strike::CutLan {
            host: "spain-1",
            seconds: 60,
        },
    },
    Fault {
        name: "launcher",
        strike: Strike::KillLauncher,
    },
    Fault {
        name: "power",
        strike: Strike::Power,
    },
];

/// The reduced check `scripts/test.sh` runs: the launcher killed and resumed, and a CM of an
/// external cluster killed (its cluster started again).
pub(crate) const QUICK: [&str; 2] = ["launcher", "cm_ext"];

/// What a faulted run gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub(crate) name: &'static str,
    /// The launch (or the resumed launch) ended well.
    pub(crate) survived: bool,
    /// The application's check: every task gathered exactly once.
    pub(crate) verified: bool,
    /// Tasks never gathered, and gathered more than once.
    pub(crate) missing: u64,
    pub(crate) duplicates: u64,
    /// From the first clock start to the last result, seconds.
    pub(crate) makespan_s: f64,
    /// From the fault to the cluster started again, plus a cluster's start, seconds; for a
    /// resumed launch, from the fault to the resumed run's clock start.
    pub(crate) restart_s: f64,
    /// A resumed launch's restart as first counted: from the fault to the resume,
    /// plus the first run's startup (it left out the resume's cleanup of the killed run).
    pub(crate) restart_with_first_startup_s: Option<f64>,
    /// The fault's own duration, seconds.
    pub(crate) fault_s: f64,
}

impl Outcome {
    /// Whether the makespan is at most the prediction plus the fault and twice the restart.
    pub(crate) fn within_bound(&self, predicted_s: f64) -> bool {
        self.makespan_s <= predicted_s + self.fault_s + 2.0 * self.restart_s
    }

    /// Makespan over the prediction, less one.
    pub(crate) fn overhead(&self, predicted_s: f64) -> f64 {
        self.makespan_s / predicted_s - 1.0
    }
}

/// The suite's last line.
pub(crate) fn summary(outcomes: &[Outcome], predicted_s: f64) -> String {
    let count = |f: &dyn Fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let names: Vec<&str> = outcomes.iter().map(|o| o.name).collect();
    let worst = outcomes
        .iter()
        .map(|o| o.overhead(predicted_s))
        .fold(f64::NEG_INFINITY, f64::max);
    format!(
        "faults names={} scenarios={} survived={} verified={} lost_results={} \
         duplicate_gathers={} worst_overhead={} within_bound={}",
        names.join(","),
        outcomes.len(),
        count(&|o| o.survived),
        count(&|o| o.verified),
        outcomes.iter().map(|o| o.missing).sum::<u64>(),
        outcomes.iter().map(|o| o.duplicates).sum::<u64>(),
        if worst.is_finite() {
            format!("{worst:.3}")
        } else {
            "none".into()
        },
        count(&|o| o.within_bound(predicted_s)),
    )
}

/// Whether every run survived, verified, within its bound, nothing lost or gathered twice.
pub(crate) fn passed(outcomes: &[Outcome], predicted_s: f64) -> bool {
    outcomes.iter().all(|o| {
        o.survived
            && o.verified
            && o.missing == 0
            && o.duplicates == 0
            && o.within_bound(predicted_s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &'static str, makespan_s: f64, restart_s: f64, fault_s: f64) -> Outcome {
        Outcome {
            name,
            survived: true,
            verified: true,
            missing: 0,
            duplicates: 0,
            makespan_s,
            restart_s,
            restart_with_first_startup_s: None,
            fault_s,
        }
    }

    #[test]
    fn the_bound_counts_the_fault_and_twice_the_restart() {
        assert!(outcome("a", 100.0, 10.0, 0.0).within_bound(80.0));
        assert!(!outcome("a", 100.1, 10.0, 0.0).within_bound(80.0));
        assert!(outcome("b", 160.0, 10.0, 60.0).within_bound(80.0));
    }

    #[test]
    fn the_last_line_sums_every_run() {
        let mut lost = outcome("lost", 90.0, 5.0, 0.0);
        lost.missing = 2;
        lost.verified = false;
        let outcomes = [outcome("fine", 88.0, 5.0, 0.0), lost];
        assert_eq!(
            summary(&outcomes, 80.0),
            "faults names=fine,lost scenarios=2 survived=2 verified=1 lost_results=2 \
             duplicate_gathers=0 worst_overhead=0.125 within_bound=2"
        );
        assert!(!passed(&outcomes, 80.0));
        assert!(passed(&outcomes[..1], 80.0));
    }

    #[test]
    fn the_quick_faults_are_faults_of_the_suite() {
        for name in QUICK {
            assert!(ALL.iter().any(|f| f.name == name), "{name}");
        }
        assert_eq!(ALL.iter().filter(|f| f.resumes()).count(), 2);
    }
}
