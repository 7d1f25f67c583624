//! The roles' cores: state machines with no I/O, no clock and no threads (one exception: the
//! time the application's joins take, sampled, [`join_time`]).
//!
//! Each core takes its inputs — a message and the rank it came from, the time as a
//! [`std::time::Duration`] since an origin its driver chooses — and pushes what to do into
//! a queue its caller owns: messages to send, progress lines, link actions. The drivers of
//! `hmw::drivers` run them over MPI or the in-process transport (`--threads`); the crate
//! `hmw-sim` runs the same types in virtual time (`hmw simulate`) and in the arbitrary
//! interleavings of the cores' property tests.
//!
//! - [`MasterCore`]: hands tasks out on demand (the [`crate::scheduler::Scheduler`] picks whom
//!   to serve and how many tasks each gets), tracks them until gathered, takes tasks back from
//!   lost clusters, hands tail copies out, measures the run;
//! - [`SubMasterCore`]: the same core whose [`TaskSource`] is [`SubMasterSource`]:
//!   inter-cluster tasks in through its CM, split and combined, results joined by `nr`;
//! - [`CmMasterSide`] and [`CmSubMasterSide`]: a communication manager's relaying, credit and
//!   window accounting, lost-after deadline;
//! - [`WorkerCore`]: a worker's requests and buffers, and where each task runs;
//! - [`SplitSource`]: a master's tasks split as a sub-master splits them (calibration runs);
//! - [`ResumedSource`]: a master's tasks after a restart, less those its journal holds.
//! - [`pipeline`]: the cores of a pipeline run (controller, clusters' heads, nodes, CMs).

mod busy_since;
mod cm;
mod held_groups;
mod iterations;
mod join_time;
mod master;
mod output;
pub mod pipeline;
mod rank_table;
mod resumed;
mod split_source;
mod submaster;
mod task_source;
mod under_way;
mod worker;

pub use cm::{CmMasterSide, CmOutput, CmSubMasterSide, LinkOutbox, LinkView, Outbound};
pub use master::MasterCore;
pub use output::Output;
pub use resumed::{IdSet, ResumedSource};
pub use split_source::SplitSource;
pub use submaster::{SubMasterCore, SubMasterSource};
pub use task_source::{Next, ProblemSource, TaskSource};
pub use worker::{Computed, Queued, Received, WorkerCore};
