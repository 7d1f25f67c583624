//! Exact single-class MVA (`docs/model.md` (110)-(112)): one class of customers over queues and
//! delays, with a think time, population after population, in `O(K N)`.

use super::network::CentreKind;

/// The mean values of a single-class network at one population.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// `n`: the customers.
    pub population: u32,
    /// `X(n)`: cycles per second (111).
    pub throughput: f64,
    /// `R_k(n)`: the response time at each centre, seconds (110).
    pub response_s: Vec<f64>,
    /// `Q_k(n)`: the mean customers at each centre (112).
    pub queue: Vec<f64>,
}

impl Level {
    /// The response time of a cycle without the think time, `sum_k R_k(n)`.
    pub fn response_total_s(&self) -> f64 {
        self.response_s.iter().sum()
    }
}

/// Exact single-class MVA, the populations `1..=population` in turn (`Q_k(0) = 0`):
///
/// - (110) `R_k(n) = D_k * (1 + Q_k(n - 1))` at a queue, `R_k(n) = D_k` at a delay;
/// - (111) `X(n) = n / (Z + sum_k R_k(n))`;
/// - (112) `Q_k(n) = X(n) * R_k(n)`.
///
/// `demands_s[k]` is `D_k` at `centres[k]`, `think_s` is `Z`. `O(K N)` operations; a network
/// whose cycle is empty (no demand, no think time) has an infinite throughput.
pub fn single_class(
    centres: &[CentreKind],
    demands_s: &[f64],
    think_s: f64,
    population: u32,
) -> Vec<Level> {
    let mut queue = vec![0.0; centres.len()];
    let mut levels = Vec::with_capacity(population as usize);
    for n in 1..=population {
        let response_s: Vec<f64> = centres
            .iter()
            .zip(demands_s)
            .zip(&queue)
            .map(|((kind, &d), &q)| match kind {
                CentreKind::Queue => d * (1.0 + q),
                CentreKind::Delay => d,
            })
            .collect();
        let throughput = f64::from(n) / (think_s + response_s.iter().sum::<f64>());
        queue = response_s.iter().map(|r| throughput * r).collect();
        levels.push(Level {
            population: n,
            throughput,
            response_s,
            queue: queue.clone(),
        });
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;
    use CentreKind::{Delay, Queue};

    #[test]
    fn one_queue_and_a_think_time_by_hand() {
        // D = 1 s at a queue, Z = 1 s: X(1) = 1/2, Q(1) = 1/2; R(2) = 1.5, X(2) = 2/2.5.
        let levels = single_class(&[Queue], &[1.0], 1.0, 2);
        assert_eq!(levels[0].throughput, 0.5);
        assert_eq!(levels[0].queue, [0.5]);
        assert_eq!(levels[1].response_s, [1.5]);
        assert_eq!(levels[1].throughput, 0.8);
    }

    #[test]
    fn a_delay_never_queues_and_a_queue_saturates() {
        let levels = single_class(&[Delay, Queue], &[2.0, 0.5], 0.0, 40);
        assert!(levels.iter().all(|l| l.response_s[0] == 2.0));
        // the queue's bound 1/D = 2 per second, approached from below
        let last = &levels[39];
        assert!(
            last.throughput <= 2.0 && last.throughput > 1.99,
            "{}",
            last.throughput
        );
        // Little's law over the whole cycle: n = X * (Z + sum R)
        for l in &levels {
            let n = l.throughput * l.response_total_s();
            assert!((n - f64::from(l.population)).abs() < 1e-9);
        }
    }
}
