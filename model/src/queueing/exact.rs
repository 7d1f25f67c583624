//! Exact multi-class MVA over population vectors (`docs/model.md` (113)-(116), Reiser and
//! Lavenberg), with identical classes counted once.
//!
//! A network of classes `c` with populations `N_c` is solved at every population vector
//! `n <= N`, from the empty one up, each from the vectors with one customer fewer. Copies of
//! an identical class have the same mean values whenever they hold as many customers, so a
//! state need only say, for each kind of class, how many copies hold `j` customers for each
//! `j` (a histogram): `C(copies + N, N)` states for the kind where population vectors count
//! `(N + 1)^copies`.

use super::network::{CentreKind, ClosedNetwork, CustomerClass, Method, Solution};

/// Work of an exact solve: every state, each kind of class at each centre. `None` when it
/// does not fit in a `u64`.
pub fn exact_steps(network: &ClosedNetwork) -> Option<u64> {
    let mut states: u64 = 1;
    for class in &network.classes {
        states = states.checked_mul(binomial(
            u64::from(class.copies) + u64::from(class.population),
            u64::from(class.copies),
        )?)?;
    }
    let kinds = network.classes.len().max(1) as u64;
    let centres = network.centres.len() as u64 + 1;
    states.checked_mul(kinds)?.checked_mul(centres)
}

/// `C(n, k)`, `None` beyond a `u64`.
fn binomial(n: u64, k: u64) -> Option<u64> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut count: u64 = 1;
    for i in 1..=k {
        // count * (n - k + i) / i stays whole at each step
        count = count.checked_mul(n - k + i)? / i;
    }
    Some(count)
}

/// The states of one kind of class: how many customers each of its `copies` holds, as a
/// non-increasing list (copies are interchangeable), ranked in the combinatorial number
/// system: `b_i = a_i + (m - 1 - i)` is strictly decreasing, and the rank is
/// `sum_i C(b_i, m - i)`, from 0 to `C(N + m, m) - 1`.
struct Kind {
    copies: usize,
    /// `choose[n][k] = C(n, k)` for `n <= N + m`, `k <= m`.
    choose: Vec<Vec<u64>>,
    states: u64,
}

impl Kind {
    fn new(class: &CustomerClass) -> Self {
        let m = class.copies as usize;
        let top = class.population as usize + m;
        let choose = (0..=top)
            .map(|n| {
                (0..=m)
                    .map(|k| binomial(n as u64, k as u64).unwrap_or(u64::MAX))
                    .collect()
            })
            .collect();
        Kind {
            copies: m,
            choose,
            states: binomial(top as u64, m as u64).unwrap_or(u64::MAX),
        }
    }

    fn rank(&self, levels: &[u32]) -> u64 {
        let m = self.copies;
        levels
            .iter()
            .enumerate()
            .map(|(i, &a)| self.choose[a as usize + m - 1 - i][m - i])
            .sum()
    }

    /// The levels of the state ranked `rank` (greedy: the largest `b_i` that fits).
    fn unrank(&self, mut rank: u64, levels: &mut [u32]) {
        let m = self.copies;
        let mut b = self.choose.len() - 1;
        for (i, level) in levels.iter_mut().enumerate() {
            let k = m - i;
            while self.choose[b][k] > rank {
                b -= 1;
            }
            rank -= self.choose[b][k];
            *level = (b - (m - 1 - i)) as u32;
            b = b.saturating_sub(1);
        }
    }
}

/// The residual-time term of (118) a customer of service `demand_s` with squared variation
/// `scv` adds per unit of throughput: `D^2 (scv - 1) / 2`.
pub(super) fn residual_excess(demand_s: f64, scv: f64) -> f64 {
    demand_s * demand_s * (scv - 1.0) / 2.0
}

/// Exact multi-class MVA of `network` ((113)-(116), with the residual-time term (118) at
/// queues whose service is not exponential). With `Q_k(0) = 0`, for every population state
/// `n` in order of its customers, and each class `c` present in it (a copy of kind `c`
/// holding `j` customers):
///
/// - (113) `R_{c,k}(n) = D_{c,k} (1 + Q_k(n - e_c)) + E_k(n - e_c)` at a queue, `D_{c,k}` at a
///   delay, and at the copy's own queue the same over its own customers;
/// - (114) `X_c(n) = n_c / (Z_c + sum_k R_{c,k}(n))`;
/// - (115) `Q_k(n) = sum_c X_c(n) R_{c,k}(n)`, `E_k(n) = sum_c X_c(n) D_{c,k}^2 (scv - 1)/2`;
/// - (116) copies of a kind holding as many customers share their values: a state says how
///   many customers each copy holds, not which copy, and the sums of (115) count each level
///   once per copy at it.
///
/// The caller checks the network first ([`ClosedNetwork::check`]) and its size
/// ([`exact_steps`]); the states with `t` customers are computed from those with `t - 1`
/// alone, so memory is two such sets of `2 (K + copies)` numbers each.
pub fn exact(network: &ClosedNetwork) -> Solution {
    let kinds: Vec<Kind> = network.classes.iter().map(Kind::new).collect();
    let centres = network.centres.len();
    // per state: Q_k, E_k, then per copy (in the order of its kind's levels) its own queue's
    // Q and E
    let mut offsets = Vec::with_capacity(kinds.len());
    let mut width = 2 * centres;
    for kind in &kinds {
        offsets.push(width);
        width += 2 * kind.copies;
    }
    let mut strides = Vec::with_capacity(kinds.len());
    let mut states: u64 = 1;
    for kind in &kinds {
        strides.push(states);
        states *= kind.states;
    }
    let mut levels: Vec<Vec<u32>> = kinds.iter().map(|k| vec![0; k.copies]).collect();
    let mut scratch = levels.clone();
    let decode = |s: u64, levels: &mut [Vec<u32>]| {
        for (g, kind) in kinds.iter().enumerate() {
            kind.unrank((s / strides[g]) % kind.states, &mut levels[g]);
        }
    };
    // the states by their customers, and each one's place among those with as many
    let mut by_customers: Vec<Vec<u64>> = Vec::new();
    let mut slot = vec![0u32; states as usize];
    for s in 0..states {
        decode(s, &mut levels);
        let t = levels.iter().flatten().sum::<u32>() as usize;
        if by_customers.len() <= t {
            by_customers.resize_with(t + 1, Vec::new);
        }
        slot[s as usize] = by_customers[t].len() as u32;
        by_customers[t].push(s);
    }
    let mut below = vec![0.0; width];
    let mut here = Vec::new();
    let mut throughput = vec![0.0; kinds.len()];
    let mut response_s = vec![vec![0.0; centres]; kinds.len()];
    let mut own_response_s = vec![0.0; kinds.len()];
    let mut response = vec![0.0; centres];
    let last = by_customers.len() - 1;
    for (t, at_t) in by_customers.iter().enumerate().skip(1) {
        here.clear();
        here.resize(at_t.len() * width, 0.0);
        for (i, &s) in at_t.iter().enumerate() {
            decode(s, &mut levels);
            let values = &mut here[i * width..(i + 1) * width];
            for (g, (class, kind)) in network.classes.iter().zip(&kinds).enumerate() {
                let copies_levels = &levels[g];
                let mut p = 0;
                while p < kind.copies {
                    let j = copies_levels[p];
                    // the copies at level j are p..end (the list does not increase)
                    let end = p + copies_levels[p..].iter().take_while(|&&l| l == j).count();
                    if j == 0 {
                        break;
                    }
                    // one customer of the last copy at level j leaves
                    let lower = &mut scratch[g];
                    lower.copy_from_slice(copies_levels);
                    lower[end - 1] -= 1;
                    let rank_now = (s / strides[g]) % kind.states;
                    let before = s - rank_now * strides[g] + kind.rank(lower) * strides[g];
                    let at = slot[before as usize] as usize * width;
                    let prior = &below[at..at + width];
                    for k in 0..centres {
                        let d = class.demands_s[k];
                        response[k] = match network.centres[k] {
                            CentreKind::Queue => (d * (1.0 + prior[k]) + prior[centres + k]).max(d),
                            CentreKind::Delay => d,
                        };
                    }
                    let own = class.own_queue.map_or(0.0, |q| {
                        let at = offsets[g] + 2 * (end - 1);
                        (q.demand_s * (1.0 + prior[at]) + prior[at + 1]).max(q.demand_s)
                    });
                    let x = f64::from(j) / (class.think_s + response.iter().sum::<f64>() + own);
                    let weight = (end - p) as f64;
                    for k in 0..centres {
                        values[k] += weight * x * response[k];
                        if network.centres[k] == CentreKind::Queue {
                            values[centres + k] +=
                                weight * x * residual_excess(class.demands_s[k], class.scv[k]);
                        }
                    }
                    if let Some(q) = class.own_queue {
                        for copy in p..end {
                            values[offsets[g] + 2 * copy] = x * own;
                            values[offsets[g] + 2 * copy + 1] =
                                x * residual_excess(q.demand_s, q.scv);
                        }
                    }
                    if t == last {
                        throughput[g] = x;
                        response_s[g].copy_from_slice(&response);
                        own_response_s[g] = own;
                    }
                    p = end;
                }
            }
        }
        std::mem::swap(&mut below, &mut here);
    }
    Solution {
        throughput,
        response_s,
        own_response_s,
        queue: below[..centres].to_vec(),
        method: Method::Exact { states },
    }
}

#[cfg(test)]
mod tests {
    use super::super::single_class::single_class;
    use super::*;
    use CentreKind::{Delay, Queue};

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance * a.abs().max(b.abs())
    }

    #[test]
    fn a_kinds_states_rank_one_to_one() {
        for (copies, population) in [(1, 0), (1, 5), (3, 2), (4, 4), (12, 2)] {
            let class = CustomerClass {
                copies,
                ..CustomerClass::new(population, 0.0, vec![])
            };
            let kind = Kind::new(&class);
            let mut levels = vec![0; copies as usize];
            for rank in 0..kind.states {
                kind.unrank(rank, &mut levels);
                assert!(levels.windows(2).all(|w| w[0] >= w[1]), "{levels:?}");
                assert!(levels.iter().all(|&l| l <= population));
                assert_eq!(kind.rank(&levels), rank);
            }
        }
        assert_eq!(binomial(14, 12), Some(91));
    }

    #[test]
    fn one_class_is_single_class_mva() {
        let centres = [Queue, Delay, Queue];
        let demands = vec![0.3, 1.0, 0.2];
        let network = ClosedNetwork {
            centres: centres.to_vec(),
            classes: vec![CustomerClass::new(7, 0.5, demands.clone())],
        };
        let exact = exact(&network);
        let single = single_class(&centres, &demands, 0.5, 7);
        assert!(close(exact.throughput[0], single[6].throughput, 1e-13));
        for k in 0..3 {
            assert!(close(
                exact.response_s[0][k],
                single[6].response_s[k],
                1e-13
            ));
            assert!(close(exact.queue[k], single[6].queue[k], 1e-13));
        }
    }

    #[test]
    fn two_classes_by_hand() {
        // One queue of D = 1 for both classes, one customer each, no think time: the state
        // (1, 0): X = 1, Q = 1; (1, 1): R = 1 + 1 = 2 each, X = 1/2 each, Q = 2.
        let network = ClosedNetwork {
            centres: vec![Queue],
            classes: vec![
                CustomerClass::new(1, 0.0, vec![1.0]),
                CustomerClass::new(1, 0.0, vec![1.0]),
            ],
        };
        let solved = exact(&network);
        assert_eq!(solved.throughput, [0.5, 0.5]);
        assert_eq!(solved.queue, [2.0]);
    }

    #[test]
    fn copies_give_what_as_many_separate_classes_give() {
        // Three workers of their own queue each, two tasks each, sharing a master and a LAN:
        // as one kind of three copies, and as three classes with a queue each.
        let own = 1.0;
        let copies = ClosedNetwork {
            centres: vec![Queue, Queue],
            classes: vec![CustomerClass {
                copies: 3,
                own_queue: Some(super::super::network::OwnQueue {
                    demand_s: own,
                    scv: 1.0,
                }),
                ..CustomerClass::new(2, 0.05, vec![0.1, 0.25])
            }],
        };
        let mut separate = ClosedNetwork {
            centres: vec![Queue, Queue, Queue, Queue, Queue],
            classes: Vec::new(),
        };
        for w in 0..3 {
            let mut demands = vec![0.1, 0.25, 0.0, 0.0, 0.0];
            demands[2 + w] = own;
            separate.classes.push(CustomerClass::new(2, 0.05, demands));
        }
        let a = exact(&copies);
        let b = exact(&separate);
        for w in 0..3 {
            assert!(close(a.throughput[0], b.throughput[w], 1e-13));
            assert!(close(a.own_response_s[0], b.response_s[w][2 + w], 1e-13));
        }
        assert!(close(a.queue[1], b.queue[1], 1e-13));
        assert_eq!(a.method, Method::Exact { states: 10 });
    }
}
