//! The master's core: hands tasks out on demand, tracks each until its result is gathered, and
//! measures the run. No I/O: the driver (`hmw::drivers::master`, or a test, or a simulator)
//! passes each message in with the time, and performs the [`Output`]s.
//!
//! The master feeds *ranks*: workers, and communication managers that lead to other clusters
//! (a CM is fed like a worker with a deep window; each batch it gets is one inter-cluster task
//! of `nt` tasks). It works on serialised tasks through a [`TaskSource`], so the same core
//! serves a typed [`crate::Problem`] (the main master) and a sub-master, whose tasks arrive
//! from its own communication manager (see [`super::submaster`]).
//!
//! No task is lost: each stays in the in-flight table, with the ranks holding a copy, until a
//! result for it is gathered. A rank that is lost gives its tasks back to a retry queue served
//! before new tasks.
//!
//! Dispatch costs `O(log W)` per task for `W` ranks fed: the requests wait in a
//! [`Waiting`] index the [`Scheduler`] picks from, and a round of dispatch ends as soon as
//! nothing is left to hand out. A rank that cannot be served while others might (a bounded
//! share used up; at the end, a rank still computing while idle ones take copies) is set
//! aside until something changes for it: a task to retry, or (for tail copies) it becomes
//! idle.

mod dispatch;
mod feed;
mod progress;
mod results;
mod run;
mod state;
mod statistics;

pub use state::MasterCore;
