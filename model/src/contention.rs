//! Contention at the master and on the LAN (`docs/model.md` section 16, (125)-(129)): a
//! cluster as a closed queueing network, solved by MVA ([`crate::queueing`]), beside the
//! bottleneck formulas (26)(32)(36) with the master's CPU term.
//!
//! Each worker holds `b` tasks (`worker_buffers`), computes them one at a time (a queue of its
//! own, not a delay) and, for each, its result and the next task cross the cluster's LAN and
//! its master (a sub-master for an external cluster, and its CM) spends its CPU on them: a
//! task's cycle. Workers of equal speed are one kind of class (116).

use crate::limits::PerformanceLimits;
use crate::params::DispatchCosts;
use crate::queueing::{solve, CentreKind, ClosedNetwork, CustomerClass, OwnQueue};

/// (125) The most a process spending `cpu_per_task_s` of its CPU on each task hands out:
/// `oper / c` basic operations per second; no limit (infinite) without a cost.
pub fn dispatch_limit(oper: f64, cpu_per_task_s: f64) -> f64 {
    if cpu_per_task_s > 0.0 {
        oper / cpu_per_task_s
    } else {
        f64::INFINITY
    }
}

/// The squared coefficient of variation taken for the service of the master and the CM, and
/// of the LAN when `hmw calibrate` has not measured it (175): 1, the product form's. They move
/// the same work and bytes for every task, but what each takes varies with what else their
/// machine does (the scheduler, the kernel's buffers, a shaped port's bursts). (Taken as 0,
/// the residual-time term (118) brings a cluster of constant task times back to the
/// bottleneck's rate.)
pub const DISPATCH_SCV: f64 = 1.0;

/// What a cluster's network is made of.
#[derive(Debug, Clone, Copy)]
pub struct ClusterNetwork<'a> {
    /// `oper`: basic operations per task.
    pub oper: f64,
    /// The coefficient of variation of a task's basic operations (129).
    pub oper_cv: f64,
    /// `s_comm = s_task + s_result` (2).
    pub comm_bytes: f64,
    /// `tput_lan` (`tput_sc`).
    pub lan_bytes_per_s: f64,
    /// `scv_lan` (175): the squared coefficient of variation of the LAN's time per task.
    pub lan_scv: f64,
    /// The workers' performances (as the model reads them, (100)).
    pub perfs: &'a [f64],
    /// Tasks each worker holds (`[run] worker_buffers`).
    pub worker_buffers: u32,
    /// The master's and CM's CPU per task (0: not counted).
    pub dispatch: DispatchCosts,
}

impl ClusterNetwork<'_> {
    /// (126) The closed network: the master's CPU (`c_m` per task), the CM's (`c_cm`, an
    /// external cluster's) and the LAN (`s_comm / tput_lan` per task) as queues every task
    /// visits; one kind of class per distinct `perf`, as many copies as workers of it, each
    /// of `b` customers (its tasks) with a queue of its own of `oper / perf` per task. A
    /// worker's service varies as its tasks' operations, `scv = oper_cv^2` (129), the LAN's as
    /// measured (175); the master's and the CM's keep the product form's exponential service
    /// ([`DISPATCH_SCV`]).
    pub fn network(&self) -> ClosedNetwork {
        let lan_s = self.comm_bytes / self.lan_bytes_per_s;
        let demands = vec![self.dispatch.master_s, self.dispatch.cm_s, lan_s];
        let mut perfs = self.perfs.to_vec();
        perfs.sort_by(|a, b| b.total_cmp(a));
        let mut classes: Vec<CustomerClass> = Vec::new();
        for (i, &perf) in perfs.iter().enumerate() {
            if i > 0 && perfs[i - 1] == perf {
                if let Some(last) = classes.last_mut() {
                    last.copies += 1;
                }
                continue;
            }
            classes.push(CustomerClass {
                copies: 1,
                population: self.worker_buffers.max(1),
                think_s: 0.0,
                demands_s: demands.clone(),
                scv: vec![DISPATCH_SCV, DISPATCH_SCV, self.lan_scv],
                own_queue: Some(OwnQueue {
                    demand_s: self.oper / perf,
                    scv: self.oper_cv * self.oper_cv,
                }),
            });
        }
        ClosedNetwork {
            centres: vec![CentreKind::Queue; demands.len()],
            classes,
        }
    }

    /// (127) The network's steady performance: `oper * sum_c copies_c X_c`, the tasks its
    /// workers complete per second, and never above what the bottleneck formulas allow
    /// (`limits`: the workers, the LAN, the master, the CM, and for an external cluster its
    /// WANs, (128)). `None` when the network cannot be solved (no worker, or values out of
    /// the solver's range).
    pub fn performance(&self, limits: &PerformanceLimits) -> Option<f64> {
        let network = self.network();
        let solution = solve(&network).ok()?;
        let rate = self.oper * solution.total_throughput(&network);
        (rate.is_finite() && rate > 0.0).then(|| rate.min(limits.steady_performance()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::single_class;

    fn limits(compute: f64, lan: f64, master: f64) -> PerformanceLimits {
        PerformanceLimits {
            compute,
            lan,
            master,
            cm: f64::INFINITY,
            wan_in: f64::INFINITY,
            wan_out: f64::INFINITY,
        }
    }

    #[test]
    fn the_master_limit_is_oper_over_its_cpu_per_task() {
        assert_eq!(dispatch_limit(2.0, 0.5), 4.0);
        assert!(dispatch_limit(2.0, 0.0).is_infinite());
    }

    #[test]
    fn one_worker_of_one_buffer_is_single_class_mva() {
        // One task circulating: master 0.01 s, LAN 0.02 s, worker 0.1 s: no waiting, 1/0.13.
        let cluster = ClusterNetwork {
            oper: 1.0,
            oper_cv: 1.0,
            comm_bytes: 200.0,
            lan_bytes_per_s: 10_000.0,
            lan_scv: 1.0,
            perfs: &[10.0],
            worker_buffers: 1,
            dispatch: DispatchCosts {
                master_s: 0.01,
                ..DispatchCosts::default()
            },
        };
        let rate = cluster.performance(&limits(10.0, 50.0, 100.0)).unwrap();
        assert!((rate - 1.0 / 0.13).abs() < 1e-12, "{rate}");
        // two buffers, exponential tasks: single-class MVA over the three queues
        let two = ClusterNetwork {
            worker_buffers: 2,
            ..cluster
        };
        let mut network = two.network();
        network.classes[0].scv = vec![1.0; 3];
        let levels = single_class(&[CentreKind::Queue; 4], &[0.01, 0.0, 0.02, 0.1], 0.0, 2);
        let solved = crate::queueing::exact(&network);
        assert!((solved.throughput[0] - levels[1].throughput).abs() < 1e-12);
    }

    #[test]
    fn workers_of_equal_speed_are_one_kind() {
        let perfs = [2.0, 1.0, 2.0, 2.0];
        let cluster = ClusterNetwork {
            oper: 1.0,
            oper_cv: 0.0,
            comm_bytes: 1.0,
            lan_bytes_per_s: 100.0,
            lan_scv: 1.0,
            perfs: &perfs,
            worker_buffers: 2,
            dispatch: DispatchCosts::default(),
        };
        let network = cluster.network();
        let copies: Vec<u32> = network.classes.iter().map(|c| c.copies).collect();
        assert_eq!(copies, [3, 1]);
        assert_eq!(network.classes[0].own_queue.unwrap().scv, 0.0);
    }

    #[test]
    fn near_the_knee_the_network_is_below_the_bottleneck_and_variable_tasks_lower_it() {
        // Six workers of 1 task/s, two buffers, a LAN that carries 6 tasks/s: the knee.
        let perfs = [1.0; 6];
        let knee = |oper_cv| ClusterNetwork {
            oper: 1.0,
            oper_cv,
            comm_bytes: 1.0,
            lan_bytes_per_s: 6.0,
            lan_scv: 1.0,
            perfs: &perfs,
            worker_buffers: 2,
            dispatch: DispatchCosts::default(),
        };
        let bound = limits(6.0, 6.0, f64::INFINITY);
        let steady = knee(0.0).performance(&bound).unwrap();
        let variable = knee(1.0).performance(&bound).unwrap();
        assert!(variable < steady && steady < 6.0, "{variable} {steady}");
        // a LAN measured less variable than exponential (175) waits less
        let smoother = ClusterNetwork {
            lan_scv: 0.5,
            ..knee(1.0)
        };
        let smoother = smoother.performance(&bound).unwrap();
        assert!(
            variable < smoother && smoother < 6.0,
            "{variable} {smoother}"
        );
        // far from the knee (a LAN ten times faster) the workers' rate comes back
        let fast = ClusterNetwork {
            lan_bytes_per_s: 600.0,
            ..knee(1.0)
        };
        let rate = fast
            .performance(&limits(6.0, 600.0, f64::INFINITY))
            .unwrap();
        assert!(rate > 5.7 && rate <= 6.0, "{rate}");
    }
}
