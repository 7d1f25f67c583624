//! `hmw-core`: everything of hmw that decides, and nothing that waits or talks.
//!
//! The application's traits ([`app`], [`iterative`]), the messages between roles and their
//! encoding ([`protocol`]), the roles' cores ([`roles`]: master, sub-master, worker, both
//! sides of a communication manager, each a state machine that takes messages and the time
//! and returns what to send and when to wake it), the schedulers ([`scheduler`]), machine
//! files ([`machinefile`]), the run's configuration ([`config`]), and what the cores use
//! besides: re-planning decisions ([`adapt`]), the number-of-workers tuner ([`tuner`]), the
//! estimate of the work left ([`estimator`]), the live prediction ([`live`]) and the
//! statistics records ([`stats`]).
//!
//! No MPI, no tokio, no QUIC or TLS: the compiler keeps I/O out. The crate `hmw` drives these
//! cores over MPI and threads; the crate `hmw-sim` drives them in virtual time.

pub mod adapt;
pub mod app;
pub mod config;
pub mod cpu_clock;
pub mod error;
pub mod estimator;
pub mod iterative;
pub mod journal;
pub mod live;
pub mod live_feed;
pub mod logging;
pub mod machinefile;
pub mod protocol;
pub mod roles;
pub mod scheduler;
pub mod spare;
pub mod stats;
pub mod tuner;

pub use app::{
    Handout, Problem, Recipient, Split, Splitter, Task, TaskId, TaskResult, WorkerContext,
};
pub use error::CoreError;
pub use iterative::{Iterations, Iterative};
pub use stats::RunStats;
