//! The roles' drivers: each runs a core of [`hmw_core::roles`] over a transport (MPI, or the
//! in-process one), from its line of the machine file (`docs/architecture.md`).
//!
//! - [`master`]: the main master's loop around a [`hmw_core::roles::MasterCore`];
//! - [`submaster`]: an external cluster's master: the same loop around a
//!   [`hmw_core::roles::SubMasterCore`], reporting to its parent cluster at the end;
//! - [`cm`]: a communication manager: its cluster's MPI and the link to its peer CM around a
//!   CM core;
//! - [`worker`]: the communication thread around a [`hmw_core::roles::WorkerCore`], and a compute
//!   thread;
//! - [`live_feed`]: the file a master appends its live feed to (`--live-json`).

pub(crate) mod cm;
pub(crate) mod live_feed;
pub(crate) mod master;
pub(crate) mod submaster;
pub(crate) mod worker;
