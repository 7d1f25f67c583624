//! The row/column at which a cluster's rate stopped climbing, measured (`docs/model.md`
//! section 7: predicted by equation (80)).
//!
//! While a cluster of the row/column strategy is WAN-in bound, its pairs come back one per
//! pair's crossing time and each brings more work than the one before (`2k - 1` products), so
//! its rate climbs; once computation bound, its rate is its available performance. The rate
//! of pair `k` is the operations of it and its neighbours (the results before and after it,
//! in the order they came: results come in bursts) over the time from the result before them
//! to the last of them (for the first pair, from when it was sent). Only full pairs count (`2k - 1` products: none of their blocks
//! taken by another cluster). The plateau is the upper quartile of those rates; the measured
//! stabilising row/column is the first pair whose rate reaches [`PLATEAU_SHARE`] of it.
//!
//! The row/column at which the rate stops climbing is a property of the steady state, while
//! every cluster computes. Once the clusters of block pairs have returned their last results,
//! a row/column cluster computes alone what it still holds: the end state, where on hosts
//! that share cores (the testbed) it speeds up on the CPU the others left. [`report`] gives
//! the climb over every pair and over the pairs gathered before the last block result.

use std::collections::BTreeMap;

/// A pair's rate counts as on the plateau from this share of it on.
pub const PLATEAU_SHARE: f64 = 0.85;

/// One row/column pair, from when the master sent it to when its result was gathered.
#[derive(Debug, Clone)]
pub struct PairTiming {
    /// The cluster it went to.
    pub cluster: String,
    /// Its rank among that cluster's pairs, from 1.
    pub rank: u64,
    /// The C blocks it brought.
    pub products: usize,
    /// Its basic operations.
    pub operations: f64,
    /// Seconds from the problem's creation to its sending.
    pub sent_s: f64,
    /// ... and to its result's gathering.
    pub done_s: f64,
}

/// One cluster's measured climb.
#[derive(Debug, Clone, PartialEq)]
pub struct Climb {
    /// `(rank, operations per second)` of each full pair, by rank.
    pub rates: Vec<(u64, f64)>,
    /// The upper quartile of the rates.
    pub plateau: f64,
    /// The first pair whose rate reaches [`PLATEAU_SHARE`] of the plateau.
    pub stabilised_at: u64,
}

/// The climb of one cluster's pairs (those of one cluster only); `None` without a full pair.
pub fn climb(pairs: &[PairTiming]) -> Option<Climb> {
    let mut by_done: Vec<&PairTiming> = pairs.iter().collect();
    by_done.sort_by(|a, b| a.done_s.total_cmp(&b.done_s));
    let start = by_done.iter().map(|p| p.sent_s).min_by(f64::total_cmp)?;
    // When each result came, and when the one before it did (the first: since the start).
    let ends: Vec<f64> = by_done.iter().map(|p| p.done_s).collect();
    let before = |i: usize| if i == 0 { start } else { ends[i - 1] };
    let mut rates = Vec::new();
    for (i, pair) in by_done.iter().enumerate() {
        if pair.products as u64 != 2 * pair.rank - 1 {
            continue;
        }
        // Over the pair and its neighbours: results come in bursts.
        let (first, last) = (i.saturating_sub(1), (i + 1).min(by_done.len() - 1));
        let operations: f64 = by_done[first..=last].iter().map(|p| p.operations).sum();
        let interval = ends[last] - before(first);
        if interval > 0.0 {
            rates.push((pair.rank, operations / interval));
        }
    }
    rates.sort_by_key(|&(rank, _)| rank);
    let mut sorted: Vec<f64> = rates.iter().map(|&(_, rate)| rate).collect();
    sorted.sort_by(f64::total_cmp);
    let plateau = *sorted.get(sorted.len() * 3 / 4)?;
    let stabilised_at = rates
        .iter()
        .find(|&&(_, rate)| rate >= PLATEAU_SHARE * plateau)
        .map(|&(rank, _)| rank)?;
    Some(Climb {
        rates,
        plateau,
        stabilised_at,
    })
}

/// One line per cluster of the row/column strategy:
/// `row_column cluster=NAME pairs=N full=F stabilised_at=RC plateau_mflops=X
/// steady_pairs=S steady_stabilised_at=RC2 rates_mflops=...`, the `steady_` figures over the
/// pairs gathered by `steady_until_s` (when the last result of a block pair came: the end of
/// the steady state; every pair without one).
pub fn report(pairs: &[PairTiming], steady_until_s: Option<f64>) -> Vec<String> {
    let mut by_cluster: BTreeMap<&str, Vec<PairTiming>> = BTreeMap::new();
    for pair in pairs {
        by_cluster
            .entry(pair.cluster.as_str())
            .or_default()
            .push(pair.clone());
    }
    by_cluster
        .into_iter()
        .map(|(cluster, pairs)| {
            let Some(all) = climb(&pairs) else {
                return format!(
                    "row_column cluster={cluster} pairs={} full=0 stabilised_at=none",
                    pairs.len()
                );
            };
            let steady: Vec<PairTiming> = pairs
                .iter()
                .filter(|p| steady_until_s.is_none_or(|until| p.done_s <= until))
                .cloned()
                .collect();
            let steady_at =
                climb(&steady).map_or("none".to_owned(), |c| c.stabilised_at.to_string());
            let rates = all
                .rates
                .iter()
                .map(|(rank, rate)| format!("{rank}:{:.1}", rate / 1e6))
                .collect::<Vec<_>>()
                .join(",");
            format!(
                "row_column cluster={cluster} pairs={} full={} stabilised_at={} \
                 plateau_mflops={:.1} steady_pairs={} steady_stabilised_at={steady_at} \
                 rates_mflops={rates}",
                pairs.len(),
                all.rates.len(),
                all.stabilised_at,
                all.plateau / 1e6,
                steady.len(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs of a cluster that receives one pair every `crossing` seconds and computes
    /// `perf` operations per second, `work` operations per product.
    fn pipeline(pairs: u64, crossing: f64, perf: f64, work: f64) -> Vec<PairTiming> {
        let mut free_at: f64 = 0.0;
        (1..=pairs)
            .map(|rank| {
                let products = (2 * rank - 1) as usize;
                let arrived = rank as f64 * crossing;
                let operations = products as f64 * work;
                free_at = free_at.max(arrived) + operations / perf;
                PairTiming {
                    cluster: "spain".into(),
                    rank,
                    products,
                    operations,
                    sent_s: 0.0,
                    done_s: free_at,
                }
            })
            .collect()
    }

    #[test]
    fn a_wan_bound_start_climbs_to_the_computation_bound_plateau() {
        // Pair k takes (2k-1) * 1 s to compute and 5.5 s to cross: computation bound from
        // the pair whose computation outlasts a crossing, 2k - 1 >= 5.5, the 4th (within
        // one of it: the first intervals include the computation of the pair itself).
        let pairs = pipeline(12, 5.5, 1e6, 1e6);
        let climb = climb(&pairs).unwrap();
        assert!((climb.plateau - 1e6).abs() < 1e-6 * 1e6, "{climb:?}");
        assert!((3..=5).contains(&climb.stabilised_at), "{climb:?}");
        let first = climb.rates[0].1;
        assert!(first < 0.5 * climb.plateau, "{climb:?}");
    }

    #[test]
    fn pairs_another_cluster_took_blocks_from_do_not_count() {
        let mut pairs = pipeline(4, 0.1, 1e6, 1e6);
        pairs[3].products = 2;
        assert_eq!(climb(&pairs).unwrap().rates.len(), 3);
        assert_eq!(climb(&[]), None);
    }

    #[test]
    fn the_report_names_each_cluster() {
        let lines = report(&pipeline(6, 0.5, 1e6, 1e6), None);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("row_column cluster=spain pairs=6 full=6 stabilised_at="));
        assert!(lines[0].contains(" steady_pairs=6 "), "{}", lines[0]);
    }

    #[test]
    fn the_steady_climb_leaves_out_the_speed_up_after_the_others_ended() {
        // Computation bound from the start (a crossing of 0.1 s against 1 s and more of
        // computing a pair), then, after the 8th pair, the cluster alone computes three times
        // faster on the cores the others left: over every pair the plateau is the end's speed
        // and the climb seems to end at the 9th; before the end, at the first pairs.
        let mut pairs = pipeline(12, 0.1, 1e6, 1e6);
        let until = pairs[7].done_s;
        for k in 8..pairs.len() {
            let before = pairs[k - 1].done_s;
            pairs[k].done_s = before + pairs[k].operations / 3e6;
        }
        let line = &report(&pairs, Some(until))[0];
        let field = |name: &str| {
            line.split(' ')
                .find_map(|f| f.strip_prefix(&format!("{name}=")))
                .unwrap()
                .to_owned()
        };
        assert!(
            field("stabilised_at").parse::<u64>().unwrap() >= 9,
            "{line}"
        );
        assert_eq!(field("steady_pairs"), "8", "{line}");
        assert!(
            field("steady_stabilised_at").parse::<u64>().unwrap() <= 2,
            "{line}"
        );
    }
}
