//! Closed queueing networks solved by Mean Value Analysis (`docs/model.md` section 15,
//! (110)-(124)): the tool of the queueing-network source, which the cluster's contention model
//! ([`crate::contention`]) is built on.
//!
//! - `network.rs`: a network ([`ClosedNetwork`]: queues, delays, classes, identical classes
//!   counted once) and its mean values ([`Solution`]);
//! - `single_class.rs`: exact single-class MVA, `O(K N)` (110)-(112);
//! - `exact.rs`: exact multi-class MVA over population vectors (113)-(116), with the
//!   residual-time term for service that is not exponential (118);
//! - `schweitzer.rs`: Schweitzer-Bard's approximation (117);
//! - `solve.rs`: which of the two a network gets ([`solve`]);
//! - `closed_form.rs`: the source's closed form (5.7) for one delay and one queue (119);
//! - `parallel_programs.rs`: the source's models of parallel programs, BUS and CLU
//!   (120)-(124).

mod closed_form;
mod exact;
mod network;
mod parallel_programs;
mod schweitzer;
mod single_class;
mod solve;
#[cfg(test)]
mod tests;

pub use closed_form::{delay_and_queues_response, one_delay_one_queue_response};
pub use exact::{exact, exact_steps};
pub use network::{
    CentreKind, ClosedNetwork, CustomerClass, Method, NetworkError, OwnQueue, Solution,
};
pub use parallel_programs::{clu_ahead, ParallelProgram, Speedups};
pub use schweitzer::{schweitzer_bard, MAX_ITERATIONS, TOLERANCE};
pub use single_class::{single_class, Level};
pub use solve::{solve, EXACT_STEP_LIMIT};
