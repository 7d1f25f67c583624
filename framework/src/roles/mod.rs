//! The roles' drivers: each runs a core of [`crate::core`] over a transport (MPI, or the
//! in-process one), from its line of the machine file (`docs/architecture.md`).
//!
//! - [`master`]: the main master's loop around a [`crate::core::MasterCore`];
//! - [`submaster`]: an external cluster's master: the same loop around a
//!   [`crate::core::SubMasterCore`], reporting to its parent cluster at the end;
//! - [`cm`]: a communication manager: its cluster's MPI and the link to its peer CM around a
//!   CM core;
//! - [`worker`]: the communication thread around a [`crate::core::WorkerCore`], and a compute
//!   thread.

pub mod cm;
pub mod master;
pub mod submaster;
pub mod worker;
