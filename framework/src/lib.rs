//! `hmw`: a hierarchical multi-cluster master-worker framework.
//!
//! Inside a cluster a master hands tasks to workers over MPI; between clusters communication
//! managers bridge MPI jobs over QUIC (crate `hmw-cm`). An embedded analytical model predicts
//! the makespan and efficiency of a run and selects the machines to use.
//!
//! See `docs/architecture.md` for the system as built.

pub mod app;
pub mod cm;
pub mod config;
pub mod error;
pub mod idle;
pub mod launch;
pub mod live;
pub mod machinefile;
pub mod master;
pub mod model;
pub mod plan;
pub mod protocol;
pub mod report;
pub mod runner;
pub mod scheduler;
pub mod stats;
pub mod transport;
pub mod upstream;
pub mod worker;

pub use app::{Problem, Split, Splitter, Task, TaskId, TaskResult, WorkerContext};
pub use error::RunError;
pub use runner::{run, run_split};
pub use stats::RunStats;
