//! The roles a rank plays, from its line of the machine file (`docs/architecture.md`).
//!
//! - [`master`]: owns the problem (or, in a sub-master, the tasks its CM brings), hands tasks
//!   out on demand, gathers results;
//! - [`submaster`]: the task source of an external cluster's master: inter-cluster tasks in
//!   through its CM, split to its own grain, results joined before they go back;
//! - [`cm`]: a communication manager, bridging its cluster's MPI and the link to its peer CM;
//! - [`worker`]: executes tasks, a second one travelling while the first computes.

pub mod cm;
pub mod master;
pub mod submaster;
pub mod worker;
