//! `hmw`: run a master-worker application on one MPI cluster, or across several clusters
//! joined by a WAN.
//!
//! An application implements [`Task`] (what a worker executes), [`TaskResult`] (what comes
//! back, and how two results join) and [`Problem`] (the whole job: the tasks, in order, and
//! what to do with each result), then calls [`run`] from its `main`. Every rank of every
//! cluster starts the same binary; its line in the machine file says which role it plays
//! (master, worker, communication manager, sub-master). [`App`] adds a splitter (how an
//! external cluster re-splits tasks) or a [`Scheduler`] of its own; [`Iterations`] runs a
//! problem made of rounds.
//!
//! ```no_run
//! use hmw::{Problem, Task, TaskId, TaskResult, WorkerContext};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Square(u64);
//! #[derive(Serialize, Deserialize)]
//! struct Sum(u64);
//!
//! impl Task for Square {
//!     type Output = Sum;
//!     fn execute(self, _: &WorkerContext) -> Sum {
//!         Sum(self.0 * self.0)
//!     }
//! }
//! impl TaskResult for Sum {
//!     fn join(&mut self, other: Self) -> Result<(), Self> {
//!         self.0 += other.0;
//!         Ok(())
//!     }
//! }
//!
//! struct Squares { next: u64, sum: u64 }
//! impl Problem for Squares {
//!     type Task = Square;
//!     fn next_task(&mut self) -> Option<Square> {
//!         (self.next < 100).then(|| { self.next += 1; Square(self.next) })
//!     }
//!     fn gather(&mut self, _: TaskId, result: Sum) {
//!         self.sum += result.0;
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     hmw::run(
//!         |_settings: &toml::Table| Ok(Squares { next: 0, sum: 0 }),
//!         |squares, _stats| { println!("sum of squares = {}", squares.sum); Ok(()) },
//!     )
//! }
//! ```
//!
//! This crate's public surface is what an application needs, and nothing else: it is listed
//! in `framework/api.txt`, which a test keeps in step. The runtime's parts live in their own
//! crates: `hmw-core` (the traits, the protocol, the roles' cores, schedulers, machine files,
//! configuration; no I/O), `hmw-transport` (messages between a cluster's ranks), `hmw-cm`
//! (the long-distance link). See `docs/architecture.md`.

mod builder;
mod drivers;
mod error;
mod journal;
mod placement;
mod runner;
#[cfg(test)]
mod tests;

/// The Rust blocks of the README and the guide, compiled as documentation tests.
#[cfg(doctest)]
mod documents {
    #[doc = include_str!("../../README.md")]
    struct Readme;
    #[doc = include_str!("../../docs/guide/writing-an-application.md")]
    struct WritingAnApplication;
}

pub use builder::App;
pub use error::RunError;
pub use hmw_core::{
    app::{Handout, Problem, Recipient, Split, Splitter, Task, TaskId, TaskResult, WorkerContext},
    iterative::{Iterations, Iterative},
    scheduler::{ChunkSettings, Demand, Policy, Requester, Scheduler, Waiting},
    stats::RunStats,
};
pub use runner::{run, run_split};

/// The bytes `value` takes as a message between ranks (bincode, as hmw encodes tasks and
/// results): what an application reports as its task and result sizes, for the model.
pub fn wire_size<T: serde::Serialize>(value: &T) -> usize {
    hmw_core::protocol::encode(value).len()
}
