//! Tuning inside a cluster (`docs/model.md` section 5, from the dynamic-tuning sources): the
//! time of one balanced, homogeneous iteration of an iterative master-worker with `n` workers,
//! the number of workers that minimises it or its performance index, and how many workers the
//! master can feed.
//!
//! A `v`-byte message costs `m_o + lambda * v`. Any consistent units work (the tests use
//! milliseconds).

/// The parameters of one iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterationParams {
    /// `m_o`: fixed cost of one message.
    pub message_overhead: f64,
    /// `lambda`: cost per byte.
    pub time_per_byte: f64,
    /// `V`: bytes moved per iteration.
    pub volume: f64,
    /// `alpha`: the master's share of the volume.
    pub master_share: f64,
    /// `Tc`: total worker computation time of the iteration.
    pub worker_time: f64,
    /// `mu_m`: the master's own time per iteration.
    pub master_time: f64,
}

impl IterationParams {
    fn volume_time(&self) -> f64 {
        self.time_per_byte * self.volume
    }
}

/// Section 5, asynchronous with small messages (`m_o >= lambda * v`):
/// `Tt = (n + 1) * m_o + (Tc + lambda * V) / n + mu_m`.
pub fn iteration_time_async_small_messages(p: &IterationParams, workers: f64) -> f64 {
    (workers + 1.0) * p.message_overhead
        + (p.worker_time + p.volume_time()) / workers
        + p.master_time
}

/// Section 5, asynchronous with large messages (`m_o <= lambda * v`):
/// `Tt = 2 * m_o + ((n - 1) * alpha + 1) * lambda * V / n + Tc / n + mu_m`.
pub fn iteration_time_async_large_messages(p: &IterationParams, workers: f64) -> f64 {
    2.0 * p.message_overhead
        + ((workers - 1.0) * p.master_share + 1.0) * p.volume_time() / workers
        + p.worker_time / workers
        + p.master_time
}

/// Section 5, synchronous:
/// `Tt = (n + 1) * m_o + ((n - 1) * alpha + 1) * lambda * V / n + Tc / n + mu_m`.
pub fn iteration_time_sync(p: &IterationParams, workers: f64) -> f64 {
    (workers + 1.0) * p.message_overhead
        + ((workers - 1.0) * p.master_share + 1.0) * p.volume_time() / workers
        + p.worker_time / workers
        + p.master_time
}

/// Section 5: the `n` minimising the asynchronous small-message time with constant `V`,
/// `floor(sqrt((Tc + lambda * V) / m_o))` (at least 1).
pub fn optimal_workers_async(p: &IterationParams) -> u64 {
    (((p.worker_time + p.volume_time()) / p.message_overhead)
        .sqrt()
        .floor() as u64)
        .max(1)
}

/// Section 5: the performance index `Pi(x) = x * Tt(x)^2 / Tc`.
pub fn performance_index(workers: f64, iteration_time: f64, worker_time: f64) -> f64 {
    workers * iteration_time * iteration_time / worker_time
}

/// The iteration-time forms whose performance index has a closed-form minimiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IterationForm {
    /// [`iteration_time_async_small_messages`]: `S = Tc + lambda*V`, `b = m_o`.
    AsyncSmallMessages,
    /// [`iteration_time_sync`]: `S = (1 - alpha)*lambda*V + Tc`, `b = m_o + alpha*lambda*V`.
    Sync,
}

/// Section 5 and (108): the positive root `x* = (-b + sqrt(b^2 + 12 * m_o * S)) / (6 * m_o)`
/// where `Pi` is stationary, with `S` and `b` of `form`. The specification's `b` (`m_o`, or
/// `m_o + alpha*lambda*V`) assumes `mu_m = 0`; with the master's own time the stationary
/// condition is `3*m_o*x^2 + (b + mu_m)*x - S = 0` (108), so `mu_m` adds to `b`.
pub fn performance_index_stationary_point(p: &IterationParams, form: IterationForm) -> f64 {
    let m_o = p.message_overhead;
    let (s, b) = match form {
        IterationForm::AsyncSmallMessages => (p.worker_time + p.volume_time(), m_o),
        IterationForm::Sync => (
            (1.0 - p.master_share) * p.volume_time() + p.worker_time,
            m_o + p.master_share * p.volume_time(),
        ),
    };
    let b = b + p.master_time;
    (-b + (b * b + 12.0 * m_o * s).sqrt()) / (6.0 * m_o)
}

/// What a number of workers is chosen for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerObjective {
    /// The fastest iteration: the smallest `Tt(n)`.
    Time,
    /// The cheapest count for its time: the smallest performance index `Pi(n)`.
    PerformanceIndex,
}

/// The whole number of workers in `1..=max_workers` that minimises `objective` for the
/// asynchronous small-message form, each count `n` evaluated with the parameters
/// `params_at(n)` (a volume that depends on `n`, say); the smaller count on a tie. With
/// constant parameters it is [`optimal_workers_async`] (time) or
/// [`workers_minimising_performance_index`] (performance index), capped at `max_workers`.
pub fn best_worker_count(
    max_workers: u64,
    objective: WorkerObjective,
    params_at: impl Fn(u64) -> IterationParams,
) -> u64 {
    let score = |n: u64| {
        let p = params_at(n);
        let time = iteration_time_async_small_messages(&p, n as f64);
        match objective {
            WorkerObjective::Time => time,
            WorkerObjective::PerformanceIndex => performance_index(n as f64, time, p.worker_time),
        }
    };
    let mut best = (1, score(1));
    for n in 2..=max_workers.max(1) {
        let s = score(n);
        if s < best.1 {
            best = (n, s);
        }
    }
    best.0
}

/// Section 5: the whole number of workers minimising `Pi` — the floor or the ceiling of `x*`,
/// whichever gives the smaller `Pi` (at least 1).
pub fn workers_minimising_performance_index(p: &IterationParams, form: IterationForm) -> u64 {
    let x = performance_index_stationary_point(p, form);
    let time = |n: f64| match form {
        IterationForm::AsyncSmallMessages => iteration_time_async_small_messages(p, n),
        IterationForm::Sync => iteration_time_sync(p, n),
    };
    let index = |n: u64| performance_index(n as f64, time(n as f64), p.worker_time);
    let low = (x.floor() as u64).max(1);
    let high = (x.ceil() as u64).max(1);
    if index(high) < index(low) {
        high
    } else {
        low
    }
}

/// Section 5: the most workers the master can feed (asynchronous, small messages),
/// `floor(sqrt(m_o^2 + m_o * ((1 - alpha) * lambda * V + Tc)) / m_o + 1)`.
pub fn max_workers_fed(p: &IterationParams) -> u64 {
    let m_o = p.message_overhead;
    ((m_o * m_o + m_o * ((1.0 - p.master_share) * p.volume_time() + p.worker_time)).sqrt() / m_o
        + 1.0)
        .floor() as u64
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The test vector of section 5: m_o = 1 ms, lambda = 0.001 ms/byte, V = 4096 bytes,
    /// Tc = 1600 ms, mu_m = 0.
    pub(crate) fn vector() -> IterationParams {
        IterationParams {
            message_overhead: 1.0,
            time_per_byte: 0.001,
            volume: 4096.0,
            master_share: 0.0,
            worker_time: 1600.0,
            master_time: 0.0,
        }
    }

    #[test]
    fn first_form_matches_the_test_vector() {
        let p = vector();
        for (n, expected) in [
            (15.0, 122.939733),
            (20.0, 101.2048),
            (30.0, 84.469867),
            (40.0, 81.1024),
        ] {
            let t = iteration_time_async_small_messages(&p, n);
            assert!(
                (t - expected).abs() < 1e-6,
                "Tt({n}) = {t}, expected {expected}"
            );
        }
        assert_eq!(optimal_workers_async(&p), 40);
    }

    #[test]
    fn performance_index_is_smallest_at_23() {
        let p = vector();
        let x = performance_index_stationary_point(&p, IterationForm::AsyncSmallMessages);
        assert!(x > 22.0 && x < 23.0, "{x}");
        assert_eq!(
            workers_minimising_performance_index(&p, IterationForm::AsyncSmallMessages),
            23
        );
        // and 23 is the minimum over all whole numbers of workers
        let pi = |n: u64| {
            performance_index(
                n as f64,
                iteration_time_async_small_messages(&p, n as f64),
                p.worker_time,
            )
        };
        assert!((1..200).all(|n| pi(23) <= pi(n)));
    }

    #[test]
    fn other_forms_and_the_feeding_limit() {
        let mut p = vector();
        // with alpha = 0 the synchronous form equals the first one
        assert!(
            (iteration_time_sync(&p, 20.0) - iteration_time_async_small_messages(&p, 20.0)).abs()
                < 1e-12
        );
        // large messages, alpha = 0.5: 2 + (19*0.5 + 1) * 4.096 / 20 + 80 = 84.1504
        p.master_share = 0.5;
        assert!((iteration_time_async_large_messages(&p, 20.0) - 84.1504).abs() < 1e-9);
        // synchronous, alpha = 0.5: 21 + 2.1504 + 80 = 103.1504
        assert!((iteration_time_sync(&p, 20.0) - 103.1504).abs() < 1e-9);
        // the synchronous minimiser is the best whole number too
        let best = workers_minimising_performance_index(&p, IterationForm::Sync);
        let pi = |n: u64| performance_index(n as f64, iteration_time_sync(&p, n as f64), 1600.0);
        assert!((1..200).all(|n| pi(best) <= pi(n)), "{best}");
        // feeding limit, alpha = 0: floor(sqrt(1 + 1604.096) + 1) = 41
        assert_eq!(max_workers_fed(&vector()), 41);
    }

    #[test]
    fn the_best_count_by_evaluation_agrees_with_the_closed_forms() {
        let p = vector();
        let time = best_worker_count(200, WorkerObjective::Time, |_| p);
        assert_eq!(time, optimal_workers_async(&p));
        assert_eq!(time, 40);
        let pi = best_worker_count(200, WorkerObjective::PerformanceIndex, |_| p);
        assert_eq!(pi, 23);
        // capped by the workers there are
        assert_eq!(best_worker_count(16, WorkerObjective::Time, |_| p), 16);
        assert_eq!(best_worker_count(1, WorkerObjective::Time, |_| p), 1);
    }

    #[test]
    fn the_masters_own_time_moves_the_performance_index_minimum_down() {
        // (108): with mu_m = 50 ms, 3*x^2 + 51*x - 1604.096 = 0 gives x* = 16.14 (vs 22.95);
        // the whole-number evaluation agrees.
        let mut p = vector();
        p.master_time = 50.0;
        let x = performance_index_stationary_point(&p, IterationForm::AsyncSmallMessages);
        let expected = (-51.0 + (51.0f64 * 51.0 + 12.0 * 1604.096).sqrt()) / 6.0;
        assert!(
            (x - expected).abs() < 1e-9 && (x - 16.14).abs() < 0.01,
            "{x}"
        );
        let best = best_worker_count(200, WorkerObjective::PerformanceIndex, |_| p);
        assert_eq!(
            best,
            workers_minimising_performance_index(&p, IterationForm::AsyncSmallMessages)
        );
        assert_eq!(best, 16);
    }
}
