//! (177)-(178): the main cluster's path, shared by every cluster.
//!
//! Every task of the run passes the main master, and every task of an external cluster also
//! a CM of the main cluster, the end of that cluster's link (or of the link of the subtree it
//! hangs in). Each cluster's own limits (125) count its own master and CM only: sixty-three
//! links that each ask a little of the main cluster's CMs ask it together, and while a link
//! waits its CM still spends CPU. These terms say what the clusters ask of the main master
//! and of the main cluster's CMs, and, where that is more than a core, give each cluster the
//! share it gets, as a limit of its own (its master's or CM's CPU).

use std::borrow::Cow;

use serde::Serialize;

use crate::{
    cluster::ClusterModel,
    params::{DispatchCosts, ExternalLink, ModelInput},
};

/// The main cluster's CMs would fill a core idling (178): no cluster can be served.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "the main cluster's CMs would spend {idle:.2} of a core idling for its {links} links \
     (cm_idle_cpu_per_link): give the links one process ([cluster.launch] \
     links_in_one_process) or hang clusters from others (parent)"
)]
pub struct IdleCmsFillACore {
    /// `L`: links ending at the main cluster.
    pub links: usize,
    /// `L u_idle`, shares of a core.
    pub idle: f64,
}

/// Messages of the main master and its CMs per task of an external cluster, each way
/// counted half (177): `(1/nt + 1/nr) / 2`; 1 for the main cluster's own tasks.
pub fn messages_per_task(link: Option<&ExternalLink>) -> f64 {
    link.map_or(1.0, |l| {
        (1.0 / l.tasks_per_inter_task as f64 + 1.0 / l.results_per_inter_result as f64) / 2.0
    })
}

/// What the clusters ask of the main cluster's path at their steady performance with all
/// their workers (177), each as a share of a core.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MainPathLoad {
    /// `L`: links ending at the main cluster.
    pub links: usize,
    /// `U_m = c_m * sum_c X_c m_c`: the main master.
    pub master: f64,
    /// `L * u_idle`: the main cluster's CMs while no task crosses their links.
    pub cms_idle: f64,
    /// `U_cm = L u_idle + c_hub * sum_(c external) X_c m_c`: the main cluster's CMs.
    pub cms: f64,
    /// `f_m` (178): the share of what it is asked the main master gives, at most 1.
    pub master_share: f64,
    /// `f_cm` (178): the same for the main cluster's CMs.
    pub cms_share: f64,
}

impl MainPathLoad {
    /// `1 / u_idle`: the links at which the main cluster's CMs fill a core idling; `None`
    /// when their idle cost is not known.
    pub fn links_to_fill_a_core(&self) -> Option<f64> {
        (self.cms_idle > 0.0).then(|| self.links as f64 / self.cms_idle)
    }
}

/// The load of the main cluster's path (177) and the shares (178), on `input`'s links as
/// given; `None` when the term is off (or (125), through which it acts) or nothing of its
/// cost is known (no main master's CPU per task, no CM costs on the main cluster).
///
/// `X_c = perf_ste_c / oper` is cluster `c`'s tasks a second with all its workers, `m_c`
/// [`messages_per_task`], `c_m` the main master's CPU per task (`master_cpu_per_task_s`),
/// `c_hub` the main cluster's CMs' per task of an external cluster (`cm_cpu_per_task_s` on
/// the main cluster) and `u_idle` their share of a core per idle link
/// (`cm_idle_cpu_per_link`).
pub fn main_path_load(input: &ModelInput) -> Option<MainPathLoad> {
    load_and_rates(input).map(|(load, _)| load)
}

/// [`main_path_load`], and the clusters' standalone tasks a second it was judged on.
fn load_and_rates(input: &ModelInput) -> Option<(MainPathLoad, Vec<f64>)> {
    let clusters = &input.system.clusters;
    let main = clusters.first()?.dispatch;
    let known = main.master_s > 0.0 || main.cm_s > 0.0 || main.cm_idle_per_link > 0.0;
    let terms = input.options.terms;
    if !(terms.main_path && terms.master_cpu && known) {
        return None;
    }
    let tasks_per_s = standalone_tasks_per_s(input);
    let asked = |external: bool| -> f64 {
        clusters
            .iter()
            .zip(&tasks_per_s)
            .filter(|(c, _)| !external || c.external.is_some())
            .map(|(c, x)| x * messages_per_task(c.external.as_ref()))
            .sum()
    };
    let links = links_at_main(input);
    let master = main.master_s * asked(false);
    let cms_idle = cms_busy(&main, links, 0.0);
    let cms = cms_busy(&main, links, asked(true));
    let load = MainPathLoad {
        links,
        master,
        cms_idle,
        cms,
        master_share: share(master, 0.0),
        cms_share: share(cms, cms_idle),
    };
    Some((load, tasks_per_s))
}

/// `L`: the links ending at the main cluster (its children's; a tree's deeper links end at
/// sub-masters).
pub fn links_at_main(input: &ModelInput) -> usize {
    input
        .system
        .clusters
        .iter()
        .filter(|c| c.external.as_ref().is_some_and(|l| l.parent.is_none()))
        .count()
}

/// `U_cm = L u_idle + c_hub * relayed` (177): the share of a core the main cluster's CMs
/// spend for `links` links while relaying `relayed` messages' worth of tasks a second
/// (`sum X_c m_c` over the external clusters), with `main` the main cluster's costs.
pub fn cms_busy(main: &DispatchCosts, links: usize, relayed: f64) -> f64 {
    links as f64 * main.cm_idle_per_link + main.cm_s * relayed
}

/// (178) The share of what it is asked a server of one core gives: `min(1, (1 - idle) /
/// (load - idle))`, 0 when idling fills the core. Derivation: the main master hands out
/// tasks as they are asked for and its CMs relay them as they come, so a saturated one serves
/// each cluster in proportion to what it asks, as an oversubscribed link does (174).
fn share(load: f64, idle: f64) -> f64 {
    if idle >= 1.0 {
        0.0
    } else if load <= 1.0 {
        1.0
    } else {
        (1.0 - idle) / (load - idle)
    }
}

/// Each cluster's tasks a second at its steady performance with all its workers (0 without
/// workers).
fn standalone_tasks_per_s(input: &ModelInput) -> Vec<f64> {
    input
        .system
        .clusters
        .iter()
        .map(|c| {
            ClusterModel::with_all_workers(input, c)
                .map_or(0.0, |m| m.perf_ste / input.application.oper)
        })
        .collect()
}

/// `input` with each cluster limited to its share of the main cluster's path (178) where it
/// is asked more than a core: the main cluster's master's CPU per task (125) raised so that
/// its limit is `f_m perf_ste`, an external cluster's CM's so that its limit is `min(f_m,
/// f_cm) perf_ste`. `input` itself when no share is below 1. With it, the load (177), `None`
/// as [`main_path_load`] gives it. Fails when the main cluster's CMs fill a core idling.
pub fn with_main_path(
    input: &ModelInput,
) -> Result<(Cow<'_, ModelInput>, Option<MainPathLoad>), IdleCmsFillACore> {
    let Some((load, tasks_per_s)) = load_and_rates(input) else {
        return Ok((Cow::Borrowed(input), None));
    };
    if load.cms_share == 0.0 {
        return Err(IdleCmsFillACore {
            links: load.links,
            idle: load.cms_idle,
        });
    }
    if load.master_share == 1.0 && load.cms_share == 1.0 {
        return Ok((Cow::Borrowed(input), Some(load)));
    }
    let mut shared = input.clone();
    for (cluster, x) in shared.system.clusters.iter_mut().zip(tasks_per_s) {
        if x <= 0.0 {
            continue;
        }
        let (cost, f) = match cluster.external {
            None => (&mut cluster.dispatch.master_s, load.master_share),
            Some(_) => (
                &mut cluster.dispatch.cm_s,
                load.master_share.min(load.cms_share),
            ),
        };
        if f < 1.0 {
            // Its limit oper / cost (125) becomes f * perf_ste = f * oper * x.
            *cost = cost.max(1.0 / (f * x));
        }
    }
    Ok((Cow::Owned(shared), Some(load)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::params::{
        ApplicationParams, ClusterParams, ModelOptions, SelectionRequest, SystemParams,
        WorkerParams,
    };

    /// A main cluster of one worker of `perf` tasks/s and `externals` external clusters of
    /// one such worker each, every link fast; tasks of one operation and 100 bytes.
    pub(crate) fn federation(perf: f64, externals: usize, main: DispatchCosts) -> ModelInput {
        let cluster = |name: String, external: Option<ExternalLink>| ClusterParams {
            name: name.clone(),
            lan_bytes_per_s: 1e12,
            workers: vec![WorkerParams {
                host: format!("{name}-1"),
                perf,
                own_comm_bytes_per_s: None,
            }],
            external,
            dispatch: DispatchCosts::default(),
            lan_scv: None,
        };
        let link = ExternalLink::new(1e12, 1e12);
        let mut clusters = vec![cluster("main".into(), None)];
        clusters[0].dispatch = main;
        clusters.extend((1..=externals).map(|k| cluster(format!("c{k}"), Some(link.clone()))));
        ModelInput {
            application: ApplicationParams {
                tasks: 1_000_000,
                oper: 1.0,
                task_bytes: 100.0,
                result_bytes: 100.0,
                task_bytes_inter: None,
                result_bytes_inter: None,
                oper_cv: 0.0,
            },
            grains: vec![],
            system: SystemParams { clusters },
            options: ModelOptions {
                efficiency_threshold: 0.8,
                reassign_last_task: true,
                exhaustive_limit: 65_536,
                selection_budget_s: 5.0,
                worker_buffers: 1,
                terms: Default::default(),
            },
            selection: SelectionRequest::All,
        }
    }

    fn steady(input: &ModelInput) -> Vec<f64> {
        let (input, _) = with_main_path(input).unwrap();
        input
            .system
            .clusters
            .iter()
            .map(|c| ClusterModel::with_all_workers(&input, c).unwrap().perf_ste)
            .collect()
    }

    #[test]
    fn a_path_under_a_core_changes_nothing() {
        let main = DispatchCosts {
            master_s: 1e-4,
            cm_s: 1e-4,
            cm_idle_per_link: 0.01,
        };
        // four clusters of 100 tasks/s: the master 0.04, the CMs 0.03 + 0.03 of a core
        let input = federation(100.0, 3, main);
        let load = main_path_load(&input).unwrap();
        assert!((load.master - 0.04).abs() < 1e-12, "{load:?}");
        assert!((load.cms - 0.06).abs() < 1e-12, "{load:?}");
        assert_eq!((load.master_share, load.cms_share), (1.0, 1.0));
        assert!(matches!(
            with_main_path(&input),
            Ok((Cow::Borrowed(_), Some(_)))
        ));
        assert_eq!(steady(&input), vec![100.0; 4]);
    }

    #[test]
    fn saturated_cms_share_a_core_in_proportion_to_what_each_asks() {
        // three external clusters of 100 tasks/s, the CMs 5 ms a task and 0.1 of a core
        // idle a link: asked 0.3 + 1.5 = 1.8 cores, the share (1 - 0.3) / 1.5
        let main = DispatchCosts {
            master_s: 0.0,
            cm_s: 5e-3,
            cm_idle_per_link: 0.1,
        };
        let input = federation(100.0, 3, main);
        let load = main_path_load(&input).unwrap();
        let f = 0.7 / 1.5;
        assert!((load.cms_share - f).abs() < 1e-12, "{load:?}");
        assert!((load.links_to_fill_a_core().unwrap() - 10.0).abs() < 1e-9);
        let rates = steady(&input);
        assert_eq!(rates[0], 100.0, "the main cluster's tasks cross no CM");
        for rate in &rates[1..] {
            assert!((rate - 100.0 * f).abs() < 1e-9, "{rates:?}");
        }
        // what they are then given fills the core exactly
        let busy = 0.3 + 5e-3 * rates[1..].iter().sum::<f64>();
        assert!((busy - 1.0).abs() < 1e-9, "{busy}");
    }

    #[test]
    fn a_saturated_master_limits_every_cluster_the_main_one_too() {
        // four clusters of 100 tasks/s at 5 ms a task: 2 cores asked, each gets half
        let main = DispatchCosts {
            master_s: 5e-3,
            ..DispatchCosts::default()
        };
        let rates = steady(&federation(100.0, 3, main));
        for rate in &rates {
            assert!((rate - 50.0).abs() < 1e-9, "{rates:?}");
        }
    }

    #[test]
    fn joined_messages_ask_less_of_the_path() {
        let mut link = federation(1.0, 1, DispatchCosts::default()).system.clusters[1]
            .external
            .clone()
            .unwrap();
        link.tasks_per_inter_task = 4;
        link.results_per_inter_result = 2;
        assert_eq!(messages_per_task(Some(&link)), (0.25 + 0.5) / 2.0);
        assert_eq!(messages_per_task(None), 1.0);
    }

    #[test]
    fn cms_that_fill_a_core_idling_are_an_error_naming_the_key() {
        let main = DispatchCosts {
            cm_idle_per_link: 0.5,
            ..DispatchCosts::default()
        };
        let err = with_main_path(&federation(1.0, 2, main))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cm_idle_cpu_per_link"), "{err}");
    }

    #[test]
    fn the_term_switched_off_or_unknown_counts_nothing() {
        let main = DispatchCosts {
            master_s: 5e-3,
            ..DispatchCosts::default()
        };
        let mut input = federation(100.0, 3, main);
        input.options.terms.main_path = false;
        assert_eq!(main_path_load(&input), None);
        assert_eq!(steady(&input), vec![100.0; 4]);
        assert_eq!(
            main_path_load(&federation(100.0, 3, DispatchCosts::default())),
            None
        );
    }
}
