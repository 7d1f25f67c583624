//! (173)-(174): a link of a tree carries its whole subtree's traffic.
//!
//! An external cluster's `wan_in` and `wan_out` are the rates of its own link, to its parent
//! (32)(36). In a tree the parent is a sub-master, and the parent's link up carries the
//! parent's tasks and results and those of every cluster below it: a regional link shared by
//! eight clusters that each draw a fifth of it is oversubscribed, which no cluster's own
//! limits show. These terms give each cluster the share of every link on its path up to the
//! master that it gets when the link is oversubscribed, as an effective rate of its own link,
//! so that selection, balance, advice and the states read it as they read a WAN.

use std::borrow::Cow;

use crate::{
    cluster::ClusterModel,
    params::{ExternalLink, ModelInput},
};

/// The bytes a second each cluster would draw on its own link, tasks in and results out, at
/// its steady performance with all its workers and the links as given: `(in, out)`, `(0, 0)`
/// for the main cluster and for a cluster without workers. (173)
///
/// `d_in = tput_in * perf_ste / lim_in`, `d_out = tput_out * perf_ste / lim_out`, with
/// `lim_in = oper nt tput_in / s_task_inter` and `lim_out` the WAN limits (32)(36): the
/// fraction of its own link its steady rate uses, in bytes.
pub fn standalone_demands(input: &ModelInput) -> Vec<(f64, f64)> {
    input
        .system
        .clusters
        .iter()
        .map(|cluster| {
            let Some(link) = &cluster.external else {
                return (0.0, 0.0);
            };
            match ClusterModel::with_all_workers(input, cluster) {
                Some(model) => (
                    link.wan_in_bytes_per_s * model.perf_ste / model.limits.wan_in,
                    link.wan_out_bytes_per_s * model.perf_ste / model.limits.wan_out,
                ),
                None => (0.0, 0.0),
            }
        })
        .collect()
}

/// The clusters on the path from cluster `c` up to the main cluster, `c` first, the main
/// cluster left out: the links `c`'s traffic crosses, each named by the cluster at its lower
/// end. A parent index out of range, or a cycle, ends the path.
fn path_up(parents: &[Option<usize>], c: usize) -> Vec<usize> {
    let mut path = Vec::new();
    let mut at = Some(c);
    while let Some(k) = at {
        if k == 0 || k >= parents.len() || path.contains(&k) {
            break;
        }
        path.push(k);
        at = parents[k];
    }
    path
}

/// `D_a` for every link `a` (named by the cluster at its lower end): the demands of the
/// clusters whose path crosses it, its own among them (174).
fn subtree_loads(parents: &[Option<usize>], demands: &[f64]) -> Vec<f64> {
    let mut load = vec![0.0; parents.len()];
    for (c, demand) in demands.iter().enumerate() {
        for a in path_up(parents, c) {
            load[a] += demand;
        }
    }
    load
}

/// What the clusters of its subtree ask of a cluster's link to its parent, each way, against
/// its rate: `D_a` (174) and `cap_a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkLoad {
    /// The cluster at the link's lower end, an index into the system's clusters.
    pub cluster: usize,
    /// Bytes a second of tasks asked, `D_a` in.
    pub asked_in: f64,
    /// The link's rate of tasks, `tput_in`.
    pub rate_in: f64,
    /// Bytes a second of results asked, `D_a` out.
    pub asked_out: f64,
    /// The link's rate of results, `tput_out`.
    pub rate_out: f64,
}

impl LinkLoad {
    /// The larger of what is asked over the rate, the two ways: above 1, oversubscribed.
    pub fn load(&self) -> f64 {
        (self.asked_in / self.rate_in).max(self.asked_out / self.rate_out)
    }
}

/// The load of every external cluster's link (173)(174), in the system's order.
pub fn link_loads(input: &ModelInput) -> Vec<LinkLoad> {
    let clusters = &input.system.clusters;
    let parents = parents_of(input);
    let (d_in, d_out): (Vec<f64>, Vec<f64>) = standalone_demands(input).into_iter().unzip();
    let (load_in, load_out) = (
        subtree_loads(&parents, &d_in),
        subtree_loads(&parents, &d_out),
    );
    clusters
        .iter()
        .enumerate()
        .filter_map(|(c, cluster)| {
            let link = cluster.external.as_ref()?;
            Some(LinkLoad {
                cluster: c,
                asked_in: load_in[c],
                rate_in: link.wan_in_bytes_per_s,
                asked_out: load_out[c],
                rate_out: link.wan_out_bytes_per_s,
            })
        })
        .collect()
}

/// Each cluster's parent (`None`: the main cluster, or the main cluster itself).
fn parents_of(input: &ModelInput) -> Vec<Option<usize>> {
    input
        .system
        .clusters
        .iter()
        .map(|c| c.external.as_ref().and_then(|l| l.parent))
        .collect()
}

/// `f_c`, the share of its demand each cluster gets from the links of its path (174):
/// `f_c = min(1, min over links a on c's path of cap_a / D_a)`, with `D_a` the demands (173)
/// of the clusters whose path crosses `a` (a's subtree, `a` among them) and `cap_a` its rate.
/// `parents[c]` is `c`'s parent (`None`: the main cluster), `caps[c]` its own link's rate,
/// `demands[c]` its demand on it, one direction.
///
/// Derivation: a sub-master hands out on demand what crosses its link, so an oversubscribed
/// link serves each cluster below it in proportion to what it asks, `cap_a * d_c / D_a`: the
/// fraction `cap_a / D_a` of its demand. A cluster behind several oversubscribed links gets the
/// least of their fractions. Each link is judged on the clusters' standalone demands, not on
/// what the links above leave them: where two links of one path are both oversubscribed, the
/// lower one's fraction is counted against a demand the upper one already cut, so its share
/// is pessimistic.
pub fn link_shares(parents: &[Option<usize>], caps: &[f64], demands: &[f64]) -> Vec<f64> {
    let load = subtree_loads(parents, demands);
    (0..parents.len())
        .map(|c| {
            path_up(parents, c)
                .into_iter()
                .map(|a| {
                    if load[a] > caps[a] {
                        caps[a] / load[a]
                    } else {
                        1.0
                    }
                })
                .fold(1.0, f64::min)
        })
        .collect()
}

/// `input` with each external cluster's link rates replaced by its share of the links above
/// it where one of them is oversubscribed (174): `tput_eff = f * d` for a share `f < 1` of
/// the demand `d` (173), which puts its WAN limit at `f * perf_ste`; the rate as given
/// otherwise. `input` itself when `terms.shared_links` is off or every external cluster hangs
/// from the main cluster.
pub fn with_shared_links(input: &ModelInput) -> Cow<'_, ModelInput> {
    let clusters = &input.system.clusters;
    let parents = parents_of(input);
    if !input.options.terms.shared_links || parents.iter().all(Option::is_none) {
        return Cow::Borrowed(input);
    }
    let (d_in, d_out): (Vec<f64>, Vec<f64>) = standalone_demands(input).into_iter().unzip();
    let caps = |rate: fn(&ExternalLink) -> f64| -> Vec<f64> {
        clusters
            .iter()
            .map(|c| c.external.as_ref().map_or(f64::INFINITY, rate))
            .collect()
    };
    let f_in = link_shares(&parents, &caps(|l| l.wan_in_bytes_per_s), &d_in);
    let f_out = link_shares(&parents, &caps(|l| l.wan_out_bytes_per_s), &d_out);
    let mut shared = input.clone();
    for (c, cluster) in shared.system.clusters.iter_mut().enumerate() {
        if let Some(link) = cluster.external.as_mut() {
            if f_in[c] < 1.0 {
                link.wan_in_bytes_per_s = f_in[c] * d_in[c];
            }
            if f_out[c] < 1.0 {
                link.wan_out_bytes_per_s = f_out[c] * d_out[c];
            }
        }
    }
    Cow::Owned(shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_under_its_rate_takes_nothing_from_anyone() {
        // main, a region under main, two leaves under the region.
        let parents = [None, None, Some(1), Some(1)];
        let caps = [f64::INFINITY, 10.0, 5.0, 5.0];
        let demands = [0.0, 2.0, 3.0, 4.0];
        assert_eq!(link_shares(&parents, &caps, &demands), vec![1.0; 4]);
    }

    #[test]
    fn an_oversubscribed_regional_link_shares_itself_in_proportion() {
        let parents = [None, None, Some(1), Some(1)];
        let caps = [f64::INFINITY, 6.0, 5.0, 5.0];
        let demands = [0.0, 2.0, 4.0, 6.0];
        let f = link_shares(&parents, &caps, &demands);
        // The region's link: 12 asked of 6, half each; the leaves' own links are not full.
        assert_eq!(f, vec![1.0, 0.5, 0.5, 0.5]);
        // What each gets sums to the link's rate.
        let got: f64 = (1..4).map(|c| f[c] * demands[c]).sum();
        assert!((got - 6.0).abs() < 1e-12);
    }

    #[test]
    fn a_cluster_behind_two_full_links_gets_the_least_share() {
        // main <- r1 <- r2 <- leaf
        let parents = [None, None, Some(1), Some(2)];
        let caps = [f64::INFINITY, 4.0, 6.0, 10.0];
        let demands = [0.0, 1.0, 1.0, 7.0];
        let f = link_shares(&parents, &caps, &demands);
        let r1: f64 = 4.0 / 9.0;
        let r2: f64 = 6.0 / 8.0;
        assert_eq!(f, vec![1.0, r1, r1.min(r2), r1.min(r2)]);
    }

    #[test]
    fn a_cycle_or_a_bad_parent_ends_the_path() {
        assert_eq!(path_up(&[None, Some(2), Some(1)], 1), vec![1, 2]);
        assert_eq!(path_up(&[None, Some(9)], 1), vec![1]);
        assert_eq!(path_up(&[None, None], 0), Vec::<usize>::new());
    }
}
