//! An N-body simulation in steps (`nbody`): an iterative application ([`hmw::Iterative`]).
//!
//! Each step is one iteration. The master divides the bodies into one contiguous block per
//! active worker; a task carries every body's position and mass (a body's acceleration
//! depends on all of them) and its block's velocities, and its result is the block's new
//! positions and velocities (symplectic Euler: `v += a*dt`, then `x += v*dt`, gravity softened
//! by `softening`). The master gathers the blocks into the next state and, at the barrier,
//! makes it current. The volume of a step therefore grows with the number of workers (each
//! receives the whole state), while the computation divides among them: the trade-off the
//! number-of-workers tuner (`[run] tune_workers`) settles.
//!
//! Verification: the master runs the same steps alone ([`step_block`] over all the bodies) and
//! compares bit for bit. A body's update sums the other bodies in index order whatever block
//! it is in, so any division gives the same bits.
//!
//! `pair_ns` emulates a slower host: a task lasts at least `block * bodies * pair_ns`
//! nanoseconds (divided by the worker's `speed=`), sleeping what its computation did not take,
//! so that workers sharing one machine behave as hosts of their own.

use std::time::{Duration, Instant};

use hmw::{Iterations, Iterative, Task, TaskResult, WorkerContext};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The `[application]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Settings {
    /// Number of bodies.
    bodies: usize,
    /// Steps (iterations).
    steps: u64,
    /// Time step.
    dt: f64,
    /// Softening length.
    softening: f64,
    /// Seed of the initial state.
    seed: u64,
    /// Emulated nanoseconds per pair interaction (0: the computation's own time).
    pair_ns: f64,
    /// Check against the same steps run in one process.
    verify: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            bodies: 512,
            steps: 24,
            dt: 1e-3,
            softening: 0.05,
            seed: 1,
            pair_ns: 0.0,
            verify: true,
        }
    }
}

impl Settings {
    fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            (2..=1_000_000).contains(&self.bodies),
            "[application] bodies = {}: expected 2 to 1000000",
            self.bodies
        );
        anyhow::ensure!(
            self.steps >= 1,
            "[application] steps = 0: expected at least 1"
        );
        for (key, value) in [("dt", self.dt), ("softening", self.softening)] {
            anyhow::ensure!(
                value.is_finite() && value > 0.0,
                "[application] {key} = {value}: expected a number > 0"
            );
        }
        anyhow::ensure!(
            self.pair_ns.is_finite() && (0.0..=1e9).contains(&self.pair_ns),
            "[application] pair_ns = {}: expected nanoseconds in [0, 1e9]",
            self.pair_ns
        );
        Ok(())
    }
}

/// The state of every body.
#[derive(Debug, Clone, PartialEq)]
struct State {
    /// x, y, z of each body.
    positions: Vec<f64>,
    velocities: Vec<f64>,
    masses: Vec<f64>,
}

impl State {
    /// Bodies in the unit cube at rest, masses in [0.5, 1.5) / n, drawn from `seed`.
    fn initial(bodies: usize, seed: u64) -> State {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let positions = (0..3 * bodies).map(|_| rng.gen::<f64>()).collect();
        let masses = (0..bodies)
            .map(|_| (0.5 + rng.gen::<f64>()) / bodies as f64)
            .collect();
        State {
            positions,
            velocities: vec![0.0; 3 * bodies],
            masses,
        }
    }
}

/// One block of one step.
#[derive(Debug, Serialize, Deserialize)]
struct Block {
    /// Index of the block's first body.
    start: usize,
    positions: Vec<f64>,
    masses: Vec<f64>,
    /// The block's velocities.
    velocities: Vec<f64>,
    dt: f64,
    softening: f64,
    pair_ns: f64,
}

/// A block's new positions and velocities.
#[derive(Debug, Serialize, Deserialize)]
struct Moved {
    start: usize,
    positions: Vec<f64>,
    velocities: Vec<f64>,
}

/// One step of the bodies `start..start + velocities.len() / 3`, given every position and
/// mass: their new positions and velocities. Body `i`'s acceleration sums the others in index
/// order, so the bits do not depend on the block.
fn step_block(
    positions: &[f64],
    masses: &[f64],
    start: usize,
    velocities: &[f64],
    dt: f64,
    softening: f64,
) -> (Vec<f64>, Vec<f64>) {
    let eps2 = softening * softening;
    let count = velocities.len() / 3;
    let mut new_positions = Vec::with_capacity(3 * count);
    let mut new_velocities = Vec::with_capacity(3 * count);
    for k in 0..count {
        let i = start + k;
        let xi = &positions[3 * i..3 * i + 3];
        let mut a = [0.0f64; 3];
        for (j, m) in masses.iter().enumerate() {
            if j == i {
                continue;
            }
            let d = [
                positions[3 * j] - xi[0],
                positions[3 * j + 1] - xi[1],
                positions[3 * j + 2] - xi[2],
            ];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + eps2;
            let f = m / (r2 * r2.sqrt());
            for c in 0..3 {
                a[c] += f * d[c];
            }
        }
        for c in 0..3 {
            let v = velocities[3 * k + c] + a[c] * dt;
            new_velocities.push(v);
            new_positions.push(xi[c] + v * dt);
        }
    }
    (new_positions, new_velocities)
}

impl Task for Block {
    type Output = Moved;

    fn execute(self, worker: &WorkerContext) -> Moved {
        let started = Instant::now();
        let (positions, velocities) = step_block(
            &self.positions,
            &self.masses,
            self.start,
            &self.velocities,
            self.dt,
            self.softening,
        );
        if self.pair_ns > 0.0 {
            let pairs = (self.velocities.len() / 3 * self.masses.len()) as f64;
            let emulated = Duration::from_secs_f64(pairs * self.pair_ns * 1e-9 / worker.speed());
            if let Some(rest) = emulated.checked_sub(started.elapsed()) {
                std::thread::sleep(rest);
            }
        }
        Moved {
            start: self.start,
            positions,
            velocities,
        }
    }

    fn operations(&self) -> f64 {
        (self.velocities.len() / 3 * self.masses.len()) as f64
    }
}

impl TaskResult for Moved {
    /// Blocks are gathered one by one: they never join.
    fn join(&mut self, other: Self) -> Result<(), Self> {
        Err(other)
    }
}

/// The simulation on the master.
struct NBody {
    settings: Settings,
    state: State,
    next: State,
}

impl NBody {
    fn new(settings: &Settings) -> anyhow::Result<Self> {
        settings.check()?;
        let state = State::initial(settings.bodies, settings.seed);
        Ok(NBody {
            settings: settings.clone(),
            next: state.clone(),
            state,
        })
    }
}

/// `bodies` split into `parts` contiguous blocks as even as can be: the start and the length
/// of each.
fn blocks(bodies: usize, parts: usize) -> impl Iterator<Item = (usize, usize)> {
    let parts = parts.clamp(1, bodies);
    (0..parts).map(move |p| {
        let start = p * bodies / parts;
        (start, (p + 1) * bodies / parts - start)
    })
}

impl Iterative for NBody {
    type Task = Block;

    fn begin(&mut self, iteration: u64, workers: usize) -> Option<Vec<Block>> {
        if iteration >= self.settings.steps {
            return None;
        }
        let s = &self.settings;
        Some(
            blocks(s.bodies, workers)
                .map(|(start, len)| Block {
                    start,
                    positions: self.state.positions.clone(),
                    masses: self.state.masses.clone(),
                    velocities: self.state.velocities[3 * start..3 * (start + len)].to_vec(),
                    dt: s.dt,
                    softening: s.softening,
                    pair_ns: s.pair_ns,
                })
                .collect(),
        )
    }

    fn gather(&mut self, _iteration: u64, _index: usize, moved: Moved) {
        let at = 3 * moved.start..3 * moved.start + moved.positions.len();
        self.next.positions[at.clone()].copy_from_slice(&moved.positions);
        self.next.velocities[at].copy_from_slice(&moved.velocities);
    }

    fn end(&mut self, _iteration: u64) {
        std::mem::swap(&mut self.state.positions, &mut self.next.positions);
        std::mem::swap(&mut self.state.velocities, &mut self.next.velocities);
    }
}

/// The same steps in one process.
fn simulate_alone(settings: &Settings) -> State {
    let mut state = State::initial(settings.bodies, settings.seed);
    for _ in 0..settings.steps {
        let (positions, velocities) = step_block(
            &state.positions,
            &state.masses,
            0,
            &state.velocities,
            settings.dt,
            settings.softening,
        );
        state.positions = positions;
        state.velocities = velocities;
    }
    state
}

fn finish(problem: Iterations<NBody>, stats: &hmw::RunStats) -> anyhow::Result<()> {
    let nbody = problem.into_inner();
    let s = &nbody.settings;
    let verified = if s.verify {
        let alone = simulate_alone(s);
        anyhow::ensure!(
            alone == nbody.state,
            "the state after {} steps differs from the same steps run in one process",
            s.steps
        );
        "true"
    } else {
        "skipped"
    };
    let workers: Vec<String> = stats
        .iterations
        .iter()
        .map(|it| it.workers.to_string())
        .collect();
    println!(
        "nbody bodies={} steps={} verified={verified} workers_per_step={}",
        s.bodies,
        stats.iterations.len(),
        workers.join(",")
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    hmw::run(
        |settings: &Settings| Ok(Iterations::new(NBody::new(settings)?)),
        finish,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmw::Problem;

    #[test]
    fn blocks_cover_the_bodies_once() {
        for (bodies, parts) in [(10, 3), (7, 7), (5, 9), (512, 8)] {
            let b: Vec<_> = blocks(bodies, parts).collect();
            assert_eq!(b.len(), parts.min(bodies));
            assert_eq!(b[0].0, 0);
            for w in b.windows(2) {
                assert_eq!(w[0].0 + w[0].1, w[1].0);
            }
            let last = b.last().unwrap();
            assert_eq!(last.0 + last.1, bodies);
            assert!(b.iter().all(|&(_, len)| len >= 1));
        }
    }

    #[test]
    fn any_division_gives_the_same_bits_as_one_process() {
        let settings = Settings {
            bodies: 37,
            steps: 4,
            ..Settings::default()
        };
        let alone = simulate_alone(&settings);
        for workers in [1, 2, 5] {
            let mut p = Iterations::new(NBody::new(&settings).unwrap());
            p.set_active_workers(workers);
            let mut id = 0;
            let context = WorkerContext::localhost();
            while let Some(task) = p.next_task() {
                p.gather(id, task.execute(&context));
                id += 1;
            }
            assert_eq!(id, 4 * workers as u64);
            assert_eq!(p.into_inner().state, alone, "{workers} workers");
        }
        // The bodies moved.
        assert_ne!(alone, State::initial(37, 1));
    }

    #[test]
    fn bad_settings_name_the_key() {
        let bad = Settings {
            pair_ns: -1.0,
            ..Settings::default()
        };
        let e = NBody::new(&bad).err().unwrap().to_string();
        assert!(e.contains("pair_ns = -1"), "{e}");
    }
}
