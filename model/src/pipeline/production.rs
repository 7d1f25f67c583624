//! A stage's production time, alone, held by its neighbours, and replicated behind a stage
//! manager (`docs/model.md`, "Pipelines", (140)-(147); the dynamic-tuning thesis's PL(1)-PL(5)).
//!
//! A `v`-byte message costs `m_o + lambda * v` when its sender waits for it (synchronous
//! sends) and `m_o` when it does not (asynchronous: the bytes travel while the sender goes
//! on). Times are in seconds.

use serde::Serialize;

/// How a stage sends its output on: the runtime's sends are asynchronous (non-blocking).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Sends {
    /// The sender goes on once the message is handed over: it pays `m_o`.
    #[default]
    Async,
    /// The sender waits for the message to be delivered: it pays `m_o + lambda * v`.
    Sync,
}

/// The cost of one message to its sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageCost {
    /// `m_o`: start-up of one message, seconds.
    pub overhead_s: f64,
    /// `lambda`: seconds per byte on the network the message crosses.
    pub per_byte_s: f64,
    /// Whether the sender waits.
    pub sends: Sends,
}

impl MessageCost {
    /// `lambda * v`: the time `bytes` take on the wire.
    pub fn wire_s(&self, bytes: f64) -> f64 {
        self.per_byte_s * bytes
    }

    /// PL(1)'s `C` for a stage that sends `bytes`: `m_o` (asynchronous) or `m_o + lambda * v`
    /// (synchronous).
    pub fn sender_s(&self, bytes: f64) -> f64 {
        match self.sends {
            Sends::Async => self.overhead_s,
            Sends::Sync => self.overhead_s + self.wire_s(bytes),
        }
    }

    /// PL(2)'s `tg_i`, what a manager spends handing one `bytes`-byte item to a replica:
    /// `m_o` (asynchronous) or `2 (m_o + lambda * v)` (synchronous: it receives the item and
    /// sends it on, waiting each time).
    pub fn manager_s(&self, bytes: f64) -> f64 {
        match self.sends {
            Sends::Async => self.overhead_s,
            Sends::Sync => 2.0 * (self.overhead_s + self.wire_s(bytes)),
        }
    }
}

/// Equation (140), PL(1): a stage's production time `Tr_i = tc_i + C`, `C` from
/// [`MessageCost::sender_s`] for a stage that sends `output_bytes` on, 0 for one that sends
/// nothing (the seed's last stage).
pub fn production_time(compute_s: f64, output_bytes: Option<f64>, cost: &MessageCost) -> f64 {
    compute_s + output_bytes.map_or(0.0, |bytes| cost.sender_s(bytes))
}

/// Equation (141): consecutive stages `a..=b` merged on one node pass each item from one to
/// the next in memory: `Tr = sum_j tc_j + C_b`, only the last one's output sent.
pub fn merged_production_time(
    compute_s: &[f64],
    output_bytes: Option<f64>,
    cost: &MessageCost,
) -> f64 {
    production_time(compute_s.iter().sum(), output_bytes, cost)
}

/// Equation (142), the dependent production time `rTr_i`: a stage runs at its own `Tr_i` if
/// it is the slowest of itself and its neighbours, otherwise it is held to the slower
/// neighbour's, `rTr_i = max(Tr_{i-1}, Tr_i, Tr_{i+1})` over the neighbours it has. The
/// seed's cases (the previous stage when it is slower than the next and both are slower
/// than `i`, or `i` is last; the next symmetrically, or `i` is first) are this maximum; so is
/// the case it leaves out, one neighbour slower than `i` and the other faster.
pub fn dependent_production_times(production_s: &[f64]) -> Vec<f64> {
    (0..production_s.len())
        .map(|i| {
            let from = i.saturating_sub(1);
            let to = (i + 2).min(production_s.len());
            production_s[from..to]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect()
}

/// `1 / sum_k (1 / Tr_i^k)`: the time between two items of replicas working side by side.
pub fn combined_time(replica_s: &[f64]) -> f64 {
    let rate: f64 = replica_s.iter().map(|t| 1.0 / t).sum();
    if rate > 0.0 {
        1.0 / rate
    } else {
        f64::INFINITY
    }
}

/// Equation (143), PL(2): a stage replicated behind a manager on a processor of its own,
/// `Tr_i = tg_i + wc_i`, with `tg_i` [`MessageCost::manager_s`] of the `item_bytes`-byte items
/// the manager hands out and `wc_i = 0` when `1 / sum_k (1/Tr_i^k) <= tg_i` (the manager
/// cannot keep up: replicas wait for it, and its own time is the stage's), otherwise
/// `1 / sum_k (1/Tr_i^k) + lambda v_i` (asynchronous; `v_i` the `output_bytes` a replica
/// sends) or `1 / sum_k (1/Tr_i^k)` (synchronous).
pub fn replicated_production_time(
    replica_s: &[f64],
    item_bytes: f64,
    output_bytes: f64,
    cost: &MessageCost,
) -> f64 {
    let handing = cost.manager_s(item_bytes);
    let side_by_side = combined_time(replica_s);
    let working = if side_by_side <= handing {
        0.0
    } else {
        match cost.sends {
            Sends::Async => side_by_side + cost.wire_s(output_bytes),
            Sends::Sync => side_by_side,
        }
    };
    handing + working
}

/// Equation (144), PL(3): the manager shares a processor with replica `shared`: its
/// scheduling wait `wait_s` (0 to two scheduler quanta) is added, and the replica sharing
/// its processor loses the manager's time: while it computes one item (`Tr^c`) the stage
/// takes `Tr^c / (1/sum_k 1/Tr^k)` items, each costing the manager `tg_i`, so its time is
/// stretched to `Tr^c (1 + tg_i / (1/sum_k 1/Tr^k))` before (143) is applied.
pub fn shared_manager_production_time(
    replica_s: &[f64],
    shared: usize,
    wait_s: f64,
    item_bytes: f64,
    output_bytes: f64,
    cost: &MessageCost,
) -> f64 {
    let handing = cost.manager_s(item_bytes);
    let side_by_side = combined_time(replica_s);
    let stretched: Vec<f64> = replica_s
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            if k == shared {
                t * (1.0 + handing / side_by_side)
            } else {
                t
            }
        })
        .collect();
    wait_s + replicated_production_time(&stretched, item_bytes, output_bytes, cost)
}

/// Equation (145): the replicas a manager keeps busy. It hands out one item every `tg_i`;
/// replica `k` takes `1/Tr^k` items a second. Served on demand, the fastest replicas take
/// what it hands out: the fewest of them whose rates add up to `1/tg_i`, or all of them.
/// The others stay idle.
pub fn replicas_fed(replica_s: &[f64], item_bytes: f64, cost: &MessageCost) -> usize {
    let handing = cost.manager_s(item_bytes);
    if handing <= 0.0 {
        return replica_s.len();
    }
    let mut rates: Vec<f64> = replica_s.iter().map(|t| 1.0 / t).collect();
    rates.sort_by(|a, b| b.total_cmp(a));
    let mut sum = 0.0;
    for (k, rate) in rates.iter().enumerate() {
        sum += rate;
        if sum >= 1.0 / handing {
            return k + 1;
        }
    }
    replica_s.len()
}

/// Equations (146) PL(4) and (147) PL(5): the processors (replicas and the manager) that
/// bring a stage of production time `replica_s` on one processor down to `target_s`,
/// `p_i = Tr_i^r / (Tr_k - (m_o + lambda v_i)) + 1` (asynchronous) or
/// `Tr_i^r / (Tr_k - 2 (m_o + lambda v_i)) + 1` (synchronous), rounded up; `None` when the
/// manager's own time reaches the target (no number of replicas gets there).
pub fn processors_for(
    replica_s: f64,
    target_s: f64,
    item_bytes: f64,
    cost: &MessageCost,
) -> Option<u64> {
    let per_item = cost.overhead_s + cost.wire_s(item_bytes);
    let manager = match cost.sends {
        Sends::Async => per_item,
        Sends::Sync => 2.0 * per_item,
    };
    let room = target_s - manager;
    if room.is_nan() || room <= 0.0 {
        return None;
    }
    let processors = (replica_s / room + 1.0).ceil();
    (processors.is_finite() && processors < u64::MAX as f64).then_some(processors as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASYNC: MessageCost = MessageCost {
        overhead_s: 0.001,
        per_byte_s: 1e-6,
        sends: Sends::Async,
    };
    const SYNC: MessageCost = MessageCost {
        sends: Sends::Sync,
        ..ASYNC
    };

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn pl1_adds_what_the_sender_pays() {
        // 1,000 bytes: 1 ms of start-up, 1 ms on the wire.
        assert!(close(production_time(0.1, Some(1000.0), &ASYNC), 0.101));
        assert!(close(production_time(0.1, Some(1000.0), &SYNC), 0.102));
        assert!(close(production_time(0.1, None, &SYNC), 0.1));
        assert!(close(
            merged_production_time(&[0.1, 0.2], Some(1000.0), &SYNC),
            0.302
        ));
    }

    #[test]
    fn a_stage_is_held_to_its_slower_neighbour() {
        let held = dependent_production_times(&[1.0, 3.0, 2.0, 5.0, 4.0]);
        assert_eq!(held, vec![3.0, 3.0, 5.0, 5.0, 5.0]);
        // Previous slower than next, both slower than i; first and last stages.
        assert_eq!(
            dependent_production_times(&[4.0, 1.0, 2.0]),
            vec![4.0, 4.0, 2.0]
        );
        assert_eq!(dependent_production_times(&[2.0]), vec![2.0]);
        assert!(dependent_production_times(&[]).is_empty());
    }

    #[test]
    fn pl2_replicas_or_the_manager_limit() {
        // Two replicas of 0.2 s: 0.1 s side by side; the manager's 1 ms is far below.
        let t = replicated_production_time(&[0.2, 0.2], 1000.0, 500.0, &ASYNC);
        assert!(close(t, 0.001 + 0.1 + 0.0005), "{t}");
        let t = replicated_production_time(&[0.2, 0.2], 1000.0, 500.0, &SYNC);
        assert!(close(t, 0.004 + 0.1), "{t}");
        // 100 replicas of 0.05 s would take an item every 0.5 ms: the manager (1 ms) limits.
        let many = vec![0.05; 100];
        assert!(close(
            replicated_production_time(&many, 1000.0, 500.0, &ASYNC),
            0.001
        ));
        assert_eq!(replicas_fed(&many, 1000.0, &ASYNC), 50);
        assert_eq!(replicas_fed(&[0.2, 0.2], 1000.0, &ASYNC), 2);
        // The fastest first: 1 ms of handing feeds 1,000 items a second, which the 1 ms
        // replica takes alone, or two of 2 ms; a manager that costs nothing feeds them all.
        assert_eq!(replicas_fed(&[0.01, 0.001, 0.002], 1000.0, &ASYNC), 1);
        assert_eq!(replicas_fed(&[0.01, 0.002, 0.002], 1000.0, &ASYNC), 2);
        let free = MessageCost {
            overhead_s: 0.0,
            ..ASYNC
        };
        assert_eq!(replicas_fed(&[0.01, 0.001, 0.002], 1000.0, &free), 3);
    }

    #[test]
    fn pl3_the_shared_replica_loses_the_managers_time() {
        // Two replicas of 0.2 s: the stage takes an item every 0.1 s, each costing the
        // manager 1 ms; the shared replica computes at 0.2 * (1 + 0.001 / 0.1) = 0.202 s.
        let expected = 0.005 + 0.001 + combined_time(&[0.202, 0.2]) + 0.0005;
        let t = shared_manager_production_time(&[0.2, 0.2], 0, 0.005, 1000.0, 500.0, &ASYNC);
        assert!(close(t, expected), "{t} {expected}");
    }

    #[test]
    fn pl4_and_pl5_count_the_processors() {
        // A stage of 1 s brought to 0.25 s with a manager costing 1 ms: 1 / 0.249 + 1 = 5.02
        // -> 6 processors (5 replicas and the manager).
        assert_eq!(processors_for(1.0, 0.25, 0.0, &ASYNC), Some(6));
        // Synchronous, 1,000-byte items: 2 (1 ms + 1 ms) = 4 ms; 1 / 0.246 + 1 = 5.07 -> 6.
        assert_eq!(processors_for(1.0, 0.25, 1000.0, &SYNC), Some(6));
        assert_eq!(processors_for(1.0, 0.5, 0.0, &ASYNC), Some(4));
        assert_eq!(processors_for(1.0, 0.001, 0.0, &ASYNC), None);
    }
}
