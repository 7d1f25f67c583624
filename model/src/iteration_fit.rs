//! Section 5's terms measured (`docs/model.md`, (109)): the `m_o`, `lambda` and `mu_m` that make
//! the asynchronous small-message form reproduce the iteration times measured at several
//! numbers of workers, and the volume as a function of the number of workers.
//!
//! Each iteration measured gives the number of workers `n`, its time `Tt`, its total worker
//! time `Tc` (what the workers reported computing) and its volume `V` (bytes of its tasks and
//! results). The form `Tt = (n+1)*m_o + (Tc + lambda*V)/n + mu_m` is linear in the three
//! unknown terms once `Tc/n` is moved to the left:
//!
//! `Tt - Tc/n = m_o*(n+1) + lambda*(V/n) + mu_m`                                          (109)
//!
//! so they are the non-negative least-squares solution over the iterations (every term is a
//! time, none can be negative). Three distinct counts determine all three; with fewer, only
//! as many terms are fitted as there are distinct counts (the others are 0). Non-negative
//! least squares in three unknowns is solved exactly by trying every subset of the terms:
//! the solution is the unconstrained least-squares solution on its support that is feasible
//! with the smallest residual.

use crate::tuning::IterationParams;

/// One measured iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredIteration {
    /// `n`: the workers that took its tasks.
    pub workers: u64,
    /// `Tt`: its time, barrier to barrier.
    pub time: f64,
    /// `Tc`: the computation time its workers reported, summed.
    pub worker_time: f64,
    /// `V`: bytes of its tasks and results.
    pub volume: f64,
}

/// The terms of section 5 fitted to measured iterations (109).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FittedTerms {
    /// `m_o`.
    pub message_overhead: f64,
    /// `lambda`.
    pub time_per_byte: f64,
    /// `mu_m`.
    pub master_time: f64,
    /// `V(n) = volume_base + volume_per_worker * n` (least squares; constant with one count).
    pub volume_base: f64,
    /// See `volume_base`.
    pub volume_per_worker: f64,
    /// Mean `Tc` of the iterations fitted.
    pub worker_time: f64,
    /// Root mean square of `Tt` measured minus `Tt` the terms give, over the iterations fitted.
    pub residual: f64,
}

impl FittedTerms {
    /// The parameters of an iteration with `workers` workers and total worker time
    /// `worker_time` (the volume from `V(n)`), for [`crate::tuning`]'s forms.
    pub fn params_at(&self, workers: u64, worker_time: f64) -> IterationParams {
        IterationParams {
            message_overhead: self.message_overhead,
            time_per_byte: self.time_per_byte,
            volume: (self.volume_base + self.volume_per_worker * workers as f64).max(0.0),
            master_share: 0.0,
            worker_time,
            master_time: self.master_time,
        }
    }
}

/// (109): the non-negative least-squares terms over `iterations` (`None` when there is none, or
/// one has no worker or a value that is not finite).
pub fn fit_iteration_terms(iterations: &[MeasuredIteration]) -> Option<FittedTerms> {
    if iterations.is_empty()
        || iterations.iter().any(|it| {
            it.workers == 0
                || !(it.time.is_finite() && it.worker_time.is_finite() && it.volume.is_finite())
        })
    {
        return None;
    }
    let mut counts: Vec<u64> = iterations.iter().map(|it| it.workers).collect();
    counts.sort_unstable();
    counts.dedup();
    let distinct = counts.len();

    // Rows: (n+1, V/n, 1) -> Tt - Tc/n.
    let rows: Vec<([f64; 3], f64)> = iterations
        .iter()
        .map(|it| {
            let n = it.workers as f64;
            ([n + 1.0, it.volume / n, 1.0], it.time - it.worker_time / n)
        })
        .collect();
    let mut best: Option<([f64; 3], f64)> = None;
    for mask in 1u32..8 {
        let support: Vec<usize> = (0..3).filter(|&j| mask & (1 << j) != 0).collect();
        if support.len() > distinct {
            continue;
        }
        let Some(solution) = least_squares(&rows, &support) else {
            continue;
        };
        if solution.iter().any(|&x| x < 0.0) {
            continue;
        }
        let mut terms = [0.0; 3];
        for (&j, &x) in support.iter().zip(&solution) {
            terms[j] = x;
        }
        let residual = sum_of_squares(&rows, &terms);
        // Strictly better only: the smaller support wins a tie (masks grow in size).
        if best.is_none_or(|(_, r)| residual < r * (1.0 - 1e-12)) {
            best = Some((terms, residual));
        }
    }
    // Every support infeasible (times below what the computation alone takes): no term.
    let (terms, residual) = best.unwrap_or(([0.0; 3], sum_of_squares(&rows, &[0.0; 3])));

    let m = iterations.len() as f64;
    let worker_time = iterations.iter().map(|it| it.worker_time).sum::<f64>() / m;
    let (volume_base, volume_per_worker) = if distinct >= 2 {
        let volume_rows: Vec<([f64; 3], f64)> = iterations
            .iter()
            .map(|it| ([1.0, it.workers as f64, 0.0], it.volume))
            .collect();
        let fit = least_squares(&volume_rows, &[0, 1])?;
        (fit[0], fit[1])
    } else {
        (iterations.iter().map(|it| it.volume).sum::<f64>() / m, 0.0)
    };
    Some(FittedTerms {
        message_overhead: terms[0],
        time_per_byte: terms[1],
        master_time: terms[2],
        volume_base,
        volume_per_worker,
        worker_time,
        residual: (residual / m).sqrt(),
    })
}

fn sum_of_squares(rows: &[([f64; 3], f64)], terms: &[f64; 3]) -> f64 {
    rows.iter()
        .map(|(x, y)| {
            let e = y - (x[0] * terms[0] + x[1] * terms[1] + x[2] * terms[2]);
            e * e
        })
        .sum()
}

/// Least squares of `y` on the columns `support` of the rows, by the normal equations of the
/// columns scaled to unit norm (they differ by orders of magnitude: counts and bytes per
/// worker); `None` when they are singular.
fn least_squares(rows: &[([f64; 3], f64)], support: &[usize]) -> Option<Vec<f64>> {
    let k = support.len();
    let scale: Vec<f64> = support
        .iter()
        .map(|&j| rows.iter().map(|(x, _)| x[j] * x[j]).sum::<f64>().sqrt())
        .collect();
    if scale.iter().any(|&s| s.is_nan() || s <= 0.0) {
        return None;
    }
    // [A^T A | A^T y] of the scaled columns.
    let mut system = vec![vec![0.0; k + 1]; k];
    for (x, y) in rows {
        for a in 0..k {
            let xa = x[support[a]] / scale[a];
            for b in 0..k {
                system[a][b] += xa * x[support[b]] / scale[b];
            }
            system[a][k] += xa * y;
        }
    }
    let solution = solve(system)?;
    Some(solution.iter().zip(&scale).map(|(x, s)| x / s).collect())
}

/// Gaussian elimination with partial pivoting of an augmented `k x (k+1)` system; `None` when a
/// pivot vanishes (relative to 1, the diagonal of the scaled normal equations).
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = a.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-10 {
            return None;
        }
        a.swap(col, pivot);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for row in lower.iter_mut() {
            let f = row[col] / pivot_row[col];
            for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
        }
    }
    let mut x = vec![0.0; k];
    for row in (0..k).rev() {
        let rest: f64 = (row + 1..k).map(|c| a[row][c] * x[c]).sum();
        x[row] = (a[row][k] - rest) / a[row][row];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::{
        best_worker_count, iteration_time_async_small_messages, IterationParams, WorkerObjective,
    };

    // Section 5's test vector (milliseconds): m_o = 1, lambda = 0.001, V = 4096, Tc = 1600.
    use crate::tuning::tests::vector;

    fn measured(p: &IterationParams, n: u64) -> MeasuredIteration {
        MeasuredIteration {
            workers: n,
            time: iteration_time_async_small_messages(p, n as f64),
            worker_time: p.worker_time,
            volume: p.volume,
        }
    }

    #[test]
    fn three_counts_recover_the_test_vector_and_its_decisions() {
        let p = vector();
        let its: Vec<_> = [64, 32, 16].iter().map(|&n| measured(&p, n)).collect();
        let fit = fit_iteration_terms(&its).unwrap();
        assert!((fit.message_overhead - 1.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.time_per_byte - 0.001).abs() < 1e-9, "{fit:?}");
        assert!(fit.master_time.abs() < 1e-9, "{fit:?}");
        assert!(fit.residual < 1e-9);
        let at = |n| fit.params_at(n, fit.worker_time);
        assert_eq!(best_worker_count(64, WorkerObjective::Time, at), 40);
        assert_eq!(
            best_worker_count(64, WorkerObjective::PerformanceIndex, at),
            23
        );
    }

    #[test]
    fn a_volume_growing_with_the_workers_and_the_masters_time_are_recovered() {
        // A broadcast: each worker receives the whole state (1000 B) and returns its share of
        // 2000 B; the master spends 5 ms per iteration.
        let truth = |n: u64| IterationParams {
            volume: 2000.0 + 1000.0 * n as f64,
            master_time: 5.0,
            ..vector()
        };
        let its: Vec<_> = [8, 4, 2, 8, 4, 2]
            .iter()
            .map(|&n| measured(&truth(n), n))
            .collect();
        let fit = fit_iteration_terms(&its).unwrap();
        assert!((fit.volume_base - 2000.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.volume_per_worker - 1000.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.master_time - 5.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.message_overhead - 1.0).abs() < 1e-6, "{fit:?}");
        for n in 1..=8 {
            let t = iteration_time_async_small_messages(&fit.params_at(n, 1600.0), n as f64);
            let expected = iteration_time_async_small_messages(&truth(n), n as f64);
            assert!((t - expected).abs() < 1e-6);
        }
    }

    #[test]
    fn terms_stay_non_negative_and_fewer_counts_fit_fewer_terms() {
        // Iterations faster than their computation alone: nothing to attribute, all zero.
        let fast = [4, 2, 1].map(|n| MeasuredIteration {
            workers: n,
            time: 1.0,
            worker_time: 100.0,
            volume: 10.0,
        });
        let fit = fit_iteration_terms(&fast).unwrap();
        assert_eq!(
            (fit.message_overhead, fit.time_per_byte, fit.master_time),
            (0.0, 0.0, 0.0)
        );
        // One count: one term, whichever fits best; the times are reproduced.
        let p = vector();
        let one = [measured(&p, 10), measured(&p, 10)];
        let fit = fit_iteration_terms(&one).unwrap();
        let terms = [fit.message_overhead, fit.time_per_byte, fit.master_time];
        assert_eq!(terms.iter().filter(|&&t| t > 0.0).count(), 1, "{fit:?}");
        assert!(fit.residual < 1e-9);
        assert!(fit_iteration_terms(&[]).is_none());
        let mut bad = measured(&p, 0);
        assert!(fit_iteration_terms(&[bad]).is_none());
        bad.workers = 1;
        bad.time = f64::NAN;
        assert!(fit_iteration_terms(&[bad]).is_none());
    }
}
