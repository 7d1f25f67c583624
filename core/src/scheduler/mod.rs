//! Schedulers: which requester (a worker, or a communication manager leading to another
//! cluster) a master serves next, and how many tasks its batch holds.
//!
//! The master keeps the requests waiting in a [`Waiting`] index (by tasks held, by arrival,
//! by rank), so a [`Scheduler`] picks in `O(log W)` for `W` ranks fed; the built-in policies
//! ([`Policy`], `[run] scheduler`) are implementations of the same trait an application may
//! plug in (`hmw::App::scheduler`). Which *task* comes next stays the problem's
//! ([`crate::Problem::next_task`]).

mod policies;
mod requests;
mod traits;
mod waiting;

pub use policies::{ChunkSettings, OnDemand, Policy};
pub use requests::{Demand, Requester};
pub use traits::Scheduler;
pub use waiting::Waiting;
