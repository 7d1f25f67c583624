//! The source's closed forms of small single-class networks (`docs/model.md` (119)): one
//! delay and queues, the response times as sums over the states of the product form.

/// `ln(e!)`.
fn ln_factorial(e: u32) -> f64 {
    (2..=e).map(|k| f64::from(k).ln()).sum()
}

/// Every way to put `customers` in `slots` places, as counts.
fn compositions(customers: u32, slots: usize, current: &mut Vec<u32>, out: &mut Vec<Vec<u32>>) {
    if current.len() + 1 == slots {
        current.push(customers);
        out.push(current.clone());
        current.pop();
        return;
    }
    for here in 0..=customers {
        current.push(here);
        compositions(customers - here, slots, current, out);
        current.pop();
    }
}

/// The response time at each queue of a network of one delay `z` and queues `x` holding
/// `population` customers, from the product form's states of one customer fewer (the
/// arrival theorem):
///
/// `R_k = x_k * [sum (e_k + 1) prod_j x_j^e_j z^e_z / e_z!] / [sum prod_j x_j^e_j z^e_z / e_z!]`,
///
/// the sums over the states `e_1 + ... + e_K + e_z = population - 1`. With one queue this is
/// the fraction of (5.7); with two it is BUS-AIO's (5.12)/(5.13). The terms are summed
/// relative to the largest, so they neither overflow nor underflow; `O(population^K)`.
pub fn delay_and_queues_response(z: f64, x: &[f64], population: u32) -> Vec<f64> {
    if population == 0 {
        return vec![0.0; x.len()];
    }
    let mut states = Vec::new();
    compositions(population - 1, x.len() + 1, &mut Vec::new(), &mut states);
    // ln of each state's term; a zero demand holds nobody (0^0 = 1)
    let ln_power = |base: f64, e: u32| {
        if e == 0 {
            0.0
        } else if base > 0.0 {
            f64::from(e) * base.ln()
        } else {
            f64::NEG_INFINITY
        }
    };
    let logs: Vec<f64> = states
        .iter()
        .map(|e| {
            let queues: f64 = x.iter().zip(e).map(|(&xk, &ek)| ln_power(xk, ek)).sum();
            let delay = e[x.len()];
            queues + ln_power(z, delay) - ln_factorial(delay)
        })
        .collect();
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = logs.iter().map(|l| (l - top).exp()).collect();
    let total: f64 = weights.iter().sum();
    (0..x.len())
        .map(|k| {
            let customers: f64 = states
                .iter()
                .zip(&weights)
                .map(|(e, w)| f64::from(e[k] + 1) * w)
                .sum();
            x[k] * customers / total
        })
        .collect()
}

/// (119), the source's (5.7): the cycle time of `i` customers over one delay `z` and one
/// queue `x`,
///
/// `R(i, z, x) = z + x * [sum_{e1+e2=i-1} ((e1+1)/e2!) x^e1 z^e2] / [sum_{e1+e2=i-1} (1/e2!) x^e1 z^e2]`.
///
/// The source prints a factor `d` before the fraction: it is `x`, as single-class MVA over
/// the same network (110)-(112) gives (tested).
pub fn one_delay_one_queue_response(i: u32, z: f64, x: f64) -> f64 {
    z + delay_and_queues_response(z, &[x], i)[0]
}

#[cfg(test)]
mod tests {
    use super::super::network::CentreKind::{Delay, Queue};
    use super::super::single_class::single_class;
    use super::*;

    #[test]
    fn two_customers_by_hand() {
        // R(2, z, x) = z + x (2x + z) / (x + z)
        let (z, x) = (0.3, 0.7);
        let r = one_delay_one_queue_response(2, z, x);
        assert!((r - (z + x * (2.0 * x + z) / (x + z))).abs() < 1e-15);
        assert_eq!(one_delay_one_queue_response(1, z, x), z + x);
    }

    /// (5.7) against single-class MVA for i = 1..50 on a logarithmic grid of x and z from
    /// 1e-4 to 1e2, and at the values of the source's Fig. 5.8 and 5.9 (the delay and
    /// queue of its BUS models, p = 1..64), to a relative 1e-12.
    #[test]
    fn the_closed_form_5_7_is_single_class_mva() {
        let grid: Vec<f64> = (0..=12)
            .map(|k| 10f64.powf(-4.0 + 0.5 * f64::from(k)))
            .collect();
        let mut pairs: Vec<(f64, f64)> = grid
            .iter()
            .flat_map(|&x| grid.iter().map(move |&z| (x, z)))
            .collect();
        for program in [
            super::super::ParallelProgram::figure_5_8(),
            super::super::ParallelProgram::case_study(),
        ] {
            for p in 1..=64 {
                pairs.push((program.queue_demand(p), program.delay(p)));
            }
        }
        let mut worst: f64 = 0.0;
        for (x, z) in pairs {
            let levels = single_class(&[Delay, Queue], &[z, x], 0.0, 50);
            for level in &levels {
                let mva = level.response_total_s();
                let closed = one_delay_one_queue_response(level.population, z, x);
                worst = worst.max((closed - mva).abs() / mva);
            }
        }
        assert!(worst <= 1e-12, "largest relative difference {worst:e}");
    }
}
