//! The three states of one cluster running a given set of workers: startup, steady state (with
//! its bottleneck) and end, best and worst (`docs/model.md` section 2).

use super::contention::{dispatch_limit, ClusterNetwork, DISPATCH_SCV};
use super::execution::{cluster_performance, execution_time};
use super::external::{self, ExternalLimitsInput};
use super::limits::{Bottleneck, PerformanceLimits};
use super::local;
use super::params::{
    ApplicationParams, ClusterOptions, ClusterParams, Contention, DispatchCosts, ExternalLink,
    ModelInput,
};

/// Which end time a prediction uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Case {
    /// Best end: results flow out as in the steady state.
    Best,
    /// Worst end: the slowest worker (or the reassigned tail, or a saturated link) ends last.
    Worst,
}

/// The state times of one cluster with a given set of workers.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterModel {
    /// `W`: number of workers.
    pub workers: usize,
    /// `cperf`, equation (3).
    pub cperf: f64,
    /// The arguments of the steady-performance `min`, (26)/(32)/(36) and the master's and
    /// CM's (125).
    pub limits: PerformanceLimits,
    /// The closed network's steady performance (127)(128), when computed: with `contention =
    /// "mva"` always, else only where asked for ([`ClusterModel::with_network`]).
    pub network: Option<f64>,
    /// `perf_ste`: the smallest of [`ClusterModel::limits`], or [`ClusterModel::network`]
    /// with `contention = "mva"`.
    pub perf_ste: f64,
    /// What attains `perf_ste`.
    pub bottleneck: Bottleneck,
    /// `T_up`, (12) for the main cluster, (18)/(21) for an external one.
    pub t_up: f64,
    /// Best end time, (37) or (47 corrected)/(52)(53).
    pub t_end_best: f64,
    /// Worst end time used by the methodology: the computation-bound form ((39)/(43),
    /// (49)/(50), (54)/(55)); for a communication-bound cluster the larger of that and the
    /// communication-bound form ((44), (51)/(56)).
    pub t_end_worst: f64,
    /// Local tasks per inter-cluster task (`nt`; 1 for the main cluster): the unit in which
    /// whole tasks are handed to this cluster.
    pub task_unit: u64,
}

/// A cluster's LAN as the model reads it: its bytes per second and `scv_lan` (175), the
/// product form's [`DISPATCH_SCV`] when `hmw calibrate` has not measured it.
fn lan_of(cluster: &ClusterParams) -> (f64, f64) {
    (
        cluster.lan_bytes_per_s,
        cluster.lan_scv.unwrap_or(DISPATCH_SCV),
    )
}

impl ClusterModel {
    /// Section 2: the model of `cluster` running the workers whose performances are `perfs` —
    /// [`ClusterModel::local`] for the main cluster, [`ClusterModel::external`] otherwise;
    /// `None` when `perfs` is empty (the cluster takes no part).
    /// `options` say how the last tasks are handed out (whether the master copies them to
    /// idle workers, how many tasks a worker holds) and which terms beyond the thesis's model
    /// count ([`ClusterOptions`]; a `bool` is the first, with one buffer and the extended
    /// form's terms).
    pub fn new(
        application: &ApplicationParams,
        cluster: &ClusterParams,
        perfs: &[f64],
        options: impl Into<ClusterOptions>,
    ) -> Option<Self> {
        let options = options.into();
        let lan = lan_of(cluster);
        match &cluster.external {
            None => Self::local(application, lan, cluster.dispatch, perfs, options),
            Some(link) => Self::external(application, lan, link, cluster.dispatch, perfs, options),
        }
    }

    /// The model of `cluster` with all its workers as `input` has them: what (173) and (177)
    /// judge a cluster's demands by. `None` for a cluster without workers.
    pub fn with_all_workers(input: &ModelInput, cluster: &ClusterParams) -> Option<Self> {
        let all: Vec<usize> = (0..cluster.workers.len()).collect();
        let perfs = cluster.perfs_of(&all, &input.application, &input.options.terms);
        Self::new(
            &input.application,
            cluster,
            &perfs,
            input.options.cluster_options(),
        )
    }

    /// (125)-(128): the master's and CM's limits into `limits` (when `terms.master_cpu`),
    /// and the closed network's steady performance when `contention = "mva"` needs it.
    fn contention(
        application: &ApplicationParams,
        lan: (f64, f64),
        dispatch: DispatchCosts,
        perfs: &[f64],
        options: ClusterOptions,
        limits: &mut PerformanceLimits,
    ) -> Option<f64> {
        let dispatch = Self::counted(dispatch, options);
        limits.master = dispatch_limit(application.oper, dispatch.master_s);
        limits.cm = dispatch_limit(application.oper, dispatch.cm_s);
        (options.terms.contention == Contention::Mva)
            .then(|| Self::network_of(application, lan, dispatch, perfs, options, limits))?
    }

    /// The master's and CM's CPU per task as the terms count them: none without (125).
    fn counted(dispatch: DispatchCosts, options: ClusterOptions) -> DispatchCosts {
        if options.terms.master_cpu {
            dispatch
        } else {
            DispatchCosts::default()
        }
    }

    /// (126)-(128) for these workers; `lan`: the LAN's bytes per second and (175) `scv_lan`.
    fn network_of(
        application: &ApplicationParams,
        (lan_bytes_per_s, lan_scv): (f64, f64),
        dispatch: DispatchCosts,
        perfs: &[f64],
        options: ClusterOptions,
        limits: &PerformanceLimits,
    ) -> Option<f64> {
        ClusterNetwork {
            oper: application.oper,
            oper_cv: application.oper_cv,
            comm_bytes: application.comm_bytes(),
            lan_bytes_per_s,
            lan_scv,
            perfs,
            worker_buffers: options.worker_buffers,
            dispatch,
        }
        .performance(limits)
    }

    /// The model with its network's rate computed for showing beside the bottleneck's
    /// (`terms.network`), when `contention = "bottleneck"` did not need it; the same model
    /// otherwise.
    pub fn with_network(
        mut self,
        application: &ApplicationParams,
        cluster: &ClusterParams,
        perfs: &[f64],
        options: impl Into<ClusterOptions>,
    ) -> Self {
        let options = options.into();
        if self.network.is_none() && options.terms.network {
            self.network = Self::network_of(
                application,
                lan_of(cluster),
                Self::counted(cluster.dispatch, options),
                perfs,
                options,
                &self.limits,
            );
        }
        self
    }

    /// The main cluster: equations (11), (12), (26), (37), (39)/(43) — (39) with the workers'
    /// buffers (99) —, (44). The LAN is given as its bytes per second and the spread of its
    /// time per task, `scv_lan` (175).
    pub fn local(
        application: &ApplicationParams,
        (lan_bytes_per_s, lan_scv): (f64, f64),
        dispatch: DispatchCosts,
        perfs: &[f64],
        end: ClusterOptions,
    ) -> Option<Self> {
        if perfs.is_empty() {
            return None;
        }
        let workers = perfs.len();
        let oper = application.oper;
        let cperf = cluster_performance(perfs);
        let mut limits = PerformanceLimits {
            compute: cperf,
            lan: local::lan_performance_limit(oper, application.comm_bytes(), lan_bytes_per_s),
            master: f64::INFINITY,
            cm: f64::INFINITY,
            wan_in: f64::INFINITY,
            wan_out: f64::INFINITY,
        };
        let main_dispatch = DispatchCosts {
            cm_s: 0.0,
            ..dispatch
        };
        let network = Self::contention(
            application,
            (lan_bytes_per_s, lan_scv),
            main_dispatch,
            perfs,
            end,
            &mut limits,
        );
        let tc_task = local::task_transfer_time(application.task_bytes, lan_bytes_per_s);
        let t_up = local::startup_time(tc_task, workers);
        let t_end_best = local::best_end_time(application.result_bytes, lan_bytes_per_s, workers);
        let computation_bound_end = if end.reassign_last_task {
            local::worst_end_time_computation_bound_reassigned(
                oper,
                perfs,
                application.result_bytes,
                lan_bytes_per_s,
            )
        } else {
            local::worst_end_time_computation_bound(
                oper,
                perfs,
                end.end_buffers(),
                application.result_bytes,
                lan_bytes_per_s,
            )
        };
        let communication_bound_end = local::worst_end_time_communication_bound(
            application.result_bytes,
            lan_bytes_per_s,
            workers,
        );
        Some(Self::assemble(
            workers,
            cperf,
            (limits, network),
            t_up,
            t_end_best,
            computation_bound_end,
            communication_bound_end,
            1,
        ))
    }

    /// An external cluster: equations (15)-(21), (32)/(36), (47 corrected)-(56), with the
    /// WAN's round trip (96)(97) and what its links lose to their ramp (171)(172), each when
    /// `options.terms` count it. With `submaster_tail` its worst end is the form without
    /// reassignment, (49)/(54), whatever `reassign_last_task` says: a sub-master hands out no
    /// tail copies (it cannot know its master has no task left for it), so its slowest
    /// worker's last task is waited for as (49) assumes, with the workers' buffers (99);
    /// without it, (50)/(55) with reassignment, as the thesis has it. The LAN as for
    /// [`ClusterModel::local`].
    pub fn external(
        application: &ApplicationParams,
        (lan_bytes_per_s, lan_scv): (f64, f64),
        link: &ExternalLink,
        dispatch: DispatchCosts,
        perfs: &[f64],
        options: ClusterOptions,
    ) -> Option<Self> {
        let terms = options.terms;
        if perfs.is_empty() {
            return None;
        }
        let workers = perfs.len();
        let oper = application.oper;
        let nt = link.tasks_per_inter_task;
        let nr = link.results_per_inter_result;
        let inter_task_bytes = application.inter_task_bytes(nt);
        let inter_result_bytes = application.inter_result_bytes(nr);
        let cperf = cluster_performance(perfs);
        let mut limits = external::performance_limits(&ExternalLimitsInput {
            cluster_performance: cperf,
            oper,
            comm_bytes: application.comm_bytes(),
            inter_task_bytes,
            inter_result_bytes,
            lan_bytes_per_s,
            wan_in_bytes_per_s: link.wan_in_bytes_per_s,
            wan_out_bytes_per_s: link.wan_out_bytes_per_s,
            tasks_per_inter_task: nt,
            results_per_inter_result: nr,
        });
        let tc_task_msm =
            external::inter_task_transfer_time(inter_task_bytes, link.wan_in_bytes_per_s);
        let tc_task_sc =
            external::sub_cluster_transfer_time(application.task_bytes, lan_bytes_per_s);
        let rtt = if terms.wan_latency {
            link.wan_rtt_s
        } else {
            0.0
        };
        let (ramp_in, ramp_out) = if terms.link_ramp {
            (link.wan_in_ramp_s, link.wan_out_ramp_s)
        } else {
            (0.0, 0.0)
        };
        let network = Self::contention(
            application,
            (lan_bytes_per_s, lan_scv),
            dispatch,
            perfs,
            options,
            &mut limits,
        );
        // The share of the WAN in the steady state draws: its inter-cluster tasks per second.
        let steady = network.unwrap_or_else(|| limits.steady_performance());
        let tasks_need = steady * inter_task_bytes / (oper * nt.max(1) as f64);
        let t_up = external::startup_time_with_ramp(
            external::startup_time_with_latency(
                external::startup_time(workers, nt, tc_task_msm, tc_task_sc),
                rtt,
            ),
            external::link_share(tasks_need, link.wan_in_bytes_per_s),
            ramp_in,
        );
        let results_bound = limits.bottleneck() == Bottleneck::WanOut;
        let ramp_end = |end: f64| external::end_time_with_ramp(end, results_bound, ramp_out);
        let tc_result_sc =
            external::sub_cluster_transfer_time(application.result_bytes, lan_bytes_per_s);
        let tc_result_smm =
            external::inter_result_transfer_time(inter_result_bytes, link.wan_out_bytes_per_s);
        let t_end_best = ramp_end(external::end_time_with_latency(
            external::best_end_time(tc_result_sc, tc_result_smm, workers, nr),
            rtt,
        ));
        let computation_bound_end = if options.reassign_last_task && !terms.submaster_tail {
            external::worst_end_time_computation_bound_reassigned(
                oper,
                perfs,
                tc_result_sc,
                tc_result_smm,
            )
        } else {
            external::worst_end_time_computation_bound(
                oper,
                perfs,
                options.end_buffers(),
                tc_result_sc,
                tc_result_smm,
            )
        };
        let computation_bound_end =
            ramp_end(external::end_time_with_latency(computation_bound_end, rtt));
        let communication_bound_end = ramp_end(external::end_time_with_latency(
            external::worst_end_time_communication_bound(tc_result_sc, tc_result_smm, workers, nr),
            rtt,
        ));
        Some(Self::assemble(
            workers,
            cperf,
            (limits, network),
            t_up,
            t_end_best,
            computation_bound_end,
            communication_bound_end,
            nt,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        workers: usize,
        cperf: f64,
        (limits, network): (PerformanceLimits, Option<f64>),
        t_up: f64,
        t_end_best: f64,
        computation_bound_end: f64,
        communication_bound_end: f64,
        task_unit: u64,
    ) -> Self {
        let bottleneck = limits.bottleneck();
        let t_end_worst = if bottleneck == Bottleneck::Compute {
            computation_bound_end
        } else {
            computation_bound_end.max(communication_bound_end)
        };
        ClusterModel {
            workers,
            cperf,
            limits,
            network,
            perf_ste: network.unwrap_or_else(|| limits.steady_performance()),
            bottleneck,
            t_up,
            t_end_best,
            t_end_worst,
            task_unit,
        }
    }

    /// Section 2: whether the cluster is computation bound, `perf_ste == cperf` in (26)/(32)/(36).
    pub fn is_computation_bound(&self) -> bool {
        self.bottleneck == Bottleneck::Compute
    }

    /// The end time of `case`: best (37)/(52)(53) or worst (39)-(56), section 2.
    pub fn end_time(&self, case: Case) -> f64 {
        match case {
            Case::Best => self.t_end_best,
            Case::Worst => self.t_end_worst,
        }
    }

    /// Equation (5) with the steady time (31) (equal to (25) for the main cluster):
    /// `T_up + workload / perf_ste + T_end`; zero for no workload (the cluster is idle).
    pub fn execution_time(&self, workload: f64, case: Case) -> f64 {
        if workload <= 0.0 {
            return 0.0;
        }
        execution_time(self.t_up, workload / self.perf_ste, self.end_time(case))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::WorkerParams;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
    }

    fn srmsd() -> ApplicationParams {
        ApplicationParams {
            tasks: 500,
            oper: 1.0,
            task_bytes: 4.0,
            result_bytes: 2_310_244.0,
            task_bytes_inter: None,
            result_bytes_inter: None,
            oper_cv: 0.0,
        }
    }

    fn spain(perfs: &[f64]) -> ClusterParams {
        ClusterParams {
            name: "spain".into(),
            lan_bytes_per_s: 9_599_164.0,
            workers: perfs
                .iter()
                .enumerate()
                .map(|(i, &perf)| WorkerParams {
                    host: format!("w{i}"),
                    perf,
                    own_comm_bytes_per_s: None,
                })
                .collect(),
            external: Some(ExternalLink::new(21_802.0, 21_206.0)),
            dispatch: Default::default(),
            lan_scv: None,
        }
    }

    const SPAIN_ALL: [f64; 8] = [
        4.6354e-3, 1.8681e-3, 1.4706e-3, 1.5286e-3, 2.0293e-3, 6.1301e-3, 2.0507e-3, 1.9997e-3,
    ];

    #[test]
    fn no_workers_no_model() {
        assert!(ClusterModel::new(&srmsd(), &spain(&[]), &[], true).is_none());
    }

    #[test]
    fn computation_bound_cluster_uses_the_computation_bound_worst_end() {
        let perfs = [4.6354e-3, 2.0293e-3, 2.0507e-3];
        let model = ClusterModel::new(&srmsd(), &spain(&perfs), &perfs, true).unwrap();
        assert!(model.is_computation_bound());
        assert!(close(model.t_up, 3.673_555_159_074_89e-4));
        assert!(close(model.t_end_best, 218.126_552_729_465_94));
        // (49) with reassignment too: a sub-master makes no tail copies ((50) would give
        // 435.99 s)
        assert!(close(model.t_end_worst, 437.704_119_945_004_3));
        let no_reassign = ClusterModel::new(&srmsd(), &spain(&perfs), &perfs, false).unwrap();
        assert!(close(no_reassign.t_end_worst, 437.704_119_945_004_3));
        // (96)(97): a 0.2 s round trip adds 0.2 s before and 0.1 s after
        let mut far = spain(&perfs);
        far.external.as_mut().unwrap().wan_rtt_s = 0.2;
        let late = ClusterModel::new(&srmsd(), &far, &perfs, true).unwrap();
        assert!(close(late.t_up, model.t_up + 0.2));
        assert!(close(late.t_end_best, model.t_end_best + 0.1));
        assert!(close(late.t_end_worst, model.t_end_worst + 0.1));
    }

    #[test]
    fn the_thesis_form_leaves_out_every_term_beyond_the_thesis() {
        use crate::params::{ClusterOptions, ModelForm, ModelTerms};
        let perfs = [4.6354e-3, 2.0293e-3, 2.0507e-3];
        let mut far = spain(&perfs);
        let link = far.external.as_mut().unwrap();
        (link.wan_rtt_s, link.wan_in_ramp_s, link.wan_out_ramp_s) = (0.2, 0.3, 0.4);
        let thesis = |reassign_last_task| ClusterOptions {
            reassign_last_task,
            worker_buffers: 2,
            terms: ModelTerms::of(ModelForm::Thesis),
        };
        let model = ClusterModel::new(&srmsd(), &far, &perfs, thesis(true)).unwrap();
        // no round trip (96)(97), no ramp (171)(172); (50) with reassignment, as the thesis
        assert!(close(model.t_up, 3.673_555_159_074_89e-4));
        assert!(close(model.t_end_best, 218.126_552_729_465_94));
        let reassigned = external::worst_end_time_computation_bound_reassigned(
            1.0,
            &perfs,
            2_310_244.0 / 9_599_164.0,
            2_310_244.0 / 21_206.0,
        );
        assert!(close(model.t_end_worst, reassigned));
        assert!(
            (model.t_end_worst - 435.99).abs() < 0.01,
            "{}",
            model.t_end_worst
        );
        // without reassignment (49) with one buffer: the buffers (99) are off too
        let one_buffer = ClusterModel::new(&srmsd(), &spain(&perfs), &perfs, false).unwrap();
        let model = ClusterModel::new(&srmsd(), &far, &perfs, thesis(false)).unwrap();
        assert!(close(model.t_end_worst, one_buffer.t_end_worst));
    }

    #[test]
    fn communication_bound_cluster_uses_the_larger_worst_end() {
        let model = ClusterModel::new(&srmsd(), &spain(&SPAIN_ALL), &SPAIN_ALL, true).unwrap();
        assert_eq!(model.bottleneck, Bottleneck::WanOut);
        assert!(close(model.perf_ste, 9.179_117_011_017_018e-3));
        // (51): 0.2407 + 8 * 108.94 = 871.78 s, larger than the computation-bound (50)
        assert!(close(model.t_end_worst, 871.784_196_792_467));
        assert!(close(model.t_end_best, 490.483_904_422_383_03));
    }

    #[test]
    fn execution_time_is_startup_steady_end_eq5_eq31() {
        let perfs = [4.6354e-3, 2.0293e-3, 2.0507e-3];
        let model = ClusterModel::new(&srmsd(), &spain(&perfs), &perfs, true).unwrap();
        let expected = model.t_up + 330.0 / model.cperf + model.t_end_worst;
        assert!(close(model.execution_time(330.0, Case::Worst), expected));
        assert_eq!(model.execution_time(0.0, Case::Worst), 0.0);
    }

    #[test]
    fn local_model_matches_local_equations() {
        let perfs = [0.7909e-3, 0.7951e-3];
        let main = ClusterParams {
            name: "argentina".into(),
            lan_bytes_per_s: 1_068_674.0,
            workers: vec![],
            external: None,
            dispatch: Default::default(),
            lan_scv: None,
        };
        let model = ClusterModel::new(&srmsd(), &main, &perfs, false).unwrap();
        assert!(model.is_computation_bound());
        assert!(close(model.t_up, 5.614_434_336_383_219e-6));
        assert!(close(model.t_end_best, 3.242_678_309_755_828_3));
        assert!(close(model.t_end_worst, 634.352_960_151_039_6));
        assert_eq!(model.task_unit, 1);
        assert!(model.limits.wan_in.is_infinite() && model.limits.wan_out.is_infinite());
    }
}
