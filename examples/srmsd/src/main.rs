//! Stochastic resonance in a ring of delay-coupled bistable oscillators (`srmsd`): the
//! ensemble-averaged power spectral density of one oscillator.
//!
//! The model, for i = 0..N-1 (indices mod N):
//!
//! ```text
//! dx_i = (x_i - x_i^3 + c x_{i-1}(t - tau) + A cos(omega t) [i = 0 and t < t_off]) dt
//!        + sqrt(2 D) dW_i
//! ```
//!
//! Integrated by Euler–Maruyama with step dt, for `steps` steps (see [`simulate`]). The delay
//! is `tau / dt` steps exactly (a whole number, checked), read from a ring buffer of past
//! states; before t = 0 the history is the initial condition, drawn uniformly in [-1.5, 1.5].
//!
//! A task is one ensemble member k (the seed of its random numbers derives from (seed, k)); its
//! result is the power spectral density of x_0 summed over the run's windows, kept apart for
//! windows with the stimulus on and off ([`Spectra`]). Results join by adding, so an external
//! cluster's sub-master can join several before they cross the WAN; the master adds them all
//! and divides by the number of windows at the end.

use std::f64::consts::PI;

use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rustfft::{num_complex::Complex, FftPlanner};
use serde::{Deserialize, Serialize};

/// The model's parameters: what a worker needs to simulate a member.
///
/// The defaults put the stimulus line clearly on top of the spectrum while it is on: with
/// D = 0.02 the oscillators rarely hop between the wells, so the low frequencies (the hops, the
/// ring's slow modes, the relaxation from the initial condition) stay below the line at
/// 0.5 cycles per time unit (A = 0.6: about 2.7 times bin 1 over 8 members; 0.3 or D = 0.05
/// let bin 1 win).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Model {
    /// Oscillators in the ring.
    n: usize,
    /// Coupling strength.
    c: f64,
    /// Delay of the coupling, in time units (a whole number of steps).
    tau: f64,
    /// Amplitude of the periodic stimulus, applied to oscillator 0.
    a: f64,
    /// Angular frequency of the stimulus (radians per time unit).
    omega: f64,
    /// Time the stimulus is switched off.
    t_off: f64,
    /// Noise intensity.
    d: f64,
    /// Time step.
    dt: f64,
    /// Steps per member.
    steps: usize,
    /// Samples per spectrum window (non-overlapping windows).
    window: usize,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            n: 8,
            c: 0.2,
            tau: 0.5,
            a: 0.6,
            omega: PI, // 0.5 cycles per time unit: bin 5 of a 1000-sample window at dt = 0.01
            t_off: 100.0,
            d: 0.02,
            dt: 0.01,
            steps: 20_000,
            window: 1000,
        }
    }
}

/// The `[application]` table: the model's parameters (defaults of [`Model`]) and the run's.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    n: usize,
    c: f64,
    tau: f64,
    a: f64,
    omega: f64,
    t_off: f64,
    d: f64,
    dt: f64,
    steps: usize,
    window: usize,
    /// Ensemble members: the tasks.
    members: u64,
    /// Seed of the whole ensemble; member k's random numbers derive from (seed, k).
    seed: u64,
    /// At the end, recompute the ensemble in the master's process and check the stimulus peak.
    verify: bool,
}

impl Default for Settings {
    fn default() -> Self {
        let m = Model::default();
        Settings {
            n: m.n,
            c: m.c,
            tau: m.tau,
            a: m.a,
            omega: m.omega,
            t_off: m.t_off,
            d: m.d,
            dt: m.dt,
            steps: m.steps,
            window: m.window,
            members: 64,
            seed: 1,
            verify: true,
        }
    }
}

/// The most steps we accept: keeps every derived count in range (a run keeps one window of
/// samples, not the whole run).
const MAX_STEPS: usize = 1 << 40;
/// The most oscillator states the delay's ring buffer may hold (8 bytes each).
const MAX_HISTORY: f64 = 1e8;

impl Settings {
    fn model(&self) -> Model {
        Model {
            n: self.n,
            c: self.c,
            tau: self.tau,
            a: self.a,
            omega: self.omega,
            t_off: self.t_off,
            d: self.d,
            dt: self.dt,
            steps: self.steps,
            window: self.window,
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        let m = &self.model();
        let finite = [
            ("c", m.c),
            ("tau", m.tau),
            ("a", m.a),
            ("omega", m.omega),
            ("t_off", m.t_off),
            ("d", m.d),
            ("dt", m.dt),
        ];
        for (key, value) in finite {
            anyhow::ensure!(
                value.is_finite(),
                "[application] {key} = {value} must be finite"
            );
        }
        anyhow::ensure!(
            (1..=1_000_000).contains(&m.n),
            "[application] n = {} must be between 1 and 1000000",
            m.n
        );
        anyhow::ensure!(m.dt > 0.0, "[application] dt = {} must be positive", m.dt);
        anyhow::ensure!(m.d >= 0.0, "[application] d = {} must be >= 0", m.d);
        anyhow::ensure!(m.tau >= 0.0, "[application] tau = {} must be >= 0", m.tau);
        let delay = m.tau / m.dt;
        anyhow::ensure!(
            (delay - delay.round()).abs() <= 1e-6 * delay.max(1.0) && delay.round() < 1e8,
            "[application] tau = {} must be a whole number of steps of dt = {} (below 1e8 steps)",
            m.tau,
            m.dt
        );
        anyhow::ensure!(
            (delay.round() + 1.0) * m.n as f64 <= MAX_HISTORY,
            "[application] tau = {}: the delay's history, (tau / dt + 1) * n = {} states, must \
             be at most {MAX_HISTORY:e} (memory)",
            m.tau,
            (delay.round() + 1.0) * m.n as f64
        );
        anyhow::ensure!(
            m.window >= 4 && m.window <= 1 << 24,
            "[application] window = {} must be between 4 and 2^24 samples",
            m.window
        );
        anyhow::ensure!(
            m.steps >= m.window && m.steps <= MAX_STEPS,
            "[application] steps = {} must be between window = {} and {MAX_STEPS}",
            m.steps,
            m.window
        );
        anyhow::ensure!(
            m.omega >= 0.0 && m.omega < PI / m.dt,
            "[application] omega = {} must be in [0, pi / dt = {}) (below the Nyquist frequency)",
            m.omega,
            PI / m.dt
        );
        anyhow::ensure!(
            self.members >= 1,
            "[application] members = {} must be at least 1",
            self.members
        );
        if self.verify && m.a != 0.0 {
            anyhow::ensure!(
                m.windows().0 >= 1,
                "[application] t_off = {} leaves no whole window of window = {} samples with the \
                 stimulus on (verify = true looks for its peak there)",
                m.t_off,
                m.window
            );
        }
        Ok(())
    }
}

impl Model {
    /// The delay in steps.
    fn delay_steps(&self) -> usize {
        (self.tau / self.dt).round() as usize
    }

    /// Steps with the stimulus on: those that start before t_off, 0..ceil(t_off / dt) (a
    /// t_off within 1e-9 steps of a step's start counts as that step's start, so that
    /// t_off = 20, dt = 0.01 means 2000 steps whatever the rounding).
    fn steps_on(&self) -> usize {
        let steps = (self.t_off / self.dt - 1e-9).ceil();
        if steps <= 0.0 {
            0
        } else {
            (steps as usize).min(self.steps)
        }
    }

    /// Kind of window `j`, the samples recorded after steps j*W .. (j+1)*W - 1: `Some(true)`
    /// when the stimulus acted in all those steps, `Some(false)` when in none, `None` when it
    /// was switched off inside the window (then the window is left out).
    fn window_kind(&self, j: usize) -> Option<bool> {
        let (first, end) = (j * self.window, (j + 1) * self.window);
        let on = self.steps_on();
        if end <= on {
            Some(true)
        } else if first >= on {
            Some(false)
        } else {
            None
        }
    }

    /// Windows with the stimulus on and off in one member's run.
    fn windows(&self) -> (u64, u64) {
        let (mut on, mut off) = (0, 0);
        for j in 0..self.steps / self.window {
            match self.window_kind(j) {
                Some(true) => on += 1,
                Some(false) => off += 1,
                None => {}
            }
        }
        (on, off)
    }

    /// Frequency of bin `k` of a window, in cycles per time unit.
    fn bin_hz(&self, k: usize) -> f64 {
        k as f64 / (self.window as f64 * self.dt)
    }
}

/// The random numbers of member `k`: ChaCha8 seeded from `seed`, stream `k` (portable and
/// reproducible across platforms and rand versions, unlike `StdRng`).
fn member_rng(seed: u64, k: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(k);
    rng
}

/// The drift of oscillator `i`: x - x^3 + c x_delayed + stimulus.
fn drift(model: &Model, x: f64, delayed_left: f64, stimulus: f64) -> f64 {
    x - x * x * x + model.c * delayed_left + stimulus
}

/// One Euler–Maruyama step of the whole ring, in place:
///
/// `x_i(t + dt) = x_i(t) + dt * drift_i(t) + sqrt(2 D dt) * xi_i`, xi_i ~ N(0, 1),
///
/// with drift_i = x_i - x_i^3 + c * delayed[i-1] + [i = 0] * stimulus. `delayed` is the state
/// `tau` earlier (the current state when tau = 0), `noise` the N(0, 1) draws of this step.
fn euler_step(model: &Model, x: &mut [f64], delayed: &[f64], stimulus: f64, noise: &[f64]) {
    // In place: oscillator i reads only its own state and the delayed copy.
    let n = x.len();
    let amplitude = (2.0 * model.d * model.dt).sqrt();
    for i in 0..n {
        let left = delayed[(i + n - 1) % n];
        let s = if i == 0 { stimulus } else { 0.0 };
        x[i] += model.dt * drift(model, x[i], left, s) + amplitude * noise[i];
    }
}

/// Simulate member `k`, handing `sample` x_0 after each step, at t = (m + 1) * dt for step
/// m = 0..steps-1 (one window at a time is kept by the caller, not the whole run).
///
/// The ring buffer holds the last `delay + 1` states; the state `delay` steps back is at the
/// slot the step is about to overwrite. Before t = 0 every slot is the initial condition.
fn simulate(model: &Model, seed: u64, k: u64, mut sample: impl FnMut(f64)) {
    let mut rng = member_rng(seed, k);
    let n = model.n;
    let mut x: Vec<f64> = (0..n).map(|_| rng.gen_range(-1.5..1.5)).collect();
    let slots = model.delay_steps() + 1;
    let steps_on = model.steps_on();
    // history[s * n .. (s+1) * n]: the state at step m, for m = s (mod slots).
    let mut history: Vec<f64> = x.iter().copied().cycle().take(slots * n).collect();
    let mut noise = vec![0.0; n];
    let mut delayed = vec![0.0; n];
    for step in 0..model.steps {
        // The state at step - delay: the slot this step overwrites, (step - delay) mod
        // (delay + 1); before t = 0 it still holds the initial condition.
        let slot = (step + 1) % slots;
        delayed.copy_from_slice(&history[slot * n..(slot + 1) * n]);
        for z in noise.iter_mut() {
            *z = rng.sample(StandardNormal);
        }
        let stimulus = if step < steps_on {
            model.a * (model.omega * step as f64 * model.dt).cos()
        } else {
            0.0
        };
        euler_step(model, &mut x, &delayed, stimulus, &noise);
        let store = (step + 1) % slots;
        history[store * n..(store + 1) * n].copy_from_slice(&x);
        sample(x[0]);
    }
}

/// One-sided power spectral density of `samples` (one window) under a Hann window:
///
/// `P_k = c_k * dt / U * |sum_n w_n s_n e^{-2 pi i k n / W}|^2`, k = 0..=W/2,
///
/// with w_n = 0.5 (1 - cos(2 pi n / W)) (periodic Hann), U = sum w_n^2, c_0 = 1, c_k = 2 for
/// 0 < k < W/2 and c_{W/2} = 1 when W is even (the negative frequencies folded in), s_n the
/// samples less their mean over the window: an oscillator sits near +1 or -1 for long
/// stretches, and without this the Hann window leaks that mean into bin 1. Units: x^2 per unit
/// of frequency (cycles per time unit).
fn psd(planner: &mut FftPlanner<f64>, samples: &[f64], dt: f64) -> Vec<f64> {
    let w = samples.len();
    let window = |n: usize| 0.5 * (1.0 - (2.0 * PI * n as f64 / w as f64).cos());
    let u: f64 = (0..w).map(|n| window(n).powi(2)).sum();
    let mean = samples.iter().sum::<f64>() / w as f64;
    let mut buffer: Vec<Complex<f64>> = samples
        .iter()
        .enumerate()
        .map(|(n, s)| Complex::new((s - mean) * window(n), 0.0))
        .collect();
    planner.plan_fft_forward(w).process(&mut buffer);
    (0..=w / 2)
        .map(|k| {
            let fold = if k == 0 || 2 * k == w { 1.0 } else { 2.0 };
            fold * dt / u * buffer[k].norm_sqr()
        })
        .collect()
}

/// A member to simulate.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Member {
    k: u64,
    seed: u64,
    model: Model,
}

/// Spectra of x_0 summed over windows (and, once joined, over members).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Spectra {
    /// Members summed.
    members: u64,
    /// Sum of the PSDs of the windows with the stimulus on, and their count.
    on: Vec<f64>,
    windows_on: u64,
    /// The same with the stimulus off.
    off: Vec<f64>,
    windows_off: u64,
}

impl Spectra {
    fn empty(bins: usize) -> Self {
        Spectra {
            members: 0,
            on: vec![0.0; bins],
            windows_on: 0,
            off: vec![0.0; bins],
            windows_off: 0,
        }
    }

    /// Add `other` in: spectra, window and member counts.
    fn add(&mut self, other: &Spectra) {
        for (a, b) in self.on.iter_mut().zip(&other.on) {
            *a += b;
        }
        for (a, b) in self.off.iter_mut().zip(&other.off) {
            *a += b;
        }
        self.windows_on += other.windows_on;
        self.windows_off += other.windows_off;
        self.members += other.members;
    }

    /// Mean PSD with the stimulus on and off (zeros where there is no window).
    fn means(&self) -> (Vec<f64>, Vec<f64>) {
        let mean = |sum: &[f64], count: u64| {
            sum.iter()
                .map(|v| v / (count.max(1) as f64))
                .collect::<Vec<_>>()
        };
        (
            mean(&self.on, self.windows_on),
            mean(&self.off, self.windows_off),
        )
    }
}

/// The spectra of member `k`: each whole window's PSD, into `on` or `off` (see
/// [`Model::window_kind`]; the samples after the last whole window are left out).
fn member_spectra(model: &Model, seed: u64, k: u64) -> Spectra {
    let mut planner = FftPlanner::new();
    let mut spectra = Spectra::empty(model.window / 2 + 1);
    spectra.members = 1;
    let mut window = Vec::with_capacity(model.window);
    let mut j = 0;
    simulate(model, seed, k, |x0| {
        window.push(x0);
        if window.len() < model.window {
            return;
        }
        let kind = model.window_kind(j);
        j += 1;
        let (sum, count) = match kind {
            Some(true) => (&mut spectra.on, &mut spectra.windows_on),
            Some(false) => (&mut spectra.off, &mut spectra.windows_off),
            None => {
                window.clear();
                return;
            }
        };
        for (a, p) in sum.iter_mut().zip(psd(&mut planner, &window, model.dt)) {
            *a += p;
        }
        *count += 1;
        window.clear();
    });
    spectra
}

impl Task for Member {
    type Output = Spectra;

    fn execute(self, _worker: &WorkerContext) -> Spectra {
        member_spectra(&self.model, self.seed, self.k)
    }

    /// One basic operation is one Euler–Maruyama step of one oscillator (its drift, one
    /// Gaussian draw, the update; the FFTs add about log2(window) operations per sample of
    /// x_0, under 1 % of a ring's step for N >= 8, and are not counted): N * steps per member.
    fn operations(&self) -> f64 {
        self.model.n as f64 * self.model.steps as f64
    }
}

impl TaskResult for Spectra {
    /// Spectra of the same window size add; others do not join.
    fn join(&mut self, other: Spectra) -> Result<(), Spectra> {
        if self.on.len() != other.on.len() {
            return Err(other);
        }
        self.add(&other);
        Ok(())
    }
}

/// The ensemble, on the master.
struct Ensemble {
    settings: Settings,
    next: u64,
    sum: Spectra,
    /// Serialised size of the first task, for the plan.
    task_bytes: Option<usize>,
}

impl Problem for Ensemble {
    type Task = Member;

    fn next_task(&mut self) -> Option<Member> {
        (self.next < self.settings.members).then(|| {
            let member = Member {
                k: self.next,
                seed: self.settings.seed,
                model: self.settings.model(),
            };
            self.task_bytes
                .get_or_insert_with(|| hmw::wire_size(&member));
            self.next += 1;
            member
        })
    }

    fn gather(&mut self, _id: TaskId, result: Spectra) {
        self.sum.add(&result);
    }

    fn task_count(&self) -> Option<u64> {
        Some(self.settings.members)
    }
}

/// Largest |a - b| over the largest |b|, over both spectra.
fn relative_difference(a: &Spectra, b: &Spectra) -> f64 {
    let pairs = || a.on.iter().zip(&b.on).chain(a.off.iter().zip(&b.off));
    let scale = pairs().map(|(_, y)| y.abs()).fold(0.0, f64::max);
    let diff = pairs().map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    if scale == 0.0 {
        diff
    } else {
        diff / scale
    }
}

/// Bin of the largest value, leaving out the zero frequency (the mean and the slow hops
/// between the wells sit there).
fn peak_bin(spectrum: &[f64]) -> usize {
    (1..spectrum.len())
        .max_by(|&i, &j| spectrum[i].total_cmp(&spectrum[j]))
        .unwrap_or(0)
}

/// Relative tolerance of the check against the single-process recomputation: each member's
/// spectrum is computed the same way, bit for bit, but the master adds joined sums in the order
/// results arrive, so the totals differ by rounding (a few ulps per addition).
const TOLERANCE: f64 = 1e-9;

fn finish(ensemble: Ensemble, stats: &hmw::RunStats) -> anyhow::Result<()> {
    let Ensemble {
        settings,
        sum,
        task_bytes,
        ..
    } = ensemble;
    let model = &settings.model();
    anyhow::ensure!(
        sum.members == settings.members,
        "gathered {} members of {}",
        sum.members,
        settings.members
    );
    let (on, off) = sum.means();
    let spectrum = if sum.windows_on > 0 { &on } else { &off };
    let peak = peak_bin(spectrum);
    let peak_hz = model.bin_hz(peak);
    let stimulus_hz = model.omega / (2.0 * PI);
    let verified = if settings.verify {
        let mut again = Spectra::empty(model.window / 2 + 1);
        for k in 0..settings.members {
            again.add(&member_spectra(model, settings.seed, k));
        }
        let difference = relative_difference(&sum, &again);
        anyhow::ensure!(
            difference <= TOLERANCE,
            "the ensemble's spectra differ from a single-process recomputation by {difference:e} \
             (relative, more than {TOLERANCE:e})"
        );
        if model.a != 0.0 {
            anyhow::ensure!(
                (peak_hz - stimulus_hz).abs() <= model.bin_hz(1),
                "with the stimulus on the spectrum peaks at {peak_hz} (bin {peak}), not at the \
                 stimulus frequency {stimulus_hz} = omega / 2 pi"
            );
        }
        println!(
            "srmsd check: recomputed in one process, relative difference {difference:.3e}; \
             power at the peak with the stimulus on {:.4e}, off {:.4e}",
            on[peak], off[peak]
        );
        "true"
    } else {
        "skipped"
    };
    println!(
        "srmsd sizes: task_bytes={} result_bytes={} oper={} windows_on={} windows_off={} \
         makespan_s={:.3}",
        task_bytes.unwrap_or(0),
        hmw::wire_size(&Spectra::empty(model.window / 2 + 1)),
        model.n * model.steps,
        sum.windows_on,
        sum.windows_off,
        stats.wall_s
    );
    println!(
        "srmsd members={} verified={verified} peak_hz={peak_hz:.6}",
        sum.members
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    hmw::run(
        |settings: &Settings| {
            settings.check()?;
            let bins = settings.window / 2 + 1;
            Ok(Ensemble {
                settings: settings.clone(),
                next: 0,
                sum: Spectra::empty(bins),
                task_bytes: None,
            })
        },
        finish,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Model {
        Model {
            n: 2,
            c: 0.5,
            tau: 0.0,
            a: 0.25,
            omega: 1.0,
            t_off: 1.0,
            d: 0.0,
            dt: 0.1,
            steps: 8,
            window: 4,
        }
    }

    #[test]
    fn one_euler_step_of_a_tiny_ring_matches_a_hand_computation() {
        let model = tiny();
        // x = (0.5, -1.0), delayed state = (0.2, 0.4), stimulus 0.25 on oscillator 0, D = 0.
        let mut x = vec![0.5, -1.0];
        euler_step(&model, &mut x, &[0.2, 0.4], 0.25, &[3.0, -7.0]);
        // x0: 0.5 + 0.1 * (0.5 - 0.125 + 0.5 * 0.4 + 0.25) = 0.5 + 0.1 * 0.825 = 0.5825
        // x1: -1 + 0.1 * (-1 + 1 + 0.5 * 0.2) = -1 + 0.01 = -0.99
        assert!((x[0] - 0.5825).abs() < 1e-15, "{x:?}");
        assert!((x[1] + 0.99).abs() < 1e-15, "{x:?}");
    }

    #[test]
    fn without_noise_the_first_simulated_step_is_the_euler_step() {
        // D = 0: the run is the deterministic Euler scheme; its history before t = 0 is the
        // initial condition, so the first step's delayed term is x(0) (tau > 0).
        let model = Model { tau: 0.2, ..tiny() };
        let mut samples = Vec::new();
        simulate(&model, 3, 0, |x0| samples.push(x0));
        let mut rng = member_rng(3, 0);
        let x0: Vec<f64> = (0..2).map(|_| rng.gen_range(-1.5..1.5)).collect();
        let expected = x0[0] + 0.1 * (x0[0] - x0[0].powi(3) + 0.5 * x0[1] + 0.25);
        assert!((samples[0] - expected).abs() < 1e-15);
    }

    #[test]
    fn the_spectrum_of_a_pure_sinusoid_peaks_at_its_frequency() {
        let (w, dt) = (256, 0.05);
        // 12 cycles per window: bin 12, at 12 / (256 * 0.05) cycles per time unit.
        let f = 12.0 / (w as f64 * dt);
        let samples: Vec<f64> = (0..w)
            .map(|n| (2.0 * PI * f * n as f64 * dt).sin())
            .collect();
        let p = psd(&mut FftPlanner::new(), &samples, dt);
        assert_eq!(p.len(), w / 2 + 1);
        assert_eq!(peak_bin(&p), 12);
        // Parseval (Hann, coherent sinusoid): the PSD integrates to the mean square, 1/2.
        let power: f64 = p.iter().sum::<f64>() / (w as f64 * dt);
        assert!((power - 0.5).abs() < 1e-9, "{power}");
    }

    #[test]
    fn join_adds_spectra_and_counts_members() {
        let mut a = Spectra {
            members: 1,
            on: vec![1.0, 2.0],
            windows_on: 3,
            off: vec![0.5, 0.5],
            windows_off: 1,
        };
        let b = Spectra {
            members: 2,
            on: vec![10.0, 20.0],
            windows_on: 6,
            off: vec![1.0, 2.0],
            windows_off: 2,
        };
        a.join(b).unwrap();
        assert_eq!(a.members, 3);
        assert_eq!(a.on, vec![11.0, 22.0]);
        assert_eq!(a.off, vec![1.5, 2.5]);
        assert_eq!((a.windows_on, a.windows_off), (9, 3));
        assert!(a.join(Spectra::empty(5)).is_err());
    }

    #[test]
    fn a_member_is_determined_by_its_seed() {
        let model = Model {
            steps: 4000,
            window: 500,
            t_off: 20.0,
            ..Model::default()
        };
        let a = member_spectra(&model, 7, 3);
        assert_eq!(a, member_spectra(&model, 7, 3));
        assert_ne!(a, member_spectra(&model, 7, 4));
        assert_ne!(a, member_spectra(&model, 8, 3));
        assert_eq!((a.windows_on, a.windows_off), (4, 4));
    }

    #[test]
    fn windows_straddling_t_off_are_left_out() {
        let model = Model {
            steps: 10_000,
            window: 1000,
            t_off: 25.0, // steps 0..2499 on
            ..Model::default()
        };
        let kinds: Vec<_> = (0..10).map(|j| model.window_kind(j)).collect();
        assert_eq!(&kinds[..4], &[Some(true), Some(true), None, Some(false)]);
        assert_eq!(model.windows(), (2, 7));
    }

    #[test]
    fn the_ensemble_peaks_at_the_stimulus_with_it_on() {
        let model = Model {
            steps: 10_000,
            t_off: 50.0,
            ..Model::default()
        };
        let mut sum = Spectra::empty(model.window / 2 + 1);
        for k in 0..8 {
            sum.add(&member_spectra(&model, 1, k));
        }
        let (on, off) = sum.means();
        assert_eq!(model.bin_hz(peak_bin(&on)), 0.5);
        assert!(on[5] > 10.0 * off[5], "on {} off {}", on[5], off[5]);
    }

    #[test]
    fn bad_settings_name_the_key() {
        for (text, key) in [
            ("tau = 0.005", "tau"),
            ("window = 2", "window"),
            ("steps = 10", "steps"),
            ("omega = 1000.0", "omega"),
            ("t_off = 1.0", "t_off"),
            ("members = 0", "members"),
            ("dt = 0.0", "dt"),
            ("d = -1.0", "d"),
        ] {
            let settings: Settings = toml::from_str(text).unwrap();
            let error = settings.check().unwrap_err().to_string();
            assert!(error.contains(&format!(" {key} =")), "{text}: {error}");
        }
        assert!(toml::from_str::<Settings>("nn = 3").is_err());
        let defaults: Settings = toml::from_str("").unwrap();
        defaults.check().unwrap();
    }
}
