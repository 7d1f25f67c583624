//! `hmw-sim`: the roles' cores of `hmw` in virtual time.
//!
//! The cores of `hmw_core::roles` (the master's, the sub-master's, the communication
//! managers', the workers') are state machines with no clock and no I/O; the drivers of the
//! crate `hmw` run them over MPI and threads. This crate runs the same types in a simulated
//! world, and depends on `hmw-core` alone (no MPI, tokio or QUIC in its tree):
//! - [`World`]: the cores of a tree of clusters, laid out by their machine files, wired as
//!   the drivers wire them; it takes a message for a node and returns what that node sends;
//! - [`simulate`]: a discrete-event loop in virtual time around a world, with workers that
//!   take `oper / perf` per task, LANs and WANs ([`network`]) with rates, round-trip times,
//!   loss and outages, and changes during the run (a host slowed, a WAN's rate dropped),
//!   from a [`Spec`] (`hmw simulate` builds one from a plan);
//! - the property tests of the cores, which drive a world in arbitrary interleavings, and
//!   those of a pipeline run's cores (controller, heads, nodes, CMs).

mod agenda;
mod engine;
pub mod network;
mod problem;
mod rng;
mod spec;
mod world;

#[cfg(test)]
mod interleavings;
#[cfg(test)]
mod pipeline_interleavings;

pub use engine::{simulate, timed, Options, Outcome};
pub use problem::{SimProblem, SimResult, SimTask, TaskCost};
pub use rng::Rng;
pub use spec::{ClusterSetup, ClusterSpec, Sizes, Spec, SpeedChange, WanSpec};
pub use world::{master_core, sub_master_core, MakeScheduler, SimError, Transfer, Via, World};
