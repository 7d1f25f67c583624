//! An application with a scheduler of its own. Tasks count the primes in small ranges; tiny
//! tasks one per message would cost more in messages than in computing, so the scheduler
//! gives each worker batches that hold about [`BATCH_S`] of its work, from the task times it
//! has measured on that worker (one task at a time until it has measured one). Whom to serve
//! next stays the default: the worker holding the fewest tasks, then the oldest request.
//! The master checks the count against a sieve.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use hmw::{App, Demand, Problem, Scheduler, Task, TaskId, TaskResult, WorkerContext};
use serde::{Deserialize, Serialize};

/// The work a batch holds, seconds.
const BATCH_S: f64 = 0.02;

/// A task: count the primes in `from..to`.
#[derive(Serialize, Deserialize)]
struct Span(u64, u64);
/// Its result: how many there are.
#[derive(Serialize, Deserialize)]
struct Count(u64);

fn is_prime(n: u64) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0)
}

impl Task for Span {
    type Output = Count;
    fn execute(self, _worker: &WorkerContext) -> Count {
        Count((self.0..self.1).filter(|&n| is_prime(n)).count() as u64)
    }
}

impl TaskResult for Count {
    fn join(&mut self, other: Count) -> Result<(), Count> {
        self.0 += other.0;
        Ok(())
    }
}

/// The `[application]` table; on the master, the whole job: the primes below `n`, in spans
/// of `span` numbers.
#[derive(Clone, Default, Deserialize)]
#[serde(default)]
struct Primes {
    n: u64,
    span: u64,
    next: u64,
    count: u64,
}

impl Problem for Primes {
    type Task = Span;
    fn next_task(&mut self) -> Option<Span> {
        let from = self.next;
        self.next = (from + self.span.max(1)).min(self.n);
        (from < self.n).then_some(Span(from, self.next))
    }
    fn gather(&mut self, _id: TaskId, result: Count) {
        self.count += result.0;
    }
    fn task_count(&self) -> Option<u64> {
        Some(self.n.div_ceil(self.span.max(1)))
    }
}

/// Batches of about [`BATCH_S`] of a worker's work, from the mean time of the tasks it
/// computed so far; counts the batches it sized in `batches`.
struct TimedBatches {
    /// Per worker: tasks measured and their total busy seconds.
    measured: HashMap<usize, (u64, f64)>,
    batches: Arc<AtomicU64>,
}

impl Scheduler for TimedBatches {
    fn batch_size(&mut self, demand: &Demand) -> usize {
        self.batches.fetch_add(1, Ordering::Relaxed);
        match self.measured.get(&demand.worker) {
            Some(&(tasks, busy_s)) if busy_s > 0.0 => {
                let mean_s = busy_s / tasks as f64;
                // Never more than a fair share of what is left, so the end stays balanced.
                let fair = demand
                    .remaining
                    .map_or(u64::MAX, |r| r / demand.workers as u64);
                ((BATCH_S / mean_s) as u64).clamp(1, fair.max(1)) as usize
            }
            _ => 1,
        }
    }

    fn observe(&mut self, worker: usize, busy_s: f64) {
        let (tasks, total) = self.measured.entry(worker).or_default();
        *tasks += 1;
        *total += busy_s;
    }
}

/// The primes below `n`, by the sieve of Eratosthenes.
fn sieve(n: u64) -> u64 {
    let mut composite = vec![false; n as usize];
    let mut count = 0;
    for i in 2..n as usize {
        if !composite[i] {
            count += 1;
            (i * i..n as usize)
                .step_by(i)
                .for_each(|j| composite[j] = true);
        }
    }
    count
}

fn main() -> std::process::ExitCode {
    let batches = Arc::new(AtomicU64::new(0));
    let sized = Arc::clone(&batches);
    App::new(|settings: &Primes| Ok(settings.clone()))
        .scheduler(move |_run| {
            Box::new(TimedBatches {
                measured: HashMap::new(),
                batches: Arc::clone(&sized),
            })
        })
        .run(|primes, stats| {
            let verified = primes.count == sieve(primes.n);
            let batches = batches.load(Ordering::Relaxed);
            println!(
                "custom_scheduler primes={} tasks={} batches={batches} verified={verified} \
                 makespan_s={:.3}",
                primes.count, stats.tasks, stats.wall_s
            );
            anyhow::ensure!(
                verified,
                "{} primes below {}: wrong",
                primes.count,
                primes.n
            );
            Ok(())
        })
}
