//! Schweitzer and Bard's approximate MVA (`docs/model.md` (117)): the network at its full
//! population only, with the queue a customer finds on arrival estimated from the queue at
//! that population, solved as a fixed point.

use super::exact::residual_excess;
use super::network::{CentreKind, ClosedNetwork, Method, Solution};

/// The fixed point is reached when no throughput moves by more than this, relatively.
pub const TOLERANCE: f64 = 1e-12;

/// Iterations at most; each costs `O(C K)` for `C` kinds of class and `K` centres.
pub const MAX_ITERATIONS: u32 = 20_000;

/// (117) Schweitzer-Bard: (113)-(115) at the full population `N` alone, with the queue a
/// customer of class `c` finds at centre `k`
///
/// `Q_k(N - e_c) ~ Q_k(N) - Q_{c,k}(N) / N_c`
///
/// (and the residual term (118) alike): its own class's share of the queue shrinks by one
/// customer in `N_c`, the others' stays. Iterated from the customers spread in proportion
/// to their demands until the throughputs move by less than [`TOLERANCE`], or
/// [`MAX_ITERATIONS`] times. Copies of a kind of class are one class here, counted
/// `copies` times in the queues they share.
pub fn schweitzer_bard(network: &ClosedNetwork) -> Solution {
    let centres = network.centres.len();
    let classes = &network.classes;
    let mut x: Vec<f64> = (0..classes.len())
        .map(|c| f64::from(classes[c].population) / network.cycle_demand(c))
        .collect();
    let mut per_copy: Vec<Vec<f64>> = classes
        .iter()
        .zip(&x)
        .map(|(class, &x)| class.demands_s.iter().map(|d| x * d).collect())
        .collect();
    let mut own_queue: Vec<f64> = classes
        .iter()
        .zip(&x)
        .map(|(class, &x)| class.own_queue.map_or(0.0, |q| x * q.demand_s))
        .collect();
    let mut response_s = vec![vec![0.0; centres]; classes.len()];
    let mut own_response_s = vec![0.0; classes.len()];
    let mut iterations = 0;
    let mut converged = false;
    while iterations < MAX_ITERATIONS && !converged {
        iterations += 1;
        let mut queue = vec![0.0; centres];
        let mut excess = vec![0.0; centres];
        for (c, class) in classes.iter().enumerate() {
            let copies = f64::from(class.copies);
            for k in 0..centres {
                queue[k] += copies * per_copy[c][k];
                excess[k] += copies * x[c] * residual_excess(class.demands_s[k], class.scv[k]);
            }
        }
        converged = true;
        for (c, class) in classes.iter().enumerate() {
            if class.population == 0 {
                continue;
            }
            let n = f64::from(class.population);
            for k in 0..centres {
                let d = class.demands_s[k];
                response_s[c][k] = match network.centres[k] {
                    CentreKind::Queue => {
                        let found = queue[k] - per_copy[c][k] / n;
                        let residual = excess[k] - x[c] * residual_excess(d, class.scv[k]) / n;
                        (d * (1.0 + found) + residual).max(d)
                    }
                    CentreKind::Delay => d,
                };
            }
            own_response_s[c] = class.own_queue.map_or(0.0, |q| {
                let kept = (n - 1.0) / n;
                let found = own_queue[c] * kept;
                let residual = x[c] * residual_excess(q.demand_s, q.scv) * kept;
                (q.demand_s * (1.0 + found) + residual).max(q.demand_s)
            });
            let next = n / (class.think_s + response_s[c].iter().sum::<f64>() + own_response_s[c]);
            if (next - x[c]).abs() > TOLERANCE * next {
                converged = false;
            }
            x[c] = next;
            for k in 0..centres {
                per_copy[c][k] = next * response_s[c][k];
            }
            own_queue[c] = next * own_response_s[c];
        }
    }
    let queue = (0..centres)
        .map(|k| {
            classes
                .iter()
                .enumerate()
                .map(|(c, class)| f64::from(class.copies) * per_copy[c][k])
                .sum()
        })
        .collect();
    for (c, class) in classes.iter().enumerate() {
        if class.population == 0 {
            x[c] = 0.0;
        }
    }
    Solution {
        throughput: x,
        response_s,
        own_response_s,
        queue,
        method: Method::Approximate {
            iterations,
            converged,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queueing::network::CustomerClass;

    #[test]
    fn one_customer_is_exact() {
        // With N = 1 a customer finds nobody of its own class: X = 1 / (Z + sum D).
        let network = ClosedNetwork {
            centres: vec![CentreKind::Queue, CentreKind::Queue],
            classes: vec![CustomerClass::new(1, 0.5, vec![0.25, 0.25])],
        };
        let solved = schweitzer_bard(&network);
        assert!((solved.throughput[0] - 1.0).abs() < 1e-12);
        assert!(matches!(
            solved.method,
            Method::Approximate {
                converged: true,
                ..
            }
        ));
    }

    #[test]
    fn many_customers_reach_the_bottleneck() {
        let network = ClosedNetwork {
            centres: vec![CentreKind::Queue, CentreKind::Delay],
            classes: vec![CustomerClass::new(200, 0.0, vec![0.01, 0.5])],
        };
        let x = schweitzer_bard(&network).throughput[0];
        assert!(x < 100.0 && x > 99.0, "{x}");
    }
}
