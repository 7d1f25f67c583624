//! `hmw`: the runtime of a hierarchical multi-cluster master-worker application.
//!
//! Inside a cluster a master hands tasks to workers over MPI; between clusters communication
//! managers bridge MPI jobs over QUIC (crate `hmw-cm`). An application implements the traits
//! of [`app`] and calls [`run`]; every rank then plays the role its machine-file line gives it
//! ([`roles`], each a driver around a core of [`core`]). The analytical model is the crate `hmw-model`, the `hmw` command the crate
//! `hmw-cli`.
//!
//! See `docs/architecture.md` for the system as built.

pub mod adapt;
pub mod app;
mod builder;
pub mod config;
pub mod core;
pub mod cpu_clock;
pub mod error;
pub mod estimator;
pub mod idle;
pub mod iterative;
pub mod live;
pub mod machinefile;
pub mod placement;
pub mod protocol;
pub mod roles;
pub mod runner;
pub mod scheduler;
mod spare;
pub mod stats;
pub mod transport;
pub mod tuner;

pub use app::{
    Handout, Problem, Recipient, Split, Splitter, Task, TaskId, TaskResult, WorkerContext,
};
pub use builder::App;
pub use error::RunError;
pub use iterative::{Iterations, Iterative};
pub use runner::{run, run_split};
pub use stats::RunStats;
